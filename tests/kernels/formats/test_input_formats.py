"""The input-format layer without a pipeline: detection, splits, projection, provenance."""

from __future__ import annotations

import datetime
import gzip
import io
import re

import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest

from beam_tensorize.kernels import formats
from beam_tensorize.kernels.formats import (
    AvroFormat,
    ORCFormat,
    ParquetFormat,
    Split,
    TFRecordFormat,
    detect_format,
    get_format,
)
from beam_tensorize.kernels.formats.parquet import _column_paths
from beam_tensorize.kernels.provenance import describe_row, source_of, source_unit
from beam_tensorize.kernels.tfrecord.example_encoder import encode_examples
from beam_tensorize.kernels.tfrecord.framing import frame_records
from beam_tensorize.sample import SAMPLE_AVRO

NESTED = pa.list_(pa.struct([("name", pa.string()), ("term", pa.string()), ("value", pa.float32())]))


def _table(rows: int = 20) -> pa.Table:
    return pa.table(
        {
            "userId": pa.array(range(rows), pa.int64()),
            "genreFeatures": pa.array(
                [[{"name": "g", "term": f"t{i % 3}", "value": float(i)}] * (i % 3) for i in range(rows)],
                NESTED,
            ),
            "when": pa.array(
                [datetime.datetime(2024, 1, 1, 0, 0, i % 60) for i in range(rows)], pa.timestamp("us")
            ),
        }
    )


def _parquet(table: pa.Table, **kwargs) -> io.BytesIO:
    buf = io.BytesIO()
    pq.write_table(table, buf, **kwargs)
    buf.seek(0)
    return buf


def _orc(table: pa.Table, **kwargs) -> io.BytesIO:
    buf = io.BytesIO()
    orc.write_table(table, buf, **kwargs)
    buf.seek(0)
    return buf


def _tfrecord(batch: pa.RecordBatch) -> bytes:
    return frame_records(encode_examples(batch))


def _read_all(fmt, f, path, columns=None, batch_rows=8192, split_bytes=1 << 20):
    size = len(f.getvalue())
    splits = fmt.plan_splits(f, path, size, split_bytes)
    batches = [b for s in splits for b in fmt.read_split(f, s, columns, batch_rows)]
    return splits, batches


def test_formats_are_told_apart_by_their_first_bytes():
    with open(SAMPLE_AVRO, "rb") as f:
        avro_head = f.read(16)
    heads = {
        "avro": avro_head,
        "parquet": _parquet(_table()).read(16),
        "orc": _orc(_table()).read(16),
        "tfrecord": _tfrecord(pa.RecordBatch.from_pydict({"x": [1]}))[:16],
    }
    heads["tfrecord-gzip"] = gzip.compress(_tfrecord(pa.RecordBatch.from_pydict({"x": [1]})))[:16]
    assert {name: detect_format(head, name).name for name, head in heads.items()} == {
        "avro": "avro",
        "parquet": "parquet",
        "orc": "orc",
        "tfrecord": "tfrecord",
        "tfrecord-gzip": "tfrecord",
    }
    assert formats.format_names() == ("avro", "orc", "parquet", "tfrecord")


def test_unknown_and_empty_files_fail_naming_the_file():
    with pytest.raises(ValueError) as err:
        detect_format(b"userId,movieId\n1,2\n", "data/x.csv")
    assert str(err.value) == (
        "data/x.csv: not a file of a known format (avro, orc, parquet, tfrecord): its first bytes are "
        "7573657249642c6d; check the input path, or give the format (--input_format)"
    )
    with pytest.raises(
        ValueError, match=r"^data/e.avro: the file is empty \(0 bytes\), so its format cannot"
    ):
        detect_format(b"", "data/e.avro")
    with pytest.raises(
        ValueError, match=r"^input format 'xml' is not one of auto, avro, orc, parquet, tfrecord$"
    ):
        get_format("xml")


def test_a_file_of_another_format_says_what_it_looks_like():
    with open(SAMPLE_AVRO, "rb") as f:
        head = f.read(16)
    with pytest.raises(ValueError) as err:
        formats.check_format(ParquetFormat(), head, "in/a.parquet")
    assert str(err.value) == (
        "in/a.parquet: not a Parquet file (it looks like Avro); check the input path or the input format"
    )


