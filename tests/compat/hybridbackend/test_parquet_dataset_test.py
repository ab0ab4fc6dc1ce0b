"""Ported from DeepRec-AI/HybridBackend hybridbackend/tensorflow/data/tests/parquet_dataset_test.py
(`ParquetDatasetTest`; Copyright 2021 Alibaba Group Holding Limited, Apache License 2.0).

HybridBackend's `hb.data` is `beam_tensorize.tf` (imported as `hb_data`); its TensorFlow 1
calls (`tf.Session`, `tf.data.make_one_shot_iterator`) are `tf.compat.v1`'s, in a graph as
theirs. The data is theirs: 200 rows of four random int64 columns `A B C d` written by
pandas, drawn from a seeded generator so that a run is repeatable.
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
AUTOTUNE = tf.data.AUTOTUNE


@pytest.fixture(scope="module")
def parquet(tmp_path_factory):
    """setUp: `test.parquet`, 200 rows of random int64 columns A, B, C, d."""
    rng = np.random.RandomState(20210)
    filename = os.path.join(tmp_path_factory.mktemp("parquet_dataset_test"), "test.parquet")
    df = pd.DataFrame(rng.randint(0, 100, size=(200, 4), dtype=np.int64), columns=list("ABCd"))
    df.to_parquet(filename)
    return filename, df


def test_read(parquet):
    filename, df = parquet
    batch_size = 32
    with tf.Graph().as_default() as graph:
        ds = hb_data.Dataset.from_parquet(
            filename, fields=[hb_data.DataFrame.Field("A", tf.int64), hb_data.DataFrame.Field("C", tf.int64)]
        )
        ds = ds.batch(batch_size)
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


def test_read_with_defaults(parquet):
    filename, df = parquet
    batch_size = 32
    default_value = 42
    with tf.Graph().as_default() as graph:
        ds = hb_data.Dataset.from_parquet(
            filename,
            fields=[
                hb_data.DataFrame.Field("A", tf.int64),
                hb_data.DataFrame.Field("X", tf.int64, default_value=default_value),
                hb_data.DataFrame.Field("C", tf.int64),
            ],
        )
        ds = ds.batch(batch_size)
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
            np.testing.assert_equal(result["X"], [default_value for _ in range(batch_size)])
            np.testing.assert_equal(result["C"], c[start_row:end_row].to_numpy())


def test_schema_auto_detection_read(parquet):
    filename, df = parquet
    batch_size = 32
    with tf.Graph().as_default() as graph:
        ds = hb_data.Dataset.from_parquet([filename])
        ds = ds.batch(batch_size)
        ds = ds.prefetch(4)
        batch = tf1.data.make_one_shot_iterator(ds).get_next()

    c = df["C"]
    with tf1.Session(graph=graph) as sess:
        for i in range(3):
            result = sess.run(batch)
            start_row = i * batch_size
            end_row = (i + 1) * batch_size
            np.testing.assert_equal(result["C"], c[start_row:end_row].to_numpy())


def test_dtype_auto_detection_read(parquet):
    filename, df = parquet
    batch_size = 32
    with tf.Graph().as_default() as graph:
        ds = hb_data.Dataset.from_parquet([filename], fields=["B", "C"])
        ds = ds.batch(batch_size)
        ds = ds.prefetch(4)
        batch = tf1.data.make_one_shot_iterator(ds).get_next()

    c = df["C"]
    with tf1.Session(graph=graph) as sess:
        for i in range(3):
            result = sess.run(batch)
            start_row = i * batch_size
            end_row = (i + 1) * batch_size
            np.testing.assert_equal(result["C"], c[start_row:end_row].to_numpy())


def test_dtype_auto_detection_read_lower(parquet):
    filename, df = parquet
    batch_size = 32
    with tf.Graph().as_default() as graph:
        ds = hb_data.Dataset.from_parquet([filename], fields=["B", "D"], field_ignore_case=True)
        ds = ds.batch(batch_size)
        ds = ds.prefetch(4)
        batch = tf1.data.make_one_shot_iterator(ds).get_next()

    c = df["B"]
    with tf1.Session(graph=graph) as sess:
        for i in range(3):
            result = sess.run(batch)
            start_row = i * batch_size
            end_row = (i + 1) * batch_size
            np.testing.assert_equal(result["B"], c[start_row:end_row].to_numpy())


def _read_from_generator(parquet, **read_parquet_kwargs):
    """The body of the three test_read_from_generator* tests, which differ only in
    `num_parallel_reads`. Beyond HybridBackend's assertions (4 batches of 100 rows, then
    OutOfRangeError), the rows read must be the file's, twice."""
    filename, df = parquet
    num_epochs = 2
    batch_size = 100
    with tf.Graph().as_default() as graph:

        def gen_filenames():
            for i in range(num_epochs + 1):
                if i == num_epochs:
                    return  # raise StopIteration
                yield filename

        filenames = tf.data.Dataset.from_generator(gen_filenames, tf.string, tf.TensorShape([]))
        fields = [hb_data.DataFrame.Field("A", tf.int64, 0), hb_data.DataFrame.Field("C", tf.int64, 0)]
        ds = filenames.apply(hb_data.read_parquet(batch_size, fields=fields, **read_parquet_kwargs))
        ds = ds.prefetch(4)
        batch = tf1.data.make_one_shot_iterator(ds).get_next()

    seen = []
    with tf1.Session(graph=graph) as sess:
        for _ in range(len(df) * num_epochs // batch_size):
            result = sess.run(batch)
            assert len(result["A"]) == batch_size
            seen += list(zip(result["A"].tolist(), result["C"].tolist()))
        with pytest.raises(tf.errors.OutOfRangeError):
            sess.run(batch)
    assert sorted(seen) == sorted(list(zip(df["A"].tolist(), df["C"].tolist())) * num_epochs)


def test_read_from_generator(parquet):
    _read_from_generator(parquet)


def test_read_from_generator_parallel(parquet):
    _read_from_generator(parquet, num_parallel_reads=3)


def test_read_from_generator_parallel_auto(parquet):
    _read_from_generator(parquet, num_parallel_reads=AUTOTUNE)
