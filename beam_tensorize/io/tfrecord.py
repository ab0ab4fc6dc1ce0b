"""TFRecord: `WriteTFRecord` (record batches -> sharded, optionally Hive-partitioned TFRecord
files, committed atomically) and `ReadTFRecord` (TFRecord files, plain or Hive-partitioned
folders -> Arrow record batches)."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import NamedTuple

import apache_beam as beam
import pyarrow as pa
from apache_beam.io import fileio
from apache_beam.transforms.display import DisplayDataItem

from beam_tensorize.io.sharded import WriteShardedFiles
from beam_tensorize.io.table import BATCHES, read_splits
from beam_tensorize.job.commit import SAVE_MODES, SUCCESS_FILE, shard_file_name
from beam_tensorize.job.tfrecord_read import TFRecordFiles, TFRecordRead, infer_tfrecord_schema, visible
from beam_tensorize.kernels.arrow_types import DEFAULT_BATCH_ROWS
from beam_tensorize.kernels.formats import TFRecordFormat
from beam_tensorize.kernels.output.dead_letters import DEAD_LETTERS
from beam_tensorize.kernels.output.tfrecord import COMPRESSIONS
from beam_tensorize.kernels.tfrecord.decoding import RECORD_TYPES

__all__ = [
    "COMPRESSIONS",
    "RECORD_TYPES",
    "SAVE_MODES",
    "SUCCESS_FILE",
    "ReadTFRecord",
    "ReadTFRecordOutputs",
    "TFRecordFiles",
    "WriteTFRecord",
    "infer_tfrecord_schema",
    "shard_file_name",
]

_LOGGER = logging.getLogger(__name__)


class WriteTFRecord(WriteShardedFiles):
    """Write record batches as TFRecord files, committed atomically: by default one file per
    input split (and per `max_records_per_file`), written where the batches are; with
    `num_shards`, exactly that many per folder.

    Each row becomes one record: a `tf.train.Example` of its columns (`record_type="Example"`),
    a `tf.train.SequenceExample` (list-of-list columns become feature lists, the others context
    features), or the bytes of one binary column as they are (`"ByteArray"`, e.g. the
    `serialized` column of `EncodeExamples`).

    With `partition_by`, rows go to Hive-style folders `<directory>/<col>=<value>/...` (several
    columns nest in order; values escaped as Hive does, null in `__HIVE_DEFAULT_PARTITION__`,
    see `beam_tensorize.kernels.partitions`) and the partition columns are left out of the
    records.

    Without `num_shards`, the step that receives the batches writes them, with no shuffle: the
    batches of one input split (as tagged by `ReadTable`; an untagged batch is a split of its
    own) go, in order, into files of their own, one per partition folder, rolled over every
    `max_records_per_file` records; a worker holds one batch and one open file per folder, so
    memory does not grow with the input. The commit names each folder's files
    `part-<i>-of-<n>` in the order of their splits (file, then position), so the same input
    gives byte-identical files on every run, runner and worker count (GZIP files carry no time
    stamp). This is Spark's layout (a file per task, `maxRecordsPerFile`).

    With `num_shards=N`, every record reaches its file through one shuffle keyed by
    (partition, shard) and each file is written by one call: a record's shard comes from its
    position in its batch, and records in a file are ordered by their batches' source tags.
    The runner holds the records between the shuffle's sides (on the DirectRunner, all of
    them in memory): ask for it when the number of files matters more than memory.

    Without partitions, the folder always gets its files, empty ones if no record came (one
    per shard, or a single one); with partitions, only files holding records.

    Files are first written under `<directory>/_temporary/<id>/` and moved into place only when
    every shard succeeded; `_SUCCESS` is written last (if asked). A failed job leaves the earlier
    contents of `directory` untouched.

    Args:
        directory: target folder (local, gs://, s3://, ...).
        num_shards: None (default): files by input split (see above); N: exactly N files per
            folder (per partition when partitioned), through a shuffle.
        compression: "none", "gzip" or "zlib" (whole-file, as TensorFlow writes them).
        save_mode: when `directory` already holds files: "error" (fail before writing),
            "overwrite" (replace everything at commit), "overwrite_partitions" (replace only the
            partitions present in the new data; unpartitioned, the same as "overwrite"),
            "append" (add files, named `part-...-of-...-<n>` when the plain names are taken),
            "ignore" (write nothing).
        record_type: "Example", "SequenceExample" or "ByteArray".
        record_column: for "ByteArray", the binary column to write (default: the only column
            besides the partition columns).
        partition_by: columns naming the partition folders, outermost first.
        write_success_file: write `<directory>/_SUCCESS` after the commit.
        commit_gate: optional PCollection of one element; the commit waits for it, so a step
            computing it can stop the commit by failing (e.g. too many bad records).
        max_records_per_file: with `num_shards=None`, start another file after this many
            records (Spark's `maxRecordsPerFile`); None: no limit.

    Returns (from `expand`): a PCollection of one dict `{"directory", "files", "numRecords",
    "partitions", "skipped"}` produced after the commit (`files`: paths relative to
    `directory`, in order; `partitions`: the partition folders written).

    Example:
        >>> import apache_beam as beam, pyarrow as pa
        >>> with beam.Pipeline() as p:
        ...     batches = p | beam.Create([pa.RecordBatch.from_pydict({"day": [1, 2], "x": [0.5, 1.5]})])
        ...     info = batches | WriteTFRecord("out/data", partition_by=["day"], save_mode="overwrite")
        ...     _ = info | beam.Map(lambda i: print(i["files"]))
        ['day=1/part-00000-of-00001.tfrecord', 'day=2/part-00000-of-00001.tfrecord']
    """

    def __init__(
        self,
        directory: str,
        num_shards: int | None = None,
        compression: str = "none",
        save_mode: str = "error",
        record_type: str = "Example",
        record_column: str | None = None,
        partition_by: Sequence[str] = (),
        write_success_file: bool = True,
        commit_gate: beam.PCollection | None = None,
        max_records_per_file: int | None = None,
    ):
        if record_type not in RECORD_TYPES:
            raise ValueError(
                f"WriteTFRecord: record_type {record_type!r} is not one of {', '.join(RECORD_TYPES)}"
            )
        super().__init__(
            directory,
            "tfrecord",
            num_shards,
            compression,
            save_mode,
            record_type,
            record_column,
            partition_by,
            write_success_file,
            commit_gate,
            max_records_per_file,
        )


class ReadTFRecordOutputs(NamedTuple):
    """What `ReadTFRecord(dead_letters=True)` returns.

    Attributes:
        batches: the decoded record batches.
        dead_letters: one dict per bad record: `source` (file), `record` (its position),
            `offset` (byte offset in the uncompressed stream, for a corrupt frame), `reason`.
    """

    batches: beam.PCollection
    dead_letters: beam.PCollection


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
    `beam_tensorize.kernels.tfrecord.decoding`; the features seen are logged and kept in
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
        batch_rows: int = DEFAULT_BATCH_ROWS,
        infer_sample_records: int | None = 1000,
    ):
        super().__init__()
        plan = TFRecordRead(
            path, schema, record_type, compression, verify_crc, dead_letters, batch_rows, infer_sample_records
        )
        self.inference = plan.inference
        self.schema = plan.schema
        self.files = plan.files
        self._reading = plan.reading

    def display_data(self) -> dict:
        reading = self._reading
        return {
            "path": DisplayDataItem(self.files.pattern, label="Files"),
            "record_type": DisplayDataItem(reading.record_type, label="Record type"),
            "compression": DisplayDataItem(reading.compression, label="Compression"),
            "files": DisplayDataItem(len(self.files.paths), label="Files found"),
        }

    def expand(self, pipeline):
        files = self.files
        read = read_splits(
            pipeline
            | "Pattern" >> beam.Create([files.pattern])
            | "MatchFiles" >> fileio.MatchAll()
            | "SkipHidden" >> beam.Filter(lambda m, base: visible(base, m.path), files.base)
            | "PathAndSize" >> beam.Map(lambda m: (m.path, m.size_in_bytes)),
            TFRecordFormat.from_reading(self._reading),
            None,
            self._reading.batch_rows,
            1,
        )
        if self._reading.dead_letters:
            return ReadTFRecordOutputs(read[BATCHES], read[DEAD_LETTERS])
        return read[BATCHES]
