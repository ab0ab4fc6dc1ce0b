"""PySpark internals this package relies on, in one place (`tests/spark/test_session.py`
fails loudly, naming them, when a PySpark release moves them).

* `pyspark.sql.pandas.types.from_arrow_schema` / `to_arrow_schema`: Spark <-> Arrow schemas
  for `mapInArrow` and the Python data sources (PySpark keeps them in its pandas module);
* `SparkContext._accumulatorServer` and its `server_shutdown` flag: `local_session` hands the
  server's slow shutdown to a thread (`session._close_accumulator_server_in_background`);
* `SparkContext._gateway.proc`: the driver JVM's process, whose exit writes the class data
  archive (`python -m beam_tensorize.spark`);
* `DataFrameWriter._df`: the DataFrame a writer writes, for Spark-TFRecord's `partitionBy` and
  save modes on the `tfrecord` source (`writer_habits`).
"""

from __future__ import annotations

from pyspark import SparkContext
from pyspark.sql.pandas.types import from_arrow_schema, to_arrow_schema
from pyspark.sql.readwriter import DataFrameWriter

__all__ = ["accumulator_server", "driver_jvm", "from_arrow_schema", "to_arrow_schema", "written_frame"]


def accumulator_server(context: SparkContext):
    """The context's accumulator server, or None (another PySpark keeps it elsewhere)."""
    server = getattr(context, "_accumulatorServer", None)
    return server if server is not None and hasattr(server, "server_shutdown") else None


def driver_jvm(context: SparkContext):
    """The `subprocess.Popen` of the driver's JVM."""
    return context._gateway.proc


def written_frame(writer: DataFrameWriter):
    """The DataFrame `writer` writes."""
    return writer._df
