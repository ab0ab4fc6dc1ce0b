"""Small file helpers over Beam's FileSystems (local, gs://, s3://, ...).

Besides reading and writing small text files, this holds the commit protocol of a folder of
data files, shared by the Beam sink (`WriteTFRecord`) and the Spark job
(`beam_tensorize.spark`): files are written under `<folder>/_temporary/<id>/` and moved
into place by `commit_files` once all of them exist.

Example:
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> write_text_atomically(os.path.join(folder, "a.txt"), "hi")
    >>> read_text(os.path.join(folder, "a.txt"))
    'hi'
"""

from __future__ import annotations

import logging
import posixpath
import uuid
from collections.abc import Sequence

from apache_beam.io.filesystems import FileSystems

__all__ = [
    "SUCCESS_FILE",
    "TEMP_FOLDER",
    "check_target",
    "commit_files",
    "delete_quietly",
    "existing_files",
    "files_under",
    "match_files",
    "read_text",
    "write_text_atomically",
]

_LOGGER = logging.getLogger(__name__)

#: Marker written last into a committed folder.
SUCCESS_FILE = "_SUCCESS"
#: Folder below a target folder where files are written before the commit.
TEMP_FOLDER = "_temporary"


def write_text_atomically(path: str, text: str) -> None:
    """Write `text` under a temporary name beside `path`, then rename it into place."""
    temp = f"{posixpath.dirname(path)}/.{posixpath.basename(path)}.tmp-{uuid.uuid4().hex}"
    with FileSystems.create(temp) as f:
        f.write(text.encode("utf-8"))
    if FileSystems.exists(path):
        FileSystems.delete([path])
    FileSystems.rename([temp], [path])


def read_text(path: str) -> str | None:
    """The UTF-8 text of `path`, or None when it does not exist."""
    if not FileSystems.exists(path):
        return None
    with FileSystems.open(path) as f:
        return f.read().decode("utf-8")


def match_files(pattern: str, kind: str = "input") -> list[tuple[str, int]]:
    """(path, size) of every file matching a glob, sorted by path.

    Args:
        pattern: a path or glob (local, gs://, s3://, ...).
        kind: what the files are, for the error message ("Avro", "TFRecord", ...).

    Raises:
        FileNotFoundError: nothing matches (the message names the pattern).

    Example:
        >>> from beam_tensorize.sample import SAMPLE_AVRO
        >>> [size for _, size in match_files(SAMPLE_AVRO, "Avro")]
        [128344]
    """
    matched = FileSystems.match([pattern])[0].metadata_list
    if not matched:
        raise FileNotFoundError(f"no {kind} file matches the input pattern {pattern!r}")
    return sorted((m.path, m.size_in_bytes) for m in matched)


def files_under(folder: str) -> list[str]:
    """Files under `folder`, recursively, sorted (none if it does not exist)."""
    try:
        matches = FileSystems.match([posixpath.join(folder, "**")])[0].metadata_list
    except Exception:  # noqa: BLE001 - a folder that does not exist has no files
        return []
    return sorted(m.path for m in matches)


def existing_files(directory: str) -> list[str]:
    """Files under `directory` (recursively), ignoring its temporary area."""
    prefix = posixpath.join(directory, TEMP_FOLDER) + "/"
    return [p for p in files_under(directory) if not p.replace("\\", "/").startswith(prefix)]


def delete_quietly(path: str) -> None:
    """Delete a file or folder; a failure is only logged (for clean-up after the fact)."""
    try:
        FileSystems.delete([path])
    except Exception:  # clean-up must not hide the real outcome
        _LOGGER.debug("Could not delete %s", path, exc_info=True)


def check_target(directory: str, save_mode: str) -> str:
    """Fail before anything is written if `directory` holds files and `save_mode` is "error".

    Returns:
        `directory`.

    Raises:
        FileExistsError: the folder holds files (the message names one) and the save mode is
            "error".

    Example:
        >>> import tempfile
        >>> check_target(tempfile.mkdtemp(), "error") != ""
        True
    """
    existing = existing_files(directory)
    if existing and save_mode == "error":
        raise FileExistsError(
            f"{directory} already holds {len(existing)} file(s) (e.g. {existing[0]}); "
            "choose another output folder or save mode 'overwrite'"
        )
    return directory


def commit_files(
    directory: str,
    temp_dir: str,
    written: Sequence[tuple[str, str, int]],
    save_mode: str,
    write_success: bool = False,
) -> dict:
    """Move files written under `temp_dir` into `directory`, replacing what was there.

    With save mode "overwrite" the old `_SUCCESS` is deleted first (readers see the folder as
    incomplete from then on), then the other old files; then the new files are renamed into
    place, the temporary folder is removed and, if asked, `_SUCCESS` is written.

    Args:
        directory: the target folder.
        temp_dir: the folder the files were written to (below `directory/_temporary/`).
        written: (file name, temporary path, number of records) of every file.
        save_mode: "error" (fail if files appeared in `directory` meanwhile) or "overwrite".
        write_success: write `directory/_SUCCESS` at the end.

    Returns:
        `{"directory", "files" (names, sorted), "numRecords"}`.

    Raises:
        FileExistsError: save mode "error" and `directory` received files while the job ran.

    Example:
        >>> import os, tempfile
        >>> folder = tempfile.mkdtemp()
        >>> temp = os.path.join(folder, TEMP_FOLDER, "job1")
        >>> write_text_atomically(os.path.join(temp, "part-0"), "x")
        >>> commit_files(folder, temp, [("part-0", os.path.join(temp, "part-0"), 1)], "error")["files"]
        ['part-0']
    """
    written = sorted(written)
    existing = existing_files(directory)
    if existing:
        if save_mode == "error":
            raise FileExistsError(f"{directory} received files while this job ran (e.g. {existing[0]})")
        success = [p for p in existing if posixpath.basename(p) == SUCCESS_FILE]
        FileSystems.delete(success)  # readers see the folder as incomplete from here on
        FileSystems.delete([p for p in existing if p not in success])
    FileSystems.rename([t for _, t, _ in written], [posixpath.join(directory, n) for n, _, _ in written])
    delete_quietly(temp_dir)
    temp_root = posixpath.join(directory, TEMP_FOLDER)
    if not files_under(temp_root):
        delete_quietly(temp_root)
    if write_success:
        with FileSystems.create(posixpath.join(directory, SUCCESS_FILE)):
            pass
    total = sum(count for _, _, count in written)
    _LOGGER.info("Committed %d records in %d files to %s", total, len(written), directory)
    return {"directory": directory, "files": [name for name, _, _ in written], "numRecords": total}
