"""`WriteTFRecord`: serialized records -> sharded TFRecord files, committed atomically."""

from __future__ import annotations

import gzip
import hashlib
import logging
import posixpath
import uuid
from collections.abc import Iterable

import apache_beam as beam
import numpy as np
import pyarrow as pa
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from beam_tensorize import metrics
from beam_tensorize.kernels.provenance import order_key
from beam_tensorize.kernels.tfrecord import write_tfrecords

__all__ = ["COMPRESSIONS", "SAVE_MODES", "SUCCESS_FILE", "WriteTFRecord", "shard_file_name"]

_LOGGER = logging.getLogger(__name__)

#: Accepted `compression` values and the file suffix each gives.
COMPRESSIONS = {"none": ".tfrecord", "gzip": ".tfrecord.gz"}
#: What to do when the target folder already holds data.
SAVE_MODES = ("error", "overwrite")
#: Marker written last into a committed folder.
SUCCESS_FILE = "_SUCCESS"
_TEMP_FOLDER = "_temporary"


def shard_file_name(shard: int, num_shards: int, compression: str = "none") -> str:
    """`part-00000-of-00004.tfrecord[.gz]`."""
    return f"part-{shard:05d}-of-{num_shards:05d}{COMPRESSIONS[compression]}"


class WriteTFRecord(beam.PTransform):
    """Write serialized records as `num_shards` TFRecord files in one folder.

    Input: record batches with a binary column of serialized records (`EncodeExamples`'
    output). Each record goes to a shard chosen from its position in its batch, and records
    in a shard are ordered by their batches' source tags, so the same input gives
    byte-identical files on every run and runner (GZIP files carry no time stamp). Every
    shard file is written, even an empty one.

    The files are first written under `<directory>/_temporary/<id>/` and moved into place
    only when all shards succeeded, then `_SUCCESS` is written (if asked); a failed job leaves
    the previous contents of `directory` untouched.

    Args:
        directory: target folder (local, gs://, s3://, ...).
        num_shards: number of files.
        compression: "none" or "gzip".
        save_mode: "error" (fail, before writing, if `directory` holds files) or "overwrite"
            (replace its contents at commit).
        record_column: the binary column holding serialized records.
        write_success_file: write `<directory>/_SUCCESS` after the commit.
        commit_gate: optional PCollection of one element; the commit waits for it, so a step
            computing it can stop the commit by failing (e.g. too many bad records).

    Returns (from `expand`): a PCollection of one dict `{"directory", "files", "numRecords"}`,
    produced after the commit (`files`: base names, in shard order).

    Example:
        >>> import apache_beam as beam, pyarrow as pa
        >>> with beam.Pipeline() as p:
        ...     batches = p | beam.Create([pa.RecordBatch.from_pydict({"serialized": [b"a", b"b"]})])
        ...     info = batches | WriteTFRecord("out/data", num_shards=2, save_mode="overwrite")
    """

    def __init__(
        self,
        directory: str,
        num_shards: int = 1,
        compression: str = "none",
        save_mode: str = "error",
        record_column: str = "serialized",
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
        self._directory = directory.rstrip("/")
        self._num_shards = num_shards
        self._compression = compression
        self._save_mode = save_mode
        self._record_column = record_column
        self._write_success = write_success_file
        self._commit_gate = commit_gate

    def expand(self, batches):
        pipeline = batches.pipeline
        temp_dir = posixpath.join(self._directory, _TEMP_FOLDER, uuid.uuid4().hex)
        checked = (
            pipeline
            | "Target" >> beam.Create([self._directory])
            | "CheckTarget" >> beam.Map(_check_target, self._save_mode)
        )
        shards = batches | "AssignShards" >> beam.ParDo(
            _AssignShardsFn(self._num_shards, self._record_column)
        )
        every_shard = pipeline | "EveryShard" >> beam.Create([(i, None) for i in range(self._num_shards)])
        written = (
            (shards, every_shard)
            | "Together" >> beam.Flatten()
            | "GroupByShard" >> beam.GroupByKey()
            | "WriteShards"
            >> beam.ParDo(
                _WriteShardFn(temp_dir, self._num_shards, self._compression),
                beam.pvalue.AsSingleton(checked),
            )
            | "OneKey" >> beam.Map(lambda shard: (0, shard))
            | "AllShards" >> beam.GroupByKey()
            | "ShardList" >> beam.MapTuple(lambda _, shards: list(shards))
        )
        gate = () if self._commit_gate is None else (beam.pvalue.AsSingleton(self._commit_gate),)
        return written | "Commit" >> beam.Map(
            _commit, self._directory, temp_dir, self._save_mode, self._write_success, *gate
        )


class _AssignShardsFn(beam.DoFn):
    """Splits a batch round-robin over the shards, starting at a shard fixed by its source."""

    def __init__(self, num_shards: int, column: str):
        self._num_shards = num_shards
        self._column = column

    def process(self, batch: pa.RecordBatch) -> Iterable[tuple[int, tuple[str, pa.Array]]]:
        if batch.num_rows == 0:
            return
        records = batch.column(self._column)
        key = order_key(batch, fallback=records.to_pylist()[0] + str(len(records)).encode())
        start = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "little") % self._num_shards
        shard_of_row = (start + np.arange(len(records))) % self._num_shards
        for shard in np.unique(shard_of_row):
            yield int(shard), (key, records.filter(pa.array(shard_of_row == shard)))


