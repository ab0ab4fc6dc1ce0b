"""The input-format protocol: match a file, plan its splits, read its schema, read a split.

Every input format (Avro, Parquet, ORC, TFRecord, or one of your own) is one subclass of
`InputFormat` registered with `register_format`. Readers (the Beam `ReadTable` and the Spark
`beam_tensorize_table` data source) only call these four methods, so a format added here is
read by both, with column projection and provenance tags (`beam_tensorize.kernels.provenance`)
that keep the output deterministic.

The caller opens the files (Beam's file systems, a local file, ...); a format reads from the
open, seekable file object it is handed.

Example, a toy format of text files holding one integer per line::

    @register_format
    class IntLines(InputFormat):
        name, kind = "intlines", "int-lines"

        def matches(self, head):
            return head[:1].isdigit()

        def read_schema(self, f, path, columns=None):
            return project_schema(pa.schema([("n", pa.int64())]), columns, path)

        def read_split(self, f, split, columns=None, batch_rows=8192):
            numbers = [int(line) for line in f.read().split()]
            batch = pa.RecordBatch.from_pydict({"n": numbers})
            yield with_source(batch.select(self.read_schema(f, split.path, columns).names), split.path, 0, "row")
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import BinaryIO, ClassVar, NamedTuple

import pyarrow as pa

from beam_tensorize.kernels.arrow_types import DEFAULT_BATCH_ROWS
from beam_tensorize.kernels.avro import project_arrow_schema, resolve_column

__all__ = [
    "AUTO",
    "DEFAULT_BATCH_ROWS",
    "DEFAULT_SPLIT_BYTES",
    "HEAD_BYTES",
    "InputFormat",
    "Split",
    "check_format",
    "conform_batch",
    "detect_format",
    "format_names",
    "get_format",
    "plan_file",
    "project_schema",
    "register_format",
    "resolve_format",
]

#: `format="auto"`: tell each file's format from its first bytes.
AUTO = "auto"
#: Bytes of a file's start handed to `InputFormat.matches`.
HEAD_BYTES = 16
DEFAULT_SPLIT_BYTES = 64 << 20


class Split(NamedTuple):
    """A part of one file read as a unit: `[start, end)` in the format's own units (Avro: bytes,
    Parquet: row groups, ORC: stripes, TFRecord: the whole file), and the index of the split's
    first row in the file where the format knows it (else 0)."""

    path: str
    start: int
    end: int
    first_row: int = 0


class InputFormat:
    """One input format. Subclasses set `name` (the `format=` value) and `kind` (the word used
    in messages), and implement `matches`, `read_schema` and `read_split`; `plan_splits` reads
    a whole file as one split unless overridden. Instances must pickle (they travel to workers).
    """

    name: ClassVar[str] = ""
    kind: ClassVar[str] = ""

    #: The bytes every file of the format starts with (then `matches` needs no override).
    magic: ClassVar[bytes] = b""

    def matches(self, head: bytes) -> bool:
        """Whether a file starting with `head` (up to `HEAD_BYTES`, fewer for a short file)
        is of this format: by default, whether it starts with `magic`."""
        if not self.magic:
            raise NotImplementedError(f"{type(self).__name__} sets no magic bytes: override matches()")
        return head.startswith(self.magic)

    def plan_splits(self, f: BinaryIO | None, path: str, size: int, split_bytes: int) -> list[Split]:
        """The splits of one file, in file order; `f` is the open file (None when the format
        says `needs_file_to_plan` is False)."""
        return [Split(path, 0, size)]

    #: Whether `plan_splits` reads the file (Avro plans from the size alone).
    needs_file_to_plan: ClassVar[bool] = False
    #: Whether `matches` is a weak test (no magic bytes): such formats are tried last.
    weak_signature: ClassVar[bool] = False

    def read_schema(self, f: BinaryIO, path: str, columns: Sequence[str] | None = None) -> pa.Schema:
        """The schema of the batches `read_split` gives for this file and `columns`."""
        raise NotImplementedError

    #: Whether `read_split` yields bad records as dead-letter dicts (`{"source", "record",
    #: "offset", "reason"}`) beside the batches instead of raising.
    dead_letters: bool = False

    def with_dead_letters(self) -> InputFormat:
        """This format giving bad records as dead letters where it can tell them apart from
        the rest of the file (Avro: records that do not decode); by default itself (formats
        whose errors are all file-level, or that take their own option, as TFRecord)."""
        return self

    def read_split(
        self,
        f: BinaryIO,
        split: Split,
        columns: Sequence[str] | None = None,
        batch_rows: int = DEFAULT_BATCH_ROWS,
    ) -> Iterator[pa.RecordBatch | dict]:
        """The rows of one split as batches of at most (about) `batch_rows` rows, each tagged with
        `with_source`; `columns` as in `project_schema`. With `dead_letters`, bad records come
        as dicts between the batches."""
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other) -> bool:
        return type(self) is type(other) and vars(self) == vars(other)

    def __hash__(self) -> int:
        return hash(type(self))


_FORMATS: dict[str, type[InputFormat]] = {}


def register_format(cls: type[InputFormat]) -> type[InputFormat]:
    """Class decorator: make `cls` known to `get_format`, `format_names` and `detect_format`."""
    if not cls.name or not cls.kind:
        raise ValueError(f"{cls.__name__} needs a `name` and a `kind`")
    if cls.name == AUTO:
        raise ValueError(f"{AUTO!r} is reserved for detection")
    _FORMATS[cls.name] = cls
    return cls


def format_names() -> tuple[str, ...]:
    """The registered format names, sorted."""
    return tuple(sorted(_FORMATS))


def get_format(name: str | InputFormat) -> InputFormat:
    """A format by name (a default instance), or `name` itself when it is already one.

    Raises:
        ValueError: no format has that name (the message lists them).
    """
    if isinstance(name, InputFormat):
        return name
    if name not in _FORMATS:
        raise ValueError(f"input format {name!r} is not one of {AUTO}, {', '.join(format_names())}")
    return _FORMATS[name]()


def detect_format(head: bytes, path: str, candidates: Sequence[InputFormat] | None = None) -> InputFormat:
    """The first of `candidates` (default: every registered format; formats with magic bytes
    before those with a `weak_signature`) whose `matches` accepts a file starting with `head`.

    Raises:
        ValueError: the file is empty, or no format matches; the message names the file.
    """
    if not head:
        raise ValueError(
            f"{path}: the file is empty (0 bytes), so its format cannot be told; remove it or give "
            "the format (--input_format)"
        )
    if candidates is None:
        candidates = [cls() for cls in _FORMATS.values()]
    for fmt in sorted(candidates, key=lambda fmt: fmt.weak_signature):
        if fmt.matches(head):
            return fmt
    raise ValueError(
        f"{path}: not a file of a known format ({', '.join(format_names())}): its first bytes are "
        f"{head[:8].hex()}; check the input path, or give the format (--input_format)"
    )


def check_format(fmt: InputFormat, head: bytes, path: str) -> None:
    """Fail, naming the format the file seems to be in, when `fmt` does not match `head`."""
    if fmt.matches(head):
        return
    try:
        seems = f"it looks like {detect_format(head, path).kind}"
    except ValueError:
        seems = f"its first bytes are {head[:8].hex()}"
    article = "an" if fmt.kind[:1].upper() in "AEIOU" else "a"
    raise ValueError(
        f"{path}: not {article} {fmt.kind} file ({seems}); check the input path or the input format"
    )


def resolve_format(head: bytes, path: str, size: int, fmt: InputFormat | None) -> InputFormat:
    """The format of a file starting with `head`: told from those bytes (`fmt` None), or `fmt`
    checked against them (an empty file is not checked: the format decides what it holds)."""
    if fmt is None:
        return detect_format(head, path)
    if size:
        check_format(fmt, head, path)
    return fmt


def plan_file(
    open_file: Callable[[str], BinaryIO], path: str, size: int, fmt: InputFormat | None, split_bytes: int
) -> tuple[InputFormat, list[Split]]:
    """The format and the splits of one file (`resolve_format`, then `plan_splits`). The file is
    opened with `open_file` only when needed: a given format that plans from the size alone
    (Avro) is checked by its reader instead."""
    if fmt is not None and not fmt.needs_file_to_plan:
        return fmt, fmt.plan_splits(None, path, size, split_bytes)
    with open_file(path) as f:
        fmt = resolve_format(f.read(HEAD_BYTES), path, size, fmt)
        f.seek(0)
        return fmt, fmt.plan_splits(f if fmt.needs_file_to_plan else None, path, size, split_bytes)


def project_schema(schema: pa.Schema, columns: Sequence[str] | None, path: str) -> pa.Schema:
    """`schema` keeping only `columns`: top-level names matched exactly, else case-insensitively,
    or dotted paths into records (`genreFeatures.term`, through lists too) keeping only those
    nested fields; None keeps everything.

    Raises:
        ValueError: a column or nested field is missing; the message names the file.

    Example:
        >>> schema = pa.schema([("userId", pa.int64()), ("g", pa.list_(pa.struct([("a", pa.int32()), ("b", pa.string())])))])
        >>> project_schema(schema, ["g.B", "USERID"], "f.parquet").names
        ['g', 'userId']
    """
    if columns is None:
        return schema
    resolved = [resolve_column(name, schema.names, path) for name in columns]
    try:
        return project_arrow_schema(schema, resolved)
    except ValueError as err:
        raise ValueError(f"{path}: {err}") from None


def conform_batch(
    batch: pa.RecordBatch | pa.Table, schema: pa.Schema, path: str, safe: bool = True
) -> pa.RecordBatch:
    """`batch` with the columns of `schema` in its order and types (nested fields left out where
    the schema leaves them out); a table is combined into one batch. With `safe=False`, casts
    may truncate (e.g. nanoseconds to microseconds).

    Raises:
        ValueError: a column is missing or does not convert; the message names the file.
    """
    columns = []
    for field in schema:
        column = batch.column(field.name)
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        if not column.type.equals(field.type):
            try:
                column = column.cast(field.type, safe=safe)
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as err:
                raise ValueError(
                    f"{path}: column {field.name!r} ({column.type}) does not read as {field.type}: {err}"
                ) from None
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, schema=schema)
