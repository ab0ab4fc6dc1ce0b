"""Beam sources and sinks: Avro in, TFRecord out and in."""

from beam_tensorize.io.avro import ReadAvro
from beam_tensorize.io.read_tfrecord import ReadTFRecord, ReadTFRecordOutputs, infer_tfrecord_schema
from beam_tensorize.io.tfrecord import WriteTFRecord

__all__ = ["ReadAvro", "ReadTFRecord", "ReadTFRecordOutputs", "WriteTFRecord", "infer_tfrecord_schema"]
