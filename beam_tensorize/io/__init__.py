"""Beam sources and sinks, one module per format holding both directions (as Beam's own
`parquetio`): `avro` (ReadAvro, WriteAvro), `parquet` (ReadParquet, WriteParquet), `orc`
(ReadOrc), `tfrecord` (ReadTFRecord, WriteTFRecord); beside them the machinery they share:
`table` (ReadTable: any input format), `sharded` (sharded, partitioned files committed
atomically) and `coders` (how record batches travel between steps)."""

from beam_tensorize.io.avro import ReadAvro, WriteAvro
from beam_tensorize.io.coders import RecordBatchCoder
from beam_tensorize.io.orc import ReadOrc
from beam_tensorize.io.parquet import ReadParquet, WriteParquet
from beam_tensorize.io.table import ReadTable
from beam_tensorize.io.tfrecord import ReadTFRecord, ReadTFRecordOutputs, WriteTFRecord, infer_tfrecord_schema

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
