"""The writing steps of `tensorize_spark`: the Spark plans that encode and write the records.

Every file goes into the run's own temporary folder (`commit_plan`, the Beam sink's commit
protocol); the driver moves them into place in one commit at the end. Without `num_shards`
each task reads its input split, encodes it and writes its records into files of its own
(`SplitFiles`, as the Beam sink does): no shuffle (`write_split_files`). With `num_shards`
records get their folder and shard as the Beam `WriteTFRecord` does (`shard_chunks`), Spark
shuffles them by (folder, shard) and sorts them in the Beam sink's file order, and one task
writes each file (`write_shards`).
"""

from __future__ import annotations

import itertools
import posixpath
import uuid
from collections.abc import Callable, Iterator

import numpy as np
import pyarrow as pa
from pyspark.sql import SparkSession

from beam_tensorize.job.commit import TEMP_FOLDER, CommitPlan
from beam_tensorize.job.files import create_file
from beam_tensorize.job.finish import dead_letter_json
from beam_tensorize.job.reading import read_split_batches
from beam_tensorize.job.spec import TensorizeSpec
from beam_tensorize.kernels.output import get_output_format
from beam_tensorize.kernels.output.dead_letters import SERIALIZED_COLUMN
from beam_tensorize.kernels.output.split_files import WrittenFile
from beam_tensorize.spark._compat import from_arrow_schema
from beam_tensorize.spark._encode import EncodeBatches
from beam_tensorize.spark._kept import kept_batches
from beam_tensorize.spark._tasks import DEAD_LETTER, ENCODED, RECORD, WRITTEN, from_ipc, split_tasks
from beam_tensorize.spark.table_source import TABLE_FORMAT, TableDataSource

__all__ = ["EncodeAndWrite", "WriteFiles", "commit_plan", "write_shards", "write_split_files"]


def commit_plan(spec: TensorizeSpec) -> CommitPlan:
    """The commit plan of a run: its own temporary folder under the split folder."""
    split_dir = spec.split_dir
    return CommitPlan(
        split_dir, posixpath.join(split_dir, TEMP_FOLDER, uuid.uuid4().hex), spec.save_mode, False,
        spec.compression, spec.num_shards, spec.output_format, bool(spec.folder_columns),
    )  # fmt: skip


def write_split_files(spark: SparkSession, splits: list, write: EncodeAndWrite) -> list:
    """Without `num_shards`: each task reads its split (or the batches kept of it) and writes
    its files (no shuffle); the rows it reports (files, dead letters, side results), collected."""
    tasks = list(enumerate(splits)) if write.reads_kept else splits
    return split_tasks(spark, tasks).mapPartitions(write).collect()


def write_shards(spark: SparkSession, encode: EncodeBatches, plan: CommitPlan) -> list:
    """With `num_shards`: encode the source's batches, shuffle them by file, write a file per
    task; the `WRITTEN` rows, collected."""
    spec = encode.spec
    spark.dataSource.register(TableDataSource)
    rows = (
        spark.read.format(TABLE_FORMAT)
        .option("format", spec.input_format)
        .option("columns", ",".join(spec.input_columns))
        .option("provenance", "true")
        .option("batchRows", str(spec.batch_rows))
        .option("splitBytes", str(spec.split_bytes))
        .load(list(spec.inputs))
    )
    return (
        rows.mapInArrow(encode, from_arrow_schema(ENCODED))
        .repartition(spec.num_shards, "path", "shard")
        .sortWithinPartitions("path", "shard", "key", "batch", "pos")
        .mapInArrow(WriteFiles(plan), from_arrow_schema(WRITTEN))
        .collect()
    )


