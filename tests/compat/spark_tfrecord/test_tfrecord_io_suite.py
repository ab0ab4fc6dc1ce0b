"""Ported from linkedin/spark-tfrecord
src/test/scala/com/linkedin/spark/datasources/tfrecord/TFRecordIOSuite.scala
(Copyright 2016 The TensorFlow Authors, Apache License 2.0).

Spark-TFRecord's data source `tfrecord` against ours, on the test session's `local[2]`
SparkSession (the Scala suite's `SharedSparkSession` is `local[2]` too) after
`register_data_sources(spark)`. The files go to a sandbox folder of this module (the Scala
suite's `tf-sandbox`).

Spark calls are written as the Scala suite writes them: `.save(path)` in Spark's default
mode (`ErrorIfExists`), `.mode(SaveMode.Ignore)` and `.partitionBy("id")`, which Spark itself
refuses for Python data sources, work once `register_data_sources` has run (see
`beam_tensorize.spark.writer_habits`).

Rows are compared as the Scala suite compares them (`Row ~== Row` of TestingUtils.scala:
floats and doubles within 1e-6, binary by content), after checking that both sides have as
many rows (the Scala `zip` would not notice a missing or extra row).
"""

from __future__ import annotations

import os
from decimal import Decimal

import pytest

pytest.importorskip(
    "pyspark", reason="the Spark-TFRecord ports need the 'spark' extra (pip install -e '.[spark]')"
)

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_schema

from beam_tensorize.kernels.tfrecord.decoding import SchemaInference
from beam_tensorize.spark import register_data_sources
from tests.compat.spark_tfrecord.testing_utils import row_almost_equal

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

#: `DataTypes.createDecimalType()`: Spark's USER_DEFAULT decimal(10,0).
DECIMAL = T.DecimalType()

EXAMPLE_SCHEMA = T.StructType(
    [
        T.StructField("id", T.IntegerType()),
        T.StructField("IntegerLabel", T.IntegerType()),
        T.StructField("LongLabel", T.LongType()),
        T.StructField("FloatLabel", T.FloatType()),
        T.StructField("DoubleLabel", T.DoubleType()),
        T.StructField("DecimalLabel", DECIMAL),
        T.StructField("StrLabel", T.StringType()),
        T.StructField("BinaryLabel", T.BinaryType()),
        T.StructField("IntegerArrayLabel", T.ArrayType(T.IntegerType())),
        T.StructField("LongArrayLabel", T.ArrayType(T.LongType())),
        T.StructField("FloatArrayLabel", T.ArrayType(T.FloatType())),
        T.StructField("DoubleArrayLabel", T.ArrayType(T.DoubleType(), True)),
        T.StructField("DecimalArrayLabel", T.ArrayType(DECIMAL)),
        T.StructField("StrArrayLabel", T.ArrayType(T.StringType(), True)),
        T.StructField("BinaryArrayLabel", T.ArrayType(T.BinaryType()), True),
    ]
)

EXAMPLE_TEST_ROWS = [
    (11, 1, 23, 10.0, 14.0, Decimal("1.1"), "r1", bytes([0xFF, 0xF0]),
     [1, 2],
     [11, 12],
     [1.2, 2.1],
     [1.1, 2.2],
     [Decimal("1.1"), Decimal("2.2")],
     ["str1", "str2"],
     [bytes([0xFA, 0xFB]), bytes([0xFA])]),
    (11, 1, 24, 11.0, 15.0, Decimal("2.1"), "r2", bytes([0xFA, 0xFB]),
     [3, 4],
     [110, 120],
     [1.2, 2.1],
     [1.1, 2.2],
     [Decimal("2.1"), Decimal("3.2")],
     ["str3", "str4"],
     [bytes([0xF1, 0xF2]), bytes([0xFA])]),
    (21, 1, 23, 10.0, 14.0, Decimal("3.1"), "r3", bytes([0xFC, 0xFD]),
     [5, 6],
     [111, 112],
     [1.22, 2.11],
     [11.1, 12.2],
     [Decimal("3.1"), Decimal("4.2")],
     ["str5", "str6"],
     [bytes([0xF4, 0xF2]), bytes([0xFA])]),
]  # fmt: skip

