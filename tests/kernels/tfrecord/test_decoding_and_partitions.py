"""Kernels behind TFRecord as a format: partitions, compression, SequenceExample, decoding."""

from __future__ import annotations

import decimal
import gzip
import io
import zlib

import numpy as np
import pyarrow as pa
import pytest
import tensorflow as tf

from beam_tensorize.kernels.partitions import (
    HIVE_DEFAULT_PARTITION,
    escape_partition_value,
    infer_partition_column,
    parse_partition_path,
    partition_path,
    partition_value_strings,
    split_by_partition,
    unescape_partition_value,
)
from beam_tensorize.kernels.tfrecord.decoding import (
    RecordError,
    SchemaInference,
    conform,
    decode_records,
    raw_decode,
    widened_type,
)
from beam_tensorize.kernels.tfrecord.example_encoder import encode_examples
from beam_tensorize.kernels.tfrecord.framing import (
    compressed_writer,
    decompressed_reader,
    detect_compression,
    frame_records,
    iter_tfrecords,
    write_tfrecords,
)
from beam_tensorize.kernels.tfrecord.sequence_example import encode_sequence_examples

# --------------------------------------------------------------------------- #
# Partitions
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(
    ("value", "folder"),
    [
        ("plain", "plain"),
        ("a/b", "a%2Fb"),
        ("k=v", "k%3Dv"),
        ("100%", "100%25"),
        ("tab\there\x01", "tab%09here%01"),
        ("q\"#'*:?\\{[]^\x7f", "q%22%23%27%2A%3A%3F%5C%7B%5B%5D%5E%7F"),
        ("spaces and ünïcode", "spaces and ünïcode"),
        (None, HIVE_DEFAULT_PARTITION),
        ("", HIVE_DEFAULT_PARTITION),
        # the null's folder name as a real value reads back as itself, not as a null
        (HIVE_DEFAULT_PARTITION, "%5F_HIVE_DEFAULT_PARTITION__"),
    ],
)
def test_partition_values_are_escaped_as_hive_does_and_come_back(value, folder):
    assert escape_partition_value(value) == folder
    assert unescape_partition_value(folder) == (value or None)


def test_partition_paths_nest_in_column_order_and_parse_back():
    path = partition_path(["country", "day", "x/y"], ["N/L", None, "1"])
    assert path == "country=N%2FL/day=__HIVE_DEFAULT_PARTITION__/x%2Fy=1"
    assert parse_partition_path("trainingData/" + path) == [("country", "N/L"), ("day", None), ("x/y", "1")]


def test_partition_value_text_is_sparks_cast_to_string():
    assert partition_value_strings("i", pa.array([1, -20, None], pa.int8())) == ["1", "-20", None]
    assert partition_value_strings("f", pa.array([1.0, 0.1, 1e20, None])) == ["1.0", "0.1", "1.0E20", None]
    assert partition_value_strings("f32", pa.array([0.1], pa.float32())) == ["0.1"]
    assert partition_value_strings("b", pa.array([True, False])) == ["true", "false"]
    assert partition_value_strings("s", pa.array(["x"]).dictionary_encode()) == ["x"]
    with pytest.raises(TypeError, match="partition column 'l' has type list<item: int64>"):
        partition_value_strings("l", pa.array([[1]]))
    with pytest.raises(TypeError, match="'bin' holds bytes that are not UTF-8"):
        partition_value_strings("bin", pa.array([b"\xff"]))


def test_split_by_partition_groups_rows_and_drops_the_partition_columns():
    batch = pa.RecordBatch.from_pydict({"k": ["b", None, "b", "a"], "n": [1, 2, 1, 1], "v": [10, 20, 30, 40]})
    parts = split_by_partition(batch, ["k", "n"])
    assert [(path, part.to_pydict()) for path, part in parts] == [
        ("k=__HIVE_DEFAULT_PARTITION__/n=2", {"v": [20]}),
        ("k=a/n=1", {"v": [40]}),
        ("k=b/n=1", {"v": [10, 30]}),
    ]
    with pytest.raises(KeyError, match=r"partition column\(s\) \['nope'\]"):
        split_by_partition(batch, ["nope"])


def test_partition_columns_are_typed_by_inference():
    assert infer_partition_column(["1", None, "-3"]).to_pylist() == [1, None, -3]
    assert infer_partition_column(["1", "2.5", "NaN"]).type == pa.float64()
    assert infer_partition_column(["1", "x"]).to_pylist() == ["1", "x"]
    assert infer_partition_column([None]).type == pa.string()


