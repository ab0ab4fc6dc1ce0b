"""beam_tensorize on PySpark: the same kernels through `mapInArrow`, the same output.

Needs the `spark` extra (`pip install -e '.[spark]'`); nothing outside this package imports
PySpark, so `import beam_tensorize` works without it.

* `local_session(cores)` — a `local[cores]` session that starts in seconds (quick JIT, Spark's
  classes from a cached class data archive).
* `tensorize_spark(spark, input_paths, config, output, ...)` — the whole job, with the output
  of the Beam `Tensorize` job (see docs/spark.md).
* Spark data sources: `beam_tensorize_table` (Avro, Parquet, ORC or TFRecord files read with
  beam_tensorize's format layer), `beam_tensorize_avro` (the same, Avro only) and
  `tfrecord` (TFRecord files of Examples, SequenceExamples or bytes, read and written, with
  Hive partition folders).

Example::

    from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
    from beam_tensorize.spark import local_session, register_data_sources, tensorize_spark

    spark = local_session(2)  # or any SparkSession
    register_data_sources(spark)
    tensorize_spark(spark, SAMPLE_AVRO, SAMPLE_CONFIG, "out")
"""

from __future__ import annotations

from pyspark.sql import SparkSession

from beam_tensorize.spark.session import local_session
from beam_tensorize.spark.table_source import (
    AVRO_FORMAT,
    TABLE_FORMAT,
    AvroDataSource,
    TableDataSource,
    source_batches,
)
from beam_tensorize.spark.tensorize import tensorize_spark
from beam_tensorize.spark.tfrecord_source import TFRECORD_FORMAT, TFRecordDataSource

__all__ = [
    "AVRO_FORMAT",
    "TABLE_FORMAT",
    "TFRECORD_FORMAT",
    "AvroDataSource",
    "TFRecordDataSource",
    "TableDataSource",
    "local_session",
    "register_data_sources",
    "source_batches",
    "tensorize_spark",
]


def register_data_sources(spark: SparkSession) -> None:
    """Register the data sources of this package with `spark` (`spark.read.format(...)`).

    Example::

        register_data_sources(spark)
        spark.read.format("beam_tensorize_avro").load("data/*.avro")
        spark.read.format("beam_tensorize_table").load("data/*.parquet")
        spark.read.format("tfrecord").load("out/trainingData")
    """
    spark.dataSource.register(TableDataSource)
    spark.dataSource.register(AvroDataSource)
    spark.dataSource.register(TFRecordDataSource)
