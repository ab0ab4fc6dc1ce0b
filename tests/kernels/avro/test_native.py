"""Tests for the native Avro decoder: identical batches to the fastavro path, errors, fallbacks.

Every file is written by fastavro into ``tmp_path``, or its block payloads are built byte by
byte (arrays split in several blocks, corrupt data); the bundled MovieLens sample is read too.
Each block is decoded twice, with the native decoder and with fastavro
(``BEAM_TENSORIZE_AVRO_DECODER=fastavro``), and the two batches must be equal.
"""

from __future__ import annotations

import datetime
import decimal
import inspect
import io
import random
import struct
import sys
import uuid
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from beam_tensorize.kernels.avro import (
    DECODER_ENV,
    AvroFormatError,
    RawBlock,
    avro_schema_to_arrow,
    decode,
    decode_block,
    iter_blocks,
    project_arrow_schema,
    read_avro_batches,
    read_header,
)
from beam_tensorize.kernels.avro import native as avro_native
from beam_tensorize.sample import SAMPLE_AVRO
from tests.fuzzing import fuzz_settings
from tests.kernels.avro import test_decoding as avro_tests

UTC = datetime.timezone.utc
NATIVE = avro_native.available()
needs_native = pytest.mark.skipif(not NATIVE, reason="the C extension _avrodecode is not built")


def _zigzag(n: int) -> bytes:
    return avro_tests._zigzag(n)


def _write(path: Path, schema, records, **kwargs) -> str:
    with open(path, "wb") as out:
        fastavro.writer(out, fastavro.parse_schema(schema), records, **kwargs)
    return str(path)


def _decode_both(block, header, arrow_schema, path, monkeypatch):
    """(native result, fastavro result): a batch or the AvroFormatError raised."""
    results = []
    for mode in ("native", "fastavro"):
        if mode == "fastavro":
            monkeypatch.setenv(DECODER_ENV, "fastavro")
        else:
            monkeypatch.delenv(DECODER_ENV, raising=False)
        try:
            results.append(decode_block(block, header, arrow_schema, path))
        except AvroFormatError as e:
            results.append(e)
    monkeypatch.delenv(DECODER_ENV, raising=False)
    return results


def _assert_same(native, reference):
    assert isinstance(native, pa.RecordBatch), native
    assert isinstance(reference, pa.RecordBatch), reference
    native.validate(full=True)
    assert native.schema.equals(reference.schema, check_metadata=True)
    assert native.equals(reference)


def _plan_for(header, arrow_schema):
    return decode.decoding_plan(decode.schema_key(header), arrow_schema)


def _compare_file(path, monkeypatch, columns=None, expect_native=True) -> int:
    """Decodes every block of `path` both ways and checks the batches are equal; returns rows."""
    rows = 0
    with open(path, "rb") as f:
        header = read_header(f, path)
        tops = None if columns is None else list(dict.fromkeys(c.split(".")[0] for c in columns))
        arrow_schema = project_arrow_schema(avro_schema_to_arrow(header.schema, tops), columns)
        plan = _plan_for(header, arrow_schema)
        if NATIVE:
            assert (plan.native is not None) == expect_native
        for block in iter_blocks(f, header, path):
            native, reference = _decode_both(block, header, arrow_schema, path, monkeypatch)
            _assert_same(native, reference)
            rows += native.num_rows
    return rows


def _compare(tmp_path, monkeypatch, schema, records, columns=None, expect_native=True, **kwargs) -> None:
    path = _write(tmp_path / "t.avro", schema, records, **kwargs)
    assert _compare_file(path, monkeypatch, columns, expect_native) == len(records)


def rec(name, *fields):
    return {"type": "record", "name": name, "fields": [{"name": n, "type": t} for n, t in fields]}


# --------------------------------------------------------------------------------------------------
# Every file the fastavro-path tests build, decoded both ways


@pytest.fixture
def cross_check(monkeypatch):
    """Makes every `_Plan.decode` call decode both ways and compare; counts native decodes."""
    original = decode.Plan.decode
    calls = {"native": 0, "fastavro-only": 0}

    def checked(self, data, block, path, arrow_schema):
        monkeypatch.setenv(DECODER_ENV, "fastavro")
        try:
            reference = original(self, data, block, path, arrow_schema)
        except AvroFormatError as e:
            reference = e
        monkeypatch.delenv(DECODER_ENV)
        if self.native is None:
            calls["fastavro-only"] += 1
        else:
            calls["native"] += 1
            try:
                native = original(self, data, block, path, arrow_schema)
            except AvroFormatError as e:
                assert isinstance(reference, AvroFormatError), f"native failed alone: {e}"
            else:
                _assert_same(native, reference)
        if isinstance(reference, Exception):
            raise reference
        return reference

    monkeypatch.delenv(DECODER_ENV, raising=False)
    monkeypatch.setattr(decode.Plan, "decode", checked)
    return calls


def _existing_tests():
    allowed = {"tmp_path", "codec", "projection_mode"}
    for name, fn in sorted(vars(avro_tests).items()):
        if name.startswith("test_") and callable(fn):
            params = set(inspect.signature(fn).parameters)
            if params <= allowed:
                yield pytest.param(fn, id=name)


@needs_native
@pytest.mark.parametrize("test", list(_existing_tests()))
def test_fastavro_path_tests_decode_identically(test, tmp_path, cross_check):
    kwargs = {"tmp_path": tmp_path, "codec": "deflate", "projection_mode": "skip-unprojected"}
    params = inspect.signature(test).parameters
    test(**{k: v for k, v in kwargs.items() if k in params})


