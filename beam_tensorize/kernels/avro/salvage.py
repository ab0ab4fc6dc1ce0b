"""Record-level decode errors as dead letters: the good records of a block are kept, each bad
one is given back with its file, block offset, index in the block, reason and raw bytes.

An Avro block is a run of records with no markers between them, so a record can be told
apart from the next only by reading it. A *structural* read (every string read as bytes: the
same encoding, without the UTF-8 check) finds where each record ends; then each record is
decoded on its own. A record whose values are bad but whose structure is sound (invalid UTF-8
in a string, a value its column cannot hold) becomes one dead letter and the records after it
are still read. A record whose structure is broken (a union branch index out of range, a length
running past the block) leaves the rest of the block unreadable: that record's dead letter
holds the rest of the block's bytes, and each later record of the block gets a dead letter
saying it could not be told apart. Block-level corruption (a block that does not decompress,
fails its checksum, is truncated, or has bytes left over after its records) stays fatal.

Example:
    >>> import io, fastavro
    >>> schema = {"type": "record", "name": "r", "fields": [{"name": "s", "type": "string"}]}
    >>> buf = io.BytesIO()
    >>> fastavro.writer(buf, schema, [{"s": "a"}, {"s": "b"}, {"s": "c"}])
    >>> data = buf.getvalue().replace(b"\\x02b", b"\\x02\\xff")  # record 1: not UTF-8
    >>> from beam_tensorize.kernels.avro import iter_blocks, read_header, avro_schema_to_arrow
    >>> f = io.BytesIO(data)
    >>> header = read_header(f, "x.avro")
    >>> blocks = list(iter_blocks(f, header, "x.avro"))
    >>> out = decode_blocks_salvaging(blocks, header, avro_schema_to_arrow(schema), "x.avro")
    >>> out.batch.column("s").to_pylist(), out.gaps, out.dead_letters[0]["record"]
    (['a', 'c'], [1], 1)
"""

from __future__ import annotations

import functools
import io
from collections.abc import Sequence
from typing import Any, NamedTuple

import fastavro
import pyarrow as pa

from beam_tensorize.kernels.avro.container import AvroFormatError, AvroHeader, RawBlock, decompress
from beam_tensorize.kernels.avro.decode import Plan, decode_blocks, decoding_plan, schema_key

__all__ = ["Salvaged", "decode_blocks_salvaging"]


class Salvaged(NamedTuple):
    """What `decode_blocks_salvaging` gives.

    Attributes:
        batch: the good records (maybe 0 rows).
        dead_letters: one dict per bad record: `source` (the file), `offset` (the block's byte
            offset), `record` (the record's index in its block), `reason`, `data` (its raw,
            decompressed bytes; empty for records after an unreadable one).
        gaps: the positions the bad records had among all the blocks' records, ascending (so
            row `i` of `batch` is record `i + (gaps before it)`; see `provenance.with_gaps`).
    """

    batch: pa.RecordBatch
    dead_letters: list[dict]
    gaps: list[int]


def decode_blocks_salvaging(
    blocks: Sequence[RawBlock], header: AvroHeader, arrow_schema: pa.Schema, path: str
) -> Salvaged:
    """`decode_blocks`, with record-level errors given back as dead letters.

    The blocks are decoded together as usual; only when that fails is each block decoded on
    its own, and a failing block record by record.

    Raises:
        AvroFormatError: block-level corruption (see the module docstring), naming the file and
            the block's offset; or a schema that cannot be decoded.
    """
    try:
        return Salvaged(decode_blocks(blocks, header, arrow_schema, path), [], [])
    except AvroFormatError:
        pass  # find the bad records below
    try:
        plan = decoding_plan(schema_key(header), arrow_schema)
    except ValueError as e:
        raise AvroFormatError(path, str(e)) from None
    parts: list[pa.RecordBatch] = []
    letters: list[dict] = []
    gaps: list[int] = []
    first = 0  # position of the block's first record among all the blocks' records
    for block in blocks:
        data = decompress(block, header.codec, path)
        try:
            parts.append(plan.decode(data, block, path, arrow_schema))
        except AvroFormatError:
            batch, bad = _salvage_block(plan, data, block, path, arrow_schema)
            parts.append(batch)
            letters += bad
            gaps += [first + letter["record"] for letter in bad]
        first += block.count
    batch = parts[0] if len(parts) == 1 else pa.concat_batches(parts)
    return Salvaged(batch, letters, gaps)


