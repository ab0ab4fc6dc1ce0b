"""Turn extracted tensor columns into tf.train.Example feature columns, row checks included.

Every tensor is stored under the layout its config gives it (`fixed_len`, `ragged` or
`sparse`; see `beam_tensorize.kernels.features.layouts`, whose names this module also gives);
the values are cast to the Example's types by `beam_tensorize.kernels.features.value_casts`.

Rows that cannot be stored — a null where a value is needed, a list of the wrong length for an
inner fixed dimension, a null inside a list, an integer that overflows its dtype, indices and
values of different lengths — are reported as bad rows with a reason and left out of the output.

The outer dimension of a fixed shape is checked only when asked (`check_shapes=True`): Avro2TF
never checks shapes (a `[10]` tensor of 3 values is written as 3 values), so by default such a
row is kept as it is and counted in `ConversionResult.off_shape` (the metadata then reads the
tensor back as ragged; see `beam_tensorize.kernels.metadata`). Inner dimensions are always
checked: an Example holds a tensor's values flat and only the metadata knows how to fold them.

Example:
    >>> import pyarrow as pa
    >>> layout = FeatureLayout.for_tensor("x", "long", (2,), False)
    >>> batch = pa.RecordBatch.from_pydict({"x": [[1, 2], [3]]})
    >>> out = to_feature_columns(batch, [layout], check_shapes=True)
    >>> out.features.to_pydict(), out.bad_rows.tolist(), out.reasons
    ({'x': [[1, 2]]}, [1], ["tensor 'x': expected 2 values at dimension 0, got 1"])
    >>> out = to_feature_columns(batch, [layout])
    >>> out.features.to_pydict(), out.bad_rows.tolist(), out.off_shape
    ({'x': [[1, 2], [3]]}, [], {'x': 1})
"""

from __future__ import annotations

import dataclasses
import decimal
from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_tensorize.kernels.arrow_types import as_large_list, list_depth, list_lengths, list_offsets
from beam_tensorize.kernels.features.layouts import (
    DENSE_VECTOR_KEY,
    FeatureDataError,
    FeatureLayout,
    is_hashed_ntv,
    layout_for_column,
    layout_of,
)
from beam_tensorize.kernels.features.value_casts import cast_values

__all__ = [
    "DENSE_VECTOR_KEY",
    "ConversionResult",
    "FeatureDataError",
    "FeatureLayout",
    "is_hashed_ntv",
    "layout_for_column",
    "layout_of",
    "to_feature_columns",
]


@dataclasses.dataclass
class ConversionResult:
    """Feature columns of the good rows, and what was wrong with the others."""

    features: pa.RecordBatch
    bad_rows: np.ndarray  # indices into the input batch, ascending
    reasons: list[str]  # one per bad row
    #: The layouts the columns were stored with: those given, but a dense vector's (see
    #: `DENSE_VECTOR_KEY`) with its run-time dimension.
    layouts: tuple = ()
    #: Per tensor, the good rows kept whose outer dimension differs from the fixed shape (only
    #: without `check_shapes`); tensors with none are left out.
    off_shape: dict = dataclasses.field(default_factory=dict)


class _Problems:
    """Collects the first reason each row is bad."""

    def __init__(self, rows: int):
        self.reason_of: list[str | None] = [None] * rows
        self.bad = np.zeros(rows, dtype=bool)

    def add(self, mask: np.ndarray, reason) -> None:
        new = np.flatnonzero(mask & ~self.bad)
        for row in new:
            self.reason_of[row] = reason(row) if callable(reason) else reason
        self.bad |= mask


def to_feature_columns(
    batch: pa.RecordBatch, layouts: Sequence[FeatureLayout], check_shapes: bool = False
) -> ConversionResult:
    """Convert tensor columns (named by tensor) to Example feature columns.

    Args:
        batch: one column per tensor, as `extract_tensors` produces.
        layouts: how to store each tensor.
        check_shapes: a row whose outer dimension differs from a fixed shape is bad (by
            default it is kept as it is and counted, as Avro2TF writes it).

    Returns:
        The feature columns of the good rows (list-typed, ready for `encode_examples`), and the
        bad rows with their reasons.

    Raises:
        FeatureDataError: a column's type does not fit its tensor at all.
    """
    problems = _Problems(batch.num_rows)
    columns: dict[str, pa.Array] = {}
    used = []
    off_shape: dict[str, np.ndarray] = {}
    for layout in layouts:
        column = batch.column(layout.name)
        field_metadata = batch.schema.field(layout.name).metadata or {}
        if DENSE_VECTOR_KEY in field_metadata and layout.kind != "sparse" and not layout.shape:
            layout = dataclasses.replace(layout, shape=(-1,), kind="ragged", value_type="float32")
        used.append(layout)
        if layout.kind == "sparse":
            columns.update(_sparse(column, layout, problems))
        else:
            columns.update(_dense(column, layout, problems, None if check_shapes else off_shape))
    good = ~problems.bad
    features = pa.RecordBatch.from_pydict(columns) if columns else pa.RecordBatch.from_pydict({})
    if problems.bad.any() and columns:
        features = features.filter(pa.array(good))
    bad_rows = np.flatnonzero(problems.bad)
    counted = {name: int((rows & good).sum()) for name, rows in off_shape.items()}
    return ConversionResult(
        features,
        bad_rows,
        [problems.reason_of[i] for i in bad_rows],
        tuple(used),
        {name: n for name, n in counted.items() if n},
    )


