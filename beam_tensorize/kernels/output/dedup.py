"""Deduplication of repeated user features (HybridBackend's data deduplication): a block of
rows becomes one row, and each user's features are stored once per block.

For every group `[key, value, ...]` of `user_cols`, a block keeps its distinct keys (in the
order they first appear) and, for each, the value columns of the first row holding it, plus
`<key>-index`: the position of each row's key among the distinct keys. Every column of
`non_user_cols` becomes the list of the block's values. The original rows are restored
exactly by taking, for each row, the values at its index (`restore_block`).

Example:
    >>> block = pa.RecordBatch.from_pydict({"user": [7, 8, 7], "age": [30, 40, 30], "item": [1, 2, 3]})
    >>> row = deduplicate_block(block, [["user", "age"]], ["item"])
    >>> row.to_pydict()
    {'item': [[1, 2, 3]], 'user': [[7, 8]], 'age': [[30, 40]], 'user-index': [[0, 1, 0]]}
    >>> restore_block(row, [["user", "age"]], ["item"]).to_pydict() == block.to_pydict()
    True
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["deduplicate_block", "deduplicated_blocks", "index_column", "restore_block"]


def index_column(key: str) -> str:
    """The name of the inverse-index column of a key: `<key>-index`."""
    return f"{key}-index"


def _check(batch: pa.Schema, user_cols: Sequence[Sequence[str]], non_user_cols: Sequence[str]) -> None:
    named = [c for group in user_cols for c in group] + list(non_user_cols)
    missing = [c for c in named if c not in batch.names]
    if missing:
        raise ValueError(f"deduplication: columns {missing} are not among {batch.names}")
    if any(not group for group in user_cols):
        raise ValueError("deduplication: every user column group needs a key column first")


def deduplicate_block(
    block: pa.RecordBatch, user_cols: Sequence[Sequence[str]], non_user_cols: Sequence[str] | None
) -> pa.RecordBatch:
    """One block of rows as one deduplicated row (see the module docstring); `non_user_cols`
    None means every column not in `user_cols`."""
    if non_user_cols is None:
        grouped = {c for group in user_cols for c in group}
        non_user_cols = [n for n in block.schema.names if n not in grouped]
    _check(block.schema, user_cols, non_user_cols)
    names, columns = [], []
    for name in non_user_cols:
        names.append(name)
        columns.append(_one_list(block.column(name)))
    for key, *values in user_cols:
        keys = block.column(key)
        distinct = pc.unique(keys)
        first = pc.index_in(distinct, keys)  # the first row of each distinct key
        index = pc.index_in(keys, distinct).cast(pa.int32())
        for name in (key, *values):
            kept = block.column(name).take(first)
            if name != key:
                _check_determined(block, key, name, kept.take(index))
            names.append(name)
            columns.append(_one_list(kept))
        names.append(index_column(key))
        columns.append(_one_list(index))
    return pa.RecordBatch.from_arrays(columns, names=names)


def _check_determined(block: pa.RecordBatch, key: str, name: str, restored: pa.Array) -> None:
    """Each key's rows must agree on `name` (stored once per key): else restoring would give
    some rows another row's value."""
    original = block.column(name)
    if restored.equals(original):
        return
    keys, wanted, got = block.column(key).to_pylist(), original.to_pylist(), restored.to_pylist()
    row = next(i for i in range(len(wanted)) if wanted[i] != got[i])
    raise ValueError(
        f"deduplication: column {name!r} is not a function of the key {key!r}: the rows of key "
        f"{keys[row]!r} hold {got[row]!r} and {wanted[row]!r}; only columns whose value each key "
        "determines (user features) can be stored once per key: leave it out of the group"
    )


def _one_list(column: pa.Array) -> pa.Array:
    return pa.ListArray.from_arrays(pa.array([0, len(column)], pa.int32()), column)


def deduplicated_blocks(
    batch: pa.RecordBatch,
    block_size: int,
    user_cols: Sequence[Sequence[str]],
    non_user_cols: Sequence[str] | None,
) -> Iterator[pa.RecordBatch]:
    """The blocks of `block_size` rows of a batch, each deduplicated (the last may be shorter)."""
    if block_size < 1:
        raise ValueError(f"deduplication: block_size must be a positive number of rows, got {block_size}")
    for start in range(0, batch.num_rows, block_size):
        yield deduplicate_block(batch.slice(start, block_size), user_cols, non_user_cols)


def restore_block(
    rows: pa.RecordBatch,
    user_cols: Sequence[Sequence[str]],
    non_user_cols: Sequence[str],
    index_names: Sequence[str] | None = None,
) -> pa.RecordBatch:
    """The original rows of deduplicated blocks (one per row of `rows`), in order;
    `index_names` names each group's index column (default `<key>-index`)."""
    names, columns = [], []
    for name in non_user_cols:
        names.append(name)
        columns.append(rows.column(name).flatten())
    indexes = list(index_names) if index_names is not None else [index_column(g[0]) for g in user_cols]
    for (key, *values), index_name in zip(user_cols, indexes, strict=True):
        index = rows.column(index_name)
        base = np.asarray(rows.column(key).offsets, dtype=np.int64)[:-1]
        lengths = np.diff(np.asarray(index.offsets, dtype=np.int64))
        positions = np.repeat(base, lengths) + np.asarray(index.flatten(), dtype=np.int64)
        for name in (key, *values):
            names.append(name)
            columns.append(rows.column(name).flatten().take(pa.array(positions)))
    return pa.RecordBatch.from_arrays(columns, names=names)
