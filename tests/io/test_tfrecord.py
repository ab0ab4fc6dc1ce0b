"""WriteTFRecord / ReadTFRecord as a format: partitions, save modes, record types, compression,
corrupt records, schema inference and the write -> read round trip."""

from __future__ import annotations

import gzip
import io
import os
import pickle
import tempfile
import zlib

import apache_beam as beam
import hypothesis.strategies as st
import numpy as np
import pyarrow as pa
import pytest
import tensorflow as tf
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to
from hypothesis import given

from beam_tensorize.io import ReadTFRecord, WriteTFRecord, infer_tfrecord_schema
from beam_tensorize.kernels.tfrecord.decoding import decode_records, widened_type
from beam_tensorize.kernels.tfrecord.example_encoder import encode_examples
from beam_tensorize.kernels.tfrecord.framing import decompressed_reader, frame_records, iter_tfrecords
from beam_tensorize.kernels.tfrecord.sequence_example import encode_sequence_examples
from tests.fuzzing import fuzz_settings


def _collected(pcoll, label: str = "Collect"):
    """A file that will hold the elements of `pcoll` (a list, pickled) once the pipeline ran."""
    handle, path = tempfile.mkstemp(suffix=".pickle")
    os.close(handle)

    def save(elements):
        with open(path, "wb") as f:
            pickle.dump(elements, f)

    _ = pcoll | f"{label}List" >> beam.combiners.ToList() | f"{label}Save" >> beam.Map(save)
    return path


def _load(path):
    with open(path, "rb") as f:
        elements = pickle.load(f)
    os.remove(path)
    return elements


def _write(directory, batches, **kwargs):
    with TestPipeline() as p:
        saved = _collected(p | beam.Create(batches) | WriteTFRecord(str(directory), **kwargs))
    return _load(saved)


def _read(path, **kwargs):
    read = ReadTFRecord(str(path), **kwargs)
    with TestPipeline() as p:
        saved = _collected(p | read | beam.FlatMap(lambda b: b.to_pylist()))
    return read, _load(saved)


def _files(root):
    return sorted(
        os.path.relpath(os.path.join(folder, name), root)
        for folder, _, names in os.walk(root)
        for name in names
        if "_temporary" not in folder
    )


def _examples(path, compression=""):
    return [tf.train.Example.FromString(r.numpy()) for r in tf.data.TFRecordDataset(str(path), compression)]


def _feature(example, name):
    feature = example.features.feature[name]
    return list(getattr(feature, feature.WhichOneof("kind")).value)


BATCH = pa.RecordBatch.from_pydict(
    {
        "country": ["NL", "a/b=c%", None, "NL", ""],
        "day": [1, 2, 1, 1, 2],
        "value": [1.5, 2.5, 3.5, 4.5, 5.5],
        "tags": [["x"], [], ["y", "z"], None, ["w"]],
    }
)


# --------------------------------------------------------------------------- #
# Partitioned layout
# --------------------------------------------------------------------------- #


def test_partitioned_layout_escaping_nulls_and_records_without_partition_columns(tmp_path):
    info = _write(tmp_path, [BATCH], partition_by=["country", "day"], num_shards=2)
    assert _files(tmp_path) == [
        "_SUCCESS",
        "country=NL/day=1/part-00000-of-00002.tfrecord",
        "country=NL/day=1/part-00001-of-00002.tfrecord",
        "country=__HIVE_DEFAULT_PARTITION__/day=1/part-00001-of-00002.tfrecord",
        "country=__HIVE_DEFAULT_PARTITION__/day=2/part-00001-of-00002.tfrecord",
        "country=a%2Fb%3Dc%25/day=2/part-00000-of-00002.tfrecord",
    ]
    assert info[0]["partitions"] == [
        "country=NL/day=1",
        "country=__HIVE_DEFAULT_PARTITION__/day=1",
        "country=__HIVE_DEFAULT_PARTITION__/day=2",
        "country=a%2Fb%3Dc%25/day=2",
    ]
    assert info[0]["numRecords"] == 5
    nl = [
        e
        for f in _files(tmp_path / "country=NL" / "day=1")
        for e in _examples(tmp_path / "country=NL/day=1" / f)
    ]
    assert sorted(_feature(e, "value")[0] for e in nl) == [1.5, 4.5]
    # Partition columns are left out of the records, and so is a null (Spark-TFRecord's rule).
    assert sorted(sorted(e.features.feature) for e in nl) == [["tags", "value"], ["value"]]
    escaped = _examples(tmp_path / "country=a%2Fb%3Dc%25/day=2/part-00000-of-00002.tfrecord")
    assert [_feature(e, "value") for e in escaped] == [[2.5]]


