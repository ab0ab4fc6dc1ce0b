"""`DataFrame`: typed fields of tabular data and their values as tensors, as HybridBackend's
`hb.data.DataFrame` describes them.

A `Field` says what one column holds: a scalar (`ragged_rank` 0), a list of fixed length
(`shape`), or variable-length and nested lists (`ragged_rank` 1, 2, ...). A batch of a list
column is a `DataFrame.Value`: its flat `values` and the `nested_row_splits` of each list
level (outermost first). `DataFrame.parse` turns a dict of such values into what a model takes:
scalars and fixed lists as `tf.Tensor`s, variable-length lists as `tf.SparseTensor`s (or, with
`pad=True`, dense tensors padded with zeros / empty strings).

Example:
    >>> import tensorflow as tf
    >>> ids = DataFrame.Value(tf.constant([1, 2, 3], tf.int64), (tf.constant([0, 2, 2, 3], tf.int64),))
    >>> parsed = DataFrame.parse({"ids": ids, "age": tf.constant([30, 40, 50])})
    >>> tf.sparse.to_dense(parsed["ids"]).numpy().tolist()
    [[1, 2], [0, 0], [3, 0]]
    >>> DataFrame.parse({"ids": ids}, pad=True)["ids"].numpy().tolist()
    [[1, 2], [0, 0], [3, 0]]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np
import tensorflow as tf

__all__ = ["DataFrame"]

#: Physical types a field may have (HybridBackend's list), by name.
_DTYPES = {
    "int64": tf.int64,
    "uint64": tf.uint64,
    "int32": tf.int32,
    "uint32": tf.uint32,
    "int8": tf.int8,
    "uint8": tf.uint8,
    "float64": tf.float64,
    "float32": tf.float32,
    "float16": tf.float16,
    "string": tf.string,
}


class _Value(NamedTuple):
    """A batch of a list column: flat `values` and the row splits of each list level."""

    values: Any
    nested_row_splits: tuple

    def to_ragged(self) -> tf.RaggedTensor:
        return tf.RaggedTensor.from_nested_row_splits(self.values, self.nested_row_splits, validate=False)

    def to_sparse(self) -> tf.SparseTensor:
        """The lists as a `tf.SparseTensor` (dense shape: batch, then the longest list of each
        level)."""
        return self.to_ragged().to_sparse()

    def to_dense(self) -> tf.Tensor:
        """The lists padded with zeros (empty strings) to the longest of each level (a list of
        fixed shape, whose values already have it: those values)."""
        if len(self.nested_row_splits) == 1 and len(self.values.shape) > 1:
            return self.values
        return self.to_ragged().to_tensor()

    to_tensor = to_dense

    def to_list(self) -> list:
        """The lists as Python lists (of a value computed in eager mode or by `Session.run`)."""
        values = self.values.numpy() if hasattr(self.values, "numpy") else np.asarray(self.values)
        result = values.tolist()
        for splits in reversed(self.nested_row_splits):
            splits = splits.numpy() if hasattr(splits, "numpy") else np.asarray(splits)
            result = [result[splits[i] : splits[i + 1]] for i in range(len(splits) - 1)]
        return result


class DataFrame:
    """Typed fields of tabular data and the conversion of their batches into tensors."""

    Value = _Value

    class Field:
        """One column: `name`, `dtype` (one of `DataFrame.dtypes()`, or None to take the file's),
        `ragged_rank` (0 scalar, 1 list, 2 list of lists, ...; None to take the file's) and
        `shape` (the fixed length of each list, e.g. `[4]`: the batch becomes `[batch, 4]`) and
        `default_value` (HybridBackend's: the field is not read, every row holds this value; a
        `tf.SparseTensor` is one row's sparse value).

        Raises:
            ValueError: an unknown dtype, a negative ragged rank, or a shape with a ragged rank
                other than 1 (a fixed shape describes the values of a one-level list).
        """

        def __init__(
            self,
            name: str,
            dtype: Any = None,
            ragged_rank: int | None = None,
            shape: Sequence[int] | None = None,
            default_value: Any = None,
        ):
            if not isinstance(name, str) or not name:
                raise ValueError(f"a field needs a column name, got {name!r}")
            if dtype is not None:
                dtype = _as_dtype(dtype, name)
            if ragged_rank is not None and (not isinstance(ragged_rank, int) or ragged_rank < 0):
                raise ValueError(f"field {name!r}: ragged_rank must be 0 or more, got {ragged_rank!r}")
            if shape is not None:
                shape = [int(d) for d in shape]
                if any(d < 1 for d in shape):
                    raise ValueError(f"field {name!r}: shape must hold positive lengths, got {shape}")
                if ragged_rank not in (None, 1):
                    raise ValueError(f"field {name!r}: a shape describes a one-level list (ragged_rank 1)")
                ragged_rank = 1
            self.name = name
            self.dtype = dtype
            self.ragged_rank = ragged_rank
            self.shape = shape
            self.default_value = default_value

        def __repr__(self) -> str:
            default = "" if self.default_value is None else f", default_value={self.default_value!r}"
            return (
                f"DataFrame.Field({self.name!r}, dtype={self.dtype!r}, ragged_rank={self.ragged_rank}, "
                f"shape={self.shape}{default})"
            )

        def __eq__(self, other) -> bool:
            if not isinstance(other, DataFrame.Field):
                return False
            mine, theirs = dict(vars(self)), dict(vars(other))
            # defaults may be tensors (no plain ==): compared by what they print
            return repr(mine.pop("default_value")) == repr(theirs.pop("default_value")) and mine == theirs

    @staticmethod
    def dtypes() -> tuple[str, ...]:
        """The physical types fields may have."""
        return tuple(_DTYPES)

    @staticmethod
    def parse(features: Mapping[str, Any], pad: bool | Sequence[str] = False, fields=None) -> dict:
        """`features` with every `Value` as a `tf.SparseTensor`, or padded dense with `pad`
        (True for all, or the names to pad); a value whose `Field` has a `shape` becomes a dense
        `[batch, *shape]` tensor. Other entries pass through.

        Raises:
            tf.errors.InvalidArgumentError: a fixed-shape field holds lists of another length
                (the message names the field).
        """
        shapes = {f.name: f.shape for f in fields or () if f.shape}
        padded = set(features) if pad is True else set(pad or ())
        out = {}
        for name, value in features.items():
            if not isinstance(value, _Value):
                out[name] = value
            elif len(value.nested_row_splits) == 1 and len(value.values.shape) > 1:
                out[name] = value.values  # a list of fixed shape, already [rows, *shape]
            elif name in shapes:
                out[name] = _fixed(name, value, shapes[name])
            elif name in padded:
                out[name] = value.to_dense()
            else:
                out[name] = value.to_sparse()
        return out

    @staticmethod
    def to_sparse(features: Mapping[str, Any]) -> dict:
        """`features` with every `Value` as a `tf.SparseTensor`."""
        return DataFrame.parse(features)

    @staticmethod
    def unbatch_and_to_sparse(features: Mapping[str, Any]) -> dict:
        """Like `to_sparse`, for the values of one row (after `Dataset.unbatch()`): a list
        becomes a rank-1 (or deeper) `tf.SparseTensor` without the batch dimension."""
        out = {}
        for name, value in features.items():
            if isinstance(value, _Value):
                out[name] = tf.sparse.reshape(value.to_sparse(), tf.shape(value.to_sparse(), tf.int64)[1:])
            else:
                out[name] = value
        return out


def _as_dtype(dtype: Any, name: str) -> tf.DType:
    if isinstance(dtype, str):
        if dtype not in _DTYPES:
            raise ValueError(f"field {name!r}: dtype {dtype!r} is not one of {', '.join(_DTYPES)}")
        return _DTYPES[dtype]
    try:
        resolved = tf.as_dtype(np.dtype(dtype) if not isinstance(dtype, tf.DType) else dtype)
    except TypeError:
        resolved = None
    if resolved is None or resolved not in _DTYPES.values():
        raise ValueError(f"field {name!r}: dtype {dtype!r} is not one of {', '.join(_DTYPES)}")
    return resolved


def _fixed(name: str, value: _Value, shape: Sequence[int]) -> tf.Tensor:
    """A one-level list of fixed length as a dense `[batch, *shape]` tensor."""
    splits = value.nested_row_splits[0]
    length = int(np.prod(shape))
    lengths = splits[1:] - splits[:-1]
    check = tf.debugging.assert_equal(
        lengths,
        tf.cast(length, lengths.dtype),
        message=f"field {name!r} has shape {list(shape)}, but a row holds another number of values",
    )
    with tf.control_dependencies([check]):  # in graph mode (tf.data), before the reshape
        return tf.reshape(tf.identity(value.values), [-1, *shape])
