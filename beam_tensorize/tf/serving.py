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

This module holds the model (`PreprocessingModule`, its Keras layer and model, the SavedModel);
its parts are `_serving_inputs` (the raw inputs and request spec), `_serving_ops` (the ops on
values) and `_serving_outputs` (Example features to parsed and flat tensors), whose names are
re-exported here.

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

from collections.abc import Mapping
from typing import TYPE_CHECKING

import pyarrow as pa
import tensorflow as tf

from beam_tensorize.config.model import TensorConfig
from beam_tensorize.kernels.arrow_types import leaf_type, list_depth
from beam_tensorize.kernels.features.conversion import layout_for_column, layout_of
from beam_tensorize.kernels.features.ntv import is_ntv
from beam_tensorize.kernels.features.tokenize import ENGLISH_STOP_WORDS
from beam_tensorize.kernels.features.vocab import uses_feature_list, vocab_array
from beam_tensorize.kernels.metadata import build_metadata
from beam_tensorize.kernels.partitions import PARTITION_ID_COLUMN
from beam_tensorize.kernels.serving.requests import NTV_PARTS
from beam_tensorize.kernels.serving.settings import ServingError
from beam_tensorize.tf._serving_inputs import (
    _TF_TYPES,  # noqa: F401 - re-exported
    _input_dtype,  # noqa: F401 - re-exported
    _raw_schema,
    _raw_signature,
    _request_spec,
    as_float64,
    raw_parse_spec,
    raw_tensors,
)
from beam_tensorize.tf._serving_ops import (
    _append_where_empty,  # noqa: F401 - re-exported
    _canonical,  # noqa: F401 - re-exported
    _cast_leaf,
    _combine,
    _fill_empty,
    _hash,
    _hash_values,
    _known_or_one_unknown,
    _lookup,
    _table,
    tokens_of,
)
from beam_tensorize.tf._serving_outputs import _example_values, _parsed, flatten_outputs
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
