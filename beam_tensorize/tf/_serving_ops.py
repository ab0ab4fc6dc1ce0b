"""The serving model's TensorFlow ops on values, each matching a batch kernel bit for bit:
tokenization (`tokens_of`), feature-list tables and lookup, hashing, the cast to an Example's
list type, and the merging of a name-term-value vector's entries."""

from __future__ import annotations

import pyarrow as pa
import tensorflow as tf

from beam_tensorize.kernels.features.hashing import STRONG_HASH_KEYS
from beam_tensorize.kernels.features.tokenize import TOKEN_SEPARATORS
from beam_tensorize.kernels.serving.settings import ServingError

__all__ = ["tokens_of"]


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
