"""Beam sources and sinks: tables (Avro, Parquet, ORC, TFRecord) in, TFRecord, Parquet and
Avro out."""

from beam_tensorize.io.avro import WriteAvro
from beam_tensorize.io.coders import RecordBatchCoder
from beam_tensorize.io.parquet import WriteParquet
from beam_tensorize.io.read_tfrecord import ReadTFRecord, ReadTFRecordOutputs, infer_tfrecord_schema
from beam_tensorize.io.table import ReadAvro, ReadOrc, ReadParquet, ReadTable
from beam_tensorize.io.tfrecord import WriteTFRecord

__all__ = [
    "ReadAvro",
    "ReadOrc",
    "ReadParquet",
    "ReadTFRecord",
    "ReadTFRecordOutputs",
    "ReadTable",
    "RecordBatchCoder",
    "WriteAvro",
    "WriteParquet",
    "WriteTFRecord",
    "infer_tfrecord_schema",
]
