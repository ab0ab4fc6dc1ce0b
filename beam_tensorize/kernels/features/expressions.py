"""Evaluate parsed `columnExpr` trees on Arrow record batches, column at a time.

Semantics follow Spark SQL (non-ANSI mode) where it matters for features:

* column names resolve exactly, else case-insensitively when that is unambiguous;
* a struct field applied to a list of structs projects it over the list, at any depth;
* `a[i]` is 0-based, `element_at(a, i)` 1-based (negative counts from the end); an index out
  of range gives null; `m['k']` looks a key up in a map;
* `CAST` that cannot convert a value gives null; numbers cast to strings as Spark prints them
  (`1.0`, `1.0E7`);
* `/` always gives a double;
* a string function applied to a list applies to every element.

Example:
    >>> import pyarrow as pa
    >>> from beam_tensorize.config.expr import parse_column_expr
    >>> batch = pa.RecordBatch.from_pydict({"g": [[{"term": "A"}, {"term": "B"}]]})
    >>> evaluate(parse_column_expr("lower(g.term[1])"), batch).to_pylist()
    ['b']
"""

from __future__ import annotations

import decimal
import math

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_tensorize.config.errors import TensorizeError
from beam_tensorize.config.expr import BinaryOp, Cast, Expr, Index, Literal, Path
from beam_tensorize.kernels.arrow_types import as_large_list, is_list_type, list_lengths, list_offsets
from beam_tensorize.kernels.features.text_case import lower_case, upper_case

__all__ = [
    "ExpressionEvalError",
    "as_large_list",
    "evaluate",
    "is_list_type",
    "list_lengths",
    "list_offsets",
    "rewrap_list",
]


class ExpressionEvalError(TensorizeError, ValueError):
    """The expression does not fit the data (unknown field, wrong type)."""


def evaluate(expr: Expr, batch: pa.RecordBatch) -> pa.Array:
    """Evaluate `expr` on every row of `batch`.

    Args:
        expr: a tree from `beam_tensorize.config.expr.parse_column_expr`.
        batch: the input rows.

    Returns:
        One value per row, as an Arrow array of `batch.num_rows` entries.

    Raises:
        ExpressionEvalError: a name does not exist or a value has the wrong type.
    """
    result = _eval(expr, batch)
    if isinstance(result, pa.Scalar):
        return pa.repeat(result, batch.num_rows)
    if isinstance(result, pa.ChunkedArray):
        return result.combine_chunks()
    return result


# --- list helpers ---------------------------------------------------------------------------


def rewrap_list(template: pa.Array, values: pa.Array) -> pa.Array:
    """A list array with `template`'s row structure and nulls around new `values`."""
    offsets = pa.array(list_offsets(template), pa.int64())
    mask = template.is_null() if template.null_count else None
    return pa.LargeListArray.from_arrays(offsets, values, mask=mask)


def _as_var_list(arr: pa.Array) -> pa.Array:
    if pa.types.is_fixed_size_list(arr.type):
        return arr.cast(pa.large_list(arr.type.value_type))
    return arr


# --- evaluation ------------------------------------------------------------------------------


def _eval(expr: Expr, batch: pa.RecordBatch):
    if isinstance(expr, Path):
        return _path(expr.parts, batch)
    if isinstance(expr, Literal):
        return pa.scalar(expr.value)
    if isinstance(expr, Index):
        return _index(_materialize(_eval(expr.base, batch), batch), expr, batch)
    if isinstance(expr, Cast):
        return _elementwise(_eval(expr.operand, batch), lambda a: cast_like_spark(a, expr.to))
    if isinstance(expr, BinaryOp):
        return _binary(expr.op, _eval(expr.left, batch), _eval(expr.right, batch))
    return _func(expr.name, [_eval(a, batch) for a in expr.args], batch)


def _materialize(value, batch: pa.RecordBatch) -> pa.Array:
    if isinstance(value, pa.Scalar):
        return pa.repeat(value, batch.num_rows)
    return value