SEQUENCE_EXAMPLE_TEST_ROWS = [
    (23, [[2, 4]], [[-1.1, 0.1]], [["r1", "r2"]]),
    (24, [[-1, 0]], [[-1.1, 0.2]], [["r3"]]),
]

SEQUENCE_EXAMPLE_SCHEMA = T.StructType(
    [
        T.StructField("id", T.LongType()),
        T.StructField("IntegerArrayOfArrayLabel", T.ArrayType(T.ArrayType(T.IntegerType()))),
        T.StructField("FloatArrayOfArrayLabel", T.ArrayType(T.ArrayType(T.FloatType()))),
        T.StructField("StrArrayOfArrayLabel", T.ArrayType(T.ArrayType(T.StringType()))),
    ]
)

BYTE_ARRAY_TEST_ROWS = [(bytes([0xDE, 0xAD, 0xBE, 0xEF]),)]

EXAMPLE_COLUMNS = [field.name for field in EXAMPLE_SCHEMA.fields]

#: The Scala suite's `SharedSparkSession` runs `local[2]`: `parallelize` cuts the rows in 2.
SLICES = 2


@pytest.fixture(scope="module")
def session(spark) -> SparkSession:
    register_data_sources(spark)
    return spark


@pytest.fixture(scope="module")
def tf_sandbox_dir(tmp_path_factory) -> str:
    """`TF_SANDBOX_DIR`: a fresh folder for the module's files."""
    return str(tmp_path_factory.mktemp("tf-sandbox"))


def create_data_frame_for_example_tfrecord(spark: SparkSession) -> DataFrame:
    rdd = spark.sparkContext.parallelize(EXAMPLE_TEST_ROWS, SLICES)
    return spark.createDataFrame(rdd, EXAMPLE_SCHEMA)


def create_data_frame_for_sequence_example_tfrecords(spark: SparkSession) -> DataFrame:
    rdd = spark.sparkContext.parallelize(SEQUENCE_EXAMPLE_TEST_ROWS, SLICES)
    return spark.createDataFrame(rdd, SEQUENCE_EXAMPLE_SCHEMA)


def create_data_frame_for_byte_array_tfrecords(spark: SparkSession) -> DataFrame:
    # TensorFlowInferSchema.getSchemaForByteArray(): the schema our inference gives ByteArray.
    byte_array_schema = from_arrow_schema(SchemaInference("ByteArray").schema())
    rdd = spark.sparkContext.parallelize(BYTE_ARRAY_TEST_ROWS, SLICES)
    return spark.createDataFrame(rdd, byte_array_schema)


def write(df: DataFrame, save_mode: str = "ErrorIfExists"):
    """`df.write.format("tfrecord").mode(save_mode)` (Spark's SaveMode names)."""
    return df.write.format("tfrecord").mode(save_mode.lower())


def path_exists(path: str) -> bool:
    return os.path.exists(path)


def get_file_count(path: str) -> int:
    """Hadoop's `getContentSummary(path).getFileCount`: the files below `path`."""
    return sum(len(files) for _, _, files in os.walk(path))


def modification_time(path: str) -> int:
    """Hadoop's `getFileStatus(path).getModificationTime` (milliseconds)."""
    return os.stat(path).st_mtime_ns // 1_000_000


def assert_rows_almost_equal(expected_rows: list, actual_rows: list, schema: T.StructType) -> None:
    assert len(actual_rows) == len(expected_rows), actual_rows
    for expected, actual in zip(expected_rows, actual_rows):
        assert row_almost_equal(expected, actual, schema), (expected, actual)


def read_example_rows(spark: SparkSession, path: str) -> list:
    """The Scala suite's read: the Example schema given, columns selected, sorted by StrLabel."""
    imported_df = (
        spark.read.format("tfrecord").option("recordType", "Example").schema(EXAMPLE_SCHEMA).load(path)
    )
    return imported_df.select(*EXAMPLE_COLUMNS).sort("StrLabel").collect()


# --------------------------------------------------------------------------- #
# "Spark tfrecord IO" should ...
# --------------------------------------------------------------------------- #


