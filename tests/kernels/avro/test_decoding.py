"""Tests for the Avro -> Arrow kernel: header, block splitting, decoding, type mapping, errors.

Every Avro file here is written by fastavro into ``tmp_path`` (or built byte by byte for
malformed headers); the only bundled file is the MovieLens sample of Avro2TF.
"""

from __future__ import annotations

import datetime
import decimal
import io
import itertools
import json
import pickle
import random
import uuid
from pathlib import Path

import fastavro
import pyarrow as pa
import pytest

from beam_tensorize.kernels.avro import (
    AvroFormatError,
    AvroHeader,
    RawBlock,
    avro_schema_to_arrow,
    container,
    decode,
    decode_block,
    iter_blocks,
    project_arrow_schema,
    read_avro_batches,
    read_header,
)
from beam_tensorize.sample import SAMPLE_AVRO

MOVIELENS = Path(SAMPLE_AVRO)  # the Avro2TF MovieLens test input, bundled with the package
UTC = datetime.timezone.utc


def _write(path: Path, schema, records, **kwargs) -> str:
    with open(path, "wb") as out:
        fastavro.writer(out, fastavro.parse_schema(schema), records, **kwargs)
    return str(path)


def _read_all(path: str, columns=None) -> tuple[pa.Schema, list[dict]]:
    with open(path, "rb") as f:
        batches = list(read_avro_batches(f, path, columns=columns))
    assert batches, "expected at least one batch"
    schemas = {b.schema for b in batches}
    assert len(schemas) == 1
    return batches[0].schema, [row for b in batches for row in b.to_pylist()]


def _zigzag(n: int) -> bytes:
    n = (n << 1) ^ (n >> 63)
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _header_bytes(meta: dict[str, bytes], sync: bytes) -> bytes:
    out = bytearray(b"Obj\x01")
    out += _zigzag(len(meta))
    for k, v in meta.items():
        out += _zigzag(len(k.encode())) + k.encode() + _zigzag(len(v)) + v
    out += _zigzag(0) + sync
    return bytes(out)


def _block_offsets(path: str) -> tuple[AvroHeader, list[RawBlock]]:
    with open(path, "rb") as f:
        header = read_header(f, path)
        return header, list(iter_blocks(f, header, path))


def nn(name, type_, metadata=None):
    """A non-nullable Arrow field."""
    return pa.field(name, type_, nullable=False, metadata=metadata)


def item(type_, nullable=False):
    return pa.field("item", type_, nullable=nullable)


NTV = pa.struct([nn("name", pa.string()), nn("term", pa.string()), nn("value", pa.float64())])


# --------------------------------------------------------------------------------------------------
# Types


def test_primitives_and_nullability(tmp_path):
    schema = {
        "type": "record",
        "name": "P",
        "fields": [
            {"name": "n", "type": "null"},
            {"name": "b", "type": "boolean"},
            {"name": "i", "type": "int"},
            {"name": "l", "type": "long"},
            {"name": "f", "type": "float"},
            {"name": "d", "type": "double"},
            {"name": "by", "type": "bytes"},
            {"name": "s", "type": "string", "doc": "a string"},
            {"name": "oi", "type": ["null", "int"]},
            {"name": "os", "type": ["string", "null"]},
        ],
    }
    records = [
        {
            "n": None,
            "b": True,
            "i": -(2**31),
            "l": 2**62,
            "f": 1.5,
            "d": -2.25,
            "by": b"\x00\xff",
            "s": "héllo",
            "oi": None,
            "os": "x",
        },
        {
            "n": None,
            "b": False,
            "i": 7,
            "l": -1,
            "f": 0.0,
            "d": 1e300,
            "by": b"",
            "s": "",
            "oi": 3,
            "os": None,
        },
    ]
    path = _write(tmp_path / "p.avro", schema, records)
    arrow_schema, rows = _read_all(path)
    assert arrow_schema == pa.schema(
        [
            pa.field("n", pa.null()),
            nn("b", pa.bool_()),
            nn("i", pa.int32()),
            nn("l", pa.int64()),
            nn("f", pa.float32()),
            nn("d", pa.float64()),
            nn("by", pa.binary()),
            nn("s", pa.string()),
            pa.field("oi", pa.int32()),
            pa.field("os", pa.string()),
        ]
    )
    assert arrow_schema.field("s").metadata == {b"doc": b"a string"}
    assert rows == records


def test_nested_record_in_array_in_map_with_named_type_reuse_and_namespaces(tmp_path):
    schema = {
        "type": "record",
        "name": "Outer",
        "namespace": "com.example",
        "fields": [
            {
                "name": "m",
                "type": {
                    "type": "map",
                    "values": {
                        "type": "array",
                        "items": {
                            "type": "record",
                            "name": "Point",  # -> com.example.Point
                            "fields": [
                                {"name": "x", "type": "int"},
                                {
                                    "name": "tag",
                                    "type": {
                                        "type": "record",
                                        "name": "Tag",
                                        "namespace": "org.other",  # -> org.other.Tag
                                        "fields": [
                                            {"name": "label", "type": "string"},
                                            # Inside org.other.Tag, a short name resolves in org.other
                                            # first, then in the null namespace.
                                            {
                                                "name": "kind",
                                                "type": {
                                                    "type": "enum",
                                                    "name": "Kind",
                                                    "symbols": ["A", "B"],
                                                },
                                            },
                                        ],
                                    },
                                },
                            ],
                        },
                    },
                },
            },
            {"name": "p", "type": "Point"},  # short name in namespace com.example
            {"name": "q", "type": ["null", "com.example.Point"]},  # full name
            {"name": "t", "type": "org.other.Tag"},
            {"name": "k", "type": {"type": "array", "items": "org.other.Kind"}},
            {
                "name": "dotted",
                "type": {
                    "type": "record",
                    "name": "x.y.Dotted",  # a dotted name is a full name; namespace ignored
                    "namespace": "ignored",
                    "fields": [{"name": "again", "type": ["null", "x.y.Leaf"], "default": None}],
                },
            },
        ],
    }
    # x.y.Leaf must be defined before use: put it first in a separate pre-declared field.
    schema["fields"].insert(
        0,
        {
            "name": "leaf",
            "type": {
                "type": "record",
                "name": "Leaf",
                "namespace": "x.y",
                "fields": [{"name": "v", "type": "long"}],
            },
        },
    )
    point = {"x": 1, "tag": {"label": "a", "kind": "B"}}
    records = [
        {
            "leaf": {"v": 9},
            "m": {"one": [point, {"x": 2, "tag": {"label": "b", "kind": "A"}}], "none": []},
            "p": point,
            "q": None,
            "t": {"label": "t", "kind": "A"},
            "k": ["A", "B"],
            "dotted": {"again": {"v": 3}},
        },
        {
            "leaf": {"v": -9},
            "m": {},
            "p": point,
            "q": point,
            "t": {"label": "u", "kind": "B"},
            "k": [],
            "dotted": {"again": None},
        },
    ]
    path = _write(tmp_path / "n.avro", schema, records)
    arrow_schema, rows = _read_all(path)
    tag = pa.struct([nn("label", pa.string()), nn("kind", pa.string())])
    point_t = pa.struct([nn("x", pa.int32()), nn("tag", tag)])
    leaf = pa.struct([nn("v", pa.int64())])
    assert arrow_schema == pa.schema(
        [
            nn("leaf", leaf),
            nn("m", pa.map_(pa.string(), nn("value", pa.list_(item(point_t))))),
            nn("p", point_t),
            pa.field("q", point_t),
            nn("t", tag),
            nn("k", pa.list_(item(pa.string()))),
            nn("dotted", pa.struct([pa.field("again", leaf)])),
        ]
    )
    expected = []
    for r in records:
        e = dict(r)
        e["m"] = list(r["m"].items())  # Arrow maps come back as (key, value) lists
        expected.append(e)
    assert rows == expected


