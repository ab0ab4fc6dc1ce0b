"""Ported from DeepRec-AI/HybridBackend hybridbackend/tensorflow/data/tests/rebatch_dataset_seq_test.py
(`ParquetDatasetSequenceRebatchTest`; Copyright 2021 Alibaba Group Holding Limited, Apache
License 2.0).

HybridBackend's `hb.data` is `beam_tensorize.tf` (imported as `hb_data`); its TensorFlow 1
calls are `tf.compat.v1`'s, in a graph as theirs. The data is theirs: 1000 rows of `clicks`,
lists of 10 random ints, written by pyarrow, drawn from a seeded generator so that a run is
repeatable.
"""

from __future__ import annotations

import os
import random

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf

import beam_tensorize.tf as hb_data

tf1 = tf.compat.v1


@pytest.fixture(scope="module")
def parquet(tmp_path_factory):
    """setUp: `seqtest.parquet`."""
    rng = random.Random(20214)
    filename = os.path.join(tmp_path_factory.mktemp("rebatch_dataset_seq_test"), "seqtest.parquet")
    nrows = 1000
    ncols = 10
    data = {"clicks": [[rng.randint(0, 100) for col in range(ncols)] for row in range(nrows)]}
    pq.write_table(pa.Table.from_pydict(data), filename)
    return filename, data


def test_ragged(parquet):
    filename, data = parquet
    batch_size = 8
    with tf.Graph().as_default() as graph:
        ds = hb_data.ParquetDataset(filename, batch_size=batch_size)
        ds = ds.apply(hb_data.rebatch(batch_size))
        batch = tf1.data.make_one_shot_iterator(ds).get_next()

    clicks = data["clicks"]
    with tf1.Session(graph=graph) as sess:
        for i in range(3):
            actual = sess.run(batch["clicks"])
            start_row = i * batch_size
            end_row = (i + 1) * batch_size
            expected = clicks[start_row:end_row]
            expected_values = [v for sublist in expected for v in sublist]
            np.testing.assert_equal(actual.values, expected_values)
