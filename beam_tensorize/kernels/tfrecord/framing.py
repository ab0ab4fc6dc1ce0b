"""TFRecord framing and parsing without TensorFlow.

A TFRecord file is a sequence of frames, each::

    uint64 length          (little endian)
    uint32 masked_crc32c(length bytes)
    byte   data[length]
    uint32 masked_crc32c(data)

where ``masked_crc32c(x) = ((crc >> 15) | (crc << 17)) + 0xa282ead8`` (mod
2**32) over the CRC-32C (Castagnoli) of ``x``. A whole file may be compressed
as TensorFlow does it: GZIP (RFC 1952) or ZLIB (RFC 1950);
``compressed_writer`` / ``decompressed_reader`` wrap a raw file object and
``detect_compression`` tells the three apart from a file's first bytes.

Framing is native when the optional C extension ``_tfrecordencode`` is built
(``setup.py`` builds it where a C compiler is found): one pass over the Arrow
offsets and data buffers (or a list of bytes) into one preallocated output,
CRC-32C with the SSE4.2 instruction where the CPU has it, else slicing-by-8
tables. Without it, framing an Arrow binary array is vectorised: the length
checksums are computed with numpy and the frames are assembled by Arrow in one
pass; only the data checksum needs one (C) call per record. Both give the same
bytes. Setting the environment variable ``BEAM_TENSORIZE_TFRECORD_ENCODER=python``
forces the numpy / pyarrow code here and in ``example_encoder`` (read at every
call; ``native`` loads the extension).
"""

from __future__ import annotations

import contextlib
import gzip
import struct
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, BinaryIO

import google_crc32c
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_tensorize.kernels.arrow_types import binary_offsets
from beam_tensorize.kernels.tfrecord.native import NATIVE_ENV, native

__all__ = [
    "COMPRESSIONS",
    "NATIVE_ENV",
    "compressed_writer",
    "decompressed_reader",
    "detect_compression",
    "frame_records",
    "iter_tfrecords",
    "masked_crc32c",
    "write_tfrecords",
]

#: Whole-file compressions TensorFlow reads ("" / "GZIP" / "ZLIB" in `tf.data.TFRecordDataset`).
COMPRESSIONS = ("none", "gzip", "zlib")

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


def _as_binary_array(records: pa.Array | pa.ChunkedArray, large: bool = True) -> pa.Array:
    """The records as a large_binary array (with `large` False: binary, string, large_binary or
    large_string, whichever they are, else large_binary)."""
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
    if not large and not (pa.types.is_binary_view(typ) or pa.types.is_string_view(typ)):
        return records
    return records.cast(pa.large_binary())


def _frame_native(extension: Any, array: pa.Array) -> bytes:
    """Frames a binary / string array (large or not) with the C extension."""
    offsets, data = binary_offsets(array)
    return extension.frame(offsets, data, len(array), offsets.itemsize)


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
    extension = native()
    if isinstance(records, (pa.Array, pa.ChunkedArray)):
        array = _as_binary_array(records, large=extension is None)
        n = len(array)
        if n == 0:
            return b""
        if extension is not None:
            return _frame_native(extension, array)
        offsets, data = binary_offsets(array)
        start, stop = int(offsets[0]), int(offsets[-1])
        data = bytes(memoryview(data)[start:stop])
        starts = (offsets[:-1] - start).tolist()
        stops = (offsets[1:] - start).tolist()
        pieces = map(data.__getitem__, map(slice, starts, stops))
        crcs = np.fromiter(map(google_crc32c.value, pieces), np.uint32, n)
        return _assemble(array, np.diff(offsets), crcs)
    items = [r if isinstance(r, bytes) else bytes(r) for r in records]
    if not items:
        return b""
    if extension is not None:
        return extension.frame_list(items)
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