def test_nullable_items_and_values(tmp_path):
    schema = {
        "type": "record",
        "name": "N",
        "fields": [
            {"name": "a", "type": {"type": "array", "items": ["null", "string"]}},
            {"name": "m", "type": {"type": "map", "values": ["long", "null"]}},
            {
                "name": "r",
                "type": ["null", {"type": "record", "name": "Rec", "fields": [{"name": "z", "type": "int"}]}],
            },
            {"name": "r2", "type": ["Rec", "null"]},
            {"name": "only_null", "type": ["null"]},
        ],
    }
    records = [
        {"a": ["x", None], "m": {"k": None, "j": 4}, "r": None, "r2": {"z": 1}, "only_null": None},
        {"a": [], "m": {}, "r": {"z": 2}, "r2": None, "only_null": None},
    ]
    path = _write(tmp_path / "nn.avro", schema, records)
    arrow_schema, rows = _read_all(path)
    rec = pa.struct([nn("z", pa.int32())])
    assert arrow_schema == pa.schema(
        [
            nn("a", pa.list_(item(pa.string(), nullable=True))),
            nn("m", pa.map_(pa.string(), pa.field("value", pa.int64()))),
            pa.field("r", rec),
            pa.field("r2", rec),
            pa.field("only_null", pa.null()),
        ]
    )
    assert rows[0]["m"] == [("k", None), ("j", 4)]
    assert [r["a"] for r in rows] == [["x", None], []]
    assert [(r["r"], r["r2"]) for r in rows] == [(None, {"z": 1}), ({"z": 2}, None)]


def test_multi_type_unions_become_member_structs(tmp_path):
    rec = {"type": "record", "name": "ns.Rec", "fields": [{"name": "a", "type": "string"}]}
    schema = {
        "type": "record",
        "name": "U",
        "fields": [
            {"name": "u3", "type": ["int", "string", rec]},
            {"name": "u3n", "type": ["null", "int", "string", "ns.Rec"]},
            {"name": "il", "type": ["int", "long"]},
            {"name": "lin", "type": ["long", "null", "int"]},
            {"name": "fd", "type": ["float", "double"]},
            {"name": "fdn", "type": ["null", "double", "float"]},
            {"name": "ils", "type": ["int", "long", "string"]},
            {"name": "bi", "type": ["boolean", "int"]},
            {"name": "se", "type": ["string", {"type": "enum", "name": "ns.E", "symbols": ["A", "B"]}]},
            {"name": "bf", "type": ["bytes", {"type": "fixed", "name": "ns.F", "size": 2}]},
            {"name": "mr", "type": [{"type": "map", "values": "int"}, "ns.Rec"]},
            {
                "name": "arr",
                "type": {
                    "type": "array",
                    "items": ["null", {"type": "array", "items": "int"}, {"type": "map", "values": "string"}],
                },
            },
        ],
    }
    records = [
        {
            "u3": 5,
            "u3n": None,
            "il": 1,
            "lin": 2**40,
            "fd": 0.5,
            "fdn": None,
            "ils": 2**40,
            "bi": True,
            "se": "A",
            "bf": b"xyz",
            "mr": {"k": 1},
            "arr": [None, [1, 2], {"a": "b"}],
        },
        {
            "u3": "five",
            "u3n": 6,
            "il": 2**40,
            "lin": None,
            "fd": 1e300,
            "fdn": 2.5,
            "ils": 3,
            "bi": 7,
            "se": ("ns.E", "A"),
            "bf": ("ns.F", b"xy"),
            "mr": ("ns.Rec", {"a": "k"}),
            "arr": [],
        },
        {
            "u3": ("ns.Rec", {"a": "r"}),
            "u3n": ("ns.Rec", {"a": "s"}),
            "il": -3,
            "lin": 7,
            "fd": -1.0,
            "fdn": 3.5,
            "ils": "s",
            "bi": False,
            "se": ("ns.E", "B"),
            "bf": b"xy",
            "mr": {},
            "arr": [[]],
        },
    ]
    path = _write(tmp_path / "u.avro", schema, records)
    arrow_schema, rows = _read_all(path)
    rec_t = pa.struct([nn("a", pa.string())])

    def members(*types, nullable=False, name):
        return pa.field(name, pa.struct([pa.field(f"member{i}", t) for i, t in enumerate(types)]), nullable)

    assert arrow_schema == pa.schema(
        [
            members(pa.int32(), pa.string(), rec_t, name="u3"),
            members(pa.int32(), pa.string(), rec_t, nullable=True, name="u3n"),
            nn("il", pa.int64()),
            pa.field("lin", pa.int64()),
            nn("fd", pa.float64()),
            pa.field("fdn", pa.float64()),
            members(pa.int32(), pa.int64(), pa.string(), name="ils"),
            members(pa.bool_(), pa.int32(), name="bi"),
            members(pa.string(), pa.string(), name="se"),
            members(pa.binary(), pa.binary(2), name="bf"),
            members(pa.map_(pa.string(), nn("value", pa.int32())), rec_t, name="mr"),
            nn(
                "arr",
                pa.list_(
                    pa.field(
                        "item",
                        pa.struct(
                            [
                                pa.field("member0", pa.list_(item(pa.int32()))),
                                pa.field("member1", pa.map_(pa.string(), nn("value", pa.string()))),
                            ]
                        ),
                    )
                ),
            ),
        ]
    )

    def m(n, index, value):
        out = dict.fromkeys(f"member{i}" for i in range(n))
        out[f"member{index}"] = value
        return out

    assert [r["u3"] for r in rows] == [m(3, 0, 5), m(3, 1, "five"), m(3, 2, {"a": "r"})]
    assert [r["u3n"] for r in rows] == [None, m(3, 0, 6), m(3, 2, {"a": "s"})]
    assert [r["il"] for r in rows] == [1, 2**40, -3]
    assert [r["lin"] for r in rows] == [2**40, None, 7]
    assert [r["fd"] for r in rows] == [0.5, 1e300, -1.0]
    assert [r["fdn"] for r in rows] == [None, 2.5, 3.5]
    assert [r["ils"] for r in rows] == [m(3, 1, 2**40), m(3, 0, 3), m(3, 2, "s")]
    assert [r["bi"] for r in rows] == [m(2, 0, True), m(2, 1, 7), m(2, 0, False)]
    assert [r["se"] for r in rows] == [m(2, 0, "A"), m(2, 1, "A"), m(2, 1, "B")]
    assert [r["bf"] for r in rows] == [m(2, 0, b"xyz"), m(2, 1, b"xy"), m(2, 0, b"xy")]
    assert [r["mr"] for r in rows] == [m(2, 0, [("k", 1)]), m(2, 1, {"a": "k"}), m(2, 0, [])]
    assert [r["arr"] for r in rows] == [[None, m(2, 0, [1, 2]), m(2, 1, [("a", "b")])], [], [m(2, 0, [])]]


