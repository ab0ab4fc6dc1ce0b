"""Ported from linkedin/spark-tfrecord
src/test/scala/com/linkedin/spark/datasources/tfrecord/TFRecordSerializerTest.scala
(Copyright 2016 The TensorFlow Authors, Apache License 2.0).

Spark-TFRecord's `TFRecordSerializer(schema)` turns a Spark `InternalRow` into an Example, a
SequenceExample or the row's bytes, and refuses, when it is made, a schema holding a type it
cannot write. Ours is the kernel the `tfrecord` data source writes every Spark partition with,
`beam_tensorize.kernels.output.shards.serialize_records(batch, record_type)` (an Arrow record batch
in, one serialized record per row out; record types "Example", "SequenceExample",
"ByteArray"), and the data source refuses a schema before writing by serializing a batch of
that schema without rows, as here. The helpers `Int64ListFeature`, `floatListFeature` and
`bytesListFeature` (a Seq of values -> a `Feature`) are
`beam_tensorize.kernels.tfrecord.example_encoder.encode_features` (a column -> one serialized
`Feature` per row). Records are parsed back with TensorFlow's protos.

Decimals: a Scala `Decimal(6.5)` put in an `InternalRow` keeps its own precision and scale
(2, 1) whatever the field's type says (Spark-TFRecord reads it with `getDecimal`, which gives
the value as it is); an Arrow decimal(10,0) value cannot be 6.5, so a field holding 6.5 is a
decimal(10,1) here. Decimal fields whose values are whole numbers keep
`DataTypes.createDecimalType()` (decimal(10,0)).
"""

from __future__ import annotations

from decimal import Decimal

import pyarrow as pa
import pytest

pytest.importorskip("pyspark", reason="the Spark-TFRecord ports need the 'spark' extra (PySpark types)")

import tensorflow as tf
from pyspark.sql import types as T

from beam_tensorize.kernels.output.shards import serialize_records
from beam_tensorize.kernels.tfrecord.example_encoder import encode_features
from tests.compat.spark_tfrecord.testing_utils import (
    arrow_row,
    arrow_schema,
    float32,
    kind_number,
    matrix_almost_equal,
    seq_almost_equal,
)

Feature = tf.train.Feature
#: `DataTypes.createDecimalType()`: Spark's USER_DEFAULT decimal(10,0).
DECIMAL = T.DecimalType()
#: The type that holds the Scala test's `Decimal(6.5)` (see the module docstring).
DECIMAL_6_5 = T.DecimalType(10, 1)


def serialize_example(schema: T.StructType, values: list) -> tf.train.Example:
    """`new TFRecordSerializer(schema).serializeExample(InternalRow.fromSeq(values))`."""
    (record,) = serialize_records(arrow_row(schema, values), "Example").to_pylist()
    return tf.train.Example.FromString(record)


def serialize_sequence_example(schema: T.StructType, values: list) -> tf.train.SequenceExample:
    """`new TFRecordSerializer(schema).serializeSequenceExample(InternalRow.fromSeq(values))`."""
    (record,) = serialize_records(arrow_row(schema, values), "SequenceExample").to_pylist()
    return tf.train.SequenceExample.FromString(record)


def make_serializer(schema: T.StructType) -> None:
    """`new TFRecordSerializer(schema)`: what the data source checks before writing — the
    schema's batch without rows serializes (as Example records)."""
    serialize_records(pa.RecordBatch.from_pylist([], schema=arrow_schema(schema)), "Example")


def feature_of(values: pa.Array) -> list[tf.train.Feature]:
    """One `Feature` per row of `values` (`serializer.<kind>ListFeature(seq)` per row)."""
    return [Feature.FromString(f) for f in encode_features("label", values).to_pylist()]


# --------------------------------------------------------------------------- #
# "Serialize spark internalRow to tfrecord" should ...
# --------------------------------------------------------------------------- #


def test_serialize_bytearray_internalrow_to_bytearray():
    """Scala: "Serialize ByteArray internalRow to ByteArray"."""
    byte_array = bytes([0xDE, 0xAD, 0xBE, 0xEF])
    row = pa.RecordBatch.from_pydict({"byteArray": pa.array([byte_array], pa.binary())})
    (serialized,) = serialize_records(row, "ByteArray").to_pylist()

    # two byte arrays should be the same, since serialization just gets byte array from internal row
    assert len(byte_array) == len(serialized)
    assert serialized == byte_array


