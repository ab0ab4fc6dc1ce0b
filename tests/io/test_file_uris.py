"""`file:` URIs, as Spark and Hadoop users name local files, read and write the local paths they
name in the readers, the writers and `make_dataset`."""

from __future__ import annotations

import apache_beam as beam
import pyarrow.parquet as pq
from apache_beam.testing.util import assert_that, equal_to

import beam_tensorize as bt
from beam_tensorize.sample import SAMPLE_AVRO
from pipelines.tensorize import main


def test_readers_and_writers_take_file_uris(tmp_path):
    with beam.Pipeline() as p:
        batches = p | bt.ReadAvro("file://" + SAMPLE_AVRO, columns=["userId"])
        rows = batches | beam.Map(lambda b: b.num_rows) | beam.CombineGlobally(sum)
        assert_that(rows, equal_to([300]))
        _ = batches | bt.WriteParquet(f"file://{tmp_path}/pq", num_shards=1)
    table = pq.read_table(tmp_path / "pq")
    assert table.num_rows == 300 and table.column_names == ["userId"]


def test_tfrecord_outputs_read_back_through_file_uris(tmp_path):
    import tensorflow as tf

    from beam_tensorize.tf import make_dataset

    out = tmp_path / "out"
    assert main(["--output", str(out), "--quiet"]) == 0
    with beam.Pipeline() as p:
        rows = (p | bt.ReadTFRecord(f"file://{out}/trainingData") | beam.Map(lambda b: b.num_rows)
                | beam.CombineGlobally(sum))  # fmt: skip
        assert_that(rows, equal_to([300]))
    features, labels = next(iter(make_dataset(f"file://{out}", batch_size=300)))
    assert int(tf.shape(labels["response"])[0]) == 300
    assert features["userId"].shape[0] == 300