def test_member_union_inside_reused_named_type(tmp_path):
    inner = {
        "type": "record",
        "name": "Cell",
        "fields": [{"name": "v", "type": ["null", "int", "string"]}],
    }
    schema = {
        "type": "record",
        "name": "T",
        "fields": [
            {"name": "a", "type": {"type": "array", "items": inner}},
            {"name": "b", "type": {"type": "map", "values": "Cell"}},
            {"name": "c", "type": ["null", "Cell"]},
        ],
    }
    records = [{"a": [{"v": 1}, {"v": "x"}, {"v": None}], "b": {"k": {"v": "y"}}, "c": {"v": 2}}]
    path = _write(tmp_path / "r.avro", schema, records)
    _, rows = _read_all(path)
    assert rows == [
        {
            "a": [
                {"v": {"member0": 1, "member1": None}},
                {"v": {"member0": None, "member1": "x"}},
                {"v": None},
            ],
            "b": [("k", {"v": {"member0": None, "member1": "y"}})],
            "c": {"v": {"member0": 2, "member1": None}},
        }
    ]


def test_enum_and_fixed(tmp_path):
    schema = {
        "type": "record",
        "name": "EF",
        "fields": [
            {"name": "e", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}},
            {"name": "oe", "type": ["null", "Color"]},
            {"name": "fx", "type": {"type": "fixed", "name": "Four", "size": 4}},
            {"name": "ofx", "type": ["Four", "null"]},
        ],
    }
    records = [
        {"e": "GREEN", "oe": None, "fx": b"abcd", "ofx": b"\x00\x01\x02\x03"},
        {"e": "RED", "oe": "RED", "fx": b"wxyz", "ofx": None},
    ]
    path = _write(tmp_path / "ef.avro", schema, records)
    arrow_schema, rows = _read_all(path)
    assert arrow_schema == pa.schema(
        [
            nn("e", pa.string()),
            pa.field("oe", pa.string()),
            nn("fx", pa.binary(4)),
            pa.field("ofx", pa.binary(4)),
        ]
    )
    assert rows == records


def test_logical_types(tmp_path):
    def lt(base, logical, **extra):
        return {"type": base, "logicalType": logical, **extra}

    schema = {
        "type": "record",
        "name": "L",
        "fields": [
            {"name": "date", "type": lt("int", "date")},
            {"name": "tmil", "type": lt("int", "time-millis")},
            {"name": "tmic", "type": lt("long", "time-micros")},
            {"name": "tsms", "type": lt("long", "timestamp-millis")},
            {"name": "tsus", "type": lt("long", "timestamp-micros")},
            {"name": "tsns", "type": lt("long", "timestamp-nanos")},
            {"name": "ltms", "type": lt("long", "local-timestamp-millis")},
            {"name": "ltus", "type": lt("long", "local-timestamp-micros")},
            {"name": "dec", "type": lt("bytes", "decimal", precision=9, scale=2)},
            {
                "name": "decf",
                "type": {
                    "type": "fixed",
                    "name": "D",
                    "size": 8,
                    "logicalType": "decimal",
                    "precision": 12,
                    "scale": 3,
                },
            },
            {"name": "dec256", "type": lt("bytes", "decimal", precision=40, scale=5)},
            {"name": "uuid", "type": lt("string", "uuid")},
            {"name": "odate", "type": ["null", lt("int", "date")]},
            {"name": "ts_list", "type": {"type": "array", "items": lt("long", "timestamp-millis")}},
            {
                "name": "dec_map",
                "type": {"type": "map", "values": ["null", lt("bytes", "decimal", precision=4, scale=1)]},
            },
            {"name": "unknown", "type": lt("long", "no-such-type")},
        ],
    }
    u = uuid.UUID("12345678-1234-5678-1234-567812345678")
    ts = datetime.datetime(2021, 3, 4, 5, 6, 7, 891000, tzinfo=UTC)
    records = [
        {
            "date": datetime.date(2021, 5, 6),
            "tmil": datetime.time(1, 2, 3, 456000),
            "tmic": datetime.time(23, 59, 59, 999999),
            "tsms": ts,
            "tsus": datetime.datetime(1969, 12, 31, 23, 59, 59, 999999, tzinfo=UTC),
            "tsns": 1_600_000_000_123_456_789,
            "ltms": datetime.datetime(2000, 1, 1, 0, 0, 0, 1000),
            "ltus": datetime.datetime(2000, 1, 1, 0, 0, 0, 1),
            "dec": decimal.Decimal("-1234567.89"),
            "decf": decimal.Decimal("123456789.123"),
            "dec256": decimal.Decimal("12345678901234567890123456789012345.67891"),
            "uuid": u,
            "odate": None,
            "ts_list": [ts, datetime.datetime(1970, 1, 1, tzinfo=UTC)],
            "dec_map": {"a": decimal.Decimal("-0.5"), "b": None},
            "unknown": 42,
        },
    ]
    path = _write(tmp_path / "l.avro", schema, records)
    arrow_schema, rows = _read_all(path)
    tsms = pa.timestamp("ms", tz="UTC")
    assert arrow_schema == pa.schema(
        [
            nn("date", pa.date32()),
            nn("tmil", pa.time32("ms")),
            nn("tmic", pa.time64("us")),
            nn("tsms", tsms),
            nn("tsus", pa.timestamp("us", tz="UTC")),
            nn("tsns", pa.timestamp("ns", tz="UTC")),
            nn("ltms", pa.timestamp("ms")),
            nn("ltus", pa.timestamp("us")),
            nn("dec", pa.decimal128(9, 2)),
            nn("decf", pa.decimal128(12, 3)),
            nn("dec256", pa.decimal256(40, 5)),
            nn("uuid", pa.string()),
            pa.field("odate", pa.date32()),
            nn("ts_list", pa.list_(item(tsms))),
            nn("dec_map", pa.map_(pa.string(), pa.field("value", pa.decimal128(4, 1)))),
            nn("unknown", pa.int64()),
        ]
    )
    (row,) = rows
    tsns = row.pop("tsns")
    assert pa.scalar(tsns, pa.timestamp("ns", tz="UTC")).value == 1_600_000_000_123_456_789
    expected = dict(records[0])
    del expected["tsns"]
    expected["uuid"] = str(u)
    expected["dec_map"] = [("a", decimal.Decimal("-0.5")), ("b", None)]
    assert row == expected


