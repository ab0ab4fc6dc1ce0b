"""Ranking data preparation (Avro2TF's PrepRankingData), without Beam: the rows of one query
group -> one record of lists.

A tensorized output is read back with its metadata. Rows are grouped by the group id tensors
(e.g. a query id). Per group, in input order:

* a *document* tensor (`isDocumentFeature`, the default) collects the group's values: a scalar
  becomes a list of `max_size` values, cut or padded (labels with `label_padding`, -1 by
  default; other numbers with `feature_padding`, 0; strings with ""), unless `skip_padding`;
  a list (ragged or fixed) becomes a list of the first `max_size` documents' lists (not
  padded); a sparse vector becomes a 2-D sparse tensor: `<name>/indices0` (the document's
  place), `<name>/indices1` (its index), `<name>/values`;
* a *query* tensor (`isDocumentFeature: false`) takes the group's first row, as the group ids.

The metadata follows: a document tensor's shape gets `max_size` in front, as Avro2TF writes it,
and its `parse` entry reads the new layout back (`beam_tensorize.tf.make_dataset`).

Example:
    >>> metadata = {"features": [
    ...     {"name": "qid", "dtype": "long", "shape": [], "isDocumentFeature": False, "layout": "fixed_len",
    ...      "featureKeys": {"qid": "int64"}, "parse": {"type": "FixedLenFeature", "key": "qid", "dtype": "int64", "shape": []}},
    ...     {"name": "doc", "dtype": "long", "shape": [], "isDocumentFeature": True, "layout": "fixed_len",
    ...      "featureKeys": {"doc": "int64"}, "parse": {"type": "FixedLenFeature", "key": "doc", "dtype": "int64", "shape": []}}],
    ...     "labels": []}
    >>> plan = RankingPlan(metadata, RankingSettings(("qid",), 3))
    >>> plan.combine([{"qid": 7, "doc": 1}, {"qid": 7, "doc": 2}])
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
#: ExampleListWithContext: the query features as the context Example, one Example per document)
#: or `avro` (Avro2TF's output: one Avro record per group, lists of lists kept nested, a sparse
#: tensor a record {indices0, indices1, values}).
RECORD_FORMATS = ("example", "elwc", "avro")

_LEAVES = {"int64": pa.int64(), "float32": pa.float32(), "string": pa.binary()}


@dataclasses.dataclass(frozen=True)
class RankingSettings:
    """How groups are made (Avro2TF's PrepRankingData flags).

    Attributes:
        group_ids: the tensors whose values make a group (`--group-id-list`).
        max_size: documents kept per group (`--group-list-max-size`).
        label_padding: the value labels are padded with (`--label-padding-value`).
        feature_padding: the value other numbers are padded with (`--feature-padding-value`).
        skip_padding: do not pad groups with fewer documents (`--skip-padding`).
    """

    group_ids: tuple[str, ...]
    max_size: int
    label_padding: float = -1.0
    feature_padding: float = 0.0
    skip_padding: bool = False

    def __post_init__(self):
        if not self.group_ids or not all(isinstance(g, str) and g for g in self.group_ids):
            raise ValueError(f"group ids must be one or more tensor names, got {self.group_ids!r}")
        if not isinstance(self.max_size, int) or self.max_size < 1:
            raise ValueError(f"the group list size must be a positive integer, got {self.max_size!r}")


def _is_scalar(entry: Mapping) -> bool:
    parse = entry["parse"]
    return parse["type"] == "FixedLenFeature" and not parse["shape"]


class RankingPlan:
    """What each tensor of a metadata document becomes when rows are grouped.

    Raises:
        ValueError: a group id is not a scalar tensor of the metadata, or the metadata has no
            document tensor; the message names them.
    """

    def __init__(self, metadata: Mapping, settings: RankingSettings):
        self.settings = settings
        features, labels = list(metadata["features"]), list(metadata["labels"])
        by_name = {e["name"]: e for e in [*features, *labels, *metadata.get("extraColumns", [])]}
        for name in settings.group_ids:
            if name not in by_name:
                raise ValueError(
                    f"group id {name!r} is not a tensor of the metadata; tensors: {sorted(by_name)}"
                )
            if not _is_scalar(by_name[name]):
                raise ValueError(
                    f"group id {name!r} is not a scalar tensor (its parse entry is {by_name[name]['parse']})"
                )
        self.label_names = {e["name"] for e in labels}
        ids = set(settings.group_ids)
        self.documents = [
            e for e in [*features, *labels] if e.get("isDocumentFeature", True) and e["name"] not in ids
        ]
        self.queries = [
            e for e in [*features, *labels] if not e.get("isDocumentFeature", True) and e["name"] not in ids
        ]
        self.ids = [by_name[name] for name in settings.group_ids]
        if not self.documents:
            raise ValueError("the metadata has no document tensor (isDocumentFeature) to group")
        for entry in self.documents:
            parse = entry["parse"]
            flat = (
                entry["layout"] == "sparse"
                or (parse["type"] == "FixedLenFeature" and len(parse["shape"]) <= 1)
                or (parse["type"] == "RaggedFeature" and not parse.get("partitions"))
            )
            if not flat:
                raise ValueError(
                    f"document tensor {entry['name']!r} has {len(entry['shape'])} dimensions; grouping "
                    "takes scalars, lists and sparse vectors (mark it isDocumentFeature: false to take "
                    "the group's first value)"
                )
        self._metadata = metadata
        # Built once: every group's record is made with them.
        self._read_schema = self._build_read_schema()
        self._output_schema = self._build_output_schema()
        context = [k for e in [*self.ids, *self.queries] for k in e["featureKeys"]]
        document = [k for e in self.documents for k in e["featureKeys"]]
        self._context_schema = pa.schema([self._read_schema.field(k) for k in context])
        self._document_schema = pa.schema([self._read_schema.field(k) for k in document])

    def read_schema(self) -> pa.Schema:
        """The Arrow schema that reads the needed features of the tensorized records."""
        return self._read_schema

    def _build_read_schema(self) -> pa.Schema:
        fields = []
        for entry in [*self.ids, *self.queries, *self.documents]:
            scalar = _is_scalar(entry)
            for key, kind in entry["featureKeys"].items():
                leaf = _LEAVES[kind]
                fields.append(pa.field(key, leaf if scalar else pa.list_(leaf)))
        return pa.schema(fields)

    def group_key(self, row: Mapping) -> tuple:
        """The group of a row (its group id values)."""
        return tuple(row[e["parse"]["key"]] for e in self.ids)

    def combine(self, rows: Sequence[Mapping]) -> dict[str, Any]:
        """One group's record (feature key -> value) from its rows, in input order."""
        settings = self.settings
        first, docs = rows[0], rows[: settings.max_size]
        out: dict[str, Any] = {}
        for entry in [*self.ids, *self.queries]:
            for key in entry["featureKeys"]:
                out[key] = first[key]
        for entry in self.documents:
            name = entry["name"]
            if entry["layout"] == "sparse":
                index_key, value_key = entry["parse"]["indexKey"], entry["parse"]["valueKey"]
                positions, indices, values = [], [], []
                for place, row in enumerate(docs):
                    row_indices = row[index_key] or []
                    positions += [place] * len(row_indices)
                    indices += row_indices
                    values += row[value_key] or []
                out[f"{name}/indices0"], out[f"{name}/indices1"], out[f"{name}/values"] = (
                    positions,
                    indices,
                    values,
                )
            elif _is_scalar(entry):
                key = entry["parse"]["key"]
                values = [row[key] for row in docs]
                if not settings.skip_padding and len(values) < settings.max_size:
                    values += [self._padding(entry)] * (settings.max_size - len(values))
                out[key] = values
            else:
                key = entry["parse"].get("key") or entry["parse"]["valueKey"]
                lists = [row[key] or [] for row in docs]
                out[key] = [v for values in lists for v in values]
                out[f"{name}/row_lengths_1"] = [len(values) for values in lists]
        return out

    def _padding(self, entry: Mapping) -> Any:
        kind = next(iter(entry["featureKeys"].values()))
        if kind == "string":
            return b""
        pad = (
            self.settings.label_padding
            if entry["name"] in self.label_names
            else self.settings.feature_padding
        )
        return int(pad) if kind == "int64" else float(pad)

    def avro_batch(self, rows: Sequence[Mapping]) -> pa.RecordBatch:
        """One group's record for Avro output, as a one-row batch (see `RECORD_FORMATS`)."""
        flat = self.combine(rows)
        record: dict[str, Any] = {}
        fields = []
        for entry in [*self.ids, *self.queries, *self.documents]:
            name, parse = entry["name"], entry["parse"]
            kind = _LEAVES[next(iter(entry["featureKeys"].values()))]
            document = entry in self.documents
            if entry["layout"] == "sparse":
                if document:
                    parts = {p: flat[f"{name}/{p}"] for p in ("indices0", "indices1", "values")}
                    typ = pa.struct([("indices0", pa.list_(pa.int64())), ("indices1", pa.list_(pa.int64())),
                                     ("values", pa.list_(pa.float32()))])  # fmt: skip
                else:
                    parts = {"indices": flat[parse["indexKey"]], "values": flat[parse["valueKey"]]}
                    typ = pa.struct([("indices", pa.list_(pa.int64())), ("values", pa.list_(pa.float32()))])
                record[name], field = parts, pa.field(name, typ)
            else:
                key = parse.get("key") or parse["valueKey"]
                value = flat[key]
                if document and not _is_scalar(entry):  # re-nest the documents' lists
                    nested, start = [], 0
                    for length in flat[f"{name}/row_lengths_1"]:
                        nested.append(value[start : start + length])
                        start += length
                    value, typ = nested, pa.list_(pa.list_(kind))
                elif document or not _is_scalar(entry):
                    typ = pa.list_(kind)
                else:
                    typ = kind
                record[name], field = value, pa.field(name, typ)
            fields.append(field)
        return pa.RecordBatch.from_pylist([record], schema=pa.schema(fields))

    def output_schema(self) -> pa.Schema:
        """The Arrow schema of `combine`'s records (for `encode_examples`)."""
        return self._output_schema

    def _build_output_schema(self) -> pa.Schema:
        fields = []
        for entry in [*self.ids, *self.queries]:
            scalar = _is_scalar(entry)
            for key, kind in entry["featureKeys"].items():
                fields.append(pa.field(key, _LEAVES[kind] if scalar else pa.list_(_LEAVES[kind])))
        for entry in self.documents:
            name = entry["name"]
            if entry["layout"] == "sparse":
                fields += [
                    pa.field(f"{name}/indices0", pa.list_(pa.int64())),
                    pa.field(f"{name}/indices1", pa.list_(pa.int64())),
                    pa.field(f"{name}/values", pa.list_(pa.float32())),
                ]
            else:
                key = entry["parse"].get("key") or entry["parse"]["valueKey"]
                fields.append(pa.field(key, pa.list_(_LEAVES[next(iter(entry["featureKeys"].values()))])))
                if not _is_scalar(entry):
                    fields.append(pa.field(f"{name}/row_lengths_1", pa.list_(pa.int64())))
        return pa.schema(fields)

    def encode(self, record: Mapping[str, Any]) -> bytes:
        """One group's record as a serialized `tf.train.Example`."""
        batch = pa.RecordBatch.from_pylist([dict(record)], schema=self._output_schema)
        return encode_examples(batch)[0].as_py()

    def elwc(self, rows: Sequence[Mapping]) -> bytes:
        """One group as a serialized ExampleListWithContext: the group ids and query tensors of
        its first row as the context, an Example per document (the first `max_size`)."""
        context = pa.RecordBatch.from_pylist(
            [{k: rows[0][k] for k in self._context_schema.names}], schema=self._context_schema
        )
        documents = pa.RecordBatch.from_pylist(
            [{k: row[k] for k in self._document_schema.names} for row in rows[: self.settings.max_size]],
            schema=self._document_schema,
        )
        return elwc_record(encode_examples(context)[0].as_py(), encode_examples(documents).to_pylist())

    def output_metadata(self, record_format: str = "example") -> dict:
        """The metadata of the grouped records: document tensors' shapes get `max_size` in
        front (Avro2TF's rule) and parse entries for the new layout; group ids stay as query
        tensors. `contentFeatures` lists the document tensors (Avro2TF's content_feature_list)."""
        document = copy.deepcopy(dict(self._metadata))
        size = self.settings.max_size
        names = {e["name"] for e in self.documents}
        for section in ("features", "labels"):
            for entry in document.get(section, []):
                if entry["name"] in names and record_format == "example":
                    _grouped_entry(entry, size, self.settings.skip_padding)
                elif entry["name"] in names and record_format == "avro":
                    entry["shape"] = [size, *entry["shape"]]  # Avro2TF's rule; no parse entry applies
                    entry.pop("parse", None)
                    entry.pop("featureKeys", None)
        document["contentFeatures"] = [e["name"] for e in self.documents]
        document["ranking"] = {
            "groupIds": list(self.settings.group_ids),
            "groupListMaxSize": size,
            "labelPaddingValue": self.settings.label_padding,
            "featurePaddingValue": self.settings.feature_padding,
            "skipPadding": self.settings.skip_padding,
            "recordFormat": record_format,
        }
        document["recordType"] = {"example": "Example", "elwc": "ExampleListWithContext", "avro": "Avro"}[
            record_format
        ]
        document["data"] = {}
        return document


def _grouped_entry(entry: dict, size: int, skip_padding: bool) -> None:
    """Rewrite one document tensor's metadata entry for its grouped layout."""
    name, parse = entry["name"], entry["parse"]
    entry["shape"] = [size, *entry["shape"]]
    if entry["layout"] == "sparse":
        keys = [f"{name}/indices0", f"{name}/indices1", f"{name}/values"]
        entry["parse"] = {
            "type": "SparseFeature",
            "indexKey": keys[:2],
            "valueKey": keys[2],
            "dtype": "float32",
            "size": [size, parse["size"]] if parse.get("size") is not None else None,
        }
        entry["featureKeys"] = {keys[0]: "int64", keys[1]: "int64", keys[2]: "float32"}
        return
    if _is_scalar(entry):
        if skip_padding:
            entry["parse"] = {
                "type": "RaggedFeature",
                "valueKey": parse["key"],
                "dtype": parse["dtype"],
                "partitions": [],
            }
            entry["layout"] = "ragged"
        else:
            entry["parse"] = {**parse, "shape": [size]}
        return
    key = parse.get("key") or parse["valueKey"]
    lengths = f"{name}/row_lengths_1"
    entry["parse"] = {  # a list per document (fixed [k] or ragged [-1]) -> [documents, values]
        "type": "RaggedFeature",
        "valueKey": key,
        "dtype": parse["dtype"],
        "partitions": [{"type": "RowLengths", "key": lengths}],
    }
    entry["layout"] = "ragged"
    entry["featureKeys"] = {key: parse["dtype"], lengths: "int64"}


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
