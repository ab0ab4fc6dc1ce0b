"""The decoder schema handed to fastavro: wire-identical to the writer schema, arranged so
the Python values need (almost) no post-processing."""

from __future__ import annotations

import functools
import io
import logging
from collections.abc import Sequence
from typing import Any

import fastavro

from beam_tensorize.kernels.avro.schema import (
    AvroArray,
    AvroEnum,
    AvroField,
    AvroFixed,
    AvroMap,
    AvroNamed,
    AvroNode,
    AvroPrimitive,
    AvroRecord,
    AvroUnion,
    is_member_union,
    is_null,
)
from beam_tensorize.kernels.avro.types import wrapper_name

__all__ = [
    "Emitter",
    "has_member_unions",
    "is_nested",
    "projection_reader",
    "projection_reader_works",
]


_LOGGER = logging.getLogger(__name__)


class Emitter:
    """Writes nodes back as fastavro schema JSON, wire-identical to the writer schema.

    Named types are emitted under their full names and defined at their first emission;
    logical types, docs, defaults and aliases are left out.
    """

    def __init__(self) -> None:
        self._defined: set[str] = set()

    def emit(self, node: AvroNode) -> Any:
        if isinstance(node, AvroPrimitive):
            return node.kind
        if isinstance(node, AvroNamed):
            name = node.fullname
            if node.fullname in self._defined:
                return name
            self._defined.add(node.fullname)
            if isinstance(node, AvroEnum):
                return {"type": "enum", "name": name, "symbols": node.symbols}
            if isinstance(node, AvroFixed):
                return {"type": "fixed", "name": name, "size": node.size}
            assert isinstance(node, AvroRecord)
            return {"type": "record", "name": name, "fields": [self.field(f) for f in node.fields]}
        if isinstance(node, AvroArray):
            return {"type": "array", "items": self.emit(node.items)}
        if isinstance(node, AvroMap):
            return {"type": "map", "values": self.emit(node.values)}
        assert isinstance(node, AvroUnion)
        if not is_member_union(node):
            return [self.emit(b) for b in node.branches]
        branches: list[Any] = []
        index = 0
        for b in node.branches:
            if is_null(b):
                branches.append("null")
                continue
            if isinstance(b, AvroNamed):
                branches.append(self.emit(b))
            else:
                branches.append(
                    {
                        "type": "record",
                        "name": wrapper_name(node, index),
                        "fields": [{"name": "v", "type": self.emit(b)}],
                    }
                )
            index += 1
        return branches

    def field(self, f: AvroField) -> dict:
        return {"name": f.name, "type": self.emit(f.node)}


def has_member_unions(node: AvroNode, seen: set[str] | None = None) -> bool:
    seen = set() if seen is None else seen
    if isinstance(node, AvroNamed):
        if node.fullname in seen:
            return False
        seen.add(node.fullname)
        if isinstance(node, AvroRecord):
            return any(has_member_unions(f.node, seen) for f in node.fields)
        return False
    if isinstance(node, AvroArray):
        return has_member_unions(node.items, seen)
    if isinstance(node, AvroMap):
        return has_member_unions(node.values, seen)
    if isinstance(node, AvroUnion):
        return is_member_union(node) or any(has_member_unions(b, seen) for b in node.branches)
    return False


def is_nested(node: AvroNode) -> bool:
    """True if values of ``node`` may contain records, arrays or maps."""
    if isinstance(node, AvroUnion):
        return any(is_nested(b) for b in node.branches)
    return isinstance(node, (AvroRecord, AvroArray, AvroMap))


def projection_reader(record_name: str, names: Sequence[str]) -> dict:
    """A fastavro reader schema that keeps only the top-level fields ``names``.

    It is marked as already parsed and its field types are left unset: fastavro then skips the
    other fields and decodes the kept ones exactly as without a reader schema (no per-value
    schema resolution, which costs more than it saves inside nested records).
    """
    return {
        "type": "record",
        "name": record_name,
        "fields": [{"name": n, "type": None} for n in names],
        "__fastavro_parsed": True,
        "__named_schemas": {},
    }


@functools.lru_cache(maxsize=1)
def projection_reader_works() -> bool:
    """Checks once that this fastavro skips fields as :func:`projection_reader` expects.

    If not (another fastavro version), projections decode all fields and drop the others.
    """
    schema = {
        "type": "record",
        "name": "probe.R",
        "fields": [
            {
                "name": "a",
                "type": {
                    "type": "array",
                    "items": {
                        "type": "record",
                        "name": "probe.N",
                        "fields": [{"name": "x", "type": "string"}],
                    },
                },
            },
            {"name": "b", "type": ["null", "long"]},
            {"name": "c", "type": {"type": "map", "values": "probe.N"}},
            {
                "name": "d",
                "type": [
                    "null",
                    "probe.N",
                    {"type": "record", "name": "probe.W", "fields": [{"name": "v", "type": "int"}]},
                ],
            },
            {"name": "e", "type": "double"},
        ],
    }
    record = {"a": [{"x": "s"}], "b": 5, "c": {"k": {"x": "t"}}, "d": ("probe.N", {"x": "u"}), "e": 1.5}
    expected = {"b": 5, "c": {"k": {"x": "t"}}, "d": ("probe.N", {"x": "u"})}
    try:
        parsed = fastavro.parse_schema(schema)
        out = io.BytesIO()
        fastavro.schemaless_writer(out, parsed, record)
        out.write(b"\x01")
        data = io.BytesIO(out.getvalue())
        got = fastavro.schemaless_reader(
            data,
            parsed,
            projection_reader("probe.R", ["d", "b", "c"]),
            return_named_type=True,
            return_named_type_override=True,
        )
        works = got == expected and data.read() == b"\x01"
    except Exception:  # noqa: BLE001 - any failure means "do not use it"
        works = False
    if not works:
        _LOGGER.warning(
            "fastavro %s cannot skip unprojected Avro fields; decoding all fields", fastavro.__version__
        )
    return works