class EncodeAndWrite:
    """mapPartitions function over input splits: reads each split, encodes its batches and
    writes the records into the split's own files (`SplitFiles`, as the Beam sink does),
    reporting each file with its key; passes dead letters and layouts on."""

    def __init__(
        self,
        encode: EncodeBatches,
        plan: CommitPlan,
        skip: bool,
        schema: pa.Schema | None,
        kept: str | None = None,
        delete_kept: bool = False,
    ):
        """`skip`: the save mode writes nothing; `schema`: the input's unified schema; `kept`:
        the folder of the batches the counting tasks kept (then the tasks get (index, split)
        pairs and read their split's kept batches, not the input); `delete_kept`: delete each
        split's file of kept batches once read (Spark runs each task once)."""
        self._encode = encode
        self._plan = plan
        self._skip = skip
        self._columns = encode.spec.input_columns
        self._schema = schema
        self._kept = kept
        self._delete_kept = delete_kept

    @property
    def reads_kept(self) -> bool:
        """Whether the tasks read the batches the counting tasks kept."""
        return self._kept is not None

    def _batches(self, task: tuple, unreadable: list[bytes]) -> tuple[Iterator[pa.RecordBatch], bool]:
        """The batches of a task's split, and whether they are extracted already; the dead
        letters (JSON lines) of its records that did not decode go to `unreadable`."""
        if self._kept is not None:
            index, _ = task
            return kept_batches(self._kept, index, unreadable, self._delete_kept), True
        fmt, split = task
        batches = read_split_batches(
            fmt, split, self._columns, self._encode.spec.batch_rows, None, self._schema
        )
        return _set_aside(batches, lambda letter: unreadable.append(dead_letter_json(letter).encode())), False

    def __call__(self, splits: Iterator[tuple]) -> Iterator[dict]:
        files = self._plan.split_files(
            self._encode.partition_by, "ByteArray", SERIALIZED_COLUMN, self._encode.spec.max_records_per_file
        )
        written: list[WrittenFile] = []
        try:
            for task in splits:
                unreadable: list[bytes] = []  # the records that did not decode
                good, extracted = self._batches(task, unreadable)
                for kind, item in self._encode.encoded(good, extracted):
                    if kind == RECORD:
                        if not self._skip:
                            written += files.write(item)
                    else:
                        for payload in item if kind == DEAD_LETTER else [item]:
                            yield {"kind": kind, "payload": payload}
                for letter in unreadable:
                    yield {"kind": DEAD_LETTER, "payload": letter}
            written += files.close()
        except BaseException:
            files.abort()
            raise
        for f in written:
            yield {
                "kind": RECORD,
                "path": f.folder,
                "key": f.key,
                "payload": f.temp_path.encode(),
                "count": f.count,
            }


def _set_aside(
    items: Iterator[pa.RecordBatch | dict], keep: Callable[[dict], None]
) -> Iterator[pa.RecordBatch]:
    """The batches of a reader's output; its dead letters go to `keep`."""
    for item in items:
        if isinstance(item, dict):
            keep(item)
        else:
            yield item


class WriteFiles:
    """mapInArrow function over records sorted by (path, shard, key, batch, pos): writes each
    file of the partition into the temporary folder (unless the save mode skips the write)
    and reports its record count; passes dead letters and layouts through."""

    def __init__(self, plan: CommitPlan):
        self._plan = plan

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        others: list[pa.RecordBatch] = []

        def runs() -> Iterator[tuple[tuple[str, int], pa.Array]]:
            """((path, shard), records) for each run of one file's records; keeps the others."""
            for batch in batches:
                kinds = batch.column("kind").to_numpy(zero_copy_only=False)
                if (kinds != RECORD).any():
                    others.append(batch.filter(pa.array(kinds != RECORD)))
                    batch = batch.filter(pa.array(kinds == RECORD))
                paths = batch.column("path").to_pylist()
                shards = batch.column("shard").to_pylist()
                places = list(zip(paths, shards))
                starts = [i for i in range(len(places)) if i == 0 or places[i] != places[i - 1]]
                for start, stop in itertools.pairwise([*starts, len(places)]):
                    yield places[start], batch.column("payload").slice(start, stop - start)

        fmt = get_output_format(self._plan.file_format)
        for (path, shard), group in itertools.groupby(runs(), key=lambda run: run[0]):
            temp_path = self._plan.temp_path(path, shard)
            if fmt.columnar:
                chunks = [("", from_ipc(payload)) for _, records in group for payload in records.to_pylist()]
            else:
                chunks = [("", records) for _, records in group]
            with create_file(temp_path) as raw:
                count = fmt.write_file(raw, chunks, self._plan.compression)
            yield pa.RecordBatch.from_arrays(
                [pa.array([RECORD], pa.int32()), pa.array([path]), pa.array([shard], pa.int32()),
                 pa.array([""]), pa.array([temp_path.encode()], pa.binary()), pa.array([count], pa.int64())],
                schema=WRITTEN,
            )  # fmt: skip
        for batch in others:
            yield pa.RecordBatch.from_arrays(
                [batch.column("kind"), batch.column("path"), batch.column("shard"), batch.column("key"),
                 batch.column("payload"), pa.array(np.zeros(batch.num_rows, np.int64))],
                schema=WRITTEN,
            )  # fmt: skip