def test_serialize_decimal_internalrow_to_tfrecord_example():
    """Scala: "Serialize  decimal internalRow to tfrecord example"."""
    schema = T.StructType(
        [
            T.StructField("DecimalLabel", DECIMAL_6_5),
            T.StructField("DecimalArrayLabel", T.ArrayType(DECIMAL)),
        ]
    )
    decimal_array = [Decimal("4.0"), Decimal("8.0")]
    row = [Decimal("6.5"), decimal_array]

    # Encode Sql InternalRow to TensorFlow example
    example = serialize_example(schema, row)

    # Verify each Datatype converted to TensorFlow datatypes
    feature_map = example.features.feature
    assert len(feature_map) == len(row)

    assert kind_number(feature_map["DecimalLabel"]) == Feature.FLOAT_LIST_FIELD_NUMBER
    assert feature_map["DecimalLabel"].float_list.value[0] == float32(6.5)

    assert kind_number(feature_map["DecimalArrayLabel"]) == Feature.FLOAT_LIST_FIELD_NUMBER
    assert seq_almost_equal(
        [float32(v) for v in feature_map["DecimalArrayLabel"].float_list.value],
        [float32(float(d)) for d in decimal_array],
    )


def test_serialize_complex_internalrow_to_tfrecord_example():
    """Scala: "Serialize complex internalRow to tfrecord example"."""
    schema = T.StructType(
        [
            T.StructField("IntegerLabel", T.IntegerType()),
            T.StructField("LongLabel", T.LongType()),
            T.StructField("FloatLabel", T.FloatType()),
            T.StructField("DoubleLabel", T.DoubleType()),
            T.StructField("DecimalLabel", DECIMAL_6_5),
            T.StructField("DoubleArrayLabel", T.ArrayType(T.DoubleType())),
            T.StructField("DecimalArrayLabel", T.ArrayType(DECIMAL)),
            T.StructField("StrLabel", T.StringType()),
            T.StructField("StrArrayLabel", T.ArrayType(T.StringType())),
            T.StructField("BinaryLabel", T.BinaryType()),
            T.StructField("BinaryArrayLabel", T.ArrayType(T.BinaryType())),
        ]
    )
    double_array = [1.1, 111.1, 11111.1]
    decimal_array = [Decimal("4.0"), Decimal("8.0")]
    byte_array = bytes([0xDE, 0xAD, 0xBE, 0xEF])
    byte_array1 = bytes([0x80, 23, 127])  # Array[Byte](-128, 23, 127)

    row = [
        1,
        23,
        10.0,
        14.0,
        Decimal("6.5"),
        double_array,
        decimal_array,
        "r1",
        ["r2", "r3"],
        byte_array,
        [byte_array, byte_array1],
    ]
    example = serialize_example(schema, row)

    # Verify each Datatype converted to TensorFlow datatypes
    feature_map = example.features.feature
    assert len(feature_map) == len(row)

    assert kind_number(feature_map["IntegerLabel"]) == Feature.INT64_LIST_FIELD_NUMBER
    assert feature_map["IntegerLabel"].int64_list.value[0] == 1

    assert kind_number(feature_map["LongLabel"]) == Feature.INT64_LIST_FIELD_NUMBER
    assert feature_map["LongLabel"].int64_list.value[0] == 23

    assert kind_number(feature_map["FloatLabel"]) == Feature.FLOAT_LIST_FIELD_NUMBER
    assert feature_map["FloatLabel"].float_list.value[0] == float32(10.0)

    assert kind_number(feature_map["DoubleLabel"]) == Feature.FLOAT_LIST_FIELD_NUMBER
    assert feature_map["DoubleLabel"].float_list.value[0] == float32(14.0)

    assert kind_number(feature_map["DecimalLabel"]) == Feature.FLOAT_LIST_FIELD_NUMBER
    assert feature_map["DecimalLabel"].float_list.value[0] == float32(6.5)

    assert kind_number(feature_map["DoubleArrayLabel"]) == Feature.FLOAT_LIST_FIELD_NUMBER
    assert seq_almost_equal(
        [float32(v) for v in feature_map["DoubleArrayLabel"].float_list.value],
        [float32(v) for v in double_array],
    )

    assert kind_number(feature_map["DecimalArrayLabel"]) == Feature.FLOAT_LIST_FIELD_NUMBER
    assert seq_almost_equal(
        [float32(v) for v in feature_map["DecimalArrayLabel"].float_list.value],
        [float32(float(d)) for d in decimal_array],
    )

    assert kind_number(feature_map["StrLabel"]) == Feature.BYTES_LIST_FIELD_NUMBER
    assert feature_map["StrLabel"].bytes_list.value[0].decode("utf-8") == "r1"

    assert kind_number(feature_map["StrArrayLabel"]) == Feature.BYTES_LIST_FIELD_NUMBER
    assert [v.decode("utf-8") for v in feature_map["StrArrayLabel"].bytes_list.value] == ["r2", "r3"]

    assert kind_number(feature_map["BinaryLabel"]) == Feature.BYTES_LIST_FIELD_NUMBER
    assert feature_map["BinaryLabel"].bytes_list.value[0] == byte_array

    assert kind_number(feature_map["BinaryArrayLabel"]) == Feature.BYTES_LIST_FIELD_NUMBER
    binary_array_value = list(feature_map["BinaryArrayLabel"].bytes_list.value)
    assert binary_array_value == [byte_array, byte_array1]