@needs_native
def test_cross_check_sees_native_decodes(tmp_path, cross_check):
    avro_tests.test_primitives_and_nullability(tmp_path)
    assert cross_check["native"] > 0


# --------------------------------------------------------------------------------------------------
# Types


def test_every_primitive_and_null_positions(tmp_path, monkeypatch):
    schema = rec(
        "P",
        ("n", "null"),
        ("b", "boolean"),
        ("i", "int"),
        ("l", "long"),
        ("f", "float"),
        ("d", "double"),
        ("by", "bytes"),
        ("s", "string"),
        ("on", ["null"]),
        ("ob", ["null", "boolean"]),
        ("oi", ["int", "null"]),
        ("ol", ["null", "long"]),
        ("of", ["float", "null"]),
        ("od", ["null", "double"]),
        ("oby", ["bytes", "null"]),
        ("os", ["null", "string"]),
        ("single", ["string"]),
    )
    rng = random.Random(3)
    records = []
    for i in range(500):
        maybe = (lambda v: None) if i % 3 == 0 else (lambda v: v)
        records.append(
            {
                "n": None,
                "b": i % 2 == 0,
                "i": rng.choice([0, -1, 1, 2**31 - 1, -(2**31), rng.randint(-1000, 1000)]),
                "l": rng.choice([0, 2**63 - 1, -(2**63), rng.randint(-(10**12), 10**12)]),
                "f": rng.choice([0.0, -1.5, float("inf"), 3.25]),
                "d": rng.choice([0.0, -0.0, 1e300, float("-inf"), rng.random()]),
                "by": bytes(rng.randrange(256) for _ in range(i % 7)),
                "s": rng.choice(["", "a", "héllo", "日本語", "🙂" * 3, "x" * 40]),
                "on": None,
                "ob": maybe(i % 4 == 1),
                "oi": maybe(-i),
                "ol": maybe(i * 10**10),
                "of": maybe(i / 4),
                "od": maybe(i / 3),
                "oby": maybe(b"\x00\xff" * (i % 3)),
                "os": maybe(str(i)),
                "single": f"s{i}",
            }
        )
    _compare(tmp_path, monkeypatch, schema, records, sync_interval=2000)


def test_float_nan_bits_are_kept(tmp_path, monkeypatch):
    schema = rec("F", ("f", "float"), ("d", ["null", "double"]))
    records = [{"f": float("nan"), "d": float("nan")}, {"f": 1.0, "d": None}]
    path = _write(tmp_path / "nan.avro", schema, records)
    with open(path, "rb") as f:
        header = read_header(f, path)
        block = next(iter_blocks(f, header, path))
    arrow_schema = avro_schema_to_arrow(header.schema)
    native, reference = _decode_both(block, header, arrow_schema, path, monkeypatch)
    for name in ("f", "d"):
        assert (
            native.column(name).buffers()[1].to_pybytes()[:4]
            == reference.column(name).buffers()[1].to_pybytes()[:4]
        )


def test_nested_records_in_arrays_in_maps(tmp_path, monkeypatch):
    tag = {
        "type": "record",
        "name": "Tag",
        "namespace": "x.y",
        "fields": [{"name": "label", "type": "string"}],
    }
    inner = {
        "type": "record",
        "name": "Inner",
        "fields": [
            {"name": "x", "type": "int"},
            {"name": "tag", "type": tag},
            {"name": "otag", "type": ["x.y.Tag", "null"]},
        ],
    }
    schema = rec(
        "Outer",
        ("m", {"type": "map", "values": {"type": "array", "items": inner}}),
        ("mm", {"type": "map", "values": {"type": "map", "values": ["null", "long"]}}),
        ("a", {"type": "array", "items": {"type": "array", "items": ["string", "null"]}}),
        ("ai", {"type": "array", "items": "Inner"}),
        ("om", ["null", {"type": "map", "values": "x.y.Tag"}]),
        ("oa", [{"type": "array", "items": "double"}, "null"]),
        ("r", ["null", "Inner"]),
    )
    rng = random.Random(5)

    def inner_value(i):
        return {"x": i, "tag": {"label": f"l{i}"}, "otag": None if i % 2 else {"label": "o"}}

    records = []
    for i in range(300):
        records.append(
            {
                "m": {
                    f"k{j}": [inner_value(j + k) for k in range(rng.randint(0, 3))]
                    for j in range(rng.randint(0, 3))
                },
                "mm": {"": {}, "é": {"a": None, "b": i}} if i % 2 else {},
                "a": [[None if k % 2 else str(k) for k in range(j)] for j in range(rng.randint(0, 4))],
                "ai": [inner_value(i)] * (i % 3),
                "om": None if i % 4 == 0 else {"t": {"label": "v"}},
                "oa": None if i % 5 == 0 else [float(k) for k in range(i % 4)],
                "r": None if i % 2 else inner_value(i),
            }
        )
    _compare(tmp_path, monkeypatch, schema, records, sync_interval=4000)