def test_invalid_decimals_fall_back_to_the_underlying_type():
    def field(name, **props):
        return {"name": name, "type": {"type": "bytes", "logicalType": "decimal", **props}}

    schema = {
        "type": "record",
        "name": "D",
        "fields": [
            field("scale_above_precision", precision=2, scale=5),
            field("no_precision"),
            field("too_wide", precision=77),
            {"name": "fx", "type": {"type": "fixed", "name": "F", "size": 3, "logicalType": "decimal"}},
        ],
    }
    assert avro_schema_to_arrow(schema) == pa.schema(
        [
            nn("scale_above_precision", pa.binary()),
            nn("no_precision", pa.binary()),
            nn("too_wide", pa.binary()),
            nn("fx", pa.binary(3)),
        ]
    )


def test_timestamps_are_exact_beyond_datetime_range(tmp_path):
    # Raw longs outside Python's datetime range still convert (no datetime objects built).
    schema = {
        "type": "record",
        "name": "W",
        "fields": [{"name": "t", "type": {"type": "long", "logicalType": "timestamp-micros"}}],
    }
    raw = [-(2**62), 2**62]
    path = str(tmp_path / "w.avro")
    with open(path, "wb") as out:
        # Write the values as plain longs, then claim the logical type in the header.
        fastavro.writer(
            out,
            {"type": "record", "name": "W", "fields": [{"name": "t", "type": "long"}]},
            [{"t": v} for v in raw],
        )
    with open(path, "rb") as f:
        header = read_header(f, path)
        blocks = list(iter_blocks(f, header, path))
    patched = AvroHeader(
        schema=schema,
        codec=header.codec,
        sync_marker=header.sync_marker,
        data_start=header.data_start,
        metadata={**header.metadata, "avro.schema": json.dumps(schema).encode()},
    )
    arrow_schema = avro_schema_to_arrow(schema)
    batch = decode_block(blocks[0], patched, arrow_schema, path)
    assert batch.column(0).type == pa.timestamp("us", tz="UTC")
    assert batch.column(0).view(pa.int64()).to_pylist() == raw


def test_recursive_type_is_rejected_unless_projected_away(tmp_path):
    schema = {
        "type": "record",
        "name": "Top",
        "fields": [
            {"name": "id", "type": "int"},
            {
                "name": "list",
                "type": {
                    "type": "record",
                    "name": "Node",
                    "fields": [{"name": "v", "type": "int"}, {"name": "next", "type": ["null", "Node"]}],
                },
            },
        ],
    }
    with pytest.raises(ValueError, match="recursive Avro type 'Node'"):
        avro_schema_to_arrow(schema)
    assert avro_schema_to_arrow(schema, columns=["id"]) == pa.schema([nn("id", pa.int32())])
    path = _write(
        tmp_path / "rec.avro", schema, [{"id": 1, "list": {"v": 1, "next": {"v": 2, "next": None}}}]
    )
    with open(path, "rb") as f, pytest.raises(AvroFormatError, match="recursive") as err:
        list(read_avro_batches(f, path))
    assert path in str(err.value)
    assert _read_all(path, columns=["id"])[1] == [{"id": 1}]


def test_schema_errors():
    with pytest.raises(ValueError, match="must be a record"):
        avro_schema_to_arrow({"type": "array", "items": "int"})
    with pytest.raises(ValueError, match="must be a record"):
        avro_schema_to_arrow("string")
    with pytest.raises(ValueError, match="unknown Avro type name 'Missing'"):
        avro_schema_to_arrow({"type": "record", "name": "R", "fields": [{"name": "a", "type": "Missing"}]})
    with pytest.raises(ValueError, match="defined twice"):
        avro_schema_to_arrow(
            {
                "type": "record",
                "name": "R",
                "fields": [
                    {"name": "a", "type": {"type": "fixed", "name": "F", "size": 1}},
                    {"name": "b", "type": {"type": "fixed", "name": "F", "size": 2}},
                ],
            }
        )


# --------------------------------------------------------------------------------------------------
# Codecs


