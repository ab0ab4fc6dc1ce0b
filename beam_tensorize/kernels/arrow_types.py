"""Arrow type helpers every kernel shares: list types, depth and leaf, offsets and lengths of
list arrays, and column projection (`project_arrow_schema`, `resolve_column`).

Example:
    >>> t = pa.list_(pa.large_list(pa.string()))
    >>> is_list_type(t), list_depth(t), leaf_type(t)
    (True, 2, DataType(string))
    >>> list_lengths(pa.array([[1, 2], None, []])).tolist()
    [2, 0, 0]
"""

from __future__ import annotations

import json
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

__all__ = [
    "DEFAULT_BATCH_ROWS",
    "DEFAULT_KEY",
    "as_large_list",
    "binary_offsets",
    "default_column",
    "field_default",
    "check_columns",
    "holds_one_value",
    "is_list_type",
    "leaf_type",
    "list_depth",
    "list_lengths",
    "list_offsets",
    "project_arrow_schema",
    "resolve_column",
]

#: Rows per Arrow record batch the readers gather by default (every input format, the
#: TFRecord reader, the CLI's `--batch_rows`, the Spark sources' `batchRows`).
DEFAULT_BATCH_ROWS = 8192


def is_list_type(t: pa.DataType, views: bool = False) -> bool:
    """A list, large list or fixed-size list type (with `views`, list views too)."""
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return True
    return views and (pa.types.is_list_view(t) or pa.types.is_large_list_view(t))


def list_depth(t: pa.DataType) -> int:
    """How many list levels `t` has (0 for a non-list type)."""
    depth = 0
    while is_list_type(t):
        depth, t = depth + 1, t.value_type
    return depth


def leaf_type(t: pa.DataType) -> pa.DataType:
    """The type below every list level of `t`."""
    while is_list_type(t):
        t = t.value_type
    return t


def list_offsets(arr: pa.Array) -> np.ndarray:
    """Offsets of a (large, or fixed-size) list array into what its `flatten()` gives, from 0,
    as int64 numpy (a fixed-size list's null rows have no values there).

    Example:
        >>> list_offsets(pa.array([[1, 2], None, [3, 4]], pa.list_(pa.int64(), 2))).tolist()
        [0, 2, 2, 4]
    """
    if pa.types.is_fixed_size_list(arr.type):
        sizes = np.full(len(arr), arr.type.list_size, dtype=np.int64)
        if arr.null_count:
            sizes[~np.asarray(arr.is_valid(), dtype=bool)] = 0
        return np.concatenate([[0], np.cumsum(sizes)])
    offsets = np.asarray(arr.offsets, dtype=np.int64)
    return offsets - offsets[0] if len(offsets) else offsets


def list_lengths(arr: pa.Array) -> np.ndarray:
    """Entries per row of a (large) list array that `flatten()` yields: 0 for a null row."""
    lengths = np.diff(list_offsets(arr))
    if arr.null_count:
        lengths = np.where(np.asarray(arr.is_valid(), dtype=bool), lengths, 0)
    return lengths


def as_large_list(arr: pa.Array) -> pa.Array:
    """A (fixed-size or not) list array as a `large_list` array."""
    if pa.types.is_large_list(arr.type):
        return arr
    return arr.cast(pa.large_list(arr.type.value_type))


#: Field metadata key: the field's default value as JSON (Avro's `default`), which a file
#: without the field reads as (`default_column`).
DEFAULT_KEY = "default"


def field_default(field: pa.Field):
    """(whether `field` declares a default, the default) from its metadata."""
    meta = field.metadata or {}
    raw = meta.get(DEFAULT_KEY.encode())
    return (False, None) if raw is None else (True, json.loads(raw))


def default_column(field: pa.Field, rows: int, path: str) -> pa.Array:
    """`rows` copies of `field`'s default (Avro schema evolution: a file written before the
    field was added reads as its default).

    Example:
        >>> f = pa.field("rating", pa.float64(), metadata={DEFAULT_KEY: "2.5"})
        >>> default_column(f, 2, "old.avro").to_pylist()
        [2.5, 2.5]
    """
    declared, value = field_default(field)
    if not declared:
        raise ValueError(
            f"{path}: the file has no column {field.name!r}, and the schema that adds it gives no default"
        )
    try:
        return pa.array([value] * rows, type=field.type)
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError) as err:
        raise ValueError(
            f"{path}: the default {value!r} of column {field.name!r} does not read as {field.type}: {err}"
        ) from None


def resolve_column(column: str, available: Sequence[str], path: str) -> str:
    """The top-level name of `column` (a name or dotted path) as the file spells it.

    Names match exactly, else case-insensitively when that is unambiguous.

    Raises:
        ValueError: the file has no such column (the message names the file and its columns).

    Example:
        >>> resolve_column("USERID.x", ["userId", "movieId"], "a.avro")
        'userId.x'
    """
    name, dot, nested = column.partition(".")
    if name not in available:
        folded = [n for n in available if n.lower() == name.lower()]
        if len(folded) != 1:
            raise ValueError(
                f"{path}: the config reads column {name!r}, which this file does not have; "
                f"its columns are: {', '.join(available)}"
            )
        name = folded[0]
    return name + dot + nested


