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

import json
from collections.abc import Mapping

from beam_tensorize.config.model import TensorConfig, TensorizeConfig
from beam_tensorize.kernels.features import FeatureLayout, layout_of

__all__ = ["FORMAT_VERSION", "METADATA_FILE", "build_metadata", "metadata_json"]

FORMAT_VERSION = 1
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


def _tensor_entry(tensor: TensorConfig, num_unique_values: int | None) -> dict:
    out = tensor.output
    layout = layout_of(tensor)
    entry = {
        "name": out.name,
        "dtype": out.dtype,
        "shape": list(out.shape),
        "isSparse": layout.kind == "sparse",
        "isDocumentFeature": out.is_document_feature,
        "numUniqueValues": num_unique_values,
        "layout": layout.kind,
        "featureKeys": _feature_keys(layout),
        "parse": _parse_entry(layout),
        "input": tensor.input.to_json_dict(),
    }
    return entry


def build_metadata(
    config: TensorizeConfig,
    splits: Mapping[str, Mapping] | None = None,
    num_unique_values: Mapping[str, int] | None = None,
    record_type: str = "Example",
    compression: str = "none",
) -> dict:
    """The metadata document for `config`.

    Args:
        config: the parsed config.
        splits: per split folder (e.g. `trainingData`): `{"files": [...], "numRecords": n, ...}`.
        num_unique_values: per tensor name, the number of distinct ids (feature-list size or
            hash buckets); unknown tensors get null.
        record_type: the TFRecord payload type.
        compression: "none" or "gzip".

    Returns:
        A JSON-serialisable dict.
    """
    unique = dict(num_unique_values or {})
    return {
        "formatVersion": FORMAT_VERSION,
        "recordType": record_type,
        "compression": compression.upper() if compression != "none" else "NONE",
        "features": [_tensor_entry(t, unique.get(t.name)) for t in config.features],
        "labels": [_tensor_entry(t, unique.get(t.name)) for t in config.labels],
        "data": {name: dict(info) for name, info in sorted((splits or {}).items())},
    }


def metadata_json(metadata: Mapping) -> str:
    """The canonical text of a metadata document (stable key order, trailing newline)."""
    return json.dumps(metadata, indent=2, sort_keys=True) + "\n"
