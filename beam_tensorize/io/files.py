"""Small file helpers over Beam's FileSystems (local, gs://, s3://, ...)."""

from __future__ import annotations

import posixpath
import uuid

from apache_beam.io.filesystems import FileSystems

__all__ = ["read_text", "write_text_atomically"]


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
