"""Decoding plans: blocks of one writer schema -> record batches of one Arrow schema, with the
native decoder where it is built, else fastavro."""

from __future__ import annotations

import decimal
import functools
import io
import json
import logging
import os
from collections.abc import Iterator, Sequence
from typing import Any, BinaryIO

import fastavro
import numpy as np
import pyarrow as pa

from beam_tensorize.kernels.arrow_types import check_columns, project_arrow_schema
from beam_tensorize.kernels.avro.container import (
    AvroFormatError,
    AvroHeader,
    RawBlock,
    decompress,
    iter_blocks,
    read_header,
)
from beam_tensorize.kernels.avro.fastavro_decoder import (
    Emitter,
    has_member_unions,
    is_nested,
    projection_reader,
    projection_reader_works,
)
from beam_tensorize.kernels.avro.schema import AvroSchemaJson, parse_schema
from beam_tensorize.kernels.avro.types import Convert, Typer, avro_schema_to_arrow, prune_like

__all__ = [
    "DECODER_ENV",
    "Plan",
    "decode_block",
    "decode_blocks",
    "decoding_plan",
    "read_avro_batches",
    "schema_key",
]


_LOGGER = logging.getLogger(__name__)

#: Set to "fastavro" to decode with fastavro even when the native decoder could be used.
DECODER_ENV = "BEAM_TENSORIZE_AVRO_DECODER"


