"""Ported from linkedin/spark-tfrecord
src/test/scala/com/linkedin/spark/datasources/tfrecord/TFRecordDeserializerTest.scala
(Copyright 2016 The TensorFlow Authors, Apache License 2.0).

Spark-TFRecord's `TFRecordDeserializer(schema)` turns one Example / SequenceExample (or a
record's bytes) into a Spark `InternalRow` of `schema`. Ours is the kernel the `tfrecord` data
source reads every file with, `beam_tensorize.kernels.tfrecord.decoding.decode_records`:
serialized records and an Arrow schema (the Spark schema through PySpark's `to_arrow_schema`,
as the data source converts it) in, an Arrow record batch out. `deserializeExample`,
`deserializeSequenceExample` and `deserializeByteArray` are its record types "Example",
"SequenceExample" and "ByteArray"; the helpers `Int64ListFeature2SeqLong`,
`floatListFeature2SeqFloat`, `bytesListFeature2SeqArrayByte` and `bytesListFeature2SeqString`
(a feature's values as a Seq of one Scala type, or an exception for a list of another kind)
are a read of the feature into an `array<bigint>`, `array<float>`, `array<binary>` or
`array<string>` field.

Rows are compared as the Scala helper `InternalRow ~== (InternalRow, schema)` compares them
(TestingUtils.scala): numbers within 1e-6, decimals as doubles. That helper reads decimals at
`DecimalType.USER_DEFAULT` (decimal(10,0)), the type of the decimal fields here: the expected
decimals are compared as Spark holds them in such a column (`Decimal.changePrecision`,
ROUND_HALF_UP: 2.5 is 3), since an Arrow decimal(10,0) value, like a Spark one, has no
fraction.
"""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark", reason="the Spark-TFRecord ports need the 'spark' extra (PySpark types)")

from pyspark.sql import types as T

from beam_tensorize.kernels.tfrecord.decoding import RecordError, decode_records
from tests.compat.spark_tfrecord.testing_utils import (
    arrow_schema,
    bytes_feature,
    example,
    example_with,
    feature_list,
    features,
    float32,
    float_feature,
    int64_feature,
    row_almost_equal,
    sequence_example,
    spark_stored_decimal,
)

# The features every test builds its records from (the Scala class's values).
INT_FEATURE = int64_feature(1)
LONG_FEATURE = int64_feature(23)
FLOAT_FEATURE = float_feature(10.0)
DOUBLE_FEATURE = float_feature(14.0)
DECIMAL_FEATURE = float_feature(2.5)
LONG_ARR_FEATURE = int64_feature(-2, 7)
DOUBLE_ARR_FEATURE = float_feature(1.0, 2.0)
DECIMAL_ARR_FEATURE = float_feature(3.0, 5.0)
STR_FEATURE = bytes_feature(b"r1")
STR_LIST_FEATURE = bytes_feature(b"r2", b"r3")
BINARY_FEATURE = bytes_feature(b"r4")
BINARY_LIST_FEATURE = bytes_feature(b"r5", b"r6")

#: `DataTypes.createDecimalType()`: Spark's USER_DEFAULT decimal(10,0).
DECIMAL = T.DecimalType()


def deserialize(schema: T.StructType, records: list, record_type: str = "Example") -> list[dict]:
    """`new TFRecordDeserializer(schema).deserialize<record type>(record)` for each record:
    the rows of the batch our decoding kernel gives."""
    payloads = records if record_type == "ByteArray" else [r.SerializeToString() for r in records]
    return decode_records(payloads, arrow_schema(schema), record_type).to_pylist()


def deserialize_one(schema: T.StructType, record, record_type: str = "Example") -> dict:
    (row,) = deserialize(schema, [record], record_type)
    return row


def field_values(feature, field_type: T.DataType) -> list:
    """The values of one feature read into a field of `field_type` (a Seq-returning helper of
    the Scala deserializer; the schema it was made with, one LongLabel field, plays no part)."""
    one = T.StructType([T.StructField("label", field_type)])
    return deserialize_one(one, example(label=feature))["label"]


# --------------------------------------------------------------------------- #
# "Deserialize tfrecord to spark internalRow" should ...
# --------------------------------------------------------------------------- #


def test_deserialize_bytearray_to_internalrow():
    """Scala: "Deserialize ByteArray to internalRow"."""
    schema = T.StructType([T.StructField("ByteArray", T.BinaryType())])
    byte_array = bytes([0xDE, 0xAD, 0xBE, 0xEF])
    expected = [byte_array]
    actual = deserialize_one(schema, byte_array, "ByteArray")
    assert row_almost_equal(actual, expected, schema), actual


