"""Avro object container files: the header, the blocks and their codecs, found without
decoding any record (see the package docstring for the layout)."""

from __future__ import annotations

import bz2
import io
import json
import logging
import lzma
from collections.abc import Iterator
from dataclasses import dataclass
from typing import BinaryIO

from beam_tensorize.config.errors import TensorizeError

try:  # Intel's ISA-L inflates deflate blocks ~1.7x faster than zlib, with the same output; its
    # CRC-32 (snappy blocks' checksum) runs ~3x faster than zlib's
    from isal.isal_zlib import crc32 as _crc32
    from isal.isal_zlib import decompress as _inflate
except ImportError:  # pragma: no cover - isal is a dependency; zlib is the fallback
    from zlib import crc32 as _crc32
    from zlib import decompress as _inflate
try:  # libdeflate inflates a whole block ~1.2x faster than ISA-L, into a buffer of a known size
    from deflate import DeflateError as _LibdeflateError
    from deflate import deflate_decompress as _libdeflate
except ImportError:  # pragma: no cover - deflate is a dependency; ISA-L / zlib are the fallback
    _libdeflate = None

#: Deflate's largest ratio of output to input (258-byte matches coded in 2 bits).
_MAX_DEFLATE_RATIO = 1032
#: The output buffer libdeflate gets: `_ratio` times the block's size (grown to the largest
#: ratio seen; a buffer larger than needed costs nothing: its pages are never touched), at
#: least `_MIN_INFLATE_BUFFER` bytes.
_ratio = 16.0
_MIN_INFLATE_BUFFER = 1 << 16

__all__ = [
    "AvroFormatError",
    "AvroHeader",
    "CODECS",
    "MAGIC",
    "RawBlock",
    "SYNC_SIZE",
    "decompress",
    "iter_blocks",
    "read_header",
]


_LOGGER = logging.getLogger(__name__)

#: The magic bytes an Avro container file starts with.
MAGIC = b"Obj\x01"
SYNC_SIZE = 16
CODECS = ("null", "deflate", "snappy", "zstandard", "bzip2", "xz")

_CHUNK = 1 << 20
_HEADER_CHUNK = 1 << 16
_MAX_VARINT_BYTES = 10


class AvroFormatError(TensorizeError, ValueError):
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


def decompress(block: RawBlock, codec: str, path: str) -> bytes:
    data = block.data
    try:
        if codec == "null":
            return data
        if codec == "deflate":
            return _inflate_raw(data)
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


def _inflate_raw(data: bytes) -> bytes:
    """Raw deflate data inflated: by libdeflate into a buffer the size the ratios seen so far
    make likely; when the output is larger (or the data corrupt), by ISA-L / zlib, which grow
    their buffer (and name what is wrong with a corrupt block)."""
    global _ratio
    if _libdeflate is not None:
        try:
            return _libdeflate(data, max(int(len(data) * _ratio), _MIN_INFLATE_BUFFER))
        except _LibdeflateError:
            pass
    out = _inflate(data, -15)
    if data:
        _ratio = min(max(_ratio, 1.25 * len(out) / len(data)), _MAX_DEFLATE_RATIO)
    return out


class _ChecksumError(ValueError):
    pass


def _snappy_decompress(data: bytes) -> bytes:
    import cramjam

    if len(data) < 4:
        raise ValueError("snappy block shorter than its 4-byte checksum")
    out = bytes(cramjam.snappy.decompress_raw(data[:-4]))
    expected = int.from_bytes(data[-4:], "big")
    if _crc32(out) != expected:
        raise _ChecksumError("CRC32 of the uncompressed data does not match the block's checksum")
    return out


def _zstd_decompress(data: bytes) -> bytes:
    import zstandard

    # Streaming decompression: frames written by stream encoders carry no content size.
    with zstandard.ZstdDecompressor().stream_reader(data, read_across_frames=True) as reader:
        return reader.read()
