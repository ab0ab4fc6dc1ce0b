"""Avro object container files as an input format (`beam_tensorize.kernels.avro` does the work).

Splits are byte ranges of `split_bytes`, planned from the file size alone; a split reads the
blocks that start inside it, so a large file is read by many workers. Batches are tagged with
the byte offset of their first block.

Example:
    >>> from beam_tensorize.sample import SAMPLE_AVRO
    >>> fmt = AvroFormat()
    >>> with open(SAMPLE_AVRO, "rb") as f:
    ...     fmt.matches(f.read(16)), [b.num_rows for b in fmt.read_split(f, Split(SAMPLE_AVRO, 0, 1 << 20), ["userId"])]
    (True, [300])
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import BinaryIO

import pyarrow as pa

from beam_tensorize.kernels import avro
from beam_tensorize.kernels.formats.base import DEFAULT_BATCH_ROWS, InputFormat, Split, register_format

__all__ = ["AvroFormat"]


@register_format
class AvroFormat(InputFormat):
    """Avro container files (magic `Obj\\x01`), every codec of `beam_tensorize.kernels.avro`."""

    magic = avro.MAGIC
    name, kind = "avro", "Avro"

    def __init__(self, dead_letters: bool = False):
        #: Whether records that do not decode come as dead letters (see `with_dead_letters`).
        self.dead_letters = dead_letters

    def with_dead_letters(self) -> AvroFormat:
        return AvroFormat(dead_letters=True)

    def plan_splits(self, f: BinaryIO | None, path: str, size: int, split_bytes: int) -> list[Split]:
        return [Split(path, start, end) for start, end in avro.split_ranges(size, split_bytes)]

    def read_schema(self, f: BinaryIO, path: str, columns: Sequence[str] | None = None) -> pa.Schema:
        return avro.read_range_schema(f, path, columns)

    def read_split(
        self,
        f: BinaryIO,
        split: Split,
        columns: Sequence[str] | None = None,
        batch_rows: int = DEFAULT_BATCH_ROWS,
    ) -> Iterator[pa.RecordBatch]:
        return avro.read_avro_range(
            f, split.path, columns, split.start, split.end, batch_rows, dead_letters=self.dead_letters
        )
