"""A ranking tensor's values in rows and in records: group keys, nested lists folded from and
flattened into Example features, documents' sparse tensors stacked into one of higher rank
(Avro2TF's `toSparseFeatureWithRank`), the Example layouts (`layout`, `featureKeys`, `parse`)
of the output metadata, and the ExampleListWithContext framing (`elwc_record`).

Example:
    >>> _fold([1, 2, 3], [("lengths", "x/row_lengths_1")], {"x/row_lengths_1": [2, 1]})
    [[1, 2], [3]]
    >>> _flatten([[1, 2], [3]], [("lengths", "x/row_lengths_1")], "x", "x")
    {'x/row_lengths_1': [2, 1], 'x': [1, 2, 3]}
    >>> elwc_record(b"", [b"\\n\\x00"]).hex()
    '0a020a001200'
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from beam_tensorize.kernels.ranking.tensors import _KIND_TYPES, _SPARSE_VALUES, _Tensor
from beam_tensorize.kernels.tfrecord.example_encoder import length_delimited

__all__ = ["elwc_record"]


def _hashable(value: Any) -> Any:
    """A group key part: lists as tuples, records as tuples of (field, value)."""
    if isinstance(value, list | tuple):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple((k, _hashable(v)) for k, v in sorted(value.items()))
    return value


def _fold(values: Sequence, levels: Sequence, row: Mapping) -> list:
    """A dense tensor's flat Example values -> its nested lists (the inverse of `_flatten`)."""
    items = list(values or [])
    for how, arg in reversed(levels):
        lengths = (row[arg] or []) if how == "lengths" else [arg] * (len(items) // arg if arg else 0)
        nested, start = [], 0
        for length in lengths:
            nested.append(items[start : start + length])
            start += length
        items = nested
    return items


def _flatten(value: Sequence | None, levels: Sequence, value_key: str, name: str) -> dict[str, list]:
    """A dense tensor's nested lists -> its Example features: the values and the lengths of
    every ("lengths", key) level."""
    items = list(value or [])
    out: dict[str, list] = {}
    for depth, (how, arg) in enumerate(levels, start=1):
        if how == "lengths":
            out[arg] = [len(x or []) for x in items]
        elif any(len(x or []) != arg for x in items):
            raise ValueError(f"tensor {name!r}: expected {arg} values at dimension {depth}")
        items = [y for x in items for y in (x or [])]
    out[value_key] = items
    return out


def _stack_sparse(values: Sequence[Mapping], index_fields: Sequence[str]) -> dict[str, list]:
    """Avro2TF's `toSparseFeatureWithRank`: the documents' sparse tensors (rank n) -> one of
    rank n + 1 whose `indices0` is each value's document.

    Example:
        >>> _stack_sparse([{"indices": [4], "values": [0.5]}, {"indices": [1, 2], "values": [1.0, 2.0]}], ("indices",))
        {'indices0': [0, 1, 1], 'indices1': [4, 1, 2], 'values': [0.5, 1.0, 2.0]}
    """
    indices: list[list] = [[] for _ in range(len(index_fields) + 1)]
    stacked: list = []
    for place, value in enumerate(values):
        row_values = value.get(_SPARSE_VALUES) or []
        indices[0] += [place] * len(row_values)
        stacked += row_values
        for dim, field in enumerate(index_fields, start=1):
            indices[dim] += value.get(field) or []
    return {**{f"indices{dim}": idx for dim, idx in enumerate(indices)}, _SPARSE_VALUES: stacked}


def _layout_entry(
    t: _Tensor,
    levels: Sequence,
    index_keys: Sequence[str],
    size: Any,
    shape: list[int] | None,
    value_key: str | None = None,
) -> dict:
    """`layout`, `featureKeys` and `parse` of a tensor stored as `levels` (dense; `shape` for
    a fixed list of scalars, `[]` for a scalar) or `index_keys` (sparse)."""
    kind = t.example_kind
    value_key = value_key or t.value_key
    if t.kind == "sparse":
        keys = list(index_keys)
        parse = {"type": "SparseFeature", "indexKey": keys[0] if len(keys) == 1 else keys,
                 "valueKey": value_key, "dtype": "float32", "size": size}  # fmt: skip
        return {"layout": "sparse", "featureKeys": {**dict.fromkeys(keys, "int64"), value_key: "float32"},
                "parse": parse}  # fmt: skip
    if shape is not None:
        parse = {"type": "FixedLenFeature", "key": value_key, "dtype": kind, "shape": shape}
        return {"layout": "fixed_len", "featureKeys": {value_key: kind}, "parse": parse}
    partitions = [
        {"type": "RowLengths", "key": arg}
        if how == "lengths"
        else {"type": "UniformRowLength", "length": arg}
        for how, arg in levels
    ]
    keys = {value_key: kind, **{arg: "int64" for how, arg in levels if how == "lengths"}}
    parse = {"type": "RaggedFeature", "valueKey": value_key, "dtype": kind, "partitions": partitions}
    return {"layout": "ragged", "featureKeys": keys, "parse": parse}


def _example_fields(layout: Mapping) -> list[pa.Field]:
    """The Arrow fields of a tensor's Example features in `layout`."""
    parse = layout["parse"]
    scalar = parse["type"] == "FixedLenFeature" and not parse["shape"]
    return [
        pa.field(key, _KIND_TYPES[kind] if scalar else pa.list_(_KIND_TYPES[kind]))
        for key, kind in layout["featureKeys"].items()
    ]


def _example_values(t: _Tensor, layout: Mapping, value: Any) -> dict[str, Any]:
    """A tensor's value as the Example features of `layout` (a null value: none)."""
    if value is None:
        return {}
    parse = layout["parse"]
    if parse["type"] == "SparseFeature":
        keys = parse["indexKey"]
        keys = [keys] if isinstance(keys, str) else keys
        fields = (
            t.index_fields if len(keys) == len(t.index_fields) else [f"indices{i}" for i in range(len(keys))]
        )
        out = {k: value.get(f) or [] for k, f in zip(keys, fields, strict=True)}
        out[parse["valueKey"]] = value.get(_SPARSE_VALUES) or []
        return out
    if parse["type"] == "FixedLenFeature" and not parse["shape"]:
        return {parse["key"]: value}
    levels = [
        ("lengths", p["key"]) if p["type"] == "RowLengths" else ("uniform", p["length"])
        for p in parse.get("partitions", [])
    ]
    if parse["type"] == "FixedLenFeature":  # a fixed shape of ours: flat values, inner dims uniform
        levels = [("uniform", int(d)) for d in parse["shape"][1:]]
        if t.kind == "scalar":  # a padded list of scalars
            return {parse["key"]: list(value)}
    return _flatten(value, levels, parse.get("key") or parse["valueKey"], t.name)


def _booleans(value: Any, kind: type) -> Any:
    """Boolean values (nested in lists) as `kind` (bool, or int for Examples)."""
    if isinstance(value, list):
        return [_booleans(v, kind) for v in value]
    return None if value is None else kind(value)


def elwc_record(context: bytes, examples: Sequence[bytes]) -> bytes:
    """A serialized `tensorflow_serving.ExampleListWithContext`: `context` (field 2) and the
    document Examples (field 1), as TF-Ranking reads them.

    Example:
        >>> elwc_record(b"", [b"\\n\\x00"]).hex()
        '0a020a001200'
    """
    parts = [length_delimited(0x0A, pa.array([e], pa.binary())).to_pylist()[0] for e in examples]
    parts.append(length_delimited(0x12, pa.array([context], pa.binary())).to_pylist()[0])
    return b"".join(parts)
