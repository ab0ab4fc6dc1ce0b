"""Helpers shared by the ports of Spark-TFRecord's test suites.

Partly ported from linkedin/spark-tfrecord
src/test/scala/com/linkedin/spark/datasources/tfrecord/TestingUtils.scala (the `~==`
comparisons with an absolute tolerance of 1e-6); the original is Copyright 2016 The TensorFlow
Authors, Apache License 2.0. Also here: builders of `tf.train.Feature` messages (the Scala
suites' `Feature.newBuilder()...`) and Spark schemas as the Arrow schemas our kernels take.

How the Scala suites map to beam_tensorize:

* Spark `StructType`s are kept as PySpark `StructType`s and turned into Arrow schemas with
  PySpark's own `to_arrow_schema` (what the `tfrecord` data source does with a schema).
* Spark `InternalRow`s become rows of Arrow record batches (what the kernels take and give).
* Scala's `intercept[T] { ... }` becomes `pytest.raises(...)`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import pyarrow as pa
import tensorflow as tf
from pyspark.sql import types as T
from pyspark.sql.pandas.types import to_arrow_schema

#: TestingUtils' default tolerance (`epsilon: Float = 1E-6F`).
EPSILON = 1e-6

Feature = tf.train.Feature


# --------------------------------------------------------------------------- #
# tf.train.Feature builders
# --------------------------------------------------------------------------- #


def int64_feature(*values: int) -> tf.train.Feature:
    """`Feature.newBuilder().setInt64List(Int64List.newBuilder().addValue(...))`."""
    return Feature(int64_list=tf.train.Int64List(value=values))


def float_feature(*values: float) -> tf.train.Feature:
    """`Feature.newBuilder().setFloatList(FloatList.newBuilder().addValue(...))`."""
    return Feature(float_list=tf.train.FloatList(value=values))


def bytes_feature(*values: bytes) -> tf.train.Feature:
    """`Feature.newBuilder().setBytesList(BytesList.newBuilder().addValue(...))`."""
    return Feature(bytes_list=tf.train.BytesList(value=values))


def features(**by_name: tf.train.Feature) -> tf.train.Features:
    return tf.train.Features(feature=by_name)


def feature_list(*steps: tf.train.Feature) -> tf.train.FeatureList:
    return tf.train.FeatureList(feature=steps)


def example(**by_name: tf.train.Feature) -> tf.train.Example:
    return tf.train.Example(features=features(**by_name))


def example_with(features_message: tf.train.Features) -> tf.train.Example:
    """`Example.newBuilder().setFeatures(features).build()`."""
    return tf.train.Example(features=features_message)


def sequence_example(
    context: tf.train.Features | None = None, **lists: tf.train.FeatureList
) -> tf.train.SequenceExample:
    return tf.train.SequenceExample(context=context, feature_lists=tf.train.FeatureLists(feature_list=lists))


def kind_number(feature: tf.train.Feature) -> int | None:
    """`feature.getKindCase.getNumber`: the field number of the list the feature holds."""
    kind = feature.WhichOneof("kind")
    return None if kind is None else feature.DESCRIPTOR.fields_by_name[kind].number


def float32(value: float) -> float:
    """`value.toFloat` in Scala: the nearest float32, as a Python float (what a `FloatList`
    value reads back as)."""
    return float(pa.scalar(value, pa.float32()).as_py())


# --------------------------------------------------------------------------- #
# Schemas and rows
# --------------------------------------------------------------------------- #


def arrow_schema(schema: T.StructType) -> pa.Schema:
    """A Spark schema as the Arrow schema of the batches the data source hands the kernels."""
    return to_arrow_schema(schema, timezone="UTC")


def arrow_row(schema: T.StructType, values: Sequence[Any]) -> pa.RecordBatch:
    """`InternalRow.fromSeq(values)` with `schema`: a one-row Arrow record batch."""
    names = [field.name for field in schema.fields]
    return pa.RecordBatch.from_pylist([dict(zip(names, values, strict=True))], schema=arrow_schema(schema))


def spark_stored_decimal(value: float | Decimal, data_type: T.DecimalType) -> Decimal:
    """`value` as Spark holds it in a column of `data_type`: `Decimal.changePrecision` rounds
    to the column's scale with `ROUND_HALF_UP` (2.5 in decimal(10,0) is 3)."""
    return Decimal(str(value)).quantize(Decimal(1).scaleb(-data_type.scale), rounding=ROUND_HALF_UP)


# --------------------------------------------------------------------------- #
# TestingUtils: comparisons with a tolerance
# --------------------------------------------------------------------------- #


def seq_almost_equal(left: Sequence[float], right: Sequence[float], epsilon: float = EPSILON) -> bool:
    """`Seq[Float] ~== Seq[Float]` (and the Double / Decimal versions): same length, every pair
    within `epsilon`."""
    left, right = list(left), list(right)
    return len(left) == len(right) and all(
        math.isclose(float(a), float(b), rel_tol=0.0, abs_tol=epsilon) for a, b in zip(left, right)
    )


def matrix_almost_equal(
    left: Sequence[Sequence[float]], right: Sequence[Sequence[float]], epsilon: float = EPSILON
) -> bool:
    """`Seq[Seq[Float]] ~== Seq[Seq[Float]]` (and the Double / Decimal versions)."""
    left, right = list(left), list(right)
    return len(left) == len(right) and all(seq_almost_equal(a, b, epsilon) for a, b in zip(left, right))


def values_almost_equal(data_type: T.DataType, left: Any, right: Any, epsilon: float = EPSILON) -> bool:
    """`InternalRowWithAlmostEquals.newValueCompare(dataType)`: one value of `data_type` each.

    Integers, strings and binary are equal; floats, doubles and decimals (as doubles) are
    within `epsilon`; arrays have the same length and elements; a null array equals a null
    only.

    Raises:
        RuntimeError: a type the Scala helper does not compare either.
    """
    if isinstance(data_type, T.NullType):
        return left == right
    if isinstance(data_type, (T.IntegerType, T.LongType, T.StringType)):
        return left == right
    if isinstance(data_type, T.BinaryType):
        return left is not None and right is not None and bytes(left) == bytes(right)
    if isinstance(data_type, (T.FloatType, T.DoubleType, T.DecimalType)):
        return (
            left is not None
            and right is not None
            and math.isclose(float(left), float(right), rel_tol=0.0, abs_tol=epsilon)
        )
    if isinstance(data_type, T.ArrayType):
        if left is None or right is None:
            return left is None and right is None
        return len(left) == len(right) and all(
            values_almost_equal(data_type.elementType, a, b, epsilon) for a, b in zip(left, right)
        )
    raise RuntimeError(f"Cannot convert field to unsupported data type {data_type}")


def row_almost_equal(left: Any, right: Any, schema: T.StructType, epsilon: float = EPSILON) -> bool:
    """`InternalRow ~== (InternalRow, schema)` and `Row ~== (Row, schema)`: rows (dicts by
    field name, or sequences in the schema's order, e.g. PySpark `Row`s) of `schema` whose
    fields all compare equal as `values_almost_equal` says."""

    def ordered(row: Any) -> list:
        if isinstance(row, dict):
            return [row.get(field.name, _MISSING) for field in schema.fields]
        return list(row)

    left, right = ordered(left), ordered(right)
    if not (len(schema.fields) == len(left) == len(right)) or _MISSING in left + right:
        return False
    return all(
        (a is None and b is None) or values_almost_equal(field.dataType, a, b, epsilon)
        for field, a, b in zip(schema.fields, left, right)
    )


_MISSING = object()