def test_read_back_a_partitioned_folder_with_typed_partition_columns(tmp_path):
    _write(tmp_path, [BATCH], partition_by=["country", "day"], num_shards=2)
    read, rows = _read(tmp_path)
    assert read.schema == pa.schema(
        [
            ("tags", pa.list_(pa.string())),
            ("value", pa.float32()),
            ("country", pa.string()),
            ("day", pa.int64()),
        ]
    )
    assert sorted(rows, key=lambda r: r["value"]) == [
        {"tags": ["x"], "value": 1.5, "country": "NL", "day": 1},
        {"tags": [], "value": 2.5, "country": "a/b=c%", "day": 2},
        {"tags": ["y", "z"], "value": 3.5, "country": None, "day": 1},
        {"tags": None, "value": 4.5, "country": "NL", "day": 1},  # a null is left out: null again
        {"tags": ["w"], "value": 5.5, "country": None, "day": 2},  # "" and null share a folder
    ]
    given = pa.schema([("value", pa.float64()), ("day", pa.string())])
    read, rows = _read(tmp_path, schema=given)
    assert read.schema == pa.schema([("value", pa.float64()), ("country", pa.string()), ("day", pa.string())])
    assert sorted(r["day"] for r in rows) == ["1", "1", "1", "2", "2"]


def test_many_partition_values_each_get_their_folder(tmp_path):
    batch = pa.RecordBatch.from_pydict({"k": list(range(300)), "v": list(range(300))})
    _write(tmp_path, [batch], partition_by=["k"])
    assert len([f for f in _files(tmp_path) if f.endswith(".tfrecord")]) == 300
    _, rows = _read(tmp_path)
    assert sorted((r["k"], r["v"]) for r in rows) == [(i, i) for i in range(300)]


# --------------------------------------------------------------------------- #
# Save modes
# --------------------------------------------------------------------------- #


def _days(*pairs):
    return pa.RecordBatch.from_pydict({"day": [d for d, _ in pairs], "v": [v for _, v in pairs]})


def _values(root):
    _, rows = _read(root)
    return sorted((r["day"], r["v"]) for r in rows)


def test_save_mode_error_refuses_a_folder_with_data(tmp_path):
    _write(tmp_path, [_days((1, 10))], partition_by=["day"])
    before = (tmp_path / "day=1/part-00000-of-00001.tfrecord").read_bytes()
    with pytest.raises(
        Exception, match=r"already holds 1 file\(s\).*choose another output folder or another save mode"
    ):
        _write(tmp_path, [_days((2, 20))], partition_by=["day"])
    assert (tmp_path / "day=1/part-00000-of-00001.tfrecord").read_bytes() == before
    assert not (tmp_path / "day=2").exists()


def test_save_mode_overwrite_replaces_everything(tmp_path):
    _write(tmp_path, [_days((1, 10), (2, 20))], partition_by=["day"])
    _write(tmp_path, [_days((3, 30))], partition_by=["day"], save_mode="overwrite")
    assert _files(tmp_path) == ["_SUCCESS", "day=3/part-00000-of-00001.tfrecord"]