class Plan:
    """Everything needed to decode blocks of one writer schema into one Arrow schema."""

    def __init__(self, schema: AvroSchemaJson, arrow_schema: pa.Schema):
        record = parse_schema(schema)
        by_name = {f.name: f for f in record.fields}
        missing = [n for n in arrow_schema.names if n not in by_name]
        if missing:
            raise ValueError(f"column(s) {missing} are not in the file's Avro schema; it has {list(by_name)}")
        selected = [by_name[n] for n in arrow_schema.names]
        typer = Typer()
        raw_fields = []
        self.converters: list[tuple[str, Convert]] = []
        # Per output column: the Arrow type to view the raw column as, and to cast to.
        self.views: list[pa.DataType | None] = []
        self.casts: list[pa.DataType | None] = []
        native_ok = True  # the wanted types are the Typer's, or projections of them
        for f, wanted in zip(selected, arrow_schema):
            final, raw, convert = typer.field(f)
            if wanted.type != final.type:
                try:
                    prune_like(raw.type, final.type, wanted.type)
                except ValueError:
                    native_ok = False
            if convert is None and wanted.type != final.type:
                try:  # a nested projection: convert only the kept fields to Arrow
                    raw = raw.with_type(prune_like(raw.type, final.type, wanted.type))
                    final = final.with_type(wanted.type)
                except ValueError:
                    pass  # not a projection: cast after decoding
            raw_fields.append(raw)
            if convert is not None:
                self.converters.append((f.name, convert))
            self.views.append(final.type if raw.type != final.type else None)
            self.casts.append(wanted.type if wanted.type != final.type else None)
        self.raw_struct = pa.struct(raw_fields)

        # One emitter for all fields: a definition must precede its references.
        emitter = Emitter()
        writer = {
            "type": "record",
            "name": record.fullname,
            "fields": [emitter.field(f) for f in record.fields],
        }
        # Skipping costs a little per record; it pays when a left-out field holds nested values.
        projected = set(arrow_schema.names)
        skip = any(is_nested(f.node) for f in record.fields if f.name not in projected)
        reader = None
        if skip and projection_reader_works():
            reader = projection_reader(record.fullname, [f.name for f in selected])
        options: dict[str, Any] = {}
        if any(has_member_unions(f.node) for f in selected):
            options = {"return_named_type": True, "return_named_type_override": True}
        #: The writer schema as JSON (every named type defined once).
        self.writer_json = writer
        self.read_record = functools.partial(
            fastavro.schemaless_reader,
            writer_schema=fastavro.parse_schema(writer),
            reader_schema=reader,
            **options,
        )
        # The native decoder, when built and the schema is one it supports (it builds the
        # wanted types directly, so not when a column is cast to another type).
        self.native = None
        if native_ok:
            from beam_tensorize.kernels.avro import native as avro_native

            self.native = avro_native.build(record, arrow_schema)

    def decode(self, data: bytes, block: RawBlock, path: str, arrow_schema: pa.Schema) -> pa.RecordBatch:
        if self.native is not None and os.environ.get(DECODER_ENV, "").lower() != "fastavro":
            batch = self._decode_native(data, block, path, arrow_schema)
            if batch is not None:
                return batch
        count = block.count
        bio = io.BytesIO(data)
        read = self.read_record
        records = []
        append = records.append
        try:
            for _ in range(count):
                append(read(bio))
        except Exception as e:  # noqa: BLE001 - fastavro raises many types on corrupt input
            raise AvroFormatError(
                path,
                f"corrupt block: cannot decode record {len(records)} of {count}: {type(e).__name__}: {e}",
                block.offset,
            ) from None
        left = len(data) - bio.tell()
        if left:
            raise AvroFormatError(
                path, f"corrupt block: {left} bytes left over after its {count} records", block.offset
            )
        try:
            if self.converters:
                for record in records:
                    for name, fn in self.converters:
                        v = record[name]
                        if v is not None:
                            record[name] = fn(v)
            struct = pa.array(records, type=self.raw_struct)
            columns = struct.flatten()
            for i, (view, cast) in enumerate(zip(self.views, self.casts)):
                if view is not None:
                    columns[i] = _view(columns[i], view)
                if cast is not None:
                    columns[i] = columns[i].cast(cast)
            return pa.RecordBatch.from_arrays(columns, schema=arrow_schema)
        except (
            pa.ArrowException,
            ValueError,
            TypeError,
            OverflowError,
            KeyError,
            decimal.DecimalException,
        ) as e:
            raise AvroFormatError(
                path, f"cannot convert block to Arrow: {type(e).__name__}: {e}", block.offset
            ) from None

    def _decode_native(
        self, data: bytes, block: RawBlock, path: str, arrow_schema: pa.Schema
    ) -> pa.RecordBatch | None:
        """The block decoded natively; None if its values nest deeper than the decoder goes."""
        count = block.count
        try:
            columns, used = self.native.decode(data, count)
        except self.native.TooDeep:
            return None
        except ValueError as e:
            index, problem = self.native.error_details(e)
            raise AvroFormatError(
                path,
                f"corrupt block: cannot decode record {index} of {count}: ValueError: {problem}",
                block.offset,
            ) from None
        left = len(data) - used
        if left:
            raise AvroFormatError(
                path, f"corrupt block: {left} bytes left over after its {count} records", block.offset
            )
        try:
            return pa.RecordBatch.from_arrays(columns, schema=arrow_schema)
        except (pa.ArrowException, ValueError, TypeError) as e:
            raise AvroFormatError(
                path, f"cannot convert block to Arrow: {type(e).__name__}: {e}", block.offset
            ) from None


@functools.lru_cache(maxsize=64)
def decoding_plan(schema_json: str, arrow_schema: pa.Schema) -> Plan:
    return Plan(json.loads(schema_json), arrow_schema)


def schema_key(header: AvroHeader) -> str:
    raw = header.metadata.get("avro.schema")
    if raw is not None:
        return raw.decode("utf-8")
    return json.dumps(header.schema, sort_keys=True)


def _view(column: pa.Array, type_: pa.DataType) -> pa.Array:
    """``column`` as ``type_`` (temporal types over their storage ints), zero-copy when Arrow can.

    Arrow's ``view`` loses the length of null-typed struct fields inside lists (the result fails
    validation); such columns are cast instead, which gives the same values.
    """
    viewed = column.view(type_)
    try:
        viewed.validate()
    except pa.ArrowInvalid:
        return column.cast(type_)
    return viewed