def check_columns(columns: Sequence[str], available: list[str]) -> None:
    if isinstance(columns, str):
        raise TypeError(f"columns must be a sequence of column names, not the string {columns!r}")
    unknown = [c for c in columns if c not in available]
    if unknown:
        raise ValueError(f"unknown column(s) {unknown}; available columns: {available}")
    duplicates = sorted({c for c in columns if list(columns).count(c) > 1})
    if duplicates:
        raise ValueError(f"column(s) {duplicates} requested more than once")


def project_arrow_schema(schema: pa.Schema, columns: Sequence[str] | None) -> pa.Schema:
    """Keeps only the given columns of a schema, in the given order.

    A column is a top-level name, or a dotted path into records (`a.b.c`, through lists of
    records too): then only those nested fields are kept. Avro names contain no dots, so a
    path is never ambiguous. Paths into the same column merge in the column's own field order;
    a path that is a prefix of another keeps the whole of it. Nested names match exactly, else
    case-insensitively.

    Args:
        schema: the full schema.
        columns: column names or dotted paths; None keeps the schema as it is.

    Returns:
        The projected schema (schema-level metadata is kept).

    Raises:
        ValueError: a column or nested field is unknown (the message lists the available ones),
            or a column is repeated.
    """
    if columns is None:
        return schema
    if isinstance(columns, str):
        raise TypeError(f"columns must be a sequence of column names, not the string {columns!r}")
    tops: list[str] = []
    nested: dict[str, list[tuple[str, ...]]] = {}
    for column in columns:
        top, *rest = column.split(".")
        if top not in tops:
            tops.append(top)
        nested.setdefault(top, []).append(tuple(rest))
    check_columns(columns if all("." not in c for c in columns) else tops, schema.names)
    fields = []
    for top in tops:
        field = schema.field(top)
        fields.append(field.with_type(_prune_type(field.type, nested[top], top)))
    return pa.schema(fields, metadata=schema.metadata)


def _prune_type(t: pa.DataType, paths: list[tuple[str, ...]], where: str) -> pa.DataType:
    """`t` keeping only the nested fields on `paths` (an empty path keeps everything)."""
    if any(not p for p in paths):
        return t
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        item = t.value_field
        pruned = item.with_type(_prune_type(item.type, paths, where))
        return pa.list_(pruned) if pa.types.is_list(t) else pa.large_list(pruned)
    if not pa.types.is_struct(t):
        raise ValueError(f"{where} is {t}, not a record: cannot select {'.'.join(paths[0])} in it")
    names = [t.field(i).name for i in range(t.num_fields)]
    wanted: dict[str, list[tuple[str, ...]]] = {}
    for first, *rest in paths:
        if first not in names:
            folded = [n for n in names if n.lower() == first.lower()]
            if len(folded) != 1:
                raise ValueError(f"{where} has no field {first!r}; its fields: {names}")
            first = folded[0]
        wanted.setdefault(first, []).append(tuple(rest))
    return pa.struct(
        [
            t.field(i).with_type(_prune_type(t.field(i).type, wanted[n], f"{where}.{n}"))
            for i, n in enumerate(names)
            if n in wanted
        ]
    )


def holds_one_value(strings: pa.Array) -> bool:
    """Whether a non-empty (large) string or binary array without nulls holds one value only,
    compared as bytes (no hashing).

    Example:
        >>> holds_one_value(pa.array(["Genre", "Genre"])), holds_one_value(pa.array(["a", "b"]))
        (True, False)
    """
    if not len(strings) or strings.null_count:
        return False
    wide = pa.types.is_large_string(strings.type) or pa.types.is_large_binary(strings.type)
    if not (wide or pa.types.is_string(strings.type) or pa.types.is_binary(strings.type)):
        return False
    offsets = np.frombuffer(strings.buffers()[1], np.int64 if wide else np.int32)
    offsets = offsets[strings.offset : strings.offset + len(strings) + 1]
    size = int(offsets[1] - offsets[0])
    if not (np.diff(offsets) == size).all():
        return False
    if size == 0:
        return True
    data = np.frombuffer(strings.buffers()[2], np.uint8)[int(offsets[0]) : int(offsets[-1])]
    return bool((data.reshape(-1, size) == data[:size]).all())


def binary_offsets(array: pa.Array) -> tuple[np.ndarray, pa.Buffer | bytes]:
    """The value offsets of a binary / string array's own rows (`len(array) + 1` of them, int64
    for the large types, else int32; contiguous, not rebased to 0) and its data buffer (b"" when
    it has none), as the C extensions take them.

    Example:
        >>> offsets, data = binary_offsets(pa.array([b"a", b"bc", b"def"]).slice(1))
        >>> offsets.tolist(), offsets.dtype.name, bytes(data)
        ([1, 3, 6], 'int32', b'abcdef')
    """
    large = pa.types.is_large_binary(array.type) or pa.types.is_large_string(array.type)
    buffers = array.buffers()
    if buffers[1] is None:
        offsets = np.zeros(1, np.int64 if large else np.int32)
    else:
        offsets = np.frombuffer(buffers[1], np.int64 if large else np.int32)
        offsets = offsets[array.offset : array.offset + len(array) + 1]
    data = buffers[2] if buffers[2] is not None else b""
    return np.ascontiguousarray(offsets), data