def _movielens_like(n: int, seed: int = 0) -> tuple[dict, list[dict]]:
    ntv = {
        "type": "record",
        "name": "NameTermValue",
        "namespace": "com.example",
        "fields": [
            {"name": "name", "type": "string"},
            {"name": "term", "type": "string"},
            {"name": "value", "type": "double"},
        ],
    }
    schema = {
        "type": "record",
        "name": "Example",
        "namespace": "com.example",
        "fields": [
            {"name": "response", "type": "double"},
            {"name": "userId", "type": "int"},
            {"name": "movieId", "type": "int"},
            {"name": "genreFeatures", "type": {"type": "array", "items": ntv}},
            {"name": "latent", "type": {"type": "array", "items": "NameTermValue"}},
            {"name": "weight", "type": ["null", "double"], "default": None},
            {"name": "offset", "type": ["null", "double"], "default": None},
        ],
    }
    rng = random.Random(seed)
    records = [
        {
            "response": float(rng.randint(1, 5)),
            "userId": i,
            "movieId": rng.randint(1, 4000),
            "genreFeatures": [
                {"name": "Genre", "term": rng.choice(["Action", "Comedy", "Drama"]), "value": 1.0}
                for _ in range(rng.randint(0, 5))
            ],
            "latent": [
                {"name": str(k), "term": "", "value": rng.uniform(-1, 1)} for k in range(rng.randint(0, 30))
            ],
            "weight": None if i % 3 else rng.random(),
            "offset": None,
        }
        for i in range(n)
    ]
    return schema, records


@pytest.mark.parametrize("codec", ["null", "deflate", "snappy", "zstandard", "bzip2", "xz"])
def test_codecs(tmp_path, codec):
    schema, records = _movielens_like(300)
    if codec == "zstandard":
        # This fastavro writes zstandard only with another library; compress the blocks here.
        zstandard = pytest.importorskip("zstandard")
        plain = _write(tmp_path / "plain.avro", schema, records, sync_interval=2000)
        path = str(tmp_path / "zstandard.avro")
        _recompress(plain, path, codec, zstandard.ZstdCompressor().compress)
    else:
        path = _write(tmp_path / f"{codec}.avro", schema, records, codec=codec, sync_interval=2000)
    with open(path, "rb") as f:
        assert read_header(f, path).codec == codec
    _, blocks = _block_offsets(path)
    assert len(blocks) > 3
    _, rows = _read_all(path)
    assert rows == records


def _recompress(src: str, dst: str, codec: str, compress) -> None:
    """Copies an uncompressed Avro file, compressing every block with ``compress``."""
    with open(src, "rb") as f:
        header = read_header(f, src)
        blocks = list(iter_blocks(f, header, src))
    meta = {**header.metadata, "avro.codec": codec.encode()}
    out = bytearray(_header_bytes(meta, header.sync_marker))
    for block in blocks:
        payload = compress(block.data)
        out += _zigzag(block.count) + _zigzag(len(payload)) + payload + header.sync_marker
    Path(dst).write_bytes(bytes(out))


def test_zstandard_frames_without_content_size(tmp_path):
    zstandard = pytest.importorskip("zstandard")
    schema, records = _movielens_like(50)
    src = _write(tmp_path / "plain.avro", schema, records, sync_interval=1000)

    def streamed(data: bytes) -> bytes:
        c = zstandard.ZstdCompressor().compressobj()  # no content size in the frame header
        return c.compress(data) + c.flush()

    dst = str(tmp_path / "zstd.avro")
    _recompress(src, dst, "zstandard", streamed)
    assert _read_all(dst)[1] == records


# --------------------------------------------------------------------------------------------------
# Projection


@pytest.fixture(params=["skip-unprojected", "decode-all"])
def projection_mode(request, monkeypatch):
    """Runs a test with fastavro skipping left-out fields, and with the decode-all fallback."""
    if request.param == "decode-all":
        monkeypatch.setattr(decode, "projection_reader_works", lambda: False)
    else:
        assert decode.projection_reader_works()
    decode.decoding_plan.cache_clear()
    yield request.param
    decode.decoding_plan.cache_clear()


def test_projection_and_unknown_column(tmp_path, projection_mode):
    schema, records = _movielens_like(100)
    path = _write(tmp_path / "p.avro", schema, records, sync_interval=3000)
    full_schema, _ = _read_all(path)
    for columns in (
        ["userId"],
        ["latent", "response"],
        ["weight", "latent", "genreFeatures"],
        full_schema.names[::-1],
    ):
        arrow_schema, rows = _read_all(path, columns=columns)
        assert arrow_schema == project_arrow_schema(full_schema, columns)
        assert arrow_schema.names == list(columns)
        assert rows == [{c: r[c] for c in columns} for r in records]
    # "latent" reuses the named type defined inside the left-out "genreFeatures".
    assert _read_all(path, columns=["latent"])[0] == pa.schema([nn("latent", pa.list_(item(NTV)))])

    with pytest.raises(ValueError, match=r"unknown column\(s\) \['nope'\]; available columns: \['response'"):
        project_arrow_schema(full_schema, ["userId", "nope"])
    with open(path, "rb") as f, pytest.raises(ValueError, match="available columns"):
        list(read_avro_batches(f, path, columns=["nope"]))
    with pytest.raises(ValueError, match="more than once"):
        project_arrow_schema(full_schema, ["userId", "userId"])
    assert project_arrow_schema(full_schema, None) is full_schema


