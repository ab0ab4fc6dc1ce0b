"""Small file helpers over Beam's FileSystems (local, gs://, s3://, ...).

Example:
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> write_text_atomically(os.path.join(folder, "a.txt"), "hi")
    >>> read_text(os.path.join(folder, "a.txt"))
    'hi'
"""

from __future__ import annotations

import posixpath
import uuid

from apache_beam.io.filesystems import FileSystems

__all__ = ["match_files", "read_text", "write_text_atomically"]


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