def test_enums_fixed_and_empty_containers(tmp_path, monkeypatch):
    color = {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN", "BLUE_2"]}
    schema = rec(
        "E",
        ("c", color),
        ("oc", ["null", "Color"]),
        ("ac", {"type": "array", "items": "Color"}),
        ("f", {"type": "fixed", "name": "F4", "size": 4}),
        ("of", ["F4", "null"]),
        ("f0", {"type": "fixed", "name": "F0", "size": 0}),
        ("empty", {"type": "record", "name": "Empty", "fields": []}),
        ("ea", {"type": "array", "items": "int"}),
        ("em", {"type": "map", "values": "Empty"}),
    )
    records = [
        {
            "c": ["RED", "GREEN", "BLUE_2"][i % 3],
            "oc": None if i % 2 else "GREEN",
            "ac": ["RED"] * (i % 4),
            "f": bytes([i % 256] * 4),
            "of": None if i % 3 else b"abcd",
            "f0": b"",
            "empty": {},
            "ea": [],
            "em": {} if i % 2 else {"a": {}, "b": {}},
        }
        for i in range(100)
    ]
    _compare(tmp_path, monkeypatch, schema, records)


def test_logical_types(tmp_path, monkeypatch):
    def lt(base, logical):
        return {"type": base, "logicalType": logical}

    schema = rec(
        "L",
        ("date", lt("int", "date")),
        ("tmil", lt("int", "time-millis")),
        ("tmic", lt("long", "time-micros")),
        ("tsms", lt("long", "timestamp-millis")),
        ("tsus", ["null", lt("long", "timestamp-micros")]),
        ("tsns", lt("long", "timestamp-nanos")),
        ("ltms", lt("long", "local-timestamp-millis")),
        ("ltus", lt("long", "local-timestamp-micros")),
        ("ltns", lt("long", "local-timestamp-nanos")),
        ("uuid", lt("string", "uuid")),
        ("unknown", lt("long", "no-such-type")),
        ("adates", {"type": "array", "items": lt("int", "date")}),
    )
    base = datetime.datetime(2021, 5, 6, 7, 8, 9, 123456, tzinfo=UTC)
    records = []
    for i in range(50):
        ts = base + datetime.timedelta(days=i, microseconds=i)
        records.append(
            {
                "date": ts.date(),
                "tmil": datetime.time(1, 2, 3, 4000),
                "tmic": datetime.time(1, 2, 3, i),
                "tsms": ts,
                "tsus": None if i % 2 else ts,
                "tsns": 1_600_000_000_000_000_000 + i,
                "ltms": ts.replace(tzinfo=None),
                "ltus": ts.replace(tzinfo=None),
                "ltns": 1_600_000_000_000_000_000 - i,
                "uuid": str(uuid.UUID(int=i)),
                "unknown": i,
                "adates": [ts.date()] * (i % 3),
            }
        )
    _compare(tmp_path, monkeypatch, schema, records)


def test_unions_widened_and_member_structs(tmp_path, monkeypatch):
    point = rec("Point", ("x", "int"), ("y", "int"))
    schema = rec(
        "U",
        ("il", ["int", "long"]),
        ("nfd", ["null", "float", "double"]),
        ("ls", ["long", "string"]),
        ("nls", ["string", "null", point, "long"]),
        ("am", {"type": "array", "items": ["null", "bytes", "string"]}),
    )
    records = [
        {
            "il": i * 10**12 if i % 2 else i,
            "nfd": None if i % 3 == 0 else float(i) / 2,
            "ls": i if i % 2 else str(i),
            "nls": [None, "s", {"x": i, "y": -i}, i][i % 4],
            "am": [None, b"b", "s"][: i % 4],
        }
        for i in range(60)
    ]
    _compare(tmp_path, monkeypatch, schema, records)


def test_decimals_fall_back_to_fastavro(tmp_path, monkeypatch):
    schema = rec(
        "D",
        ("i", "int"),
        ("d", {"type": "bytes", "logicalType": "decimal", "precision": 10, "scale": 2}),
    )
    records = [{"i": i, "d": decimal.Decimal(i) / 4} for i in range(10)]
    path = _write(tmp_path / "d.avro", schema, records)
    _compare_file(path, monkeypatch, expect_native=False)
    # Projected away, a decimal is only skipped: the native decoder is used.
    _compare_file(path, monkeypatch, columns=["i"], expect_native=True)


def test_casts_fall_back_to_fastavro(tmp_path, monkeypatch):
    schema = rec("C", ("i", "int"))
    path = _write(tmp_path / "c.avro", schema, [{"i": 1}, {"i": 2}])
    with open(path, "rb") as f:
        header = read_header(f, path)
        block = next(iter_blocks(f, header, path))
    wanted = pa.schema([pa.field("i", pa.int64())])
    assert _plan_for(header, wanted).native is None
    assert decode_block(block, header, wanted, path).column("i").to_pylist() == [1, 2]


# --------------------------------------------------------------------------------------------------
# Projections


def _projection_schema():
    tag = rec("Tag", ("label", "string"), ("kind", {"type": "enum", "name": "K", "symbols": ["A", "B"]}))
    node = {
        "type": "record",
        "name": "Node",
        "fields": [{"name": "v", "type": "int"}, {"name": "next", "type": ["null", "Node"]}],
    }
    item_type = {
        "type": "record",
        "name": "Item",
        "fields": [
            {"name": "name", "type": "string"},
            {"name": "tags", "type": {"type": "array", "items": tag}},
            {"name": "value", "type": "double"},
            {"name": "extra", "type": {"type": "map", "values": ["null", "Tag", "long"]}},
            {"name": "fx", "type": {"type": "fixed", "name": "FX", "size": 3}},
        ],
    }
    return rec(
        "Top",
        ("id", "long"),
        ("items", {"type": "array", "items": item_type}),
        ("chain", node),
        ("dec", {"type": "bytes", "logicalType": "decimal", "precision": 5, "scale": 1}),
        ("more", ["null", {"type": "array", "items": "Item"}]),
        ("last", "string"),
    )


def _projection_records(n):
    def item_value(i):
        return {
            "name": f"n{i}",
            "tags": [{"label": f"t{k}", "kind": "AB"[k % 2]} for k in range(i % 3)],
            "value": i / 8,
            "extra": {"a": None, "b": {"label": "x", "kind": "A"}, "c": i},
            "fx": b"abc",
        }

    def chain(depth):
        value = None
        for d in range(depth):
            value = {"v": d, "next": value}
        return value

    return [
        {
            "id": i,
            "items": [item_value(i + k) for k in range(i % 4)],
            "chain": chain(1 + i % 5),
            "dec": decimal.Decimal(i) / 10,
            "more": None if i % 2 else [item_value(i)],
            "last": f"last{i}",
        }
        for i in range(120)
    ]


@pytest.mark.parametrize(
    "columns",
    [
        ["id"],
        ["last", "id"],
        ["items"],
        ["items.name", "last"],
        ["items.tags.label", "items.value"],
        ["items.extra", "id"],
        ["more.fx", "more.tags.kind"],
        ["more", "items.value"],
        ["last"],
    ],
)
def test_projections_skip_left_out_fields(tmp_path, monkeypatch, columns):
    path = _write(tmp_path / "p.avro", _projection_schema(), _projection_records(120), sync_interval=2000)
    assert _compare_file(path, monkeypatch, columns) == 120


@needs_native
def test_movielens_sample_and_projection(monkeypatch):
    path = str(SAMPLE_AVRO)
    assert _compare_file(path, monkeypatch) == 300
    columns = ["genreFeatures.term", "movieId", "movieLatentFactorFeatures.value", "response", "userId"]
    assert _compare_file(path, monkeypatch, columns) == 300


@needs_native
def test_native_path_is_used_for_movielens():
    """The MovieLens schema (full and projected) must take the native path when it is built."""
    with open(SAMPLE_AVRO, "rb") as f:
        header = read_header(f, str(SAMPLE_AVRO))
    full = avro_schema_to_arrow(header.schema)
    assert isinstance(_plan_for(header, full).native, avro_native.NativeDecoder)
    projected = project_arrow_schema(full, ["genreFeatures.term", "userId"])
    assert isinstance(_plan_for(header, projected).native, avro_native.NativeDecoder)


# --------------------------------------------------------------------------------------------------
# Hand-made blocks: arrays and maps in several blocks, negative counts


def _header_for(tmp_path, schema):
    path = _write(tmp_path / "h.avro", schema, [])
    with open(path, "rb") as f:
        return read_header(f, path), path


def _long(n):
    return _zigzag(n)


def _string(s: str) -> bytes:
    data = s.encode()
    return _long(len(data)) + data


def _blocks(items, sizes, negative):
    """Avro array/map blocks of encoded `items`, cut into blocks of `sizes` items."""
    out = b""
    i = 0
    for size in [s for s in sizes if s]:  # a block of 0 items would end the array
        chunk = items[i : i + size]
        i += size
        body = b"".join(chunk)
        out += _long(-len(chunk)) + _long(len(body)) + body if negative else _long(len(chunk)) + body
    assert i == len(items)
    return out + _long(0)


@pytest.mark.parametrize("negative", [False, True])
@pytest.mark.parametrize("columns", [None, ["a"], ["m"], ["last"]])
def test_arrays_and_maps_in_several_blocks(tmp_path, monkeypatch, negative, columns):
    schema = rec(
        "B",
        ("a", {"type": "array", "items": {"type": "array", "items": "int"}}),
        ("m", {"type": "map", "values": ["null", "string"]}),
        ("last", "long"),
    )
    header, path = _header_for(tmp_path, schema)
    rows = []
    expected = []
    for r in range(5):
        inner = [_blocks([_long(v) for v in range(k)], [k // 2, k - k // 2], negative) for k in range(r)]
        outer = _blocks(inner, [1] * len(inner), negative)
        entries = [_string(f"k{k}") + (_long(0) if k % 2 else _long(1) + _string("v")) for k in range(r)]
        cuts = [len(entries)] if r < 2 else [1, len(entries) - 1]
        rows.append(outer + _blocks(entries, cuts if entries else [], negative) + _long(r))
        expected.append(
            {
                "a": [list(range(k)) for k in range(r)],
                "m": [(f"k{k}", None if k % 2 else "v") for k in range(r)],
                "last": r,
            }
        )
    block = RawBlock(offset=123, count=len(rows), data=b"".join(rows))
    arrow_schema = project_arrow_schema(avro_schema_to_arrow(header.schema), columns)
    native, reference = _decode_both(block, header, arrow_schema, path, monkeypatch)
    _assert_same(native, reference)
    names = arrow_schema.names
    assert native.to_pylist() == [{k: e[k] for k in names} for e in expected]


# --------------------------------------------------------------------------------------------------
# Random schemas and records


_FIELD_NAMES = st.sampled_from(["a", "b", "c", "d", "e", "f"])


@st.composite
def _avro_types(draw, depth=0, names=None):
    """(Avro schema JSON, strategy of its values)."""
    names = [0] if names is None else names

    def fresh(prefix):
        names[0] += 1
        return f"{prefix}{names[0]}"

    leaves = [
        ("null", st.none()),
        ("boolean", st.booleans()),
        ("int", st.integers(-(2**31), 2**31 - 1)),
        ("long", st.integers(-(2**63), 2**63 - 1)),
        ("float", st.floats(width=32, allow_nan=False)),
        ("double", st.floats(allow_nan=False)),
        ("bytes", st.binary(max_size=8)),
        ("string", st.text(max_size=6)),
        ({"type": "int", "logicalType": "date"}, st.dates()),
        (
            {"type": "long", "logicalType": "timestamp-micros"},
            st.datetimes(timezones=st.just(UTC), min_value=datetime.datetime(1900, 1, 1)),
        ),
    ]
    kinds = ["leaf", "enum", "fixed"] + (
        ["array", "map", "record", "nullable", "member"] if depth < 3 else []
    )
    kind = draw(st.sampled_from(kinds))
    if kind == "leaf":
        return draw(st.sampled_from(leaves))
    if kind == "enum":
        symbols = draw(st.lists(st.sampled_from(["A", "B", "C", "D_1"]), min_size=1, max_size=4, unique=True))
        return {"type": "enum", "name": fresh("E"), "symbols": symbols}, st.sampled_from(symbols)
    if kind == "fixed":
        size = draw(st.integers(0, 5))
        return {"type": "fixed", "name": fresh("X"), "size": size}, st.binary(min_size=size, max_size=size)
    if kind == "array":
        t, values = draw(_avro_types(depth + 1, names))
        return {"type": "array", "items": t}, st.lists(values, max_size=4)
    if kind == "map":
        t, values = draw(_avro_types(depth + 1, names))
        return {"type": "map", "values": t}, st.dictionaries(st.text(max_size=3), values, max_size=3)
    if kind == "record":
        return draw(_records(depth + 1, names))
    if kind == "nullable":
        t, values = draw(_avro_types(depth + 1, names).filter(lambda tv: tv[0] != "null"))
        branches = ["null", t] if draw(st.booleans()) else [t, "null"]
        return branches, st.none() | values
    # A member union of branches with distinct Python value types.
    pool = [("long", st.integers(-5, 5)), ("string", st.text(max_size=3)), ("bytes", st.binary(max_size=3))]
    chosen = draw(st.lists(st.sampled_from(pool), min_size=2, max_size=3, unique_by=lambda tv: tv[0]))
    if draw(st.booleans()):
        chosen.insert(draw(st.integers(0, len(chosen))), ("null", st.none()))
    return [t for t, _ in chosen], st.one_of([v for _, v in chosen])


@st.composite
def _records(draw, depth=0, names=None):
    names = [0] if names is None else names
    names[0] += 1
    name = f"R{names[0]}"
    field_names = draw(st.lists(_FIELD_NAMES, min_size=1, max_size=4, unique=True))
    fields, values = [], {}
    for fname in field_names:
        t, v = draw(_avro_types(depth + 1, names))
        fields.append({"name": fname, "type": t})
        values[fname] = v
    return {"type": "record", "name": name, "fields": fields}, st.fixed_dictionaries(values)


@needs_native
def test_null_fields_beside_a_date_in_an_array_of_records(tmp_path, monkeypatch):
    """Found by the fuzz test below: the reference path's view of the dates lost the length of
    the null-typed fields beside them (Arrow's view inside a list); both paths now agree."""
    item = rec("R2", ("a", "null"), ("b", "null"), ("c", {"type": "int", "logicalType": "date"}))
    schema = rec("R1", ("a", {"type": "array", "items": item}))
    days = [datetime.date(2020, 1, 1), datetime.date(2020, 1, 2)]
    path = _write(tmp_path / "x.avro", schema, [{"a": [{"a": None, "b": None, "c": d} for d in days]}])
    assert _compare_file(path, monkeypatch) == 1
    monkeypatch.setenv(DECODER_ENV, "fastavro")
    with open(path, "rb") as f:
        (batch,) = read_avro_batches(f, path)
    batch.validate(full=True)
    assert batch.column("a").to_pylist() == [[{"a": None, "b": None, "c": d} for d in days]]


def _random_file(data):
    """(the bytes of a random Avro file of a random schema, its header, a random projection)."""
    schema, values = data.draw(_records())
    records = data.draw(st.lists(values, min_size=1, max_size=8))
    out = io.BytesIO()
    fastavro.writer(out, fastavro.parse_schema(schema), records, sync_interval=200)
    raw = out.getvalue()
    header = read_header(io.BytesIO(raw), "mem.avro")
    full = avro_schema_to_arrow(header.schema)
    names = full.names
    columns = data.draw(st.none() | st.lists(st.sampled_from(names), min_size=1, unique=True))
    arrow_schema = project_arrow_schema(full, columns)
    assert _plan_for(header, arrow_schema).native is not None
    return raw, header, arrow_schema


@needs_native
@fuzz_settings(150)
@given(data=st.data())
def test_random_schemas_decode_identically(data):
    raw, header, arrow_schema = _random_file(data)
    with pytest.MonkeyPatch.context() as mp:
        for block in iter_blocks(io.BytesIO(raw), header, "mem.avro"):
            native, reference = _decode_both(block, header, arrow_schema, "mem.avro", mp)
            _assert_same(native, reference)


@needs_native
@fuzz_settings(150)
@given(data=st.data())
def test_corrupt_blocks_of_random_schemas_never_crash(data):
    """Bytes overwritten or the block cut short: an AvroFormatError naming the block, or a
    valid batch, equal to the reference path's whenever that decodes the block too."""
    raw, header, arrow_schema = _random_file(data)
    block = next(iter_blocks(io.BytesIO(raw), header, "mem.avro"))
    corrupt = bytearray(block.data)
    if corrupt and data.draw(st.booleans(), label="cut short"):
        corrupt = corrupt[: data.draw(st.integers(0, len(corrupt) - 1), label="length")]
    elif corrupt:
        for _ in range(data.draw(st.integers(1, 4), label="bytes overwritten")):
            at = data.draw(st.integers(0, len(corrupt) - 1), label="at")
            corrupt[at] = data.draw(st.integers(0, 255), label="byte")
    bad = RawBlock(block.offset, block.count, bytes(corrupt))
    with pytest.MonkeyPatch.context() as mp:
        mp.delenv(DECODER_ENV, raising=False)
        try:
            native = decode_block(bad, header, arrow_schema, "mem.avro")
        except AvroFormatError as e:
            assert e.offset == block.offset
            assert "mem.avro" in str(e)
            return
        native.validate(full=True)
        assert native.num_rows == block.count
        if _values_in(native) > 100_000:
            # A corrupt count of items that take no bytes (nulls, records of nulls): the
            # reference path would make a Python object of each, up to 2**31 of them.
            return
        mp.setenv(DECODER_ENV, "fastavro")
        try:
            reference = decode_block(bad, header, arrow_schema, "mem.avro")
        except AvroFormatError:
            return
    assert native.schema.equals(reference.schema)
    assert _as_values(native) == _as_values(reference)


def _values_in(data: pa.RecordBatch | pa.Array) -> int:
    """How many values a batch holds, those nested in lists, records and maps included."""
    if isinstance(data, pa.RecordBatch):
        return sum(_values_in(column) for column in data.columns)
    t = data.type
    if pa.types.is_map(t):
        return len(data) + _values_in(data.keys) + _values_in(data.items)
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return len(data) + _values_in(data.values)
    if pa.types.is_struct(t):
        return len(data) + sum(_values_in(data.field(i)) for i in range(t.num_fields))
    return len(data)


def _as_values(batch: pa.RecordBatch) -> list:
    """The batch's columns as Python values, dates and times as their integers (corrupt data
    may hold any, beyond Python's datetime range) and every float NaN as the text "NaN".
    (Walked by hand: Arrow's casts of nested types holding null-typed or 0-byte fields can
    give invalid arrays.)"""
    return [_nan_as_text(_values(column)) for column in batch.columns]


def _values(array: pa.Array) -> list:
    t = array.type
    valid = array.is_valid().to_pylist()
    if pa.types.is_temporal(t):
        return array.view(pa.int32() if t.bit_width == 32 else pa.int64()).to_pylist()
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_map(t):
        offsets = array.offsets.to_pylist()
        if pa.types.is_map(t):  # a key written twice (corrupt data): the last value, as
            pairs = list(zip(_values(array.keys), _values(array.items)))  # a Python dict has it
            return [
                list(dict(pairs[offsets[i] : offsets[i + 1]]).items()) if ok else None
                for i, ok in enumerate(valid)
            ]
        items = _values(array.values)
        return [items[offsets[i] : offsets[i + 1]] if ok else None for i, ok in enumerate(valid)]
    if pa.types.is_struct(t):
        fields = [_values(array.field(i)) for i in range(t.num_fields)]
        return (
            [dict(zip(t.names, row)) if ok else None for row, ok in zip(zip(*fields), valid)]
            if fields
            else [{} if ok else None for ok in valid]
        )
    return array.to_pylist()


def _nan_as_text(value):
    """``value`` with every float NaN (which equals nothing, itself included) as the text "NaN"."""
    if isinstance(value, float) and value != value:
        return "NaN"
    if isinstance(value, list):
        return [_nan_as_text(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_nan_as_text(v) for v in value)
    if isinstance(value, dict):
        return {k: _nan_as_text(v) for k, v in value.items()}
    return value


# --------------------------------------------------------------------------------------------------
# Corrupt data: always a ValueError / AvroFormatError, never a crash


def _corrupt_setup(tmp_path, schema, records, columns=None):
    path = _write(tmp_path / "x.avro", schema, records)
    with open(path, "rb") as f:
        header = read_header(f, path)
        block = next(iter_blocks(f, header, path))
    arrow_schema = avro_schema_to_arrow(header.schema, columns)
    assert _plan_for(header, arrow_schema).native is not None or not NATIVE
    return header, block, arrow_schema, path


def _native_error(block, header, arrow_schema, path, monkeypatch, match=None):
    monkeypatch.delenv(DECODER_ENV, raising=False)
    with pytest.raises(AvroFormatError, match=match) as err:
        decode_block(block, header, arrow_schema, path)
    assert err.value.offset == block.offset
    assert path in str(err.value)
    return err.value


@needs_native
def test_truncated_blocks_at_every_length(tmp_path, monkeypatch):
    schema, records = avro_tests._movielens_like(12)
    header, block, arrow_schema, path = _corrupt_setup(tmp_path, schema, records)
    for cut in range(len(block.data)):
        short = RawBlock(block.offset, block.count, block.data[:cut])
        _native_error(short, header, arrow_schema, path, monkeypatch, "cannot decode record")
    extra = RawBlock(block.offset, block.count - 1, block.data)
    _native_error(extra, header, arrow_schema, path, monkeypatch, "left over")


@needs_native
@pytest.mark.parametrize(
    ("schema", "payload", "message"),
    [
        (rec("S", ("s", "string")), _long(1 << 40) + b"abc", "truncated data: string of"),
        (rec("S", ("s", "string")), _long(-5) + b"abc", "negative string length"),
        (rec("S", ("s", "bytes")), _long(2**62), "truncated"),
        (rec("S", ("s", "string")), _long(2) + b"\xc3\x28", "not valid UTF-8"),
        (rec("S", ("s", "string")), _long(3) + b"\xed\xa0\x80", "not valid UTF-8"),
        (rec("S", ("s", "string")), _long(2) + b"\xc0\x80", "not valid UTF-8"),
        (rec("S", ("i", "int")), _long(2**40), "out of the 32-bit range"),
        (rec("S", ("i", "long")), b"\xff" * 11, "longer than 10 bytes"),
        (rec("S", ("i", "long")), b"\xff" * 3, "truncated"),
        (rec("S", ("d", "double")), b"\x00" * 5, "truncated"),
        (rec("S", ("u", ["null", "int"])), _long(2), "union branch index 2 out of range"),
        (rec("S", ("u", ["null", "int"])), _long(-1), "union branch index -1"),
        (rec("S", ("e", {"type": "enum", "name": "E", "symbols": ["A"]})), _long(1), "enum index 1"),
        (rec("S", ("f", {"type": "fixed", "name": "F", "size": 8})), b"abc", "fixed runs past"),
        (rec("S", ("a", {"type": "array", "items": "long"})), _long(2**62) + b"\x00", "more items announced"),
        (rec("S", ("a", {"type": "array", "items": "long"})), _long(-3) + _long(-1), "negative"),
        (rec("S", ("a", {"type": "array", "items": "long"})), _long(-(2**63)), "invalid block item count"),
        (rec("S", ("a", {"type": "array", "items": "null"})), _long(2**31), "more than 2\\*\\*31-1 items"),
        (rec("S", ("m", {"type": "map", "values": "int"})), _long(1) + _long(-2), "negative map key length"),
    ],
)
def test_corrupt_values_raise(tmp_path, monkeypatch, schema, payload, message):
    header, path = _header_for(tmp_path, schema)
    arrow_schema = avro_schema_to_arrow(header.schema)
    block = RawBlock(offset=77, count=1, data=payload)
    err = _native_error(block, header, arrow_schema, path, monkeypatch, message)
    assert "cannot decode record 0 of 1" in str(err)


@needs_native
def test_corrupt_skipped_values_raise(tmp_path, monkeypatch):
    schema = rec("S", ("skip", {"type": "array", "items": "string"}), ("keep", "int"))
    header, path = _header_for(tmp_path, schema)
    arrow_schema = project_arrow_schema(avro_schema_to_arrow(header.schema), ["keep"])
    for payload in (_long(-1) + _long(1 << 30), _long(1) + _long(100) + b"x", _long(-1) + _long(-1)):
        block = RawBlock(offset=5, count=1, data=payload)
        _native_error(block, header, arrow_schema, path, monkeypatch)


@needs_native
def test_deep_recursive_skips_fall_back_instead_of_overflowing(tmp_path, monkeypatch):
    node = {
        "type": "record",
        "name": "Node",
        "fields": [{"name": "next", "type": ["null", "Node"]}],
    }
    schema = rec("T", ("chain", node), ("id", "int"))
    header, path = _header_for(tmp_path, schema)
    arrow_schema = avro_schema_to_arrow(header.schema, ["id"])
    decoder = _plan_for(header, arrow_schema).native
    assert decoder is not None
    deep = _long(1) * 2_000 + _long(0) + _long(7)
    with pytest.raises(avro_native.TooDeep):
        decoder.decode(deep, 1)
    # decode_block then uses fastavro, which reads the valid deep value. (Not tried here:
    # fastavro itself overflows the C stack somewhere between 2,000 and 10,000 levels.)
    assert decode_block(RawBlock(1, 1, deep), header, arrow_schema, path).to_pylist() == [{"id": 7}]
    shallow = _long(1) * 50 + _long(0) + _long(7)
    assert decoder.decode(shallow, 1)[0][0].to_pylist() == [7]


@needs_native
def test_items_that_take_no_bytes_are_appended_at_once(tmp_path, monkeypatch):
    """An array of nulls or of records of nulls and 0-byte fixed values: its count alone says
    how many items it holds. The native decoder appends them all alike after the first (a
    corrupt count of 2**31-2 of them is read in a moment, not item by item), the same values
    as fastavro gives, item by item."""
    empty = rec("Empty", ("n", "null"), ("z", {"type": "fixed", "name": "Z", "size": 0}))
    holder = rec("Holder", ("e", empty), ("m", "null"))
    schema = rec(
        "S", ("nulls", {"type": "array", "items": "null"}), ("records", {"type": "array", "items": holder})
    )
    header, path = _header_for(tmp_path, schema)
    arrow_schema = avro_schema_to_arrow(header.schema)
    # Two rows: 100,000 nulls and 3 records in blocks of 1 and 99,999 (negative: with a size),
    # then 0 nulls and 70,000 records.
    rows = (
        _long(1) + _long(-99_999) + _long(0) + _long(0) + _long(3) + _long(0),
        _long(0) + _long(70_000) + _long(0),
    )
    block = RawBlock(offset=9, count=2, data=b"".join(rows))
    native, reference = _decode_both(block, header, arrow_schema, path, monkeypatch)
    _assert_same(native, reference)
    assert [len(v) for v in native.column("nulls").to_pylist()] == [100_000, 0]
    records = native.column("records")
    assert records.value_lengths().to_pylist() == [3, 70_000]
    assert records.values.to_pylist()[-1] == {"e": {"n": None, "z": b""}, "m": None}
    monkeypatch.delenv(DECODER_ENV, raising=False)
    huge = decode_block(
        RawBlock(offset=9, count=1, data=_long(2**31 - 2) + _long(0) + _long(0)), header, arrow_schema, path
    )
    huge.validate(full=True)
    assert huge.column("nulls").value_lengths().to_pylist() == [2**31 - 2]
    assert huge.column("records").value_lengths().to_pylist() == [0]


@needs_native
def test_huge_record_counts_raise(tmp_path, monkeypatch):
    schema = rec("S", ("i", "int"))
    header, path = _header_for(tmp_path, schema)
    arrow_schema = avro_schema_to_arrow(header.schema)
    for count in (2**40, 1000):
        block = RawBlock(offset=9, count=count, data=_long(1) * 10)
        _native_error(block, header, arrow_schema, path, monkeypatch, "cannot decode record")


@needs_native
def test_random_corruption_never_crashes(tmp_path, monkeypatch):
    # Left out: a recursive type and a decimal (which the native path does not decode).
    columns = ["items", "more", "last", "id"]
    header, block, arrow_schema, path = _corrupt_setup(
        tmp_path, _projection_schema(), _projection_records(40), columns
    )
    rng = random.Random(11)
    data = bytearray(block.data)
    outcomes = {"ok": 0, "error": 0}
    for _ in range(600):
        corrupt = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            corrupt[rng.randrange(len(corrupt))] = rng.randrange(256)
        bad = RawBlock(block.offset, block.count, bytes(corrupt))
        native, reference = _decode_both(bad, header, arrow_schema, path, monkeypatch)
        if isinstance(native, pa.RecordBatch):
            native.validate(full=True)
            outcomes["ok"] += 1
            if isinstance(reference, pa.RecordBatch):
                assert native.equals(reference)
        else:
            outcomes["error"] += 1
    assert outcomes["error"] > 0


# --------------------------------------------------------------------------------------------------
# The extension itself


@needs_native
def test_invalid_programs_are_rejected():
    module = avro_native._extension()
    with pytest.raises(ValueError, match="invalid Avro decoding program"):
        module.compile(b"", b"")
    with pytest.raises(ValueError, match="invalid Avro decoding program"):
        module.compile(struct.pack("<4q", 1, 1, 1, 5), b"")
    with pytest.raises(TypeError):
        module.decode(object(), b"", 0)


@needs_native
def test_no_reference_leaks(tmp_path, monkeypatch):
    schema, records = avro_tests._movielens_like(50)
    header, block, arrow_schema, _ = _corrupt_setup(tmp_path, schema, records)
    plan = _plan_for(header, arrow_schema)
    decoder = plan.native
    data = bytes(block.data)
    program = decoder._program
    before = (sys.getrefcount(data), sys.getrefcount(program))
    for _ in range(50):
        decoder.decode(data, block.count)
        with pytest.raises(ValueError):
            decoder.decode(data[:-3], block.count)
    assert (sys.getrefcount(data), sys.getrefcount(program)) == before


def test_fastavro_is_forced_by_the_environment(tmp_path, monkeypatch):
    schema, records = avro_tests._movielens_like(20)
    header, block, arrow_schema, path = _corrupt_setup(tmp_path, schema, records)
    plan = _plan_for(header, arrow_schema)
    used = []
    if plan.native is not None:
        monkeypatch.setattr(plan, "native", _Spy(plan.native, used))
    monkeypatch.setenv(DECODER_ENV, "fastavro")
    decode_block(block, header, arrow_schema, path)
    assert used == []
    monkeypatch.delenv(DECODER_ENV)
    decode_block(block, header, arrow_schema, path)
    assert used == ([1] if NATIVE else [])


class _Spy:
    def __init__(self, decoder, used):
        self._decoder = decoder
        self._used = used

    def decode(self, data, count):
        self._used.append(1)
        return self._decoder.decode(data, count)

    def error_details(self, error):
        return self._decoder.error_details(error)


@needs_native
def test_blocks_decoded_together_equal_blocks_decoded_one_by_one(tmp_path, monkeypatch):
    """`decode_blocks` gives one batch-sized call to the decoder: the same rows as the blocks
    decoded one at a time, with or without a projection."""
    from beam_tensorize.kernels.avro.decode import decode_blocks

    monkeypatch.delenv(DECODER_ENV, raising=False)
    schema, records = avro_tests._movielens_like(200)
    path = _write(tmp_path / "m.avro", schema, records, codec="deflate", sync_interval=2000)
    header, blocks = avro_tests._block_offsets(path)
    assert len(blocks) > 5
    for columns in (None, ["genreFeatures.term", "userId"]):
        arrow_schema = avro_schema_to_arrow(header.schema)
        if columns is not None:
            arrow_schema = project_arrow_schema(arrow_schema, columns)
        together = decode_blocks(blocks, header, arrow_schema, path)
        one_by_one = pa.concat_batches([decode_block(b, header, arrow_schema, path) for b in blocks])
        assert together.equals(one_by_one)
        assert together.num_rows == 200


@needs_native
@pytest.mark.parametrize("fault", ["junk after the records", "records cut short", "count too high"])
def test_a_bad_block_among_blocks_decoded_together_is_named(tmp_path, monkeypatch, fault):
    """A block whose records do not end where it ends fails the joint call; the blocks are then
    decoded one by one, so the error names the bad block (never a silent shift into the next)."""
    from beam_tensorize.kernels.avro.decode import decode_blocks

    monkeypatch.delenv(DECODER_ENV, raising=False)
    schema, records = avro_tests._movielens_like(60)
    path = _write(tmp_path / "m.avro", schema, records, sync_interval=1500)
    header, blocks = avro_tests._block_offsets(path)
    bad = blocks[2]
    if fault == "junk after the records":
        # One record fewer than the block holds: its last record's bytes are left over, and
        # would be read as the first record of the next block if blocks were simply joined.
        blocks[2] = RawBlock(bad.offset, bad.count - 1, bad.data)
        match = "left over"
    elif fault == "records cut short":
        blocks[2] = RawBlock(bad.offset, bad.count, bad.data[:-3])
        match = "cannot decode record|left over"
    else:
        blocks[2] = RawBlock(bad.offset, bad.count + 1, bad.data)
        match = "cannot decode record"
    with pytest.raises(AvroFormatError, match=match) as err:
        decode_blocks(blocks, header, avro_schema_to_arrow(header.schema), path)
    assert err.value.offset == bad.offset
