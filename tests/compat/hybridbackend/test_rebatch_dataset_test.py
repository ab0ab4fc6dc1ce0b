"""Ported from DeepRec-AI/HybridBackend hybridbackend/tensorflow/data/tests/rebatch_dataset_test.py
(`ParquetDatasetRebatchTest`; Copyright 2021 Alibaba Group Holding Limited, Apache License 2.0).

HybridBackend's `hb.data` is `beam_tensorize.tf` (imported as `hb_data`); its TensorFlow 1
calls are `tf.compat.v1`'s, in a graph as theirs. The data is theirs: 100 rows of `A` and `C`
(random int64), `B` (1 to 4 random int64), `D` (4 random int64) and `E` (1 to 4 numbers as
strings), written by pandas, drawn from a seeded generator so that a run is repeatable.
"""

from __future__ import annotations

import collections
import os

import numpy as np
import pandas as pd
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf

import beam_tensorize.tf as hb_data

tf1 = tf.compat.v1

_NO_REBATCH = (
    "beam_tensorize.tf exports no ParquetDataset (parquet.ParquetDataset takes no batch_size, its "
    "2nd positional argument is fields, and is not a dataset of micro-batches) and has no rebatch"
)


@pytest.fixture(scope="module")
def parquet(tmp_path_factory):
    """setUp: `test.parquet`, columns A to E as `build_row(0, 100, 1, 5)` makes them."""
    rng = np.random.RandomState(20215)
    filename = os.path.join(tmp_path_factory.mktemp("rebatch_dataset_test"), "test.parquet")
    nrows = 100
    cols = list("ABCDE")

    def build_row(br, er, bseq, eseq):
        a = rng.randint(br, er, dtype=np.int64)
        b = rng.randint(br, er, size=(rng.randint(bseq, eseq),), dtype=np.int64)
        c = rng.randint(br, er, dtype=np.int64)
        d = rng.randint(br, er, size=(4,), dtype=np.int64)
        e = np.array(
            list(map(str, rng.randint(br, er * 100, size=(rng.randint(bseq, eseq),), dtype=np.int64)))
        )
        return [a, b, c, d, e]

    df = pd.DataFrame(np.array([build_row(0, 100, 1, 5) for _ in range(nrows)], dtype=object), columns=cols)
    df.to_parquet(filename)
    return filename, df


def _expected(b, i, batch_size):
    """HybridBackend's expected `DataFrame.Value` of rows [i * batch_size, (i + 1) * batch_size)."""
    start_row = i * batch_size
    end_row = (i + 1) * batch_size
    expected_items = b[start_row:end_row].to_numpy().tolist()
    expected_values = []
    expected_splits = [0]
    for item in expected_items:
        expected_values.extend(item)
        expected_splits.append(expected_splits[-1] + len(item))
    return hb_data.DataFrame.Value(np.array(expected_values), [np.array(expected_splits, dtype=np.int32)])


def test_pasthrough(parquet):
    filename, df = parquet
    batch_size = 20
    with tf.Graph().as_default() as graph:
        ds = hb_data.ParquetDataset(filename, batch_size)
        ds = ds.apply(hb_data.rebatch(batch_size))
        ds = ds.prefetch(4)
        batch = tf1.data.make_one_shot_iterator(ds).get_next()

    a = df["A"]
    c = df["C"]
    with tf1.Session(graph=graph) as sess:
        for i in range(3):
            result = sess.run(batch)
            start_row = i * batch_size
            end_row = (i + 1) * batch_size
            np.testing.assert_equal(result["A"], a[start_row:end_row].to_numpy())
            np.testing.assert_equal(result["C"], c[start_row:end_row].to_numpy())


def test_expilict_batch(parquet):
    filename, df = parquet
    micro_batch_size = 20
    batch_size = 32
    with tf.Graph().as_default() as graph:
        ds = hb_data.ParquetDataset(filename, micro_batch_size)
        ds = ds.apply(hb_data.rebatch(batch_size))
        ds = ds.prefetch(4)
        batch = tf1.data.make_one_shot_iterator(ds).get_next()

    a = df["A"]
    c = df["C"]
    with tf1.Session(graph=graph) as sess:
        for i in range(3):
            result = sess.run(batch)
            start_row = i * batch_size
            end_row = (i + 1) * batch_size
            np.testing.assert_equal(result["A"], a[start_row:end_row].to_numpy())
            np.testing.assert_equal(result["C"], c[start_row:end_row].to_numpy())


