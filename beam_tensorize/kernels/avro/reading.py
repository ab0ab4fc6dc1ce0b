"""Splittable reading: byte ranges of a file -> tagged record batches of about `batch_rows` rows."""

from __future__ import annotations

import functools
import itertools
import json
from collections.abc import Iterator, Sequence
from typing import BinaryIO

import pyarrow as pa

from beam_tensorize.kernels.arrow_types import DEFAULT_BATCH_ROWS, project_arrow_schema, resolve_column
from beam_tensorize.kernels.avro.container import RawBlock, iter_blocks, read_header
from beam_tensorize.kernels.avro.decode import decode_blocks, schema_key
from beam_tensorize.kernels.avro.salvage import decode_blocks_salvaging
from beam_tensorize.kernels.avro.types import avro_schema_to_arrow
from beam_tensorize.kernels.provenance import with_gaps, with_source

__all__ = [
    "DEFAULT_BATCH_ROWS",
    "DEFAULT_SPLIT_BYTES",
    "read_avro_range",
    "read_range_schema",
    "split_ranges",
]


#: Size of the byte ranges `split_ranges` cuts files into by default.
DEFAULT_SPLIT_BYTES = 64 << 20


def split_ranges(size: int, split_bytes: int = DEFAULT_SPLIT_BYTES) -> Iterator[tuple[int, int]]:
    """Consecutive byte ranges ``[start, end)`` of at most `split_bytes` covering a file, as
    few as that allows and of equal size (within a byte): the splits of a file then hold about
    as many rows each, so the workers that share them finish together (64, 64 and 52 MiB
    splits of a 180 MiB file left one of two workers a third of a split behind).

    Reading each range with :func:`read_avro_range` reads every block of the file once. An
    empty file still gives one (empty) range, so a reader sees it and can report it.

    Example:
        >>> list(split_ranges(10, 4))
        [(0, 3), (3, 6), (6, 10)]
        >>> list(split_ranges(8, 4)), list(split_ranges(0, 4))
        ([(0, 4), (4, 8)], [(0, 0)])
    """
    if split_bytes < 1:
        raise ValueError(f"split_bytes must be positive, got {split_bytes}")
    count = max(1, -(-size // split_bytes))
    bounds = [size * i // count for i in range(count + 1)]
    yield from itertools.pairwise(bounds)


@functools.lru_cache(maxsize=64)
def _range_schema(schema_json: str, columns: tuple[str, ...] | None, path: str) -> pa.Schema:
    schema = avro_schema_to_arrow(json.loads(schema_json))
    if columns is not None:
        columns = tuple(resolve_column(name, schema.names, path) for name in columns)
    try:
        return project_arrow_schema(schema, columns)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None


def read_range_schema(f: BinaryIO, path: str, columns: Sequence[str] | None = None) -> pa.Schema:
    """The schema of the batches :func:`read_avro_range` gives for this file and `columns`.

    Raises:
        AvroFormatError: the file is not valid Avro.
        ValueError: a column is missing (the message names the file and its columns).

    Example:
        >>> from beam_tensorize.sample import SAMPLE_AVRO
        >>> with open(SAMPLE_AVRO, "rb") as f:
        ...     read_range_schema(f, SAMPLE_AVRO, ["USERID"]).names
        ['userId']
    """
    header = read_header(f, path)
    return _range_schema(schema_key(header), None if columns is None else tuple(columns), path)


def read_avro_range(
    f: BinaryIO,
    path: str,
    columns: Sequence[str] | None = None,
    start: int = 0,
    end: int | None = None,
    batch_rows: int = DEFAULT_BATCH_ROWS,
    dead_letters: bool = False,
) -> Iterator[pa.RecordBatch | dict]:
    """Reads the blocks starting in ``[start, end)`` as batches of about `batch_rows` rows.

    Blocks are gathered until they hold `batch_rows` rows or more (a batch never spans two
    ranges), then decoded together (`decode_blocks`). Each batch is tagged with `path` and the offset
    of its first block (see :mod:`beam_tensorize.kernels.provenance`), so the same file and
    ranges give the same batches and tags on every runner.

    Args:
        f: the file, seekable.
        path: the file's name, for the tags and error messages.
        columns: columns to keep (matched exactly, else case-insensitively) or dotted paths
            into records (`genreFeatures.term`); None keeps all.
        start: first byte of the range (see :func:`iter_blocks`).
        end: end of the range (exclusive); None for the end of the file.
        batch_rows: rows to gather per batch.
        dead_letters: give records that do not decode as dead-letter dicts (before the batch
            their blocks' other records are in; see `salvage`) instead of failing.

    Raises:
        AvroFormatError: the file is not valid Avro (with `dead_letters`: only block-level
            corruption).
        ValueError: a column is missing (the message names the file and its columns).

    Example::

        with open("train.avro", "rb") as f:
            for batch in read_avro_range(f, "train.avro", ["userId"], 0, 1 << 20, batch_rows=4096):
                ...
    """
    header = read_header(f, path)
    schema = _range_schema(schema_key(header), None if columns is None else tuple(columns), path)

    def decoded(blocks: list[RawBlock]) -> Iterator[pa.RecordBatch | dict]:
        if not dead_letters:
            yield with_source(decode_blocks(blocks, header, schema, path), path, blocks[0].offset)
            return
        salvaged = decode_blocks_salvaging(blocks, header, schema, path)
        yield from salvaged.dead_letters
        yield with_gaps(with_source(salvaged.batch, path, blocks[0].offset), salvaged.gaps)

    pending: list[RawBlock] = []
    pending_rows = 0
    for block in iter_blocks(f, header, path, start, end):
        pending.append(block)
        pending_rows += block.count
        if pending_rows >= batch_rows:
            yield from decoded(pending)
            pending, pending_rows = [], 0
    if pending_rows:
        yield from decoded(pending)
