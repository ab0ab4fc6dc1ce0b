"""Ported from DeepRec-AI/HybridBackend hybridbackend/tensorflow/data/tests/parquet_dataset_string_test.py
(`ParquetDatasetStringTest`; Copyright 2021 Alibaba Group Holding Limited, Apache License 2.0).

HybridBackend's `hb.data` is `beam_tensorize.tf` (imported as `hb_data`); its TensorFlow 1
calls are `tf.compat.v1`'s, in a graph as theirs. The data is theirs: 100 rows of two columns
of lists of 1 to 4 numbers as strings and one of int64 lists, written by pandas, drawn from a
seeded generator so that a run is repeatable.
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


@pytest.fixture(scope="module")
def parquet(tmp_path_factory):
    """setUp: `string_test.parquet`, col0 and col1 lists of strings, col2 of int64."""
    rng = np.random.RandomState(20213)
    filename = os.path.join(tmp_path_factory.mktemp("parquet_dataset_string_test"), "string_test.parquet")
    num_cols = 3
    df = pd.DataFrame(
        np.array(
            [
                [
                    *[
                        np.array(
                            list(map(str, rng.randint(0, 100, size=(rng.randint(1, 5),), dtype=np.int64)))
                        )
                        for _ in range(num_cols - 1)
                    ],
                    rng.randint(0, 100, size=(rng.randint(1, 5),), dtype=np.int64),
                ]
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
        ds = hb_data.ParquetDataset([filename], batch_size=batch_size)
        ds = ds.apply(hb_data.rebatch(batch_size))
        ds = ds.prefetch(4)
        batch = tf1.data.make_one_shot_iterator(ds).get_next()

    c = df["col0"]
    with tf1.Session(graph=graph) as sess:
        for i in range(3):
            result = sess.run(batch)
            expected = _expected(c, i, batch_size)
            actual = result["col0"]
            expected_values = np.array(list(map(str.encode, expected.values)), dtype=object)
            np.testing.assert_equal(actual.values, expected_values)
            np.testing.assert_equal(actual.nested_row_splits, expected.nested_row_splits)


def test_to_sparse(parquet):
    filename, df = parquet
    batch_size = 32
    with tf.Graph().as_default() as graph:
        ds = hb_data.ParquetDataset(filename, batch_size=batch_size)
        ds = ds.apply(hb_data.rebatch(batch_size))
        ds = ds.map(hb_data.DataFrame.parse)
        ds = ds.prefetch(4)
        batch = tf1.data.make_one_shot_iterator(ds).get_next()

    c = df["col0"]
    with tf1.Session(graph=graph) as sess:
        for i in range(3):
            result = sess.run(batch)
            expected = _expected(c, i, batch_size)
            actual = result["col0"]
            expected_values = np.array(list(map(str.encode, expected.values)), dtype=object)
            np.testing.assert_equal(actual.values, expected_values)
            np.testing.assert_equal(
                len(set(next(zip(*actual.indices)))) + 1, len(expected.nested_row_splits[0])
            )
