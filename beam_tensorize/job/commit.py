"""The commit protocol of a sharded output folder, shared by the Beam sinks and the Spark path.

Files are first written under `<directory>/_temporary/<id>/` (`CommitPlan.temp_dir`); when
every file of the job is there, `commit_files` moves them into place as the save mode says
and writes `_SUCCESS` last. A failed job leaves the earlier contents of the folder untouched.

Example:
    >>> shard_file_name(0, 4, "gzip")
    'part-00000-of-00004.tfrecord.gz'
    >>> shard_file_name(1, 2, "snappy", file_format="parquet")
    'part-00001-of-00002.parquet'
"""

from __future__ import annotations

import logging
import posixpath
from typing import NamedTuple

from beam_tensorize.job.files import FileSystems, create_file, list_files, new_file
from beam_tensorize.job.transaction import JOURNAL_FILE, LOCK_FILE, Transaction
from beam_tensorize.kernels.output import get_output_format
from beam_tensorize.kernels.output.split_files import SplitFiles
from beam_tensorize.kernels.tfrecord.files import relative_path

__all__ = [
    "SAVE_MODES",
    "SUCCESS_FILE",
    "TEMP_FOLDER",
    "CommitPlan",
    "PendingFiles",
    "check_target",
    "commit_files",
    "delete_temporary",
    "remove_empty_temporary",
    "existing_files",
    "shard_file_name",
]

_LOGGER = logging.getLogger(__name__)

#: What to do when the target folder (or, for `overwrite_partitions`, a partition) holds data.
SAVE_MODES = ("error", "overwrite", "overwrite_partitions", "append", "ignore")
#: Marker written last into a committed folder.
SUCCESS_FILE = "_SUCCESS"
TEMP_FOLDER = "_temporary"


def shard_file_name(
    shard: int, num_shards: int, compression: str = "none", suffix: str = "", file_format: str = "tfrecord"
) -> str:
    """`part-00000-of-00004[suffix]` and the output format's extension for `compression`
    (`.tfrecord[.gz|.zlib]`, `.parquet`, `.avro`: those compress inside the file)."""
    return (
        f"part-{shard:05d}-of-{num_shards:05d}{suffix}{get_output_format(file_format).extension(compression)}"
    )


def _files_under(folder: str) -> list[str]:
    """Files under `folder`, recursively (none if it does not exist)."""
    return list_files(posixpath.join(folder, "**"))


def existing_files(directory: str) -> list[str]:
    """Files under `directory` (recursively), ignoring the temporary area and a commit's lock
    and journal."""
    prefix = posixpath.join(directory, TEMP_FOLDER) + "/"
    own = {posixpath.join(directory, LOCK_FILE), posixpath.join(directory, JOURNAL_FILE)}
    return [
        p for p in _files_under(directory) if not p.replace("\\", "/").startswith(prefix) and p not in own
    ]


def check_target(directory: str, save_mode: str) -> dict:
    """Before writing: fail (`error`) or skip the write (`ignore`) if the target holds files."""
    existing = existing_files(directory)
    if existing and save_mode == "error":
        data = [p for p in existing if posixpath.basename(p) != SUCCESS_FILE] or existing
        raise FileExistsError(
            f"{directory} already holds {len(data)} file(s) (e.g. {data[0]}); choose another "
            "output folder or another save mode (overwrite, overwrite_partitions, append, ignore)"
        )
    if existing and save_mode == "ignore":
        _LOGGER.info("%s already holds data; save mode 'ignore' writes nothing", directory)
    return {"skip": bool(existing) and save_mode == "ignore"}


class CommitPlan(NamedTuple):
    """Where and how the commit moves the written files (used by the Beam sinks and Spark).

    `num_shards` None: the files are one per input split (and per `max_records_per_file`), named
    in the order of their keys; else exactly `num_shards` files per folder, named by shard.
    """

    directory: str
    temp_dir: str
    save_mode: str
    write_success: bool
    compression: str
    num_shards: int | None
    file_format: str = "tfrecord"
    partitioned: bool = False

    def final_names(self, files: list[tuple[str, int, int]], suffix: str) -> list[str]:
        """The committed names of `(folder, index, files in the folder)`."""
        return [
            posixpath.join(folder, shard_file_name(index, total, self.compression, suffix, self.file_format))
            for folder, index, total in files
        ]

    def split_files(
        self,
        partition_by: tuple[str, ...],
        record_type: str,
        record_column: str | None,
        max_records: int | None,
    ) -> SplitFiles:
        """A writer streaming one task's records into files of their input splits, in this
        plan's temporary folder (committed later by `commit_files`)."""
        return SplitFiles(
            self.temp_dir, self.file_format, self.compression, new_file, partition_by, record_type,
            record_column, max_records,
        )  # fmt: skip

    def temp_path(self, path: str, shard: int) -> str:
        """Where shard file `shard` (of `num_shards`) is written before the commit."""
        name = shard_file_name(shard, self.num_shards or 1, self.compression, "", self.file_format)
        return posixpath.join(self.temp_dir, path, name) if path else posixpath.join(self.temp_dir, name)