class _WriteShardFn(beam.DoFn):
    def __init__(self, temp_dir: str, num_shards: int, compression: str):
        self._temp_dir = temp_dir
        self._num_shards = num_shards
        self._compression = compression
        self._records = Metrics.counter(metrics.NAMESPACE, metrics.EXAMPLES_WRITTEN)
        self._files = Metrics.counter(metrics.NAMESPACE, metrics.FILES_WRITTEN)

    def process(self, element, unused_checked) -> Iterable[tuple[str, str, int]]:
        shard, chunks = element
        chunks = sorted((c for c in chunks if c is not None), key=lambda c: (c[0], c[1].to_pylist()))
        name = shard_file_name(shard, self._num_shards, self._compression)
        temp_path = posixpath.join(self._temp_dir, name)
        count = 0
        with FileSystems.create(temp_path, compression_type=CompressionTypes.UNCOMPRESSED) as raw:
            if self._compression == "gzip":
                with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0, filename="") as out:
                    count = _write_chunks(out, chunks)
            else:
                count = _write_chunks(raw, chunks)
        self._records.inc(count)
        self._files.inc()
        yield name, temp_path, count


def _write_chunks(fileobj, chunks) -> int:
    count = 0
    for _, records in chunks:
        write_tfrecords(fileobj, records)
        count += len(records)
    return count


def _files_under(folder: str) -> list[str]:
    """Files under `folder`, recursively (none if it does not exist)."""
    try:
        matches = FileSystems.match([posixpath.join(folder, "**")])[0].metadata_list
    except Exception:  # noqa: BLE001 - a folder that does not exist has no files
        return []
    return sorted(m.path for m in matches)


def _existing_files(directory: str) -> list[str]:
    """Files under `directory` (recursively), ignoring the temporary area."""
    prefix = posixpath.join(directory, _TEMP_FOLDER) + "/"
    return [p for p in _files_under(directory) if not p.replace("\\", "/").startswith(prefix)]


def _check_target(directory: str, save_mode: str) -> str:
    existing = _existing_files(directory)
    if existing and save_mode == "error":
        raise FileExistsError(
            f"{directory} already holds {len(existing)} file(s) (e.g. {existing[0]}); "
            "choose another output folder or save mode 'overwrite'"
        )
    return directory


def _commit(written, directory: str, temp_dir: str, save_mode: str, write_success: bool, *gate) -> dict:
    written = sorted(written)
    existing = _existing_files(directory)
    if existing:
        if save_mode == "error":
            raise FileExistsError(f"{directory} received files while this job ran (e.g. {existing[0]})")
        success = [p for p in existing if posixpath.basename(p) == SUCCESS_FILE]
        FileSystems.delete(success)  # readers see the folder as incomplete from here on
        FileSystems.delete([p for p in existing if p not in success])
    FileSystems.rename([t for _, t, _ in written], [posixpath.join(directory, n) for n, _, _ in written])
    _delete_quietly(temp_dir)
    temp_root = posixpath.join(directory, _TEMP_FOLDER)
    if not _files_under(temp_root):
        _delete_quietly(temp_root)
    if write_success:
        with FileSystems.create(posixpath.join(directory, SUCCESS_FILE)):
            pass
    total = sum(count for _, _, count in written)
    _LOGGER.info("Committed %d records in %d files to %s", total, len(written), directory)
    return {"directory": directory, "files": [name for name, _, _ in written], "numRecords": total}


def _delete_quietly(path: str) -> None:
    try:
        FileSystems.delete([path])
    except Exception:
        _LOGGER.debug("Could not delete %s", path, exc_info=True)
