"""Parquet files as an input format, read with pyarrow's Parquet reader.

Splits are runs of consecutive row groups of about `split_bytes` (uncompressed), planned from
the footer. Column projection is pushed down to column chunks: a dotted path into records
(`genreFeatures.term`) reads only the leaf columns below it. Batches are tagged with the index
of their first row in the file (unit "row").

Example:
    >>> import io, pyarrow.parquet as pq
    >>> buf = io.BytesIO()
    >>> pq.write_table(pa.table({"id": [1, 2, 3], "tags": [["a"], [], ["b", "c"]]}), buf, row_group_size=2)
    >>> fmt = ParquetFormat()
    >>> splits = fmt.plan_splits(buf, "t.parquet", buf.tell(), split_bytes=1)
    >>> splits
    [Split(path='t.parquet', start=0, end=1, first_row=0), Split(path='t.parquet', start=1, end=2, first_row=2)]
    >>> [b.to_pydict() for b in fmt.read_split(buf, splits[1], ["TAGS"])]
    [{'tags': [['b', 'c']]}]
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import BinaryIO

import pyarrow as pa
import pyarrow.parquet as pq

from beam_tensorize.kernels.formats.base import (
    DEFAULT_BATCH_ROWS,
    InputFormat,
    Split,
    conform_batch,
    project_schema,
    register_format,
)
from beam_tensorize.kernels.provenance import with_source

__all__ = ["ParquetFormat", "leaf_paths"]

MAGIC = b"PAR1"


def leaf_paths(t: pa.DataType, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """The record path of every leaf column under a column of type `t`, depth first (the order
    of Parquet's leaf columns); lists and maps add no path step.

    Example:
        >>> list(leaf_paths(pa.list_(pa.struct([("a", pa.int32()), ("b", pa.map_(pa.string(), pa.int8()))]))))
        [('a',), ('b',), ('b',)]
    """
    if pa.types.is_struct(t):
        for i in range(t.num_fields):
            yield from leaf_paths(t.field(i).type, (*path, t.field(i).name))
    elif pa.types.is_map(t):
        yield from leaf_paths(t.key_type, path)
        yield from leaf_paths(t.item_type, path)
    elif pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        yield from leaf_paths(t.value_type, path)
    else:
        yield path


@register_format
class ParquetFormat(InputFormat):
    """Parquet files (magic `PAR1`): every type pyarrow reads, nested lists, structs and maps."""

    magic = MAGIC
    name, kind = "parquet", "Parquet"
    needs_file_to_plan = True

    def plan_splits(self, f: BinaryIO | None, path: str, size: int, split_bytes: int) -> list[Split]:
        metadata = _open(f, path).metadata
        splits, start, first_row, row, size_so_far = [], 0, 0, 0, 0
        for i in range(metadata.num_row_groups):
            group = metadata.row_group(i)
            if i > start and size_so_far + group.total_byte_size > split_bytes:
                splits.append(Split(path, start, i, first_row))
                start, first_row, size_so_far = i, row, 0
            size_so_far += group.total_byte_size
            row += group.num_rows
        splits.append(Split(path, start, metadata.num_row_groups, first_row))
        return splits

    def read_schema(self, f: BinaryIO, path: str, columns: Sequence[str] | None = None) -> pa.Schema:
        return project_schema(_open(f, path).schema_arrow, columns, path)

    def read_split(
        self,
        f: BinaryIO,
        split: Split,
        columns: Sequence[str] | None = None,
        batch_rows: int = DEFAULT_BATCH_ROWS,
    ) -> Iterator[pa.RecordBatch]:
        parquet = _open(f, split.path)
        full = parquet.schema_arrow
        schema = project_schema(full, columns, split.path)
        if split.end <= split.start:
            return
        batches = parquet.iter_batches(
            batch_size=batch_rows,
            row_groups=range(split.start, split.end),
            columns=_column_paths(parquet, full, schema),
            use_threads=False,
        )
        row = split.first_row
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                return
            except OSError as err:  # a page whose checksum fails, a truncated chunk, ...
                raise ValueError(
                    f"{split.path}: the Parquet data after row {row} cannot be read ({err}); the file is "
                    "damaged: write it again, or leave it out of --input"
                ) from None
            yield with_source(conform_batch(batch, schema, split.path), split.path, row, "row")
            row += batch.num_rows


def _open(f: BinaryIO, path: str) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(f, page_checksum_verification=True)  # a flipped bit is an error
    except (pa.ArrowInvalid, OSError) as err:
        raise ValueError(f"{path}: not a readable Parquet file: {err}") from None


def _column_paths(parquet: pq.ParquetFile, full: pa.Schema, wanted: pa.Schema) -> list[str]:
    """The Parquet leaf columns holding `wanted` (a projection of `full`)."""
    logical = [(f.name, *p) for f in full for p in leaf_paths(f.type)]
    physical = [parquet.schema.column(i).path for i in range(parquet.metadata.num_columns)]
    if len(logical) != len(physical):  # an unusual layout: read whole top-level columns
        return wanted.names
    keep = {(f.name, *p) for f in wanted for p in leaf_paths(f.type)}
    return [name for name, path in zip(physical, logical) if path in keep]
