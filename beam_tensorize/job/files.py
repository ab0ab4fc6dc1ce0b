"""Small file helpers over Beam's FileSystems (local, gs://, s3://, ...).

Apache Beam is imported at the first use of a remote file system: local paths are served
with Python's own `open` and `os` functions, as Beam's local file system does (the same
results and the same pattern syntax), so a job on Spark that reads and writes local files
never pays Beam's import (~1.7 s in the driver, ~1 s per Python worker).

This module reads, writes and lists files; it re-exports the names of its two parts, so
``beam_tensorize.job.files`` stays the one place to import file helpers from:

* `beam_tensorize.job.file_systems`: `FileSystems` (local paths without Beam) and Beam's
  local pattern matching (`translate_pattern`);
* `beam_tensorize.job.object_stores`: conditional writes on S3 and GCS (`create_if_absent`,
  `read_versioned`, `replace_if_unchanged`).

Example:
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> write_text_atomically(os.path.join(folder, "a.txt"), "hi")
    >>> read_text(os.path.join(folder, "a.txt"))
    'hi'
"""

from __future__ import annotations

import contextlib
import logging
import os
import posixpath
import uuid
from collections.abc import Iterator

from beam_tensorize.job.file_systems import (  # noqa: F401 - private names re-exported as before
    _COMPRESSED_SUFFIXES,
    FileMetadata,
    FileSystems,
    MatchResult,
    _delete_local,
    _is_local,
    _LocalFirstFileSystems,
    _match_local,
    _metadata,
    translate_pattern,
)
from beam_tensorize.job.object_stores import (  # noqa: F401 - private names re-exported as before
    _bucket_and_key,
    _gcs_bucket,
    _put_empty_s3_object,
    _s3_client,
    create_if_absent,
    read_versioned,
    replace_if_unchanged,
)

__all__ = [
    "FileSystems",
    "create_if_absent",
    "create_file",
    "list_files",
    "new_file",
    "match_files",
    "open_arrow_file",
    "open_file",
    "read_text",
    "read_versioned",
    "replace_if_unchanged",
    "write_text_atomically",
]


_LOGGER = logging.getLogger(__name__)


def _raw_file(path: str, mode: str):
    """`path` opened for reading ("rb") or created for writing ("wb") as raw bytes, whatever
    its name says (no compression): local paths with Python's `open` (folders created, as
    Beam's local file system does), others through Beam's file systems."""
    if _is_local(path):
        folder = os.path.dirname(path)
        if mode == "wb" and folder:
            os.makedirs(folder, exist_ok=True)
        return open(path, mode)
    from apache_beam.io.filesystem import CompressionTypes

    make = FileSystems.create if mode == "wb" else FileSystems.open
    return make(path, compression_type=CompressionTypes.UNCOMPRESSED)


class _LazyWriter:
    """A write-only file that is created at its first byte (or, empty, when closed)."""

    def __init__(self, path: str):
        self._path = path
        self._file = None

    def write(self, data) -> int:
        if not len(data):
            return 0
        if self._file is None:
            self._file = _raw_file(self._path, "wb")
        return self._file.write(data)

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        elif self._path.startswith("s3://"):
            _put_empty_s3_object(self._path)
        else:
            _raw_file(self._path, "wb").close()


def new_file(path: str) -> _LazyWriter:
    """A new file to write bytes to, created at its first byte or when closed (also empty);
    the caller closes it (`create_file` is the context-manager form)."""
    return _LazyWriter(path)


@contextlib.contextmanager
def create_file(path: str) -> Iterator[_LazyWriter]:
    """A new file to write bytes to (not compressed, whatever its name), also when it stays
    empty: Beam's `FileSystems.create` cannot make an empty object on S3.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "_SUCCESS")
        >>> with create_file(path):
        ...     pass
        >>> os.path.getsize(path)
        0
    """
    writer = _LazyWriter(path)
    try:
        yield writer
    except BaseException:
        if writer._file is not None:
            writer._file.close()
        raise
    writer.close()


def open_file(path: str):
    """`path` opened for reading as raw bytes, whatever its name says (no decompression)."""
    return _raw_file(path, "rb")


def open_arrow_file(path: str, mode: str):
    """`path` opened for reading ("rb") or created for writing ("wb") for Arrow: a local file
    natively, without Python between Arrow and the file (folders created for writing), others
    through Beam's file systems. (Reading is not memory-mapped: the pages of a mapped file stay
    resident while any batch read from it lives, which doubled a job's resident memory.)"""
    if not _is_local(path):
        return _raw_file(path, mode)
    import pyarrow as pa

    folder = os.path.dirname(path)
    if folder and mode == "wb":
        os.makedirs(folder, exist_ok=True)
    return pa.OSFile(path, mode)


