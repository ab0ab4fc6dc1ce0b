"""Reading the splits of input files where the job runs (a Beam worker, a Spark task): the
read steps both engines share.

Example:
    >>> from beam_tensorize.sample import SAMPLE_AVRO
    >>> splits = plan_splits([SAMPLE_AVRO])
    >>> [b.num_rows for fmt, split in splits for b in read_split_batches(fmt, split, ["userId"])]
    [300]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import pyarrow as pa

from beam_tensorize.job.files import match_files, open_file
from beam_tensorize.kernels import formats
from beam_tensorize.kernels.formats import InputFormat, Split
from beam_tensorize.kernels.provenance import with_split

__all__ = ["Columns", "plan_splits", "read_split_batches"]

#: What to read of each file: column names / dotted paths, None for all, or a function of the
#: file's full schema giving them (a file it gives none for is not read).
Columns = Sequence[str] | Callable[[pa.Schema], Sequence[str]] | None


def plan_splits(
    patterns: Sequence[str],
    fmt: InputFormat | None = None,
    split_bytes: int = formats.DEFAULT_SPLIT_BYTES,
) -> list[tuple[InputFormat, Split]]:
    """(format, split) of every split of every file the patterns match, in order; `fmt` None
    tells each file's format from its first bytes.

    Raises:
        FileNotFoundError: a pattern matches nothing.
    """
    kind = fmt.kind if fmt is not None else "input"
    planned = []
    for pattern in patterns:
        for path, size in match_files(pattern, kind):
            resolved, splits = formats.plan_file(open_file, path, size, fmt, split_bytes)
            planned += [(resolved, split) for split in splits]
    return planned


def read_split_batches(
    fmt: InputFormat,
    split: Split,
    columns: Columns = None,
    batch_rows: int = formats.DEFAULT_BATCH_ROWS,
    chosen: dict[str, list[str]] | None = None,
) -> Iterator[pa.RecordBatch | dict]:
    """The batches of one split, each tagged with its split (`with_split`), and the format's
    dead letters (dicts) between them.

    Args:
        fmt, split: what to read.
        columns: see `Columns`.
        batch_rows: rows per batch.
        chosen: a cache of the columns a function chose per file (path -> columns).
    """
    if callable(columns):
        chosen = {} if chosen is None else chosen
        if split.path not in chosen:
            with open_file(split.path) as f:
                chosen[split.path] = list(columns(fmt.read_schema(f, split.path, None)))
        columns = chosen[split.path]
        if not columns:
            return
    with open_file(split.path) as f:
        for item in fmt.read_split(f, split, columns, batch_rows):
            yield item if isinstance(item, dict) else with_split(item, split.path, split.start)
