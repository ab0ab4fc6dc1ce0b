"""Ranking data preparation (Avro2TF's PrepRankingData), without Beam: the rows of one query
group -> one record of lists.

Rows are grouped by the group id tensors (any tensors: lists and records are compared whole,
as Spark groups by them). Per group, in input order:

* a *document* tensor (`isDocumentFeature`, the default; not a group id) collects the group's
  non-null values (Spark's `collect_list`) and keeps the first `max_size`. A scalar's list is
  then padded to `max_size` (labels with `label_padding`, -1 by default; other numbers with
  `feature_padding`, 0; strings with "") unless `skip_padding`; lists of any depth and
  records are only cut. A sparse tensor (`{indices, values}` of rank 1, or `{indices0, ...,
  indices<n-1>, values}` of rank n) becomes one sparse tensor of rank n + 1, `{indices0, ...,
  indices<n>, values}`, whose `indices0` is the document's place in the group (Avro2TF's
  `toSparseFeatureWithRank`);
* a *query* tensor (`isDocumentFeature: false`) and the group ids take the group's first row.

Two inputs: a tensorized output of ours (Examples, read with the metadata's `parse` entries),
or Avro2TF's layout (Avro records, described by the files' Arrow schema and a metadata document
of names, dtypes and shapes only). Three outputs (`RECORD_FORMATS`).

The metadata follows Avro2TF's `updateMetadata`: the group ids leave `features` / `labels`
(they stay in the records: ours lists them under `extraColumns`, which readers such as
`beam_tensorize.tf.make_dataset` parse too), a document tensor's shape gets `max_size` in
front, query tensors are unchanged; `contentFeatures` lists the document tensors.

Example:
    >>> metadata = {"features": [
    ...     {"name": "qid", "dtype": "long", "shape": [], "isDocumentFeature": False},
    ...     {"name": "doc", "dtype": "long", "shape": []}], "labels": []}
    >>> schema = pa.schema([("qid", pa.int64()), ("doc", pa.int64())])
    >>> plan = RankingPlan(metadata, RankingSettings(("qid",), 3), "avro", avro_schema=schema)
    >>> plan.combine([plan.values({"qid": 7, "doc": 1}), plan.values({"qid": 7, "doc": 2})])
    {'qid': 7, 'doc': [1, 2, 0]}
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from beam_tensorize.kernels.tfrecord.example_encoder import encode_examples, length_delimited

__all__ = ["RECORD_FORMATS", "RankingPlan", "RankingSettings", "elwc_record"]

#: Output records: `example` (one Example per group, lists of documents), `elwc` (TF-Ranking's
#: ExampleListWithContext: the group ids and query tensors as the context Example, one Example
#: per document) or `avro` (Avro2TF's output: one Avro record per group, a document tensor an
#: array of its documents' values, a sparse tensor a record {indices0, ..., values}).
RECORD_FORMATS = ("example", "elwc", "avro")

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
class RankingSettings:
    """How groups are made (Avro2TF's PrepRankingData flags).

    Attributes:
        group_ids: the tensors whose values make a group (`--group-id-list`).
        max_size: documents kept per group (`--group-list-max-size`).
        label_padding: the value labels are padded with (`--label-padding-value`).
        feature_padding: the value other numbers are padded with (`--feature-padding-value`).
        skip_padding: do not pad groups with fewer documents (`--skip-padding`).
        drop_columns: tensors left out of the records and the metadata (`--drop-column-list`;
            names that are no tensor are ignored, as Spark's `drop` ignores them).

    Example:
        >>> RankingSettings(("qid",), 10).label_padding
        -1.0
    """

    group_ids: tuple[str, ...]
    max_size: int
    label_padding: float = -1.0
    feature_padding: float = 0.0
    skip_padding: bool = False
    drop_columns: tuple[str, ...] = ()

    def __post_init__(self):
        if not self.group_ids or not all(isinstance(g, str) and g for g in self.group_ids):
            raise ValueError(f"group ids must be one or more tensor names, got {self.group_ids!r}")
        if not isinstance(self.max_size, int) or isinstance(self.max_size, bool) or self.max_size < 1:
            raise ValueError(f"the group list size must be a positive integer, got {self.max_size!r}")
        dropped = sorted(set(self.group_ids) & set(self.drop_columns))
        if dropped:
            raise ValueError(
                f"group id {dropped[0]!r} is also a dropped column; keep it, or group by another"
            )


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


class RankingPlan:
    """What each tensor of a metadata document becomes when rows are grouped, for one record
    format.

    Args:
        metadata: the input's metadata document (`features`, `labels`; ours also `parse`
            entries and `extraColumns`).
        settings: group ids, list size, padding, dropped columns.
        record_format: one of `RECORD_FORMATS`.
        avro_schema: for Avro2TF's layout, the Arrow schema of the Avro input (its columns
            are the tensors); None: the input is our tensorized output (Examples).

    Raises:
        ValueError: a group id is not a tensor, a tensor is not a column of the Avro input,
            no document tensor is left, or a tensor cannot be written as an Example for the
            `example` / `elwc` formats; the message names it.

    Example:
        >>> metadata = {"features": [{"name": "uid", "dtype": "long", "shape": [-1]},
        ...                          {"name": "score", "dtype": "float", "shape": []}], "labels": []}
        >>> schema = pa.schema([("uid", pa.list_(pa.int64())), ("score", pa.float32())])
        >>> plan = RankingPlan(metadata, RankingSettings(("uid",), 2), "avro", avro_schema=schema)
        >>> plan.group_key(plan.values({"uid": [3], "score": 0.5}))
        ((3,),)
    """

    def __init__(
        self,
        metadata: Mapping,
        settings: RankingSettings,
        record_format: str = "example",
        avro_schema: pa.Schema | None = None,
    ):
        if record_format not in RECORD_FORMATS:
            raise ValueError(f"record_format {record_format!r} is not one of {', '.join(RECORD_FORMATS)}")
        self.settings = settings
        self.record_format = record_format
        self.avro_input = avro_schema is not None
        self._metadata = metadata
        features, labels = list(metadata.get("features", [])), list(metadata.get("labels", []))
        extra = [] if self.avro_input else list(metadata.get("extraColumns", []))
        by_name = {e["name"]: e for e in [*features, *labels, *extra]}
        for name in settings.group_ids:
            if name not in by_name:
                raise ValueError(
                    f"group id {name!r} is not a tensor of the metadata; tensors: {sorted(by_name)}"
                )
        ids, dropped = set(settings.group_ids), set(settings.drop_columns)
        label_names = {e["name"] for e in labels}
        columns = {}
        if avro_schema is not None:
            folded = {}
            for field in avro_schema:
                folded.setdefault(field.name.lower(), field.name)
            for name in [*settings.group_ids, *(e["name"] for e in [*features, *labels])]:
                if name in dropped:
                    continue
                column = name if name in avro_schema.names else folded.get(name.lower())
                if column is None:
                    raise ValueError(
                        f"tensor {name!r} of the metadata is not a column of the Avro input; its "
                        f"columns are: {', '.join(avro_schema.names)}"
                    )
                columns[name] = column

        def tensor(entry: Mapping, role: str) -> _Tensor:
            label = entry["name"] in label_names
            if avro_schema is None:
                return _from_parse(entry, role, label)
            column = columns[entry["name"]]
            return _from_column(entry, role, label, column, avro_schema.field(column).type)

        kept = [e for e in [*features, *labels] if e["name"] not in ids and e["name"] not in dropped]
        self.ids = [tensor(by_name[name], "id") for name in settings.group_ids]
        self.documents = [tensor(e, "document") for e in kept if e.get("isDocumentFeature", True)]
        self.queries = [tensor(e, "query") for e in kept if not e.get("isDocumentFeature", True)]
        if not self.documents:
            raise ValueError("the metadata has no document tensor (isDocumentFeature) to group")
        if record_format != "avro":
            for t in [*self.ids, *self.documents, *self.queries]:
                if t.example_kind is None:
                    raise ValueError(
                        f"tensor {t.name!r} is a column of type {t.arrow}, which a tf.train.Example "
                        "cannot hold; write record format 'avro' (Avro2TF's), or drop the column"
                    )
        self._by_name = {t.name: t for t in [*self.ids, *self.documents, *self.queries]}
        self._avro_schema = pa.schema(
            [pa.field(t.name, t.arrow) for t in self.ids]
            + [pa.field(t.name, self._grouped_arrow(t)) for t in self.documents]
            + [pa.field(t.name, t.arrow) for t in self.queries]
        )
        if record_format != "avro":
            context = [*self.ids, *self.queries]
            self._context_schema = pa.schema([f for t in context for f in _example_fields(self._layout(t))])
            self._document_schema = pa.schema(
                [f for t in self.documents for f in _example_fields(self._layout(t))]
            )
            self._example_schema = pa.schema(
                [
                    *self._context_schema,
                    *(f for t in self.documents for f in _example_fields(self._grouped(t))),
                ]
            )

    # -- reading -------------------------------------------------------------------------------

    def read_schema(self) -> pa.Schema:
        """The Arrow schema that reads the needed features of our tensorized Examples."""
        fields = []
        for t in [*self.ids, *self.queries, *self.documents]:
            for key, kind in t.entry["featureKeys"].items():
                typ = _KIND_TYPES[kind]
                fields.append(pa.field(key, typ if t.kind == "scalar" else pa.list_(typ)))
        return pa.schema(fields)

    def read_columns(self) -> list[str]:
        """The Avro columns to read (Avro2TF's layout)."""
        return [t.column for t in [*self.ids, *self.documents, *self.queries]]

    def values(self, row: Mapping) -> dict[str, Any]:
        """One input row (an Example's features, or an Avro record) -> tensor name -> value: a
        scalar, nested lists, or a sparse tensor `{indices..., values}`."""
        out = {}
        for name, t in self._by_name.items():
            if self.avro_input:
                value = row.get(t.column)
            elif t.kind == "scalar":
                value = row[t.value_key]
            elif t.kind == "sparse":
                value = {f: row[k] or [] for f, k in zip(t.index_fields, t.index_keys, strict=True)}
                value[_SPARSE_VALUES] = row[t.value_key] or []
            else:
                value = _fold(row[t.value_key], t.levels, row)
            if pa.types.is_boolean(t.leaf):  # booleans in Avro, 0 / 1 in Examples
                value = _booleans(value, bool if self.record_format == "avro" else int)
            out[name] = value
        return out

    def group_key(self, values: Mapping) -> tuple:
        """The group of a row (`values`' group ids, lists as tuples).

        Example:
            >>> metadata = {"features": [{"name": "q", "dtype": "long", "shape": []},
            ...                          {"name": "d", "dtype": "long", "shape": []}], "labels": []}
            >>> schema = pa.schema([("q", pa.int64()), ("d", pa.int64())])
            >>> RankingPlan(metadata, RankingSettings(("q",), 2), "avro", schema).group_key({"q": 4, "d": 1})
            (4,)
        """
        return tuple(_hashable(values[t.name]) for t in self.ids)

    # -- grouping ------------------------------------------------------------------------------

    def combine(self, rows: Sequence[Mapping]) -> dict[str, Any]:
        """One group's record (tensor name -> value) from its rows' `values`, in input order:
        group ids, document tensors, query tensors (the columns of Avro2TF's output)."""
        settings, first = self.settings, rows[0]
        out: dict[str, Any] = {t.name: first[t.name] for t in self.ids}
        for t in self.documents:
            collected = [row[t.name] for row in rows if row[t.name] is not None][: settings.max_size]
            if t.kind == "sparse":
                out[t.name] = _stack_sparse(collected, t.index_fields)
            elif t.kind == "scalar" and not settings.skip_padding:
                out[t.name] = collected + [self._padding(t)] * (settings.max_size - len(collected))
            else:
                out[t.name] = collected
        out.update({t.name: first[t.name] for t in self.queries})
        return out

    def _padding(self, t: _Tensor) -> Any:
        leaf = t.leaf
        if pa.types.is_string(leaf) or pa.types.is_large_string(leaf):
            return b"" if not self.avro_input else ""
        if pa.types.is_binary(leaf):
            return b""
        pad = self.settings.label_padding if t.is_label else self.settings.feature_padding
        if pa.types.is_boolean(leaf):
            return bool(pad) if self.record_format == "avro" else int(bool(pad))
        return int(pad) if pa.types.is_integer(leaf) else float(pad)

    # -- records -------------------------------------------------------------------------------

    def record(self, rows: Sequence[Mapping]) -> pa.RecordBatch | bytes:
        """One group's output record from its rows' `values`: a one-row batch (`avro`), or a
        serialized Example / ExampleListWithContext."""
        if self.record_format == "avro":
            return pa.RecordBatch.from_pylist([self.combine(rows)], schema=self._avro_schema)
        if self.record_format == "elwc":
            return self._elwc(rows)
        grouped = self.combine(rows)
        features: dict[str, Any] = {}
        for t in [*self.ids, *self.queries]:
            features.update(_example_values(t, self._layout(t), grouped[t.name]))
        for t in self.documents:
            features.update(_example_values(t, self._grouped(t), grouped[t.name]))
        batch = pa.RecordBatch.from_pylist([features], schema=self._example_schema)
        return encode_examples(batch)[0].as_py()

    def avro_schema(self) -> pa.Schema:
        """The Arrow schema of the `avro` records (Avro2TF's output columns)."""
        return self._avro_schema

    def _elwc(self, rows: Sequence[Mapping]) -> bytes:
        """The group ids and query tensors of the first row as the context, an Example per
        document (the first `max_size` rows)."""
        first = rows[0]
        context: dict[str, Any] = {}
        for t in [*self.ids, *self.queries]:
            context.update(_example_values(t, self._layout(t), first[t.name]))
        documents = []
        for row in rows[: self.settings.max_size]:
            document: dict[str, Any] = {}
            for t in self.documents:
                document.update(_example_values(t, self._layout(t), row[t.name]))
            documents.append(document)
        encoded_context = encode_examples(pa.RecordBatch.from_pylist([context], schema=self._context_schema))
        encoded = encode_examples(pa.RecordBatch.from_pylist(documents, schema=self._document_schema))
        return elwc_record(encoded_context[0].as_py(), encoded.to_pylist())

    def _grouped_arrow(self, t: _Tensor) -> pa.DataType:
        if t.kind == "sparse":
            return _sparse_type([f"indices{i}" for i in range(len(t.index_fields) + 1)])
        return pa.list_(t.arrow)

    # -- layouts and metadata ------------------------------------------------------------------

    def _layout(self, t: _Tensor) -> dict:
        """A tensor's Example layout as it is in the input: `layout`, `featureKeys`, `parse`
        (ours: the metadata's; Avro2TF's layout: a list level below the first is a
        `<name>/row_lengths_<i>` feature, a sparse tensor `<name>/indices[<i>]`, `<name>/values`)."""
        if not self.avro_input:
            return {k: t.entry[k] for k in ("layout", "featureKeys", "parse")}
        return _layout_entry(t, t.levels, t.index_keys, t.size, shape=[] if t.kind == "scalar" else None)

    def _grouped(self, t: _Tensor) -> dict:
        """A document tensor's Example layout once grouped: a scalar a list of `max_size`
        (ragged with skip padding); lists one level deeper (`<name>/row_lengths_1` the
        documents' lengths); a sparse tensor one rank higher (`<name>/indices0`, ...)."""
        size = self.settings.max_size
        if t.kind == "scalar":
            shape = None if self.settings.skip_padding else [size]
            return _layout_entry(t, (), (), None, shape=shape)
        if t.kind == "sparse":
            keys = tuple(f"{t.name}/indices{i}" for i in range(len(t.index_keys) + 1))
            dense = t.size if isinstance(t.size, list) else None if t.size is None else [t.size]
            grouped_size = None if dense is None else [size, *dense]
            return _layout_entry(
                t, (), keys, grouped_size, shape=None, value_key=f"{t.name}/{_SPARSE_VALUES}"
            )
        levels = [("lengths", f"{t.name}/row_lengths_1")]
        for depth, (how, arg) in enumerate(t.levels, start=2):
            levels.append(("lengths", f"{t.name}/row_lengths_{depth}") if how == "lengths" else (how, arg))
        return _layout_entry(t, tuple(levels), (), None, shape=None)

    def output_metadata(self) -> dict:
        """The metadata of the grouped records, as Avro2TF's `updateMetadata` writes it: the
        group ids leave `features` / `labels` (ours keeps them under `extraColumns`), dropped
        tensors are gone, document tensors get `max_size` in front of their shape (not for
        `elwc`: its Examples are single documents) and, for `example`, parse entries for the
        grouped layout. `avro` entries have no parse entries (Avro2TF's keys only)."""
        document = {
            k: copy.deepcopy(v)
            for k, v in self._metadata.items()
            if k not in ("features", "labels", "extraColumns", "data")
        }
        for section in ("features", "labels"):
            document[section] = [
                self._output_entry(self._by_name[e["name"]])
                for e in self._metadata.get(section, [])
                if e["name"] in self._by_name and self._by_name[e["name"]].role != "id"
            ]
        document["extraColumns"] = [self._output_entry(t) for t in self.ids]
        document["contentFeatures"] = [t.name for t in self.documents]
        settings = self.settings
        document["ranking"] = {
            "groupIds": list(settings.group_ids),
            "groupListMaxSize": settings.max_size,
            "labelPaddingValue": settings.label_padding,
            "featurePaddingValue": settings.feature_padding,
            "skipPadding": settings.skip_padding,
            "droppedColumns": list(settings.drop_columns),
            "recordFormat": self.record_format,
        }
        document["recordType"] = {"example": "Example", "elwc": "ExampleListWithContext", "avro": "Avro"}[
            self.record_format
        ]
        document["data"] = {}
        return document

    def _output_entry(self, t: _Tensor) -> dict:
        entry = copy.deepcopy(dict(t.entry))
        if t.role == "document" and self.record_format != "elwc":
            entry["shape"] = [self.settings.max_size, *entry.get("shape", [])]
        for key in ("layout", "featureKeys", "parse"):
            entry.pop(key, None)
        if self.record_format == "example" and t.role == "document":
            entry.update(self._grouped(t))
        elif self.record_format != "avro":
            entry.update(self._layout(t))
        return entry


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
