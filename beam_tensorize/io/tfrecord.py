"""`WriteTFRecord`: record batches -> sharded (optionally Hive-partitioned) TFRecord files,
committed atomically."""

from __future__ import annotations

import logging
import posixpath
import uuid
from collections.abc import Iterable, Sequence
from typing import NamedTuple

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from beam_tensorize import metrics
from beam_tensorize.io.files import create_file, list_files
from beam_tensorize.kernels.shards import order_chunks, shard_chunks, write_shard
from beam_tensorize.kernels.tfrecord_files import relative_path
from beam_tensorize.kernels.tfrecord_read import RECORD_TYPES

__all__ = [
    "COMPRESSIONS",
    "RECORD_TYPES",
    "SAVE_MODES",
    "SUCCESS_FILE",
    "WriteTFRecord",
    "shard_file_name",
]

_LOGGER = logging.getLogger(__name__)

#: Accepted `compression` values and the file suffix each gives.
COMPRESSIONS = {"none": ".tfrecord", "gzip": ".tfrecord.gz", "zlib": ".tfrecord.zlib"}
#: What to do when the target folder (or, for `overwrite_partitions`, a partition) holds data.
SAVE_MODES = ("error", "overwrite", "overwrite_partitions", "append", "ignore")
#: Marker written last into a committed folder.
SUCCESS_FILE = "_SUCCESS"
TEMP_FOLDER = "_temporary"


def shard_file_name(shard: int, num_shards: int, compression: str = "none", suffix: str = "") -> str:
    """`part-00000-of-00004[suffix].tfrecord[.gz|.zlib]`."""
    return f"part-{shard:05d}-of-{num_shards:05d}{suffix}{COMPRESSIONS[compression]}"