def _dense(
    column: pa.Array, layout: FeatureLayout, problems: _Problems, off_shape: dict | None
) -> dict[str, pa.Array]:
    """The feature columns of a fixed or ragged tensor. With `off_shape` (a dict), rows whose
    outer dimension differs from a fixed size are kept and marked in `off_shape[name]`."""
    rank, depth = len(layout.shape), list_depth(column.type)
    if depth > rank or (depth < rank and not (depth == 0 and rank == 1)):
        raise FeatureDataError(
            f"tensor {layout.name!r}: shape {list(layout.shape)} needs {rank} list level(s) but "
            f"the input is {column.type}"
        )
    if rank == 0:
        if column.null_count:
            problems.add(np.asarray(column.is_null(), dtype=bool), f"tensor {layout.name!r}: null value")
            column = column.fill_null(_zero(column.type))
        return {layout.name: _wrap_scalars(_convert_values(column, layout, problems, None))}
    if depth == 0:  # scalar declared with shape [n]: a list of one value (or none for null)
        column = pa.LargeListArray.from_arrays(
            pa.array(np.concatenate([[0], np.cumsum(np.asarray(column.is_valid(), np.int64))])),
            column.drop_null(),
        )
    # Walk down the list levels: check lengths, collect row lengths, map flat positions to rows.
    owners = _Owners(np.arange(len(column) + 1, dtype=np.int64))  # rows -> lists of the current level
    outputs: dict[str, pa.Array] = {}
    level = column
    for dim, size in enumerate(layout.shape):
        level = as_large_list(level)
        lengths = np.diff(list_offsets(level))
        nulls = np.asarray(level.is_null(), dtype=bool) if level.null_count else None
        if nulls is not None:
            lengths[nulls] = 0
        if dim > 0 and nulls is not None and nulls.any():
            problems.add(
                _rows_mask(owners[nulls], problems), f"tensor {layout.name!r}: null list inside the value"
            )
        if dim == 0 and size >= 0 and off_shape is not None:
            if (lengths != size).any():
                off_shape[layout.name] = lengths != size
        elif size >= 0 and (lengths != size).any():
            wrong = lengths != size
            got = dict(zip(owners[wrong].tolist(), lengths[wrong].tolist()))
            problems.add(
                _rows_mask(owners[wrong], problems),
                lambda r, d=dim, s=size, g=got: (
                    f"tensor {layout.name!r}: expected {s} values at dimension {d}, got {g[r]}"
                ),
            )
        if dim > 0 and size < 0:
            outputs[f"{layout.name}/row_lengths_{dim}"] = owners.lists_of(pa.array(lengths, pa.int64()))
        owners = owners.deeper(lengths)
        level = level.flatten()
    values = level
    if values.null_count:
        problems.add(
            _rows_mask(owners[np.asarray(values.is_null(), dtype=bool)], problems),
            f"tensor {layout.name!r}: null element in the list",
        )
        values = values.fill_null(_zero(values.type))
    values = _convert_values(values, layout, problems, owners)
    return {layout.name: owners.lists_of(values), **outputs}


def _rows_mask(rows: np.ndarray, problems: _Problems) -> np.ndarray:
    mask = np.zeros(len(problems.bad), dtype=bool)
    mask[rows] = True
    return mask


