"""Avro object container files to Arrow record batches, block by block.

An Avro container file is a header (magic ``Obj\\x01``, a metadata map holding
the writer schema and the codec, a 16-byte sync marker) followed by blocks::

    long  record count
    long  byte size of the (compressed) payload
    byte  payload[size]
    byte  sync marker[16]

This module splits that work in two, like a splittable source needs it:

* :func:`read_header` and :func:`iter_blocks` find blocks without decoding
  them. ``iter_blocks`` takes a byte range ``[start, end)`` and yields exactly
  the blocks that *start* in it, so cutting a file into consecutive ranges
  reads every block once.
* :func:`decode_block` decompresses one block and decodes its records into a
  ``pyarrow.RecordBatch`` with a given (possibly projected) Arrow schema.

Records are decoded with fastavro's compiled reader, then handed to Arrow as
one struct array per block. The writer schema is compiled once per
(schema, projection) into a *decoder schema* for fastavro that is
wire-identical to the writer schema but arranged so that the Python values
need (almost) no post-processing:

* all names are full names; ``doc``/``default``/``aliases`` are dropped;
* logical types are removed, so fastavro returns raw ints / bytes / strings;
  dates, times and timestamps become Arrow temporal types by a zero-copy
  ``view`` of the int arrays (exact, and no ``datetime`` objects are built),
  decimals are converted from their big-endian two's-complement bytes here;
* in a union of several non-null types (an Arrow struct ``member0``,
  ``member1``, ...) every unnamed branch is wrapped in a one-field record
  with a private name. The wrapper has the same encoding as the branch, and
  with fastavro's ``return_named_type`` option every value of such a union
  comes back as ``(type name, value)``, which tells the branch exactly
  (``int`` vs ``long``, ``string`` vs an enum, ``bytes`` vs ``fixed``, ``map``
  vs a record) without guessing from the Python value.

With a column projection that leaves out records, arrays or maps, fastavro
is given a reader schema listing only the projected top-level fields, so it
skips the others without building Python objects for them (checked once per
process; should a fastavro version not behave as expected, all fields are
decoded and the others dropped).

Type mapping (Spark's spark-avro conventions): ``null`` -> null,
``boolean`` -> bool, ``int`` -> int32, ``long`` -> int64, ``float`` ->
float32, ``double`` -> float64, ``bytes`` -> binary, ``string`` -> string,
``fixed`` -> fixed_size_binary, ``enum`` -> string, ``record`` -> struct,
``array`` -> list, ``map`` -> map<string, value>. ``[null, X]`` is X,
nullable; ``[int, long]`` -> int64 and ``[float, double]`` -> float64 (null
allowed); any other union is a struct of nullable ``member<i>`` fields, one
per non-null branch, exactly one set per row. A field, list item or map value
is nullable only when its type is a union with null. Logical types: ``date``
-> date32, ``time-millis`` -> time32[ms], ``time-micros`` -> time64[us],
``timestamp-millis/micros/nanos`` -> timestamp[ms/us/ns, UTC],
``local-timestamp-*`` -> timestamp without time zone, ``decimal`` ->
decimal128 (decimal256 above precision 38), ``uuid`` -> string; unknown or
invalid logical types fall back to the underlying type. A record field's
``doc`` goes into the Arrow field metadata under ``doc``.

Native fast path: when the optional C extension is built (``setup.py`` builds
it where a compiler is available) and the schema uses only what it supports
(everything above but decimals, see :mod:`beam_tensorize.kernels.avro_native`),
blocks are decoded straight into Arrow buffers, with results identical to the
fastavro path and many times faster. Setting the environment variable
``BEAM_TENSORIZE_AVRO_DECODER=fastavro`` forces the fastavro path (read at
each block, so it can be changed in a running process).
"""

from __future__ import annotations

import bz2
import decimal
import functools
import io
import itertools
import json
import logging
import lzma
import os
import zlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, BinaryIO, Union

import fastavro
import pyarrow as pa

from beam_tensorize.kernels.provenance import with_source

__all__ = [
    "AvroFormatError",
    "AvroHeader",
    "RawBlock",
    "avro_schema_to_arrow",
    "DEFAULT_BATCH_ROWS",
    "DEFAULT_SPLIT_BYTES",
    "decode_block",
    "iter_blocks",
    "project_arrow_schema",
    "read_avro_batches",
    "read_avro_range",
    "read_header",
    "read_range_schema",
    "resolve_column",
    "split_ranges",
]

_LOGGER = logging.getLogger(__name__)

AvroSchemaJson = Union[dict, list, str]

MAGIC = b"Obj\x01"
SYNC_SIZE = 16
CODECS = ("null", "deflate", "snappy", "zstandard", "bzip2", "xz")

_CHUNK = 1 << 20
_HEADER_CHUNK = 1 << 16
_MAX_VARINT_BYTES = 10
# Private namespace of the wrapper records put around unnamed union branches.
_WRAPPER_NAMESPACE = "beam_tensorize_internal_avro_union"

_PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")
_ARROW_PRIMITIVES = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}
# (underlying Avro type, logicalType) -> Arrow type reached by a zero-copy view of the raw ints.
_TEMPORAL = {
    ("int", "date"): pa.date32(),
    ("int", "time-millis"): pa.time32("ms"),
    ("long", "time-micros"): pa.time64("us"),
    ("long", "timestamp-millis"): pa.timestamp("ms", tz="UTC"),
    ("long", "timestamp-micros"): pa.timestamp("us", tz="UTC"),
    ("long", "timestamp-nanos"): pa.timestamp("ns", tz="UTC"),
    ("long", "local-timestamp-millis"): pa.timestamp("ms"),
    ("long", "local-timestamp-micros"): pa.timestamp("us"),
    ("long", "local-timestamp-nanos"): pa.timestamp("ns"),
}
# Set to "fastavro" to decode with fastavro even when the native decoder could be used.
DECODER_ENV = "BEAM_TENSORIZE_AVRO_DECODER"
_MAX_DECIMAL128_PRECISION = 38
_MAX_DECIMAL256_PRECISION = 76
#: Rows per batch `read_avro_range` gathers by default.
DEFAULT_BATCH_ROWS = 8192
#: Size of the byte ranges `split_ranges` cuts files into by default.
DEFAULT_SPLIT_BYTES = 64 << 20


