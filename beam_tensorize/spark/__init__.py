"""beam_tensorize on PySpark: the same kernels in Spark tasks, the same output.

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

import warnings

# PySpark warns on every import with pandas 3 that it does not fully support it; that concerns
# pandas-on-Spark. This package hands Spark Arrow batches (`mapInArrow`) and never goes through
# pandas, and its outputs are checked byte for byte against the Beam job's with pandas 3.
warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)

from pyspark.sql import SparkSession  # noqa: E402  (after the filter: importing PySpark warns)

from beam_tensorize.spark import writer_habits  # noqa: E402
from beam_tensorize.spark.session import local_session  # noqa: E402
from beam_tensorize.spark.table_source import (  # noqa: E402
    AVRO_FORMAT,
    TABLE_FORMAT,
    AvroDataSource,
    TableDataSource,
    source_batches,
)
from beam_tensorize.spark.tensorize import tensorize_spark  # noqa: E402
from beam_tensorize.spark.tfrecord_source import TFRECORD_FORMAT, TFRecordDataSource  # noqa: E402

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

    Writes to the `tfrecord` source then also take Spark-TFRecord's `.partitionBy(...)` and
    every Spark save mode, the default `errorifexists` included (`writer_habits`).

    Example::

        register_data_sources(spark)
        spark.read.format("beam_tensorize_avro").load("data/*.avro")
        spark.read.format("beam_tensorize_table").load("data/*.parquet")
        spark.read.format("tfrecord").load("out/trainingData")
    """
    spark.dataSource.register(TableDataSource)
    spark.dataSource.register(AvroDataSource)
    spark.dataSource.register(TFRecordDataSource)
    writer_habits.install()
