"""Avro types -> Arrow types (`avro_schema_to_arrow`), and the Python pre-conversion some types need."""

from __future__ import annotations

import decimal
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from beam_tensorize.kernels.arrow_types import DEFAULT_KEY, check_columns
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
    AvroSchemaJson,
    AvroUnion,
    is_null,
    parse_schema,
    widened_kind,
)

__all__ = [
    "ARROW_PRIMITIVES",
    "Convert",
    "TEMPORAL",
    "Typed",
    "Typer",
    "avro_schema_to_arrow",
    "fixed_type",
    "primitive_type",
    "prune_like",
    "wrapper_name",
]


# Private namespace of the wrapper records put around unnamed union branches.
_WRAPPER_NAMESPACE = "beam_tensorize_internal_avro_union"

ARROW_PRIMITIVES = {
    "null": pa.null(),
    "boolean": pa.bool_(),
    "int": pa.int32(),
    "long": pa.int64(),
    "float": pa.float32(),
    "double": pa.float64(),
    "bytes": pa.binary(),
    "string": pa.string(),
}
# (underlying Avro type, logicalType) -> Arrow type reached by a zero-copy view of the raw ints.
TEMPORAL = {
    ("int", "date"): pa.date32(),
    ("int", "time-millis"): pa.time32("ms"),
    ("long", "time-micros"): pa.time64("us"),
    ("long", "timestamp-millis"): pa.timestamp("ms", tz="UTC"),
    ("long", "timestamp-micros"): pa.timestamp("us", tz="UTC"),
    ("long", "timestamp-nanos"): pa.timestamp("ns", tz="UTC"),
    ("long", "local-timestamp-millis"): pa.timestamp("ms"),
    ("long", "local-timestamp-micros"): pa.timestamp("us"),
    ("long", "local-timestamp-nanos"): pa.timestamp("ns"),
}
_MAX_DECIMAL128_PRECISION = 38
_MAX_DECIMAL256_PRECISION = 76
_LOGGER = logging.getLogger(__name__)


Convert = Callable[[Any], Any]


@dataclass(frozen=True)
class Typed:
    """How one Avro type becomes Arrow.

    ``raw`` is the type the decoded Python values are converted to; it differs from ``final``
    only by temporal types standing as their storage ints (``raw.view(final)`` is exact).
    ``convert`` (if set) maps a non-null decoded value to what ``raw`` expects.
    """

    final: pa.DataType
    raw: pa.DataType
    convert: Convert | None
    nullable: bool