def test_save_mode_overwrite_partitions_keeps_the_other_partitions(tmp_path):
    _write(tmp_path, [_days((1, 10), (2, 20), (2, 21))], partition_by=["day"], num_shards=2)
    _write(tmp_path, [_days((2, 99), (3, 30))], partition_by=["day"], save_mode="overwrite_partitions")
    assert _values(tmp_path) == [(1, 10), (2, 99), (3, 30)]
    assert "day=2/part-00001-of-00002.tfrecord" not in _files(tmp_path)


def test_save_mode_append_adds_files_under_new_names(tmp_path):
    _write(tmp_path, [_days((1, 10))], partition_by=["day"])
    _write(tmp_path, [_days((1, 11), (2, 20))], partition_by=["day"], save_mode="append")
    _write(tmp_path, [_days((1, 12))], partition_by=["day"], save_mode="append")
    assert _files(tmp_path) == [
        "_SUCCESS",
        "day=1/part-00000-of-00001-1.tfrecord",
        "day=1/part-00000-of-00001-2.tfrecord",
        "day=1/part-00000-of-00001.tfrecord",
        "day=2/part-00000-of-00001-1.tfrecord",
    ]
    assert _values(tmp_path) == [(1, 10), (1, 11), (1, 12), (2, 20)]


def test_save_mode_ignore_writes_nothing_when_there_is_data(tmp_path):
    _write(tmp_path / "new", [_days((1, 10))], save_mode="ignore")
    assert _files(tmp_path / "new") == ["_SUCCESS", "part-00000-of-00001.tfrecord"]
    info = _write(tmp_path / "new", [_days((5, 50))], save_mode="ignore", num_shards=3)
    assert info[0]["skipped"] is True and info[0]["files"] == []
    assert _files(tmp_path / "new") == ["_SUCCESS", "part-00000-of-00001.tfrecord"]
    assert _values(tmp_path / "new") == [(1, 10)]


def test_a_job_failing_while_writing_leaves_the_old_output_intact(tmp_path):
    _write(tmp_path, [_days((1, 10), (2, 20))], partition_by=["day"])
    before = {f: (tmp_path / f).read_bytes() for f in _files(tmp_path)}
    unwritable = pa.RecordBatch.from_pydict({"day": [1], "v": pa.array([1], pa.timestamp("s"))})
    for mode in ("overwrite", "overwrite_partitions", "append"):
        with pytest.raises(Exception, match="column 'v': unsupported type timestamp"):
            _write(tmp_path, [_days((1, 99)), unwritable], partition_by=["day"], save_mode=mode)
        assert {f: (tmp_path / f).read_bytes() for f in _files(tmp_path)} == before


# --------------------------------------------------------------------------- #
# Record types and compression
# --------------------------------------------------------------------------- #


def test_sequence_examples_are_written_and_parsed_by_tensorflow(tmp_path):
    batch = pa.RecordBatch.from_pydict(
        {"user": [1, 2], "clicks": [[[1, 2], [3]], [[4]]], "w": [[0.5], [1.5]]}
    )
    _write(tmp_path, [batch], record_type="SequenceExample", compression="zlib")
    path = tmp_path / "part-00000-of-00001.tfrecord.zlib"
    records = [r.numpy() for r in tf.data.TFRecordDataset(str(path), "ZLIB")]
    context, sequence, _ = tf.io.parse_sequence_example(
        records,
        context_features={"user": tf.io.FixedLenFeature([], tf.int64), "w": tf.io.VarLenFeature(tf.float32)},
        sequence_features={"clicks": tf.io.RaggedFeature(tf.int64)},
    )
    assert sorted(context["user"].numpy().tolist()) == [1, 2]
    by_user = dict(zip(context["user"].numpy().tolist(), sequence["clicks"].to_list(), strict=True))
    assert by_user == {1: [[1, 2], [3]], 2: [[4]]}
    read, rows = _read(tmp_path, record_type="SequenceExample")
    assert read.schema.field("clicks").type == pa.list_(pa.list_(pa.int64()))
    assert sorted(rows, key=lambda r: r["user"]) == [
        {"clicks": [[1, 2], [3]], "user": 1, "w": 0.5},
        {"clicks": [[4]], "user": 2, "w": 1.5},
    ]


