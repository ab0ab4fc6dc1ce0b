"""Build per-row sparse vectors from (row, index, value) triples, merging repeated indices.

Example:
    >>> import numpy as np
    >>> idx, val = combine_sparse(np.array([0, 0, 0, 2]), np.array([5, 1, 5, 3]),
    ...                           np.array([1.0, 2.0, 4.0, 1.0]), rows=3, combiner="SUM")
    >>> idx.to_pylist(), val.to_pylist()
    ([[1, 5], [], [3]], [[2.0, 5.0], [], [1.0]])
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from beam_tensorize.config.model import COMBINERS
from beam_tensorize.kernels.arrow_types import list_lengths

__all__ = ["COMBINERS", "combine_sparse", "drop_zeros", "sparse_to_dense"]


def combine_sparse(
    row_of: np.ndarray, ids: np.ndarray, values: np.ndarray, rows: int, combiner: str = "SUM"
) -> tuple[pa.LargeListArray, pa.LargeListArray]:
    """Merge (row, id, value) triples into per-row sparse vectors, ids ascending and unique.

    Args:
        row_of: row of each entry.
        ids: index of each entry.
        values: value of each entry.
        rows: number of rows.
        combiner: how values of one id in one row merge: SUM, AVG or MAX.

    Returns:
        (indices `large_list<int64>`, values `large_list<double>`).
    """
    if combiner not in COMBINERS:
        raise ValueError(f"combiner {combiner!r} is not one of {', '.join(COMBINERS)}")
    row_of = np.asarray(row_of, dtype=np.int64)
    ids = np.asarray(ids, dtype=np.int64)
    values = np.asarray(values, dtype=np.float64)
    top = int(ids.max()) + 1 if len(ids) else 1
    if rows * top < 2**62:  # one int64 key: a stable sort of it is much faster than lexsort
        order = np.argsort(row_of * top + ids, kind="stable")
    else:
        order = np.lexsort((ids, row_of))
    row_of, ids, values = row_of[order], ids[order], values[order]
    starts = np.ones(len(order), dtype=bool)
    starts[1:] = (row_of[1:] != row_of[:-1]) | (ids[1:] != ids[:-1])
    group = np.flatnonzero(starts)
    if not len(group):
        merged = values
    elif combiner == "MAX":
        merged = np.maximum.reduceat(values, group)
    else:
        merged = np.add.reduceat(values, group)
        if combiner == "AVG":
            merged = merged / np.diff(np.append(group, len(order)))
    offsets = pa.array(
        np.concatenate([[0], np.cumsum(np.bincount(row_of[group], minlength=rows))]).astype(np.int64)
    )
    return (
        pa.LargeListArray.from_arrays(offsets, pa.array(ids[group], pa.int64())),
        pa.LargeListArray.from_arrays(offsets, pa.array(merged, pa.float64())),
    )


def drop_zeros(
    indices: pa.LargeListArray, values: pa.LargeListArray
) -> tuple[pa.LargeListArray, pa.LargeListArray]:
    """The same sparse vectors without their zero entries (Avro2TF's filter-zero)."""
    flat_values = np.asarray(values.flatten(), dtype=np.float64)
    keep = flat_values != 0
    row_of = np.repeat(np.arange(len(values)), list_lengths(values))
    offsets = np.concatenate([[0], np.cumsum(np.bincount(row_of[keep], minlength=len(values)))]).astype(
        np.int64
    )
    return (
        pa.LargeListArray.from_arrays(pa.array(offsets), indices.flatten().filter(pa.array(keep))),
        pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(flat_values[keep], pa.float64())),
    )


def sparse_to_dense(indices: pa.LargeListArray, values: pa.LargeListArray, size: int) -> pa.LargeListArray:
    """Dense vectors from sparse ones (``isSparse: false``).

    Args:
        indices: ``list<int64>`` ids per row, each in ``[0, size)``; a null row counts as empty.
        values: ``list<double>`` values, the same shape as ``indices``.
        size: length of every dense vector (``hashBucketSize``).

    Returns:
        ``large_list<double>`` of length ``size`` per row; zeros where no id; values of a repeated
        id add up.

    Raises:
        ValueError: shapes differ or an id is outside ``[0, size)``.
    """
    if not (isinstance(size, int) and size >= 0):
        raise ValueError(f"size must be a non-negative integer, got {size!r}")
    rows = len(indices)
    lengths = list_lengths(indices)
    if len(values) != rows or not np.array_equal(lengths, list_lengths(values)):
        raise ValueError("sparse_to_dense: indices and values must have the same number of entries per row")
    flat_ids = np.asarray(indices.flatten().fill_null(-1), dtype=np.int64)
    if len(flat_ids) and (flat_ids.min() < 0 or flat_ids.max() >= size):
        raise ValueError(
            f"sparse_to_dense: ids must be in [0, {size}), got {flat_ids.min()}..{flat_ids.max()}"
        )
    flat_values = np.asarray(values.flatten().cast(pa.float64()).fill_null(0.0), dtype=np.float64)
    position = np.repeat(np.arange(rows, dtype=np.int64) * size, lengths) + flat_ids
    dense = np.bincount(position, weights=flat_values, minlength=rows * size).astype(np.float64)
    offsets = np.arange(rows + 1, dtype=np.int64) * size
    return pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(dense, pa.float64()))
