"""Read a beam_tensorize output folder back into TensorFlow, using only its metadata.

Example::

    ds = make_dataset("tensorize_output", batch_size=32)
    features, labels = next(iter(ds))
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Mapping

import tensorflow as tf

__all__ = ["load_metadata", "make_dataset", "parse_spec"]

_SPLITS = {"train": "trainingData", "validation": "validationData", "test": "testData"}
_DTYPES = {"int64": tf.int64, "float32": tf.float32, "string": tf.string}


def load_metadata(output_dir: str) -> dict:
    """The `metadata/tensor_metadata.json` document of an output folder."""
    path = posixpath.join(output_dir.rstrip("/"), "metadata", "tensor_metadata.json")
    with tf.io.gfile.GFile(path, "r") as f:
        return json.load(f)


def _feature(entry: Mapping):
    parse = entry["parse"]
    dtype = _DTYPES[parse["dtype"]]
    kind = parse["type"]
    if kind == "FixedLenFeature":
        return tf.io.FixedLenFeature(parse["shape"], dtype)
    if kind == "SparseFeature":
        if parse.get("size") is None:
            return tf.io.RaggedFeature(tf.float32, value_key=parse["valueKey"])
        return tf.io.SparseFeature(parse["indexKey"], parse["valueKey"], dtype, parse["size"])
    partitions = []
    for p in parse["partitions"]:
        if p["type"] == "RowLengths":
            partitions.append(tf.io.RaggedFeature.RowLengths(p["key"]))
        else:
            partitions.append(tf.io.RaggedFeature.UniformRowLength(p["length"]))
    return tf.io.RaggedFeature(
        dtype, value_key=parse["valueKey"], partitions=partitions, row_splits_dtype=tf.int64
    )


def parse_spec(metadata: Mapping, include_labels: bool = True) -> dict:
    """`{tensor name: tf.io.*Feature}` for `tf.io.parse_example`, built from the metadata."""
    entries = list(metadata["features"]) + list(metadata.get("extraColumns", []))
    entries += list(metadata["labels"]) if include_labels else []
    return {entry["name"]: _feature(entry) for entry in entries}


def make_dataset(
    output_dir: str,
    split: str = "train",
    batch_size: int = 128,
    labels: bool = True,
) -> tf.data.Dataset:
    """A dataset of parsed batches from an output folder.

    Args:
        output_dir: the folder `Tensorize` wrote.
        split: "train", "validation" or "test".
        batch_size: examples per batch.
        labels: yield `(features, labels)` pairs; otherwise one dict of all tensors.

    Returns:
        A `tf.data.Dataset` over the committed files, in file order.
    """
    metadata = load_metadata(output_dir)
    folder = _SPLITS.get(split, split)
    files = [posixpath.join(output_dir.rstrip("/"), folder, f) for f in metadata["data"][folder]["files"]]
    compression = "GZIP" if metadata.get("compression") == "GZIP" else ""
    spec = parse_spec(metadata)
    label_names = [entry["name"] for entry in metadata["labels"]]
    dataset = tf.data.TFRecordDataset(files, compression_type=compression)
    dataset = dataset.batch(batch_size).map(lambda records: tf.io.parse_example(records, spec))
    if labels:
        dataset = dataset.map(
            lambda parsed: (
                {k: v for k, v in parsed.items() if k not in label_names},
                {k: v for k, v in parsed.items() if k in label_names},
            )
        )
    return dataset
