"""TFRecord files of `tf.train.Example`s (or SequenceExamples) as an input format, so an output
of ours, or anyone's Examples, can be tensorized again.

A file is one split (TFRecord files cannot be cut). Without a schema, each file's schema is
inferred from all of its records with the rules of `beam_tensorize.kernels.tfrecord.decoding`
(the file is read twice); give `schema` to read files whose features vary, or to read once.
GZIP and ZLIB files are recognised from their first bytes. Batches are tagged with the index
of their first record in the file (unit "row"). `TFRecordFormat.from_reading` reads with a
planned `FileReading` instead (a schema for all files, Hive partition folders below a base
folder, dead letters instead of failing): what `beam_tensorize.io.ReadTFRecord` plans.

Example:
    >>> import io
    >>> from beam_tensorize.kernels.tfrecord.example_encoder import encode_examples
    >>> from beam_tensorize.kernels.tfrecord.framing import frame_records
    >>> data = io.BytesIO(frame_records(encode_examples(pa.RecordBatch.from_pydict({"x": [1, 2], "y": [[0.5, 1.0], []]}))))
    >>> fmt = TFRecordFormat()
    >>> fmt.matches(data.getvalue()[:16]), fmt.read_schema(data, "f.tfrecord", ["x"])
    (True, x: int64)
    >>> [b.to_pydict() for b in fmt.read_split(data, Split("f.tfrecord", 0, len(data.getvalue())))]
    [{'x': [1, 2], 'y': [[0.5, 1.0], []]}]
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import BinaryIO

import pyarrow as pa

from beam_tensorize.kernels.formats.base import (
    DEFAULT_BATCH_ROWS,
    InputFormat,
    Split,
    project_schema,
    register_format,
)
from beam_tensorize.kernels.tfrecord.decoding import SchemaInference
from beam_tensorize.kernels.tfrecord.files import FileReading, file_records, read_file_batches
from beam_tensorize.kernels.tfrecord.framing import detect_compression

__all__ = ["TFRecordFormat"]

_INFER_CHUNK = 4096


@register_format
class TFRecordFormat(InputFormat):
    """TFRecord files (uncompressed, GZIP or ZLIB) of Examples, SequenceExamples or raw bytes.

    Args:
        schema: the record columns (None: inferred per file from all its records).
        record_type: "Example", "SequenceExample" or "ByteArray".
        compression: "auto", "none", "gzip" or "zlib".
        verify_crc: check both checksums of every frame.
    """

    name, kind = "tfrecord", "TFRecord"
    weak_signature = True  # a frame header's checksum, or a GZIP / ZLIB stream header

    def __init__(
        self,
        schema: pa.Schema | None = None,
        record_type: str = "Example",
        compression: str = "auto",
        verify_crc: bool = True,
    ):
        SchemaInference(record_type)  # checks the record type
        self.schema = schema
        self.record_type = record_type
        self.compression = compression
        self.verify_crc = verify_crc
        self.reading: FileReading | None = None

    @classmethod
    def from_reading(cls, reading: FileReading) -> TFRecordFormat:
        """The format reading every file as `reading` says (its `batch_rows` is replaced by the
        reader's): record schema, partition columns, and, with `reading.dead_letters`, bad
        records yielded as dead-letter dicts instead of failing."""
        fmt = cls(reading.record_schema, reading.record_type, reading.compression, reading.verify_crc)
        fmt.reading = reading
        return fmt

    @property
    def dead_letters(self) -> bool:
        return self.reading is not None and self.reading.dead_letters

    def matches(self, head: bytes) -> bool:
        try:
            detect_compression(head)
        except ValueError:
            return False
        return True

    def read_schema(self, f: BinaryIO, path: str, columns: Sequence[str] | None = None) -> pa.Schema:
        if self.schema is not None:
            return project_schema(self.schema, columns, path)
        inference = SchemaInference(self.record_type)
        chunk: list[bytes] = []
        for record in file_records(f, path, self.compression, self.verify_crc):
            chunk.append(record)
            if len(chunk) >= _INFER_CHUNK:
                inference.observe(chunk, path)
                chunk = []
        inference.observe(chunk, path)
        try:
            inferred = inference.schema()
        except ValueError as err:
            raise ValueError(f"{path}: {err}") from None
        return project_schema(inferred, columns, path)

    def read_split(
        self,
        f: BinaryIO,
        split: Split,
        columns: Sequence[str] | None = None,
        batch_rows: int = DEFAULT_BATCH_ROWS,
    ) -> Iterator[pa.RecordBatch]:
        if self.reading is not None:
            reading = self.reading._replace(batch_rows=batch_rows)
        else:
            schema = self.read_schema(f, split.path, columns)
            f.seek(0)
            reading = FileReading(
                "", schema, (), self.record_type, self.compression, self.verify_crc, False, batch_rows
            )
        yield from read_file_batches(f, split.path, reading)