def test_parquet_splits_are_runs_of_row_groups_tagged_by_row():
    table = _table(100)
    buf = _parquet(table, row_group_size=10)
    fmt = ParquetFormat()
    metadata = pq.ParquetFile(buf).metadata
    sizes = [metadata.row_group(i).total_byte_size for i in range(10)]
    split_bytes = 3 * max(sizes)
    splits, batches = _read_all(fmt, buf, "t.parquet", batch_rows=7, split_bytes=split_bytes)
    assert 3 <= len(splits) <= 5
    assert [s.start for s in splits[1:]] == [s.end for s in splits[:-1]] and splits[-1].end == 10
    assert all(s.first_row == 10 * s.start for s in splits)
    assert all(sum(sizes[s.start : s.end]) <= split_bytes for s in splits)
    assert pa.Table.from_batches(batches).to_pylist() == table.to_pylist()
    assert all(b.num_rows <= 7 for b in batches)
    tags = [source_of(b) for b in batches]
    assert tags[:3] == [("t.parquet", 0), ("t.parquet", 7), ("t.parquet", 14)]
    assert {source_unit(b) for b in batches} == {"row"}
    assert describe_row(batches[2], 3) == "t.parquet: record 17"
    assert batches[2].column("userId")[3].as_py() == 17


def test_parquet_projection_reads_only_the_leaves_asked_for():
    buf = _parquet(_table())
    parquet = pq.ParquetFile(buf)
    fmt = ParquetFormat()
    schema = fmt.read_schema(buf, "t.parquet", ["GENREFEATURES.Term", "userid"])
    assert schema == pa.schema(
        [("genreFeatures", pa.list_(pa.struct([("term", pa.string())]))), ("userId", pa.int64())]
    )
    assert _column_paths(parquet, parquet.schema_arrow, schema) == [
        "userId",
        "genreFeatures.list.element.term",
    ]
    _, batches = _read_all(fmt, buf, "t.parquet", ["genreFeatures.term", "userId"])
    assert batches[0].schema.names == ["genreFeatures", "userId"]
    assert batches[0].column("genreFeatures")[2].as_py() == [{"term": "t2"}, {"term": "t2"}]
    with pytest.raises(ValueError) as err:
        fmt.read_schema(buf, "t.parquet", ["movieId"])
    assert str(err.value) == (
        "t.parquet: the config reads column 'movieId', which this file does not have; its columns are: "
        "userId, genreFeatures, when"
    )
    with pytest.raises(ValueError, match=r"^t.parquet: genreFeatures has no field 'nope'"):
        fmt.read_schema(buf, "t.parquet", ["genreFeatures.nope"])


def test_orc_splits_are_stripes_tagged_by_stripe_and_row():
    table = pa.table({"id": pa.array(range(30000), pa.int64()), "s": [f"v{i}" * 20 for i in range(30000)]})
    buf = _orc(table, stripe_size=64 * 1024)
    fmt = ORCFormat()
    stripes = orc.ORCFile(buf).nstripes
    assert stripes > 2
    splits, batches = _read_all(fmt, buf, "t.orc", ["ID"], batch_rows=4000)
    assert [(s.start, s.end) for s in splits] == [(i, i + 1) for i in range(stripes)]
    assert pa.Table.from_batches(batches).column("id").to_pylist() == list(range(30000))
    assert {source_unit(b) for b in batches} == {"stripe"}
    second = next(b for b in batches if source_of(b)[1] >> 32 == 1)
    first_of_stripe_1 = second.column("id")[0].as_py()
    assert describe_row(second, 5) == "t.orc: stripe 1, record 5" and first_of_stripe_1 > 0
    assert sorted(source_of(b) for b in batches) == [source_of(b) for b in batches]
    # Each batch owns its rows: pickled (as between pipeline stages) it is not the whole stripe.
    import pickle

    _, small = _read_all(fmt, buf, "t.orc", batch_rows=500)
    assert len(small) > 2 * stripes
    for batch in small:
        fresh = pa.RecordBatch.from_pylist(batch.to_pylist(), schema=batch.schema)
        assert len(pickle.dumps(batch)) < 1.2 * len(pickle.dumps(fresh))