class Typer:
    def __init__(self) -> None:
        self._done: dict[str, Typed] = {}
        self._active: list[str] = []

    def field(self, f: AvroField) -> tuple[pa.Field, pa.Field, Convert | None]:
        typed = self.type(f.node)
        meta = {"doc": f.doc} if f.doc else {}
        if f.default is not AvroField.NO_DEFAULT:  # a reader of files without the field uses it
            meta[DEFAULT_KEY] = json.dumps(f.default)
        meta = meta or None
        return (
            pa.field(f.name, typed.final, typed.nullable, metadata=meta),
            pa.field(f.name, typed.raw, typed.nullable),
            typed.convert,
        )

    def type(self, node: AvroNode) -> Typed:
        if isinstance(node, AvroNamed):
            name = node.fullname
            if name in self._done:
                return self._done[name]
            if name in self._active:
                chain = " -> ".join([*self._active[self._active.index(name) :], name])
                raise ValueError(f"recursive Avro type {name!r} ({chain}) cannot be represented in Arrow")
            self._active.append(name)
            try:
                typed = self._named(node)
            finally:
                self._active.pop()
            self._done[name] = typed
            return typed
        if isinstance(node, AvroPrimitive):
            return primitive_type(node.kind, node.props)
        if isinstance(node, AvroArray):
            items = self.type(node.items)
            return Typed(
                pa.list_(pa.field("item", items.final, items.nullable)),
                pa.list_(pa.field("item", items.raw, items.nullable)),
                _list_converter(items.convert),
                False,
            )
        if isinstance(node, AvroMap):
            values = self.type(node.values)
            return Typed(
                pa.map_(pa.string(), pa.field("value", values.final, values.nullable)),
                pa.map_(pa.string(), pa.field("value", values.raw, values.nullable)),
                _map_converter(values.convert),
                False,
            )
        if isinstance(node, AvroUnion):
            return self._union(node)
        raise TypeError(f"unexpected schema node {node!r}")

    def _named(self, node: AvroNamed) -> Typed:
        if isinstance(node, AvroEnum):
            return Typed(pa.string(), pa.string(), None, False)
        if isinstance(node, AvroFixed):
            return fixed_type(node)
        assert isinstance(node, AvroRecord)
        finals, raws, converters = [], [], []
        for f in node.fields:
            final, raw, convert = self.field(f)
            finals.append(final)
            raws.append(raw)
            if convert is not None:
                converters.append((f.name, convert))
        return Typed(pa.struct(finals), pa.struct(raws), _record_converter(converters), False)

    def _union(self, node: AvroUnion) -> Typed:
        has_null = any(is_null(b) for b in node.branches)
        others = [b for b in node.branches if not is_null(b)]
        if not others:
            return Typed(pa.null(), pa.null(), None, True)
        if len(others) == 1:
            typed = self.type(others[0])
            return Typed(typed.final, typed.raw, typed.convert, has_null or typed.nullable)
        widened = widened_kind(node)
        if widened is not None:
            arrow = ARROW_PRIMITIVES[widened]
            return Typed(arrow, arrow, None, has_null)
        finals, raws = [], []
        table: dict[str, tuple[str, bool, Convert | None]] = {}
        for i, branch in enumerate(others):
            typed = self.type(branch)
            key = f"member{i}"
            finals.append(pa.field(key, typed.final, True))
            raws.append(pa.field(key, typed.raw, True))
            if isinstance(branch, AvroNamed):
                table[branch.fullname] = (key, False, typed.convert)
            else:
                table[wrapper_name(node, i)] = (key, True, typed.convert)
        return Typed(pa.struct(finals), pa.struct(raws), _member_converter(table), has_null)


def wrapper_name(union: AvroUnion, index: int) -> str:
    """Full name of the record wrapped around the ``index``-th non-null branch of ``union``."""
    return f"{_WRAPPER_NAMESPACE}.u{union.uid}_{index}"


def primitive_type(kind: str, props: dict[str, Any]) -> Typed:
    arrow = ARROW_PRIMITIVES[kind]
    logical = props.get("logicalType")
    if logical is None:
        return Typed(arrow, arrow, None, kind == "null")
    temporal = TEMPORAL.get((kind, logical))
    if temporal is not None:
        return Typed(temporal, arrow, None, False)
    if kind == "bytes" and logical == "decimal":
        typed = _decimal_type(props, None)
        if typed is not None:
            return typed
    if kind == "string" and logical == "uuid":
        return Typed(pa.string(), pa.string(), None, False)
    _LOGGER.debug("Avro logical type %r on %r is not mapped; using the underlying type", logical, kind)
    return Typed(arrow, arrow, None, kind == "null")


def fixed_type(node: AvroFixed) -> Typed:
    if node.props.get("logicalType") == "decimal":
        typed = _decimal_type(node.props, node.size)
        if typed is not None:
            return typed
    arrow = pa.binary(node.size)
    return Typed(arrow, arrow, None, False)


def _decimal_type(props: dict[str, Any], size: int | None) -> Typed | None:
    precision = props.get("precision")
    scale = props.get("scale", 0)
    valid = (
        isinstance(precision, int)
        and isinstance(scale, int)
        and 0 < precision <= _MAX_DECIMAL256_PRECISION
        and 0 <= scale <= precision
    )
    if not valid:
        _LOGGER.warning(
            "invalid Avro decimal (precision %r, scale %r); using the underlying type", precision, scale
        )
        return None
    if precision <= _MAX_DECIMAL128_PRECISION:
        arrow = pa.decimal128(precision, scale)
    else:
        arrow = pa.decimal256(precision, scale)
    return Typed(arrow, arrow, _decimal_converter(scale), False)