# --------------------------------------------------------------------------- #
# Compression and corrupt frames
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(("compression", "tf_name"), [("none", ""), ("gzip", "GZIP"), ("zlib", "ZLIB")])
def test_compressed_files_are_read_by_tensorflow_and_detected(tmp_path, compression, tf_name):
    path = tmp_path / "data.tfrecord"
    records = [b"first", b"", b"x" * 5000]
    with open(path, "wb") as raw, compressed_writer(raw, compression) as out:
        write_tfrecords(out, records)
    assert [r.numpy() for r in tf.data.TFRecordDataset(str(path), compression_type=tf_name)] == records
    data = path.read_bytes()
    assert detect_compression(data[:12]) == compression
    assert list(iter_tfrecords(decompressed_reader(io.BytesIO(data), compression))) == records


def test_detection_of_files_tensorflow_wrote(tmp_path):
    for name, tf_name in [("gzip", "GZIP"), ("zlib", "ZLIB"), ("none", "")]:
        path = str(tmp_path / name)
        with tf.io.TFRecordWriter(path, options=tf_name) as writer:
            writer.write(b"record")
        head = open(path, "rb").read(12)
        assert detect_compression(head) == name
    assert detect_compression(b"") == "none"
    with pytest.raises(ValueError, match="not a TFRecord file: the first bytes 68656c6c6f"):
        detect_compression(b"hello world!")


def test_gzip_output_has_no_time_stamp():
    first, second = io.BytesIO(), io.BytesIO()
    for raw in (first, second):
        with compressed_writer(raw, "gzip") as out:
            write_tfrecords(out, [b"a"])
    assert first.getvalue() == second.getvalue()
    assert gzip.decompress(first.getvalue()) == frame_records([b"a"])
    assert zlib.decompress(first.getvalue(), 31) == frame_records([b"a"])


def test_a_corrupt_record_is_reported_and_skipped_and_a_bad_length_stops_the_file():
    data = bytearray(frame_records([b"one", b"two", b"three"]))
    data[12 + 3 + 4 + 12] ^= 0xFF  # first data byte of record 1
    seen = []
    records = list(
        iter_tfrecords(io.BytesIO(bytes(data)), "f.tfrecord", on_corrupt=lambda *a: seen.append(a))
    )
    assert records == [b"one", b"three"]
    assert seen == [
        (19, 1, "f.tfrecord: corrupt TFRecord data at byte offset 19 (record 1): data checksum mismatch")
    ]
    with pytest.raises(ValueError, match=r"f\.tfrecord: corrupt TFRecord data at byte offset 19"):
        list(iter_tfrecords(io.BytesIO(bytes(data)), "f.tfrecord"))
    data = bytearray(frame_records([b"one", b"two"]))
    data[19] ^= 0x01  # length of record 1
    seen.clear()
    assert list(iter_tfrecords(io.BytesIO(bytes(data)), "g", on_corrupt=lambda *a: seen.append(a))) == [
        b"one"
    ]
    assert seen[0][:2] == (19, 1) and "corrupt TFRecord length" in seen[0][2]


# --------------------------------------------------------------------------- #
# SequenceExample
# --------------------------------------------------------------------------- #


def test_sequence_examples_parse_in_tensorflow_and_match_protobuf_bytes():
    batch = pa.RecordBatch.from_pydict(
        {
            "id": [7, None, 3],
            "steps": [[[1, 2], [3]], None, [[], None, [5]]],
            "words": [[["a"]], [["b", "c"]], []],
            "weight": [[1.5], [], None],
        }
    )
    records = encode_sequence_examples(batch).to_pylist()
    for record in records:
        parsed = tf.train.SequenceExample.FromString(record)
        assert parsed.SerializeToString(deterministic=True) == record
    context, sequence, _ = tf.io.parse_sequence_example(
        records,
        context_features={"id": tf.io.VarLenFeature(tf.int64), "weight": tf.io.VarLenFeature(tf.float32)},
        sequence_features={"steps": tf.io.RaggedFeature(tf.int64), "words": tf.io.RaggedFeature(tf.string)},
    )
    assert tf.sparse.to_dense(context["id"]).numpy().tolist() == [[7], [0], [3]]
    assert tf.sparse.to_dense(context["weight"]).numpy().tolist() == [[1.5], [0.0], [0.0]]
    assert sequence["steps"].to_list() == [[[1, 2], [3]], [], [[], [], [5]]]
    assert sequence["words"].to_list() == [[[b"a"]], [[b"b", b"c"]], []]


def test_sequence_examples_without_feature_lists_are_examples():
    batch = pa.RecordBatch.from_pydict({"a": [1, 2], "b": [["x"], ["y", "z"]]})
    assert encode_sequence_examples(batch).equals(encode_examples(batch))


# --------------------------------------------------------------------------- #
# Decoding and inference
# --------------------------------------------------------------------------- #


