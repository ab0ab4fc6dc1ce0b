"""`WriteShardedFiles`: record batches -> sharded (optionally Hive-partitioned) files, committed
atomically; the machinery of `WriteTFRecord`, and (`WriteColumnarFiles`) of `WriteParquet` and
`WriteAvro`."""

from __future__ import annotations

import posixpath
import uuid
from collections.abc import Iterable, Sequence

import apache_beam as beam
import pyarrow as pa
from apache_beam.metrics import Metrics
from apache_beam.transforms.display import DisplayDataItem
from apache_beam.transforms.window import GlobalWindow
from apache_beam.utils.windowed_value import WindowedValue

from beam_tensorize import metrics
from beam_tensorize.job.commit import (
    SAVE_MODES,
    TEMP_FOLDER,
    CommitPlan,
    PendingFiles,
    check_target,
    commit_files,
)
from beam_tensorize.job.file_systems import local_path
from beam_tensorize.job.files import create_file
from beam_tensorize.kernels.output import check_output_format, get_output_format
from beam_tensorize.kernels.output.shards import ROWS, order_chunks, shard_chunks
from beam_tensorize.kernels.output.split_files import WrittenFile
from beam_tensorize.progress import ProgressCounter

__all__ = ["WriteColumnarFiles", "WriteShardedFiles"]