# --------------------------------------------------------------------------------------------------
# Errors and plain data


class AvroFormatError(ValueError):
    """An Avro file is not valid: bad magic, truncated, corrupt block, bad sync marker, ...

    Attributes:
        path: the file the problem is in.
        problem: what is wrong.
        offset: byte offset in the file where the problem was found (the start of the block
            for block errors), or None when not known.
    """

    def __init__(self, path: str, problem: str, offset: int | None = None):
        self.path = path
        self.problem = problem
        self.offset = offset
        where = f" (at byte offset {offset})" if offset is not None else ""
        super().__init__(f"{path}: {problem}{where}")

    def __reduce__(self):
        return (type(self), (self.path, self.problem, self.offset))


@dataclass(frozen=True)
class AvroHeader:
    """The header of an Avro object container file.

    Attributes:
        schema: the writer schema as parsed JSON.
        codec: the block codec: one of ``null``, ``deflate``, ``snappy``, ``zstandard``,
            ``bzip2``, ``xz``.
        sync_marker: the 16-byte marker that ends the header and every block.
        data_start: byte offset of the first block.
        metadata: the header's metadata map (``avro.schema``, ``avro.codec``, user keys).
    """

    schema: dict | list | str
    codec: str
    sync_marker: bytes
    data_start: int
    metadata: dict[str, bytes]


@dataclass(frozen=True)
class RawBlock:
    """One Avro block as stored in the file.

    Attributes:
        offset: file offset where the block starts (its record-count varint).
        count: number of records in the block.
        data: the still-compressed payload.
    """

    offset: int
    count: int
    data: bytes


# --------------------------------------------------------------------------------------------------
# Byte-level reading


class _Truncated(Exception):
    """The file ended before a value was complete."""


class _Cursor:
    """Sequential reads from a file object through a buffer, tracking the absolute offset."""

    def __init__(self, f: BinaryIO, pos: int, chunk: int | None = None):
        f.seek(pos)
        self._f = f
        self._buf = b""
        self._i = 0
        self._base = pos
        self._chunk = _CHUNK if chunk is None else chunk

    @property
    def pos(self) -> int:
        return self._base + self._i

    def _ensure(self, n: int) -> bool:
        """Makes ``n`` bytes available from the current position; False if the file ends first."""
        avail = len(self._buf) - self._i
        if avail >= n:
            return True
        parts = [self._buf[self._i :]]
        self._base += self._i
        self._i = 0
        # Someone else may have moved the file position between two reads.
        if self._f.tell() != self._base + avail:
            self._f.seek(self._base + avail)
        want = max(n - avail, self._chunk)
        while avail < n:
            data = self._f.read(want)
            if not data:
                break
            parts.append(data)
            avail += len(data)
            want = max(n - avail, 0) or self._chunk
        self._buf = b"".join(parts)
        return avail >= n

    def at_eof(self) -> bool:
        return not self._ensure(1)

    def read_long(self) -> int:
        """Reads one zig-zag varint."""
        if len(self._buf) - self._i < _MAX_VARINT_BYTES:
            self._ensure(_MAX_VARINT_BYTES)
        buf = self._buf
        i = self._i
        end = len(buf)
        result = 0
        shift = 0
        while True:
            if i >= end:
                raise _Truncated
            b = buf[i]
            i += 1
            result |= (b & 0x7F) << shift
            if not b & 0x80:
                break
            shift += 7
            if shift >= 7 * _MAX_VARINT_BYTES:
                raise ValueError("variable-length integer is longer than 10 bytes")
        self._i = i
        return (result >> 1) ^ -(result & 1)

    def read(self, n: int) -> bytes:
        if not self._ensure(n):
            raise _Truncated
        out = self._buf[self._i : self._i + n]
        self._i += n
        return out


def _file_size(f: BinaryIO) -> int:
    pos = f.tell()
    size = f.seek(0, io.SEEK_END)
    f.seek(pos)
    return size


# --------------------------------------------------------------------------------------------------
# Header


def read_header(f: BinaryIO, path: str) -> AvroHeader:
    """Reads the header of an Avro object container file.

    Args:
        f: a seekable binary file object, positioned anywhere (it is rewound to 0).
        path: the file's name, used in error messages.

    Returns:
        The parsed header.

    Raises:
        AvroFormatError: the file is not Avro (bad magic), the header is truncated or
            malformed, the schema is not JSON, or the codec is not supported.
    """
    cur = _Cursor(f, 0, min(_CHUNK, _HEADER_CHUNK))
    try:
        magic = cur.read(len(MAGIC))
    except _Truncated:
        raise AvroFormatError(path, "not an Avro file: shorter than the 4-byte magic") from None
    if magic != MAGIC:
        raise AvroFormatError(path, f"not an Avro file: bad magic {magic!r}, expected {MAGIC!r}", 0)
    metadata: dict[str, bytes] = {}
    try:
        while True:
            count = cur.read_long()
            if count == 0:
                break
            if count < 0:
                count = -count
                cur.read_long()  # byte size of the map block, not needed
            for _ in range(count):
                key_len = cur.read_long()
                if key_len < 0:
                    raise AvroFormatError(path, "malformed header: negative metadata key length", cur.pos)
                key = cur.read(key_len).decode("utf-8")
                value_len = cur.read_long()
                if value_len < 0:
                    raise AvroFormatError(path, "malformed header: negative metadata value length", cur.pos)
                metadata[key] = cur.read(value_len)
        sync_marker = cur.read(SYNC_SIZE)
    except _Truncated:
        raise AvroFormatError(path, "truncated Avro header", cur.pos) from None
    except AvroFormatError:
        raise
    except ValueError as e:  # also UnicodeDecodeError
        raise AvroFormatError(path, f"malformed Avro header: {e}", cur.pos) from None
    data_start = cur.pos

    raw_schema = metadata.get("avro.schema")
    if raw_schema is None:
        raise AvroFormatError(path, "Avro header has no 'avro.schema' entry")
    try:
        schema = json.loads(raw_schema.decode("utf-8"))
    except ValueError as e:
        raise AvroFormatError(path, f"Avro header schema is not valid JSON: {e}") from None
    codec = metadata.get("avro.codec", b"null").decode("utf-8", "replace") or "null"
    if codec not in CODECS:
        raise AvroFormatError(path, f"unsupported Avro codec {codec!r}; supported: {', '.join(CODECS)}")
    return AvroHeader(
        schema=schema, codec=codec, sync_marker=sync_marker, data_start=data_start, metadata=metadata
    )


