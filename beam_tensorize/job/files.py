"""Small file helpers over Beam's FileSystems (local, gs://, s3://, ...).

Apache Beam is imported at the first use of a remote file system (or of `FileSystems`):
local files are opened and created with Python's own `open`, as Beam's local file system
does, so Spark's Python workers reading and writing local files never pay Beam's import
(~1 s per worker process).

Example:
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> write_text_atomically(os.path.join(folder, "a.txt"), "hi")
    >>> read_text(os.path.join(folder, "a.txt"))
    'hi'
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import uuid
from collections.abc import Iterator

__all__ = [
    "FileSystems",
    "create_file",
    "list_files",
    "new_file",
    "match_files",
    "open_file",
    "read_text",
    "write_text_atomically",
]


class _BeamFileSystems:
    """Beam's `FileSystems` class, imported at the first attribute asked for."""

    def __getattr__(self, name: str):
        from apache_beam.io.filesystems import FileSystems as beam_file_systems

        return getattr(beam_file_systems, name)


#: Beam's `FileSystems` (local, gs://, s3://, hdfs://, ...), imported on first use.
FileSystems = _BeamFileSystems()


def _is_local(path: str) -> bool:
    """A path of the local file system (no `scheme://`), as Beam tells them apart."""
    return "://" not in path


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


def _put_empty_s3_object(path: str) -> None:
    """Beam's S3 writer always uses a multipart upload, and S3 refuses to complete one without
    parts (MalformedXML): an empty object takes one plain PUT instead."""
    from apache_beam.io.aws.clients.s3.boto3_client import Client

    bucket, _, key = path[len("s3://") :].partition("/")
    options = FileSystems.get_filesystem(path)._options  # the pipeline's S3 options
    Client(options=options).client.put_object(Bucket=bucket, Key=key, Body=b"")


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

    Example:
        >>> import tempfile
        >>> list_files(tempfile.mkdtemp() + "/**")
        []
    """
    try:
        return sorted(m.path for m in FileSystems.match([pattern])[0].metadata_list)
    except Exception:  # noqa: BLE001 - a file system may raise for a folder that does not exist
        return []


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
