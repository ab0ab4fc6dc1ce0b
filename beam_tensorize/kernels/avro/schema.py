"""The Avro schema model: the writer schema parsed once, names resolved (`parse_schema`).

Both decoders (fastavro's and the native one) work from this model."""

from __future__ import annotations

import itertools
import json
from typing import Any, Union

__all__ = [
    "AvroArray",
    "AvroEnum",
    "AvroField",
    "AvroFixed",
    "AvroMap",
    "AvroNamed",
    "AvroNode",
    "AvroPrimitive",
    "AvroRecord",
    "AvroSchemaJson",
    "AvroUnion",
    "PRIMITIVES",
    "is_member_union",
    "is_null",
    "parse_schema",
    "widened_kind",
]


AvroSchemaJson = Union[dict, list, str]

PRIMITIVES = ("null", "boolean", "int", "long", "float", "double", "bytes", "string")


class AvroNode:
    __slots__ = ()


class AvroPrimitive(AvroNode):
    __slots__ = ("kind", "props")

    def __init__(self, kind: str, props: dict[str, Any]):
        self.kind = kind
        self.props = props


class AvroNamed(AvroNode):
    __slots__ = ("fullname",)

    def __init__(self, fullname: str):
        self.fullname = fullname


class AvroField:
    __slots__ = ("default", "doc", "name", "node")

    #: `default` when the field declares none.
    NO_DEFAULT = object()

    def __init__(self, name: str, node: AvroNode, doc: str | None, default=NO_DEFAULT):
        self.name = name
        self.node = node
        self.doc = doc
        self.default = default


class AvroRecord(AvroNamed):
    __slots__ = ("fields",)

    def __init__(self, fullname: str):
        super().__init__(fullname)
        self.fields: list[AvroField] = []


class AvroEnum(AvroNamed):
    __slots__ = ("symbols",)

    def __init__(self, fullname: str, symbols: list[str]):
        super().__init__(fullname)
        self.symbols = symbols


class AvroFixed(AvroNamed):
    __slots__ = ("props", "size")

    def __init__(self, fullname: str, size: int, props: dict[str, Any]):
        super().__init__(fullname)
        self.size = size
        self.props = props


class AvroArray(AvroNode):
    __slots__ = ("items",)

    def __init__(self, items: AvroNode):
        self.items = items


class AvroMap(AvroNode):
    __slots__ = ("values",)

    def __init__(self, values: AvroNode):
        self.values = values


class AvroUnion(AvroNode):
    __slots__ = ("branches", "uid")

    def __init__(self, branches: list[AvroNode], uid: int):
        self.branches = branches
        self.uid = uid


def is_null(node: AvroNode) -> bool:
    return isinstance(node, AvroPrimitive) and node.kind == "null"


def widened_kind(union: AvroUnion) -> str | None:
    """Spark's special cases: ``[int, long]`` -> ``long`` and ``[float, double]`` -> ``double``."""
    others = [b for b in union.branches if not is_null(b)]
    kinds = {b.kind for b in others if isinstance(b, AvroPrimitive)}
    if len(others) == 2 and len(kinds) == 2:
        if kinds == {"int", "long"}:
            return "long"
        if kinds == {"float", "double"}:
            return "double"
    return None


def is_member_union(union: AvroUnion) -> bool:
    """True for a union decoded into an Arrow struct of ``member<i>`` fields."""
    return sum(not is_null(b) for b in union.branches) >= 2 and widened_kind(union) is None


