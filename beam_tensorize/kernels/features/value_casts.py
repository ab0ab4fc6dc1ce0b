"""Cast a tensor's flat values to the list type of its Example feature (`int64`, `float32` or
bytes), telling which values do not fit (overflow, a fraction for an integer dtype, ...); a
column no value of which fits raises `FeatureDataError`, with what to do about it.

Example:
    >>> import pyarrow as pa
    >>> from beam_tensorize.kernels.features.layouts import FeatureLayout
    >>> flagged = []
    >>> layout = FeatureLayout.for_tensor("x", "long", (), False)
    >>> ints = cast_values(pa.array([1.0, 2.5]), layout, lambda bad, why: flagged.append((bad.tolist(), why)))
    >>> ints.to_pylist(), flagged
    ([1, 0], [([False, True], 'value is not a whole number fitting dtype long')])
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pyarrow as pa

from beam_tensorize.kernels.features.expressions import cast_like_spark
from beam_tensorize.kernels.features.layouts import FeatureDataError, FeatureLayout

__all__ = ["cast_values"]

#: Told the values that do not fit (a boolean mask over them) and why.
Flag = Callable[[np.ndarray, str], None]


def cast_values(values: pa.Array, layout: FeatureLayout, flag: Flag) -> pa.Array:
    """Cast flat values to the Example list type of `layout`; `flag` gets those that do not fit
    (they are cast anyway: the caller leaves their rows out).

    Raises:
        FeatureDataError: the values' type does not fit the tensor's dtype at all.
    """
    source = values.type
    if layout.value_type == "string":
        return _to_bytes(values, layout)
    if pa.types.is_string(source) or pa.types.is_large_string(source) or pa.types.is_binary(source):
        raise FeatureDataError(
            f"tensor {layout.name!r}: dtype {layout.dtype} with string input needs a feature list or "
            "hashing, which this version does not support yet"
        )
    if layout.dtype == "boolean":
        return _to_boolean(values, layout, flag)
    if layout.value_type == "int64":
        return _to_int64(values, layout, flag)
    return _to_float32(values, layout, flag)


def _to_bytes(values: pa.Array, layout: FeatureLayout) -> pa.Array:
    source, name = values.type, layout.name
    if pa.types.is_fixed_size_binary(source):
        return values.cast(pa.binary())
    if not (
        pa.types.is_string(source)
        or pa.types.is_large_string(source)
        or pa.types.is_binary(source)
        or pa.types.is_large_binary(source)
    ):
        if layout.dtype == "bytes":
            raise FeatureDataError(f"tensor {name!r}: dtype bytes needs binary or string input, got {source}")
        try:
            values = cast_like_spark(values, "string")
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError) as err:
            union = pa.types.is_struct(source) and source.num_fields and source.field(0).name == "member0"
            members = ", ".join(f"{f.name}: {f.type}" for f in source) if union else ""
            hint = (
                f"it is an Avro union of several types ({members}): pick one in the columnExpr "
                "(`<column>.member0`, ...)"
                if union
                else f"{err}"
            )
            raise FeatureDataError(
                f"tensor {name!r}: dtype {layout.dtype} cannot take {source} input; {hint}"
            ) from None
    return values.cast(pa.large_binary())


def _to_boolean(values: pa.Array, layout: FeatureLayout, flag: Flag) -> pa.Array:
    source = values.type
    if pa.types.is_boolean(source):
        return values.cast(pa.int64())
    if pa.types.is_integer(source):
        flag(~np.isin(np.asarray(values), [0, 1]), "boolean tensor holds a value other than 0/1")
        return values.cast(pa.int64())
    raise FeatureDataError(f"tensor {layout.name!r}: dtype boolean needs boolean input, got {source}")


def _to_int64(values: pa.Array, layout: FeatureLayout, flag: Flag) -> pa.Array:
    source = values.type
    if pa.types.is_boolean(source):
        return values.cast(pa.int64())
    if pa.types.is_decimal(source):
        values, source = values.cast(pa.float64()), pa.float64()
    if pa.types.is_floating(source):
        as_float = np.asarray(values.cast(pa.float64()))
        with np.errstate(invalid="ignore"):
            fractional = ~np.isfinite(as_float) | (np.trunc(as_float) != as_float)
            fractional |= np.abs(as_float) >= 2.0**63
        flag(fractional, f"value is not a whole number fitting dtype {layout.dtype}")
        values = pa.array(np.where(fractional, 0, as_float).astype(np.int64))
    if not pa.types.is_integer(values.type):
        raise FeatureDataError(
            f"tensor {layout.name!r}: dtype {layout.dtype} needs numbers, got {source}{_what_to_do(source)}"
        )
    if layout.dtype == "int":
        as_int = np.asarray(values.cast(pa.int64(), safe=False))
        flag((as_int < -(2**31)) | (as_int >= 2**31), "value overflows dtype int (32 bits)")
    if pa.types.is_uint64(values.type):
        big = np.asarray(values) >= 2**63
        flag(big, "value overflows dtype long (64 bits)")
    return values.cast(pa.int64(), safe=False)


def _to_float32(values: pa.Array, layout: FeatureLayout, flag: Flag) -> pa.Array:
    source = values.type
    if pa.types.is_boolean(source) or pa.types.is_integer(source) or pa.types.is_decimal(source):
        # Spark casts a long to a float rounding to the nearest (Avro2TF labels hold 2e18 job ids).
        return values.cast(pa.float64(), safe=False).cast(pa.float32(), safe=False)
    if not pa.types.is_floating(source):
        raise FeatureDataError(
            f"tensor {layout.name!r}: dtype {layout.dtype} needs numbers, got {source}{_what_to_do(source)}"
        )
    as_float = np.asarray(values.cast(pa.float64()))
    limit = np.finfo(np.float32).max
    # two passes without temporaries; a NaN (or null), an infinity or an overflow: look closer
    if len(as_float) and not (-limit <= as_float.min() and as_float.max() <= limit):
        with np.errstate(invalid="ignore"):
            overflow = np.isfinite(as_float) & (np.abs(as_float) > limit)
        flag(overflow, "value overflows a 32-bit float")
    return values.cast(pa.float32(), safe=False)


def _what_to_do(source: pa.DataType) -> str:
    """The fix for a column a numeric tensor cannot hold, as the end of the error message."""
    if pa.types.is_struct(source) and all(
        source.field(i).name == f"member{i}" for i in range(source.num_fields)
    ):
        return (
            "; the input column is a union of several types (Avro ['null', 'string', 'long'] and the "
            "like): pick one branch in the columnExpr (e.g. x.member1) or CAST it"
        )
    if pa.types.is_string(source) or pa.types.is_large_string(source) or pa.types.is_binary(source):
        return "; CAST it in the columnExpr (e.g. CAST(x AS DOUBLE)) or give the tensor dtype string"
    return "; select a field of it in the columnExpr, CAST it, or give the tensor another dtype"
