"""Ported from DeepRec-AI/HybridBackend
hybridbackend/tensorflow/data/tests/parquet_dataset_ragged_nested_test.py
(`ParquetDatasetRaggedNestedTest`; Copyright 2021 Alibaba Group Holding Limited, Apache
License 2.0).

HybridBackend's `hb.data` is `beam_tensorize.tf` (imported as `hb_data`); its TensorFlow 1
calls are `tf.compat.v1`'s, in a graph as theirs. The file is theirs: one column `A` of lists
of lists of int64, `[[[1], [2, 3]], [[4], [5]]]`, written by pyarrow with ZSTD.
"""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf

import beam_tensorize.tf as hb_data

tf1 = tf.compat.v1

_DATA = pa.array([[[1], [2, 3]], [[4], [5]]], pa.list_(pa.list_(pa.int64())))


@pytest.fixture(scope="module")
def filename(tmp_path_factory):
    """setUp: `ragged_test_pyarrow.parquet`."""
    path = os.path.join(
        tmp_path_factory.mktemp("parquet_dataset_ragged_nested_test"), "ragged_test_pyarrow.parquet"
    )
    table = pa.Table.from_arrays([_DATA], ["A"])
    pq.write_table(table, path, compression="ZSTD")
    return path


def test_read(filename):
    with tf.Graph().as_default() as graph:
        ds = hb_data.ParquetDataset([filename], batch_size=2)
        ds = ds.apply(hb_data.rebatch(2))
        ds = ds.prefetch(4)
        batch = tf1.data.make_one_shot_iterator(ds).get_next()

    with tf1.Session(graph=graph) as sess:
        actual = sess.run(batch)["A"].to_list()
        expected = _DATA.to_pylist()
        np.testing.assert_equal(actual, expected)


def test_apply_to_sparse(filename):
    with tf.Graph().as_default() as graph:
        ds = hb_data.Dataset.from_parquet([filename])
        ds = ds.batch(2)
        batch = tf1.data.make_one_shot_iterator(ds).get_next()["A"]
        baseline = tf.ragged.constant(_DATA.to_pylist()).to_sparse()

    with tf1.Session(graph=graph) as sess:
        actual, expected = sess.run([batch, baseline])
        np.testing.assert_equal(actual.indices, expected.indices)
        np.testing.assert_equal(actual.values, expected.values)
        np.testing.assert_equal(actual.dense_shape, expected.dense_shape)


def test_apply_to_tensor(filename):
    with tf.Graph().as_default() as graph:
        ds = hb_data.Dataset.from_parquet([filename], to_dense=True)
        ds = ds.batch(2)
        batch = tf1.data.make_one_shot_iterator(ds).get_next()["A"]
        baseline = tf.ragged.constant(_DATA.to_pylist()).to_tensor()

    with tf1.Session(graph=graph) as sess:
        actual, expected = sess.run([batch, baseline])
        np.testing.assert_equal(actual, expected)