# --------------------------------------------------------------------------------------------------
# Blocks


def _find_first_block(f: BinaryIO, header: AvroHeader, start: int, end: int | None) -> int | None:
    """Offset of the first block starting at or after ``start`` (> data_start), or None before ``end``.

    A block starts right after a sync marker, so this is the end of the first sync-marker
    occurrence whose end is at or after ``start``: scan from ``start - 16``.
    """
    marker = header.sync_marker
    pos = start - SYNC_SIZE
    f.seek(pos)
    tail = b""
    tail_pos = pos
    while end is None or tail_pos + len(tail) < end:
        want = _CHUNK if end is None else min(_CHUNK, end - (tail_pos + len(tail)))
        data = f.read(want)
        if not data:
            return None
        window = tail + data
        hit = window.find(marker)
        if hit >= 0:
            found = tail_pos + hit + SYNC_SIZE
            return found if end is None or found < end else None
        keep = min(len(window), SYNC_SIZE - 1)
        tail_pos += len(window) - keep
        tail = window[len(window) - keep :]
    return None


def iter_blocks(
    f: BinaryIO, header: AvroHeader, path: str, start: int = 0, end: int | None = None
) -> Iterator[RawBlock]:
    """Yields the blocks of an Avro file that start in the byte range ``[start, end)``.

    Blocks start at ``header.data_start`` and right after each sync marker. When ``start``
    is past the first block, the file is scanned from ``start - 16`` for the first sync marker
    ending at or after ``start``. Consecutive ranges ``[0, a), [a, b), [b, EOF)`` therefore
    read every block of the file exactly once.

    Args:
        f: the file, seekable.
        header: its header, from :func:`read_header`.
        path: the file's name, for error messages.
        start: first byte of the range.
        end: end of the range (exclusive); None for the end of the file.

    Yields:
        The blocks in file order, payloads still compressed.

    Raises:
        AvroFormatError: a block is truncated or malformed, or is not followed by the
            file's sync marker.
    """
    size = _file_size(f)
    limit = size if end is None else min(end, size)
    if start <= header.data_start:
        pos: int | None = header.data_start
    else:
        pos = _find_first_block(f, header, start, limit)
    if pos is None or pos >= limit:
        return
    cur = _Cursor(f, pos)
    marker = header.sync_marker
    while True:
        offset = cur.pos
        if offset >= limit or cur.at_eof():
            return
        try:
            count = cur.read_long()
            length = cur.read_long()
            if count < 0 or length < 0:
                raise AvroFormatError(
                    path, f"malformed block: negative record count {count} or size {length}", offset
                )
            if cur.pos + length + SYNC_SIZE > size:
                raise AvroFormatError(
                    path,
                    f"truncated block: its {length}-byte payload and sync marker run past the end "
                    f"of the file ({size} bytes)",
                    offset,
                )
            data = cur.read(length)
            sync = cur.read(SYNC_SIZE)
        except _Truncated:
            raise AvroFormatError(path, "truncated block: the file ends inside it", offset) from None
        except AvroFormatError:
            raise
        except ValueError as e:
            raise AvroFormatError(path, f"malformed block: {e}", offset) from None
        if sync != marker:
            raise AvroFormatError(
                path,
                f"sync marker mismatch after the block (at byte {cur.pos - SYNC_SIZE}): "
                "the file is corrupt or the block size is wrong",
                offset,
            )
        yield RawBlock(offset=offset, count=count, data=data)


def _decompress(block: RawBlock, codec: str, path: str) -> bytes:
    data = block.data
    try:
        if codec == "null":
            return data
        if codec == "deflate":
            return zlib.decompress(data, -15)
        if codec == "snappy":
            return _snappy_decompress(data)
        if codec == "zstandard":
            return _zstd_decompress(data)
        if codec == "bzip2":
            return bz2.decompress(data)
        if codec == "xz":
            return lzma.decompress(data)
    except AvroFormatError:
        raise
    except ImportError as e:
        raise AvroFormatError(path, f"codec {codec!r} needs a missing package: {e}", block.offset) from None
    except Exception as e:  # noqa: BLE001 - every codec library raises its own error types
        raise AvroFormatError(
            path, f"corrupt block: {codec} decompression failed: {type(e).__name__}: {e}", block.offset
        ) from None
    raise AvroFormatError(path, f"unsupported Avro codec {codec!r}", block.offset)


class _ChecksumError(ValueError):
    pass


def _snappy_decompress(data: bytes) -> bytes:
    import cramjam

    if len(data) < 4:
        raise ValueError("snappy block shorter than its 4-byte checksum")
    out = bytes(cramjam.snappy.decompress_raw(data[:-4]))
    expected = int.from_bytes(data[-4:], "big")
    if zlib.crc32(out) != expected:
        raise _ChecksumError("CRC32 of the uncompressed data does not match the block's checksum")
    return out


def _zstd_decompress(data: bytes) -> bytes:
    import zstandard

    # Streaming decompression: frames written by stream encoders carry no content size.
    with zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True) as reader:
        return reader.read()


# --------------------------------------------------------------------------------------------------
# Schema model: the writer schema parsed once, names resolved


class _Node:
    __slots__ = ()


class _Primitive(_Node):
    __slots__ = ("kind", "props")

    def __init__(self, kind: str, props: dict[str, Any]):
        self.kind = kind
        self.props = props


class _Named(_Node):
    __slots__ = ("fullname",)

    def __init__(self, fullname: str):
        self.fullname = fullname


class _Field:
    __slots__ = ("doc", "name", "node")

    def __init__(self, name: str, node: _Node, doc: str | None):
        self.name = name
        self.node = node
        self.doc = doc


class _Record(_Named):
    __slots__ = ("fields",)

    def __init__(self, fullname: str):
        super().__init__(fullname)
        self.fields: list[_Field] = []


class _Enum(_Named):
    __slots__ = ("symbols",)

    def __init__(self, fullname: str, symbols: list[str]):
        super().__init__(fullname)
        self.symbols = symbols


class _Fixed(_Named):
    __slots__ = ("props", "size")

    def __init__(self, fullname: str, size: int, props: dict[str, Any]):
        super().__init__(fullname)
        self.size = size
        self.props = props


