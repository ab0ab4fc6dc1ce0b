"""TFRecord framing and parsing without TensorFlow.

A TFRecord file is a sequence of frames, each::

    uint64 length          (little endian)
    uint32 masked_crc32c(length bytes)
    byte   data[length]
    uint32 masked_crc32c(data)

where ``masked_crc32c(x) = ((crc >> 15) | (crc << 17)) + 0xa282ead8`` (mod
2**32) over the CRC-32C (Castagnoli) of ``x``. Compression is not handled
here: pass a ``gzip.GzipFile`` (or similar) as the file object.

Framing an Arrow binary array is vectorised: the length checksums are
computed with numpy and the frames are assembled by Arrow in one pass; only
the data checksum needs one (C) call per record.
"""

from __future__ import annotations

import logging
import struct
from collections.abc import Iterable, Iterator, Sequence
from typing import BinaryIO

import google_crc32c
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["frame_records", "iter_tfrecords", "masked_crc32c", "write_tfrecords"]

_LOGGER = logging.getLogger(__name__)

_MASK_DELTA = 0xA282EAD8
_HEADER = struct.Struct("<QI")
_FOOTER = struct.Struct("<I")
_READ_CHUNK = 1 << 20
_WRITE_BATCH = 8192  # records per framing call for iterables of bytes
_WRITE_ARRAY_SLICE = 1 << 16  # records per framing call for Arrow arrays


def _crc32c_table() -> np.ndarray:
    """The byte-wise lookup table of reflected CRC-32C (poly 0x82F63B78)."""
    crc = np.arange(256, dtype=np.uint32)
    for _ in range(8):
        crc = np.where(crc & 1, (crc >> np.uint32(1)) ^ np.uint32(0x82F63B78), crc >> np.uint32(1))
    return crc.astype(np.uint32)


_CRC_TABLE = _crc32c_table()


def _mask(crc: int) -> int:
    return (((crc >> 15) | (crc << 17)) + _MASK_DELTA) & 0xFFFFFFFF


def _mask_array(crc: np.ndarray) -> np.ndarray:
    crc = crc.astype(np.uint32, copy=False)
    return ((crc >> np.uint32(15)) | (crc << np.uint32(17))) + np.uint32(_MASK_DELTA)


def masked_crc32c(data: bytes) -> int:
    """Returns the masked CRC-32C that TFRecord frames store.

    Args:
        data: The bytes to checksum (``bytearray`` and ``memoryview`` are
            accepted too).

    Returns:
        ``((crc >> 15) | (crc << 17)) + 0xa282ead8`` modulo 2**32, where
        ``crc`` is the CRC-32C of ``data``.

    Example:
        >>> hex(masked_crc32c(b""))
        '0xa282ead8'
    """
    if not isinstance(data, bytes):
        data = bytes(data)
    return _mask(google_crc32c.value(data))


def _masked_crc_of_lengths(lengths: np.ndarray) -> np.ndarray:
    """Vectorised masked CRC-32C of each length as 8 little-endian bytes."""
    raw = lengths.astype("<u8").view(np.uint8).reshape(-1, 8)
    crc = np.full(raw.shape[0], 0xFFFFFFFF, np.uint32)
    for j in range(8):
        crc = _CRC_TABLE[(crc ^ raw[:, j]) & np.uint32(0xFF)] ^ (crc >> np.uint32(8))
    return _mask_array(crc ^ np.uint32(0xFFFFFFFF))


def _as_binary_array(records: pa.Array | pa.ChunkedArray) -> pa.Array:
    if isinstance(records, pa.ChunkedArray):
        records = records.combine_chunks()
    typ = records.type
    binary_like = (
        pa.types.is_binary(typ)
        or pa.types.is_large_binary(typ)
        or pa.types.is_string(typ)
        or pa.types.is_large_string(typ)
        or pa.types.is_binary_view(typ)
        or pa.types.is_string_view(typ)
    )
    if not binary_like:
        raise TypeError(f"TFRecord records must be binary, got an Arrow array of {typ}")
    if records.null_count:
        first = int(np.flatnonzero(records.is_null().to_numpy(zero_copy_only=False))[0])
        raise ValueError(f"record {first} is null; TFRecord records cannot be null")
    return records.cast(pa.large_binary())


