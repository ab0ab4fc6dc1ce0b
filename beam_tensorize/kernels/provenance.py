"""Where a record batch came from, kept in its schema metadata.

Readers tag each batch with its source file and where in the file its rows start: the byte
offset of its first block (Avro, `unit="byte"`), the index of its first row in the file
(Parquet, TFRecord: `unit="row"`), or the stripe and the row in it (ORC: `unit="stripe"`,
offset `stripe << 32 | row`). Later steps use the tag to name bad records precisely and to
order records deterministically (the same input gives the same files on every runner).

Example:
    >>> import pyarrow as pa
    >>> batch = with_source(pa.RecordBatch.from_pydict({"a": [1]}), "gs://b/x.avro", 1024)
    >>> source_of(batch)
    ('gs://b/x.avro', 1024)
    >>> describe_row(with_source(batch, "gs://b/x.parquet", 8192, unit="row"), 3)
    'gs://b/x.parquet: record 8195'
"""

from __future__ import annotations

import hashlib

import pyarrow as pa

__all__ = [
    "UNITS",
    "describe_row",
    "order_key",
    "source_of",
    "source_unit",
    "split_key",
    "stripe_offset",
    "with_gaps",
    "with_source",
    "with_split",
]

_SOURCE = b"beam_tensorize.source"
_OFFSET = b"beam_tensorize.offset"
_UNIT = b"beam_tensorize.unit"
_SPLIT = b"beam_tensorize.split"
_GAPS = b"beam_tensorize.gaps"
#: What a tag's offset counts: bytes (Avro blocks), rows, or (ORC) `stripe << 32 | row`.
UNITS = ("byte", "row", "stripe")
_STRIPE_SHIFT = 32


def with_source(batch: pa.RecordBatch, path: str, offset: int, unit: str = "byte") -> pa.RecordBatch:
    """`batch` tagged with its source file and where its rows start (`offset`, in `unit`s)."""
    if unit not in UNITS:
        raise ValueError(f"unit {unit!r} is not one of {', '.join(UNITS)}")
    metadata = dict(batch.schema.metadata or {})
    metadata.update({_SOURCE: path.encode(), _OFFSET: str(offset).encode()})
    if unit == "byte":
        metadata.pop(_UNIT, None)
    else:
        metadata[_UNIT] = unit.encode()
    return batch.replace_schema_metadata(metadata)


def with_split(batch: pa.RecordBatch, path: str, start: int) -> pa.RecordBatch:
    """`batch` tagged with the input split it was read from (its file and its start, in the
    format's split units): the batches of one split go into the same output files.

    Example:
        >>> split_key(with_split(pa.RecordBatch.from_pydict({"a": [1]}), "x.avro", 7)).split("\\0")
        ['x.avro', '00000000000000000007']
    """
    metadata = dict(batch.schema.metadata or {})
    metadata[_SPLIT] = f"{path}\0{start:020d}".encode()
    return batch.replace_schema_metadata(metadata)


def with_gaps(batch: pa.RecordBatch, gaps: list[int]) -> pa.RecordBatch:
    """`batch` (tagged) noting that the records at positions `gaps` (ascending, counted among
    all the records its rows were read from) were left out as dead letters, so `describe_row`
    still names each row by its place in the file.

    Example:
        >>> batch = with_source(pa.RecordBatch.from_pydict({"a": [1, 2, 3]}), "x.avro", 4)
        >>> describe_row(with_gaps(batch, [0, 2]), 1)
        'x.avro: record 3 of the rows starting at byte 4'
    """
    if not gaps:
        return batch
    metadata = dict(batch.schema.metadata or {})
    metadata[_GAPS] = ",".join(str(g) for g in gaps).encode()
    return batch.replace_schema_metadata(metadata)


def _place(batch: pa.RecordBatch, row: int) -> int:
    """The position row `row` of `batch` had among the records it was read from."""
    gaps = (batch.schema.metadata or {}).get(_GAPS)
    if gaps:
        for gap in map(int, gaps.split(b",")):
            if gap > row:
                break
            row += 1
    return row


def split_key(batch: pa.RecordBatch) -> str | None:
    """The key of the input split a batch came from (`with_split`), else None; keys sort in
    file order, then split order."""
    value = (batch.schema.metadata or {}).get(_SPLIT)
    return None if value is None else value.decode()


def source_unit(batch: pa.RecordBatch) -> str:
    """What the offset of a tagged batch counts (see `UNITS`)."""
    return (batch.schema.metadata or {}).get(_UNIT, b"byte").decode()


def stripe_offset(stripe: int, row: int) -> int:
    """The offset of row `row` of ORC stripe `stripe` (unit "stripe")."""
    return (stripe << _STRIPE_SHIFT) | row


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
    unit = source_unit(batch)
    row = _place(batch, row)
    if unit == "row":
        return f"{path}: record {offset + row}"
    if unit == "stripe":
        mask = (1 << _STRIPE_SHIFT) - 1
        return f"{path}: stripe {offset >> _STRIPE_SHIFT}, record {(offset & mask) + row}"
    return f"{path}: record {row} of the rows starting at byte {offset}"


def order_key(batch: pa.RecordBatch, fallback: bytes = b"") -> str:
    """A deterministic sort key for a batch: its source, or a digest of `fallback` content."""
    source = source_of(batch)
    if source is not None:
        return f"{source[0]}\0{source[1]:020d}"
    return "\1" + hashlib.sha256(fallback).hexdigest()