class _Array(_Node):
    __slots__ = ("items",)

    def __init__(self, items: _Node):
        self.items = items


class _Map(_Node):
    __slots__ = ("values",)

    def __init__(self, values: _Node):
        self.values = values


class _Union(_Node):
    __slots__ = ("branches", "uid")

    def __init__(self, branches: list[_Node], uid: int):
        self.branches = branches
        self.uid = uid


def _is_null(node: _Node) -> bool:
    return isinstance(node, _Primitive) and node.kind == "null"


def _widened(union: _Union) -> str | None:
    """Spark's special cases: ``[int, long]`` -> ``long`` and ``[float, double]`` -> ``double``."""
    others = [b for b in union.branches if not _is_null(b)]
    kinds = {b.kind for b in others if isinstance(b, _Primitive)}
    if len(others) == 2 and len(kinds) == 2:
        if kinds == {"int", "long"}:
            return "long"
        if kinds == {"float", "double"}:
            return "double"
    return None


def _is_member_union(union: _Union) -> bool:
    """True for a union decoded into an Arrow struct of ``member<i>`` fields."""
    return sum(not _is_null(b) for b in union.branches) >= 2 and _widened(union) is None


class _SchemaParser:
    """Parses Avro schema JSON into nodes, resolving names per the Avro namespace rules."""

    def __init__(self) -> None:
        self.names: dict[str, _Named] = {}
        self._uids = itertools.count()

    def parse(self, schema: Any, namespace: str) -> _Node:
        if isinstance(schema, str):
            if schema in _PRIMITIVES:
                return _Primitive(schema, {})
            return self._lookup(schema, namespace)
        if isinstance(schema, list):
            if not schema:
                raise ValueError("invalid Avro schema: empty union")
            return _Union([self.parse(b, namespace) for b in schema], next(self._uids))
        if isinstance(schema, dict):
            kind = schema.get("type")
            if isinstance(kind, (dict, list)):
                return self.parse(kind, namespace)
            if kind in _PRIMITIVES:
                return _Primitive(kind, _logical_props(schema))
            if kind in ("record", "error"):
                return self._record(schema, namespace)
            if kind == "enum":
                fullname, _ = self._define_name(schema, namespace)
                symbols = schema.get("symbols")
                if not isinstance(symbols, list) or not all(isinstance(s, str) for s in symbols):
                    raise ValueError(f"invalid Avro enum {fullname!r}: 'symbols' must be a list of strings")
                return self._register(_Enum(fullname, list(symbols)))
            if kind == "fixed":
                fullname, _ = self._define_name(schema, namespace)
                size = schema.get("size")
                if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                    raise ValueError(f"invalid Avro fixed {fullname!r}: 'size' must be a non-negative int")
                return self._register(_Fixed(fullname, size, _logical_props(schema)))
            if kind == "array":
                if "items" not in schema:
                    raise ValueError("invalid Avro array schema: no 'items'")
                return _Array(self.parse(schema["items"], namespace))
            if kind == "map":
                if "values" not in schema:
                    raise ValueError("invalid Avro map schema: no 'values'")
                return _Map(self.parse(schema["values"], namespace))
            if isinstance(kind, str):
                return self._lookup(kind, namespace)
        raise ValueError(f"invalid Avro schema: {json.dumps(schema)[:200]}")

    def _record(self, schema: dict, namespace: str) -> _Record:
        fullname, inner_namespace = self._define_name(schema, namespace)
        record = self._register(_Record(fullname))
        fields = schema.get("fields")
        if not isinstance(fields, list):
            raise ValueError(f"invalid Avro record {fullname!r}: 'fields' must be a list")
        seen = set()
        for field in fields:
            if not isinstance(field, dict) or not isinstance(field.get("name"), str) or "type" not in field:
                raise ValueError(f"invalid field in Avro record {fullname!r}: {json.dumps(field)[:200]}")
            name = field["name"]
            if name in seen:
                raise ValueError(f"Avro record {fullname!r} has two fields named {name!r}")
            seen.add(name)
            doc = field.get("doc")
            record.fields.append(
                _Field(
                    name, self.parse(field["type"], inner_namespace), doc if isinstance(doc, str) else None
                )
            )
        return record

    def _define_name(self, schema: dict, namespace: str) -> tuple[str, str]:
        name = schema.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"invalid Avro schema: named type without a name: {json.dumps(schema)[:200]}")
        if "." in name:
            fullname = name.lstrip(".")
        else:
            own = schema.get("namespace")
            space = own if isinstance(own, str) else namespace
            fullname = f"{space}.{name}" if space else name
        if fullname in self.names:
            raise ValueError(f"Avro type {fullname!r} is defined twice")
        return fullname, fullname.rpartition(".")[0]

    def _register(self, node: Any) -> Any:
        self.names[node.fullname] = node
        return node

    def _lookup(self, name: str, namespace: str) -> _Named:
        if "." not in name and namespace and f"{namespace}.{name}" in self.names:
            return self.names[f"{namespace}.{name}"]
        if name in self.names:
            return self.names[name]
        raise ValueError(f"unknown Avro type name {name!r} (namespace {namespace!r})")


def _logical_props(schema: dict) -> dict[str, Any]:
    return {k: schema[k] for k in ("logicalType", "precision", "scale") if k in schema}


def _parse(schema: AvroSchemaJson) -> _Record:
    node = _SchemaParser().parse(schema, "")
    if not isinstance(node, _Record):
        raise ValueError(
            "the top-level Avro schema must be a record to become Arrow columns, "
            f"got {json.dumps(schema)[:200]}"
        )
    return node


# --------------------------------------------------------------------------------------------------
# Arrow types and the Python pre-conversion some types need

_Convert = Callable[[Any], Any]


@dataclass(frozen=True)
class _Typed:
    """How one Avro type becomes Arrow.

    ``raw`` is the type the decoded Python values are converted to; it differs from ``final``
    only by temporal types standing as their storage ints (``raw.view(final)`` is exact).
    ``convert`` (if set) maps a non-null decoded value to what ``raw`` expects.
    """

    final: pa.DataType
    raw: pa.DataType
    convert: _Convert | None
    nullable: bool


