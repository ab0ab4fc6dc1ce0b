"""`WriteTFRecord`: record batches -> sharded (optionally Hive-partitioned) TFRecord files,
committed atomically."""

from __future__ import annotations

from collections.abc import Sequence

import apache_beam as beam

from beam_tensorize.io.sharded import WriteShardedFiles
from beam_tensorize.job.commit import SAVE_MODES, SUCCESS_FILE, shard_file_name
from beam_tensorize.kernels.output.tfrecord import COMPRESSIONS
from beam_tensorize.kernels.tfrecord.decoding import RECORD_TYPES

__all__ = [
    "COMPRESSIONS",
    "RECORD_TYPES",
    "SAVE_MODES",
    "SUCCESS_FILE",
    "WriteTFRecord",
    "shard_file_name",
]


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
