"""Ported from DeepRec-AI/HybridBackend hybridbackend/tensorflow/data/tests/parquet_dataset_reshape_test.py
(`ParquetDatasetReshapeTest`; Copyright 2021 Alibaba Group Holding Limited, Apache License 2.0).

HybridBackend's `hb.data` is `beam_tensorize.tf` (imported as `hb_data`); its TensorFlow 1
calls are `tf.compat.v1`'s, in a graph as theirs. The data is theirs: 100 rows of three int64
list columns, `col0` of exactly 4 values, the others of 1 to 4, written by pandas, drawn from
a seeded generator so that a run is repeatable.
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


@pytest.fixture(scope="module")
def parquet(tmp_path_factory):
    """setUp: `reshape_test.parquet`."""
    rng = np.random.RandomState(20212)
    filename = os.path.join(tmp_path_factory.mktemp("parquet_dataset_reshape_test"), "reshape_test.parquet")
    num_cols = 3
    df = pd.DataFrame(
        np.array(
            [
                [
                    rng.randint(0, 100, size=(4,) if icol == 0 else (rng.randint(1, 5),), dtype=np.int64)
                    for icol in range(num_cols)
                ]
                for _ in range(100)
            ],
            dtype=object,
        ),
        columns=[f"col{c}" for c in range(num_cols)],
    )
    df.to_parquet(filename)
    return filename, df


def test_reshape(parquet):
    filename, df = parquet
    batch_size = 32
    with tf.Graph().as_default() as graph:
        ds = hb_data.Dataset.from_parquet(
            [filename], fields=[hb_data.DataFrame.Field("col2"), hb_data.DataFrame.Field("col0", shape=[4])]
        )
        ds = ds.batch(batch_size)
        ds = ds.prefetch(4)
        batch = tf1.data.make_one_shot_iterator(ds).get_next()

    c = df["col0"]
    with tf1.Session(graph=graph) as sess:
        for i in range(3):
            result = sess.run(batch)
            start_row = i * batch_size
            end_row = (i + 1) * batch_size
            expected_items = c[start_row:end_row].to_numpy().tolist()
            expected_values = []
            expected_splits = [0]
            for item in expected_items:
                expected_values.extend(item)
                expected_splits.append(expected_splits[-1] + len(item))
            expected = np.array(expected_values)
            expected = np.reshape(expected, (batch_size, 4))
            actual = result["col0"]
            np.testing.assert_allclose(actual, expected)
