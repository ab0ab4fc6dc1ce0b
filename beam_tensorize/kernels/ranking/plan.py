"""`RankingPlan`: what each tensor of a metadata document becomes when ranking rows are grouped
by query, for one record format — reading rows, grouping them (`group_key`, `combine`), building
the records and the output metadata (Avro2TF's `updateMetadata`).

Example:
    >>> metadata = {"features": [{"name": "q", "dtype": "long", "shape": [], "isDocumentFeature": False},
    ...                          {"name": "d", "dtype": "string", "shape": []}], "labels": []}
    >>> schema = pa.schema([("q", pa.int64()), ("d", pa.string())])
    >>> plan = RankingPlan(metadata, RankingSettings(("q",), 2), "avro", avro_schema=schema)
    >>> plan.record([plan.values({"q": 1, "d": "a"})]).to_pylist()
    [{'q': 1, 'd': ['a', '']}]
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from beam_tensorize.kernels.ranking.records import (
    _booleans,
    _example_fields,
    _example_values,
    _fold,
    _hashable,
    _layout_entry,
    _stack_sparse,
    elwc_record,
)
from beam_tensorize.kernels.ranking.settings import RECORD_FORMATS, RankingSettings
from beam_tensorize.kernels.ranking.tensors import (
    _KIND_TYPES,
    _SPARSE_VALUES,
    _from_column,
    _from_parse,
    _sparse_type,
    _Tensor,
)
from beam_tensorize.kernels.tfrecord.example_encoder import encode_examples

__all__ = ["RankingPlan"]


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