def _decimal_converter(scale: int) -> Convert:
    exponent = -scale

    def convert(value: bytes) -> decimal.Decimal:
        unscaled = int.from_bytes(value, "big", signed=True)
        sign = 1 if unscaled < 0 else 0
        digits = tuple(int(d) for d in str(abs(unscaled)))
        return decimal.Decimal((sign, digits, exponent))

    return convert


def _list_converter(item: Convert | None) -> Convert | None:
    if item is None:
        return None

    def convert(values: list) -> list:
        return [None if v is None else item(v) for v in values]

    return convert


def _map_converter(value: Convert | None) -> Convert | None:
    if value is None:
        return None

    def convert(values: dict) -> list:
        return [(k, None if v is None else value(v)) for k, v in values.items()]

    return convert


def _record_converter(converters: list[tuple[str, Convert]]) -> Convert | None:
    if not converters:
        return None

    def convert(record: dict) -> dict:
        for name, fn in converters:
            v = record[name]
            if v is not None:
                record[name] = fn(v)
        return record

    return convert


def _member_converter(table: dict[str, tuple[str, bool, Convert | None]]) -> Convert:
    def convert(value: tuple) -> dict:
        name, inner = value
        key, wrapped, fn = table[name]
        if wrapped:
            inner = inner["v"]
        if fn is not None and inner is not None:
            inner = fn(inner)
        return {key: inner}

    return convert


def avro_schema_to_arrow(schema: AvroSchemaJson, columns: Sequence[str] | None = None) -> pa.Schema:
    """Converts an Avro record schema to the Arrow schema of the batches read from it.

    Args:
        schema: the Avro schema as parsed JSON (e.g. ``AvroHeader.schema``); the top level
            must be a record.
        columns: convert only these top-level fields, in this order (None: all fields). Fields
            left out may use types Arrow cannot represent (recursive types).

    Returns:
        One Arrow field per (selected) top-level Avro field; see the module docstring for
        the type mapping.

    Raises:
        ValueError: the schema is invalid, not a record, uses a recursive type, or a requested
            column does not exist.
    """
    record = parse_schema(schema)
    by_name = {f.name: f for f in record.fields}
    if columns is None:
        selected = record.fields
    else:
        check_columns(columns, list(by_name))
        selected = [by_name[c] for c in columns]
    typer = Typer()
    return pa.schema([typer.field(f)[0] for f in selected])


def prune_like(raw: pa.DataType, final: pa.DataType, wanted: pa.DataType) -> pa.DataType:
    """The raw (pre-view) type matching a pruned `wanted` version of `final`.

    Raises:
        ValueError: `wanted` is not `final` with nested fields left out.
    """
    if wanted == final:
        return raw
    if (pa.types.is_list(final) and pa.types.is_list(wanted)) or (
        pa.types.is_large_list(final) and pa.types.is_large_list(wanted)
    ):
        item = raw.value_field.with_type(prune_like(raw.value_type, final.value_type, wanted.value_type))
        return pa.list_(item) if pa.types.is_list(final) else pa.large_list(item)
    if pa.types.is_struct(final) and pa.types.is_struct(wanted):
        fields = []
        for i in range(wanted.num_fields):
            name = wanted.field(i).name
            index = final.get_field_index(name)
            if index < 0:
                raise ValueError(f"field {name!r} is not in {final}")
            fields.append(
                raw.field(index).with_type(
                    prune_like(raw.field(index).type, final.field(index).type, wanted.field(i).type)
                )
            )
        return pa.struct(fields)
    raise ValueError(f"{wanted} is not a projection of {final}")