class _Owners:
    """Which row owns each flat position of a list level: the rows' offsets into the level
    (the row of a position is only computed for the positions asked, e.g. a bad value's).

    Example:
        >>> owners = _Owners.of_lengths(np.array([2, 0, 1]))
        >>> owners[np.array([False, True, True])].tolist(), owners.deeper(np.array([1, 1, 3])).offsets.tolist()
        ([0, 2], [0, 2, 2, 5])
    """

    def __init__(self, offsets: np.ndarray):
        #: Row i owns positions offsets[i] to offsets[i + 1].
        self.offsets = offsets

    @classmethod
    def of_lengths(cls, lengths: np.ndarray) -> _Owners:
        return cls(np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]))

    def __getitem__(self, positions: np.ndarray) -> np.ndarray:
        """The owning rows of `positions` (a boolean mask over the level, or indices)."""
        if positions.dtype == bool:
            positions = np.flatnonzero(positions)
        return np.searchsorted(self.offsets, positions, side="right") - 1

    def deeper(self, lengths: np.ndarray) -> _Owners:
        """The owners of the next level's positions, from the lengths of this level's lists."""
        return _Owners(np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)])[self.offsets])

    def lists_of(self, values: pa.Array) -> pa.LargeListArray:
        """Each row's flat `values` as one list."""
        return pa.LargeListArray.from_arrays(pa.array(self.offsets), values)


def _wrap_scalars(values: pa.Array) -> pa.LargeListArray:
    return pa.LargeListArray.from_arrays(pa.array(np.arange(len(values) + 1, dtype=np.int64)), values)


def _zero(t: pa.DataType):
    if pa.types.is_boolean(t):
        return False
    if pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t):
        return pa.scalar(decimal.Decimal(0) if pa.types.is_decimal(t) else 0, t)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return ""
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return pa.scalar(b"\0" * (t.byte_width if pa.types.is_fixed_size_binary(t) else 0), t)
    return pa.scalar(None, t)


def _convert_values(
    values: pa.Array, layout: FeatureLayout, problems: _Problems, row_of: _Owners | None
) -> pa.Array:
    """Cast flat values to the Example list type of `layout`, flagging rows that overflow."""

    def flag(bad_values: np.ndarray, reason: str) -> None:
        if bad_values.any():
            rows = np.flatnonzero(bad_values) if row_of is None else row_of[bad_values]
            problems.add(_rows_mask(rows, problems), f"tensor {layout.name!r}: {reason}")

    return cast_values(values, layout, flag)


def _sparse(column: pa.Array, layout: FeatureLayout, problems: _Problems) -> dict[str, pa.Array]:
    t = column.type
    if not (pa.types.is_struct(t) and t.get_field_index("indices") >= 0 and t.get_field_index("values") >= 0):
        raise FeatureDataError(
            f"tensor {layout.name!r}: a sparse tensor needs a record with 'indices' and 'values' "
            f"lists (NTV columns need a feature list or hashing, not supported yet); got {t}"
        )
    indices = pc.struct_field(column, ["indices"])
    values = pc.struct_field(column, ["values"])
    if list_depth(indices.type) != 1 or list_depth(values.type) != 1:
        raise FeatureDataError(f"tensor {layout.name!r}: 'indices' and 'values' must be flat lists")
    indices, values = as_large_list(indices), as_large_list(values)
    idx_len = list_lengths(indices)
    val_len = list_lengths(values)
    problems.add(idx_len != val_len, f"tensor {layout.name!r}: indices and values differ in length")
    flat_idx, flat_val = indices.flatten(), values.flatten()
    row_of_idx, row_of_val = _Owners.of_lengths(idx_len), _Owners.of_lengths(val_len)
    if flat_idx.null_count or flat_val.null_count:
        nulls = np.concatenate(
            [
                row_of_idx[np.asarray(flat_idx.is_null(), bool)],
                row_of_val[np.asarray(flat_val.is_null(), bool)],
            ]
        )
        problems.add(_rows_mask(nulls, problems), f"tensor {layout.name!r}: null element in the list")
        flat_idx, flat_val = flat_idx.fill_null(0), flat_val.fill_null(0)
    index_layout = dataclasses.replace(layout, dtype="long", value_type="int64")
    flat_idx = _convert_values(flat_idx, index_layout, problems, row_of_idx)
    if len(layout.shape) == 1 and layout.shape[0] >= 0:
        out_of_range = (np.asarray(flat_idx) < 0) | (np.asarray(flat_idx) >= layout.shape[0])
        if out_of_range.any():
            problems.add(
                _rows_mask(row_of_idx[out_of_range], problems),
                f"tensor {layout.name!r}: index outside the dense shape {list(layout.shape)}",
            )
    flat_val = _convert_values(flat_val, dataclasses.replace(layout, dtype="float"), problems, row_of_val)
    return {
        layout.index_key: row_of_idx.lists_of(flat_idx),
        layout.value_key: row_of_val.lists_of(flat_val),
    }