def test_projection_of_member_unions_and_logical_types(tmp_path, projection_mode):
    schema = {
        "type": "record",
        "name": "M",
        "fields": [
            {
                "name": "skip",
                "type": {
                    "type": "array",
                    "items": {
                        "type": "record",
                        "name": "S",
                        "fields": [{"name": "u", "type": ["int", "string"]}],
                    },
                },
            },
            {"name": "u", "type": ["null", "S", "long"]},
            {"name": "ts", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        ],
    }
    records = [
        {"skip": [{"u": 1}], "u": {"u": "a"}, "ts": datetime.datetime(2020, 1, 1, tzinfo=UTC)},
        {"skip": [], "u": 5, "ts": datetime.datetime(2020, 1, 2, tzinfo=UTC)},
        {"skip": [{"u": "z"}], "u": None, "ts": datetime.datetime(2020, 1, 3, tzinfo=UTC)},
    ]
    path = _write(tmp_path / "mu.avro", schema, records)
    _, full_rows = _read_all(path)
    for columns in (["u"], ["ts", "u"], ["skip"]):
        _, rows = _read_all(path, columns=columns)
        assert rows == [{c: r[c] for c in columns} for r in full_rows]
    assert [r["u"] for r in full_rows] == [
        {"member0": {"u": {"member0": None, "member1": "a"}}, "member1": None},
        {"member0": None, "member1": 5},
        None,
    ]


def test_decode_block_casts_to_a_wider_requested_type(tmp_path):
    schema, records = _movielens_like(10)
    path = _write(tmp_path / "c.avro", schema, records)
    header, blocks = _block_offsets(path)
    wanted = pa.schema([pa.field("userId", pa.int64()), pa.field("response", pa.float64())])
    batch = decode_block(blocks[0], header, wanted, path)
    assert batch.schema == wanted
    assert batch.column("userId").to_pylist() == [r["userId"] for r in records]
    with pytest.raises(AvroFormatError, match="not in the file's Avro schema"):
        decode_block(blocks[0], header, pa.schema([pa.field("zzz", pa.int64())]), path)


# --------------------------------------------------------------------------------------------------
# Splitting


@pytest.fixture(params=[7, 1 << 20], ids=["tiny-chunks", "1MiB-chunks"])
def chunk(request, monkeypatch):
    monkeypatch.setattr(container, "_CHUNK", request.param)
    return request.param


@pytest.mark.parametrize("codec", ["null", "deflate"])
def test_split_ranges_read_every_row_once(tmp_path, chunk, codec):
    schema, records = _movielens_like(400, seed=1)
    path = _write(tmp_path / "s.avro", schema, records, codec=codec, sync_interval=300)
    header, blocks = _block_offsets(path)
    assert len(blocks) > 50
    size = Path(path).stat().st_size
    starts = [b.offset for b in blocks]
    special = {
        3,  # inside the magic
        header.data_start - 5,  # inside the header
        header.data_start,  # exactly the first block
        header.data_start + 1,
        starts[1],  # exactly at a block start
        starts[1] + 1,  # one byte after
        starts[2] - 1,  # one byte before
        starts[2] - 16,  # at the sync marker that precedes a block
        starts[2] - 15,
        starts[-1],
        size - 1,
    }
    rng = random.Random(5)
    for parts in (2, 3, 7):
        for trial in range(6):
            pool = sorted(special) if trial < 2 else list(range(1, size))
            cuts = sorted(set(rng.sample(pool, min(parts - 1, len(pool)))))
            bounds = [0, *cuts, None]
            rows, offsets = [], []
            with open(path, "rb") as f:
                for start, end in itertools.pairwise(bounds):
                    offsets += [b.offset for b in iter_blocks(f, header, path, start, end)]
                    for batch in read_avro_batches(f, path, start=start, end=end):
                        rows += batch.to_pylist()
            assert offsets == starts, (parts, cuts)
            assert rows == records, (parts, cuts)


def test_ranges_select_blocks_by_start_offset(tmp_path, chunk):
    schema, records = _movielens_like(60)
    path = _write(tmp_path / "b.avro", schema, records, sync_interval=200)
    header, blocks = _block_offsets(path)
    starts = [b.offset for b in blocks]
    with open(path, "rb") as f:

        def offsets(start, end):
            return [b.offset for b in iter_blocks(f, header, path, start, end)]

        assert offsets(0, header.data_start) == []
        assert offsets(0, header.data_start + 1) == starts[:1]
        assert offsets(starts[3], starts[5]) == starts[3:5]
        assert offsets(starts[3] + 1, starts[5] + 1) == starts[4:6]
        assert offsets(starts[3] + 1, starts[4]) == []
        assert offsets(starts[-1], None) == starts[-1:]
        assert offsets(starts[-1] + 1, None) == []
        assert offsets(10**9, None) == []


# --------------------------------------------------------------------------------------------------
# Bad input


def test_not_avro_names_the_path(tmp_path):
    path = tmp_path / "plain.txt"
    path.write_bytes(b"this is not an avro file")
    with open(path, "rb") as f, pytest.raises(AvroFormatError, match="not an Avro file") as err:
        read_header(f, str(path))
    assert str(path) in str(err.value)
    assert err.value.path == str(path)

    empty = tmp_path / "empty.avro"
    empty.write_bytes(b"")
    with open(empty, "rb") as f, pytest.raises(AvroFormatError, match=str(empty)):
        list(read_avro_batches(f, str(empty)))


def test_truncated_header(tmp_path):
    schema, records = _movielens_like(5)
    path = _write(tmp_path / "t.avro", schema, records)
    data = Path(path).read_bytes()
    cut = tmp_path / "cut.avro"
    cut.write_bytes(data[:40])
    with open(cut, "rb") as f, pytest.raises(AvroFormatError, match="truncated Avro header") as err:
        read_header(f, str(cut))
    assert str(cut) in str(err.value)


def test_header_problems(tmp_path):
    sync = bytes(range(16))
    schema = b'{"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}'
    cases = {
        "codec.avro": ({"avro.schema": schema, "avro.codec": b"lz4"}, "unsupported Avro codec 'lz4'"),
        "noschema.avro": ({"avro.codec": b"null"}, "no 'avro.schema'"),
        "badjson.avro": ({"avro.schema": b"{not json"}, "not valid JSON"),
    }
    for name, (meta, message) in cases.items():
        path = tmp_path / name
        path.write_bytes(_header_bytes(meta, sync))
        with open(path, "rb") as f, pytest.raises(AvroFormatError, match=message) as err:
            read_header(f, str(path))
        assert str(path) in str(err.value)
    # A header without the codec key means "null"; an empty block is skipped.
    path = tmp_path / "ok.avro"
    body = _zigzag(0) + _zigzag(0) + sync + _zigzag(1) + _zigzag(1) + _zigzag(-3) + sync
    path.write_bytes(_header_bytes({"avro.schema": schema}, sync) + body)
    with open(path, "rb") as f:
        header = read_header(f, str(path))
        assert header.codec == "null"
        assert header.metadata["avro.schema"] == schema
        assert header.data_start == len(_header_bytes({"avro.schema": schema}, sync))
        blocks = list(iter_blocks(f, header, str(path)))
        assert [b.count for b in blocks] == [0, 1]
        assert decode_block(blocks[0], header, avro_schema_to_arrow(header.schema), str(path)).num_rows == 0
        assert [b.to_pylist() for b in read_avro_batches(f, str(path))] == [[{"a": -3}]]


def test_truncated_block_names_path_and_offset(tmp_path):
    schema, records = _movielens_like(50)
    path = _write(tmp_path / "t.avro", schema, records, sync_interval=500)
    _, blocks = _block_offsets(path)
    data = Path(path).read_bytes()
    target = blocks[2]
    cut = tmp_path / "cut.avro"
    cut.write_bytes(data[: target.offset + 10])
    with open(cut, "rb") as f, pytest.raises(AvroFormatError, match="truncated block") as err:
        list(read_avro_batches(f, str(cut)))
    assert str(cut) in str(err.value)
    assert err.value.offset == target.offset
    assert f"offset {target.offset}" in str(err.value)
    # Cut in the trailing sync marker too.
    cut.write_bytes(data[: blocks[3].offset - 3])
    with open(cut, "rb") as f, pytest.raises(AvroFormatError, match="truncated block") as err:
        list(read_avro_batches(f, str(cut)))
    assert err.value.offset == blocks[2].offset


def test_corrupted_sync_marker(tmp_path):
    schema, records = _movielens_like(50)
    path = _write(tmp_path / "s.avro", schema, records, sync_interval=500)
    _, blocks = _block_offsets(path)
    data = bytearray(Path(path).read_bytes())
    data[blocks[2].offset - 5] ^= 0xFF  # inside the marker that ends block 1
    Path(path).write_bytes(bytes(data))
    with open(path, "rb") as f, pytest.raises(AvroFormatError, match="sync marker mismatch") as err:
        list(read_avro_batches(f, path))
    assert err.value.offset == blocks[1].offset
    assert path in str(err.value)


def test_corrupted_deflate_data(tmp_path):
    schema, records = _movielens_like(50)
    path = _write(tmp_path / "d.avro", schema, records, codec="deflate", sync_interval=500)
    _, blocks = _block_offsets(path)
    target = blocks[1]
    data = bytearray(Path(path).read_bytes())
    payload_start = target.offset + len(_zigzag(target.count)) + len(_zigzag(len(target.data)))
    data[payload_start : payload_start + len(target.data)] = b"\xff" * len(target.data)
    Path(path).write_bytes(bytes(data))
    with open(path, "rb") as f, pytest.raises(AvroFormatError, match="deflate decompression failed") as err:
        list(read_avro_batches(f, path))
    assert err.value.offset == target.offset
    assert path in str(err.value)


def test_deflate_blocks_of_any_ratio_inflate_whole(monkeypatch):
    """libdeflate gets a buffer sized by the ratios seen so far; a block that inflates to more
    (here ~1000:1, the most deflate gives) is inflated whole all the same, and the next such
    block fits the grown buffer."""
    import zlib

    monkeypatch.setattr(container, "_ratio", 16.0)
    text = bytes(random.Random(1).randbytes(70_000))  # ~1:1
    zeros = bytes(3_000_000)  # ~1000:1
    for raw in (text, zeros, zeros, text):
        packed = zlib.compress(raw, 9)[2:-4]  # raw deflate, as Avro stores it
        assert container.decompress(RawBlock(offset=0, count=1, data=packed), "deflate", "f.avro") == raw
    assert container._ratio >= 3_000_000 / len(zlib.compress(zeros, 9)[2:-4])
    assert container._ratio <= container._MAX_DEFLATE_RATIO


def test_corrupt_deflate_block_is_named_not_inflated_partly():
    import zlib

    packed = zlib.compress(b"abc" * 10_000)[2:-4]
    with pytest.raises(AvroFormatError, match=r"^f.avro: corrupt block: deflate decompression failed: "):
        container.decompress(
            RawBlock(offset=7, count=1, data=packed[: len(packed) // 2]), "deflate", "f.avro"
        )


def test_snappy_checksum_is_verified(tmp_path):
    schema, records = _movielens_like(20)
    path = _write(tmp_path / "s.avro", schema, records, codec="snappy")
    header, blocks = _block_offsets(path)
    block = blocks[0]
    bad = RawBlock(block.offset, block.count, block.data[:-1] + bytes([block.data[-1] ^ 1]))
    with pytest.raises(AvroFormatError, match="CRC32"):
        decode_block(bad, header, avro_schema_to_arrow(header.schema), path)


def test_corrupt_record_bytes(tmp_path):
    schema, records = _movielens_like(20)
    path = _write(tmp_path / "r.avro", schema, records)
    header, blocks = _block_offsets(path)
    arrow_schema = avro_schema_to_arrow(header.schema)
    block = blocks[0]
    short = RawBlock(block.offset, block.count, block.data[: len(block.data) // 2])
    with pytest.raises(AvroFormatError, match="cannot decode record") as err:
        decode_block(short, header, arrow_schema, path)
    assert err.value.offset == block.offset
    extra = RawBlock(block.offset, block.count - 1, block.data)
    with pytest.raises(AvroFormatError, match="left over"):
        decode_block(extra, header, arrow_schema, path)


def test_format_error_pickles():
    err = AvroFormatError("gs://b/f.avro", "sync marker mismatch", 1234)
    again = pickle.loads(pickle.dumps(err))
    assert isinstance(again, AvroFormatError)
    assert (again.path, again.problem, again.offset) == ("gs://b/f.avro", "sync marker mismatch", 1234)
    assert str(again) == str(err) == "gs://b/f.avro: sync marker mismatch (at byte offset 1234)"
    assert str(AvroFormatError("x.avro", "bad")) == "x.avro: bad"


def test_works_on_in_memory_buffers():
    schema, records = _movielens_like(30)
    buf = io.BytesIO()
    fastavro.writer(buf, fastavro.parse_schema(schema), records, sync_interval=400)
    buf.seek(7)
    assert [r for b in read_avro_batches(buf, "mem") for r in b.to_pylist()] == records


# --------------------------------------------------------------------------------------------------
# The bundled MovieLens sample


def test_movielens_sample():
    path = str(MOVIELENS)
    with open(path, "rb") as f:
        reference = list(fastavro.reader(f))
        header = read_header(f, path)
        assert header.codec == "null"
        batches = list(read_avro_batches(f, path))
    schema = batches[0].schema
    assert sum(b.num_rows for b in batches) == 300
    assert schema.field("response") == nn("response", pa.float64())
    assert schema.field("userId") == nn("userId", pa.int32())
    assert schema.field("genreFeatures").type == pa.list_(item(NTV))
    assert schema.field("movieLatentFactorFeatures").type == pa.list_(item(NTV))
    assert schema.field("weight") == pa.field("weight", pa.float64())
    assert schema.field("weight").nullable
    assert not schema.field("response").nullable
    rows = [r for b in batches for r in b.to_pylist()]
    assert rows[0] == reference[0]
    assert rows == reference


def test_interleaved_readers_share_one_file_object(tmp_path, chunk):
    schema, records = _movielens_like(80)
    path = _write(tmp_path / "i.avro", schema, records, sync_interval=500)
    header, blocks = _block_offsets(path)
    middle = blocks[len(blocks) // 2].offset
    with open(path, "rb") as f:
        first = iter_blocks(f, header, path, 0, middle)
        second = iter_blocks(f, header, path, middle, None)
        got: list[RawBlock] = []
        for a, b in itertools.zip_longest(first, second):
            got += [x for x in (a, b) if x is not None]
    assert sorted(got, key=lambda b: b.offset) == blocks


def test_nested_projection_keeps_only_the_named_fields():
    with open(MOVIELENS, "rb") as f:
        records = list(fastavro.reader(f))
    with open(MOVIELENS, "rb") as f:
        batches = list(
            read_avro_batches(
                f, MOVIELENS, columns=["movieLatentFactorFeatures.value", "genreFeatures.TERM", "userId"]
            )
        )
    batch = pa.concat_batches(batches)
    assert batch.schema.names == ["movieLatentFactorFeatures", "genreFeatures", "userId"]
    assert batch.schema.field("genreFeatures").type.value_type.names == ["term"]
    assert batch.column("genreFeatures").to_pylist()[0] == [
        {"term": g["term"]} for g in records[0]["genreFeatures"]
    ]
    values = [[{"value": v["value"]} for v in r["movieLatentFactorFeatures"]] for r in records]
    assert batch.column("movieLatentFactorFeatures").to_pylist() == values


@pytest.mark.parametrize(
    ("columns", "message"),
    [
        (["genreFeatures.nope"], "genreFeatures has no field 'nope'; its fields: ['name', 'term', 'value']"),
        (["userId.x"], "userId is int32, not a record: cannot select x in it"),
    ],
)
def test_nested_projection_errors(columns, message):
    with open(MOVIELENS, "rb") as f, pytest.raises(AvroFormatError) as err:
        list(read_avro_batches(f, MOVIELENS, columns=columns))
    assert message in str(err.value)


# --- record-level decode errors as dead letters -------------------------------------------------


@pytest.mark.parametrize("decoder", ["native", "fastavro"])
def test_undecodable_records_become_dead_letters_and_the_rest_is_read(tmp_path, monkeypatch, decoder):
    from beam_tensorize.kernels.avro import DECODER_ENV
    from beam_tensorize.kernels.formats import Split
    from beam_tensorize.kernels.formats.avro import AvroFormat
    from beam_tensorize.kernels.provenance import describe_row
    from tests.conftest import UNDECODABLE_GOOD_IDS, write_undecodable_avro

    if decoder == "fastavro":
        monkeypatch.setenv(DECODER_ENV, "fastavro")
    path = write_undecodable_avro(tmp_path / "bad.avro")
    with open(path, "rb") as f:
        items = list(AvroFormat(dead_letters=True).read_split(f, Split(path, 0, 1 << 20), None, 100))
    letters, (batch,) = items[:-1], items[-1:]
    assert batch.column("id").to_pylist() == UNDECODABLE_GOOD_IDS
    # Rows keep their place in the file in error messages: row 3 is the file's record 4.
    assert describe_row(batch, 3).endswith("record 4 of the rows starting at byte 208")
    assert [(d["source"], d["offset"], d["record"]) for d in letters] == [
        (path, 208, i) for i in (3, 12, 13, 14, 15)
    ]
    utf8 = "string is not valid UTF-8" if decoder == "native" else "UnicodeDecodeError: 'utf-8' codec can't"
    assert letters[0]["reason"].startswith("cannot decode Avro record 3 of 16 in the block: ")
    assert utf8 in letters[0]["reason"]
    # The bad record's own bytes: id 3 (zigzag 6), then the 8-byte name, then tag branch 1.
    assert letters[0]["data"] == b"\x06\x10BAD\xff\xfeF8X\x02\x08t003"
    branch = "union branch index 5 out of range (2 branches)" if decoder == "native" else "IndexError"
    assert branch in letters[1]["reason"]
    assert letters[1]["reason"].endswith(
        "the 3 records after it in the block cannot be told apart (its data holds the rest of the block)"
    )
    assert letters[1]["data"].startswith(b"\x18\x08n012\x0a\x10SENTINEL") and letters[1]["data"].endswith(
        b"t015"
    )
    assert letters[2]["reason"] == (
        "Avro record 13 of 16 in the block follows the undecodable record 12, so it cannot be told apart"
    )
    assert letters[2]["data"] == b""


def test_without_dead_letters_an_undecodable_record_fails_naming_file_block_and_record(tmp_path):
    from beam_tensorize.kernels.formats import Split
    from beam_tensorize.kernels.formats.avro import AvroFormat
    from tests.conftest import write_undecodable_avro

    path = write_undecodable_avro(tmp_path / "bad.avro")
    with open(path, "rb") as f, pytest.raises(AvroFormatError) as err:
        list(AvroFormat().read_split(f, Split(path, 0, 1 << 20), None, 100))
    assert str(err.value).startswith(f"{path}: corrupt block: cannot decode record 3 of 16: ")
    assert str(err.value).endswith("(at byte offset 208)")


def test_bytes_left_over_after_a_block_s_records_stay_fatal_with_dead_letters(tmp_path):
    """Block-level corruption: the block holds more bytes than its records."""
    from beam_tensorize.kernels.avro import iter_blocks, read_header
    from beam_tensorize.kernels.avro.salvage import decode_blocks_salvaging

    path = tmp_path / "x.avro"
    schema = {"type": "record", "name": "r", "fields": [{"name": "s", "type": "string"}]}
    with open(path, "wb") as f:
        fastavro.writer(f, schema, [{"s": "a"}, {"s": "b"}])
    with open(path, "rb") as f:
        header = read_header(f, str(path))
        (block,) = list(iter_blocks(f, header, str(path)))
    padded = RawBlock(block.offset, block.count, block.data + b"\x00\x00")
    with pytest.raises(AvroFormatError, match=r"corrupt block: 2 bytes left over after its 2 records"):
        decode_blocks_salvaging([padded], header, avro_schema_to_arrow(schema), str(path))