class _SchemaParser:
    """Parses Avro schema JSON into nodes, resolving names per the Avro namespace rules."""

    def __init__(self) -> None:
        self.names: dict[str, AvroNamed] = {}
        self._uids = itertools.count()

    def parse(self, schema: Any, namespace: str) -> AvroNode:
        if isinstance(schema, str):
            if schema in PRIMITIVES:
                return AvroPrimitive(schema, {})
            return self._lookup(schema, namespace)
        if isinstance(schema, list):
            if not schema:
                raise ValueError("invalid Avro schema: empty union")
            return AvroUnion([self.parse(b, namespace) for b in schema], next(self._uids))
        if isinstance(schema, dict):
            kind = schema.get("type")
            if isinstance(kind, (dict, list)):
                return self.parse(kind, namespace)
            if kind in PRIMITIVES:
                return AvroPrimitive(kind, _logical_props(schema))
            if kind in ("record", "error"):
                return self._record(schema, namespace)
            if kind == "enum":
                fullname, _ = self._define_name(schema, namespace)
                symbols = schema.get("symbols")
                if not isinstance(symbols, list) or not all(isinstance(s, str) for s in symbols):
                    raise ValueError(f"invalid Avro enum {fullname!r}: 'symbols' must be a list of strings")
                return self._register(AvroEnum(fullname, list(symbols)))
            if kind == "fixed":
                fullname, _ = self._define_name(schema, namespace)
                size = schema.get("size")
                if not isinstance(size, int) or isinstance(size, bool) or size < 0:
                    raise ValueError(f"invalid Avro fixed {fullname!r}: 'size' must be a non-negative int")
                return self._register(AvroFixed(fullname, size, _logical_props(schema)))
            if kind == "array":
                if "items" not in schema:
                    raise ValueError("invalid Avro array schema: no 'items'")
                return AvroArray(self.parse(schema["items"], namespace))
            if kind == "map":
                if "values" not in schema:
                    raise ValueError("invalid Avro map schema: no 'values'")
                return AvroMap(self.parse(schema["values"], namespace))
            if isinstance(kind, str):
                return self._lookup(kind, namespace)
        raise ValueError(f"invalid Avro schema: {json.dumps(schema)[:200]}")

    def _record(self, schema: dict, namespace: str) -> AvroRecord:
        fullname, inner_namespace = self._define_name(schema, namespace)
        record = self._register(AvroRecord(fullname))
        fields = schema.get("fields")
        if not isinstance(fields, list):
            raise ValueError(f"invalid Avro record {fullname!r}: 'fields' must be a list")
        seen = set()
        for field in fields:
            if not isinstance(field, dict) or not isinstance(field.get("name"), str) or "type" not in field:
                raise ValueError(f"invalid field in Avro record {fullname!r}: {json.dumps(field)[:200]}")
            name = field["name"]
            if name in seen:
                raise ValueError(f"Avro record {fullname!r} has two fields named {name!r}")
            seen.add(name)
            doc = field.get("doc")
            record.fields.append(
                AvroField(
                    name,
                    self.parse(field["type"], inner_namespace),
                    doc if isinstance(doc, str) else None,
                    field.get("default", AvroField.NO_DEFAULT),
                )
            )
        return record

    def _define_name(self, schema: dict, namespace: str) -> tuple[str, str]:
        name = schema.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"invalid Avro schema: named type without a name: {json.dumps(schema)[:200]}")
        if "." in name:
            fullname = name.lstrip(".")
        else:
            own = schema.get("namespace")
            space = own if isinstance(own, str) else namespace
            fullname = f"{space}.{name}" if space else name
        if fullname in self.names:
            raise ValueError(f"Avro type {fullname!r} is defined twice")
        return fullname, fullname.rpartition(".")[0]

    def _register(self, node: Any) -> Any:
        self.names[node.fullname] = node
        return node

    def _lookup(self, name: str, namespace: str) -> AvroNamed:
        if "." not in name and namespace and f"{namespace}.{name}" in self.names:
            return self.names[f"{namespace}.{name}"]
        if name in self.names:
            return self.names[name]
        raise ValueError(f"unknown Avro type name {name!r} (namespace {namespace!r})")


def _logical_props(schema: dict) -> dict[str, Any]:
    return {k: schema[k] for k in ("logicalType", "precision", "scale") if k in schema}


def parse_schema(schema: AvroSchemaJson) -> AvroRecord:
    node = _SchemaParser().parse(schema, "")
    if not isinstance(node, AvroRecord):
        raise ValueError(
            "the top-level Avro schema must be a record to become Arrow columns, "
            f"got {json.dumps(schema)[:200]}"
        )
    return node