def _records(**columns):
    return encode_examples(pa.RecordBatch.from_pydict(columns)).to_pylist()


def test_decode_with_a_schema_gives_scalars_lists_and_nulls():
    records = _records(i=[1, None], f=[[0.5, 1.5], None], s=["a", "b"], b=[b"\xff", b"\x00"])
    schema = pa.schema(
        [
            ("i", pa.int32()),
            ("f", pa.list_(pa.float32())),
            ("s", pa.string()),
            ("b", pa.binary()),
            ("gone", pa.int64()),
        ]
    )
    batch = decode_records(records, schema)
    assert batch.schema == schema
    assert batch.to_pydict() == {
        "i": [1, None],
        "f": [[0.5, 1.5], None],  # a null list is left out, so it reads back as null
        "s": ["a", "b"],
        "b": [b"\xff", b"\x00"],
        "gone": [None, None],
    }


def test_decode_errors_name_the_place_the_feature_and_the_record():
    records = _records(x=[[1], [1, 2]])
    with pytest.raises(
        RecordError, match=r"part-0: record 1: feature 'x' holds 2 values; the schema says a scalar"
    ):
        decode_records(records, pa.schema([("x", pa.int64())]), where="part-0")
    floats = _records(x=[[0.5], [1.5]])
    with pytest.raises(RecordError, match="feature 'x' holds float values; the schema says int64"):
        decode_records(floats, pa.schema([("x", pa.int64())]))
    with pytest.raises(RecordError, match="feature 'b' cannot be read as string"):
        decode_records(_records(b=[b"\xff"]), pa.schema([("b", pa.string())]))
    bad = []
    batch = decode_records(
        [records[0], b"\xff\xff not a message", records[0]],
        pa.schema([("x", pa.list_(pa.int64()))]),
        on_bad=lambda index, message: bad.append((index, message)),
    )
    assert batch.to_pydict() == {"x": [[1], [1]]}
    assert bad[0][0] == 1 and bad[0][1].startswith("records: record 1: not a valid Example")
    with pytest.raises(RecordError, match=r"f\.tfrecord: record 41: feature 'x' holds float values"):
        decode_records(floats[1:], pa.schema([("x", pa.int64())]), where="f.tfrecord", first_index=41)


def test_sequence_examples_decode_to_lists_of_lists():
    batch = pa.RecordBatch.from_pydict({"id": [1, 2], "steps": [[[1, 2], []], [[3]]]})
    records = encode_sequence_examples(batch).to_pylist()
    inference = SchemaInference("SequenceExample")
    inference.observe(records)
    schema = inference.schema()
    assert schema == pa.schema([("id", pa.int64()), ("steps", pa.list_(pa.list_(pa.int64())))])
    assert decode_records(records, schema, "SequenceExample").to_pydict() == batch.to_pydict()


def test_inference_rules_over_mixed_files():
    first = _records(id=[1, 2], tags=[["a"], ["b", "c"]], raw=[b"\xff", b"x"])
    second = _records(id=[3], score=[0.25], only_one=[["z"]], maybe=pa.array([[]], pa.list_(pa.int64())))
    inference = SchemaInference()
    inference.observe(first, "a.tfrecord")
    other = SchemaInference()
    other.observe(second, "b.tfrecord")
    inference.merge(other)
    assert inference.schema() == pa.schema(
        [
            ("id", pa.int64()),
            ("maybe", pa.null()),  # only empty lists: null (Spark-TFRecord's NullType)
            ("only_one", pa.string()),
            ("raw", pa.binary()),
            ("score", pa.float32()),
            ("tags", pa.list_(pa.string())),
        ]
    )
    assert inference.report().splitlines() == [
        "3 records sampled, 6 features:",
        "  id: int64 (in 3 records, at most 1 values)",
        "  maybe: null (in 1 records, at most 0 values)",
        "  only_one: string (in 1 records, at most 1 values)",
        "  raw: binary (in 2 records, at most 1 values)",
        "  score: float (in 1 records, at most 1 values)",
        "  tags: list<item: string> (in 2 records, at most 2 values)",
    ]
    # Kinds mixed across records widen as Spark-TFRecord's inference does: int64 -> float ->
    # string; the records then read into the widened type (numbers as Java prints them).
    empty = encode_examples(
        pa.RecordBatch.from_pydict({"s": ["x"], "e": pa.array([[]], pa.list_(pa.int64()))})
    )
    mixed = _records(n=[1]) + _records(n=[0.5]) + _records(n=[2.0], s=[3]) + empty.to_pylist()
    widened = SchemaInference()
    widened.observe(mixed)
    schema = widened.schema()
    assert schema == pa.schema([("e", pa.null()), ("n", pa.float32()), ("s", pa.string())])
    assert decode_records(mixed, schema, widened=True).to_pydict() == {
        "e": [None] * 4,
        "n": [1.0, 0.5, 2.0, None],
        "s": [None, None, "3", "x"],
    }
    floats = _records(f=[1.0]) + _records(f=[0.25])
    floats_as_text = decode_records(floats, pa.schema([("f", pa.string())]), widened=True)
    assert floats_as_text.column("f").to_pylist() == ["1.0", "0.25"]
    # a given schema (not widened by inference) takes only its own kinds, as Spark-TFRecord
    with pytest.raises(RecordError, match="record 0: feature 'n' holds int64 values; the schema says float"):
        decode_records(mixed, schema)
    with pytest.raises(RecordError, match="feature 'f' holds float values; the schema says string"):
        decode_records(floats, pa.schema([("f", pa.string())]))
    with pytest.raises(RecordError, match="feature 'e' holds values, but the schema says null"):
        decode_records(_records(e=[[1]]), schema)


