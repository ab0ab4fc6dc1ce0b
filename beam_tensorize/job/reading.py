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
from beam_tensorize.kernels.formats import InputFormat, Split, conform_batch
from beam_tensorize.kernels.provenance import with_split
from beam_tensorize.kernels.schemas import unify_schemas

__all__ = ["Columns", "conform_to", "file_schema", "plan_splits", "read_split_batches", "unified_schema"]

#: What to read of each file: column names / dotted paths, None for all, or a function of the
#: file's full schema giving them (a file it gives none for is not read).
Columns = Sequence[str] | Callable[[pa.Schema], Sequence[str]] | None


def plan_splits(
    patterns: Sequence[str],
    fmt: InputFormat | None = None,
    split_bytes: int = formats.DEFAULT_SPLIT_BYTES,
    dead_letters: bool = False,
) -> list[tuple[InputFormat, Split]]:
    """(format, split) of every split of every file the patterns match, in order; `fmt` None
    tells each file's format from its first bytes; with `dead_letters`, each format is its
    `with_dead_letters()` (records that do not decode come as dicts).

    Raises:
        FileNotFoundError: a pattern matches nothing.
    """
    kind = fmt.kind if fmt is not None else "input"
    planned = []
    for pattern in patterns:
        for path, size in match_files(pattern, kind):
            resolved, splits = formats.plan_file(open_file, path, size, fmt, split_bytes)
            if dead_letters:
                resolved = resolved.with_dead_letters()
            planned += [(resolved, split) for split in splits]
    return planned


def file_schema(fmt: InputFormat, path: str, columns: Sequence[str] | None) -> pa.Schema:
    """The schema of the batches `fmt` reads from the file `path` for `columns`."""
    with open_file(path) as f:
        return fmt.read_schema(f, path, columns)


def unified_schema(
    splits: Sequence[tuple[InputFormat, Split]], columns: Sequence[str] | None
) -> pa.Schema | None:
    """One schema for the files of `splits` read for `columns` (`kernels.schemas`), or None
    for no files.

    Raises:
        ValueError: a column's types in two files do not unify (the message names both).
    """
    schemas: dict[str, pa.Schema] = {}
    for fmt, split in splits:
        if split.path not in schemas:
            schemas[split.path] = file_schema(fmt, split.path, columns)
    return unify_schemas(sorted(schemas.items())) if schemas else None


def conform_to(batch: pa.RecordBatch, schema: pa.Schema | None, path: str) -> pa.RecordBatch:
    """`batch` with its columns in the types of the input's unified `schema` (columns the
    schema does not name, e.g. a folder's partition columns, and the tags are kept)."""
    if schema is None or batch.schema.equals(schema, check_metadata=False):
        return batch
    wanted = pa.schema(
        [schema.field(n) if n in schema.names else batch.schema.field(n) for n in batch.schema.names]
    )
    if wanted.equals(batch.schema, check_metadata=False):
        return batch
    return conform_batch(batch, wanted, path).replace_schema_metadata(batch.schema.metadata)


def read_split_batches(
    fmt: InputFormat,
    split: Split,
    columns: Columns = None,
    batch_rows: int = formats.DEFAULT_BATCH_ROWS,
    chosen: dict[str, list[str]] | None = None,
    schema: pa.Schema | None = None,
) -> Iterator[pa.RecordBatch | dict]:
    """The batches of one split, each tagged with its split (`with_split`), and the format's
    dead letters (dicts) between them.

    Args:
        fmt, split: what to read.
        columns: see `Columns`.
        batch_rows: rows per batch.
        chosen: a cache of the columns a function chose per file (path -> columns).
        schema: the input's unified schema (`unified_schema`): batches are cast to it.
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
            if isinstance(item, dict):
                yield item
            else:
                yield with_split(conform_to(item, schema, split.path), split.path, split.start)
