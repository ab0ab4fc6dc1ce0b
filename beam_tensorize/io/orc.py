"""ORC: `ReadOrc` (files -> record batches, a stripe per split)."""

from __future__ import annotations

from collections.abc import Sequence

from beam_tensorize.io.table import ReadTable
from beam_tensorize.kernels import formats

__all__ = ["ReadOrc"]


class ReadOrc(ReadTable):
    """Read ORC files into Arrow record batches (`ReadTable` with `format="orc"`), a stripe per
    split.

    Example:
        >>> import apache_beam as beam, pyarrow as pa, pyarrow.orc as orc
        >>> orc.write_table(pa.table({"id": [1, 2], "name": ["a", "b"]}), "t.orc")
        >>> with beam.Pipeline() as p:
        ...     _ = (p | ReadOrc("t.orc", columns=["name"])
        ...            | beam.Map(lambda b: print(b.to_pydict())))
        {'name': ['a', 'b']}
    """

    def __init__(
        self,
        file_patterns: str | Sequence[str],
        columns: Sequence[str] | None = None,
        batch_rows: int = formats.DEFAULT_BATCH_ROWS,
        split_bytes: int = formats.DEFAULT_SPLIT_BYTES,
        validate: bool = False,
    ):
        super().__init__(file_patterns, "orc", columns, batch_rows, split_bytes, validate)
