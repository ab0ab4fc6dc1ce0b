"""The batch job's transformation as TensorFlow ops, for a SavedModel (serving parity).

Built from a `beam_tensorize.serving.Preprocessor`. Its inputs are the raw columns: each
tensor's `columnExpr` / `columnConfig` result before tokenization, hashing and lookup
(`Preprocessor.raw_batch`), as ragged tensors `[batch, None]` (a scalar column holds one value
per row, none for a null; a list of lists is ragged twice; a name-term-value column is three
inputs `<name>/name`, `<name>/term`, `<name>/value`). Its outputs are what
`beam_tensorize.tf.make_dataset` gives for the written records: a dense tensor, a
`tf.RaggedTensor` or a `tf.SparseTensor` per tensor, as the metadata's `parse` entry says.

The ops match the batch kernels bit for bit:

* tokenization: `tf.strings.lower(encoding="utf-8")` (Java's full lower-casing, as Spark's
  `RegexTokenizer`), split on runs of characters other than ASCII letters, digits and `_`, the
  English stop words removed from a `tf.lookup.StaticHashTable`;
* hashing: `tf.strings.to_hash_bucket_fast` (one function) or `to_hash_bucket_strong` with the
  recorded keys (several); integers and booleans hash as their decimal / `true` text;
* feature lists: a `tf.lookup.StaticHashTable` from entry to index, the unknown id by default;
* name-term-value vectors: entries of one id in a row merged by the combiner in float64.

Not available as TensorFlow ops (building the model raises `ServingError` naming the tensor):
Avro2TF's salted MD5 hashing, hashing floating-point values or writing them as strings (Java's
number formatting). Avro2TF partition ids (MD5) are not among the outputs.

Example:
    >>> import fastavro, tempfile
    >>> import apache_beam as beam
    >>> from beam_tensorize import Tensorize, load_config
    >>> from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
    >>> from beam_tensorize.serving import Preprocessor
    >>> out = tempfile.mkdtemp()
    >>> with beam.Pipeline() as p:
    ...     _ = p | Tensorize(load_config(SAMPLE_CONFIG), out, inputs=[SAMPLE_AVRO], save_mode="overwrite")
    >>> pre = Preprocessor.from_output(out)
    >>> with open(SAMPLE_AVRO, "rb") as f:
    ...     records = [r for _, r in zip(range(2), fastavro.reader(f))]
    >>> module = PreprocessingModule(pre)
    >>> outputs = module.serve(tf.constant(pre.raw_examples(records)))
    >>> outputs["movieBucket"].numpy().tolist()
    [732, 27]
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
import tensorflow as tf

from beam_tensorize.config.model import TensorConfig
from beam_tensorize.kernels.arrow_types import (
    as_large_list,
    is_list_type,
    leaf_type,
    list_depth,
    list_offsets,
)
from beam_tensorize.kernels.features.conversion import layout_for_column, layout_of
from beam_tensorize.kernels.features.hashing import STRONG_HASH_KEYS
from beam_tensorize.kernels.features.ntv import is_ntv
from beam_tensorize.kernels.features.tokenize import ENGLISH_STOP_WORDS, TOKEN_SEPARATORS
from beam_tensorize.kernels.features.vocab import uses_feature_list, vocab_array
from beam_tensorize.kernels.metadata import build_metadata
from beam_tensorize.kernels.partitions import PARTITION_ID_COLUMN
from beam_tensorize.kernels.serving.requests import NTV_PARTS, raw_example_parts
from beam_tensorize.kernels.serving.settings import ServingError
from beam_tensorize.tf.dataset import parse_spec

if TYPE_CHECKING:  # built from one; `beam_tensorize.serving` imports this module, not the reverse
    from beam_tensorize.serving import Preprocessor

__all__ = [
    "PreprocessingLayer",
    "PreprocessingModule",
    "as_float64",
    "flatten_outputs",
    "preprocessing_model",
    "raw_parse_spec",
    "raw_tensors",
    "save_preprocessor",
    "tokens_of",
]

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


class PreprocessingModule(tf.Module):
    """The transformation as a `tf.Module`: `__call__(raw)` on a dict of raw ragged tensors,
    `serve(serialized)` on serialized request Examples (flat outputs, for a signature).

    Raises:
        ServingError: a tensor's transformation has no TensorFlow ops (names the tensor).
    """

    def __init__(self, pre: Preprocessor):
        super().__init__(name="beam_tensorize_preprocessing")
        self._pre = pre
        schema = _raw_schema(pre)
        self._raw_types = {f.name: f.type for f in schema}
        self._settings = pre.settings
        extra = tuple(
            layout_for_column(f.name, f.type) for f in schema if f.name not in set(pre.config.tensor_names)
        )
        metadata = build_metadata(
            pre.config,
            feature_lists=pre.feature_lists,
            extra_columns=extra,
            discard_unknown=pre.settings.discard_unknown_entries,
        )
        folder = set(pre.settings.folder_columns) | {PARTITION_ID_COLUMN}
        self._parse = {k: v for k, v in parse_spec(metadata).items() if k not in folder}
        self._tables = {}
        for tensor in pre.config.tensors:
            self._check(tensor)
            if uses_feature_list(tensor, self._after_tokens(tensor)):
                if tensor.name not in pre.feature_lists:
                    raise ServingError(f"tensor {tensor.name!r} has no feature list; give its list")
                self._tables[tensor.name] = _table(vocab_array(pre.feature_lists[tensor.name]).to_pylist())
        self._stop_words = _table(sorted(ENGLISH_STOP_WORDS))
        self._request_spec = _request_spec(schema)
        self._signature = _raw_signature(schema)
        #: Raw ragged tensors in (`_raw_signature`), the tensors out.
        self.transform = tf.function(self._call, input_signature=[self._signature], autograph=False)
        #: Serialized request Examples in, flat tensors out (the `serving_default` signature).
        self.serve = tf.function(
            self._serve, input_signature=[tf.TensorSpec([None], tf.string)], autograph=False
        )

    def __call__(self, raw: Mapping[str, tf.RaggedTensor]) -> dict:
        return self.transform(raw)

    # --- checks --------------------------------------------------------------------------

    def _after_tokens(self, tensor: TensorConfig) -> pa.DataType:
        raw = self._raw_types[tensor.name]
        if tensor.input.transform_config.tokenization is not None:
            return pa.large_list(pa.large_string())
        return raw

    def _check(self, tensor: TensorConfig) -> None:
        hash_info = tensor.input.transform_config.hash_info
        where = f"tensor {tensor.name!r} ({tensor.json_path})"
        if hash_info is not None and hash_info.hash_function != "fingerprint":
            raise ServingError(
                f"{where} hashes with {hash_info.hash_function} (salted MD5), which TensorFlow "
                "has no op for; serve it with the Python Preprocessor, or hash with 'fingerprint'"
            )
        leaf = leaf_type(self._after_tokens(tensor))
        if hash_info is not None and not is_ntv(self._raw_types[tensor.name]) and pa.types.is_floating(leaf):
            raise ServingError(
                f"{where} hashes floating-point values, whose text (Java's number format) "
                "TensorFlow cannot reproduce; serve it with the Python Preprocessor, or hash a "
                "string column"
            )

    # --- the computation ------------------------------------------------------------------

    def _serve(self, serialized):
        return flatten_outputs(self._call(as_float64(tf.io.parse_example(serialized, self._request_spec))))

    def _call(self, raw: Mapping[str, tf.RaggedTensor]) -> dict:
        rows = next(iter(raw.values())).nrows(out_type=tf.int64)
        features: dict[str, tf.RaggedTensor] = {}
        for tensor in self._pre.config.tensors:
            features.update(self._tensor(tensor, raw, rows))
        known = set(self._pre.config.tensor_names)
        for name, raw_type in self._raw_types.items():
            if name not in known:
                layout = layout_for_column(name, raw_type)
                values = _cast_leaf(raw[name], layout.value_type, leaf_type(raw_type), name)
                features.update(_example_values(name, values, layout))
        return {name: _parsed(name, features, feature, rows) for name, feature in self._parse.items()}

    def _tensor(self, tensor: TensorConfig, raw, rows) -> dict[str, tf.RaggedTensor]:
        name = tensor.name
        if is_ntv(self._raw_types[name]):
            return self._ntv(tensor, raw, rows)
        layout = layout_of(tensor)
        values = raw[name]
        leaf = leaf_type(self._raw_types[name])
        tokenization = tensor.input.transform_config.tokenization
        if tokenization is not None:
            values = self._tokenize(values, tokenization.remove_stop_words)
        hash_info = tensor.input.transform_config.hash_info
        if hash_info is not None:
            return _example_values(name, _hash_values(values, hash_info, leaf), layout)
        if name in self._tables:
            unknown = len(self._pre.feature_lists[name])
            ids = tf.ragged.map_flat_values(_lookup, self._tables[name], values, unknown)
            if list_depth(self._after_tokens(tensor)) == 0:  # a null scalar gets the unknown id
                ids = _fill_empty(ids, unknown)
            elif self._settings.discard_unknown_entries:
                ids = tf.ragged.boolean_mask(ids, tf.not_equal(ids, unknown))
            return _example_values(name, ids, layout)
        return _example_values(name, _cast_leaf(values, layout.value_type, leaf, name), layout)

    def _tokenize(self, texts: tf.RaggedTensor, remove_stop_words: bool) -> tf.RaggedTensor:
        return tokens_of(texts, self._stop_words if remove_stop_words else None)

    def _ntv(self, tensor: TensorConfig, raw, rows) -> dict[str, tf.RaggedTensor]:
        """A name-term-value tensor: its sparse (or dense) vector (`kernels.features.vocab`,
        `kernels.features.hashing`)."""
        name = tensor.name
        names, terms, values = (raw[f"{name}/{part}"] for part, _ in NTV_PARTS)
        keys = tf.strings.join([names.flat_values, terms.flat_values], separator=",")
        row_of = tf.cast(names.value_rowids(), tf.int64)
        flat_values = tf.cast(values.flat_values, tf.float64)
        hash_info = tensor.input.transform_config.hash_info
        discard = self._settings.discard_unknown_entries
        if hash_info is not None:
            n, k = hash_info.hash_bucket_size, hash_info.num_hash_functions
            ids = tf.reshape(tf.stack([_hash(keys, n, j, k) for j in range(k)], axis=1), [-1])
            row_of, flat_values = tf.repeat(row_of, k), tf.repeat(flat_values, k)
            size, combiner = n, hash_info.combiner
        else:
            size = len(self._pre.feature_lists[name])
            ids = _lookup(self._tables[name], keys, size)
            row_of, ids, flat_values = _known_or_one_unknown(row_of, ids, flat_values, size, discard, rows)
            size, combiner = size + (0 if discard else 1), "SUM"
        row_of, ids, flat_values = _combine(row_of, ids, flat_values, size, combiner)
        if layout_of(tensor).kind == "sparse":
            if self._settings.filter_zeros:
                keep = tf.not_equal(flat_values, 0.0)
                row_of, ids, flat_values = (tf.boolean_mask(t, keep) for t in (row_of, ids, flat_values))
            as_float = tf.cast(flat_values, tf.float32)
            return {
                f"{name}/indices": tf.RaggedTensor.from_value_rowids(ids, row_of, rows),
                f"{name}/values": tf.RaggedTensor.from_value_rowids(as_float, row_of, rows),
            }
        shape = tf.stack([rows, tf.constant(size, tf.int64)])
        dense = tf.scatter_nd(tf.stack([row_of, ids], axis=1), flat_values, shape)
        return {name: tf.RaggedTensor.from_tensor(tf.cast(dense, tf.float32))}


class PreprocessingLayer(tf.keras.layers.Layer):
    """A Keras layer around `PreprocessingModule`: a dict of raw ragged tensors in, the model's
    input tensors out (see the module docstring)."""

    def __init__(self, pre: Preprocessor, **kwargs):
        super().__init__(trainable=False, autocast=False, **kwargs)
        self.module = PreprocessingModule(pre)

    def call(self, inputs):
        return self.module(as_float64(inputs))


def as_float64(raw: Mapping[str, object]) -> dict:
    """Raw inputs with their floating-point values as float64, the type the model takes (a
    request's float32 values, Keras' float32 casts)."""
    return {k: tf.cast(v, tf.float64) if v.dtype.is_floating else v for k, v in raw.items()}


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


class _PreprocessingModel(tf.keras.Model):
    def __init__(self, pre: Preprocessor):
        super().__init__(name="beam_tensorize_preprocessing")
        self.preprocessing = PreprocessingLayer(pre)

    def call(self, inputs):
        return self.preprocessing(inputs)


def preprocessing_model(pre: Preprocessor) -> tf.keras.Model:
    """A Keras model: a dict of raw ragged tensors (`raw_tensors`) in, the tensors out; put it
    in front of a trained model, or call it in a `tf.data` map."""
    return _PreprocessingModel(pre)


def save_preprocessor(pre: Preprocessor, path: str) -> str:
    """Write the transformation as a SavedModel: `serving_default` takes serialized request
    Examples (`Preprocessor.raw_examples`, docs/serving.md) and returns flat tensors: a dense
    tensor per fixed-size tensor, `<name>/values` and `<name>/row_splits_<i>` per ragged one,
    `<name>/indices`, `<name>/values`, `<name>/dense_shape` per sparse one. The module's
    `__call__` (raw ragged tensors in) is saved too."""
    module = PreprocessingModule(pre)
    tf.saved_model.save(module, path, signatures={"serving_default": module.serve})
    return path


# --- helpers -----------------------------------------------------------------------------------


def tokens_of(texts: tf.RaggedTensor, stop_words: tf.lookup.StaticHashTable | None = None) -> tf.RaggedTensor:
    """Tokens of each row's texts, in order, as `beam_tensorize.kernels.features.tokenize`:
    Java's full lower-casing, split on everything but ASCII letters, digits and `_`, without
    the entries of `stop_words` (a table giving -1 for other words)."""
    texts = texts.merge_dims(1, -1) if texts.ragged_rank > 1 else texts
    # NUL separates words, and `tf.strings.lower` would cut a text at its first NUL.
    no_nul = tf.strings.regex_replace(texts.flat_values, "\\x00", " ")
    lowered = tf.strings.lower(no_nul, encoding="utf-8")
    tokens = tf.strings.split(tf.strings.regex_replace(lowered, TOKEN_SEPARATORS, " "))
    if stop_words is not None:
        tokens = tf.ragged.boolean_mask(tokens, tf.equal(stop_words.lookup(tokens), -1))
    return tf.RaggedTensor.from_row_splits(tokens.values, tf.gather(tokens.row_splits, texts.row_splits))


def _table(entries) -> tf.lookup.StaticHashTable:
    """Entry -> its index (-1 when absent)."""
    keys = [e.encode("utf-8") if isinstance(e, str) else e for e in entries]
    initializer = tf.lookup.KeyValueTensorInitializer(
        tf.constant(keys or [b""], tf.string),
        tf.range(len(keys), dtype=tf.int64) if keys else tf.constant([-1], tf.int64),
    )
    return tf.lookup.StaticHashTable(initializer, default_value=-1)


def _lookup(table: tf.lookup.StaticHashTable, strings: tf.Tensor, unknown: int) -> tf.Tensor:
    ids = table.lookup(strings)
    return tf.where(tf.equal(ids, -1), tf.constant(unknown, tf.int64), ids)


def _hash(strings: tf.Tensor, n: int, j: int, k: int) -> tf.Tensor:
    if k == 1:
        return tf.strings.to_hash_bucket_fast(strings, n)
    return tf.strings.to_hash_bucket_strong(strings, n, key=list(STRONG_HASH_KEYS[j]))


def _canonical(values: tf.Tensor, leaf: pa.DataType) -> tf.Tensor:
    """The text of raw values, as `canonical_strings` (strings, integers, booleans)."""
    if values.dtype == tf.string:
        return values
    if pa.types.is_boolean(leaf):
        return tf.where(tf.not_equal(values, 0), b"true", b"false")
    return tf.strings.as_string(values)


def _append_where_empty(values: tf.RaggedTensor, fill: tf.Tensor) -> tf.RaggedTensor:
    """Each row of `values`, or the row of `fill` (`[rows, k]`) where it is empty."""
    empty = tf.equal(values.row_lengths(), 0)
    mask = tf.tile(empty[:, None], [1, tf.shape(fill)[1]])
    return tf.concat([values, tf.ragged.boolean_mask(fill, mask)], axis=1)


def _hash_values(values: tf.RaggedTensor, hash_info, leaf: pa.DataType) -> tf.RaggedTensor:
    """k ids per value, element-major; a row without values gets k dummy ids (`hash_column`)."""
    n, k = hash_info.hash_bucket_size, hash_info.num_hash_functions
    values = values.merge_dims(1, -1) if values.ragged_rank > 1 else values
    strings = _canonical(values.flat_values, leaf)
    ids = tf.stack([_hash(strings, n, j, k) for j in range(k)], axis=1)  # [values, k]
    per_row = tf.RaggedTensor.from_row_splits(tf.reshape(ids, [-1]), values.row_splits * k)
    dummies = tf.fill(tf.stack([values.nrows(), k]), tf.constant(n, tf.int64))
    return _append_where_empty(per_row, dummies)


def _fill_empty(ids: tf.RaggedTensor, value: int) -> tf.RaggedTensor:
    """One id per row: its own, or `value` for a row without one (a null)."""
    return _append_where_empty(ids, tf.fill(tf.stack([ids.nrows(), 1]), tf.constant(value, tf.int64)))


def _cast_leaf(values: tf.RaggedTensor, value_type: str, leaf: pa.DataType, name: str) -> tf.RaggedTensor:
    """Raw values in the Example's list type, as the conversion kernel casts them."""
    flat = values.flat_values
    if value_type == "string":
        if flat.dtype == tf.float64:
            raise ServingError(
                f"{name!r} writes floating-point values as text (Java's number format), which "
                "TensorFlow cannot reproduce; serve it with the Python Preprocessor"
            )
        flat = _canonical(flat, leaf)
    elif value_type == "int64":
        flat = tf.cast(flat, tf.int64)
    else:  # integers round to float64 first, as Spark casts them
        flat = tf.cast(tf.cast(flat, tf.float64), tf.float32)
    return values.with_flat_values(flat)