def test_examples_are_parsed_by_tensorflow_with_gzip(tmp_path):
    _write(tmp_path, [BATCH.drop_columns(["country"])], compression="gzip")
    records = [
        r.numpy() for r in tf.data.TFRecordDataset(str(tmp_path / "part-00000-of-00001.tfrecord.gz"), "GZIP")
    ]
    parsed = tf.io.parse_example(
        records,
        {"day": tf.io.FixedLenFeature([], tf.int64), "value": tf.io.FixedLenFeature([], tf.float32)},
    )
    assert sorted(zip(parsed["day"].numpy().tolist(), parsed["value"].numpy().tolist())) == [
        (1, 1.5),
        (1, 3.5),
        (1, 4.5),
        (2, 2.5),
        (2, 5.5),
    ]


def test_byte_arrays_are_written_as_they_are_and_read_back(tmp_path):
    payloads = [b"\x00raw", b"", b"\xff" * 3]
    batch = pa.RecordBatch.from_pydict({"blob": payloads, "part": ["a", "a", "b"]})
    _write(tmp_path, [batch], record_type="ByteArray", partition_by=["part"])
    assert [
        r.numpy() for r in tf.data.TFRecordDataset(str(tmp_path / "part=a/part-00000-of-00001.tfrecord"))
    ] == [
        b"\x00raw",
        b"",
    ]
    _, rows = _read(tmp_path, record_type="ByteArray")
    assert sorted((r["part"], r["byteArray"]) for r in rows) == [
        ("a", b""),
        ("a", b"\x00raw"),
        ("b", b"\xff\xff\xff"),
    ]
    with pytest.raises(
        ValueError, match=r"record_type 'ByteArray' needs one binary column \(or record_column\)"
    ):
        _write(tmp_path / "x", [BATCH], record_type="ByteArray")


@pytest.mark.parametrize("compression", ["none", "gzip", "zlib"])
def test_compression_is_detected_on_read_whatever_the_file_name(tmp_path, compression):
    _write(tmp_path / "w", [_days((1, 10), (2, 20))], compression=compression)
    (name,) = [f for f in _files(tmp_path / "w") if f.startswith("part")]
    os.makedirs(tmp_path / "r")
    os.rename(tmp_path / "w" / name, tmp_path / "r" / "data")  # no telling suffix
    _, rows = _read(tmp_path / "r" / "data")
    assert sorted((r["day"], r["v"]) for r in rows) == [(1, 10), (2, 20)]
    _, rows = _read(tmp_path / "r" / "data", compression=compression)
    assert len(rows) == 2


# --------------------------------------------------------------------------- #
# Corrupt records and inference
# --------------------------------------------------------------------------- #


def _corrupt_file(path):
    records = encode_examples(pa.RecordBatch.from_pydict({"x": [1, 2, 3]})).to_pylist()
    data = bytearray(frame_records(records))
    second = 12 + len(records[0]) + 4
    data[second + 12] ^= 0xFF  # first data byte of record 1
    path.write_bytes(bytes(data))
    return second


def test_a_corrupt_record_fails_with_file_and_offset_or_goes_to_dead_letters(tmp_path):
    offset = _corrupt_file(tmp_path / "bad.tfrecord")
    schema = pa.schema([("x", pa.int64())])
    with pytest.raises(
        Exception, match=rf"bad\.tfrecord: corrupt TFRecord data at byte offset {offset} \(record 1\)"
    ):
        _read(tmp_path / "bad.tfrecord", schema=schema)
    read = ReadTFRecord(str(tmp_path / "bad.tfrecord"), schema=schema, dead_letters=True, batch_rows=2)
    with TestPipeline() as p:
        out = p | read
        assert_that(
            out.batches | beam.FlatMap(lambda b: b.column("x").to_pylist()), equal_to([1, 3]), label="good"
        )
        letters = out.dead_letters | beam.Map(
            lambda d: (os.path.basename(d["source"]), d["record"], d["offset"])
        )
        assert_that(letters, equal_to([("bad.tfrecord", 1, offset)]), label="bad")


