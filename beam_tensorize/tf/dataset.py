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


def _partition_value(text: str | None, feature) -> tf.Tensor:
    dtype = feature.dtype
    if text is None:
        return tf.constant("" if dtype == tf.string else 0, dtype)
    if dtype == tf.string:
        return tf.constant(text)
    return tf.constant(float(text) if dtype.is_floating else int(text), dtype)


def _partitioned_records(paths, relative, columns, spec, compression) -> tf.data.Dataset:
    """(record, {partition column: value}) pairs, file after file."""
    from beam_tensorize.kernels.partitions import parse_partition_path

    empty = {c: _partition_value(None, spec[c]) for c in columns}
    datasets = [tf.data.TFRecordDataset([], compression_type=compression).map(lambda r: (r, empty))]
    for path, name in zip(paths, relative, strict=True):
        folders = dict(parse_partition_path(posixpath.dirname(name)))
        values = {c: _partition_value(folders.get(c), spec[c]) for c in columns}
        records = tf.data.TFRecordDataset([path], compression_type=compression)
        datasets.append(records.map(lambda record, values=values: (record, values)))
    dataset = datasets[-1] if len(datasets) == 1 else datasets[1]
    for more in datasets[2:]:
        dataset = dataset.concatenate(more)
    return dataset


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
        A `tf.data.Dataset` over the committed files, in file order. For a partitioned split
        (`--partition_by`), the partition tensors come from the files' `<col>=<value>` folders
        (a null value, `__HIVE_DEFAULT_PARTITION__`, gives 0 or "").
    """
    metadata = load_metadata(output_dir)
    folder = _SPLITS.get(split, split)
    data = metadata["data"][folder]
    files = [posixpath.join(output_dir.rstrip("/"), folder, f) for f in data["files"]]
    compression = {"GZIP": "GZIP", "ZLIB": "ZLIB"}.get(metadata.get("compression"), "")
    spec = parse_spec(metadata)
    label_names = [entry["name"] for entry in metadata["labels"]]
    partition_columns = data.get("partitionColumns", [])
    if partition_columns:
        dataset = _partitioned_records(files, data["files"], partition_columns, spec, compression)
        record_spec = {k: v for k, v in spec.items() if k not in partition_columns}

        def parse(records, values):
            parsed = tf.io.parse_example(records, record_spec)
            return {**parsed, **values}

        dataset = dataset.batch(batch_size).map(parse)
    else:
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
