"""One schema for the files of one input: the types of a column across files are unified as
Avro's and Parquet's schema evolution promote them, or the files are refused.

Rules (applied to top-level columns and, recursively, to list items and struct fields):

* the same type: kept; a null-typed column takes the other's type; nullability is unioned;
* integers widen: int8 -> int16 -> int32 -> int64 (an unsigned type fits a wider signed one);
* float32 and float64 meet as float64 (Avro's float -> double); integers and floats do not
  meet: read as floats, the integers' text would change (5 -> "5.0"), and with it their hashes
  and feature-list entries, so such files are refused with a message naming both;
* string and large_string, binary and large_binary, list and large_list meet as the large one;
* structs keep the fields of both (a field one file lacks is null there), each unified;
* anything else (a number and a string, a date and a timestamp, two decimals) is a clash: the
  input cannot be read as one table without changing what the values mean.

Example:
    >>> a = pa.schema([("movieId", pa.int32()), ("score", pa.float32())])
    >>> b = pa.schema([("movieId", pa.int64()), ("score", pa.float64())])
    >>> unify_schemas([("a.avro", a), ("b.avro", b)])
    movieId: int64
    score: double
    >>> unify_schemas([("a.avro", a), ("c.avro", pa.schema([("movieId", pa.string()), ("score", pa.float32())]))])
    Traceback (most recent call last):
    ...
    ValueError: column 'movieId' is int32 in a.avro but string in c.avro: the input files cannot be read as one table; convert one of them (or read them in separate jobs), or read only one of them
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

__all__ = ["unify_schemas", "unify_types"]

_SIGNED = [pa.int8(), pa.int16(), pa.int32(), pa.int64()]
_UNSIGNED_FITS = {8: pa.int16(), 16: pa.int32(), 32: pa.int64()}


def _int_rank(t: pa.DataType) -> pa.DataType | None:
    """A signed integer type holding every value of integer type `t` (None: none does)."""
    if pa.types.is_signed_integer(t):
        return t
    if pa.types.is_unsigned_integer(t):
        return _UNSIGNED_FITS.get(t.bit_width)
    return None


def unify_types(a: pa.DataType, b: pa.DataType) -> pa.DataType | None:
    """The type both `a` and `b` read as without changing any value's meaning, or None."""
    if a.equals(b):
        return a
    if pa.types.is_null(a):
        return b
    if pa.types.is_null(b):
        return a
    if pa.types.is_integer(a) and pa.types.is_integer(b):
        ra, rb = _int_rank(a), _int_rank(b)
        if ra is None or rb is None:
            return None
        return max(ra, rb, key=lambda t: t.bit_width)
    if pa.types.is_floating(a) and pa.types.is_floating(b):
        return pa.float64()
    for small, large in ((pa.string(), pa.large_string()), (pa.binary(), pa.large_binary())):
        if {str(a), str(b)} == {str(small), str(large)}:
            return large
    lists = (pa.types.is_list, pa.types.is_large_list)
    if any(f(a) for f in lists) and any(f(b) for f in lists):
        item = unify_types(a.value_type, b.value_type)
        if item is None:
            return None
        field = pa.field(a.value_field.name, item, a.value_field.nullable or b.value_field.nullable)
        return pa.list_(field) if pa.types.is_list(a) and pa.types.is_list(b) else pa.large_list(field)
    if pa.types.is_struct(a) and pa.types.is_struct(b):
        fields = {a.field(i).name: a.field(i) for i in range(a.num_fields)}
        for i in range(b.num_fields):
            other = b.field(i)
            mine = fields.get(other.name)
            if mine is None:
                fields[other.name] = other.with_nullable(True)
                continue
            t = unify_types(mine.type, other.type)
            if t is None:
                return None
            fields[other.name] = pa.field(other.name, t, mine.nullable or other.nullable)
        names_b = {b.field(i).name for i in range(b.num_fields)}
        return pa.struct([f if f.name in names_b else f.with_nullable(True) for f in fields.values()])
    return None


def _integer_and_float(a: pa.DataType, b: pa.DataType) -> bool:
    """One is an integer type and the other a float type (or lists of them)."""
    while (pa.types.is_list(a) or pa.types.is_large_list(a)) and (
        pa.types.is_list(b) or pa.types.is_large_list(b)
    ):
        a, b = a.value_type, b.value_type
    return {pa.types.is_integer(a), pa.types.is_integer(b)} == {True, False} and (
        pa.types.is_floating(a) or pa.types.is_floating(b)
    )


def unify_schemas(schemas: Sequence[tuple[str, pa.Schema]]) -> pa.Schema:
    """One schema for files with these schemas (`(path, schema)`, in file order): the first
    file's column order, each column's types unified (`unify_types`), nullable where any file's
    is (or where a file lacks it).

    Raises:
        ValueError: two files' types of a column do not unify; the message names the column,
            both types and both files.
    """
    if not schemas:
        raise ValueError("no schema to unify")
    first_path, first = schemas[0]
    fields = {f.name: (f, first_path) for f in first}
    for path, schema in schemas[1:]:
        for field in schema:
            if field.name not in fields:
                fields[field.name] = (field.with_nullable(True), path)
                continue
            mine, where = fields[field.name]
            t = unify_types(mine.type, field.type)
            if t is None and _integer_and_float(mine.type, field.type):
                raise ValueError(
                    f"column {field.name!r} is {mine.type} in {where} but {field.type} in {path}: read as "
                    "one table its integers would become floats (5 -> 5.0), which changes their text and "
                    "so their hashes and feature-list entries; write the column with one type in every "
                    "file, or read the files in separate jobs"
                )
            if t is None:
                raise ValueError(
                    f"column {field.name!r} is {mine.type} in {where} but {field.type} in {path}: the "
                    "input files cannot be read as one table; convert one of them (or read them in "
                    "separate jobs), or read only one of them"
                )
            metadata = mine.metadata or field.metadata  # e.g. a default one file's schema declares
            fields[field.name] = (pa.field(field.name, t, mine.nullable or field.nullable, metadata), where)
        missing = set(fields) - set(schema.names)
        for name in missing:
            f, where = fields[name]
            fields[name] = (f.with_nullable(True), where)
    return pa.schema([f for f, _ in fields.values()])