def iter_tfrecords(
    fileobj: BinaryIO,
    path: str = "<stream>",
    verify_crc: bool = True,
    on_corrupt: Callable[[int, int, str], None] | None = None,
) -> Iterator[bytes]:
    """Reads the records of a TFRecord stream.

    Args:
        fileobj: An open binary file object positioned at the first frame
            (decompress first, see ``decompressed_reader``).
        path: Name of the file, used in error messages.
        verify_crc: Whether to check both checksums of every frame.
        on_corrupt: Without it, a corrupt frame raises. With it, it is called
            as ``on_corrupt(offset, index, message)`` instead: a record whose
            data checksum fails is skipped and reading goes on; after a bad
            length or a truncated frame the rest of the stream cannot be
            framed, so reading stops there.

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

    def corrupt(what: str, detail: str, offset: int, index: int) -> None:
        message = f"{path}: {what} at byte offset {offset} (record {index}): {detail}"
        if on_corrupt is None:
            raise ValueError(message)
        on_corrupt(offset, index, message)

    reader = _Reader(fileobj)
    index = 0
    while True:
        if not reader.fill(12):
            if reader.available() != 0:
                corrupt(
                    "truncated TFRecord header", f"{reader.available()} of 12 bytes", reader.offset, index
                )
            return
        length, length_crc = reader.header()
        if verify_crc and masked_crc32c(reader.view(0, 8)) != length_crc:
            corrupt("corrupt TFRecord length", "length checksum mismatch", reader.offset, index)
            return
        frame = 12 + length + 4
        if not reader.fill(frame):
            corrupt(
                "truncated TFRecord",
                f"frame of {frame} bytes, stream ends after {reader.available()}",
                reader.offset,
                index,
            )
            return
        data = reader.view(12, 12 + length)
        good = not verify_crc or masked_crc32c(data) == reader.footer(12 + length)
        if not good:
            corrupt("corrupt TFRecord data", "data checksum mismatch", reader.offset, index)
        reader.advance(frame)
        index += 1
        if good:
            yield data


def detect_compression(head: bytes) -> str:
    """Tells an uncompressed, GZIP or ZLIB TFRecord file apart from its first bytes.

    An uncompressed file starts with a frame header whose checksum matches (or is empty);
    GZIP starts with ``1f 8b``; ZLIB with a valid RFC 1950 header (deflate method, header
    check divisible by 31). At least 12 bytes should be given when the file has them.

    Returns:
        "none", "gzip" or "zlib".

    Raises:
        ValueError: The bytes look like none of the three.

    Example:
        >>> detect_compression(frame_records([b"x"]))
        'none'
        >>> detect_compression(zlib.compress(frame_records([b"x"])))
        'zlib'
    """
    if not head or (len(head) >= 12 and masked_crc32c(head[:8]) == _HEADER.unpack_from(head)[1]):
        return "none"
    if head[:2] == b"\x1f\x8b":
        return "gzip"
    if len(head) >= 2 and head[0] & 0x0F == 8 and head[0] >> 4 <= 7 and (head[0] << 8 | head[1]) % 31 == 0:
        return "zlib"
    raise ValueError(
        f"not a TFRecord file: the first bytes {head[:12].hex()} are neither a TFRecord frame "
        "header nor a GZIP or ZLIB stream"
    )


class _ZlibWriter:
    """A write-only file object that ZLIB-compresses into another one."""

    def __init__(self, raw: BinaryIO, level: int):
        self._raw = raw
        self._compressor = zlib.compressobj(level, zlib.DEFLATED, zlib.MAX_WBITS)

    def write(self, data: bytes) -> int:
        self._raw.write(self._compressor.compress(data))
        return len(data)

    def close(self) -> None:
        self._raw.write(self._compressor.flush())


class _ZlibReader:
    """A read-only file object over a ZLIB stream in another one."""

    def __init__(self, raw: BinaryIO):
        self._raw = raw
        self._decompressor = zlib.decompressobj(zlib.MAX_WBITS)
        self._buffer = b""

    def read(self, size: int = -1) -> bytes:
        while (size < 0 or len(self._buffer) < size) and not self._decompressor.eof:
            chunk = self._raw.read(_READ_CHUNK)
            if not chunk:
                raise EOFError("ZLIB stream ends before its end marker")
            self._buffer += self._decompressor.decompress(chunk)
        if size < 0:
            size = len(self._buffer)
        out, self._buffer = self._buffer[:size], self._buffer[size:]
        return out


@contextlib.contextmanager
def compressed_writer(raw: BinaryIO, compression: str, level: int = 6) -> Iterator[BinaryIO]:
    """A file object that compresses into `raw` as TensorFlow's TFRecordWriter would.

    GZIP output carries no time stamp or file name, so the same records give the same bytes.
    `raw` is not closed.

    Example:
        >>> import io
        >>> raw = io.BytesIO()
        >>> with compressed_writer(raw, "zlib") as out:
        ...     _ = write_tfrecords(out, [b"x"])
        >>> zlib.decompress(raw.getvalue()) == frame_records([b"x"])
        True
    """
    if compression not in COMPRESSIONS:
        raise ValueError(f"compression {compression!r} is not one of {', '.join(COMPRESSIONS)}")
    if compression == "none":
        yield raw
    elif compression == "gzip":
        with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=level, mtime=0, filename="") as out:
            yield out
    else:
        out = _ZlibWriter(raw, level)
        yield out
        out.close()


def decompressed_reader(raw: BinaryIO, compression: str) -> BinaryIO:
    """A file object reading the uncompressed TFRecord stream of `raw`.

    Example:
        >>> import io
        >>> reader = decompressed_reader(io.BytesIO(zlib.compress(frame_records([b"x"]))), "zlib")
        >>> list(iter_tfrecords(reader))
        [b'x']
    """
    if compression == "none":
        return raw
    if compression == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if compression == "zlib":
        return _ZlibReader(raw)
    raise ValueError(f"compression {compression!r} is not one of {', '.join(COMPRESSIONS)}")
