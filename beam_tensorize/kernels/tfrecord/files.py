"""One TFRecord file -> record batches (and dead letters), whatever opens the file.

The reading of a file that the Beam `ReadTFRecord` and the Spark `tfrecord` data source share:
the compression is recognised from the first bytes, every frame's checksums are checked,
records are decoded in chunks of `batch_rows` with `decode_records`, and the file's `col=value`
folders (below the read's base folder) become partition columns. The caller opens the file
(Beam's file systems, a local file, ...).

Example:
    >>> import io, pyarrow as pa
    >>> from beam_tensorize.kernels.tfrecord.example_encoder import encode_examples
    >>> from beam_tensorize.kernels.tfrecord.framing import frame_records
    >>> data = frame_records(encode_examples(pa.RecordBatch.from_pydict({"x": [1, 2]})))
    >>> fields = (pa.field("day", pa.int64()),)
    >>> reading = FileReading("out", pa.schema([("x", pa.int64())]), fields, "Example")
    >>> [b.to_pydict() for b in read_file_batches(io.BytesIO(data), "out/day=7/part-0.tfrecord", reading)]
    [{'x': [1, 2], 'day': [7, 7]}]
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Iterator
from typing import BinaryIO, NamedTuple

import pyarrow as pa

from beam_tensorize.kernels.arrow_types import DEFAULT_BATCH_ROWS
from beam_tensorize.kernels.partitions import parse_partition_path, partition_column
from beam_tensorize.kernels.provenance import with_source
from beam_tensorize.kernels.tfrecord.decoding import decode_records
from beam_tensorize.kernels.tfrecord.framing import decompressed_reader, detect_compression, iter_tfrecords

__all__ = ["FileReading", "file_records", "read_file_batches", "relative_path"]


class FileReading(NamedTuple):
    """How to turn a file into batches.

    Attributes:
        base: the folder partition folders are relative to.
        record_schema: the columns of the records.
        partition_fields: the partition columns, with their types.
        record_type: "Example", "SequenceExample" or "ByteArray".
        compression: "auto", "none", "gzip" or "zlib".
        verify_crc: check both checksums of every frame.
        dead_letters: give bad records as dead letters instead of failing.
        batch_rows: records per batch (at most).
        widened: `record_schema` was inferred, so records of mixed kinds read into its widened
            fields; a given schema reads only features of its fields' own kinds.
    """

    base: str
    record_schema: pa.Schema
    partition_fields: tuple
    record_type: str = "Example"
    compression: str = "auto"
    verify_crc: bool = True
    dead_letters: bool = False
    batch_rows: int = DEFAULT_BATCH_ROWS
    widened: bool = False


def relative_path(base: str, path: str) -> str:
    """`path` relative to the folder `base` (as it is when not below it).

    Example:
        >>> relative_path("gs://b/out", "gs://b/out/day=1/part-0.tfrecord")
        'day=1/part-0.tfrecord'
    """
    path = path.replace("\\", "/")
    base = base.replace("\\", "/").rstrip("/")
    return path[len(base) + 1 :] if base and path.startswith(base + "/") else path


def file_records(
    raw: BinaryIO,
    path: str,
    compression: str = "auto",
    verify_crc: bool = True,
    on_corrupt: Callable[[int, int, str], None] | None = None,
) -> Iterator[bytes]:
    """The records of an open TFRecord file (seekable, at its start), decompressed.

    Args:
        raw: the file.
        path: its name, for error messages.
        compression: "auto" (from the first bytes), "none", "gzip" or "zlib".
        verify_crc: check both checksums of every frame.
        on_corrupt: see `iter_tfrecords`.

    Raises:
        ValueError: the file is not TFRecord (with "auto"), or a frame is corrupt and there is
            no `on_corrupt`; the message names `path`.

    Example:
        >>> import gzip, io
        >>> from beam_tensorize.kernels.tfrecord.framing import frame_records
        >>> list(file_records(io.BytesIO(gzip.compress(frame_records([b"a", b"b"]))), "x.tfrecord.gz"))
        [b'a', b'b']
    """
    head = raw.read(12)
    if compression == "auto":
        try:
            compression = detect_compression(head)
        except ValueError as error:
            raise ValueError(f"{path}: {error}") from None
    raw.seek(0)
    yield from iter_tfrecords(decompressed_reader(raw, compression), path, verify_crc, on_corrupt)


def read_file_batches(raw: BinaryIO, path: str, reading: FileReading) -> Iterator[pa.RecordBatch | dict]:
    """The record batches of one file, with its partition columns, and its dead letters.

    Args:
        raw: the file, open, seekable, at its start.
        path: its full name (the partition folders are read from it, relative to
            `reading.base`).
        reading: the schema and settings.

    Yields:
        Record batches (`record_schema` columns, then the partition columns; tagged with the
        file and the index of their first record, see `provenance`) and, with
        `reading.dead_letters`, one dict `{"source", "record", "offset", "reason"}` per
        corrupt or undecodable record (`offset`: in the uncompressed stream, for a corrupt
        frame), after the batch of the records around it.

    Raises:
        ValueError: the file is not inside the partition folders of the read, or (without
            dead letters) a record is corrupt or does not fit the schema, naming the file and
            the record.

    Example:
        >>> import io
        >>> from beam_tensorize.kernels.tfrecord.framing import frame_records
        >>> reading = FileReading("", pa.schema([("byteArray", pa.binary())]), (), "ByteArray")
        >>> [b.to_pydict() for b in read_file_batches(io.BytesIO(frame_records([b"a"])), "f", reading)]
        [{'byteArray': [b'a']}]
    """
    folders = dict(parse_partition_path(posixpath.dirname(relative_path(reading.base, path))))
    missing = [f.name for f in reading.partition_fields if f.name not in folders]
    if missing:
        raise ValueError(f"{path}: not inside partition folder(s) {missing} like the other files")
    bad: list[dict] = []
    skipped = [0]

    def on_corrupt(offset: int, index: int, message: str) -> None:
        bad.append({"source": path, "record": index, "offset": offset, "reason": message})
        skipped[0] += 1

    def on_bad(index: int, message: str) -> None:
        bad.append({"source": path, "record": index, "offset": None, "reason": message})

    def batch(chunk: list[bytes], first: int) -> Iterator[pa.RecordBatch | dict]:
        if chunk:
            decoded = decode_records(
                chunk,
                reading.record_schema,
                reading.record_type,
                where=path,
                on_bad=on_bad if reading.dead_letters else None,
                first_index=first,
                widened=reading.widened,
            )
            columns = list(decoded.columns) + [
                partition_column(f.name, folders[f.name], f.type, decoded.num_rows)
                for f in reading.partition_fields
            ]
            names = reading.record_schema.names + [f.name for f in reading.partition_fields]
            if decoded.num_rows:
                yield with_source(pa.RecordBatch.from_arrays(columns, names=names), path, first, "row")
        yield from bad
        bad.clear()

    records = file_records(
        raw, path, reading.compression, reading.verify_crc, on_corrupt if reading.dead_letters else None
    )
    chunk: list[bytes] = []
    start = read = 0
    for record in records:
        index = read + skipped[0]  # the record's position in the file
        if chunk and index != start + len(chunk):  # corrupt records were skipped
            yield from batch(chunk, start)
            chunk = []
        if not chunk:
            start = index
        chunk.append(record)
        read += 1
        if len(chunk) >= reading.batch_rows:
            yield from batch(chunk, start)
            chunk = []
    yield from batch(chunk, start)