def _assemble(records: pa.Array, lengths: np.ndarray, data_crcs: np.ndarray) -> bytes:
    """Builds the frames from a large_binary array, its lengths and data crcs."""
    n = len(records)
    header = np.empty((n, 12), np.uint8)
    header[:, :8] = lengths.astype("<u8").view(np.uint8).reshape(n, 8)
    header[:, 8:] = _masked_crc_of_lengths(lengths).astype("<u4").view(np.uint8).reshape(n, 4)
    footer = _mask_array(data_crcs).astype("<u4").view(np.uint8)

    def fixed(matrix: np.ndarray, width: int) -> pa.Array:
        offsets = np.arange(0, (n + 1) * width, width, dtype=np.int64)
        return pa.Array.from_buffers(
            pa.large_binary(), n, [None, pa.py_buffer(offsets), pa.py_buffer(matrix)]
        )

    framed = pc.binary_join_element_wise(
        fixed(header, 12), records, fixed(footer, 4), pa.scalar(b"", pa.large_binary())
    )
    total = int(lengths.sum()) + 16 * n
    return framed.buffers()[2][:total].to_pybytes()


def frame_records(records: pa.Array | pa.ChunkedArray | Sequence[bytes]) -> bytes:
    """Frames records as TFRecords.

    Args:
        records: The records, as an Arrow binary / string array (large,
            view and chunked variants too) or a sequence of bytes-like
            objects.

    Returns:
        The concatenated frames, ready to be written to a file.

    Raises:
        TypeError: ``records`` is an Arrow array of a non-binary type.
        ValueError: An Arrow record is null.

    Example:
        >>> frame_records([b"abc"])[:8]
        b'\\x03\\x00\\x00\\x00\\x00\\x00\\x00\\x00'
    """
    if isinstance(records, (pa.Array, pa.ChunkedArray)):
        array = _as_binary_array(records)
        n = len(array)
        if n == 0:
            return b""
        offsets = np.frombuffer(array.buffers()[1], np.int64)[array.offset : array.offset + n + 1]
        start, stop = int(offsets[0]), int(offsets[-1])
        data = array.buffers()[2]
        data = b"" if data is None else data[start:stop].to_pybytes()
        starts = (offsets[:-1] - start).tolist()
        stops = (offsets[1:] - start).tolist()
        pieces = map(data.__getitem__, map(slice, starts, stops))
        crcs = np.fromiter(map(google_crc32c.value, pieces), np.uint32, n)
        return _assemble(array, np.diff(offsets), crcs)
    items = [r if isinstance(r, bytes) else bytes(r) for r in records]
    if not items:
        return b""
    crcs = np.fromiter(map(google_crc32c.value, items), np.uint32, len(items))
    lengths = np.fromiter(map(len, items), np.int64, len(items))
    return _assemble(pa.array(items, pa.large_binary()), lengths, crcs)


def write_tfrecords(fileobj: BinaryIO, records: pa.Array | pa.ChunkedArray | Iterable[bytes]) -> int:
    """Writes records to a binary file object as TFRecord frames.

    Args:
        fileobj: An open binary file (e.g. ``open(path, "wb")`` or a
            ``gzip.GzipFile``); it is not closed.
        records: An Arrow binary array (or chunked array), or any iterable of
            bytes. Records are framed and written in slices, so neither a
            generator nor the framed copy of a large array is held in memory
            whole.

    Returns:
        The number of bytes written (before any compression by ``fileobj``).

    Raises:
        TypeError: ``records`` is an Arrow array of a non-binary type.
        ValueError: An Arrow record is null.
    """
    written = 0
    batches: Iterable[pa.Array | list[bytes]]
    if isinstance(records, (pa.Array, pa.ChunkedArray)):
        arrays = records.chunks if isinstance(records, pa.ChunkedArray) else [records]
        batches = (
            array.slice(start, _WRITE_ARRAY_SLICE)
            for array in arrays
            for start in range(0, len(array), _WRITE_ARRAY_SLICE)
        )
    else:
        batches = _batched(records, _WRITE_BATCH)
    for batch in batches:
        framed = frame_records(batch)
        if framed:
            fileobj.write(framed)
            written += len(framed)
    return written


