"""Tensors as Avro records (`--output_format avro`, Avro2TF's default output format).

The columns are those of the Parquet output (`beam_tensorize.kernels.output.parquet.tensor_columns`, one per
tensor, nested lists for rank >= 1), except that a sparse tensor `x` is one record field
`x: {indices: array<long>, values: array<float>}`, as Avro2TF writes its sparse vectors. Every
field is a union with null (as Spark's Avro writer marks nullable columns). Field names must be
Avro names (letters, digits and `_`, not starting with a digit).

Example:
    >>> import io, fastavro
    >>> raw = io.BytesIO()
    >>> writer = AvroFileWriter(raw, "deflate")
    >>> writer.write(pa.RecordBatch.from_pydict({"id": [1, 2], "v": pa.array([{"indices": [3], "values": [0.5]}, None])}))
    >>> writer.close()
    2
    >>> [r["v"] for r in fastavro.reader(io.BytesIO(raw.getvalue()))]
    [{'indices': [3], 'values': [0.5]}, None]
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, BinaryIO

import fastavro
import pyarrow as pa

from beam_tensorize.kernels.features.conversion import FeatureLayout
from beam_tensorize.kernels.output.base import OutputFormat, register_output_format
from beam_tensorize.kernels.output.parquet import WriteSink, tensor_columns

__all__ = ["AVRO_COMPRESSIONS", "AvroFileWriter", "AvroOutput", "avro_schema"]

#: Compressions of Avro output files (ours -> the container codec); snappy first (Spark's default).
AVRO_COMPRESSIONS = {"snappy": "snappy", "deflate": "deflate", "zstd": "zstandard", "none": "null"}

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_RECORD_NAME = "TensorizeRecord"


def _avro_type(name: str, typ: pa.DataType, records: list[str]) -> Any:
    if pa.types.is_boolean(typ):
        return "boolean"
    if pa.types.is_integer(typ):
        return "int" if typ.bit_width <= 32 and pa.types.is_signed_integer(typ) else "long"
    if pa.types.is_float32(typ) or pa.types.is_float16(typ):
        return "float"
    if pa.types.is_floating(typ):
        return "double"
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return "string"
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ) or pa.types.is_fixed_size_binary(typ):
        return "bytes"
    if pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ):
        return {"type": "array", "items": _avro_type(name, typ.value_type, records)}
    if pa.types.is_struct(typ):
        record = f"{name}_record"
        while record in records:
            record += "_"
        records.append(record)
        fields = [
            {
                "name": _check_name(typ.field(i).name),
                "type": _avro_type(f"{record}_{i}", typ.field(i).type, records),
            }
            for i in range(typ.num_fields)
        ]
        return {"type": "record", "name": record, "fields": fields}
    raise TypeError(f"column {name!r} has type {typ}, which Avro output does not write")


def _check_name(name: str) -> str:
    if not _NAME.match(name):
        raise ValueError(
            f"{name!r} is not an Avro field name (letters, digits and _, not starting with a digit): "
            "rename the tensor or column, or use another --output_format"
        )
    return name


def avro_schema(schema: pa.Schema) -> dict:
    """The Avro record schema of a batch's columns (every field a union with null).

    Raises:
        ValueError: a column name is not an Avro name.
        TypeError: a column's type cannot be written (maps, unions, ...).

    Example:
        >>> avro_schema(pa.schema([("ids", pa.list_(pa.int64()))]))["fields"]
        [{'name': 'ids', 'type': ['null', {'type': 'array', 'items': 'long'}], 'default': None}]
    """
    records: list[str] = [_RECORD_NAME]
    fields = [
        {"name": _check_name(f.name), "type": ["null", _avro_type(f.name, f.type, records)], "default": None}
        for f in schema
    ]
    return {"type": "record", "name": _RECORD_NAME, "fields": fields}


class AvroFileWriter:
    """Streams record batches, in order, into one Avro container file in `raw` (not closed),
    with the schema of the first batch (`avro_schema`) and the codec of `compression` (see
    `AVRO_COMPRESSIONS`). Nothing is written when no batch came."""

    def __init__(self, raw: BinaryIO, compression: str):
        if compression not in AVRO_COMPRESSIONS:
            raise ValueError(f"Avro compression {compression!r} is not one of {', '.join(AVRO_COMPRESSIONS)}")
        self._raw = raw
        self._codec = AVRO_COMPRESSIONS[compression]
        self._writer: fastavro.write.Writer | None = None
        #: Rows written so far.
        self.count = 0

    def write(self, batch: pa.RecordBatch) -> None:
        if self._writer is None:
            schema = fastavro.parse_schema(avro_schema(batch.schema))
            # A fixed sync marker: the same rows give the same bytes on every run.
            self._writer = fastavro.write.Writer(
                WriteSink(self._raw), schema, codec=self._codec, sync_marker=b"beam_tensorize\0\0"
            )
        for record in batch.to_pylist():
            self._writer.write(record)
        self.count += batch.num_rows

    def close(self) -> int:
        """Finish the file; returns the rows written."""
        if self._writer is not None:
            self._writer.flush()
        return self.count

    def abort(self) -> None:
        """Nothing to release: the caller removes the file."""
        self._writer = None


@register_output_format
class AvroOutput(OutputFormat):
    """Tensor columns as Avro records (`part-*.avro`, Avro2TF's output format), a sparse tensor
    one `{indices, values}` record field; compressed inside the file (snappy by default)."""

    name = "avro"
    label = "Avro"
    compressions = tuple(AVRO_COMPRESSIONS)

    def tensor_data(self, features: pa.RecordBatch, layouts: Sequence[FeatureLayout]) -> pa.RecordBatch:
        return tensor_columns(features, layouts, sparse_as_records=True)

    def open_writer(self, raw: BinaryIO, compression: str) -> AvroFileWriter:
        return AvroFileWriter(raw, compression)