class WriteTFRecord(beam.PTransform):
    """Write record batches as TFRecord files, `num_shards` per folder, committed atomically.

    Each row becomes one record: a `tf.train.Example` of its columns (`record_type="Example"`),
    a `tf.train.SequenceExample` (list-of-list columns become feature lists, the others context
    features), or the bytes of one binary column as they are (`"ByteArray"`, e.g. the
    `serialized` column of `EncodeExamples`).

    With `partition_by`, rows go to Hive-style folders `<directory>/<col>=<value>/...` (several
    columns nest in order; values escaped as Hive does, null in `__HIVE_DEFAULT_PARTITION__`,
    see `beam_tensorize.kernels.partitions`) and the partition columns are left out of the
    records. Every record reaches its file through one shuffle keyed by (partition, shard), and
    each file is written by one call that holds one open writer: memory does not grow with the
    number of partition values.

    A record's shard comes from its position in its batch, and records in a file are ordered by
    their batches' source tags, so the same input gives byte-identical files on every run and
    runner (GZIP files carry no time stamp). Without partitions every shard file is written,
    even an empty one; with partitions, only shards holding records.

    Files are first written under `<directory>/_temporary/<id>/` and moved into place only when
    every shard succeeded; `_SUCCESS` is written last (if asked). A failed job leaves the earlier
    contents of `directory` untouched.

    Args:
        directory: target folder (local, gs://, s3://, ...).
        num_shards: files per folder (per partition when partitioned).
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
        num_shards: int = 1,
        compression: str = "none",
        save_mode: str = "error",
        record_type: str = "Example",
        record_column: str | None = None,
        partition_by: Sequence[str] = (),
        write_success_file: bool = True,
        commit_gate: beam.PCollection | None = None,
    ):
        super().__init__()
        if not isinstance(directory, str) or not directory:
            raise ValueError("WriteTFRecord needs a target directory")
        if not isinstance(num_shards, int) or isinstance(num_shards, bool) or num_shards < 1:
            raise ValueError(f"WriteTFRecord: num_shards must be a positive integer, got {num_shards!r}")
        if compression not in COMPRESSIONS:
            raise ValueError(
                f"WriteTFRecord: compression {compression!r} is not one of {', '.join(COMPRESSIONS)}"
            )
        if save_mode not in SAVE_MODES:
            raise ValueError(f"WriteTFRecord: save_mode {save_mode!r} is not one of {', '.join(SAVE_MODES)}")
        if record_type not in RECORD_TYPES:
            raise ValueError(
                f"WriteTFRecord: record_type {record_type!r} is not one of {', '.join(RECORD_TYPES)}"
            )
        if isinstance(partition_by, str):
            partition_by = [partition_by]
        partition_by = tuple(partition_by)
        if len(set(partition_by)) != len(partition_by) or not all(partition_by):
            raise ValueError(f"WriteTFRecord: partition_by {list(partition_by)} repeats or has an empty name")
        self._directory = directory.rstrip("/")
        self._num_shards = num_shards
        self._compression = compression
        self._save_mode = save_mode
        self._record_type = record_type
        self._record_column = record_column
        self._partition_by = partition_by
        self._write_success = write_success_file
        self._commit_gate = commit_gate

    def expand(self, batches):
        pipeline = batches.pipeline
        temp_dir = posixpath.join(self._directory, TEMP_FOLDER, uuid.uuid4().hex)
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
            | "WriteShards"
            >> beam.ParDo(
                _WriteShardFn(temp_dir, self._num_shards, self._compression),
                beam.pvalue.AsSingleton(checked),
            )
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
        return gathered | "Commit" >> beam.Map(
            commit_files,
            CommitPlan(
                self._directory,
                temp_dir,
                self._save_mode,
                self._write_success,
                self._compression,
                self._num_shards,
            ),
            beam.pvalue.AsSingleton(checked),
            *gate,
        )


class _AssignShardsFn(beam.DoFn):
    """Serializes a batch per partition and splits it round-robin over the shards, starting at a
    shard fixed by its source (`beam_tensorize.kernels.shards.shard_chunks`)."""

    def __init__(self, num_shards: int, partition_by: tuple, record_type: str, record_column: str | None):
        self._num_shards = num_shards
        self._partition_by = partition_by
        self._record_type = record_type
        self._record_column = record_column

    def process(self, batch: pa.RecordBatch) -> Iterable[tuple[tuple[str, int], tuple[str, pa.Array]]]:
        yield from shard_chunks(
            batch, self._num_shards, self._partition_by, self._record_type, self._record_column
        )


class _WriteShardFn(beam.DoFn):
    """Writes one file from all records of one (partition, shard): one open writer at a time."""

    def __init__(self, temp_dir: str, num_shards: int, compression: str):
        self._temp_dir = temp_dir
        self._num_shards = num_shards
        self._compression = compression
        self._records = Metrics.counter(metrics.NAMESPACE, metrics.EXAMPLES_WRITTEN)
        self._files = Metrics.counter(metrics.NAMESPACE, metrics.FILES_WRITTEN)

    def process(self, element, checked: dict) -> Iterable[tuple[str, int, str, int]]:
        (path, shard), chunks = element
        if checked["skip"]:
            return
        name = shard_file_name(shard, self._num_shards, self._compression)
        temp_path = (
            posixpath.join(self._temp_dir, path, name) if path else posixpath.join(self._temp_dir, name)
        )
        with create_file(temp_path) as raw:
            count = write_shard(raw, order_chunks(chunks), self._compression)
        self._records.inc(count)
        self._files.inc()
        yield path, shard, temp_path, count


def _files_under(folder: str) -> list[str]:
    """Files under `folder`, recursively (none if it does not exist)."""
    return list_files(posixpath.join(folder, "**"))


def _existing_files(directory: str) -> list[str]:
    """Files under `directory` (recursively), ignoring the temporary area."""
    prefix = posixpath.join(directory, TEMP_FOLDER) + "/"
    return [p for p in _files_under(directory) if not p.replace("\\", "/").startswith(prefix)]


def check_target(directory: str, save_mode: str) -> dict:
    """Before writing: fail (`error`) or skip the write (`ignore`) if the target holds files."""
    existing = _existing_files(directory)
    if existing and save_mode == "error":
        raise FileExistsError(
            f"{directory} already holds {len(existing)} file(s) (e.g. {existing[0]}); choose another "
            "output folder or another save mode (overwrite, overwrite_partitions, append, ignore)"
        )
    if existing and save_mode == "ignore":
        _LOGGER.info("%s already holds data; save mode 'ignore' writes nothing", directory)
    return {"skip": bool(existing) and save_mode == "ignore"}


class CommitPlan(NamedTuple):
    """Where and how the commit moves the written files (also used by the Spark path)."""

    directory: str
    temp_dir: str
    save_mode: str
    write_success: bool
    compression: str
    num_shards: int

    def final_names(self, shards: list[tuple[str, int]], suffix: str) -> list[str]:
        return [
            posixpath.join(path, shard_file_name(shard, self.num_shards, self.compression, suffix))
            for path, shard in shards
        ]


def commit_files(written, plan: CommitPlan, checked: dict, *gate) -> dict:
    """Moves the written files into place as the save mode says, then writes `_SUCCESS`."""
    directory = plan.directory
    written = sorted(written)
    existing = _existing_files(directory)
    skipped = checked["skip"] or (bool(existing) and plan.save_mode == "ignore")
    if skipped:
        delete_temporary(plan)
        return {"directory": directory, "files": [], "numRecords": 0, "partitions": [], "skipped": True}
    if existing and plan.save_mode == "error":
        raise FileExistsError(f"{directory} received files while this job ran (e.g. {existing[0]})")
    partitions = sorted({path for path, _, _, _ in written if path})
    success = [p for p in existing if posixpath.basename(p) == SUCCESS_FILE]
    FileSystems.delete(success)  # readers see the folder as incomplete from here on
    existing = [p for p in existing if p not in success]
    if plan.save_mode == "overwrite" or (plan.save_mode == "overwrite_partitions" and not partitions):
        FileSystems.delete(existing)
        existing = []
    elif plan.save_mode == "overwrite_partitions":
        replaced = [
            p for p in existing if any(relative_path(directory, p).startswith(f"{q}/") for q in partitions)
        ]
        FileSystems.delete(replaced)
        existing = [p for p in existing if p not in replaced]
    shards = [(path, shard) for path, shard, _, _ in written]
    taken = {relative_path(directory, p) for p in existing}
    suffix, attempt = "", 0
    while taken.intersection(plan.final_names(shards, suffix)):  # append: pick free names
        attempt += 1
        suffix = f"-{attempt}"
    names = plan.final_names(shards, suffix)
    for folder in sorted({posixpath.dirname(posixpath.join(directory, n)) for n in names}):
        _make_folder(folder)
    FileSystems.rename([t for _, _, t, _ in written], [posixpath.join(directory, n) for n in names])
    delete_temporary(plan)
    if plan.write_success:
        with create_file(posixpath.join(directory, SUCCESS_FILE)):
            pass
    total = sum(count for _, _, _, count in written)
    _LOGGER.info("Committed %d records in %d files to %s", total, len(written), directory)
    return {
        "directory": directory,
        "files": names,
        "numRecords": total,
        "partitions": partitions,
        "skipped": False,
    }


def _make_folder(folder: str) -> None:
    """Creates a destination folder where the file system has folders (local, HDFS)."""
    if not FileSystems.exists(folder):
        try:
            FileSystems.mkdirs(folder)
        except OSError:  # created meanwhile
            pass


def delete_temporary(plan: CommitPlan) -> None:
    """Remove this job's temporary folder (and `_temporary/` once empty)."""
    _delete_quietly(plan.temp_dir)
    temp_root = posixpath.join(plan.directory, TEMP_FOLDER)
    if not _files_under(temp_root):
        _delete_quietly(temp_root)


def _delete_quietly(path: str) -> None:
    try:
        FileSystems.delete([path])
    except Exception:
        _LOGGER.debug("Could not delete %s", path, exc_info=True)