def _batched(items: Iterable[bytes], size: int) -> Iterator[list[bytes]]:
    batch: list[bytes] = []
    for item in items:
        batch.append(item)
        if len(batch) >= size:
            yield batch
            batch = []
    if batch:
        yield batch


class _Reader:
    """Buffered reads from a file object, tracking the absolute offset."""

    def __init__(self, fileobj: BinaryIO):
        self._fileobj = fileobj
        self._buffer = b""
        self._pos = 0  # position of the next unread byte in _buffer
        self.offset = 0  # absolute stream offset of _buffer[_pos]

    def available(self) -> int:
        return len(self._buffer) - self._pos

    def fill(self, need: int) -> bool:
        """Reads until ``need`` bytes are buffered; False if the stream ends first."""
        missing = need - self.available()
        if missing <= 0:
            return True
        chunks = [self._buffer[self._pos :]]
        while missing > 0:
            chunk = self._fileobj.read(max(missing, _READ_CHUNK))
            if not chunk:
                break
            chunks.append(chunk)
            missing -= len(chunk)
        self._buffer = b"".join(chunks)
        self._pos = 0
        return missing <= 0

    def view(self, start: int, stop: int) -> bytes:
        return self._buffer[self._pos + start : self._pos + stop]

    def header(self) -> tuple[int, int]:
        return _HEADER.unpack_from(self._buffer, self._pos)

    def footer(self, at: int) -> int:
        return _FOOTER.unpack_from(self._buffer, self._pos + at)[0]

    def advance(self, size: int) -> None:
        self._pos += size
        self.offset += size


def iter_tfrecords(fileobj: BinaryIO, path: str = "<stream>", verify_crc: bool = True) -> Iterator[bytes]:
    """Reads the records of a TFRecord stream.

    Args:
        fileobj: An open binary file object positioned at the first frame
            (decompress first, e.g. with ``gzip.open``).
        path: Name of the file, used in error messages.
        verify_crc: Whether to check both checksums of every frame.

    Yields:
        The data of each record, in order.

    Raises:
        ValueError: A length or data checksum does not match, or the stream
            ends inside a frame. The message names ``path`` and the byte
            offset (in the uncompressed stream) of the bad frame.

    Example:
        >>> import io
        >>> list(iter_tfrecords(io.BytesIO(frame_records([b"a", b"bc"]))))
        [b'a', b'bc']
    """
    reader = _Reader(fileobj)
    index = 0
    while True:
        if not reader.fill(12):
            if reader.available() == 0:
                return
            raise ValueError(
                f"{path}: truncated TFRecord header at byte offset {reader.offset} "
                f"(record {index}): {reader.available()} of 12 bytes"
            )
        length, length_crc = reader.header()
        if verify_crc and masked_crc32c(reader.view(0, 8)) != length_crc:
            raise ValueError(
                f"{path}: corrupt TFRecord length at byte offset {reader.offset} "
                f"(record {index}): length checksum mismatch"
            )
        frame = 12 + length + 4
        if not reader.fill(frame):
            raise ValueError(
                f"{path}: truncated TFRecord at byte offset {reader.offset} (record {index}): "
                f"frame of {frame} bytes, stream ends after {reader.available()}"
            )
        data = reader.view(12, 12 + length)
        if verify_crc and masked_crc32c(data) != reader.footer(12 + length):
            raise ValueError(
                f"{path}: corrupt TFRecord data at byte offset {reader.offset} "
                f"(record {index}): data checksum mismatch"
            )
        reader.advance(frame)
        index += 1
        yield data