def write_text_atomically(path: str, text: str) -> None:
    """Write `text` under a temporary name beside `path`, then rename it into place."""
    temp = f"{posixpath.dirname(path)}/.{posixpath.basename(path)}.tmp-{uuid.uuid4().hex}"
    with create_file(temp) as f:
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


def list_files(pattern: str) -> list[str]:
    """Paths matching a path or glob, sorted; none when nothing (not even the folder) is there.

    Raises:
        OSError: the file system could not be listed for another reason (no permission, no
            network, no credentials): an output that cannot be read is not an empty one.

    Example:
        >>> import tempfile
        >>> list_files(tempfile.mkdtemp() + "/**")
        []
    """
    try:
        if _is_local(pattern):  # strict: an unreadable folder is an error (Beam's local match skips it)
            return sorted(m.path for m in _match_local(pattern, strict=True).metadata_list)
        return sorted(m.path for m in FileSystems.match([pattern])[0].metadata_list)
    except Exception as err:  # noqa: BLE001 - a file system may raise for a folder that does not exist
        causes = list((getattr(err, "exception_details", None) or {}).values()) or [err]
        if all(_not_found(cause) for cause in causes):
            return []
        raise OSError(
            f"cannot list {pattern}: {type(causes[0]).__name__}: {causes[0]}; check the path, the network "
            "and the credentials of its file system"
        ) from None


def _not_found(err: BaseException) -> bool:
    """The error says only that nothing is there (a local path, an object-store key or bucket)."""
    return (
        isinstance(err, FileNotFoundError)
        or type(err).__name__ in ("NotFound", "NoSuchKey", "NoSuchBucket")
        or getattr(err, "code", None) == 404
    )


def match_files(pattern: str, kind: str = "input", note: bool = True) -> list[tuple[str, int]]:
    """(path, size) of every file matching a path, folder (its files, recursively) or glob,
    sorted by path. In folders and globs, Hadoop's hidden files (a name, or a folder below the
    pattern's fixed part, starting with `_` or `.`: `_SUCCESS`, `.crc`, `_temporary/`) are
    left out, as Spark and Hadoop do.

    Args:
        pattern: a path, folder or glob (local, gs://, s3://, ...).
        kind: what the files are, for the error message ("Avro", "TFRecord", ...).
        note: log a warning saying how many hidden files were left out.

    Raises:
        FileNotFoundError: nothing matches (the message names the pattern).

    Example:
        >>> from beam_tensorize.sample import SAMPLE_AVRO
        >>> [size for _, size in match_files(SAMPLE_AVRO, "Avro")]
        [128344]
    """
    listing = _is_folder(pattern) or any(c in pattern for c in "*?[")
    if _is_folder(pattern):  # a folder is its files, as in Spark and Hadoop (recursively)
        pattern = pattern.rstrip("/") + "/**"
    matched = FileSystems.match([pattern])[0].metadata_list
    found = sorted((m.path, m.size_in_bytes) for m in matched)
    if listing:  # Hadoop's hidden files (_SUCCESS, .crc, _temporary/...) are no input
        prefix = pattern.split("*")[0].split("?")[0].split("[")[0]
        base = prefix if prefix.endswith("/") else posixpath.dirname(prefix) + "/"
        kept = [
            (p, n)
            for p, n in found
            if not _hidden(p[len(base) :] if p.startswith(base) else posixpath.basename(p))
        ]
        if len(kept) < len(found) and note:
            _LOGGER.warning(
                "%s: skipped %d hidden file(s) (names starting with '_' or '.', e.g. _SUCCESS, .crc)",
                pattern, len(found) - len(kept),
            )  # fmt: skip
        found = kept
    if not found:
        raise FileNotFoundError(f"no {kind} file matches the input pattern {pattern!r}")
    return found


def _is_folder(path: str) -> bool:
    if _is_local(path):
        return os.path.isdir(path)
    return path.endswith("/") or (not any(c in path for c in "*?[") and not FileSystems.exists(path)
                                  and bool(list_files(path.rstrip("/") + "/**")))  # fmt: skip


def _hidden(relative: str) -> bool:
    return any(part.startswith(("_", ".")) for part in relative.split("/") if part)
