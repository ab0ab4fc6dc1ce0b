"""Ported from DeepRec-AI/HybridBackend hybridbackend/tensorflow/data/tests/parquet_dataset_ragged_test.py
(`ParquetDatasetRaggedTest`; Copyright 2021 Alibaba Group Holding Limited, Apache License 2.0).

HybridBackend's `hb.data` is `beam_tensorize.tf` (imported as `hb_data`); its TensorFlow 1
calls (`tf.Session`, `tf.placeholder`, `tf.data.Iterator`, ...) are `tf.compat.v1`'s, in a
graph as theirs. The data is theirs: 100 rows of three columns of int64 lists of 1 to 4
random values, written by pandas, drawn from a seeded generator so that a run is repeatable.
"""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf

import beam_tensorize.tf as hb_data

tf1 = tf.compat.v1

_NO_REBATCH = (
    "beam_tensorize.tf exports no ParquetDataset (parquet.ParquetDataset takes no batch_size and "
    "is not a dataset of micro-batches) and has no rebatch"
)
_NOT_SPARSE = "a list column comes back as a DataFrame.Value (values, row splits), not a tf.SparseTensor"


@pytest.fixture(scope="module")
def parquet(tmp_path_factory):
    """setUp: `ragged_test.parquet`, columns col0, col1, col2 of int64 lists."""
    rng = np.random.RandomState(20211)
    filename = os.path.join(tmp_path_factory.mktemp("parquet_dataset_ragged_test"), "ragged_test.parquet")
    num_cols = 3
    df = pd.DataFrame(
        np.array(
            [
                [rng.randint(0, 100, size=(rng.randint(1, 5),), dtype=np.int64) for _ in range(num_cols)]
                for _ in range(100)
            ],
            dtype=object,
        ),
        columns=[f"col{c}" for c in range(num_cols)],
    )
    df.to_parquet(filename)
    return filename, df


def _expected(c, i, batch_size):
    """HybridBackend's expected `DataFrame.Value` of rows [i * batch_size, (i + 1) * batch_size)."""
    start_row = i * batch_size
    end_row = (i + 1) * batch_size
    expected_items = c[start_row:end_row].to_numpy().tolist()
    expected_values = []
    expected_splits = [0]
    for item in expected_items:
        expected_values.extend(item)
        expected_splits.append(expected_splits[-1] + len(item))
    return hb_data.DataFrame.Value(np.array(expected_values), [np.array(expected_splits, dtype=np.int32)])


def test_read(parquet):
    filename, df = parquet
    batch_size = 32
    with tf.Graph().as_default() as graph:
        ds = hb_data.ParquetDataset([filename], batch_size=batch_size, fields=["col2", "col0"])
        ds = ds.apply(hb_data.rebatch(batch_size))
        ds = ds.prefetch(4)
        batch = tf1.data.make_one_shot_iterator(ds).get_next()

    c = df["col0"]
    with tf1.Session(graph=graph) as sess:
        for i in range(3):
            result = sess.run(batch)
            expected = _expected(c, i, batch_size)
            actual = result["col0"]
            np.testing.assert_allclose(actual.values, expected.values)
            np.testing.assert_equal(actual.nested_row_splits, expected.nested_row_splits)


def test_to_sparse(parquet):
    filename, df = parquet
    batch_size = 32
    with tf.Graph().as_default() as graph:
        ds = hb_data.Dataset.from_parquet([filename], fields=["col2", "col0"])
        ds = ds.batch(batch_size)
        ds = ds.prefetch(4)
        batch = tf1.data.make_one_shot_iterator(ds).get_next()

    c = df["col0"]
    with tf1.Session(graph=graph) as sess:
        for i in range(3):
            result = sess.run(batch)
            expected = _expected(c, i, batch_size)
            actual = result["col0"]
            np.testing.assert_allclose(actual.values, expected.values)
            np.testing.assert_equal(
                len(set(next(zip(*actual.indices)))) + 1, len(expected.nested_row_splits[0])
            )


def test_map_to_sparse(parquet):
    filename, df = parquet
    batch_size = 32
    with tf.Graph().as_default() as graph:
        ds = hb_data.Dataset.from_parquet([filename], fields=["col2", "col0"])
        ds = ds.batch(batch_size)
        ds = ds.prefetch(4)
        batch = tf1.data.make_one_shot_iterator(ds).get_next()

    c = df["col0"]
    with tf1.Session(graph=graph) as sess:
        for i in range(3):
            result = sess.run(batch)
            expected = _expected(c, i, batch_size)
            actual = result["col0"]
            np.testing.assert_allclose(actual.values, expected.values)
            np.testing.assert_equal(
                len(set(next(zip(*actual.indices)))) + 1, len(expected.nested_row_splits[0])
            )


def test_apply_to_sparse(parquet):
    filename, df = parquet
    batch_size = 32
    with tf.Graph().as_default() as graph:
        ds = hb_data.Dataset.from_parquet([filename], fields=["col2", "col0"])
        ds = ds.batch(batch_size)
        ds = ds.prefetch(4)
        batch = tf1.data.make_one_shot_iterator(ds).get_next()

    c = df["col0"]
    with tf1.Session(graph=graph) as sess:
        for i in range(3):
            result = sess.run(batch)
            expected = _expected(c, i, batch_size)
            actual = result["col0"]
            np.testing.assert_equal(actual.values, expected.values)
            np.testing.assert_equal(
                len(set(next(zip(*actual.indices)))) + 1, len(expected.nested_row_splits[0])
            )


def test_feedable_iterator(parquet):
    filename, df = parquet
    batch_size = 32
    with tf.Graph().as_default() as graph:
        ds = hb_data.Dataset.from_parquet([filename], fields=["col2", "col0"])
        ds = ds.batch(batch_size)
        ds = ds.prefetch(4)
        it = tf1.data.make_one_shot_iterator(ds)
        handle_tensor = it.string_handle()
        feedable_handle = tf1.placeholder(tf.string, shape=[])
        feedable_it = tf1.data.Iterator.from_string_handle(
            feedable_handle, it.output_types, it.output_shapes, it.output_classes
        )
        batch = feedable_it.get_next()

    c = df["col0"]
    with tf1.Session(graph=graph) as sess:
        handle_val = sess.run(handle_tensor)
        for i in range(3):
            result = sess.run(batch, feed_dict={feedable_handle: handle_val})
            expected = _expected(c, i, batch_size)
            actual = result["col0"]
            np.testing.assert_equal(actual.values, expected.values)
            np.testing.assert_equal(
                len(set(next(zip(*actual.indices)))) + 1, len(expected.nested_row_splits[0])
            )


def test_read_and_map(parquet):
    filename, df = parquet
    batch_size = 32
    with tf.Graph().as_default() as graph:
        ds = hb_data.ParquetDataset([filename], batch_size=batch_size, fields=["col2", "col0"])
        ds = ds.apply(hb_data.rebatch(batch_size))

        def _parse(values):
            return values["col0"], values["col2"]

        ds = ds.map(_parse)
        ds = ds.prefetch(4)
        batch = tf1.data.make_one_shot_iterator(ds).get_next()

    c = df["col0"]
    with tf1.Session(graph=graph) as sess:
        for i in range(3):
            result = sess.run(batch)
            expected = _expected(c, i, batch_size)
            actual = result[0]
            np.testing.assert_allclose(actual.values, expected.values)
            np.testing.assert_equal(actual.nested_row_splits, expected.nested_row_splits)
