"""A TensorFlow Metadata `Schema` (`metadata/schema.pbtxt`) from a metadata document.

The schema describes the stored features of a `tf.train.Example` output as TFX's tools read
them: every feature key with its type, presence and fixed shape, integer domains where the ids
are known (feature-list ids with the unknown id, hash buckets with the empty-input id, sparse
indices, Avro2TF's partition id), and one `TensorRepresentation` per tensor in the default
`tensor_representation_group`, so that `tfx_bsl`'s `TFExampleRecord(..., schema=schema)` builds
the tensors `make_dataset` builds (dense, ragged with their row partitions, sparse). Built from
the metadata document alone: the same document gives the same text.

Example:
    >>> entry = {"name": "movieId", "featureKeys": {"movieId": "int64"},
    ...          "parse": {"type": "FixedLenFeature", "key": "movieId", "dtype": "int64",
    ...                    "shape": []}}
    >>> schema = tfmd_schema({"features": [entry], "labels": []})
    >>> schema.feature[0].name, schema.feature[0].type == schema_pb2.INT
    ('movieId', True)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from google.protobuf import text_format
from tensorflow_metadata.proto.v0 import path_pb2, schema_pb2

__all__ = [
    "MAX_STRING_DOMAIN",
    "SCHEMA_FILE",
    "per_dimension",
    "recorded_string_domains",
    "schema_text",
    "string_domains",
    "tfmd_schema",
]

#: Path of the schema below the output folder.
SCHEMA_FILE = "metadata/schema.pbtxt"
#: A string feature with at most this many distinct values in the train split gets them as its
#: `string_domain` (TFDV's `infer_schema(max_string_domain_size=100)`).
MAX_STRING_DOMAIN = 100

_TYPES = {"int64": schema_pb2.INT, "float32": schema_pb2.FLOAT, "string": schema_pb2.BYTES}
_INT64 = schema_pb2.TensorRepresentation.RowPartitionDType.INT64


def _shape(dims: Iterable[int]) -> schema_pb2.FixedShape:
    return schema_pb2.FixedShape(dim=[schema_pb2.FixedShape.Dim(size=int(d)) for d in dims])


def per_dimension(value) -> list:
    """A SparseFeature's `indexKey` / `size`: one, or a list of one per dimension."""
    return list(value) if isinstance(value, (list, tuple)) else [value]


def _representation(parse: Mapping) -> schema_pb2.TensorRepresentation:
    kind = parse["type"]
    if kind == "FixedLenFeature":
        dense = schema_pb2.TensorRepresentation.DenseTensor(
            column_name=parse["key"], shape=_shape(parse["shape"])
        )
        return schema_pb2.TensorRepresentation(dense_tensor=dense)
    if kind == "SparseFeature" and parse.get("size") is not None:
        sparse = schema_pb2.TensorRepresentation.SparseTensor(
            dense_shape=_shape(per_dimension(parse["size"])),
            index_column_names=per_dimension(parse["indexKey"]),
            value_column_name=parse["valueKey"],
        )
        return schema_pb2.TensorRepresentation(sparse_tensor=sparse)
    # RaggedFeature, or a SparseFeature of unknown size (read as its values, as make_dataset does)
    partitions = []
    for p in parse.get("partitions", []):
        if p["type"] == "RowLengths":
            partitions.append(schema_pb2.TensorRepresentation.RaggedTensor.Partition(row_length=p["key"]))
        else:
            partitions.append(
                schema_pb2.TensorRepresentation.RaggedTensor.Partition(uniform_row_length=p["length"])
            )
    ragged = schema_pb2.TensorRepresentation.RaggedTensor(
        feature_path=path_pb2.Path(step=[parse["valueKey"]]),
        partition=partitions,
        row_partition_dtype=_INT64,
    )
    return schema_pb2.TensorRepresentation(ragged_tensor=ragged)


