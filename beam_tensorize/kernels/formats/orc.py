"""ORC files as an input format, read with pyarrow's ORC reader.

Splits are stripes (one each). Only the top-level columns named are read; nested fields a
dotted path leaves out are dropped after reading. ORC timestamps (which pyarrow reads in
nanoseconds) are read in microseconds, Spark's precision (sub-microsecond digits are cut, as
Spark cuts them), so ORC gives the values Avro and Parquet give for the same rows. Batches are
tagged with their stripe and the row in it (unit "stripe").

Example:
    >>> import io, pyarrow.orc as orc
    >>> buf = io.BytesIO()
    >>> orc.write_table(pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]}), buf)
    >>> fmt = ORCFormat()
    >>> [s.start for s in fmt.plan_splits(buf, "t.orc", buf.tell(), 1 << 20)]
    [0]
    >>> [b.to_pydict() for b in fmt.read_split(buf, Split("t.orc", 0, 1), ["id"], batch_rows=2)]
    [{'id': [1, 2]}, {'id': [3]}]
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import BinaryIO

import pyarrow as pa
import pyarrow.orc as orc

from beam_tensorize.kernels.formats.base import (
    DEFAULT_BATCH_ROWS,
    InputFormat,
    Split,
    conform_batch,
    project_schema,
    register_format,
)
from beam_tensorize.kernels.provenance import stripe_offset, with_source

__all__ = ["ORCFormat"]

MAGIC = b"ORC"


@register_format
class ORCFormat(InputFormat):
    """ORC files (magic `ORC`): every type pyarrow reads, nested lists, structs and maps."""

    magic = MAGIC
    name, kind = "orc", "ORC"
    needs_file_to_plan = True

    def plan_splits(self, f: BinaryIO | None, path: str, size: int, split_bytes: int) -> list[Split]:
        stripes = _open(f, path).nstripes
        return [Split(path, i, i + 1) for i in range(stripes)] or [Split(path, 0, 0)]

    def read_schema(self, f: BinaryIO, path: str, columns: Sequence[str] | None = None) -> pa.Schema:
        return project_schema(_schema(_open(f, path)), columns, path)

    def read_split(
        self,
        f: BinaryIO,
        split: Split,
        columns: Sequence[str] | None = None,
        batch_rows: int = DEFAULT_BATCH_ROWS,
    ) -> Iterator[pa.RecordBatch]:
        reader = _open(f, split.path)
        schema = project_schema(_schema(reader), columns, split.path)
        for stripe in range(split.start, split.end):
            stripe_batch = reader.read_stripe(stripe, columns=schema.names)
            batch = conform_batch(stripe_batch, schema, split.path, safe=False)
            for row in range(0, batch.num_rows, batch_rows):
                # A copy of its own rows: a slice would keep (and pickle, between pipeline stages)
                # the buffers of the whole stripe.
                part = (
                    batch
                    if batch.num_rows <= batch_rows
                    else pa.concat_batches([batch.slice(row, batch_rows)])
                )
                yield with_source(part, split.path, stripe_offset(stripe, row), "stripe")


def _microseconds(t: pa.DataType) -> pa.DataType:
    """`t` with every nanosecond timestamp inside it made a microsecond one."""
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", t.tz) if t.unit == "ns" else t
    if pa.types.is_struct(t):
        return pa.struct([t.field(i).with_type(_microseconds(t.field(i).type)) for i in range(t.num_fields)])
    if pa.types.is_map(t):
        return pa.map_(
            t.key_field.with_type(_microseconds(t.key_type)),
            t.item_field.with_type(_microseconds(t.item_type)),
        )
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_microseconds(t.value_type)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_microseconds(t.value_type)))
    return t


def _schema(reader: orc.ORCFile) -> pa.Schema:
    return pa.schema([f.with_type(_microseconds(f.type)) for f in reader.schema])


def _open(f: BinaryIO, path: str) -> orc.ORCFile:
    try:
        return orc.ORCFile(f)
    except (pa.ArrowInvalid, OSError) as err:
        raise ValueError(f"{path}: not a readable ORC file: {err}") from None
