"""How each tensor is stored in a tf.train.Example (`FeatureLayout`), chosen from its config
alone (so the metadata can be written without looking at data). There are three layouts:

* ``fixed_len`` — every dimension known (`shape` `[]`, `[4]`, `[2, 3]`): feature `<name>`
  holds the flattened values; parse with `tf.io.FixedLenFeature(shape, dtype)`.
* ``ragged`` — some dimension is `-1`: feature `<name>` holds the flattened values and, for
  every inner dimension `i >= 1` that is `-1`, feature `<name>/row_lengths_<i>` holds the
  lengths of the lists at that depth; parse with `tf.io.RaggedFeature` (partitions
  `RowLengths` / `UniformRowLength`).
* ``sparse`` — `isSparse` or dtype `sparseVector`: features `<name>/indices` (int64) and
  `<name>/values` (float); parse with `tf.io.SparseFeature` when the dense size is known.

Example:
    >>> FeatureLayout.for_tensor("x", "long", (-1, -1), False).feature_keys()
    ['x', 'x/row_lengths_1']
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pyarrow as pa

from beam_tensorize.config.errors import TensorizeError
from beam_tensorize.config.model import TensorConfig
from beam_tensorize.kernels.arrow_types import leaf_type, list_depth

__all__ = [
    "DENSE_VECTOR_KEY",
    "FeatureDataError",
    "FeatureLayout",
    "is_hashed_ntv",
    "layout_for_column",
    "layout_of",
]

#: Field metadata marking a column that a transform turned into a dense vector whose size is
#: known only at run time (an NTV tensor with `isSparse: false`): stored with shape [-1].
DENSE_VECTOR_KEY = b"beam_tensorize.dense_vector"

_VALUE_TYPES = {
    "int": "int64",
    "long": "int64",
    "boolean": "int64",
    "float": "float32",
    "double": "float32",
    "string": "string",
    "bytes": "string",
    "sparseVector": "float32",
}


class FeatureDataError(TensorizeError, ValueError):
    """A whole column does not fit its tensor config (e.g. lists where scalars are declared)."""


@dataclasses.dataclass(frozen=True)
class FeatureLayout:
    """How one tensor is stored in a tf.train.Example.

    Attributes:
        name: tensor name (also the feature key, or its prefix).
        dtype: the config dtype (`long`, `float`, ...).
        shape: the config shape (`-1` = variable).
        kind: `fixed_len`, `ragged` or `sparse`.
        value_type: the Example list type: `int64`, `float32` or `string` (bytes).
    """

    name: str
    dtype: str
    shape: tuple[int, ...]
    kind: str
    value_type: str

    @classmethod
    def for_tensor(cls, name: str, dtype: str, shape: Sequence[int], is_sparse: bool) -> FeatureLayout:
        """The layout for a tensor config."""
        shape = tuple(shape)
        if is_sparse or dtype == "sparseVector":
            kind = "sparse"
        elif all(d >= 0 for d in shape):
            kind = "fixed_len"
        else:
            kind = "ragged"
        return cls(name, dtype, shape, kind, _VALUE_TYPES[dtype])

    @property
    def value_key(self) -> str:
        """The feature holding the values."""
        return f"{self.name}/values" if self.kind == "sparse" else self.name

    @property
    def index_key(self) -> str:
        """The feature holding sparse indices."""
        return f"{self.name}/indices"

    def row_length_keys(self) -> list[tuple[int, str]]:
        """(dimension, feature key) of every stored row-lengths feature (ragged only)."""
        if self.kind != "ragged":
            return []
        return [(i, f"{self.name}/row_lengths_{i}") for i, d in enumerate(self.shape) if i and d < 0]

    def feature_keys(self) -> list[str]:
        """Every Example feature key this tensor writes."""
        if self.kind == "sparse":
            return [self.index_key, self.value_key]
        return [self.name] + [key for _, key in self.row_length_keys()]


def is_hashed_ntv(tensor: TensorConfig) -> bool:
    """A hashed tensor whose input is name-term-value records (it becomes a vector of bucket
    values): `columnConfig`, `isSparse`, or a float / sparseVector dtype (hashed strings give
    integer ids, so a float dtype means NTV values)."""
    if tensor.input.transform_config.hash_info is None:
        return False
    out = tensor.output
    return (
        tensor.input.column_config is not None
        or out.is_sparse
        or out.dtype in ("float", "double", "sparseVector")
    )


def layout_of(tensor: TensorConfig) -> FeatureLayout:
    """How a configured tensor is stored in an Example."""
    out = tensor.output
    if is_hashed_ntv(tensor):
        size = tensor.input.transform_config.hash_info.hash_bucket_size
        kind = "sparse" if out.is_sparse or out.dtype == "sparseVector" else "fixed_len"
        return FeatureLayout(out.name, "float", (size,), kind, "float32")
    return FeatureLayout.for_tensor(out.name, out.dtype, out.shape, out.is_sparse)


def layout_for_column(name: str, column_type: pa.DataType) -> FeatureLayout:
    """How a raw input column kept as an extra column is stored, from its Arrow type.

    Integers -> long, floating point -> double, booleans -> boolean, strings -> string,
    binary -> bytes; every list level is a `-1` dimension, and a scalar is stored with shape
    `[-1]` too, so a null becomes an empty list instead of a bad record.

    Raises:
        FeatureDataError: the type (record, map, ...) has no Example form.
    """
    depth, leaf = list_depth(column_type), leaf_type(column_type)
    if pa.types.is_boolean(leaf):
        dtype = "boolean"
    elif pa.types.is_integer(leaf):
        dtype = "long"
    elif pa.types.is_floating(leaf) or pa.types.is_decimal(leaf):
        dtype = "double"
    elif pa.types.is_string(leaf) or pa.types.is_large_string(leaf):
        dtype = "string"
    elif pa.types.is_binary(leaf) or pa.types.is_large_binary(leaf) or pa.types.is_fixed_size_binary(leaf):
        dtype = "bytes"
    else:
        raise FeatureDataError(
            f"extra column {name!r} is {column_type}, which a tf.train.Example cannot hold"
        )
    return FeatureLayout.for_tensor(name, dtype, (-1,) * max(depth, 1), False)
