"""Build `metadata/tensor_metadata.json`: what each tensor is and how to parse it back.

The document (format version 1) holds, per feature and label, the Avro2TF fields (`name`,
`dtype`, `shape`, `isSparse`, `isDocumentFeature`, `numUniqueValues`) plus a `parse` entry a
reader turns into a `tf.io` feature spec without guessing, and the Example feature keys
with their value types (`featureKeys`). `data` lists the committed files of each split.
It is plain data, sorted, with no time stamps: the same run gives the same bytes.

Example:
    >>> from beam_tensorize.config import parse_config
    >>> config = parse_config({"features": [{"outputTensorInfo": {"name": "x", "dtype": "long", "shape": [2]}}]})
    >>> build_metadata(config)["features"][0]["parse"]
    {'type': 'FixedLenFeature', 'key': 'x', 'dtype': 'int64', 'shape': [2]}
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from beam_tensorize.config.model import TensorConfig, TensorizeConfig
from beam_tensorize.kernels.features.conversion import FeatureLayout, layout_of
from beam_tensorize.kernels.features.hashing import hashing_description
from beam_tensorize.kernels.features.vocab import FeatureList
from beam_tensorize.kernels.partitions import PARTITION_ID_COLUMN, PARTITION_ID_LAYOUT

__all__ = [
    "config_differences",
    "config_fingerprint",
    "FORMAT_VERSION",
    "METADATA_FILE",
    "build_metadata",
    "integer_maxima",
    "integer_tensor_names",
    "SPLIT_FOLDERS",
    "merge_maxima",
    "metadata_json",
    "sum_counts",
]

FORMAT_VERSION = 1
#: Execution mode -> the split folder its records go to (the keys of the document's `data`).
SPLIT_FOLDERS = {"train": "trainingData", "validation": "validationData", "test": "testData"}
#: Path of the metadata document below the output folder.
METADATA_FILE = "metadata/tensor_metadata.json"


def _parse_entry(layout: FeatureLayout) -> dict:
    dtype = layout.value_type
    if layout.kind == "fixed_len":
        return {"type": "FixedLenFeature", "key": layout.name, "dtype": dtype, "shape": list(layout.shape)}
    if layout.kind == "sparse":
        size = [d for d in layout.shape] if layout.shape and all(d >= 0 for d in layout.shape) else None
        return {
            "type": "SparseFeature",
            "indexKey": layout.index_key,
            "valueKey": layout.value_key,
            "dtype": "float32",
            "size": size[0] if size and len(size) == 1 else None,
        }
    lengths = dict(layout.row_length_keys())
    partitions = []
    for dim, size in enumerate(layout.shape):
        if dim == 0:
            continue
        if size < 0:
            partitions.append({"type": "RowLengths", "key": lengths[dim]})
        else:
            partitions.append({"type": "UniformRowLength", "length": size})
    return {"type": "RaggedFeature", "valueKey": layout.name, "dtype": dtype, "partitions": partitions}


def _feature_keys(layout: FeatureLayout) -> dict[str, str]:
    if layout.kind == "sparse":
        return {layout.index_key: "int64", layout.value_key: "float32"}
    keys = {layout.name: layout.value_type}
    keys.update({key: "int64" for _, key in layout.row_length_keys()})
    return keys


def _vector_size(tensor: TensorConfig, feature_list: FeatureList | None, discard: bool) -> int | None:
    """Length of the vector an NTV tensor becomes (hash buckets, or the list's size + 1 for the
    unknown id unless unknown entries are discarded), else None."""
    hash_info = tensor.input.transform_config.hash_info
    if hash_info is not None:
        ntv = tensor.input.column_config is not None or tensor.output.is_sparse
        return hash_info.hash_bucket_size if ntv else None
    if feature_list is not None and feature_list.ntv:
        return len(feature_list) + (0 if discard else 1)
    return None


def integer_tensor_names(tensors: Iterable[TensorConfig]) -> tuple[str, ...]:
    """The tensors whose `numUniqueValues` is the largest value in the train data (Avro2TF's
    rule for int / long columns): scalar int / long tensors that are not hashed (a feature list,
    when the column holds strings, takes precedence)."""
    return tuple(
        t.name
        for t in tensors
        if t.output.dtype in ("int", "long")
        and not t.output.shape
        and t.input.transform_config.hash_info is None
    )


def integer_maxima(batch: pa.RecordBatch, names: Sequence[str]) -> dict[str, int]:
    """The largest value of each integer column of `batch` among `names` (all-null: none).

    Example:
        >>> integer_maxima(pa.RecordBatch.from_pydict({"y": [0, 1, None], "s": ["a", "b", "c"]}), ["y", "s"])
        {'y': 1}
    """
    found = {}
    for name in names:
        if name in batch.schema.names and pa.types.is_integer(batch.schema.field(name).type):
            value = pc.max(batch.column(name)).as_py()
            if value is not None:
                found[name] = int(value)
    return found


def merge_maxima(maxima: Iterable[Mapping[str, int]]) -> dict[str, int]:
    """The largest value per name over several `integer_maxima` results, sorted by name."""
    merged: dict[str, int] = {}
    for found in maxima:
        for name, value in found.items():
            merged[name] = max(value, merged.get(name, value))
    return dict(sorted(merged.items()))


def sum_counts(*counts: Mapping[str, int] | None) -> dict[str, int]:
    """Per name, the sum of several `{name: count}` (names sorted).

    Example:
        >>> sum_counts({"b": 1}, None, {"a": 2, "b": 3})
        {'a': 2, 'b': 4}
    """
    total: dict[str, int] = {}
    for found in counts:
        for name, n in (found or {}).items():
            total[name] = total.get(name, 0) + n
    return dict(sorted(total.items()))


def _tensor_entry(
    tensor: TensorConfig,
    feature_list: FeatureList | None,
    list_path: str | None,
    maximum: int | None,
    discard: bool = False,
    off_shape_rows: int = 0,
) -> dict:
    out = tensor.output
    layout = layout_of(tensor)
    hash_info = tensor.input.transform_config.hash_info
    size = _vector_size(tensor, feature_list, discard)
    # Lists and vectors lose their unknown entries when discarding; a scalar keeps the id.
    unknown_id = feature_list is not None and not (discard and (out.shape or feature_list.ntv))
    if off_shape_rows and layout.kind == "fixed_len" and layout.shape:
        # Rows of another outer length were kept (Avro2TF's rule): read the values back ragged.
        layout = dataclasses.replace(layout, shape=(-1, *layout.shape[1:]), kind="ragged")
    parse = _parse_entry(layout)
    keys = _feature_keys(layout)
    if size is not None and layout.kind == "sparse":
        parse["size"] = size
    elif size is not None:  # a dense vector of all ids
        parse = {"type": "FixedLenFeature", "key": out.name, "dtype": "float32", "shape": [size]}
        keys = {out.name: "float32"}
    shape = list(out.shape)
    if size is not None:
        # A vector of N entries (Avro2TF's rule): its length ends the shape; no id count.
        shape.append(size)
        unique = None
    elif hash_info is not None:
        unique = hash_info.hash_bucket_size + 1  # ids 0..n-1, and n for null / empty input
    elif feature_list is not None:
        unique = len(feature_list) + int(unknown_id)  # the out-of-vocabulary id
    else:
        unique = maximum  # Avro2TF: the largest value of an int / long column, else null
    entry = {
        "name": out.name,
        "dtype": out.dtype,
        "shape": shape,
        "isSparse": layout.kind == "sparse",
        "isDocumentFeature": out.is_document_feature,
        "numUniqueValues": unique,
        "layout": "fixed_len" if parse["type"] == "FixedLenFeature" else layout.kind,
        "featureKeys": keys,
        "parse": parse,
        "input": tensor.input.to_json_dict(),
    }
    if off_shape_rows:
        entry["offShapeRows"] = off_shape_rows
    if hash_info is not None:
        entry["hashing"] = hashing_description(hash_info)
    if feature_list is not None:
        entry["featureList"] = {
            "path": list_path,
            "size": len(feature_list),
            "unknownId": len(feature_list) if unknown_id else None,
            "entries": "name,term" if feature_list.ntv else "string",
            "sha256": feature_list.digest(),
        }
    return entry


def build_metadata(
    config: TensorizeConfig,
    splits: Mapping[str, Mapping] | None = None,
    feature_lists: Mapping[str, FeatureList] | None = None,
    list_paths: Mapping[str, str] | None = None,
    record_type: str = "Example",
    compression: str = "none",
    extra_columns: Sequence[FeatureLayout] = (),
    maxima: Mapping[str, int] | None = None,
    discard_unknown: bool = False,
    transform: Mapping | None = None,
) -> dict:
    """The metadata document for `config`.

    Args:
        config: the parsed config.
        splits: per split folder (e.g. `trainingData`): `{"files": [...], "numRecords": n, ...}`;
            a split's `offShape` (`{tensor: rows}`, rows kept whose outer dimension differs from
            the tensor's fixed shape) makes that tensor's parse entry ragged, with
            `offShapeRows` the rows over all splits.
        feature_lists: the feature lists used, by tensor name.
        list_paths: where each feature list is, relative to the output folder.
        record_type: the TFRecord payload type.
        compression: the data files' compression ("none", "gzip", "snappy", ...).
        extra_columns: how the input columns kept as they are were stored.
        maxima: the largest value of each of the `integer_tensor_names` in the train data
            (their `numUniqueValues`).
        discard_unknown: entries not in their feature list were left out of lists and vectors
            (which then have no unknown id; scalars keep it).
        transform: the run's `transform` entry (`TransformSettings.to_json`: what serving needs
            beside the config and the lists); None leaves it out.

    Returns:
        A JSON-serialisable dict.
    """
    lists = dict(feature_lists or {})
    paths = dict(list_paths or {})
    maxima = dict(maxima or {})
    off_shape = sum_counts(*(info.get("offShape") for info in (splits or {}).values()))

    def entry(t: TensorConfig) -> dict:
        return _tensor_entry(
            t,
            lists.get(t.name),
            paths.get(t.name),
            maxima.get(t.name),
            discard_unknown,
            off_shape.get(t.name, 0),
        )

    features = [entry(t) for t in config.features]
    partition_ids = (transform or {}).get("partitionIds")
    if partition_ids:  # Avro2TF's TensorMetadataGeneration lists partitionId as a feature
        extra_columns = [layout for layout in extra_columns if layout.name != PARTITION_ID_COLUMN]
        features.append(_partition_id_entry(partition_ids["field"], partition_ids["numPartitions"]))
    document = {
        "formatVersion": FORMAT_VERSION,
        "config": config.to_json_dict(),
        "configFingerprint": config_fingerprint(config),
        "recordType": record_type,
        "compression": compression.upper() if compression != "none" else "NONE",
        "features": features,
        "labels": [entry(t) for t in config.labels],
        "extraColumns": [_extra_entry(layout) for layout in extra_columns],
        "data": {name: dict(info) for name, info in sorted((splits or {}).items())},
    }
    if transform is not None:
        document["transform"] = dict(transform)
    return document


def config_fingerprint(config: TensorizeConfig) -> str:
    """SHA-256 of the normalized config (`TensorizeConfig.to_json_dict`, keys sorted): equal for
    configs that mean the same, whatever their formatting or omitted defaults."""
    text = json.dumps(config.to_json_dict(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def config_differences(config: TensorizeConfig, recorded: Mapping) -> list[str]:
    """What differs between `config` and a config recorded in metadata (`to_json_dict` form),
    tensor by tensor: `added x`, `removed y`, `changed z`."""

    def by_name(document: Mapping) -> dict[str, dict]:
        entries = list(document.get("features", [])) + list(document.get("labels", []))
        return {e["outputTensorInfo"]["name"]: e for e in entries}

    now, before = by_name(config.to_json_dict()), by_name(recorded)
    found = [f"added {n}" for n in now if n not in before]
    found += [f"removed {n}" for n in before if n not in now]
    found += [f"changed {n}" for n in now if n in before and now[n] != before[n]]
    return found or ["tensors in another order"]


def _partition_id_entry(field: str, num_partitions: int) -> dict:
    """Avro2TF's `partitionId` feature: an int of shape `[]` with `numPartitions` values, as
    TensorMetadataGeneration lists it."""
    layout = PARTITION_ID_LAYOUT
    return {
        "name": layout.name,
        "dtype": layout.dtype,
        "shape": [],
        "isSparse": False,
        "isDocumentFeature": True,  # the default of Avro2TF's TensorMetadata, which it keeps
        "numUniqueValues": num_partitions,
        "layout": layout.kind,
        "featureKeys": _feature_keys(layout),
        "parse": _parse_entry(layout),
        "input": {"partitionFieldName": field, "numPartitions": num_partitions},
    }


def _extra_entry(layout: FeatureLayout) -> dict:
    return {
        "name": layout.name,
        "dtype": layout.dtype,
        "shape": list(layout.shape),
        "layout": layout.kind,
        "featureKeys": _feature_keys(layout),
        "parse": _parse_entry(layout),
    }


def metadata_json(metadata: Mapping) -> str:
    """The canonical text of a metadata document (stable key order, trailing newline)."""
    return json.dumps(metadata, indent=2, sort_keys=True) + "\n"