class WriteShardedFiles(beam.PTransform):
    """Write record batches as files of `file_format`, committed atomically (see
    `WriteTFRecord` for the behaviour; `WriteParquet` for columnar files).

    By default (`num_shards=None`) the step that receives the batches writes them: the
    batches of one input split go into files of their own (`beam_tensorize.kernels.output.split_files`),
    with no shuffle of the records; only file names and counts meet for the commit, which
    names the files of each folder in the order of their splits. With `num_shards`, every
    record reaches its file through one shuffle keyed by (partition, shard), and each file is
    written by one call: exactly `num_shards` files per folder, but the runner holds every
    record between the shuffle's two sides (memory grows with the output on the DirectRunner).
    Either way the same input gives byte-identical files on every run and runner.
    """

    def __init__(
        self,
        directory: str,
        file_format: str,
        num_shards: int | None,
        compression: str,
        save_mode: str,
        record_type: str,
        record_column: str | None,
        partition_by: Sequence[str],
        write_success_file: bool,
        commit_gate: beam.PCollection | None,
        max_records_per_file: int | None = None,
    ):
        super().__init__()
        name = type(self).__name__
        if not isinstance(directory, str) or not directory:
            raise ValueError(f"{name} needs a target directory")
        for arg, value in (("num_shards", num_shards), ("max_records_per_file", max_records_per_file)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
                raise ValueError(f"{name}: {arg} must be a positive integer or None, got {value!r}")
        if num_shards is not None and max_records_per_file is not None:
            raise ValueError(f"{name}: give num_shards or max_records_per_file, not both")
        check_output_format(file_format, compression, name)
        if save_mode not in SAVE_MODES:
            raise ValueError(f"{name}: save_mode {save_mode!r} is not one of {', '.join(SAVE_MODES)}")
        if isinstance(partition_by, str):
            partition_by = [partition_by]
        partition_by = tuple(partition_by)
        if len(set(partition_by)) != len(partition_by) or not all(partition_by):
            raise ValueError(f"{name}: partition_by {list(partition_by)} repeats or has an empty name")
        self._directory = local_path(directory).rstrip("/")
        self._file_format = file_format
        self._num_shards = num_shards
        self._compression = compression
        self._save_mode = save_mode
        self._record_type = record_type
        self._record_column = record_column
        self._partition_by = partition_by
        self._write_success = write_success_file
        self._commit_gate = commit_gate
        self._max_records = max_records_per_file
        self._commit = True

    def without_commit(self) -> WriteShardedFiles:
        """This sink, set to leave its files in their temporary folder: it outputs one
        `beam_tensorize.job.commit.PendingFiles` for a later `commit_files` (`Tensorize` commits
        them with the metadata, the feature lists and the report in one transaction)."""
        self._commit = False
        return self

    def display_data(self) -> dict:
        return {
            "directory": DisplayDataItem(self._directory, label="Output folder"),
            "file_format": DisplayDataItem(self._file_format, label="File format"),
            "num_shards": DisplayDataItem(
                self._num_shards or "one per input split", label="Files per folder"
            ),
            "max_records_per_file": DisplayDataItem(
                self._max_records or "no limit", label="Records per file"
            ),
            "compression": DisplayDataItem(self._compression, label="Compression"),
            "save_mode": DisplayDataItem(self._save_mode, label="Save mode"),
            "partition_by": DisplayDataItem(", ".join(self._partition_by) or "(none)", label="Partition by"),
        }

    def expand(self, batches):
        pipeline = batches.pipeline
        plan = CommitPlan(
            self._directory,
            posixpath.join(self._directory, TEMP_FOLDER, uuid.uuid4().hex),
            self._save_mode,
            self._write_success,
            self._compression,
            self._num_shards,
            self._file_format,
            bool(self._partition_by),
        )
        checked = (
            pipeline
            | "Target" >> beam.Create([self._directory])
            | "CheckTarget" >> beam.Map(check_target, self._save_mode)
        )
        if self._num_shards is None:
            written = batches | "WriteSplitFiles" >> beam.ParDo(
                _WriteSplitFilesFn(
                    plan, self._partition_by, self._record_type, self._record_column, self._max_records
                ),
                beam.pvalue.AsSingleton(checked),
            )
        else:
            shards = batches | "AssignShards" >> beam.ParDo(
                _AssignShardsFn(self._num_shards, self._partition_by, self._record_type, self._record_column)
            )
            written = (
                shards
                | "GroupByShard" >> beam.GroupByKey()
                | "WriteShards" >> beam.ParDo(_WriteShardFn(plan), beam.pvalue.AsSingleton(checked))
            )
        nothing = pipeline | "NoFilesYet" >> beam.Create([(0, None)])  # empty input
        gathered = (
            (written | "OneKey" >> beam.Map(lambda written_file: (0, written_file)), nothing)
            | "WithEmpty" >> beam.Flatten()
            | "AllFiles" >> beam.GroupByKey()
            | "FileList" >> beam.MapTuple(lambda _, files: [f for f in files if f is not None])
        )
        if not self._commit:
            return gathered | "Pending" >> beam.Map(PendingFiles, plan, beam.pvalue.AsSingleton(checked))
        gate = () if self._commit_gate is None else (beam.pvalue.AsSingleton(self._commit_gate),)
        return gathered | "Commit" >> beam.Map(commit_files, plan, beam.pvalue.AsSingleton(checked), *gate)


class WriteColumnarFiles(WriteShardedFiles):
    """The sink of files holding rows of columns (`file_format` of a subclass): the columns of
    each batch written as they are, no record type. See `WriteParquet` for the arguments."""

    #: "parquet" or "avro".
    file_format = ""

    def __init__(
        self,
        directory: str,
        num_shards: int | None = None,
        compression: str = "snappy",
        save_mode: str = "error",
        partition_by: Sequence[str] = (),
        write_success_file: bool = True,
        commit_gate: beam.PCollection | None = None,
        max_records_per_file: int | None = None,
    ):
        super().__init__(
            directory,
            self.file_format,
            num_shards,
            compression,
            save_mode,
            ROWS,
            None,
            partition_by,
            write_success_file,
            commit_gate,
            max_records_per_file,
        )


class _WriteSplitFilesFn(beam.DoFn):
    """Writes the batches it receives into files of their input splits (`SplitFiles`); a file
    is reported once closed: when its split ends, when it is full, or at the end of the bundle."""

    def __init__(self, plan: CommitPlan, partition_by: tuple, record_type: str, record_column, max_records):
        self._plan = plan
        self._partition_by = partition_by
        self._record_type = record_type
        self._record_column = record_column
        self._max_records = max_records
        self._records = Metrics.counter(metrics.NAMESPACE, metrics.EXAMPLES_WRITTEN)
        self._files_written = Metrics.counter(metrics.NAMESPACE, metrics.FILES_WRITTEN)

    def setup(self):
        self._progress = ProgressCounter(metrics.EXAMPLES_WRITTEN)

    def start_bundle(self):
        self._files = self._plan.split_files(
            self._partition_by, self._record_type, self._record_column, self._max_records
        )

    def process(self, batch: pa.RecordBatch, checked: dict) -> Iterable[WrittenFile]:
        if checked["skip"]:
            return
        try:
            yield from self._report(self._files.write(batch))
            self._progress.add(batch.num_rows)
        except BaseException:
            self._files.abort()
            raise

    def finish_bundle(self):
        self._progress.flush()
        for written in self._report(self._files.close()):
            yield WindowedValue(written, GlobalWindow().max_timestamp(), [GlobalWindow()])

    def _report(self, files: list[WrittenFile]) -> list[WrittenFile]:
        for written in files:
            self._records.inc(written.count)
            self._files_written.inc()
        return files


class _AssignShardsFn(beam.DoFn):
    """Serializes a batch per partition and splits it round-robin over the shards, starting at a
    shard fixed by its source (`beam_tensorize.kernels.output.shards.shard_chunks`)."""

    def __init__(self, num_shards: int, partition_by: tuple, record_type: str, record_column: str | None):
        self._num_shards = num_shards
        self._partition_by = partition_by
        self._record_type = record_type
        self._record_column = record_column

    def process(self, batch: pa.RecordBatch) -> Iterable[tuple[tuple[str, int], tuple]]:
        yield from shard_chunks(
            batch, self._num_shards, self._partition_by, self._record_type, self._record_column
        )


class _WriteShardFn(beam.DoFn):
    """Writes one file from all records of one (partition, shard): one open writer at a time.
    A columnar file without rows is not written (it would have no schema)."""

    def __init__(self, plan: CommitPlan):
        self._plan = plan
        self._records = Metrics.counter(metrics.NAMESPACE, metrics.EXAMPLES_WRITTEN)
        self._files = Metrics.counter(metrics.NAMESPACE, metrics.FILES_WRITTEN)

    def setup(self):
        self._progress = ProgressCounter(metrics.EXAMPLES_WRITTEN)

    def finish_bundle(self):
        self._progress.flush()

    def process(self, element, checked: dict) -> Iterable[tuple[str, int, str, int]]:
        (path, shard), chunks = element
        if checked["skip"]:
            return
        ordered = order_chunks(chunks)
        fmt = get_output_format(self._plan.file_format)
        if not ordered and not fmt.empty_files:
            return
        temp_path = self._plan.temp_path(path, shard)
        with create_file(temp_path) as raw:
            count = fmt.write_file(raw, ordered, self._plan.compression)
        self._records.inc(count)
        self._files.inc()
        self._progress.add(count)
        yield WrittenFile(path, shard, temp_path, count)
