"""`ReadTFRecord`: TFRecord files (plain or Hive-partitioned folders) -> Arrow RecordBatches."""

from __future__ import annotations

import itertools
import logging
import math
import os
import posixpath
import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple

import apache_beam as beam
import pyarrow as pa
from apache_beam.io import fileio
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from beam_tensorize import metrics
from beam_tensorize.io.files import list_files
from beam_tensorize.kernels.partitions import infer_partition_column, parse_partition_path
from beam_tensorize.kernels.tfrecord import COMPRESSIONS
from beam_tensorize.kernels.tfrecord_files import FileReading, file_records, read_file_batches, relative_path
from beam_tensorize.kernels.tfrecord_read import RECORD_TYPES, SchemaInference

__all__ = ["ReadTFRecord", "ReadTFRecordOutputs", "TFRecordFiles", "infer_tfrecord_schema"]

_LOGGER = logging.getLogger(__name__)
_GLOB = re.compile(r"[*?\[]")
#: Output tag of corrupt or undecodable records.
DEAD_LETTERS = "dead_letters"
_BATCHES = "batches"


class ReadTFRecordOutputs(NamedTuple):
    """What `ReadTFRecord(dead_letters=True)` returns.

    Attributes:
        batches: the decoded record batches.
        dead_letters: one dict per bad record: `source` (file), `record` (its position),
            `offset` (byte offset in the uncompressed stream, for a corrupt frame), `reason`.
    """

    batches: beam.PCollection
    dead_letters: beam.PCollection


class TFRecordFiles(NamedTuple):
    """The files a path names and the folder partition paths are relative to.

    Names starting with `_` or `.` (`_SUCCESS`, `_temporary/`, checksum files) are skipped,
    as Spark and Hadoop do.
    """

    base: str
    pattern: str
    paths: list[str]

    @classmethod
    def find(cls, path: str) -> TFRecordFiles:
        """Lists a file, a glob or a folder (recursively)."""
        path = path.rstrip("/") if len(path) > 1 else path
        if "://" not in path:
            path = os.path.abspath(path)  # the file system lists local files by absolute path
        if _GLOB.search(path):
            base = path[: _GLOB.search(path).start()].rsplit("/", 1)[0]
            pattern = path
        else:
            inside = list_files(posixpath.join(path, "**"))
            if inside:
                base, pattern = path, posixpath.join(path, "**")
            else:
                base, pattern = posixpath.dirname(path), path
        paths = [p for p in list_files(pattern) if _visible(base, p)]
        return cls(base, pattern, paths)

    def relative(self, path: str) -> str:
        return relative_path(self.base, path)


def _visible(base: str, path: str) -> bool:
    return not any(part.startswith(("_", ".")) for part in relative_path(base, path).split("/"))


def _partition_values(files: TFRecordFiles) -> dict[str, list[str | None]]:
    """Partition column -> its value in each file; every file must have the same columns."""
    layouts = {}
    for path in files.paths:
        pairs = parse_partition_path(posixpath.dirname(files.relative(path)))
        layouts[path] = pairs
    names = {tuple(name for name, _ in pairs) for pairs in layouts.values()}
    if len(names) > 1:
        shown = "; ".join(f"{p}: {[n for n, _ in pairs] or 'none'}" for p, pairs in list(layouts.items())[:4])
        raise ValueError(f"files under {files.base} have different partition folders ({shown})")
    if not layouts:
        return {}
    columns = next(iter(names))
    return {name: [dict(pairs)[name] for pairs in layouts.values()] for name in columns}


def _open_records(path: str, compression: str, verify_crc: bool, on_corrupt=None) -> Iterator[bytes]:
    with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as raw:
        yield from file_records(raw, path, compression, verify_crc, on_corrupt)


def infer_tfrecord_schema(
    files: Iterable[str],
    record_type: str = "Example",
    sample_records: int | None = 1000,
    compression: str = "auto",
    verify_crc: bool = True,
) -> SchemaInference:
    """Reads a sample of records and infers their schema (see `SchemaInference.schema()`).

    The sample takes up to `ceil(sample_records / number of files)` records from each file, in
    file order, until `sample_records` are read (so mixed files all contribute); None reads
    every record.

    Example:
        >>> import apache_beam as beam, pyarrow as pa
        >>> from beam_tensorize.io import WriteTFRecord
        >>> with beam.Pipeline() as p:
        ...     _ = (p | beam.Create([pa.RecordBatch.from_pydict({"a": [1], "b": [["x", "y"]]})])
        ...            | WriteTFRecord("sampled", save_mode="overwrite"))
        >>> infer_tfrecord_schema(["sampled/part-00000-of-00001.tfrecord"]).schema()
        a: int64
        b: list<item: string>
          child 0, item: string
    """
    files = list(files)
    inference = SchemaInference(record_type)
    per_file = None if sample_records is None else max(1, math.ceil(sample_records / max(1, len(files))))
    for path in files:
        if sample_records is not None and inference.records >= sample_records:
            break
        records = _open_records(path, compression, verify_crc)
        if per_file is not None:
            records = itertools.islice(records, per_file)
        chunk = []
        for record in records:
            chunk.append(record)
            if len(chunk) >= 4096:
                inference.observe(chunk, path)
                chunk = []
        inference.observe(chunk, path)
    return inference