def test_serialize_internalrow_to_tfrecord_sequenceexample():
    """Scala: "Serialize internalRow to tfrecord sequenceExample"."""
    schema = T.StructType(
        [
            T.StructField("IntegerLabel", T.IntegerType()),
            T.StructField("StringArrayLabel", T.ArrayType(T.StringType())),
            T.StructField("LongArrayOfArrayLabel", T.ArrayType(T.ArrayType(T.LongType()))),
            T.StructField("FloatArrayOfArrayLabel", T.ArrayType(T.ArrayType(T.FloatType()))),
            T.StructField("DoubleArrayOfArrayLabel", T.ArrayType(T.ArrayType(T.DoubleType()))),
            T.StructField("DecimalArrayOfArrayLabel", T.ArrayType(T.ArrayType(DECIMAL))),
            T.StructField("StringArrayOfArrayLabel", T.ArrayType(T.ArrayType(T.StringType()))),
            T.StructField("BinaryArrayOfArrayLabel", T.ArrayType(T.ArrayType(T.BinaryType()))),
        ]
    )
    string_list = ["r1", "r2", "r3"]
    long_list_of_lists = [[3, 5], [-8, 0]]
    float_list_of_lists = [[1.5, -6.5], [-8.2, 0.0]]
    double_list_of_lists = [[3.0], [6.0, 9.0]]
    decimal_list_of_lists = [[Decimal("2.0"), Decimal("4.0")], [Decimal("6.0")]]
    string_list_of_lists = [["r1"], ["r2", "r3"], ["r4"]]
    binary_list_of_lists = [[s.encode("utf-8") for s in strings] for strings in string_list_of_lists]

    row = [
        10,
        ["r1", "r2", "r3"],
        [[3, 5], [-8, 0]],
        [[1.5, -6.5], [-8.2, 0.0]],
        [[3.0], [6.0, 9.0]],
        [[Decimal("2.0"), Decimal("4.0")], [Decimal("6.0")]],
        [["r1"], ["r2", "r3"], ["r4"]],
        [[b"r1"], [b"r2", b"r3"], [b"r4"]],
    ]
    tfexample = serialize_sequence_example(schema, row)

    # Verify each Datatype converted to TensorFlow datatypes
    feature_map = tfexample.context.feature
    feature_list_map = tfexample.feature_lists.feature_list

    assert len(feature_map) == 2
    assert kind_number(feature_map["IntegerLabel"]) == Feature.INT64_LIST_FIELD_NUMBER
    assert feature_map["IntegerLabel"].int64_list.value[0] == 10
    assert kind_number(feature_map["StringArrayLabel"]) == Feature.BYTES_LIST_FIELD_NUMBER
    assert [v.decode("utf-8") for v in feature_map["StringArrayLabel"].bytes_list.value] == string_list

    assert len(feature_list_map) == 6
    steps = feature_list_map["LongArrayOfArrayLabel"].feature
    assert [list(f.int64_list.value) for f in steps] == long_list_of_lists

    steps = feature_list_map["FloatArrayOfArrayLabel"].feature
    assert matrix_almost_equal(
        [[float32(v) for v in f.float_list.value] for f in steps],
        [[float32(v) for v in values] for values in float_list_of_lists],
    )
    steps = feature_list_map["DoubleArrayOfArrayLabel"].feature
    assert matrix_almost_equal([list(f.float_list.value) for f in steps], double_list_of_lists)

    steps = feature_list_map["DecimalArrayOfArrayLabel"].feature
    assert matrix_almost_equal(
        [[Decimal(v) for v in f.float_list.value] for f in steps], decimal_list_of_lists
    )

    steps = feature_list_map["StringArrayOfArrayLabel"].feature
    assert [[v.decode("utf-8") for v in f.bytes_list.value] for f in steps] == string_list_of_lists

    steps = feature_list_map["BinaryArrayOfArrayLabel"].feature
    assert [list(f.bytes_list.value) for f in steps] == binary_list_of_lists