def _numbered(written: list[tuple], plan: CommitPlan) -> list[tuple[str, int, int, str, int]]:
    """`(folder, index, files in the folder, temporary path, records)` of every written file:
    shard files keep their shard; split files are numbered in the order of their keys."""
    if plan.num_shards:
        return [(folder, shard, plan.num_shards, temp, count) for folder, shard, temp, count in written]
    per_folder: dict[str, list[tuple]] = {}
    for entry in written:
        per_folder.setdefault(entry[0], []).append(entry)
    numbered = []
    for folder, entries in sorted(per_folder.items()):
        entries.sort(key=lambda e: e[1])
        numbered += [(folder, i, len(entries), temp, count) for i, (_, _, temp, count) in enumerate(entries)]
    return numbered


def _empty_files(written: list[tuple], plan: CommitPlan) -> list[tuple]:
    """Unpartitioned output of a format with `empty_files` (TFRecord) is whole even without
    records: the shard files nobody wrote (or, one file per split, a single file when there is
    none) are written empty."""
    fmt = get_output_format(plan.file_format)
    if plan.partitioned or not fmt.empty_files:
        return []
    if plan.num_shards:
        missing = sorted(
            set(range(plan.num_shards)) - {shard for folder, shard, _, _ in written if not folder}
        )
        keys = missing
    else:
        keys = [] if written else [""]
    empty = []
    for key in keys:
        path = plan.temp_path("", key if isinstance(key, int) else 0)
        with create_file(path) as raw:
            fmt.open_writer(raw, plan.compression).close()
        empty.append(("", key, path, 0))
    return empty


class PendingFiles(NamedTuple):
    """Written files a sink left uncommitted (`commit=False`), for `commit_files` later."""

    written: list
    plan: CommitPlan
    checked: dict


def commit_files(written, plan: CommitPlan, checked: dict, *gate, txn: Transaction | None = None) -> dict:
    """Moves the written files into place as the save mode says, then writes `_SUCCESS`.

    Args:
        written: `(partition path, shard or file key, temporary path, records)` of every file
            written (see `CommitPlan.num_shards`).
        plan: where and how.
        checked: what `check_target` said before the job wrote anything.
        gate: ignored (side inputs the commit waits for).
        txn: the transaction the move is part of (see `beam_tensorize.job.transaction`; it
            must hold the output's lock); None commits in one of its own, rooted at the folder.
    """
    if txn is None and checked["skip"]:  # save mode ignore over an existing output: untouched
        if FileSystems.exists(plan.temp_dir):
            delete_temporary(plan)
        return {"directory": plan.directory, "files": [], "numRecords": 0, "partitions": [], "skipped": True}
    if txn is None:
        with Transaction(plan.directory, posixpath.basename(plan.temp_dir)) as own:
            return commit_files(written, plan, checked, txn=own)
    directory = plan.directory
    written = sorted(written)
    existing = existing_files(directory)
    txn.cleanup(plan.temp_dir)
    skipped = checked["skip"] or (bool(existing) and plan.save_mode == "ignore")
    if skipped:
        return {"directory": directory, "files": [], "numRecords": 0, "partitions": [], "skipped": True}
    if existing and plan.save_mode == "error":
        raise FileExistsError(f"{directory} received files while this job ran (e.g. {existing[0]})")
    numbered = _numbered(sorted(written + _empty_files(written, plan)), plan)
    partitions = sorted({folder for folder, *_ in numbered if folder})
    success = [p for p in existing if posixpath.basename(p) == SUCCESS_FILE]
    txn.delete(success)  # readers see the folder as incomplete from the commit point on
    existing = [p for p in existing if p not in success]
    if plan.save_mode == "overwrite" or (plan.save_mode == "overwrite_partitions" and not partitions):
        txn.delete(existing)
        existing = []
    elif plan.save_mode == "overwrite_partitions":
        replaced = [
            p for p in existing if any(relative_path(directory, p).startswith(f"{q}/") for q in partitions)
        ]
        txn.delete(replaced)
        existing = [p for p in existing if p not in replaced]
    places = [(folder, index, total) for folder, index, total, _, _ in numbered]
    taken = {relative_path(directory, p) for p in existing}
    suffix, attempt = "", 0
    while taken.intersection(plan.final_names(places, suffix)):  # append: pick free names
        attempt += 1
        suffix = f"-{attempt}"
    names = plan.final_names(places, suffix)
    for (*_, temp, _), name in zip(numbered, names):
        txn.move(temp, posixpath.join(directory, name))
    if plan.write_success:
        txn.mark(posixpath.join(directory, SUCCESS_FILE))
    total = sum(count for *_, count in numbered)
    _LOGGER.info("Committing %d records in %d files to %s", total, len(numbered), directory)
    return {
        "directory": directory,
        "files": names,
        "numRecords": total,
        "partitions": partitions,
        "skipped": False,
    }


def delete_temporary(plan: CommitPlan) -> None:
    """Remove this job's temporary folder (and `_temporary/` once empty)."""
    _delete_quietly(plan.temp_dir)
    remove_empty_temporary(plan.directory)


def remove_empty_temporary(directory: str) -> None:
    """Remove `<directory>/_temporary/` when it holds no file (other jobs may be writing there)."""
    temp_root = posixpath.join(directory, TEMP_FOLDER)
    if not _files_under(temp_root):
        _delete_quietly(temp_root)


def _delete_quietly(path: str) -> None:
    try:
        FileSystems.delete([path])
    except Exception:
        _LOGGER.debug("Could not delete %s", path, exc_info=True)
