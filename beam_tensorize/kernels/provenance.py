"""Where a record batch came from, kept in its schema metadata.

Readers tag each batch with its source file and the byte offset of its first block. Later
steps use the tag to name bad records precisely and to order records deterministically
(the same input gives the same files on every runner).

Example:
    >>> import pyarrow as pa
    >>> batch = with_source(pa.RecordBatch.from_pydict({"a": [1]}), "gs://b/x.avro", 1024)
    >>> source_of(batch)
    ('gs://b/x.avro', 1024)
"""

from __future__ import annotations

import hashlib

import pyarrow as pa

__all__ = ["describe_row", "order_key", "source_of", "with_source"]

_SOURCE = b"beam_tensorize.source"
_OFFSET = b"beam_tensorize.offset"


def with_source(batch: pa.RecordBatch, path: str, offset: int) -> pa.RecordBatch:
    """`batch` tagged with its source file and the byte offset where its rows start."""
    metadata = dict(batch.schema.metadata or {})
    metadata.update({_SOURCE: path.encode(), _OFFSET: str(offset).encode()})
    return batch.replace_schema_metadata(metadata)


def source_of(batch: pa.RecordBatch) -> tuple[str, int] | None:
    """(path, offset) of a tagged batch, else None."""
    metadata = batch.schema.metadata or {}
    if _SOURCE not in metadata:
        return None
    return metadata[_SOURCE].decode(), int(metadata.get(_OFFSET, b"0"))


def describe_row(batch: pa.RecordBatch, row: int) -> str:
    """Human-readable location of row `row` of `batch`, for error messages."""
    source = source_of(batch)
    if source is None:
        return f"row {row} of an untagged batch"
    path, offset = source
    return f"{path}: record {row} of the rows starting at byte {offset}"


def order_key(batch: pa.RecordBatch, fallback: bytes = b"") -> str:
    """A deterministic sort key for a batch: its source, or a digest of `fallback` content."""
    source = source_of(batch)
    if source is not None:
        return f"{source[0]}\0{source[1]:020d}"
    return "\1" + hashlib.sha256(fallback).hexdigest()
