"""Beam sources and sinks: Avro in, TFRecord out."""

from beam_tensorize.io.avro import ReadAvro
from beam_tensorize.io.tfrecord import WriteTFRecord

__all__ = ["ReadAvro", "WriteTFRecord"]
