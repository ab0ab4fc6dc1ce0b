"""Read a beam_tensorize output folder back into TensorFlow, using only its metadata.

Example::

    ds = make_dataset("tensorize_output", batch_size=32)
    features, labels = next(iter(ds))
"""

from __future__ import annotations

import json
import posixpath
from collections.abc import Callable, Mapping

import tensorflow as tf

from beam_tensorize.job.file_systems import local_path
from beam_tensorize.job.transaction import recover
from beam_tensorize.kernels.metadata import SPLIT_FOLDERS
from beam_tensorize.tf._compat import parse_example, single_device
from beam_tensorize.tf._iterators import Batches

__all__ = ["committed_split", "load_metadata", "make_dataset", "parse_spec"]

_DTYPES = {"int64": tf.int64, "float32": tf.float32, "string": tf.string}


def load_metadata(output_dir: str) -> dict:
    """The `metadata/tensor_metadata.json` document of an output folder."""
    path = posixpath.join(local_path(output_dir).rstrip("/"), "metadata", "tensor_metadata.json")
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


def committed_split(output_dir: str, split: str) -> tuple[str, str, dict, dict]:
    """(output folder, split folder name, metadata, the split's entry) of a complete output.

    Raises:
        ValueError: the output has no `_SUCCESS`, or no such split.
    """
    root = local_path(output_dir).rstrip("/")
    folder = SPLIT_FOLDERS.get(split, split)
    recover(root)  # a commit a killed run left: finished first (its new output is complete)
    if not tf.io.gfile.exists(posixpath.join(root, "_SUCCESS")):
        raise ValueError(
            f"{root} has no _SUCCESS: the job writing it has not finished, or failed; wait for it "
            "or run it again"
        )
    metadata = load_metadata(root)
    if folder not in metadata["data"]:
        raise ValueError(f"{root} has no {folder} split; it has {sorted(metadata['data'])}")
    return root, folder, metadata, metadata["data"][folder]


@single_device
def make_dataset(
    output_dir: str,
    split: str = "train",
    batch_size: int = 128,
    labels: bool = True,
    *,
    shuffle_files: bool = False,
    shuffle_buffer: int = 0,
    seed: int | None = None,
    repeat: int | None = 1,
    drop_remainder: bool = False,
    num_parallel_reads: int | None = None,
    num_parallel_calls: int = tf.data.AUTOTUNE,
    prefetch: int | None = tf.data.AUTOTUNE,
    input_context: tf.distribute.InputContext | None = None,
    num_shards: int | None = None,
    shard_index: int | None = None,
) -> tf.data.Dataset:
    """A training-ready dataset of parsed batches from a TFRecord output folder.

    Files are read in parallel (interleaved, `num_parallel_reads` at a time; AUTOTUNE when
    None), optionally shuffled (`shuffle_files` the file order, `shuffle_buffer` records),
    repeated, batched, parsed in parallel and prefetched. With `seed`, the same seed gives the
    same order on every run; the interleave is deterministic.

    Args:
        output_dir: the folder `Tensorize` wrote (it must hold `_SUCCESS`).
        split: "train", "validation" or "test" (or a split folder's name).
        batch_size: examples per batch (per input pipeline when sharded).
        labels: yield `(features, labels)` pairs; otherwise one dict of all tensors.
        shuffle_files: shuffle the order of the files (each epoch anew, from `seed`). A
            partitioned split (`--partition_by`) is read file after file in file order:
            neither this nor `num_parallel_reads` applies to it (`shuffle_buffer` does).
        shuffle_buffer: shuffle records through a buffer of this many (0: no shuffle).
        seed: the seed of both shuffles.
        repeat: epochs (None or -1: forever).
        drop_remainder: drop a last, smaller batch.
        num_parallel_reads: files read at once (None: AUTOTUNE).
        num_parallel_calls: batches parsed at once.
        prefetch: batches prepared ahead (None: no prefetch).
        input_context: the `tf.distribute.InputContext` of
            `strategy.distribute_datasets_from_function`: this pipeline reads its shard.
        num_shards, shard_index: the same without a strategy. Shards are disjoint and complete:
            by file when there are at least as many files as shards, else by record.

    Returns:
        A `tf.data.Dataset` of the committed files. For a partitioned split (`--partition_by`),
        the partition tensors come from the files' `<col>=<value>` folders (a null value,
        `__HIVE_DEFAULT_PARTITION__`, gives 0 or "").

    Raises:
        ValueError: the output is incomplete (no `_SUCCESS`), has no such split, is not
            TFRecord, or the sharding arguments do not fit; the message says what to do.
    """
    root, folder, metadata, data = committed_split(output_dir, split)
    _check_example_records(root, folder, metadata, data)
    num_shards, shard_index = _shard_arguments(input_context, num_shards, shard_index)
    names = list(data["files"])
    files = [posixpath.join(root, folder, f) for f in names]
    compression = {"GZIP": "GZIP", "ZLIB": "ZLIB"}.get(metadata.get("compression"), "")
    spec = parse_spec(metadata)
    label_names = [entry["name"] for entry in metadata["labels"]]
    # folder columns that are tensors (not Avro2TF's `partition=<id>` folders: their id is the
    # records' own `partitionId`)
    partition_columns = [c for c in data.get("partitionColumns", []) if c in spec]
    by_file = num_shards is not None and len(files) >= num_shards
    if by_file:
        files, names = files[shard_index::num_shards], names[shard_index::num_shards]
    reads = tf.data.AUTOTUNE if num_parallel_reads is None else num_parallel_reads
    if partition_columns:
        dataset, parse = _partitioned_dataset(files, names, partition_columns, spec, compression)
    else:
        dataset, parse = _interleaved_dataset(files, spec, compression, shuffle_files, seed, reads)
    if num_shards is not None and not by_file:
        dataset = dataset.shard(num_shards, shard_index)
    if shuffle_buffer:
        dataset = dataset.shuffle(shuffle_buffer, seed=seed, reshuffle_each_iteration=True)
    if repeat is None or repeat < 0:
        dataset = dataset.repeat()
    elif repeat != 1:
        dataset = dataset.repeat(repeat)
    dataset = dataset.batch(batch_size, drop_remainder=drop_remainder)
    dataset = dataset.map(parse, num_parallel_calls=num_parallel_calls, deterministic=True)
    if labels:
        dataset = _split_labels(dataset, label_names)
    if prefetch is not None:
        dataset = dataset.prefetch(prefetch)
    return Batches(dataset)  # eager iterators rebuild each batch in one pass