def test_throw_an_exception_for_non_nullable_data_types():
    """Scala: "Throw an exception for non-nullable data types"."""
    schema = T.StructType([T.StructField("NonNullLabel", T.ArrayType(T.FloatType()), nullable=False)])
    row = [None]

    with pytest.raises(ValueError, match="NonNullLabel"):
        serialize_example(schema, row)

    with pytest.raises(ValueError, match="NonNullLabel"):
        serialize_sequence_example(schema, row)


def test_omit_null_fields_from_example_for_nullable_data_types():
    """Scala: "Omit null fields from Example for nullable data types"."""
    schema = T.StructType(
        [
            T.StructField("NullLabel", T.ArrayType(T.FloatType()), nullable=True),
            T.StructField("FloatArrayLabel", T.ArrayType(T.FloatType())),
        ]
    )
    float_array = [2.5, 5.0]
    tfexample = serialize_example(schema, [None, [2.5, 5.0]])

    # Verify each Datatype converted to TensorFlow datatypes
    feature_map = tfexample.features.feature
    assert len(feature_map) == 1
    assert kind_number(feature_map["FloatArrayLabel"]) == Feature.FLOAT_LIST_FIELD_NUMBER
    assert seq_almost_equal(list(feature_map["FloatArrayLabel"].float_list.value), float_array)


def test_omit_null_fields_from_sequenceexample_for_nullable_data_types():
    """Scala: "Omit null fields from SequenceExample for nullable data types"."""
    schema = T.StructType(
        [
            T.StructField("NullLabel", T.ArrayType(T.FloatType()), nullable=True),
            T.StructField("FloatArrayLabel", T.ArrayType(T.FloatType())),
        ]
    )
    float_array = [2.5, 5.0]
    tf_seq_example = serialize_sequence_example(schema, [None, [2.5, 5.0]])

    # Verify each Datatype converted to TensorFlow datatypes
    feature_map = tf_seq_example.context.feature
    feature_list_map = tf_seq_example.feature_lists.feature_list
    assert len(feature_map) == 1
    assert len(feature_list_map) == 0
    assert kind_number(feature_map["FloatArrayLabel"]) == Feature.FLOAT_LIST_FIELD_NUMBER
    assert seq_almost_equal(list(feature_map["FloatArrayLabel"].float_list.value), float_array)


def test_throw_an_exception_for_unsupported_data_types():
    """Scala: "Throw an exception for unsupported data types" (a TimestampType field, refused
    when the serializer is made, before any row)."""
    schema = T.StructType([T.StructField("TimestampLabel", T.TimestampType())])

    with pytest.raises(TypeError, match="TimestampLabel"):
        make_serializer(schema)


# The Scala tests below call helper methods of one serializer (schema: bytesLabel binary).


def test_int64listfeature():
    """Scala: "Test Int64ListFeature"."""
    long_feature, long_list_feature = feature_of(pa.array([[10], [3, 5, 6]], pa.list_(pa.int64())))

    assert list(long_feature.int64_list.value) == [10]
    assert list(long_list_feature.int64_list.value) == [3, 5, 6]


def test_floatlistfeature():
    """Scala: "Test floatListFeature"."""
    float_feature, float_list_feature = feature_of(
        pa.array([[10.1], [3.1, 5.1, 6.1]], pa.list_(pa.float32()))
    )

    assert list(float_feature.float_list.value) == [float32(10.1)]
    assert list(float_list_feature.float_list.value) == [float32(3.1), float32(5.1), float32(6.1)]


def test_byteslistfeature():
    """Scala: "Test bytesListFeature"."""
    bytes_feature, bytes_list_feature = feature_of(
        pa.array([[b"\xff\xd8"], [b"\xff\xd8", b"\xff\xd9"]], pa.list_(pa.binary()))
    )

    assert list(bytes_feature.bytes_list.value) == [b"\xff\xd8"]
    assert list(bytes_list_feature.bytes_list.value) == [b"\xff\xd8", b"\xff\xd9"]