def test_tfrecord_example_read_write(session, tf_sandbox_dir):
    """Scala: "Test tfrecord example Read/write "."""
    path = f"{tf_sandbox_dir}/example.tfrecord"

    df = create_data_frame_for_example_tfrecord(session)
    write(df).option("recordType", "Example").save(path)

    # If schema is not provided. It will automatically infer schema
    actual_rows = read_example_rows(session, path)

    expected_rows = df.collect()
    assert_rows_almost_equal(expected_rows, actual_rows, EXAMPLE_SCHEMA)


def test_tfrecord_partition_by_id(session, tf_sandbox_dir):
    """Scala: "Test tfrecord partition by id"."""
    output = f"{tf_sandbox_dir}/example-partition-by-id.tfrecord"
    df = create_data_frame_for_example_tfrecord(session)
    write(df).partitionBy("id").option("recordType", "Example").save(output)
    assert path_exists(output)
    partition1_path = f"{output}/id=11"
    partition2_path = f"{output}/id=21"
    assert path_exists(partition1_path)
    assert path_exists(partition2_path)
    assert get_file_count(partition1_path) == 2
    assert get_file_count(partition2_path) == 1


def test_tfrecord_read_write_sequenceexample(session, tf_sandbox_dir):
    """Scala: "Test tfrecord read/write SequenceExample"."""
    path = f"{tf_sandbox_dir}/sequenceExample.tfrecord"

    df = create_data_frame_for_sequence_example_tfrecords(session)
    write(df).option("recordType", "SequenceExample").save(path)

    imported_df = (
        session.read.format("tfrecord")
        .option("recordType", "SequenceExample")
        .schema(SEQUENCE_EXAMPLE_SCHEMA)
        .load(path)
    )
    actual_df = imported_df.select(
        "id", "IntegerArrayOfArrayLabel", "FloatArrayOfArrayLabel", "StrArrayOfArrayLabel"
    ).sort("id")

    expected_rows = df.collect()
    actual_rows = actual_df.collect()

    assert expected_rows == actual_rows


def test_tfrecord_read_write_bytearray(session, tf_sandbox_dir):
    """Scala: "Test tfrecord read/write ByteArray"."""
    path = f"{tf_sandbox_dir}/byteArray.tfrecord"

    df = create_data_frame_for_byte_array_tfrecords(session)
    write(df).option("recordType", "ByteArray").save(path)

    imported_df = session.read.format("tfrecord").option("recordType", "ByteArray").load(path)

    expected_rows = df.collect()
    actual_rows = imported_df.collect()

    assert expected_rows == actual_rows


def test_tfrecord_write_overwrite_mode(session, tf_sandbox_dir):
    """Scala: "Test tfrecord write overwrite mode "."""
    path = f"{tf_sandbox_dir}/example_overwrite.tfrecord"

    df = create_data_frame_for_example_tfrecord(session)
    write(df).option("recordType", "Example").save(path)

    write(df, "Overwrite").option("recordType", "Example").save(path)

    # If schema is not provided. It will automatically infer schema
    actual_rows = read_example_rows(session, path)

    expected_rows = df.collect()
    assert_rows_almost_equal(expected_rows, actual_rows, EXAMPLE_SCHEMA)


def test_tfrecord_write_append_mode(session, tf_sandbox_dir):
    """Scala: "Test tfrecord write append mode".

    The Scala test asserts only that both writes succeed; the folder then holds the rows
    twice, which is checked too.
    """
    path = f"{tf_sandbox_dir}/example_append.tfrecord"

    df = create_data_frame_for_example_tfrecord(session)
    write(df).option("recordType", "Example").save(path)
    write(df, "Append").option("recordType", "Example").save(path)

    expected_rows = sorted(df.collect() * 2, key=lambda row: row.StrLabel)
    assert_rows_almost_equal(expected_rows, read_example_rows(session, path), EXAMPLE_SCHEMA)


def test_tfrecord_write_ignore_mode(session, tf_sandbox_dir):
    """Scala: "Test tfrecord write ignore mode"."""
    path = f"{tf_sandbox_dir}/example_ignore.tfrecord"

    df = create_data_frame_for_example_tfrecord(session)
    write(df, "Ignore").option("recordType", "Example").save(path)

    assert path_exists(path)
    timestamp1 = modification_time(path)

    write(df, "Ignore").option("recordType", "Example").save(path)

    timestamp2 = modification_time(path)

    assert timestamp1 == timestamp2, "SaveMode.Ignore Error: File was overwritten. Timestamps do not match"