def test_records_that_do_not_fit_the_schema_are_named_by_position(tmp_path):
    records = encode_examples(pa.RecordBatch.from_pydict({"x": [[1], [1, 2], [3]]})).to_pylist()
    (tmp_path / "f.tfrecord").write_bytes(frame_records(records))
    schema = pa.schema([("x", pa.int64())])
    with pytest.raises(
        Exception, match=r"f\.tfrecord: record 1: feature 'x' holds 2 values; the schema says a scalar"
    ):
        _read(tmp_path / "f.tfrecord", schema=schema)
    read = ReadTFRecord(str(tmp_path / "f.tfrecord"), schema=schema, dead_letters=True)
    with TestPipeline() as p:
        out = p | read
        assert_that(
            out.batches | beam.FlatMap(lambda b: b.column("x").to_pylist()), equal_to([1, 3]), label="good"
        )
        assert_that(out.dead_letters | beam.Map(lambda d: d["record"]), equal_to([1]), label="bad")


def test_schema_inference_on_mixed_files_reports_the_features(tmp_path):
    first = encode_examples(pa.RecordBatch.from_pydict({"id": [1, 2], "tags": [["a"], ["b", "c"]]}))
    second = encode_examples(pa.RecordBatch.from_pydict({"id": [3], "score": [0.5]}))
    (tmp_path / "a.tfrecord").write_bytes(frame_records(first))
    (tmp_path / "b.tfrecord.gz").write_bytes(gzip.compress(frame_records(second)))
    (tmp_path / "_SUCCESS").write_bytes(b"")
    read, rows = _read(tmp_path)
    assert read.schema == pa.schema(
        [("id", pa.int64()), ("score", pa.float32()), ("tags", pa.list_(pa.string()))]
    )
    assert read.inference.report().splitlines()[0] == "3 records sampled, 3 features:"
    assert sorted(rows, key=lambda r: r["id"]) == [
        {"id": 1, "score": None, "tags": ["a"]},
        {"id": 2, "score": None, "tags": ["b", "c"]},
        {"id": 3, "score": 0.5, "tags": None},
    ]
    # A bounded sample: the whole first file (a feature that first appears late in it is
    # seen), then ceil(2 / 3) = 1 record of each later file.
    many = encode_examples(pa.RecordBatch.from_pydict({"id": list(range(5000)), "late": [None] * 4999 + [7]}))
    (tmp_path / "many.tfrecord").write_bytes(frame_records(many))
    files = [str(tmp_path / name) for name in ("many.tfrecord", "a.tfrecord", "b.tfrecord.gz")]
    sampled = infer_tfrecord_schema(files, sample_records=2)
    assert sampled.records == 5002
    assert sampled.schema().field("late").type == pa.int64()
    assert sampled.schema().field("tags").type == pa.string()  # only ["a"] of a.tfrecord was seen
    assert infer_tfrecord_schema(files, sample_records=None).records == 5003


def test_read_errors_name_the_path(tmp_path):
    with pytest.raises(FileNotFoundError, match="no TFRecord files at"):
        ReadTFRecord(str(tmp_path / "nothing"))
    (tmp_path / "x.tfrecord").write_bytes(b"hello world, no frames here")
    with pytest.raises(ValueError, match=r"x\.tfrecord: not a TFRecord file"):
        ReadTFRecord(str(tmp_path / "x.tfrecord"))


# --------------------------------------------------------------------------- #
# Round trip
# --------------------------------------------------------------------------- #

