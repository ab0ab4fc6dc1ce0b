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
from beam_tensorize.kernels.arrow_types import default_column
from beam_tensorize.kernels.formats import InputFormat, Split, conform_batch
from beam_tensorize.kernels.provenance import with_split
from beam_tensorize.kernels.schemas import unify_schemas

__all__ = [
    "Columns",
    "conform_to",
    "file_schema",
    "plan_splits",
    "present_columns",
    "read_split_batches",
    "unified_schema",
    "unify_file_schemas",
]

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
    """The schema of the batches `fmt` reads from the file `path` for `columns`. An Avro file
    without some of the columns gives the others: Avro's schema evolution reads them as the
    default that a later file's schema declares (`unify_file_schemas`, `conform_to`)."""
    with open_file(path) as f:
        return fmt.read_schema(f, path, present_columns(fmt, f, path, columns))


def present_columns(fmt: InputFormat, f, path: str, columns: Sequence[str] | None) -> Sequence[str] | None:
    """`columns` without those an Avro file lacks (Avro's schema evolution); as they are for
    other formats, which must have every column."""
    if columns is None or fmt.name != "avro":
        return columns
    names = fmt.read_schema(f, path, None).names
    folded = {n.lower() for n in names}
    return [c for c in columns if c.split(".")[0] in names or c.split(".")[0].lower() in folded]


def unify_file_schemas(schemas: Sequence[tuple[str, pa.Schema]], columns: Sequence[str] | None) -> pa.Schema:
    """`unify_schemas`, then every top-level column of `columns` must be in some file.

    Raises:
        ValueError: as `unify_schemas`, or no file has a column (the message names the first).
    """
    unified = unify_schemas(schemas)
    if columns is not None:
        folded = {n.lower() for n in unified.names}
        for column in columns:
            name = column.split(".")[0]
            if name not in unified.names and name.lower() not in folded:
                path, schema = schemas[0]
                raise ValueError(
                    f"{path}: the config reads column {name!r}, which this file does not have; "
                    f"its columns are: {', '.join(schema.names) or '(none read)'}"
                )
    return unified


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
    return unify_file_schemas(sorted(schemas.items()), columns) if schemas else None


def conform_to(
    batch: pa.RecordBatch, schema: pa.Schema | None, path: str, requested: Sequence[str] = ()
) -> pa.RecordBatch:
    """`batch` with its columns in the types and order of the input's unified `schema` (columns
    the schema does not name, e.g. a folder's partition columns, and the tags are kept). A
    `requested` column the file lacks (an Avro file written before the field was added) is its
    default, as Avro readers give it."""
    if schema is None or batch.schema.equals(schema, check_metadata=False):
        return batch
    for field in schema:
        if field.name not in batch.schema.names and field.name in requested:
            batch = batch.append_column(field, default_column(field, batch.num_rows, path))
    order = [n for n in schema.names if n in batch.schema.names]  # every file's batches in the
    order += [n for n in batch.schema.names if n not in schema.names]  # unified order
    if order != batch.schema.names:
        batch = batch.select(order).replace_schema_metadata(batch.schema.metadata)
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
    requested: list[str] = []  # the requested columns the file lacks: their defaults
    if columns is not None and not callable(columns) and fmt.name == "avro" and schema is not None:
        chosen = {} if chosen is None else chosen
        if split.path not in chosen:  # the columns this file has (the others: their defaults)
            with open_file(split.path) as f:
                chosen[split.path] = list(present_columns(fmt, f, split.path, columns))
        requested = [c.split(".")[0] for c in columns if c not in chosen[split.path]]
        requested = [schema.field(n).name for n in requested if n in schema.names]
        columns = chosen[split.path]
    with open_file(split.path) as f:
        for item in fmt.read_split(f, split, columns, batch_rows):
            if isinstance(item, dict):
                yield item
            else:
                yield with_split(conform_to(item, schema, split.path, requested), split.path, split.start)
