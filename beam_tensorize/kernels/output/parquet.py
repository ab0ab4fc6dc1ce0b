"""Tensors as Parquet columns, and Parquet shard files.

`tensor_columns` turns the Example feature columns of `to_feature_columns` (the values written
to TFRecords) into one Parquet column per tensor, holding the same values:

* a scalar tensor (shape `[]`) is a plain column (int64, float32, string or binary);
* a tensor of rank k >= 1 (fixed or variable dimensions) is a list column nested k deep
  (`[-1]` -> `list<v>`, `[2, 3]` and `[-1, -1]` -> `list<list<v>>`);
* a sparse tensor `x` is two list columns `x/indices` (int64) and `x/values` (float32), as in
  the TFRecords (the dense shape is in the metadata).

Value types are those of the TFRecords (booleans and integers int64, floats float32), so
reading either output gives the same tensors; strings are UTF-8 `string` columns, `bytes`
tensors `binary`.

`ParquetOutput` writes a file's chunks (in file order) as one Parquet file with row
groups of `ROW_GROUP_ROWS` rows: large row groups read fastest (fewer pages and seeks per
column), and 128Ki rows keep a row group of a few hundred columns within tens of MiB.

Example:
    >>> import io
    >>> from beam_tensorize.kernels.features.conversion import FeatureLayout, to_feature_columns
    >>> layouts = [FeatureLayout.for_tensor("id", "long", (), False),
    ...            FeatureLayout.for_tensor("grid", "float", (-1, -1), False)]
    >>> batch = pa.RecordBatch.from_pydict({"id": [1, 2], "grid": [[[0.5], [1.0, 2.0]], []]})
    >>> table = tensor_columns(to_feature_columns(batch, layouts).features, layouts)
    >>> table.to_pydict()
    {'id': [1, 2], 'grid': [[[0.5], [1.0, 2.0]], []]}
    >>> raw = io.BytesIO()
    >>> ParquetOutput().write_file(raw, [("k", table)], "snappy")
    2
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import BinaryIO

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from beam_tensorize.kernels.arrow_types import list_lengths
from beam_tensorize.kernels.features.conversion import FeatureLayout
from beam_tensorize.kernels.output.base import OutputFormat, register_output_format

__all__ = [
    "PARQUET_COMPRESSIONS",
    "ROW_GROUP_ROWS",
    "ParquetFileWriter",
    "ParquetOutput",
    "WriteSink",
    "tensor_columns",
]

#: Parquet column compressions (`compression=` of pyarrow's writer).
PARQUET_COMPRESSIONS = ("none", "snappy", "gzip", "zstd")
#: Rows per row group of written Parquet files.
ROW_GROUP_ROWS = 128 * 1024

_LEAF_TYPES = {"int64": pa.int64(), "float32": pa.float32()}


def _offsets(lengths: np.ndarray) -> pa.Array:
    return pa.array(np.concatenate([[0], np.cumsum(lengths, dtype=np.int64)]).astype(np.int32))


def _leaf_type(layout: FeatureLayout) -> pa.DataType:
    if layout.value_type in _LEAF_TYPES:
        return _LEAF_TYPES[layout.value_type]
    return pa.binary() if layout.dtype == "bytes" else pa.string()


def _tensor_column(features: pa.RecordBatch, layout: FeatureLayout) -> pa.Array:
    """The nested column of one dense (fixed or ragged) tensor."""
    values = features.column(layout.name)
    leaves = values.flatten().cast(_leaf_type(layout))
    if not layout.shape:
        return leaves
    row_lengths = dict(layout.row_length_keys())
    # Per-row element counts, innermost dimension first, then nesting from the inside out.
    counts = list_lengths(values)
    nested = leaves
    for dim in range(len(layout.shape) - 1, 0, -1):
        if dim in row_lengths:
            column = features.column(row_lengths[dim])
            sizes = column.flatten().to_numpy(zero_copy_only=False).astype(np.int64)
            counts = list_lengths(column)
        else:
            sizes = np.full(len(nested) // max(layout.shape[dim], 1), layout.shape[dim], np.int64)
            counts = counts // max(layout.shape[dim], 1)
        nested = pa.ListArray.from_arrays(_offsets(sizes), nested)
    return pa.ListArray.from_arrays(_offsets(counts), nested)


def tensor_columns(
    features: pa.RecordBatch, layouts: Sequence[FeatureLayout], sparse_as_records: bool = False
) -> pa.RecordBatch:
    """One Parquet column per tensor (two per sparse tensor), from the Example feature columns
    of the same rows (see the module docstring); in `layouts` order. With `sparse_as_records`
    (Avro output) a sparse tensor is one `struct<indices, values>` column named like it."""
    names: list[str] = []
    columns: list[pa.Array] = []
    for layout in layouts:
        if layout.kind == "sparse":
            parts = []
            for key, leaf in ((layout.index_key, pa.int64()), (layout.value_key, pa.float32())):
                column = features.column(key)
                parts.append(
                    pa.ListArray.from_arrays(_offsets(list_lengths(column)), column.flatten().cast(leaf))
                )
            if sparse_as_records:
                names.append(layout.name)
                columns.append(pa.StructArray.from_arrays(parts, ["indices", "values"]))
            else:
                names += [layout.index_key, layout.value_key]
                columns += parts
        else:
            names.append(layout.name)
            columns.append(_tensor_column(features, layout))
    return pa.RecordBatch.from_arrays(columns, names=names)


class WriteSink:
    """A write-only file object over `raw` that pyarrow and fastavro can stream to (they need
    `closed`, `tell`, and to know it cannot seek)."""

    def __init__(self, raw: BinaryIO):
        self._raw = raw
        self._position = 0
        self.closed = False

    def write(self, data) -> int:
        self._raw.write(data)
        self._position += len(data)
        return len(data)

    def tell(self) -> int:
        return self._position

    def flush(self) -> None:
        self._raw.flush()

    def seekable(self) -> bool:
        return False

    def close(self) -> None:  # the caller closes `raw`
        self.closed = True


class ParquetFileWriter:
    """Streams record batches, in order, into one Parquet file in `raw` (not closed).

    The file holds the schema of the first batch (schema metadata left out, so the same rows
    give the same bytes); rows are gathered into row groups of `row_group_rows`, so at most one
    row group is held at a time. Nothing is written when no batch came.

    Example:
        >>> import io
        >>> raw = io.BytesIO()
        >>> writer = ParquetFileWriter(raw, "none")
        >>> writer.write(pa.RecordBatch.from_pydict({"x": [1, 2]}))
        >>> writer.close()
        2
        >>> pq.read_table(pa.BufferReader(raw.getvalue())).column("x").to_pylist()
        [1, 2]
    """

    def __init__(self, raw: BinaryIO, compression: str, row_group_rows: int = ROW_GROUP_ROWS):
        self._raw = raw
        self._compression = compression.upper() if compression != "none" else "NONE"
        self._row_group_rows = row_group_rows
        self._writer = None
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0
        #: Rows written (or pending) so far.
        self.count = 0

    def write(self, batch: pa.RecordBatch) -> None:
        batch = batch.replace_schema_metadata(None)
        if self._writer is None:
            self._writer = pq.ParquetWriter(
                pa.PythonFile(WriteSink(self._raw), mode="w"),
                batch.schema,
                compression=self._compression,
                write_page_checksum=True,  # CRCs of the data pages, verified when read back
            )
        self._pending.append(batch)
        self._pending_rows += batch.num_rows
        self.count += batch.num_rows
        if self._pending_rows >= self._row_group_rows:
            self._flush(whole_groups_only=True)

    def _flush(self, whole_groups_only: bool) -> None:
        """Write the pending rows (only whole row groups of them, unless at the end)."""
        table = pa.Table.from_batches(self._pending)
        size = self._row_group_rows
        ready = (self._pending_rows // size) * size if whole_groups_only else self._pending_rows
        if ready:
            self._writer.write_table(table.slice(0, ready), row_group_size=size)
        self._pending = table.slice(ready).to_batches()
        self._pending_rows -= ready

    def close(self) -> int:
        """Finish the file; returns the number of rows written."""
        if self._writer is not None:
            try:
                self._flush(whole_groups_only=False)
            finally:
                self._writer.close()
                self._writer = None
        return self.count

    def abort(self) -> None:
        """Give up the file (after an error), releasing the writer."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None


@register_output_format
class ParquetOutput(OutputFormat):
    """Tensor columns in Parquet files (`part-*.parquet`; see `tensor_columns`), compressed
    inside the file (snappy by default)."""

    name = "parquet"
    label = "Parquet"
    compressions = ("snappy", *[c for c in PARQUET_COMPRESSIONS if c != "snappy"])

    def open_writer(self, raw: BinaryIO, compression: str) -> ParquetFileWriter:
        return ParquetFileWriter(raw, compression)