_SCALARS = {
    "int8": (pa.int8(), st.integers(-128, 127)),
    "int32": (pa.int32(), st.integers(-(2**31), 2**31 - 1)),
    "int64": (pa.int64(), st.integers(-(2**63), 2**63 - 1)),
    "uint16": (pa.uint16(), st.integers(0, 2**16 - 1)),
    "bool": (pa.bool_(), st.booleans()),
    "float32": (pa.float32(), st.floats(width=32, allow_nan=False)),
    "float64": (pa.float64(), st.floats(allow_nan=False)),
    "string": (pa.string(), st.text(max_size=5)),
    "large_string": (pa.large_string(), st.text(max_size=5)),
    "binary": (pa.binary(), st.binary(max_size=5)),
}


@st.composite
def _batches(draw):
    rows = draw(st.integers(0, 6))
    columns = {}
    for i in range(draw(st.integers(1, 4))):
        kind = draw(st.sampled_from(sorted(_SCALARS)))
        typ, values = _SCALARS[kind]
        nesting = draw(st.integers(0, 2))
        if nesting == 0:
            data = draw(st.lists(st.none() | values, min_size=rows, max_size=rows))
        elif nesting == 1:
            typ = pa.list_(typ)
            # A null list is left out of its record and reads back null; [] stays [].
            data = draw(st.lists(st.none() | st.lists(values, max_size=3), min_size=rows, max_size=rows))
        else:
            typ = pa.list_(pa.list_(typ))
            data = draw(
                st.lists(
                    st.none() | st.lists(st.lists(values, max_size=2), max_size=3),
                    min_size=rows,
                    max_size=rows,
                )
            )
        columns[f"c{i}_{kind}"] = pa.array(data, typ)
    return pa.RecordBatch.from_pydict(columns)


def _expected(batch: pa.RecordBatch) -> pa.Table:
    schema = pa.schema([(f.name, widened_type(f.type)) for f in batch.schema])
    return pa.Table.from_batches([batch]).cast(schema)


@fuzz_settings(150)
@given(_batches())
def test_round_trip_write_then_read_gives_the_same_table(batch):
    """Any batch of supported types reads back equal, after the documented widening."""
    nested = any(pa.types.is_list(f.type) and pa.types.is_list(f.type.value_type) for f in batch.schema)
    record_type = "SequenceExample" if nested else "Example"
    encode = encode_sequence_examples if nested else encode_examples
    framed = io.BytesIO(zlib.compress(frame_records(encode(batch))))
    records = list(iter_tfrecords(decompressed_reader(framed, "zlib")))
    expected = _expected(batch)
    got = decode_records(records, expected.schema, record_type)
    assert pa.Table.from_batches([got], expected.schema).equals(expected)


def test_round_trip_through_the_transforms_with_partitions(tmp_path):
    batch = pa.RecordBatch.from_pydict(
        {
            "part": ["x", "y", "x"],
            "i8": pa.array([1, None, -3], pa.int8()),
            "f64": [0.1, 2.0, None],
            "s": ["a", None, "ü"],
            "b": [b"\x00", b"\xff", None],
            "li": [[1, 2], [], [3]],
            "lf": pa.array([[0.5], [1.5, 2.5], []], pa.list_(pa.float32())),
            "ls": [["p"], ["q", "r"], []],
        }
    )
    _write(tmp_path, [batch], partition_by=["part"], num_shards=2, compression="gzip")
    schema = pa.schema([(f.name, widened_type(f.type)) for f in batch.schema if f.name != "part"])
    _, rows = _read(tmp_path, schema=schema)
    expected = _expected(batch.drop_columns(["part"])).to_pylist()
    for row, part in zip(expected, ["x", "y", "x"], strict=True):
        row["part"] = part
    key = lambda r: (r["part"], r["li"])  # noqa: E731
    assert sorted(rows, key=key) == sorted(expected, key=key)
    assert np.float32(0.1) == sorted(rows, key=key)[0]["f64"]