def _salvage_block(
    plan: Plan, data: bytes, block: RawBlock, path: str, arrow_schema: pa.Schema
) -> tuple[pa.RecordBatch, list[dict]]:
    """The good records of one block that failed to decode, and a dead letter per bad one."""
    read_structure = _structure_reader(plan)
    stream = io.BytesIO(data)
    good: list[bytes] = []
    letters: list[dict] = []

    def letter(index: int, reason: str, raw: bytes) -> dict:
        return {"source": path, "offset": block.offset, "record": index, "reason": reason, "data": raw}

    for index in range(block.count):
        start = stream.tell()
        try:
            read_structure(stream)
        except Exception as e:  # noqa: BLE001 - fastavro raises many types on bad data
            left = block.count - index
            letters.append(
                letter(
                    index,
                    f"cannot decode Avro record {index} of {block.count} in the block: "
                    f"{_problem(plan, data[start:], path, block, arrow_schema, e)}; the "
                    f"{left - 1} records after it in the block cannot be told apart (its data "
                    "holds the rest of the block)",
                    data[start:],
                )
            )
            letters += [
                letter(
                    later,
                    f"Avro record {later} of {block.count} in the block follows the undecodable "
                    f"record {index}, so it cannot be told apart",
                    b"",
                )
                for later in range(index + 1, block.count)
            ]
            break
        raw = data[start : stream.tell()]
        try:
            plan.decode(raw, RawBlock(block.offset, 1, b""), path, arrow_schema)
        except AvroFormatError as e:
            reason = f"cannot decode Avro record {index} of {block.count} in the block: {_reason(e)}"
            letters.append(letter(index, reason, raw))
            continue
        good.append(raw)
    else:
        left = len(data) - stream.tell()
        if left:
            raise AvroFormatError(
                path, f"corrupt block: {left} bytes left over after its {block.count} records", block.offset
            )
    kept = RawBlock(block.offset, len(good), b"")
    if good:
        batch = plan.decode(b"".join(good), kept, path, arrow_schema)
    else:
        batch = pa.RecordBatch.from_pylist([], schema=arrow_schema)
    return batch, letters


def _problem(plan: Plan, raw: bytes, path: str, block: RawBlock, schema: pa.Schema, error: Exception) -> str:
    """Why a record cannot be read: the decoder's own words where it gives some."""
    try:
        plan.decode(raw, RawBlock(block.offset, 1, b""), path, schema)
    except AvroFormatError as e:
        return _reason(e)
    except Exception:  # noqa: BLE001 - fall back to the structural reader's words
        pass
    return f"{type(error).__name__}: {error}"


def _reason(error: AvroFormatError) -> str:
    problem = error.problem
    for prefix in ("corrupt block: cannot decode record 0 of 1: ", "corrupt block: "):
        if problem.startswith(prefix):
            return problem[len(prefix) :]
    return problem


@functools.lru_cache(maxsize=16)
def _structure_reader(plan: Plan) -> Any:
    """A reader of one record that checks only its structure (strings read as bytes)."""
    writer = plan.writer_json
    try:
        parsed = fastavro.parse_schema(_strings_as_bytes(writer))
    except Exception:  # noqa: BLE001 - e.g. a union of string and bytes: read strings as such
        parsed = fastavro.parse_schema(writer)
    return functools.partial(fastavro.schemaless_reader, writer_schema=parsed, reader_schema=None)


def _strings_as_bytes(node: Any) -> Any:
    """An Avro schema (JSON) with every `string` made `bytes` (the same binary encoding)."""
    if node == "string":
        return "bytes"
    if isinstance(node, list):
        return [_strings_as_bytes(n) for n in node]
    if not isinstance(node, dict):
        return node
    out = dict(node)
    kind = node.get("type")
    if kind == "string":
        out["type"] = "bytes"
        out.pop("logicalType", None)
    elif kind == "record" or kind == "error":
        out["fields"] = [{**f, "type": _strings_as_bytes(f["type"])} for f in node.get("fields", [])]
    elif kind == "array":
        out["items"] = _strings_as_bytes(node["items"])
    elif kind == "map":
        out["values"] = _strings_as_bytes(node["values"])
    elif isinstance(kind, (dict, list)):
        out["type"] = _strings_as_bytes(kind)
    return out