def test_serialize_tfrecord_example_to_spark_internalrow():
    """Scala: "Serialize tfrecord example to spark internalRow" (it deserializes an Example)."""
    schema = T.StructType(
        [
            T.StructField("IntegerLabel", T.IntegerType()),
            T.StructField("LongLabel", T.LongType()),
            T.StructField("FloatLabel", T.FloatType()),
            T.StructField("DoubleLabel", T.DoubleType()),
            T.StructField("DecimalLabel", DECIMAL),
            T.StructField("LongArrayLabel", T.ArrayType(T.LongType())),
            T.StructField("DoubleArrayLabel", T.ArrayType(T.DoubleType())),
            T.StructField("DecimalArrayLabel", T.ArrayType(DECIMAL)),
            T.StructField("StrLabel", T.StringType()),
            T.StructField("StrArrayLabel", T.ArrayType(T.StringType())),
            T.StructField("BinaryTypeLabel", T.BinaryType()),
            T.StructField("BinaryTypeArrayLabel", T.ArrayType(T.BinaryType())),
        ]
    )
    expected = [
        1,
        23,
        10.0,
        14.0,
        spark_stored_decimal(2.5, DECIMAL),  # Decimal(2.5d) in decimal(10,0): 3
        [-2, 7],
        [1.0, 2.0],
        [spark_stored_decimal(3.0, DECIMAL), spark_stored_decimal(5.0, DECIMAL)],
        "r1",
        ["r2", "r3"],
        b"r4",
        [b"r5", b"r6"],
    ]
    record = example(
        IntegerLabel=INT_FEATURE,
        LongLabel=LONG_FEATURE,
        FloatLabel=FLOAT_FEATURE,
        DoubleLabel=DOUBLE_FEATURE,
        DecimalLabel=DECIMAL_FEATURE,
        LongArrayLabel=LONG_ARR_FEATURE,
        DoubleArrayLabel=DOUBLE_ARR_FEATURE,
        DecimalArrayLabel=DECIMAL_ARR_FEATURE,
        StrLabel=STR_FEATURE,
        StrArrayLabel=STR_LIST_FEATURE,
        BinaryTypeLabel=BINARY_FEATURE,
        BinaryTypeArrayLabel=BINARY_LIST_FEATURE,
    )
    actual = deserialize_one(schema, record)
    assert row_almost_equal(actual, expected, schema), actual


def test_serialize_spark_internalrow_to_tfrecord_sequenceexample():
    """Scala: "Serialize spark internalRow to tfrecord sequenceExample" (it deserializes a
    SequenceExample)."""
    schema = T.StructType(
        [
            T.StructField("FloatLabel", T.FloatType()),
            T.StructField("LongArrayOfArrayLabel", T.ArrayType(T.ArrayType(T.LongType()))),
            T.StructField("FloatArrayOfArrayLabel", T.ArrayType(T.ArrayType(T.FloatType()))),
            T.StructField("DecimalArrayOfArrayLabel", T.ArrayType(T.ArrayType(DECIMAL))),
            T.StructField("StrArrayOfArrayLabel", T.ArrayType(T.ArrayType(T.StringType()))),
            T.StructField("ByteArrayOfArrayLabel", T.ArrayType(T.ArrayType(T.BinaryType()))),
        ]
    )
    expected = [
        10.0,
        [[-2, 7]],
        [[10.0], [1.0, 2.0]],
        [[spark_stored_decimal(3.0, DECIMAL), spark_stored_decimal(5.0, DECIMAL)]],
        [["r2", "r3"], ["r1"]],
        [[b"r5", b"r6"], [b"r4"]],
    ]
    record = sequence_example(
        features(FloatLabel=FLOAT_FEATURE),
        LongArrayOfArrayLabel=feature_list(LONG_ARR_FEATURE),
        FloatArrayOfArrayLabel=feature_list(FLOAT_FEATURE, DOUBLE_ARR_FEATURE),
        DecimalArrayOfArrayLabel=feature_list(DECIMAL_ARR_FEATURE),
        StrArrayOfArrayLabel=feature_list(STR_LIST_FEATURE, STR_FEATURE),
        ByteArrayOfArrayLabel=feature_list(BINARY_LIST_FEATURE, BINARY_FEATURE),
    )
    actual = deserialize_one(schema, record, "SequenceExample")
    assert row_almost_equal(actual, expected, schema), actual


def test_throw_an_exception_for_unsupported_data_types():
    """Scala: "Throw an exception for unsupported data types" (a TimestampType field)."""
    context = features(MapLabel1=INT_FEATURE)
    lists = {"MapLabel2": feature_list(LONG_ARR_FEATURE)}

    with pytest.raises(RecordError):
        schema = T.StructType([T.StructField("MapLabel1", T.TimestampType())])
        deserialize_one(schema, example_with(context))

    with pytest.raises(RecordError):
        schema = T.StructType([T.StructField("MapLabel2", T.TimestampType())])
        deserialize_one(schema, sequence_example(context, **lists), "SequenceExample")


