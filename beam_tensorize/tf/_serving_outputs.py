"""The serving model's outputs: one tensor's values as the features of an Example
(`_example_values`), those features as `tf.io.parse_example` gives them (`_parsed`), and the
structured tensors flattened for a signature (`flatten_outputs`)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import tensorflow as tf

__all__ = ["flatten_outputs"]


def _example_values(name: str, values: tf.RaggedTensor, layout) -> dict[str, tf.RaggedTensor]:
    """The Example features of one tensor, per row: `<name>` its values flattened and, for a
    ragged layout, `<name>/row_lengths_<i>` the lengths of its lists at depth `i`."""
    out = {}
    for dim, key in layout.row_length_keys():
        level = values.merge_dims(1, dim) if dim > 1 else values
        out[key] = level.with_values(level.values.row_lengths())
    out[name] = values.merge_dims(1, -1) if values.ragged_rank > 1 else values
    return out


def _parsed(name: str, features: Mapping[str, tf.RaggedTensor], feature, rows):
    """What `tf.io.parse_example` gives for `feature` from Examples holding `features`."""
    if isinstance(feature, tf.io.FixedLenFeature):
        values = features[name]
        tf.debugging.assert_equal(
            values.row_lengths(),
            tf.constant(math.prod(feature.shape), tf.int64),
            message=f"tensor {name!r} does not have the values its shape {list(feature.shape)} needs",
        )
        shape = tf.concat([tf.reshape(rows, [1]), tf.constant(list(feature.shape), tf.int64)], 0)
        return tf.reshape(tf.cast(values.flat_values, feature.dtype), shape)
    if isinstance(feature, tf.io.SparseFeature):
        indices, values = features[feature.index_key], features[feature.value_key]
        coordinates = tf.stack([indices.value_rowids(), indices.flat_values], axis=1)
        dense_shape = tf.stack([rows, tf.constant(feature.size, tf.int64)])
        return tf.SparseTensor(coordinates, values.flat_values, dense_shape)
    values = features[feature.value_key]
    result, per_example = values.flat_values, values.row_lengths()
    for partition in reversed(feature.partitions):
        if isinstance(partition, tf.io.RaggedFeature.UniformRowLength):
            result = tf.RaggedTensor.from_uniform_row_length(result, partition.length)
            per_example = per_example // partition.length
        else:
            lengths = features[partition.key]
            result = tf.RaggedTensor.from_row_lengths(result, lengths.flat_values)
            per_example = lengths.row_lengths()
    return tf.RaggedTensor.from_row_lengths(result, per_example)


def flatten_outputs(tensors: Mapping[str, object]) -> dict[str, tf.Tensor]:
    """Structured tensors as a signature returns them: a dense tensor as it is,
    `<name>/values` and `<name>/row_splits_<i>` for a ragged one, `<name>/indices`,
    `<name>/values` and `<name>/dense_shape` for a sparse one."""
    flat = {}
    for name, value in tensors.items():
        if isinstance(value, tf.SparseTensor):
            flat[f"{name}/indices"] = value.indices
            flat[f"{name}/values"] = value.values
            flat[f"{name}/dense_shape"] = value.dense_shape
        elif isinstance(value, tf.RaggedTensor):
            flat[f"{name}/values"] = value.flat_values
            for i, splits in enumerate(value.nested_row_splits):
                flat[f"{name}/row_splits_{i}"] = splits
        else:
            flat[name] = value
    return flat