def test_byte_arrays_are_read_as_they_are():
    assert raw_decode([b"\x00\x01", b""], "ByteArray").to_pydict() == {"byteArray": [b"\x00\x01", b""]}


def test_widened_types_document_the_round_trip():
    assert widened_type(pa.int8()) == pa.int64()
    assert widened_type(pa.bool_()) == pa.int64()
    assert widened_type(pa.float64()) == pa.float32()
    assert widened_type(pa.large_string()) == pa.string()
    assert widened_type(pa.list_(pa.list_(pa.uint16()))) == pa.list_(pa.list_(pa.int64()))
    with pytest.raises(TypeError, match="timestamp"):
        widened_type(pa.timestamp("s"))


def test_conform_of_empty_raw_batch_keeps_the_schema():
    raw = pa.RecordBatch.from_pydict({})
    out = conform(raw, pa.schema([("x", pa.int64())]))
    assert out.num_rows == 0 and out.schema.names == ["x"]
    assert np.asarray(out.column(0)).size == 0


def test_feature_list_int64_values_keep_all_64_bits():
    """tfx_bsl's SequenceExample decoder truncates these to int32; ours must not."""
    batch = pa.RecordBatch.from_pydict({"steps": [[[2**31, 2**40, -(2**63)]], None]})
    records = encode_sequence_examples(batch).to_pylist()
    schema = pa.schema([("steps", pa.list_(pa.list_(pa.int64())))])
    assert decode_records(records, schema, "SequenceExample").to_pydict() == {
        "steps": [[[2**31, 2**40, -(2**63)]], None]  # a null feature list is left out
    }
    with pytest.raises(RecordError, match="record 0: not a valid SequenceExample"):
        raw_decode([b"\x12\x05\x0a\x09"], "SequenceExample")


def test_a_feature_list_of_mixed_kinds_names_the_feature_the_kinds_and_the_record():
    import tensorflow as tf

    good = tf.train.SequenceExample()
    good.feature_lists.feature_list["steps"].feature.add().int64_list.value.append(1)
    mixed = tf.train.SequenceExample()
    steps = mixed.feature_lists.feature_list["steps"]
    steps.feature.add().int64_list.value.extend([1, 2])
    steps.feature.add().float_list.value.append(0.5)
    with pytest.raises(RecordError) as err:
        raw_decode([good.SerializeToString(), mixed.SerializeToString()], "SequenceExample")
    assert str(err.value) == (
        "records: record 1: feature list 'steps' holds values of different kinds (int64_list and "
        "float_list); every step of a feature list must have one kind"
    )


def test_floats_read_into_decimal_fields_round_ties_away_from_zero_as_spark_does():
    """Spark stores a float in a decimal column with `ROUND_HALF_UP` (Spark-TFRecord's
    "Serialize tfrecord example to spark internalRow": 2.5 into `decimal(10,0)` is 3); Arrow's
    cast alone rounds ties to even (2)."""
    records = _records(d=[2.5], ds=[[3.5, -2.5, 0.125]]) + _records(d=[-0.5], ds=[[1.0]])
    schema = pa.schema([("d", pa.decimal128(10, 0)), ("ds", pa.list_(pa.decimal128(6, 2)))])
    decoded = decode_records(records, schema).to_pydict()
    assert decoded["d"] == [decimal.Decimal("3"), decimal.Decimal("-1")]
    assert decoded["ds"] == [
        [decimal.Decimal("3.50"), decimal.Decimal("-2.50"), decimal.Decimal("0.13")],
        [decimal.Decimal("1.00")],
    ]
    whole = pa.schema([("ds", pa.list_(pa.decimal128(10, 0)))])
    assert decode_records(records, whole).column("ds").to_pylist()[0] == [4, -3, 0]
