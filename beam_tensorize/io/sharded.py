"""`WriteShardedFiles`: record batches -> sharded (optionally Hive-partitioned) files, committed
atomically; the machinery of `WriteTFRecord` and `WriteParquet`."""

from __future__ import annotations

import posixpath
import uuid
from collections.abc import Iterable, Sequence

import apache_beam as beam
import pyarrow as pa
from apache_beam.metrics import Metrics
from apache_beam.transforms.display import DisplayDataItem

from beam_tensorize import metrics
from beam_tensorize.job.commit import (
    SAVE_MODES,
    TEMP_FOLDER,
    CommitPlan,
    check_file_format,
    check_target,
    commit_files,
)
from beam_tensorize.job.files import create_file
from beam_tensorize.kernels.shards import order_chunks, shard_chunks, write_file

__all__ = ["WriteShardedFiles"]


class WriteShardedFiles(beam.PTransform):
    """Write record batches as `num_shards` files per folder of `file_format`, committed
    atomically (see `WriteTFRecord` for the behaviour; `WriteParquet` for columnar files).

    Every record reaches its file through one shuffle keyed by (partition, shard), and each
    file is written by one call that holds one open writer. A record's shard comes from its
    position in its batch, and records in a file are ordered by their batches' source tags,
    so the same input gives byte-identical files on every run and runner.
    """

    def __init__(
        self,
        directory: str,
        file_format: str,
        num_shards: int,
        compression: str,
        save_mode: str,
        record_type: str,
        record_column: str | None,
        partition_by: Sequence[str],
        write_success_file: bool,
        commit_gate: beam.PCollection | None,
    ):
        super().__init__()
        name = type(self).__name__
        if not isinstance(directory, str) or not directory:
            raise ValueError(f"{name} needs a target directory")
        if not isinstance(num_shards, int) or isinstance(num_shards, bool) or num_shards < 1:
            raise ValueError(f"{name}: num_shards must be a positive integer, got {num_shards!r}")
        check_file_format(file_format, compression, name)
        if save_mode not in SAVE_MODES:
            raise ValueError(f"{name}: save_mode {save_mode!r} is not one of {', '.join(SAVE_MODES)}")
        if isinstance(partition_by, str):
            partition_by = [partition_by]
        partition_by = tuple(partition_by)
        if len(set(partition_by)) != len(partition_by) or not all(partition_by):
            raise ValueError(f"{name}: partition_by {list(partition_by)} repeats or has an empty name")
        self._directory = directory.rstrip("/")
        self._file_format = file_format
        self._num_shards = num_shards
        self._compression = compression
        self._save_mode = save_mode
        self._record_type = record_type
        self._record_column = record_column
        self._partition_by = partition_by
        self._write_success = write_success_file
        self._commit_gate = commit_gate

    def display_data(self) -> dict:
        return {
            "directory": DisplayDataItem(self._directory, label="Output folder"),
            "file_format": DisplayDataItem(self._file_format, label="File format"),
            "num_shards": DisplayDataItem(self._num_shards, label="Files per folder"),
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
        )
        checked = (
            pipeline
            | "Target" >> beam.Create([self._directory])
            | "CheckTarget" >> beam.Map(check_target, self._save_mode)
        )
        shards = batches | "AssignShards" >> beam.ParDo(
            _AssignShardsFn(self._num_shards, self._partition_by, self._record_type, self._record_column)
        )
        # Unpartitioned, every shard file exists even when empty (readers find the folder whole).
        every_shard = [] if self._partition_by else [(("", i), None) for i in range(self._num_shards)]
        written = (
            (shards, pipeline | "EveryShard" >> beam.Create(every_shard))
            | "Together" >> beam.Flatten()
            | "GroupByShard" >> beam.GroupByKey()
            | "WriteShards" >> beam.ParDo(_WriteShardFn(plan), beam.pvalue.AsSingleton(checked))
            | "OneKey" >> beam.Map(lambda shard: (0, shard))
        )
        nothing = pipeline | "NoShardsYet" >> beam.Create([(0, None)])  # partitioned, empty input
        gathered = (
            (written, nothing)
            | "WithEmpty" >> beam.Flatten()
            | "AllShards" >> beam.GroupByKey()
            | "ShardList" >> beam.MapTuple(lambda _, shards: [s for s in shards if s is not None])
        )
        gate = () if self._commit_gate is None else (beam.pvalue.AsSingleton(self._commit_gate),)
        return gathered | "Commit" >> beam.Map(commit_files, plan, beam.pvalue.AsSingleton(checked), *gate)


class _AssignShardsFn(beam.DoFn):
    """Serializes a batch per partition and splits it round-robin over the shards, starting at a
    shard fixed by its source (`beam_tensorize.kernels.shards.shard_chunks`)."""

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

    def process(self, element, checked: dict) -> Iterable[tuple[str, int, str, int]]:
        (path, shard), chunks = element
        if checked["skip"]:
            return
        ordered = order_chunks(chunks)
        if not ordered and self._plan.file_format == "parquet":
            return
        temp_path = self._plan.temp_path(path, shard)
        with create_file(temp_path) as raw:
            count = write_file(raw, ordered, self._plan.file_format, self._plan.compression)
        self._records.inc(count)
        self._files.inc()
        yield path, shard, temp_path, count