def decode_block(block: RawBlock, header: AvroHeader, arrow_schema: pa.Schema, path: str) -> pa.RecordBatch:
    """Decompresses and decodes one block into a record batch.

    Args:
        block: a block from :func:`iter_blocks`.
        header: the file's header.
        arrow_schema: the schema of the result: top-level fields of the writer schema, in any
            order (a projection). Normally ``avro_schema_to_arrow(header.schema)``, maybe
            projected; a field whose type differs from that is cast to the given type.
        path: the file's name, for error messages.

    Returns:
        A batch of ``block.count`` rows with exactly ``arrow_schema``.

    Raises:
        AvroFormatError: the block does not decompress (or fails its checksum), does not
            decode, or does not fit the Arrow schema; the schema cannot be converted.
    """
    try:
        plan = decoding_plan(schema_key(header), arrow_schema)
    except ValueError as e:
        raise AvroFormatError(path, str(e)) from None
    data = decompress(block, header.codec, path)
    return plan.decode(data, block, path, arrow_schema)


def decode_blocks(
    blocks: Sequence[RawBlock], header: AvroHeader, arrow_schema: pa.Schema, path: str
) -> pa.RecordBatch:
    """Decompresses and decodes several consecutive blocks into one record batch: with the
    native decoder in one call (each block checked to end where it should), else block by
    block (`decode_block`), which is also how a failure is explained.

    Raises:
        AvroFormatError: as `decode_block`, naming the block at fault.
    """
    joint = len(blocks) > 1 and all(block.count > 0 for block in blocks)
    if joint and os.environ.get(DECODER_ENV, "").lower() != "fastavro":
        try:
            plan = decoding_plan(schema_key(header), arrow_schema)
        except ValueError as e:
            raise AvroFormatError(path, str(e)) from None
        if plan.native is not None:
            datas = [decompress(block, header.codec, path) for block in blocks]
            bounds = np.empty((len(blocks), 2), np.int64)
            bounds[:, 0] = np.cumsum([block.count for block in blocks])
            bounds[:, 1] = np.cumsum([len(d) for d in datas])
            try:
                columns, used = plan.native.decode(b"".join(datas), int(bounds[-1, 0]), bounds.tobytes())
                if used == bounds[-1, 1]:
                    return pa.RecordBatch.from_arrays(columns, schema=arrow_schema)
            except (ValueError, plan.native.TooDeep, pa.ArrowException, TypeError):
                pass  # decoded one by one below, for a precise error (or the fastavro path)
    parts = [decode_block(block, header, arrow_schema, path) for block in blocks]
    return parts[0] if len(parts) == 1 else pa.concat_batches(parts)


def read_avro_batches(
    f: BinaryIO,
    path: str,
    columns: Sequence[str] | None = None,
    start: int = 0,
    end: int | None = None,
) -> Iterator[pa.RecordBatch]:
    """Reads an Avro file (or the blocks starting in a byte range of it) as record batches.

    Args:
        f: the file, seekable.
        path: the file's name, for error messages.
        columns: top-level columns to read, in this order; None for all.
        start: first byte of the range (see :func:`iter_blocks`).
        end: end of the range (exclusive); None for the end of the file.

    Yields:
        One batch per non-empty Avro block.

    Raises:
        AvroFormatError: the file is not valid Avro or its schema cannot become Arrow.
        ValueError: a requested column does not exist.

    Example::

        with open("train.avro", "rb") as f:
            for batch in read_avro_batches(f, "train.avro", columns=["userId", "response"]):
                ...
    """
    header = read_header(f, path)
    try:
        record = parse_schema(header.schema)
    except ValueError as e:
        raise AvroFormatError(path, str(e)) from None
    tops = None
    if columns is not None:
        tops = list(dict.fromkeys(c.split(".")[0] for c in columns))
        check_columns(tops, [fd.name for fd in record.fields])
    try:
        arrow_schema = project_arrow_schema(avro_schema_to_arrow(header.schema, tops), columns)
    except ValueError as e:
        raise AvroFormatError(path, str(e)) from None
    for block in iter_blocks(f, header, path, start, end):
        if block.count:
            yield decode_block(block, header, arrow_schema, path)