class _Typer:
    def __init__(self) -> None:
        self._done: dict[str, _Typed] = {}
        self._active: list[str] = []

    def field(self, f: _Field) -> tuple[pa.Field, pa.Field, _Convert | None]:
        typed = self.type(f.node)
        meta = {"doc": f.doc} if f.doc else None
        return (
            pa.field(f.name, typed.final, typed.nullable, metadata=meta),
            pa.field(f.name, typed.raw, typed.nullable),
            typed.convert,
        )

    def type(self, node: _Node) -> _Typed:
        if isinstance(node, _Named):
            name = node.fullname
            if name in self._done:
                return self._done[name]
            if name in self._active:
                chain = " -> ".join([*self._active[self._active.index(name) :], name])
                raise ValueError(f"recursive Avro type {name!r} ({chain}) cannot be represented in Arrow")
            self._active.append(name)
            try:
                typed = self._named(node)
            finally:
                self._active.pop()
            self._done[name] = typed
            return typed
        if isinstance(node, _Primitive):
            return _primitive_type(node.kind, node.props)
        if isinstance(node, _Array):
            items = self.type(node.items)
            return _Typed(
                pa.list_(pa.field("item", items.final, items.nullable)),
                pa.list_(pa.field("item", items.raw, items.nullable)),
                _list_converter(items.convert),
                False,
            )
        if isinstance(node, _Map):
            values = self.type(node.values)
            return _Typed(
                pa.map_(pa.string(), pa.field("value", values.final, values.nullable)),
                pa.map_(pa.string(), pa.field("value", values.raw, values.nullable)),
                _map_converter(values.convert),
                False,
            )
        if isinstance(node, _Union):
            return self._union(node)
        raise TypeError(f"unexpected schema node {node!r}")

    def _named(self, node: _Named) -> _Typed:
        if isinstance(node, _Enum):
            return _Typed(pa.string(), pa.string(), None, False)
        if isinstance(node, _Fixed):
            return _fixed_type(node)
        assert isinstance(node, _Record)
        finals, raws, converters = [], [], []
        for f in node.fields:
            final, raw, convert = self.field(f)
            finals.append(final)
            raws.append(raw)
            if convert is not None:
                converters.append((f.name, convert))
        return _Typed(pa.struct(finals), pa.struct(raws), _record_converter(converters), False)

    def _union(self, node: _Union) -> _Typed:
        has_null = any(_is_null(b) for b in node.branches)
        others = [b for b in node.branches if not _is_null(b)]
        if not others:
            return _Typed(pa.null(), pa.null(), None, True)
        if len(others) == 1:
            typed = self.type(others[0])
            return _Typed(typed.final, typed.raw, typed.convert, has_null or typed.nullable)
        widened = _widened(node)
        if widened is not None:
            arrow = _ARROW_PRIMITIVES[widened]
            return _Typed(arrow, arrow, None, has_null)
        finals, raws = [], []
        table: dict[str, tuple[str, bool, _Convert | None]] = {}
        for i, branch in enumerate(others):
            typed = self.type(branch)
            key = f"member{i}"
            finals.append(pa.field(key, typed.final, True))
            raws.append(pa.field(key, typed.raw, True))
            if isinstance(branch, _Named):
                table[branch.fullname] = (key, False, typed.convert)
            else:
                table[_wrapper_name(node, i)] = (key, True, typed.convert)
        return _Typed(pa.struct(finals), pa.struct(raws), _member_converter(table), has_null)


def _wrapper_name(union: _Union, index: int) -> str:
    """Full name of the record wrapped around the ``index``-th non-null branch of ``union``."""
    return f"{_WRAPPER_NAMESPACE}.u{union.uid}_{index}"


def _primitive_type(kind: str, props: dict[str, Any]) -> _Typed:
    arrow = _ARROW_PRIMITIVES[kind]
    logical = props.get("logicalType")
    if logical is None:
        return _Typed(arrow, arrow, None, kind == "null")
    temporal = _TEMPORAL.get((kind, logical))
    if temporal is not None:
        return _Typed(temporal, arrow, None, False)
    if kind == "bytes" and logical == "decimal":
        typed = _decimal_type(props, None)
        if typed is not None:
            return typed
    if kind == "string" and logical == "uuid":
        return _Typed(pa.string(), pa.string(), None, False)
    _LOGGER.debug("Avro logical type %r on %r is not mapped; using the underlying type", logical, kind)
    return _Typed(arrow, arrow, None, kind == "null")


def _fixed_type(node: _Fixed) -> _Typed:
    if node.props.get("logicalType") == "decimal":
        typed = _decimal_type(node.props, node.size)
        if typed is not None:
            return typed
    arrow = pa.binary(node.size)
    return _Typed(arrow, arrow, None, False)


def _decimal_type(props: dict[str, Any], size: int | None) -> _Typed | None:
    precision = props.get("precision")
    scale = props.get("scale", 0)
    valid = (
        isinstance(precision, int)
        and isinstance(scale, int)
        and 0 < precision <= _MAX_DECIMAL256_PRECISION
        and 0 <= scale <= precision
    )
    if not valid:
        _LOGGER.warning(
            "invalid Avro decimal (precision %r, scale %r); using the underlying type", precision, scale
        )
        return None
    if precision <= _MAX_DECIMAL128_PRECISION:
        arrow = pa.decimal128(precision, scale)
    else:
        arrow = pa.decimal256(precision, scale)
    return _Typed(arrow, arrow, _decimal_converter(scale), False)


def _decimal_converter(scale: int) -> _Convert:
    exponent = -scale

    def convert(value: bytes) -> decimal.Decimal:
        unscaled = int.from_bytes(value, "big", signed=True)
        sign = 1 if unscaled < 0 else 0
        digits = tuple(int(d) for d in str(abs(unscaled)))
        return decimal.Decimal((sign, digits, exponent))

    return convert


def _list_converter(item: _Convert | None) -> _Convert | None:
    if item is None:
        return None

    def convert(values: list) -> list:
        return [None if v is None else item(v) for v in values]

    return convert


def _map_converter(value: _Convert | None) -> _Convert | None:
    if value is None:
        return None

    def convert(values: dict) -> list:
        return [(k, None if v is None else value(v)) for k, v in values.items()]

    return convert


def _record_converter(converters: list[tuple[str, _Convert]]) -> _Convert | None:
    if not converters:
        return None

    def convert(record: dict) -> dict:
        for name, fn in converters:
            v = record[name]
            if v is not None:
                record[name] = fn(v)
        return record

    return convert


