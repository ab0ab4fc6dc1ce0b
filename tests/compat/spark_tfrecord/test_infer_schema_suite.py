"""Ported from linkedin/spark-tfrecord
src/test/scala/com/linkedin/spark/datasources/tfrecord/InferSchemaSuite.scala
(Copyright 2016 The TensorFlow Authors, Apache License 2.0).

Spark-TFRecord's `TensorFlowInferSchema(rdd)` aggregates the types of an RDD of Examples or
SequenceExamples into a Spark schema (per record, then merging the partitions' results). Ours
is the kernel the `tfrecord` data source infers schemas with,
`beam_tensorize.kernels.tfrecord.decoding.SchemaInference`: it observes serialized records of
one record type and its `schema()` is an Arrow schema, which the data source hands Spark
through PySpark's `from_arrow_schema` — as here, so the inferred types are compared with the
Spark types the Scala suite expects. As the RDD of the Scala suite (`parallelize` on the
`local[2]` session: one record per partition), each record is observed by an inference of its
own and the inferences are merged.
"""

from __future__ import annotations

import pytest

pytest.importorskip("pyspark", reason="the Spark-TFRecord ports need the 'spark' extra (PySpark types)")

from pyspark.sql import types as T
from pyspark.sql.pandas.types import from_arrow_schema

from beam_tensorize.kernels.tfrecord.decoding import RecordError, SchemaInference
from tests.compat.spark_tfrecord.testing_utils import (
    bytes_feature,
    example,
    feature_list,
    features,
    float_feature,
    int64_feature,
    sequence_example,
)

INT_MAX = 2**31 - 1
LONG_FEATURE = int64_feature(INT_MAX + 10)
FLOAT_FEATURE = float_feature(10.0)
STR_FEATURE = bytes_feature(b"r1")

LONG_LIST = int64_feature(-2, 20)
FLOAT_LIST = float_feature(2.5, 7.0)
STR_LIST = bytes_feature(b"r1", b"r2")

EMPTY_FLOAT_LIST = float_feature()


def tensorflow_infer_schema(records: list, record_type: str) -> T.StructType:
    """`TensorFlowInferSchema(spark.sparkContext.parallelize(records))`: one inference per
    record (partition), merged, as the Spark schema the data source reports."""
    merged = SchemaInference(record_type)
    for record in records:
        partition = SchemaInference(record_type)
        partition.observe([record.SerializeToString()])
        merged.merge(partition)
    return from_arrow_schema(merged.schema())


def schema_map(schema: T.StructType) -> dict[str, T.DataType]:
    return {field.name: field.dataType for field in schema.fields}


# --------------------------------------------------------------------------- #
# "InferSchema" should ...
# --------------------------------------------------------------------------- #


def test_infer_schema_from_example_records():
    """Scala: "Infer schema from Example records"."""
    # Build example1
    example1 = example(
        LongFeature=LONG_FEATURE,
        FloatFeature=FLOAT_FEATURE,
        StrFeature=STR_FEATURE,
        LongList=LONG_FEATURE,
        FloatList=FLOAT_FEATURE,
        StrList=STR_FEATURE,
        MixedTypeList=LONG_LIST,
    )

    # Example2 contains subset of features in example1 to test behavior with missing features
    example2 = example(
        StrFeature=STR_FEATURE,
        LongList=LONG_LIST,
        FloatList=FLOAT_LIST,
        StrList=STR_LIST,
        MixedTypeList=FLOAT_LIST,
    )

    inferred_schema = tensorflow_infer_schema([example1, example2], "Example")

    # Verify each TensorFlow Datatype is inferred as one of our Datatype
    assert len(inferred_schema.fields) == 7
    types = schema_map(inferred_schema)
    assert types["LongFeature"] == T.LongType()
    assert types["FloatFeature"] == T.FloatType()
    assert types["StrFeature"] == T.StringType()
    assert types["LongList"] == T.ArrayType(T.LongType())
    assert types["FloatList"] == T.ArrayType(T.FloatType())
    assert types["StrList"] == T.ArrayType(T.StringType())
    assert types["MixedTypeList"] == T.ArrayType(T.FloatType())


def test_infer_schema_from_sequenceexample_records():
    """Scala: "Infer schema from SequenceExample records".

    One deliberate difference (docs/migrating-from-spark-tfrecord.md, "Deliberate
    differences"): a feature list whose steps mix kinds (`MixedListOfLists`: a FloatList step
    and a BytesList step) is an error naming the feature, where Spark-TFRecord widens it to
    `array<array<string>>`. The other features infer as the Scala test asserts."""
    # Build sequence example1
    context1 = features(FloatFeature=FLOAT_FEATURE)
    seq_example1 = sequence_example(
        context1,
        LongListOfLists=feature_list(LONG_FEATURE, LONG_LIST),
        FloatListOfLists=feature_list(FLOAT_FEATURE, FLOAT_LIST),
        StringListOfLists=feature_list(STR_FEATURE),
        MixedListOfLists=feature_list(FLOAT_FEATURE, STR_LIST),
    )

    # SequenceExample2 contains subset of features in example1 to test behavior with missing features
    seq_example2 = sequence_example(
        None,
        LongListOfLists=feature_list(LONG_LIST),
        FloatListOfLists=feature_list(FLOAT_FEATURE),
        StringListOfLists=feature_list(STR_FEATURE),  # test both string lists of length=1
        MixedListOfLists=feature_list(LONG_FEATURE, STR_FEATURE),
    )

    with pytest.raises(RecordError, match="feature list 'MixedListOfLists' holds values of different kinds"):
        tensorflow_infer_schema([seq_example1, seq_example2], "SequenceExample")
    for seq_example in (seq_example1, seq_example2):
        del seq_example.feature_lists.feature_list["MixedListOfLists"]
    inferred_schema = tensorflow_infer_schema([seq_example1, seq_example2], "SequenceExample")

    # Verify each TensorFlow Datatype is inferred as one of our Datatype
    assert len(inferred_schema.fields) == 4
    types = schema_map(inferred_schema)
    assert types["FloatFeature"] == T.FloatType()
    assert types["LongListOfLists"] == T.ArrayType(T.ArrayType(T.LongType()))
    assert types["FloatListOfLists"] == T.ArrayType(T.ArrayType(T.FloatType()))
    assert types["StringListOfLists"] == T.ArrayType(T.ArrayType(T.StringType()))


# --------------------------------------------------------------------------- #
# (outside the "InferSchema" block)
# --------------------------------------------------------------------------- #


def test_throw_an_exception_for_unsupported_record_types():
    """Scala: "Throw an exception for unsupported record types" (an RDD of Longs: records
    that are neither Examples nor SequenceExamples)."""
    # Our inference is told the record type by name (the Scala one by the RDD's element type).
    with pytest.raises(ValueError, match="record type 'Long' is not one of Example, SequenceExample"):
        SchemaInference("Long")


def test_should_have_a_nulltype_if_there_are_no_elements():
    """Scala: "Should have a nullType if there are no elements"."""
    # Build sequence example1
    seq_example1 = sequence_example(features(emptyFloatFeature=EMPTY_FLOAT_LIST))

    inferred_schema = tensorflow_infer_schema([seq_example1], "SequenceExample")
    assert len(inferred_schema.fields) == 1
    types = schema_map(inferred_schema)
    assert types["emptyFloatFeature"] == T.NullType()
