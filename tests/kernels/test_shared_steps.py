"""Kernels the Beam job and the Spark job share: range reading, feature-list building,
encoding with dead letters, record placement in files, TFRecord file reading."""

from __future__ import annotations

import gzip
import io
import itertools
import os

import fastavro
import pyarrow as pa
import pytest

from beam_tensorize.config import parse_config
from beam_tensorize.kernels import avro
from beam_tensorize.kernels.features.conversion import FeatureLayout
from beam_tensorize.kernels.features.vocab import (
    FeatureList,
    build_feature_list,
    feature_list_caps,
    lists_per_tensor,
    term_only_name,
)
from beam_tensorize.kernels.output import TFRecordOutput
from beam_tensorize.kernels.output.dead_letters import encode_with_dead_letters, off_shape_of
from beam_tensorize.kernels.output.shards import order_chunks, serialize_records, shard_chunks
from beam_tensorize.kernels.provenance import source_of, with_source
from beam_tensorize.kernels.tfrecord.example_encoder import encode_examples
from beam_tensorize.kernels.tfrecord.files import FileReading, read_file_batches
from beam_tensorize.kernels.tfrecord.framing import frame_records, iter_tfrecords


@pytest.fixture(scope="module")
def blocks_file(tmp_path_factory) -> str:
    """30 records in blocks of 4 (the last one of 2)."""
    schema = {
        "type": "record",
        "name": "R",
        "fields": [{"name": "id", "type": "long"}, {"name": "Tag", "type": "string"}],
    }
    path = str(tmp_path_factory.mktemp("avro") / "blocks.avro")
    with open(path, "wb") as f:
        writer = fastavro.write.Writer(f, fastavro.parse_schema(schema))
        for i in range(30):
            writer.write({"id": i, "Tag": f"t{i % 3}"})
            if i % 4 == 3:
                writer.flush()
        writer.flush()
    return path