def _member_converter(table: dict[str, tuple[str, bool, _Convert | None]]) -> _Convert:
    def convert(value: tuple) -> dict:
        name, inner = value
        key, wrapped, fn = table[name]
        if wrapped:
            inner = inner["v"]
        if fn is not None and inner is not None:
            inner = fn(inner)
        return {key: inner}

    return convert


# --------------------------------------------------------------------------------------------------
# The decoder schema handed to fastavro


class _Emitter:
    """Writes nodes back as fastavro schema JSON, wire-identical to the writer schema.

    Named types are emitted under their full names and defined at their first emission;
    logical types, docs, defaults and aliases are left out.
    """

    def __init__(self) -> None:
        self._defined: set[str] = set()

    def emit(self, node: _Node) -> Any:
        if isinstance(node, _Primitive):
            return node.kind
        if isinstance(node, _Named):
            name = node.fullname
            if node.fullname in self._defined:
                return name
            self._defined.add(node.fullname)
            if isinstance(node, _Enum):
                return {"type": "enum", "name": name, "symbols": node.symbols}
            if isinstance(node, _Fixed):
                return {"type": "fixed", "name": name, "size": node.size}
            assert isinstance(node, _Record)
            return {"type": "record", "name": name, "fields": [self.field(f) for f in node.fields]}
        if isinstance(node, _Array):
            return {"type": "array", "items": self.emit(node.items)}
        if isinstance(node, _Map):
            return {"type": "map", "values": self.emit(node.values)}
        assert isinstance(node, _Union)
        if not _is_member_union(node):
            return [self.emit(b) for b in node.branches]
        branches: list[Any] = []
        index = 0
        for b in node.branches:
            if _is_null(b):
                branches.append("null")
                continue
            if isinstance(b, _Named):
                branches.append(self.emit(b))
            else:
                branches.append(
                    {
                        "type": "record",
                        "name": _wrapper_name(node, index),
                        "fields": [{"name": "v", "type": self.emit(b)}],
                    }
                )
            index += 1
        return branches

    def field(self, f: _Field) -> dict:
        return {"name": f.name, "type": self.emit(f.node)}


def _has_member_unions(node: _Node, seen: set[str] | None = None) -> bool:
    seen = set() if seen is None else seen
    if isinstance(node, _Named):
        if node.fullname in seen:
            return False
        seen.add(node.fullname)
        if isinstance(node, _Record):
            return any(_has_member_unions(f.node, seen) for f in node.fields)
        return False
    if isinstance(node, _Array):
        return _has_member_unions(node.items, seen)
    if isinstance(node, _Map):
        return _has_member_unions(node.values, seen)
    if isinstance(node, _Union):
        return _is_member_union(node) or any(_has_member_unions(b, seen) for b in node.branches)
    return False


def _is_nested(node: _Node) -> bool:
    """True if values of ``node`` may contain records, arrays or maps."""
    if isinstance(node, _Union):
        return any(_is_nested(b) for b in node.branches)
    return isinstance(node, (_Record, _Array, _Map))


def _projection_reader(record_name: str, names: Sequence[str]) -> dict:
    """A fastavro reader schema that keeps only the top-level fields ``names``.

    It is marked as already parsed and its field types are left unset: fastavro then skips the
    other fields and decodes the kept ones exactly as without a reader schema (no per-value
    schema resolution, which costs more than it saves inside nested records).
    """
    return {
        "type": "record",
        "name": record_name,
        "fields": [{"name": n, "type": None} for n in names],
        "__fastavro_parsed": True,
        "__named_schemas": {},
    }


@functools.lru_cache(maxsize=1)
def _projection_reader_works() -> bool:
    """Checks once that this fastavro skips fields as :func:`_projection_reader` expects.

    If not (another fastavro version), projections decode all fields and drop the others.
    """
    schema = {
        "type": "record",
        "name": "probe.R",
        "fields": [
            {
                "name": "a",
                "type": {
                    "type": "array",
                    "items": {
                        "type": "record",
                        "name": "probe.N",
                        "fields": [{"name": "x", "type": "string"}],
                    },
                },
            },
            {"name": "b", "type": ["null", "long"]},
            {"name": "c", "type": {"type": "map", "values": "probe.N"}},
            {
                "name": "d",
                "type": [
                    "null",
                    "probe.N",
                    {"type": "record", "name": "probe.W", "fields": [{"name": "v", "type": "int"}]},
                ],
            },
            {"name": "e", "type": "double"},
        ],
    }
    record = {"a": [{"x": "s"}], "b": 5, "c": {"k": {"x": "t"}}, "d": ("probe.N", {"x": "u"}), "e": 1.5}
    expected = {"b": 5, "c": {"k": {"x": "t"}}, "d": ("probe.N", {"x": "u"})}
    try:
        parsed = fastavro.parse_schema(schema)
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, record)
        out.write(b"\x01")
        data = io.BytesIO(out.getvalue())
        got = fastavro.schemaless_reader(
            data,
            parsed,
            _projection_reader("probe.R", ["d", "b", "c"]),
            return_named_type=True,
            return_named_type_override=True,
        )
        works = got == expected and data.read() == b"\x01"
    except Exception:  # noqa: BLE001 - any failure means "do not use it"
        works = False
    if not works:
        _LOGGER.warning(
            "fastavro %s cannot skip unprojected Avro fields; decoding all fields", fastavro.__version__
        )
    return works


# --------------------------------------------------------------------------------------------------
# Public schema functions


def avro_schema_to_arrow(schema: AvroSchemaJson, columns: Sequence[str] | None = None) -> pa.Schema:
    """Converts an Avro record schema to the Arrow schema of the batches read from it.

    Args:
        schema: the Avro schema as parsed JSON (e.g. ``AvroHeader.schema``); the top level
            must be a record.
        columns: convert only these top-level fields, in this order (None: all fields). Fields
            left out may use types Arrow cannot represent (recursive types).

    Returns:
        One Arrow field per (selected) top-level Avro field; see the module docstring for
        the type mapping.

    Raises:
        ValueError: the schema is invalid, not a record, uses a recursive type, or a requested
            column does not exist.
    """
    record = _parse(schema)
    by_name = {f.name: f for f in record.fields}
    if columns is None:
        selected = record.fields
    else:
        _check_columns(columns, list(by_name))
        selected = [by_name[c] for c in columns]
    typer = _Typer()
    return pa.schema([typer.field(f)[0] for f in selected])