def _id_range(entry: Mapping) -> tuple[int, int] | None:
    """The ids a tensor's values are drawn from, when the metadata knows them."""
    unique = entry.get("numUniqueValues")
    known = (
        entry.get("featureList") or entry.get("hashing") or entry.get("input", {}).get("partitionFieldName")
    )
    if known and isinstance(unique, int) and unique > 0 and entry["parse"]["dtype"] == "int64":
        return 0, unique - 1
    return None


def string_domains(report: Mapping, limit: int = MAX_STRING_DOMAIN) -> dict[str, list[str]]:
    """`{tensor: its values, sorted}` of the string tensors whose report (the train split's)
    counted every distinct value, at most `limit` of them."""
    domains = {}
    for tensor in report.get("tensors", []):
        categorical = tensor.get("categorical") or {}
        summary = categorical.get("summary") or []
        if tensor.get("dtype") == "string" and categorical.get("exact") and 0 < len(summary) <= limit:
            domains[tensor["name"]] = sorted(str(value) for value, _ in summary)
    return domains


def recorded_string_domains(text: str | None) -> dict[str, list[str]]:
    """The string domains of a `schema.pbtxt` (`{feature: values}`; none without a schema)."""
    if not text:
        return {}
    schema = text_format.Parse(text, schema_pb2.Schema())
    return {f.name: list(f.string_domain.value) for f in schema.feature if f.HasField("string_domain")}


def _features(entry: Mapping) -> list[schema_pb2.Feature]:
    parse = entry["parse"]
    kind = parse["type"]
    features = []
    for key, dtype in entry["featureKeys"].items():
        feature = schema_pb2.Feature(name=key, type=_TYPES[dtype])
        if kind == "FixedLenFeature":
            # written in every record, with exactly this many values
            feature.presence.min_fraction = 1.0
            feature.presence.min_count = 1
            feature.shape.CopyFrom(_shape(parse["shape"]))
        elif kind == "SparseFeature" and key in per_dimension(parse["indexKey"]) and parse.get("size"):
            size = per_dimension(parse["size"])[per_dimension(parse["indexKey"]).index(key)]
            feature.int_domain.min = 0
            feature.int_domain.max = size - 1
        elif kind == "RaggedFeature" and key == parse["valueKey"]:
            feature.value_count.min = 0  # a list may be empty
        id_range = _id_range(entry)
        if id_range is not None and key in (parse.get("key"), parse.get("valueKey")):
            feature.int_domain.min, feature.int_domain.max = id_range
            feature.int_domain.is_categorical = True
        features.append(feature)
    return features


def tfmd_schema(
    metadata: Mapping, skip: Iterable[str] = (), domains: Mapping[str, Sequence[str]] | None = None
) -> schema_pb2.Schema:
    """The `Schema` of the records a metadata document describes.

    Args:
        metadata: the document (`tensor_metadata.json`).
        skip: tensors not stored in the records (partition columns kept in folder names).
        domains: `{string feature: its values}` (`string_domains` of the train report): each
            becomes that feature's `string_domain`, as TFDV's `infer_schema` gives it.

    Returns:
        A `tensorflow_metadata` `Schema`: the features in the document's order (features,
        extra columns, labels), each tensor under its name in the default
        `tensor_representation_group`.
    """
    skipped = set(skip)
    for info in metadata.get("data", {}).values():
        skipped.update(info.get("partitionColumns", []))
    schema = schema_pb2.Schema()
    group = schema.tensor_representation_group[""]
    entries = [*metadata["features"], *metadata.get("extraColumns", []), *metadata["labels"]]
    for entry in entries:
        if entry["name"] in skipped:
            continue
        features = _features(entry)
        for feature in features:
            if feature.type == schema_pb2.BYTES and feature.name in (domains or {}):
                feature.string_domain.value.extend(domains[feature.name])
        schema.feature.extend(features)
        group.tensor_representation[entry["name"]].CopyFrom(_representation(entry["parse"]))
    return schema


def schema_text(metadata: Mapping, domains: Mapping[str, Sequence[str]] | None = None) -> str:
    """The `schema.pbtxt` text of a metadata document (protobuf text format)."""
    return text_format.MessageToString(tfmd_schema(metadata, domains=domains))