def _example_values(name: str, values: tf.RaggedTensor, layout) -> dict[str, tf.RaggedTensor]:
    """The Example features of one tensor, per row: `<name>` its values flattened and, for a
    ragged layout, `<name>/row_lengths_<i>` the lengths of its lists at depth `i`."""
    out = {}
    for dim, key in layout.row_length_keys():
        level = values.merge_dims(1, dim) if dim > 1 else values
        out[key] = level.with_values(level.values.row_lengths())
    out[name] = values.merge_dims(1, -1) if values.ragged_rank > 1 else values
    return out


def _known_or_one_unknown(row_of, ids, values, unknown_id: int, discard: bool, rows):
    """NTV records not in the list: left out (`discard`), else the first of each row kept
    with the value 1 (`kernels.features.vocab._known_or_one_unknown`)."""
    unknown = tf.equal(ids, unknown_id)
    if discard:
        keep = tf.logical_not(unknown)
        return tf.boolean_mask(row_of, keep), tf.boolean_mask(ids, keep), tf.boolean_mask(values, keep)
    positions = tf.range(tf.size(ids, out_type=tf.int64))
    first_of_row = tf.math.unsorted_segment_min(
        tf.where(unknown, positions, tf.int64.max), row_of, tf.cast(rows, tf.int64)
    )
    first = tf.logical_and(unknown, tf.equal(positions, tf.gather(first_of_row, row_of)))
    keep = tf.logical_or(tf.logical_not(unknown), first)
    values = tf.where(first, tf.constant(1.0, tf.float64), values)
    return tf.boolean_mask(row_of, keep), tf.boolean_mask(ids, keep), tf.boolean_mask(values, keep)


def _combine(row_of, ids, values, size: int, combiner: str):
    """Entries of one id in one row merged (SUM, AVG, MAX), by row then id (`combine_sparse`)."""
    width = tf.constant(max(size, 1), tf.int64)
    keys = row_of * width + ids
    order = tf.argsort(keys, stable=True)
    keys, values = tf.gather(keys, order), tf.gather(values, order)
    unique, segment = tf.unique(keys, out_idx=tf.int64)
    if combiner == "MAX":
        merged = tf.math.segment_max(values, segment)
    elif combiner == "AVG":
        counts = tf.math.segment_sum(tf.ones_like(values), segment)
        merged = tf.math.segment_sum(values, segment) / counts
    else:
        merged = tf.math.segment_sum(values, segment)
    return unique // width, unique % width, merged


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