def _check_columns(columns: Sequence[str], available: list[str]) -> None:
    if isinstance(columns, str):
        raise TypeError(f"columns must be a sequence of column names, not the string {columns!r}")
    unknown = [c for c in columns if c not in available]
    if unknown:
        raise ValueError(f"unknown column(s) {unknown}; available columns: {available}")
    duplicates = sorted({c for c in columns if list(columns).count(c) > 1})
    if duplicates:
        raise ValueError(f"column(s) {duplicates} requested more than once")


def project_arrow_schema(schema: pa.Schema, columns: Sequence[str] | None) -> pa.Schema:
    """Keeps only the given columns of a schema, in the given order.

    A column is a top-level name, or a dotted path into records (`a.b.c`, through lists of
    records too): then only those nested fields are kept. Avro names contain no dots, so a
    path is never ambiguous. Paths into the same column merge in the column's own field order;
    a path that is a prefix of another keeps the whole of it. Nested names match exactly, else
    case-insensitively.

    Args:
        schema: the full schema.
        columns: column names or dotted paths; None keeps the schema as it is.

    Returns:
        The projected schema (schema-level metadata is kept).

    Raises:
        ValueError: a column or nested field is unknown (the message lists the available ones),
            or a column is repeated.
    """
    if columns is None:
        return schema
    if isinstance(columns, str):
        raise TypeError(f"columns must be a sequence of column names, not the string {columns!r}")
    tops: list[str] = []
    nested: dict[str, list[tuple[str, ...]]] = {}
    for column in columns:
        top, *rest = column.split(".")
        if top not in tops:
            tops.append(top)
        nested.setdefault(top, []).append(tuple(rest))
    _check_columns(columns if all("." not in c for c in columns) else tops, schema.names)
    fields = []
    for top in tops:
        field = schema.field(top)
        fields.append(field.with_type(_prune_type(field.type, nested[top], top)))
    return pa.schema(fields, metadata=schema.metadata)


def _prune_type(t: pa.DataType, paths: list[tuple[str, ...]], where: str) -> pa.DataType:
    """`t` keeping only the nested fields on `paths` (an empty path keeps everything)."""
    if any(not p for p in paths):
        return t
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        item = t.value_field
        pruned = item.with_type(_prune_type(item.type, paths, where))
        return pa.list_(pruned) if pa.types.is_list(t) else pa.large_list(pruned)
    if not pa.types.is_struct(t):
        raise ValueError(f"{where} is {t}, not a record: cannot select {'.'.join(paths[0])} in it")
    names = [t.field(i).name for i in range(t.num_fields)]
    wanted: dict[str, list[tuple[str, ...]]] = {}
    for first, *rest in paths:
        if first not in names:
            folded = [n for n in names if n.lower() == first.lower()]
            if len(folded) != 1:
                raise ValueError(f"{where} has no field {first!r}; its fields: {names}")
            first = folded[0]
        wanted.setdefault(first, []).append(tuple(rest))
    return pa.struct(
        [
            t.field(i).with_type(_prune_type(t.field(i).type, wanted[n], f"{where}.{n}"))
            for i, n in enumerate(names)
            if n in wanted
        ]
    )


def _prune_like(raw: pa.DataType, final: pa.DataType, wanted: pa.DataType) -> pa.DataType:
    """The raw (pre-view) type matching a pruned `wanted` version of `final`.

    Raises:
        ValueError: `wanted` is not `final` with nested fields left out.
    """
    if wanted == final:
        return raw
    if (pa.types.is_list(final) and pa.types.is_list(wanted)) or (
        pa.types.is_large_list(final) and pa.types.is_large_list(wanted)
    ):
        item = raw.value_field.with_type(_prune_like(raw.value_type, final.value_type, wanted.value_type))
        return pa.list_(item) if pa.types.is_list(final) else pa.large_list(item)
    if pa.types.is_struct(final) and pa.types.is_struct(wanted):
        fields = []
        for i in range(wanted.num_fields):
            name = wanted.field(i).name
            index = final.get_field_index(name)
            if index < 0:
                raise ValueError(f"field {name!r} is not in {final}")
            fields.append(
                raw.field(index).with_type(
                    _prune_like(raw.field(index).type, final.field(index).type, wanted.field(i).type)
                )
            )
        return pa.struct(fields)
    raise ValueError(f"{wanted} is not a projection of {final}")


# --------------------------------------------------------------------------------------------------
# Decoding plans


class _Plan:
    """Everything needed to decode blocks of one writer schema into one Arrow schema."""

    def __init__(self, schema: AvroSchemaJson, arrow_schema: pa.Schema):
        record = _parse(schema)
        by_name = {f.name: f for f in record.fields}
        missing = [n for n in arrow_schema.names if n not in by_name]
        if missing:
            raise ValueError(f"column(s) {missing} are not in the file's Avro schema; it has {list(by_name)}")
        selected = [by_name[n] for n in arrow_schema.names]
        typer = _Typer()
        raw_fields = []
        self.converters: list[tuple[str, _Convert]] = []
        # Per output column: the Arrow type to view the raw column as, and to cast to.
        self.views: list[pa.DataType | None] = []
        self.casts: list[pa.DataType | None] = []
        native_ok = True  # the wanted types are the Typer's, or projections of them
        for f, wanted in zip(selected, arrow_schema):
            final, raw, convert = typer.field(f)
            if wanted.type != final.type:
                try:
                    _prune_like(raw.type, final.type, wanted.type)
                except ValueError:
                    native_ok = False
            if convert is None and wanted.type != final.type:
                try:  # a nested projection: convert only the kept fields to Arrow
                    raw = raw.with_type(_prune_like(raw.type, final.type, wanted.type))
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
        emitter = _Emitter()
        writer = {
            "type": "record",
            "name": record.fullname,
            "fields": [emitter.field(f) for f in record.fields],
        }
        # Skipping costs a little per record; it pays when a left-out field holds nested values.
        projected = set(arrow_schema.names)
        skip = any(_is_nested(f.node) for f in record.fields if f.name not in projected)
        reader = None
        if skip and _projection_reader_works():
            reader = _projection_reader(record.fullname, [f.name for f in selected])
        options: dict[str, Any] = {}
        if any(_has_member_unions(f.node) for f in selected):
            options = {"return_named_type": True, "return_named_type_override": True}
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
            from beam_tensorize.kernels import avro_native

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
                    columns[i] = columns[i].view(view)
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
def _plan(schema_json: str, arrow_schema: pa.Schema) -> _Plan:
    return _Plan(json.loads(schema_json), arrow_schema)