def test_ragged(parquet):
    filename, df = parquet
    micro_batch_size = 20
    batch_size = 32
    with tf.Graph().as_default() as graph:
        ds = hb_data.ParquetDataset(filename, micro_batch_size)
        ds = ds.apply(hb_data.rebatch(batch_size))
        ds = ds.prefetch(4)
        batch = tf1.data.make_one_shot_iterator(ds).get_next()

    b = df["B"]
    with tf1.Session(graph=graph) as sess:
        for i in range(3):
            result = sess.run(batch)
            expected = _expected(b, i, batch_size)
            actual = result["B"]
            np.testing.assert_allclose(actual.values, expected.values)
            np.testing.assert_equal(actual.nested_row_splits, expected.nested_row_splits)


def test_to_sparse(parquet):
    filename, df = parquet
    micro_batch_size = 20
    batch_size = 32
    with tf.Graph().as_default() as graph:
        ds = hb_data.ParquetDataset(filename, micro_batch_size)
        ds = ds.apply(hb_data.rebatch(batch_size))
        ds = ds.apply(hb_data.parse())
        ds = ds.prefetch(4)
        batch = tf1.data.make_one_shot_iterator(ds).get_next()

    b = df["B"]
    with tf1.Session(graph=graph) as sess:
        for i in range(3):
            result = sess.run(batch)
            expected = _expected(b, i, batch_size)
            actual = result["B"]
            np.testing.assert_equal(actual.values, expected.values)
            np.testing.assert_equal(
                len(set(next(zip(*actual.indices)))) + 1, len(expected.nested_row_splits[0])
            )


def test_shuffle_micro_batch(parquet):
    """HybridBackend's test runs 3 batches and asserts nothing. Here each must hold 32 rows of
    the file (`A` and `C` of one row together, no row more often than in the file), and the
    first must not be the rows of a single run [32 k, 32 k + 32) of the file: rows are shuffled
    across a buffer of 80 rows before they are batched."""
    filename, df = parquet
    batch_size = 32
    with tf.Graph().as_default() as graph:
        ds = hb_data.Dataset.from_parquet(filename)
        ds = ds.shuffle_batch(batch_size, buffer_size=80)
        ds = ds.prefetch(4)
        batch = tf1.data.make_one_shot_iterator(ds).get_next()

    pairs = list(zip(df["A"].tolist(), df["C"].tolist()))
    batches = []
    with tf1.Session(graph=graph) as sess:
        for _ in range(3):
            result = sess.run(batch)
            batches.append(collections.Counter(zip(result["A"].tolist(), result["C"].tolist())))
    assert [sum(b.values()) for b in batches] == [batch_size] * 3
    assert not sum(batches, collections.Counter()) - collections.Counter(pairs)  # rows of the file
    runs = [collections.Counter(pairs[k : k + batch_size]) for k in range(0, len(pairs), batch_size)]
    assert all(batches[0] - run for run in runs)  # not one run of the file's rows


def test_thread_pool(parquet):
    filename, df = parquet
    micro_batch_size = 20
    batch_size = 32
    with tf.Graph().as_default() as graph:
        ds = hb_data.ParquetDataset(filename, micro_batch_size)
        ds = ds.apply(hb_data.rebatch(batch_size))
        ds = ds.prefetch(4)
        batch = tf1.data.make_one_shot_iterator(ds).get_next()

    b = df["B"]
    with tf1.Session(graph=graph) as sess:
        for i in range(3):
            result = sess.run(batch)
            expected = _expected(b, i, batch_size)
            actual = result["B"]
            np.testing.assert_allclose(actual.values, expected.values)
            np.testing.assert_equal(actual.nested_row_splits, expected.nested_row_splits)


def test_ragged_with_shape(parquet):
    filename, df = parquet
    micro_batch_size = 20
    batch_size = 32
    with tf.Graph().as_default() as graph:
        ds = hb_data.ParquetDataset(
            filename, micro_batch_size, fields=[hb_data.DataFrame.Field("D", shape=[4])]
        )
        ds = ds.apply(hb_data.rebatch(batch_size))
        ds = ds.prefetch(4)
        batch = tf1.data.make_one_shot_iterator(ds).get_next()

    d = df["D"]
    with tf1.Session(graph=graph) as sess:
        for i in range(3):
            result = sess.run(batch)
            start_row = i * batch_size
            end_row = (i + 1) * batch_size
            expected_items = d[start_row:end_row].to_numpy().tolist()
            expected_values = []
            expected_splits = [0]
            for item in expected_items:
                expected_values.extend(item)
                expected_splits.append(expected_splits[-1] + len(item))
            expected = np.reshape(np.array(expected_values), (-1, 4))
            actual = result["D"]
            np.testing.assert_allclose(actual.values, expected)