def test_orc_reads_timestamps_in_microseconds_like_the_other_formats():
    table = _table(3)
    fmt = ORCFormat()
    buf = _orc(table)
    assert fmt.read_schema(buf, "t.orc", ["when"]).field("when").type == pa.timestamp("us")
    _, batches = _read_all(fmt, buf, "t.orc", ["when", "genreFeatures.value"])
    assert batches[0].column("when").to_pylist() == table.column("when").to_pylist()
    assert batches[0].column("genreFeatures").type == pa.list_(pa.struct([("value", pa.float32())]))


def test_an_empty_orc_file_has_one_empty_split():
    fmt = ORCFormat()
    buf = _orc(_table(0))
    splits, batches = _read_all(fmt, buf, "e.orc")
    assert splits == [Split("e.orc", 0, 0)] and batches == []


def test_tfrecord_files_are_read_with_each_files_inferred_schema():
    batch = pa.RecordBatch.from_pydict(
        {"x": [1, 2, 3], "tags": [["a", "b"], [], ["c"]], "w": [0.5, 1.0, 2.0]}
    )
    fmt = get_format("tfrecord")
    for data in (_tfrecord(batch), gzip.compress(_tfrecord(batch))):
        buf = io.BytesIO(data)
        splits, batches = _read_all(fmt, buf, "in.tfrecord", ["TAGS", "x"], batch_rows=2)
        assert splits == [Split("in.tfrecord", 0, len(data))]
        assert [b.to_pydict() for b in batches] == [
            {"tags": [["a", "b"], []], "x": [1, 2]},
            {"tags": [["c"]], "x": [3]},
        ]
        assert [source_of(b)[1] for b in batches] == [0, 2]
    given = TFRecordFormat(schema=pa.schema([("w", pa.float32())]))
    _, batches = _read_all(given, io.BytesIO(_tfrecord(batch)), "in.tfrecord")
    assert batches[0].to_pydict() == {"w": [0.5, 1.0, 2.0]}


def test_avro_format_reads_what_the_avro_kernel_reads():
    fmt = AvroFormat()
    with open(SAMPLE_AVRO, "rb") as f:
        data = io.BytesIO(f.read())
    splits, batches = _read_all(fmt, data, SAMPLE_AVRO, ["userId"], split_bytes=40000)
    assert len(splits) == 4 and sum(b.num_rows for b in batches) == 300
    assert {source_unit(b) for b in batches} == {"byte"}


def test_formats_pickle_and_compare_by_settings():
    import pickle

    fmt = TFRecordFormat(schema=pa.schema([("x", pa.int64())]))
    assert pickle.loads(pickle.dumps(fmt)) == fmt != TFRecordFormat()
    assert get_format(fmt) is fmt


def test_tfrecord_format_from_a_planned_reading_gives_partitions_and_dead_letters():
    from beam_tensorize.kernels.tfrecord.files import FileReading

    good = _tfrecord(pa.RecordBatch.from_pydict({"x": [1, 2, 3]}))
    frame = len(good) // 3
    corrupt = bytearray(good)
    corrupt[frame + 13] ^= 0xFF  # the data of the second record: its checksum no longer matches
    reading = FileReading(
        "out", pa.schema([("x", pa.int64())]), (pa.field("day", pa.int64()),), dead_letters=True
    )
    fmt = TFRecordFormat.from_reading(reading)
    assert fmt.dead_letters and not TFRecordFormat().dead_letters
    path = "out/day=7/part-0.tfrecord"
    items = list(fmt.read_split(io.BytesIO(bytes(corrupt)), Split(path, 0, len(corrupt)), batch_rows=10))
    batches = [i for i in items if isinstance(i, pa.RecordBatch)]
    letters = [i for i in items if isinstance(i, dict)]
    assert [b.to_pydict() for b in batches] == [{"x": [1], "day": [7]}, {"x": [3], "day": [7]}]
    assert [source_of(b) for b in batches] == [(path, 0), (path, 2)]
    assert describe_row(batches[1], 0) == f"{path}: record 2"
    assert len(letters) == 1 and letters[0]["source"] == path and letters[0]["record"] == 1
    assert "checksum" in letters[0]["reason"] or "CRC" in letters[0]["reason"]