def _resolve(name: str, names: list[str], where: str) -> int:
    if name in names:
        return names.index(name)
    folded = [i for i, n in enumerate(names) if n.lower() == name.lower()]
    if len(folded) == 1:
        return folded[0]
    raise ExpressionEvalError(
        f"no field {name!r} in {where}; available: {', '.join(names) if names else '(none)'}"
    )


def _path(parts: tuple[str, ...], batch: pa.RecordBatch) -> pa.Array:
    column = batch.column(_resolve(parts[0], batch.schema.names, "the input columns"))
    seen = parts[0]
    for part in parts[1:]:
        column = _field(column, part, seen)
        seen = f"{seen}.{part}"
    return column


def _field(arr: pa.Array, name: str, where: str) -> pa.Array:
    if pa.types.is_struct(arr.type):
        names = [arr.type.field(i).name for i in range(arr.type.num_fields)]
        return pc.struct_field(arr, [_resolve(name, names, repr(where))])
    if is_list_type(arr.type):
        arr = _as_var_list(arr)
        return rewrap_list(arr, _field(arr.flatten(), name, where))
    raise ExpressionEvalError(f"{where!r} is {arr.type}, not a record; cannot take field {name!r}")


def _index(base: pa.Array, expr: Index, batch: pa.RecordBatch) -> pa.Array:
    index = _eval(expr.index, batch)
    if pa.types.is_map(base.type):
        return _map_lookup(base, _materialize(index, batch))
    if not is_list_type(base.type):
        raise ExpressionEvalError(f"cannot index {base.type}: only lists and maps take [ ]")
    base = _as_var_list(base)
    idx = np.asarray(_materialize(index, batch).cast(pa.int64()).fill_null(-(2**62)), np.int64)
    offsets = list_offsets(base)
    lengths = offsets[1:] - offsets[:-1]
    if expr.one_based:
        idx = np.where(idx < 0, lengths + idx, idx - 1)
    valid = (idx >= 0) & (idx < lengths) & ~np.asarray(base.is_null(), dtype=bool)
    positions = pa.array(np.where(valid, offsets[:-1] + idx, 0), mask=~valid)
    return base.flatten().take(positions)


def _map_lookup(base: pa.Array, keys: pa.Array) -> pa.Array:
    offsets = np.asarray(base.offsets, dtype=np.int64)
    offsets = offsets - offsets[0]
    flat_keys = base.keys
    items = base.items
    row_of = np.repeat(np.arange(len(base)), offsets[1:] - offsets[:-1])
    wanted = keys.cast(flat_keys.type).take(pa.array(row_of, pa.int64()))
    hits = np.flatnonzero(np.asarray(pc.equal(flat_keys, wanted).fill_null(False), dtype=bool))
    rows, first = np.unique(row_of[hits], return_index=True)
    picked = np.full(len(base), -1, dtype=np.int64)
    picked[rows] = hits[first]
    found = picked >= 0
    return items.take(pa.array(np.where(found, picked, 0), mask=~found))


def _elementwise(value, fn):
    """Apply `fn` to scalars/flat arrays, or to the leaf values of (nested) lists."""
    if isinstance(value, pa.Scalar):
        return fn(pa.array([value.as_py()], value.type))[0]
    if is_list_type(value.type):
        value = _as_var_list(value)
        return rewrap_list(value, _elementwise(value.flatten(), fn))
    return fn(value)


def _binary(op: str, left, right):
    if op == "||":
        return _func("concat", [left, right], None)
    if op == "/":
        left, right = (_to_float(v) for v in (left, right))
        return pc.divide(left, pc.if_else(pc.equal(right, 0), None, right))
    kernel = {"+": pc.add, "-": pc.subtract, "*": pc.multiply}[op]
    try:
        return kernel(left, right)
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError) as err:
        raise ExpressionEvalError(f"cannot apply {op!r} to {_type(left)} and {_type(right)}") from err


def _type(value) -> pa.DataType:
    return value.type


def _to_float(value):
    if isinstance(value, pa.Scalar):
        return pa.scalar(None if value.as_py() is None else float(value.as_py()), pa.float64())
    return value.cast(pa.float64())


