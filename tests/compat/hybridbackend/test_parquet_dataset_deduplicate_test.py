"""Ported from DeepRec-AI/HybridBackend
hybridbackend/tensorflow/data/tests/parquet_dataset_deduplicate_test.py
(`ParquetDatasetDeduplicationTest`; Copyright 2021 Alibaba Group Holding Limited, Apache
License 2.0).

HybridBackend's `hb.data` is `beam_tensorize.tf` (imported as `hb_data`); its TensorFlow 1
calls are `tf.compat.v1`'s, in a graph as theirs. The file is theirs: two deduplicated blocks,
`user_feat` (each block's distinct lists) and `user_feat_idx` (each row's position among
them), which restore the 8 rows `[[1], [2, 3], [1], [2, 3], [4], [4], [5], [5]]`.
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

_DATA_USER_FEAT_DUPLICATED = pa.array([[1], [2, 3], [1], [2, 3], [4], [4], [5], [5]], pa.list_(pa.int64()))


@pytest.fixture(scope="module")
def filename(tmp_path_factory):
    """setUp: `deduplication_test_pyarrow.parquet`, written by pyarrow with ZSTD."""
    path = os.path.join(
        tmp_path_factory.mktemp("parquet_dataset_deduplicate_test"), "deduplication_test_pyarrow.parquet"
    )
    data_user_feat_deduplicated = pa.array([[[1], [2, 3]], [[4], [5]]], pa.list_(pa.list_(pa.int64())))
    data_user_idx = pa.array([[0, 1, 0, 1], [0, 0, 1, 1]], pa.list_(pa.int64()))
    table = pa.Table.from_arrays(
        [data_user_feat_deduplicated, data_user_idx], names=["user_feat", "user_feat_idx"]
    )
    pq.write_table(table, path, compression="ZSTD")
    return path


def test_apply_to_sparse(filename):
    with tf.Graph().as_default() as graph:
        ds = hb_data.Dataset.from_parquet(
            [filename], key_idx_field_names=["user_feat_idx"], value_field_names=[["user_feat"]]
        )
        ds = ds.batch(2)
        batch = tf1.data.make_one_shot_iterator(ds).get_next()
        baseline = tf.ragged.constant(_DATA_USER_FEAT_DUPLICATED.to_pylist()).to_sparse()

    with tf1.Session(graph=graph) as sess:
        actual, expected = sess.run([batch, baseline])
        np.testing.assert_equal(actual["user_feat"].indices, expected.indices)
        np.testing.assert_equal(actual["user_feat"].values, expected.values)
        np.testing.assert_equal(actual["user_feat"].dense_shape, expected.dense_shape)


def test_apply_to_tensor(filename):
    with tf.Graph().as_default() as graph:
        srcds = hb_data.ParquetDataset([filename], batch_size=2)
        ds = srcds.apply(hb_data.deduplicate(["user_feat_idx"], [["user_feat"]]))
        ds = ds.apply(hb_data.parse(pad=True))
        ds = ds.apply(hb_data.populate_defaults(srcds.all_fields, 2))
        batch = tf1.data.make_one_shot_iterator(ds).get_next()
        baseline = tf.ragged.constant(_DATA_USER_FEAT_DUPLICATED.to_pylist()).to_tensor()

    with tf1.Session(graph=graph) as sess:
        actual, expected = sess.run([batch, baseline])
        np.testing.assert_equal(actual["user_feat"], expected)