# -- one schema for the files of an input ------------------------------------------------------


@pytest.mark.parametrize(
    ("a", "b", "unified"),
    [
        (pa.int32(), pa.int64(), pa.int64()),
        (pa.uint32(), pa.int32(), pa.int64()),
        (pa.float32(), pa.float64(), pa.float64()),
        (pa.int64(), pa.float32(), None),  # 5 would become 5.0: another text, another hash
        (pa.string(), pa.large_string(), pa.large_string()),
        (pa.null(), pa.string(), pa.string()),
        (pa.list_(pa.int32()), pa.large_list(pa.int64()), pa.large_list(pa.int64())),
        (
            pa.struct([("term", pa.string())]),
            pa.struct([("term", pa.string()), ("value", pa.float32())]),
            pa.struct([("term", pa.string()), pa.field("value", pa.float32(), True)]),
        ),
        (pa.int64(), pa.string(), None),
        (pa.uint64(), pa.int64(), None),
        (pa.date32(), pa.timestamp("us"), None),
        (pa.list_(pa.string()), pa.string(), None),
        (pa.decimal128(10, 2), pa.decimal128(12, 3), None),
    ],
)
def test_unify_types_follows_avro_and_parquet_promotions(a, b, unified):
    from beam_tensorize.kernels.schemas import unify_types

    assert unify_types(a, b) == unified
    assert unify_types(b, a) == unified  # the order of the files does not matter


def test_an_int_column_in_one_file_and_a_double_in_another_is_refused_naming_both():
    """Read as doubles, the integers' text (so their hashes and feature-list entries) would
    change: 300 of 300 hashed ids used to differ without a word."""
    from beam_tensorize.kernels.schemas import unify_schemas

    a, b = pa.schema([("movieId", pa.int64())]), pa.schema([("movieId", pa.float64())])
    with pytest.raises(ValueError) as raised:
        unify_schemas([("a.avro", a), ("b.avro", b)])
    assert str(raised.value) == (
        "column 'movieId' is int64 in a.avro but double in b.avro: read as one table its integers would "
        "become floats (5 -> 5.0), which changes their text and so their hashes and feature-list entries; "
        "write the column with one type in every file, or read the files in separate jobs"
    )
    lists = pa.schema([("ids", pa.list_(pa.int32()))]), pa.schema([("ids", pa.list_(pa.float32()))])
    with pytest.raises(
        ValueError,
        match=re.escape(
            "column 'ids' is list<item: int32> in a.parquet but list<item: float> in b.parquet: read as one"
        ),
    ):
        unify_schemas([("a.parquet", lists[0]), ("b.parquet", lists[1])])


def test_unified_batches_keep_their_tags_and_values(tmp_path):
    """`read_split_batches` casts every batch to the input's unified schema."""
    import pyarrow.parquet as pq

    from beam_tensorize.job.reading import plan_splits, read_split_batches, unified_schema
    from beam_tensorize.kernels.provenance import source_of

    pq.write_table(pa.table({"id": pa.array([1, 2], pa.int32()), "x": [1.5, 2.5]}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"id": pa.array([1 << 40], pa.int64()), "x": [None]}), tmp_path / "b.parquet")
    splits = plan_splits([str(tmp_path / "*.parquet")])
    schema = unified_schema(splits, ["id", "x"])
    assert schema.field("id").type == pa.int64()
    batches = [b for fmt, s in splits for b in read_split_batches(fmt, s, ["id", "x"], schema=schema)]
    assert [b.column("id").to_pylist() for b in batches] == [[1, 2], [1 << 40]]
    assert all(b.schema.field("id").type == pa.int64() for b in batches)
    assert source_of(batches[0]) == (str(tmp_path / "a.parquet"), 0)