def _func(name: str, args: list, batch: pa.RecordBatch | None):
    string_unary = {
        "lower": lower_case,
        "upper": upper_case,
        "trim": pc.utf8_trim_whitespace,
        "ltrim": pc.utf8_ltrim_whitespace,
        "rtrim": pc.utf8_rtrim_whitespace,
        "length": pc.utf8_length,
    }
    if name in string_unary:
        return _elementwise(args[0], lambda a: string_unary[name](_as_string(a, name)))
    if name == "abs":
        return _elementwise(args[0], pc.abs)
    if name == "size":
        value = args[0]
        if not is_list_type(value.type) and not pa.types.is_map(value.type):
            raise ExpressionEvalError(f"size() needs a list or map, got {value.type}")
        return pc.list_value_length(value).cast(pa.int32())
    if name == "substring":
        start = args[1].as_py()
        length = args[2].as_py() if len(args) > 2 else None
        if not isinstance(start, int) or not (length is None or isinstance(length, int)):
            raise ExpressionEvalError("substring() takes integer literals for position and length")
        begin = start - 1 if start > 0 else start
        stop = None if length is None else begin + length
        if stop is not None and begin < 0 <= stop:
            stop = None
        return _elementwise(args[0], lambda a: pc.utf8_slice_codeunits(_as_string(a, name), begin, stop))
    if name == "concat_ws":
        separator = _as_string_value(args[0], name)
        parts = [
            _join_list(v, separator) if is_list_type(v.type) else _as_string_value(v, name) for v in args[1:]
        ]
        return _concat_ws(separator, parts, batch)
    if name == "concat":
        parts = [_as_string_value(v, name) for v in args]
        return pc.binary_join_element_wise(*parts, "")
    if name == "coalesce":
        return pc.coalesce(*args)
    if name == "split":
        pattern = args[1].as_py()
        return pc.split_pattern_regex(_as_string(args[0], name), pattern)
    raise ExpressionEvalError(f"unsupported function {name}()")


def _concat_ws(separator, parts: list, batch: pa.RecordBatch | None) -> pa.Array:
    """Spark's concat_ws: join the non-null parts of each row with `separator`."""
    rows = max((len(p) for p in parts if not isinstance(p, pa.Scalar)), default=1)
    columns = [pa.repeat(p, rows) if isinstance(p, pa.Scalar) else p for p in parts]
    order = np.arange(rows * len(columns)).reshape(len(columns), rows).T.ravel()
    values = pa.concat_arrays([c.cast(pa.string()) for c in columns]).take(order)
    valid = np.asarray(values.is_valid(), dtype=bool)
    offsets = np.concatenate([[0], np.cumsum(valid.reshape(rows, len(columns)).sum(axis=1))])
    lists = pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), values.filter(valid))
    return pc.binary_join(lists, separator)


def _join_list(arr: pa.Array, separator) -> pa.Array:
    """Spark's concat_ws on an array argument: its non-null elements joined; empty -> skipped."""
    arr = _as_var_list(arr)
    values = _as_string_value(arr.flatten(), "concat_ws")
    valid = np.asarray(values.is_valid(), dtype=bool)
    lengths = list_lengths(arr)
    row_of = np.repeat(np.arange(len(arr)), lengths)[valid]
    counts = np.bincount(row_of, minlength=len(arr))
    offsets = pa.array(np.concatenate([[0], np.cumsum(counts)]).astype(np.int64))
    joined = pc.binary_join(pa.LargeListArray.from_arrays(offsets, values.filter(pa.array(valid))), separator)
    return pc.if_else(pa.array(counts > 0), joined, pa.scalar(None, joined.type))


def _as_string(arr: pa.Array, fn: str) -> pa.Array:
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type):
        return arr
    if pa.types.is_null(arr.type):
        return arr.cast(pa.string())
    raise ExpressionEvalError(f"{fn}() needs strings, got {arr.type}")


def _as_string_value(value, fn: str):
    if isinstance(value, pa.Scalar):
        return value.cast(pa.string()) if value.is_valid else pa.scalar(None, pa.string())
    if pa.types.is_string(value.type) or pa.types.is_large_string(value.type):
        return value
    return cast_like_spark(value, "string")


# --- casts -----------------------------------------------------------------------------------