def _check_example_records(root: str, folder: str, metadata: Mapping, data: Mapping) -> None:
    """Raise a ValueError unless the split holds TFRecord files of tf.train.Examples."""
    if data.get("format", "tfrecord") != "tfrecord":
        raise ValueError(
            f"{root}/{folder} holds {data['format']} files; make_dataset reads TFRecord outputs "
            "(read a Parquet output with beam_tensorize.tf.Dataset.from_output)"
        )
    record_type = metadata.get("recordType", "Example")
    if record_type != "Example":
        raise ValueError(
            f"{root}/{folder} holds {record_type} records; make_dataset parses tf.train.Examples "
            "(read ExampleListWithContext records with TF-Ranking's data readers, e.g. "
            "tfr.data.build_ranking_dataset with data_format ELWC)"
        )


def _shard_arguments(
    input_context: tf.distribute.InputContext | None, num_shards: int | None, shard_index: int | None
) -> tuple[int | None, int | None]:
    """(num_shards, shard_index) of this input pipeline, checked (None, None: unsharded)."""
    if input_context is not None:
        if num_shards is not None or shard_index is not None:
            raise ValueError("give input_context or num_shards / shard_index, not both")
        num_shards, shard_index = input_context.num_input_pipelines, input_context.input_pipeline_id
    if (num_shards is None) != (shard_index is None) or (
        num_shards is not None and not 0 <= shard_index < num_shards
    ):
        raise ValueError(f"shard_index must be in [0, num_shards), got {shard_index} of {num_shards}")
    return num_shards, shard_index


def _partitioned_dataset(
    files, names, partition_columns, spec, compression
) -> tuple[tf.data.Dataset, Callable]:
    """(records with their partition values, file after file; the batches' parse function)."""
    dataset = _partitioned_records(files, names, partition_columns, spec, compression)
    record_spec = {k: v for k, v in spec.items() if k not in partition_columns}

    def parse(records, values):
        return {**parse_example(records, record_spec), **values}

    return dataset, parse


def _interleaved_dataset(
    files, spec, compression, shuffle_files, seed, reads
) -> tuple[tf.data.Dataset, Callable]:
    """(records of the files read `reads` at a time, interleaved; the batches' parse function)."""
    paths = tf.data.Dataset.from_tensor_slices(files if files else tf.constant([], tf.string))
    if shuffle_files:
        paths = paths.shuffle(max(1, len(files)), seed=seed, reshuffle_each_iteration=True)
    dataset = paths.interleave(
        lambda path: tf.data.TFRecordDataset(path, compression_type=compression),
        cycle_length=reads,
        num_parallel_calls=reads,
        deterministic=True,
    )

    def parse(records):
        return parse_example(records, spec)

    return dataset, parse


def _split_labels(dataset: tf.data.Dataset, label_names: list[str]) -> tf.data.Dataset:
    """The parsed batches as (features, labels) pairs."""
    return dataset.map(
        lambda parsed: (
            {k: v for k, v in parsed.items() if k not in label_names},
            {k: v for k, v in parsed.items() if k in label_names},
        )
    )
