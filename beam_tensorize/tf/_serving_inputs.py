"""The serving model's inputs: the typed raw ragged tensors it takes (`_raw_signature`), the
`tf.io.parse_example` spec of a serialized request (`raw_parse_spec`), and those tensors built
from records in Python (`raw_tensors`, exact: floating-point values as float64)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import tensorflow as tf

from beam_tensorize.kernels.arrow_types import (
    as_large_list,
    is_list_type,
    leaf_type,
    list_depth,
    list_offsets,
)
from beam_tensorize.kernels.features.conversion import layout_for_column
from beam_tensorize.kernels.features.ntv import is_ntv
from beam_tensorize.kernels.serving.requests import NTV_PARTS, raw_example_parts
from beam_tensorize.kernels.serving.settings import ServingError

if TYPE_CHECKING:  # built from one; `beam_tensorize.serving` imports this package, not the reverse
    from beam_tensorize.serving import Preprocessor

__all__ = ["as_float64", "raw_parse_spec", "raw_tensors"]

_TF_TYPES = {"int64": tf.int64, "float32": tf.float32, "string": tf.string}


def _raw_schema(pre: Preprocessor) -> pa.Schema:
    """The schema of the model's inputs: the raw columns of the recorded input schema."""
    schema = pre.settings.input_schema
    if schema is None:
        raise ServingError(
            "the TensorFlow model needs the input rows' schema, which this output's metadata "
            "does not record (transform.inputSchema); rerun the job with this version, or build the "
            "Preprocessor with from_config(..., input_schema=...)"
        )
    return pre.raw_batch(pa.RecordBatch.from_pylist([], schema=schema)).schema


def raw_parse_spec(pre: Preprocessor) -> dict:
    """`tf.io.parse_example` spec of a serving request (`Preprocessor.raw_examples`)."""
    return _request_spec(_raw_schema(pre))


def _request_spec(raw_schema: pa.Schema) -> dict:
    spec = {}
    for field in raw_schema:
        if is_ntv(field.type):
            for part, dtype in NTV_PARTS:
                key = f"{field.name}/{part}"
                value_type = _TF_TYPES["string" if dtype == "string" else "float32"]
                spec[key] = tf.io.RaggedFeature(value_type, key, row_splits_dtype=tf.int64)
            continue
        layout = layout_for_column(field.name, field.type)
        partitions = [tf.io.RaggedFeature.RowLengths(key) for _, key in layout.row_length_keys()]
        spec[field.name] = tf.io.RaggedFeature(
            _TF_TYPES[layout.value_type], field.name, partitions=partitions, row_splits_dtype=tf.int64
        )
    return spec


def _raw_signature(raw_schema: pa.Schema) -> dict[str, tf.RaggedTensorSpec]:
    """The typed inputs of the model (floating-point values as float64, exact)."""
    specs = {}
    for field in raw_schema:
        if is_ntv(field.type):
            for part, dtype in NTV_PARTS:
                specs[f"{field.name}/{part}"] = tf.RaggedTensorSpec(
                    [None, None], tf.string if dtype == "string" else tf.float64, 1, tf.int64
                )
            continue
        depth = max(list_depth(field.type), 1)
        specs[field.name] = tf.RaggedTensorSpec(
            [None] * (depth + 1), _input_dtype(leaf_type(field.type)), depth, tf.int64
        )
    return specs


def _input_dtype(leaf: pa.DataType) -> tf.DType:
    if pa.types.is_floating(leaf) or pa.types.is_decimal(leaf):
        return tf.float64
    if pa.types.is_integer(leaf) or pa.types.is_boolean(leaf):
        return tf.int64
    return tf.string


def raw_tensors(pre: Preprocessor, records) -> dict[str, tf.RaggedTensor]:
    """The model's raw inputs for records (dicts) or a batch of input rows, exact: floating-point
    values as float64 (a serialized request carries them as float32).

    Raises:
        ValueError: a null inside a list (an Example cannot hold one either).
    """
    batch = records if isinstance(records, pa.RecordBatch) else pre.record_batch(records)
    raw = pre.raw_batch(batch)
    tensors = {}
    for name, column in raw_example_parts(raw).items():
        splits = []
        if not is_list_type(column.type):
            valid = np.asarray(column.is_valid(), dtype=bool)  # a scalar: one value, none for a null
            splits.append(np.concatenate([[0], np.cumsum(valid)]).astype(np.int64))
            column = column.drop_null()
        while is_list_type(column.type):
            column = as_large_list(column)
            if column.null_count:
                column = column.fill_null([])
            splits.append(list_offsets(column))
            column = column.flatten()
        if column.null_count:
            raise ValueError(f"raw column {name!r} holds a null inside a list")
        dtype = _input_dtype(column.type)
        if dtype == tf.string:
            values = tf.constant(column.cast(pa.large_binary()).to_pylist(), tf.string)
        else:
            arrow_type = pa.float64() if dtype == tf.float64 else pa.int64()
            values = tf.constant(np.asarray(column.cast(arrow_type)), dtype)
        tensors[name] = tf.RaggedTensor.from_nested_row_splits(values, [tf.constant(s) for s in splits])
    return tensors


def as_float64(raw: Mapping[str, object]) -> dict:
    """Raw inputs with their floating-point values as float64, the type the model takes (a
    request's float32 values, Keras' float32 casts)."""
    return {k: tf.cast(v, tf.float64) if v.dtype.is_floating else v for k, v in raw.items()}