def test_read_avro_range_gathers_blocks_and_tags_each_batch(blocks_file):
    size = os.path.getsize(blocks_file)
    ranges = list(avro.split_ranges(size, 200))
    # as few ranges as 200 bytes allow, contiguous, of equal size within a byte
    assert len(ranges) == -(-size // 200) > 1
    assert ranges[0][0] == 0 and ranges[-1][1] == size
    assert all(end == start for (_, end), (start, _) in itertools.pairwise(ranges))
    assert (
        max(e - s for s, e in ranges) - min(e - s for s, e in ranges) <= 1
        and max(e - s for s, e in ranges) <= 200
    )
    batches = []
    with open(blocks_file, "rb") as f:
        for start, end in ranges:
            batches.extend(avro.read_avro_range(f, blocks_file, ["ID", "tag"], start, end, batch_rows=6))
    assert [r["id"] for b in batches for r in b.to_pylist()] == list(range(30))
    assert all(b.schema.names == ["id", "Tag"] for b in batches)
    # batches of whole blocks (4 rows, the last 2), never across ranges: the first range holds
    # the header alone, the second blocks 1-4, the third blocks 5-8
    assert [b.num_rows for b in batches] == [8, 8, 8, 6]
    offsets = [source_of(b) for b in batches]
    assert all(path == blocks_file for path, _ in offsets)
    assert [o for _, o in offsets] == sorted({o for _, o in offsets})


def test_read_avro_range_names_the_file_and_its_columns_for_a_missing_column(blocks_file):
    with (
        open(blocks_file, "rb") as f,
        pytest.raises(ValueError, match="which this file does not have; its columns are: id, Tag"),
    ):
        list(avro.read_avro_range(f, blocks_file, ["nope"]))


def test_build_feature_list_orders_by_count_then_bytes_and_caps():
    built = build_feature_list([("b", 2), ("é", 3), ("a", 2), ("z", 3), (None, 0), (None, 1)], cap=3)
    assert built == FeatureList(("z", "é", "a"), (3, 3, 2), ntv=True)
    config = parse_config(
        {
            "features": [
                {"outputTensorInfo": {"name": "a", "dtype": "long", "shape": [-1], "vocabSizeCap": 5}},
                {"outputTensorInfo": {"name": "b", "dtype": "long", "shape": [-1], "vocabSizeCap": 2}},
                {"outputTensorInfo": {"name": "c", "dtype": "long", "shape": [-1]}},
            ]
        }
    )
    keys = {"a": "a", "b": "a", "c": "c"}
    # the shared list takes the smallest cap of its group; each tensor's term-only list its own
    assert feature_list_caps(config, keys) == {"a": 2, term_only_name("a"): 5, term_only_name("b"): 2}
    assert lists_per_tensor({"a": built}, keys) == {"a": built, "b": built}


def test_encode_with_dead_letters_keeps_columns_and_names_the_bad_rows():
    batch = with_source(
        pa.RecordBatch.from_pydict({"x": [[1, 2], [3], [4, 5]], "day": [1, 2, 3]}), "in.avro", 99
    )
    layouts = [FeatureLayout.for_tensor("x", "long", (2,), False)]
    examples, dead = encode_with_dead_letters(batch, layouts, keep_columns=["day"], check_shapes=True)
    assert examples.column("day").to_pylist() == [1, 3]
    assert (
        examples.column("serialized").to_pylist()
        == encode_examples(pa.RecordBatch.from_pydict({"x": [[1, 2], [4, 5]]})).to_pylist()
    )
    assert source_of(examples) == ("in.avro", 99)
    assert dead == [
        {
            "source": "in.avro: record 1 of the rows starting at byte 99",
            "reason": "tensor 'x': expected 2 values at dimension 0, got 1",
            "tensors": {"x": [3], "day": 2},
        }
    ]
    with pytest.raises(KeyError, match=r"columns to keep \['nope'\]"):
        encode_with_dead_letters(batch, layouts, keep_columns=["nope"])


def test_encode_with_dead_letters_keeps_rows_off_their_shape_and_tags_the_count():
    """By default (Avro2TF's rule) a [2] tensor of 1 value is written as it is; the batch's
    schema metadata counts it beside the source tag."""
    batch = with_source(
        pa.RecordBatch.from_pydict({"x": [[1, 2], [3], [4, 5]], "day": [1, 2, 3]}), "in.avro", 99
    )
    layouts = [FeatureLayout.for_tensor("x", "long", (2,), False)]
    examples, dead = encode_with_dead_letters(batch, layouts, keep_columns=["day"])
    assert dead == []
    assert examples.column("day").to_pylist() == [1, 2, 3]
    assert (
        examples.column("serialized").to_pylist()
        == encode_examples(pa.RecordBatch.from_pydict({"x": [[1, 2], [3], [4, 5]]})).to_pylist()
    )
    assert source_of(examples) == ("in.avro", 99)
    assert off_shape_of(examples) == {"x": 1}
    assert off_shape_of(encode_with_dead_letters(batch.slice(0, 1), layouts).examples) == {}


def test_shard_chunks_spread_records_round_robin_per_partition_folder():
    batch = with_source(pa.RecordBatch.from_pydict({"day": [1, 2, 1, 1, 2], "v": [0, 1, 2, 3, 4]}), "f", 7)
    chunks = dict(shard_chunks(batch, 2, ["day"], "Example"))
    assert sorted(chunks) == [("day=1", 0), ("day=1", 1), ("day=2", 0), ("day=2", 1)]
    keys = {key for key, _ in chunks.values()}
    assert keys == {"f\x0000000000000000000007"}
    decoded = {place: len(records) for place, (_, records) in chunks.items()}
    assert decoded[("day=1", 0)] + decoded[("day=1", 1)] == 3 and decoded[("day=2", 0)] == 1
    assert serialize_records(pa.RecordBatch.from_pydict({"b": [b"x"]}), "ByteArray").to_pylist() == [b"x"]
    with pytest.raises(ValueError, match="needs one binary column"):
        serialize_records(pa.RecordBatch.from_pydict({"a": [b"x"], "b": [b"y"]}), "ByteArray")


def test_order_chunks_and_the_tfrecord_writer_give_the_same_gzip_bytes_every_time():
    write_shard = TFRecordOutput().write_file
    chunks = [("k2", pa.array([b"c"])), None, ("k1", pa.array([b"b"])), ("k1", pa.array([b"a"]))]
    ordered = order_chunks(chunks)
    assert [records.to_pylist() for _, records in ordered] == [[b"a"], [b"b"], [b"c"]]
    first, second = io.BytesIO(), io.BytesIO()
    assert write_shard(first, ordered, "gzip") == 3
    write_shard(second, order_chunks(list(reversed(chunks))), "gzip")  # same order whatever came first
    assert first.getvalue() == second.getvalue()
    assert list(iter_tfrecords(io.BytesIO(gzip.decompress(first.getvalue())))) == [b"a", b"b", b"c"]
    empty = io.BytesIO()
    assert write_shard(empty, [], "gzip") == 0 and gzip.decompress(empty.getvalue()) == b""


def test_read_file_batches_gives_dead_letters_for_corrupt_records():
    good = encode_examples(pa.RecordBatch.from_pydict({"x": [1, 2, 3]})).to_pylist()
    data = bytearray(frame_records(good))
    data[len(data) - 5] ^= 0xFF  # spoil the last record's payload (its data checksum fails)
    reading = FileReading(
        "base", pa.schema([("x", pa.int64())]), (), "Example", dead_letters=True, batch_rows=2
    )
    items = list(read_file_batches(io.BytesIO(bytes(data)), "base/f.tfrecord", reading))
    batches = [i for i in items if isinstance(i, pa.RecordBatch)]
    letters = [i for i in items if isinstance(i, dict)]
    assert [b.to_pydict() for b in batches] == [{"x": [1, 2]}]
    assert [(d["source"], d["record"]) for d in letters] == [("base/f.tfrecord", 2)]
    with pytest.raises(ValueError, match=r"base/f\.tfrecord: .*record 2"):
        list(
            read_file_batches(
                io.BytesIO(bytes(data)), "base/f.tfrecord", reading._replace(dead_letters=False)
            )
        )