class ReadTFRecord(beam.PTransform):
    """Read TFRecord files as `pyarrow.RecordBatch`es.

    `path` is a file, a glob or a folder; a folder is read recursively, and `col=value` folder
    names (Hive layout, e.g. written by `WriteTFRecord(partition_by=...)`) become columns,
    typed by inference over all folder names (int64, else float64, else string; null for
    `__HIVE_DEFAULT_PARTITION__`) unless `schema` has a field of that name. Files are spread
    over workers (each file is read by one worker: TFRecord files cannot be split). GZIP and
    ZLIB files are recognised from their first bytes.

    Without `schema`, one is inferred when the transform is built from a sample of
    `infer_sample_records` records (None: all of them) with the rules of
    `beam_tensorize.kernels.tfrecord_read`; the features seen are logged and kept in
    `.inference` (`.inference.report()`); the final schema is `.schema`, the files found when
    the transform was built `.files`.

    Every record's checksums are verified (`verify_crc`). A corrupt record, or one that does
    not fit the schema, fails the job with its file and position, or, with
    `dead_letters=True`, is counted (`beam_tensorize/bad_records`) and sent to a dead-letter
    output; a corrupt length header ends the reading of that file (the rest cannot be framed).

    Args:
        path: file, glob or folder (local, gs://, s3://, ...).
        schema: the record columns wanted (plus, optionally, partition column types).
        record_type: "Example", "SequenceExample" or "ByteArray" (one `byteArray` column).
        compression: "auto", "none", "gzip" or "zlib".
        verify_crc: check the checksums of every frame.
        dead_letters: route bad records to a second output instead of failing.
        batch_rows: records per output batch (at most).
        infer_sample_records: records read to infer the schema (None: every record).

    Returns (from `expand`): the batches, or `ReadTFRecordOutputs(batches, dead_letters)`.

    Example:
        >>> import apache_beam as beam, pyarrow as pa
        >>> from beam_tensorize.io import WriteTFRecord
        >>> with beam.Pipeline() as p:
        ...     batch = pa.RecordBatch.from_pydict({"day": [1, 2], "x": [0.5, 1.5]})
        ...     _ = p | beam.Create([batch]) | WriteTFRecord("days", partition_by=["day"], save_mode="overwrite")
        >>> read = ReadTFRecord("days")
        >>> read.schema
        x: float
        day: int64
        >>> with beam.Pipeline() as p:
        ...     rows = p | read | beam.FlatMap(lambda b: b.to_pylist()) | beam.combiners.ToList()
        ...     _ = rows | beam.Map(lambda r: print(sorted(r, key=lambda x: x["day"])))
        [{'x': 0.5, 'day': 1}, {'x': 1.5, 'day': 2}]
    """

    def __init__(
        self,
        path: str,
        schema: pa.Schema | None = None,
        record_type: str = "Example",
        compression: str = "auto",
        verify_crc: bool = True,
        dead_letters: bool = False,
        batch_rows: int = 8192,
        infer_sample_records: int | None = 1000,
    ):
        super().__init__()
        if record_type not in RECORD_TYPES:
            raise ValueError(
                f"ReadTFRecord: record_type {record_type!r} is not one of {', '.join(RECORD_TYPES)}"
            )
        if compression != "auto" and compression not in COMPRESSIONS:
            raise ValueError(
                f"ReadTFRecord: compression {compression!r} is not one of auto, {', '.join(COMPRESSIONS)}"
            )
        if not isinstance(batch_rows, int) or batch_rows < 1:
            raise ValueError(f"ReadTFRecord: batch_rows must be a positive integer, got {batch_rows!r}")
        files = TFRecordFiles.find(path)
        if not files.paths:
            raise FileNotFoundError(f"ReadTFRecord: no TFRecord files at {path}")
        given = {} if schema is None else {f.name: f for f in schema}
        partitions = _partition_values(files)
        partition_fields = [
            given.get(name) or pa.field(name, infer_partition_column(values).type)
            for name, values in partitions.items()
        ]
        self.inference = None
        if schema is None:
            self.inference = infer_tfrecord_schema(
                files.paths, record_type, infer_sample_records, compression, verify_crc
            )
            record_schema = self.inference.schema()
            _LOGGER.info("ReadTFRecord(%s): inferred schema from %s", path, self.inference.report())
        else:
            record_schema = pa.schema([f for f in schema if f.name not in partitions])
        clash = [f.name for f in partition_fields if f.name in record_schema.names]
        if clash:
            raise ValueError(
                f"ReadTFRecord: {clash} are both record features and partition folders under {path}"
            )
        self.schema = pa.schema(list(record_schema) + partition_fields)
        self.files = files
        self._reading = FileReading(
            files.base,
            record_schema,
            tuple(partition_fields),
            record_type,
            compression,
            verify_crc,
            dead_letters,
            batch_rows,
        )

    def expand(self, pipeline):
        files = self.files
        read = (
            pipeline
            | "Pattern" >> beam.Create([files.pattern])
            | "MatchFiles" >> fileio.MatchAll()
            | "Paths" >> beam.Map(lambda metadata: metadata.path)
            | "SkipHidden" >> beam.Filter(lambda p, base: _visible(base, p), files.base)
            | "SpreadFiles" >> beam.Reshuffle()
            | "ReadFiles" >> beam.ParDo(_ReadFileFn(self._reading)).with_outputs(DEAD_LETTERS, main=_BATCHES)
        )
        if self._reading.dead_letters:
            return ReadTFRecordOutputs(read[_BATCHES], read[DEAD_LETTERS])
        return read[_BATCHES]


class _ReadFileFn(beam.DoFn):
    def __init__(self, reading: FileReading):
        self._reading = reading
        self._bad = Metrics.counter(metrics.NAMESPACE, metrics.BAD_RECORDS)

    def process(self, path: str):
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as raw:
            for item in read_file_batches(raw, path, self._reading):
                if isinstance(item, dict):
                    self._bad.inc()
                    yield beam.pvalue.TaggedOutput(DEAD_LETTERS, item)
                else:
                    yield item