def _schema_key(header: AvroHeader) -> str:
    raw = header.metadata.get("avro.schema")
    if raw is not None:
        return raw.decode("utf-8")
    return json.dumps(header.schema, sort_keys=True)


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
        plan = _plan(_schema_key(header), arrow_schema)
    except ValueError as e:
        raise AvroFormatError(path, str(e)) from None
    data = _decompress(block, header.codec, path)
    return plan.decode(data, block, path, arrow_schema)


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
        record = _parse(header.schema)
    except ValueError as e:
        raise AvroFormatError(path, str(e)) from None
    tops = None
    if columns is not None:
        tops = list(dict.fromkeys(c.split(".")[0] for c in columns))
        _check_columns(tops, [fd.name for fd in record.fields])
    try:
        arrow_schema = project_arrow_schema(avro_schema_to_arrow(header.schema, tops), columns)
    except ValueError as e:
        raise AvroFormatError(path, str(e)) from None
    for block in iter_blocks(f, header, path, start, end):
        if block.count:
            yield decode_block(block, header, arrow_schema, path)


# --------------------------------------------------------------------------------------------------
# Splittable reading: byte ranges of a file -> tagged batches of about `batch_rows` rows


def split_ranges(size: int, split_bytes: int = DEFAULT_SPLIT_BYTES) -> Iterator[tuple[int, int]]:
    """Consecutive byte ranges ``[start, end)`` of at most `split_bytes` covering a file.

    Reading each range with :func:`read_avro_range` reads every block of the file once. An
    empty file still gives one (empty) range, so a reader sees it and can report it.

    Example:
        >>> list(split_ranges(10, 4))
        [(0, 4), (4, 8), (8, 10)]
    """
    if split_bytes < 1:
        raise ValueError(f"split_bytes must be positive, got {split_bytes}")
    start = 0
    while True:
        end = min(start + split_bytes, size)
        yield start, end
        if end >= size:
            return
        start = end


def resolve_column(column: str, available: Sequence[str], path: str) -> str:
    """The top-level name of `column` (a name or dotted path) as the file spells it.

    Names match exactly, else case-insensitively when that is unambiguous.

    Raises:
        ValueError: the file has no such column (the message names the file and its columns).

    Example:
        >>> resolve_column("USERID.x", ["userId", "movieId"], "a.avro")
        'userId.x'
    """
    name, dot, nested = column.partition(".")
    if name not in available:
        folded = [n for n in available if n.lower() == name.lower()]
        if len(folded) != 1:
            raise ValueError(
                f"{path}: the config reads column {name!r}, which this file does not have; "
                f"its columns are: {', '.join(available)}"
            )
        name = folded[0]
    return name + dot + nested


@functools.lru_cache(maxsize=64)
def _range_schema(schema_json: str, columns: tuple[str, ...] | None, path: str) -> pa.Schema:
    schema = avro_schema_to_arrow(json.loads(schema_json))
    if columns is not None:
        columns = tuple(resolve_column(name, schema.names, path) for name in columns)
    try:
        return project_arrow_schema(schema, columns)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None


def read_range_schema(f: BinaryIO, path: str, columns: Sequence[str] | None = None) -> pa.Schema:
    """The schema of the batches :func:`read_avro_range` gives for this file and `columns`.

    Raises:
        AvroFormatError: the file is not valid Avro.
        ValueError: a column is missing (the message names the file and its columns).

    Example:
        >>> from beam_tensorize.sample import SAMPLE_AVRO
        >>> with open(SAMPLE_AVRO, "rb") as f:
        ...     read_range_schema(f, SAMPLE_AVRO, ["USERID"]).names
        ['userId']
    """
    header = read_header(f, path)
    return _range_schema(_schema_key(header), None if columns is None else tuple(columns), path)


def read_avro_range(
    f: BinaryIO,
    path: str,
    columns: Sequence[str] | None = None,
    start: int = 0,
    end: int | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
) -> Iterator[pa.RecordBatch]:
    """Reads the blocks starting in ``[start, end)`` as batches of about `batch_rows` rows.

    Blocks are decoded one at a time and gathered until a batch holds `batch_rows` rows or
    more (a batch never spans two ranges). Each batch is tagged with `path` and the offset
    of its first block (see :mod:`beam_tensorize.kernels.provenance`), so the same file and
    ranges give the same batches and tags on every runner.

    Args:
        f: the file, seekable.
        path: the file's name, for the tags and error messages.
        columns: columns to keep (matched exactly, else case-insensitively) or dotted paths
            into records (`genreFeatures.term`); None keeps all.
        start: first byte of the range (see :func:`iter_blocks`).
        end: end of the range (exclusive); None for the end of the file.
        batch_rows: rows to gather per batch.

    Raises:
        AvroFormatError: the file is not valid Avro.
        ValueError: a column is missing (the message names the file and its columns).

    Example::

        with open("train.avro", "rb") as f:
            for batch in read_avro_range(f, "train.avro", ["userId"], 0, 1 << 20, batch_rows=4096):
                ...
    """
    header = read_header(f, path)
    schema = _range_schema(_schema_key(header), None if columns is None else tuple(columns), path)
    pending: list[pa.RecordBatch] = []
    pending_rows, first_offset = 0, None
    for block in iter_blocks(f, header, path, start, end):
        batch = decode_block(block, header, schema, path)
        if first_offset is None:
            first_offset = block.offset
        pending.append(batch)
        pending_rows += batch.num_rows
        if pending_rows >= batch_rows:
            yield _tagged(pending, path, first_offset)
            pending, pending_rows, first_offset = [], 0, None
    if pending_rows:
        yield _tagged(pending, path, first_offset)


def _tagged(pending: list[pa.RecordBatch], path: str, offset: int) -> pa.RecordBatch:
    batch = pending[0] if len(pending) == 1 else pa.concat_batches(pending)
    return with_source(batch, path, offset)