_CAST_TYPES = {
    "string": pa.string(),
    "long": pa.int64(),
    "int": pa.int32(),
    "float": pa.float32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "bytes": pa.binary(),
}


def cast_like_spark(arr: pa.Array, to: str) -> pa.Array:
    """Cast a flat array as Spark's (non-ANSI) CAST does: unconvertible values become null."""
    target = _CAST_TYPES[to]
    source = arr.type
    if source == target:
        return arr
    if to == "string":
        if pa.types.is_floating(source):
            return _floats_to_spark_strings(arr)
        if pa.types.is_binary(source) or pa.types.is_large_binary(source):
            return _decode_utf8(arr)
        return arr.cast(pa.string())
    if pa.types.is_string(source) or pa.types.is_large_string(source):
        return _parse_strings(arr, to, target)
    if pa.types.is_floating(source) and pa.types.is_integer(target):
        truncated = pc.trunc(arr)
        info = np.iinfo(target.to_pandas_dtype())
        in_range = pc.and_(pc.greater_equal(truncated, info.min), pc.less_equal(truncated, info.max))
        return pc.if_else(in_range, truncated, None).cast(target, safe=False)
    if pa.types.is_integer(source) and pa.types.is_integer(target):
        return arr.cast(target, safe=False)  # Spark wraps around on narrowing
    try:
        return arr.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
        raise ExpressionEvalError(f"cannot CAST {source} AS {to.upper()}") from err


def _decode_utf8(arr: pa.Array) -> pa.Array:
    try:
        return arr.cast(pa.string())
    except pa.ArrowInvalid:
        values = [None if v is None else v.decode("utf-8", "replace") for v in arr.to_pylist()]
        return pa.array(values, pa.string())


def _parse_strings(arr: pa.Array, to: str, target: pa.DataType) -> pa.Array:
    trimmed = pc.utf8_trim_whitespace(arr)
    try:
        return trimmed.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        pass
    # Some values do not parse: convert the distinct values one by one, unparsable -> null.
    uniques = pc.unique(trimmed)
    parsed = pa.array([_parse_one(v, to) for v in uniques.to_pylist()], target)
    return parsed.take(pc.index_in(trimmed, uniques))


def _parse_one(text: str | None, to: str):
    if text is None:
        return None
    if to == "boolean":
        return {
            "true": True,
            "t": True,
            "yes": True,
            "y": True,
            "1": True,
            "false": False,
            "f": False,
            "no": False,
            "n": False,
            "0": False,
        }.get(text.lower())
    if to == "bytes":
        return text.encode()
    try:
        number = float(text)
    except ValueError:
        return None
    if to in ("float", "double"):
        return number
    try:
        whole = int(text)
    except ValueError:
        return None  # Spark does not cast '1.5' to an integer type
    bits = 64 if to == "long" else 32
    return whole if -(2 ** (bits - 1)) <= whole < 2 ** (bits - 1) else None


def _floats_to_spark_strings(arr: pa.Array) -> pa.Array:
    uniques = pc.unique(arr)
    values = uniques.to_pylist()
    if arr.type != pa.float64():  # Java prints a float with the fewest digits that round-trip it
        values = [None if v is None else float(str(np.float32(v))) for v in values]
    texts = [None if v is None else java_double_string(v) for v in values]
    return pa.array(texts, pa.string()).take(pc.index_in(arr, uniques, skip_nulls=False))


def java_double_string(value: float) -> str:
    """Format a float as Java's `Double.toString` does (what Spark's CAST to STRING gives)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0:
        return "-0.0" if math.copysign(1.0, value) < 0 else "0.0"
    sign, digit_tuple, exponent = decimal.Decimal(repr(float(value))).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    point = len(digit_tuple) + exponent  # digits before the decimal point
    prefix = "-" if sign else ""
    if 1e-3 <= abs(value) < 1e7:
        if point <= 0:
            return f"{prefix}0.{'0' * -point}{digits}"
        whole, frac = digits[:point].ljust(point, "0"), digits[point:]
        return f"{prefix}{whole}.{frac or '0'}"
    return f"{prefix}{digits[0]}.{digits[1:] or '0'}E{point - 1}"
