"""What each tensor of a metadata document is when ranking rows are grouped (`_Tensor`): its
role (group id, document or query), its kind (scalar, dense lists, sparse, record), its Arrow
type and how the input stores it — from a `parse` entry of our tensorized output
(`_from_parse`) or from a column of Avro2TF's Avro layout (`_from_column`).

Package-internal: `beam_tensorize.kernels.ranking.plan` builds these, `records` reads them.

Example:
    >>> import pyarrow as pa
    >>> entry = {"name": "genres", "dtype": "float", "shape": [10]}
    >>> sparse = pa.struct([("indices", pa.list_(pa.int64())), ("values", pa.list_(pa.float32()))])
    >>> t = _from_column(entry, "document", False, "genres", sparse)
    >>> t.kind, t.index_keys, t.value_key, t.size
    ('sparse', ('genres/indices',), 'genres/values', 10)
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

__all__: list[str] = []  # package-internal (see beam_tensorize.kernels.ranking)

#: Example feature kinds -> the Arrow type of their values.
_KIND_TYPES = {"int64": pa.int64(), "float32": pa.float32(), "string": pa.binary()}
#: Metadata dtypes -> the Arrow (so Avro) type Avro2TF's Spark job gives their values.
_DTYPE_TYPES = {
    "int": pa.int32(),
    "long": pa.int64(),
    "boolean": pa.bool_(),
    "float": pa.float32(),
    "double": pa.float64(),
    "string": pa.string(),
    "bytes": pa.binary(),
}
_SPARSE_VALUES = "values"


@dataclasses.dataclass(frozen=True)
class _Tensor:
    """One tensor of the metadata, as grouping sees it.

    `kind` is "scalar", "dense" (lists, nested `depth` deep), "sparse" or "record" (any other
    struct, map, list of records: kept as it is, as Avro2TF's `takeWithAnyType`). `levels`
    says how a dense value's list levels below the first are stored in an Example:
    ("lengths", feature key) or ("uniform", length).
    """

    entry: Mapping
    role: str  # "id", "document" or "query"
    is_label: bool
    kind: str
    arrow: pa.DataType  # the type of one row's value (Avro output)
    column: str  # the input column (Avro) or "" (Examples)
    value_key: str = ""
    levels: tuple = ()
    index_fields: tuple[str, ...] = ()  # sparse: the index fields of one value
    index_keys: tuple[str, ...] = ()  # sparse: the Example features of those indices
    size: Any = None  # sparse: the dense size (an int for rank 1, else a list), if known

    @property
    def name(self) -> str:
        return self.entry["name"]

    @property
    def leaf(self) -> pa.DataType:
        typ = self.arrow
        while pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ):
            typ = typ.value_type
        return typ

    @property
    def example_kind(self) -> str | None:
        """The Example list kind of its values (None: an Example cannot hold them)."""
        if self.kind == "sparse":
            return "float32"
        return _example_kind(self.leaf) if self.kind in ("scalar", "dense") else None


def _example_kind(typ: pa.DataType) -> str | None:
    if pa.types.is_integer(typ) or pa.types.is_boolean(typ):
        return "int64"
    if pa.types.is_floating(typ) or pa.types.is_decimal(typ):
        return "float32"
    if pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_binary(typ):
        return "string"
    return None


def _nested(leaf: pa.DataType, depth: int) -> pa.DataType:
    for _ in range(depth):
        leaf = pa.list_(leaf)
    return leaf


def _sparse_type(index_fields: Sequence[str]) -> pa.DataType:
    """Avro2TF's sparse tensor record: index arrays of longs, then the values (floats)."""
    fields = [(f, pa.list_(pa.int64())) for f in index_fields]
    return pa.struct([*fields, (_SPARSE_VALUES, pa.list_(pa.float32()))])


def _sparse_fields(typ: pa.DataType) -> tuple[str, ...] | None:
    """The index fields of a sparse tensor struct (Avro2TF's `isSparseTensor`), else None."""
    if not pa.types.is_struct(typ):
        return None
    names = [typ.field(i).name for i in range(typ.num_fields)]
    if _SPARSE_VALUES not in names:
        return None
    if len(names) == 2 and "indices" in names:
        return ("indices",)
    indices = tuple(f"indices{i}" for i in range(len(names) - 1))
    return indices if len(names) >= 2 and all(i in names for i in indices) else None


def _from_parse(entry: Mapping, role: str, is_label: bool) -> _Tensor:
    """A tensor of our tensorized output, stored as its `parse` entry says."""
    parse = entry["parse"]
    kind_type = _KIND_TYPES[parse["dtype"]]
    leaf = _DTYPE_TYPES.get(entry.get("dtype"), kind_type)
    if parse["type"] == "SparseFeature":
        keys = parse["indexKey"]
        keys = (keys,) if isinstance(keys, str) else tuple(keys)
        fields = ("indices",) if len(keys) == 1 else tuple(f"indices{i}" for i in range(len(keys)))
        return _Tensor(entry, role, is_label, "sparse", _sparse_type(fields), "", parse["valueKey"],
                       index_fields=fields, index_keys=keys, size=parse.get("size"))  # fmt: skip
    if parse["type"] == "FixedLenFeature" and not parse["shape"]:
        return _Tensor(entry, role, is_label, "scalar", leaf, "", parse["key"])
    if parse["type"] == "FixedLenFeature":
        levels = tuple(("uniform", int(d)) for d in parse["shape"][1:])
        return _Tensor(
            entry, role, is_label, "dense", _nested(leaf, len(parse["shape"])), "", parse["key"], levels
        )
    levels = tuple(
        ("lengths", p["key"]) if p["type"] == "RowLengths" else ("uniform", int(p["length"]))
        for p in parse.get("partitions", [])
    )
    return _Tensor(
        entry, role, is_label, "dense", _nested(leaf, 1 + len(levels)), "", parse["valueKey"], levels
    )


def _from_column(entry: Mapping, role: str, is_label: bool, column: str, typ: pa.DataType) -> _Tensor:
    """A tensor of Avro2TF's layout: an Avro column of type `typ` (its Arrow type)."""
    name = entry["name"]
    fields = _sparse_fields(typ)
    if fields is not None:
        shape = list(entry.get("shape") or [])
        size = shape if len(shape) == len(fields) and all(d >= 0 for d in shape) else None
        if size is not None and len(fields) == 1:
            size = size[0]
        keys = (
            (f"{name}/indices",)
            if len(fields) == 1
            else tuple(f"{name}/indices{i}" for i in range(len(fields)))
        )
        return _Tensor(entry, role, is_label, "sparse", typ, column, f"{name}/{_SPARSE_VALUES}",
                       index_fields=fields, index_keys=keys, size=size)  # fmt: skip
    depth, leaf = 0, typ
    while pa.types.is_list(leaf) or pa.types.is_large_list(leaf) or pa.types.is_fixed_size_list(leaf):
        depth, leaf = depth + 1, leaf.value_type
    if _example_kind(leaf) is None:
        return _Tensor(entry, role, is_label, "record", typ, column)
    if depth == 0:
        return _Tensor(entry, role, is_label, "scalar", typ, column, name)
    levels = tuple(("lengths", f"{name}/row_lengths_{i}") for i in range(1, depth))
    return _Tensor(entry, role, is_label, "dense", typ, column, name, levels)
