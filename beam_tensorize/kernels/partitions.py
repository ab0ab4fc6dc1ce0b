"""Hive-style partition folders: `<dir>/<col>=<value>/...`.

Values are turned into folder names the way Hive and Spark do: the value's text (Spark's
CAST to STRING: integers in decimal, floats as Java prints them, `true`/`false`), with
control characters and ``"#%'*/:=?\\{[]^`` (and DEL) written as `%XX` (upper-case hex). A
null or empty value goes to the folder `__HIVE_DEFAULT_PARTITION__`. Reading folder names
back undoes the escaping and types each partition column by inference (int64, then float64,
else string), as Spark's partition discovery does.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_tensorize.kernels.features.conversion import FeatureLayout
from beam_tensorize.kernels.features.expressions import java_double_string
from beam_tensorize.kernels.features.hashing import Avro2TFMd5Hash

__all__ = [
    "HIVE_DEFAULT_PARTITION",
    "PARTITION_FOLDER_COLUMN",
    "PARTITION_ID_COLUMN",
    "escape_partition_value",
    "infer_partition_column",
    "partition_column",
    "parse_partition_path",
    "partition_path",
    "partition_value_strings",
    "split_by_partition",
    "unescape_partition_value",
    "with_partition_ids",
]

#: Folder name of null (and empty string) partition values.
HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"

_ESCAPED = frozenset(chr(c) for c in range(0x20)) | frozenset("\"#%'*/:=?\\\x7f{[]^")
_ESCAPE = re.compile("%([0-9A-Fa-f]{2})")
_INT64 = re.compile(r"[+-]?\d+")


def escape_partition_value(value: str | None) -> str:
    """The folder-name form of one partition value (Hive's `escapePathName`).

    Example:
        >>> escape_partition_value("a/b=c%")
        'a%2Fb%3Dc%25'
        >>> escape_partition_value(None)
        '__HIVE_DEFAULT_PARTITION__'
        >>> escape_partition_value("__HIVE_DEFAULT_PARTITION__")  # the text itself, not a null
        '%5F_HIVE_DEFAULT_PARTITION__'
    """
    if value is None or value == "":
        return HIVE_DEFAULT_PARTITION
    if value == HIVE_DEFAULT_PARTITION:  # the null's folder name as a real value: escaped, so
        return "%5F" + value[1:]  # it reads back as itself (Spark and Hive unescape %5F too)
    if not any(c in _ESCAPED for c in value):
        return value
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in value)


def unescape_partition_value(text: str) -> str | None:
    """Undoes `escape_partition_value` (`__HIVE_DEFAULT_PARTITION__` gives None).

    Example:
        >>> unescape_partition_value("a%2Fb%3Dc%25")
        'a/b=c%'
    """
    if text == HIVE_DEFAULT_PARTITION:
        return None
    return _ESCAPE.sub(lambda m: chr(int(m.group(1), 16)), text)


def partition_path(names: Sequence[str], values: Sequence[str | None]) -> str:
    """`col=value` folders, nested in the order of `names` (values as `partition_value_strings`).

    Example:
        >>> partition_path(["country", "day"], ["NL", None])
        'country=NL/day=__HIVE_DEFAULT_PARTITION__'
    """
    return "/".join(
        f"{escape_partition_value(name)}={escape_partition_value(value)}"
        for name, value in zip(names, values, strict=True)
    )


def parse_partition_path(relative_dir: str) -> list[tuple[str, str | None]]:
    """The `(column, value)` pairs of the `col=value` folders in a relative folder path.

    Folders without `=` are ignored (e.g. a split folder); values stay text (None for the
    default partition).

    Example:
        >>> parse_partition_path("country=NL/day=__HIVE_DEFAULT_PARTITION__")
        [('country', 'NL'), ('day', None)]
    """
    pairs = []
    for part in relative_dir.replace("\\", "/").split("/"):
        name, sep, value = part.partition("=")
        if sep and name:
            pairs.append((unescape_partition_value(name), unescape_partition_value(value)))
    return pairs


def _float_strings(array: pa.Array) -> list[str | None]:
    values = array.to_numpy(zero_copy_only=False)
    valid = array.is_valid().to_numpy(zero_copy_only=False)
    if pa.types.is_float64(array.type):
        return [java_double_string(float(v)) if ok else None for v, ok in zip(values, valid, strict=True)]
    # Java's Float.toString: the shortest digits that identify the float32 value.
    return [
        java_double_string(float(str(v))) if ok else None
        for v, ok in zip(values.astype(np.float32), valid, strict=True)
    ]


def partition_value_strings(name: str, array: pa.Array) -> list[str | None]:
    """Each row's partition value as text (Spark's CAST to STRING), None for null.

    Raises:
        TypeError: the column cannot name a folder (lists, structs, ...).

    Example:
        >>> partition_value_strings("x", pa.array([1.0, None, 1e20]))
        ['1.0', None, '1.0E20']
    """
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    if pa.types.is_dictionary(array.type):
        array = array.dictionary_decode()
    typ = array.type
    if pa.types.is_floating(typ):
        return _float_strings(array.cast(pa.float64()) if pa.types.is_float16(typ) else array)
    if pa.types.is_binary(typ) or pa.types.is_large_binary(typ) or pa.types.is_fixed_size_binary(typ):
        try:
            array = array.cast(pa.large_string())
        except pa.ArrowInvalid as error:
            raise TypeError(f"partition column {name!r} holds bytes that are not UTF-8") from error
    elif not (
        pa.types.is_integer(typ)
        or pa.types.is_boolean(typ)
        or pa.types.is_string(typ)
        or pa.types.is_large_string(typ)
        or pa.types.is_string_view(typ)
        or pa.types.is_date(typ)
    ):
        raise TypeError(
            f"partition column {name!r} has type {typ}; partition values must be integers, "
            "floats, booleans, strings or dates"
        )
    return pc.cast(array, pa.large_string()).to_pylist()


def split_by_partition(batch: pa.RecordBatch, names: Sequence[str]) -> list[tuple[str, pa.RecordBatch]]:
    """Splits a batch by its partition columns' values; the parts no longer hold them.

    Returns:
        `(partition path, rows)` pairs ordered by partition path; rows keep their order.

    Raises:
        KeyError: a partition column is missing from the batch.

    Example:
        >>> batch = pa.RecordBatch.from_pydict({"k": ["b", "a", "b"], "v": [1, 2, 3]})
        >>> [(path, part.to_pydict()) for path, part in split_by_partition(batch, ["k"])]
        [('k=a', {'v': [2]}), ('k=b', {'v': [1, 3]})]
    """
    missing = [n for n in names if n not in batch.schema.names]
    if missing:
        raise KeyError(f"partition column(s) {missing} not among the columns {batch.schema.names}")
    rest = batch.select([n for n in batch.schema.names if n not in set(names)])
    if not names:
        return [("", rest)]
    if batch.num_rows == 0:
        return []
    keys = list(zip(*(partition_value_strings(n, batch.column(n)) for n in names), strict=True))
    path_of = {key: partition_path(names, key) for key in set(keys)}  # escaped once per value
    row_paths = np.array([path_of[key] for key in keys], dtype=object)
    order = np.argsort(row_paths, kind="stable")  # by path; rows keep their order
    ordered = row_paths[order]
    cuts = [0, *(np.flatnonzero(ordered[1:] != ordered[:-1]) + 1).tolist(), len(ordered)]
    return [(ordered[a], rest.take(pa.array(order[a:b]))) for a, b in itertools.pairwise(cuts)]


def infer_partition_column(values: Iterable[str | None]) -> pa.Array:
    """Types partition values read from folder names: int64, else float64, else string.

    Example:
        >>> infer_partition_column(["1", None, "20"]).type
        DataType(int64)
        >>> infer_partition_column(["1", "2.5"]).to_pylist()
        [1.0, 2.5]
    """
    values = list(values)
    present = [v for v in values if v is not None]
    if present and all(_INT64.fullmatch(v) and -(2**63) <= int(v) < 2**63 for v in present):
        return pa.array([None if v is None else int(v) for v in values], pa.int64())
    if present and all(_is_float(v) for v in present):
        return pa.array([None if v is None else float(v) for v in values], pa.float64())
    return pa.array(values, pa.string())


def _is_float(text: str) -> bool:
    if text.strip() != text or text.lower() in ("nan", "inf", "-inf", "+inf", "infinity"):
        return text in ("NaN", "Infinity", "-Infinity")
    try:
        float(text)
    except ValueError:
        return False
    return True


def partition_column(name: str, value: str | None, typ: pa.DataType, rows: int) -> pa.Array:
    """A column repeating one partition value (text from a folder name) as `typ`.

    Raises:
        ValueError: the text is not a value of `typ`.

    Example:
        >>> partition_column("day", "7", pa.int64(), 2).to_pylist()
        [7, 7]
    """
    if value is None:
        return pa.nulls(rows, typ)
    try:
        if pa.types.is_integer(typ):
            scalar = pa.scalar(int(value), typ)
        elif pa.types.is_floating(typ):
            scalar = pa.scalar(float(value), typ)
        elif pa.types.is_boolean(typ):
            if value not in ("true", "false"):
                raise ValueError("not true or false")
            scalar = pa.scalar(value == "true")
        else:
            scalar = pa.scalar(value, pa.string()).cast(typ)
    except (ValueError, OverflowError, pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
        raise ValueError(f"partition folder {name}={value}: the value is not a {typ} ({error})") from None
    return pa.repeat(scalar, rows)


#: Avro2TF's partition id column (PartitionIdGeneration), written in the records.
PARTITION_ID_COLUMN = "partitionId"
#: How it is stored: a scalar `int` (TensorMetadataGeneration lists it so, shape `[]`).
PARTITION_ID_LAYOUT = FeatureLayout.for_tensor(PARTITION_ID_COLUMN, "int", (), False)
#: The folder column of partition ids: `partition=<id>/`, as Avro2TF writes them.
PARTITION_FOLDER_COLUMN = "partition"


def with_partition_ids(batch: pa.RecordBatch, field: str, num_partitions: int) -> pa.RecordBatch:
    """`batch` with Avro2TF's partition id of each row: the MD5 of the text of column `field`
    (Spark's CAST to STRING; a null is the text `null`, as Avro2TF's Scala code makes it)
    followed by Avro2TF's global salt, modulo `num_partitions`; as `partitionId` (int64, kept in
    the records) and `partition` (the folder column).

    Raises:
        KeyError: `field` is not a column of `batch`.
        TypeError: the column cannot be written as text (lists, structs).

    Example:
        >>> out = with_partition_ids(pa.RecordBatch.from_pydict({"user": [1, 2, None]}), "user", 10)
        >>> out.column("partitionId").to_pylist() == out.column("partition").to_pylist()
        True
    """
    if field not in batch.schema.names:
        raise KeyError(f"partition field {field!r} is not among the columns {batch.schema.names}")
    texts = ["null" if v is None else v for v in partition_value_strings(field, batch.column(field))]
    ids = Avro2TFMd5Hash().buckets(
        pa.array([t.encode("utf-8") for t in texts], pa.binary()), num_partitions, 0, 1
    )
    column = pa.array(ids, pa.int64())
    return batch.append_column(PARTITION_ID_COLUMN, column).append_column(PARTITION_FOLDER_COLUMN, column)