def test_throw_an_exception_for_non_nullable_data_types():
    """Scala: "Throw an exception for non-nullable data types" (a non-nullable field the
    record lacks)."""
    context = features(FloatLabel=FLOAT_FEATURE)
    lists = {"LongArrayOfArrayLabel": feature_list(LONG_ARR_FEATURE)}

    with pytest.raises(RecordError):
        schema = T.StructType([T.StructField("MissingLabel", T.FloatType(), nullable=False)])
        deserialize_one(schema, example_with(context))

    with pytest.raises(RecordError):
        missing = T.StructField("MissingLabel", T.ArrayType(T.ArrayType(T.LongType())), nullable=False)
        deserialize_one(T.StructType([missing]), sequence_example(context, **lists), "SequenceExample")


def test_return_null_fields_for_nullable_data_types():
    """Scala: "Return null fields for nullable data types"."""
    context = features(FloatLabel=FLOAT_FEATURE)
    lists = {"LongArrayOfArrayLabel": feature_list(LONG_ARR_FEATURE)}

    # Deserialize Example
    schema1 = T.StructType(
        [
            T.StructField("FloatLabel", T.FloatType()),
            T.StructField("MissingLabel", T.FloatType(), nullable=True),
        ]
    )
    expected1 = [10.0, None]
    actual1 = deserialize_one(schema1, example_with(context))
    assert row_almost_equal(actual1, expected1, schema1), actual1

    # Deserialize SequenceExample
    schema2 = T.StructType(
        [
            T.StructField("LongArrayOfArrayLabel", T.ArrayType(T.ArrayType(T.LongType()))),
            T.StructField("MissingLabel", T.ArrayType(T.ArrayType(T.LongType())), nullable=True),
        ]
    )
    expected2 = [[[-2, 7]], None]
    actual2 = deserialize_one(schema2, sequence_example(context, **lists), "SequenceExample")
    assert row_almost_equal(actual2, expected2, schema2), actual2


# The Scala tests below call helper methods of one deserializer (schema: LongLabel long).


def test_int64listfeature2seqlong():
    """Scala: "Test Int64ListFeature2SeqLong"."""
    assert field_values(int64_feature(5), T.ArrayType(T.LongType()))[0] == 5

    # Throw exception if type doesn't match
    with pytest.raises(RecordError):
        field_values(float_feature(2.5), T.ArrayType(T.LongType()))


def test_floatlistfeature2seqfloat():
    """Scala: "Test floatListFeature2SeqFloat"."""
    assert field_values(float_feature(2.5), T.ArrayType(T.FloatType()))[0] == float32(2.5)

    # Throw exception if type doesn't match
    with pytest.raises(RecordError):
        field_values(int64_feature(5), T.ArrayType(T.FloatType()))


def test_byteslistfeature2seqarraybyte():
    """Scala: "Test bytesListFeature2SeqArrayByte"."""
    bytes_list = bytes_feature(b"str-input")
    assert field_values(bytes_list, T.ArrayType(T.BinaryType()))[0] == b"str-input"

    # Throw exception if type doesn't match
    with pytest.raises(RecordError):
        field_values(int64_feature(5), T.ArrayType(T.BinaryType()))


def test_byteslistfeature2seqstring():
    """Scala: "Test bytesListFeature2SeqString"."""
    bytes_list = bytes_feature(b"alice", b"bob")
    assert field_values(bytes_list, T.ArrayType(T.StringType())) == ["alice", "bob"]

    # Throw exception if type doesn't match (the Scala test calls bytesListFeature2SeqArrayByte
    # here; the string reading is checked too)
    with pytest.raises(RecordError):
        field_values(int64_feature(5), T.ArrayType(T.BinaryType()))
    with pytest.raises(RecordError):
        field_values(int64_feature(5), T.ArrayType(T.StringType()))


def test_deserialize_rows_with_different_features_should_not_inherit_features_from_previous_rows():
    """Scala: "Test deserialize rows with different features should not inherit features from
    previous rows"."""
    # given features
    float_features = features(FloatLabel=FLOAT_FEATURE)
    int64_features = features(IntLabel=INT_FEATURE)

    # Define common deserializer and schema
    schema = T.StructType(
        [
            T.StructField("FloatLabel", T.FloatType()),
            T.StructField("IntLabel", T.IntegerType()),
            T.StructField("MissingLabel", T.FloatType(), nullable=True),
        ]
    )

    # given rows with different features - row 1 has only FloatLabel feature
    expected1 = [10.0, None, None]
    # .. and the second row has only IntLabel feature
    expected2 = [None, 1, None]

    # One record at a time (the Scala test), then both in one batch (as files are read).
    actual1 = deserialize_one(schema, example_with(float_features))
    assert row_almost_equal(actual1, expected1, schema), actual1
    actual2 = deserialize_one(schema, example_with(int64_features))
    assert row_almost_equal(actual2, expected2, schema), actual2
    both = deserialize(schema, [example_with(float_features), example_with(int64_features)])
    assert len(both) == 2
    assert row_almost_equal(both[0], expected1, schema), both
    assert row_almost_equal(both[1], expected2, schema), both
