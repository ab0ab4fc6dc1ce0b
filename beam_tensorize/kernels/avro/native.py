"""Native fast path of the Avro decoder: Avro blocks straight into Arrow buffers.

:mod:`beam_tensorize.kernels.avro` decodes blocks with fastavro (one Python dict per record,
then ``pa.array``). When the optional C extension ``_avrodecode`` is built, this module compiles
the writer schema and the wanted (possibly projected) Arrow schema into a small *program*: a
table of builders, one per Arrow array to fill (validity bitmap, int32 offsets, values), and a
graph of nodes, one per Avro type to read. Fields left out by a projection are compiled to skip
nodes, which read past their bytes without building anything (they may be recursive types). The
extension runs the program over a decompressed block without the GIL and returns the buffers,
which are wrapped into arrays with ``pa.Array.from_buffers``, exactly of the wanted types.

Supported: null, boolean, int, long, float, double, bytes, string, fixed, enum (-> string),
record, array, map, unions with null (in any position), ``[int, long]`` / ``[float, double]``
unions, other unions (-> struct of ``member<i>`` fields), and the logical types the fastavro path
maps by a zero-copy view (dates, times, timestamps) or leaves as their underlying type (``uuid``,
unknown ones). Decimals and anything else make :func:`build` return None, and the caller uses
fastavro. Results are identical to the fastavro path's on every schema accepted.

Corrupt or truncated data raises ValueError (bounds are checked on every read). Values nested
more than a few hundred levels deep (possible only through recursive types, which are skipped)
raise :class:`TooDeep` instead, and the caller decodes that block with fastavro.
"""

from __future__ import annotations

import functools
import logging
from array import array
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from beam_tensorize.kernels.avro import schema as _avro_schema
from beam_tensorize.kernels.avro import types as _avro_types
from beam_tensorize.kernels.extensions import load_extension

__all__ = ["NativeDecoder", "TooDeep", "available", "build"]

_LOGGER = logging.getLogger(__name__)

_VERSION = 1

# Builder kinds (see _avrodecode.c).
_B_NULL, _B_BOOL, _B_FIXED, _B_VAR, _B_STRUCT, _B_LIST = range(6)
# Node operations.
(
    _OP_NULL,
    _OP_BOOL,
    _OP_INT,
    _OP_FLOAT,
    _OP_DOUBLE,
    _OP_BYTES,
    _OP_STRING,
    _OP_FIXED,
    _OP_ENUM,
    _OP_RECORD,
    _OP_ARRAY,
    _OP_MAP,
    _OP_UNION,
) = range(13)


@functools.lru_cache(maxsize=1)
def _extension() -> Any:
    return load_extension("beam_tensorize.kernels.avro._avrodecode", _VERSION, "Avro decoder", "fastavro")


def available() -> bool:
    """True if the C extension is built and importable."""
    return _extension() is not None


class _Unsupported(Exception):
    """The schema needs something the native decoder does not do."""


class _Out:
    """One builder and the Arrow type it becomes; children as the Arrow type nests them."""

    __slots__ = ("builder", "children", "type")

    def __init__(self, builder: int, type_: pa.DataType):
        self.builder = builder
        self.type = type_
        self.children: list[_Out] = []


def _is_int_like(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_temporal(t)


class _Compiler:
    def __init__(self) -> None:
        self.builders: list[list[Any]] = []
        self.nodes: list[list[int]] = []
        self.blob = bytearray()
        self._skips: dict[str, int] = {}

    # Builders, from the Arrow type alone.

    def alloc(self, t: pa.DataType, nullable: bool) -> _Out:
        index = len(self.builders)
        spec: list[Any] = [0, int(nullable), 0, []]
        self.builders.append(spec)
        out = _Out(index, t)
        if pa.types.is_null(t):
            spec[0] = _B_NULL
        elif pa.types.is_boolean(t):
            spec[0] = _B_BOOL
        elif (_is_int_like(t) and not pa.types.is_interval(t)) or pa.types.is_floating(t):
            spec[0], spec[2] = _B_FIXED, t.bit_width // 8
        elif pa.types.is_fixed_size_binary(t) and not pa.types.is_decimal(t):
            spec[0], spec[2] = _B_FIXED, t.byte_width
        elif pa.types.is_string(t) or pa.types.is_binary(t):
            spec[0] = _B_VAR
        elif pa.types.is_map(t):
            spec[0] = _B_LIST
            entries = _Out(len(self.builders), pa.struct([t.key_field, t.item_field]))
            self.builders.append([_B_STRUCT, 0, 0, []])
            entries.children = [self.alloc(t.key_type, False), self.alloc(t.item_type, t.item_field.nullable)]
            self.builders[entries.builder][3] = [c.builder for c in entries.children]
            out.children = [entries]
        elif pa.types.is_list(t):
            spec[0] = _B_LIST
            out.children = [self.alloc(t.value_type, t.value_field.nullable)]
        elif pa.types.is_struct(t):
            spec[0] = _B_STRUCT
            out.children = [self.alloc(t.field(i).type, t.field(i).nullable) for i in range(t.num_fields)]
        else:
            raise _Unsupported(f"Arrow type {t}")
        spec[3] = [c.builder for c in out.children]
        return out

    def program(self, root: int) -> tuple[bytes, bytes]:
        words = array("q", [_VERSION, len(self.builders), len(self.nodes), root])
        for kind, nullable, width, children in self.builders:
            words.extend([kind, nullable, width, len(children), *children])
        for op, builder, positive, params in self.nodes:
            words.extend([op, builder, int(positive), len(params), *params])
        if words.itemsize != 8:
            raise _Unsupported("array('q') is not 64-bit")
        return words.tobytes(), bytes(self.blob)

    # Nodes.

    def _node(self, op: int, builder: int, positive: bool, params: Sequence[int]) -> int:
        self.nodes.append([op, builder, positive, list(params)])
        return len(self.nodes) - 1

    def value(self, node: Any, out: _Out) -> int:
        """A node decoding `node` into `out` (whose type is the Typer's type of `node`, maybe pruned)."""
        t = out.type
        builder = out.builder
        if isinstance(node, _avro_schema.AvroUnion):
            return self._union(node, out)
        if isinstance(node, _avro_schema.AvroPrimitive):
            typed = _avro_types.primitive_type(node.kind, node.props)
            if typed.convert is not None or typed.final != t:
                raise _Unsupported(f"{node.kind} {node.props} as {t}")
            kind = node.kind
            if kind == "null":
                return self._node(_OP_NULL, builder, False, [])
            if kind == "boolean":
                return self._node(_OP_BOOL, builder, True, [])
            if kind in ("int", "long"):
                return self._node(_OP_INT, builder, True, [t.bit_width // 8])
            if kind == "float":
                return self._node(_OP_FLOAT, builder, True, [4])
            if kind == "double":
                return self._node(_OP_DOUBLE, builder, True, [])
            if kind == "bytes":
                return self._node(_OP_BYTES, builder, True, [])
            return self._node(_OP_STRING, builder, True, [])
        if isinstance(node, _avro_schema.AvroEnum):
            if t != pa.string():
                raise _Unsupported(f"enum as {t}")
            return self._node(_OP_ENUM, builder, True, self._symbols(node.symbols))
        if isinstance(node, _avro_schema.AvroFixed):
            typed = _avro_types.fixed_type(node)
            if typed.convert is not None or t != pa.binary(node.size):
                raise _Unsupported(f"fixed {node.props} as {t}")
            return self._node(_OP_FIXED, builder, node.size > 0, [node.size])
        if isinstance(node, _avro_schema.AvroRecord):
            if not pa.types.is_struct(t):
                raise _Unsupported(f"record as {t}")
            return self._record(node, out)
        if isinstance(node, _avro_schema.AvroArray):
            if not pa.types.is_list(t):
                raise _Unsupported(f"array as {t}")
            return self._node(_OP_ARRAY, builder, True, [self.value(node.items, out.children[0])])
        if isinstance(node, _avro_schema.AvroMap):
            if not pa.types.is_map(t) or t.key_type != pa.string():
                raise _Unsupported(f"map as {t}")
            entries = out.children[0]
            value = self.value(node.values, entries.children[1])
            return self._node(_OP_MAP, builder, True, [entries.builder, entries.children[0].builder, value])
        raise _Unsupported(f"schema node {node!r}")

    def _record(self, node: Any, out: _Out) -> int:
        t = out.type
        wanted = {t.field(i).name: i for i in range(t.num_fields)}
        found = [f.name for f in node.fields if f.name in wanted]
        if len(found) != len(wanted):
            raise _Unsupported(f"fields {sorted(set(wanted) - set(found))} not in {node.fullname}")
        children = []
        for f in node.fields:
            if f.name in wanted:
                children.append(self.value(f.node, out.children[wanted[f.name]]))
            else:
                children.append(self.skip(f.node))
        positive = any(self.nodes[c][2] for c in children)
        return self._node(_OP_RECORD, out.builder, positive, [len(children), *children])

    def _union(self, node: Any, out: _Out) -> int:
        t = out.type
        builder = out.builder
        others = [b for b in node.branches if not _avro_schema.is_null(b)]
        has_null = len(others) < len(node.branches)
        branches: list[int] = []
        if has_null and not pa.types.is_null(t) and not self.builders[builder][1]:
            raise _Unsupported("a union with null into a non-nullable builder")
        widened = _avro_schema.widened_kind(node)
        if len(others) > 1 and widened is None:  # a struct of member<i> fields
            if not pa.types.is_struct(t) or t.num_fields != len(others):
                raise _Unsupported(f"member union as {t}")
            index = 0
            for b in node.branches:
                if _avro_schema.is_null(b):
                    branches += [-1, 0]
                else:
                    branches += [self.value(b, out.children[index]), index]
                    index += 1
            return self._node(_OP_UNION, builder, True, [1, len(node.branches), *branches])
        if not others and not pa.types.is_null(t):
            raise _Unsupported(f"null union as {t}")
        if widened is not None and t != _avro_types.ARROW_PRIMITIVES[widened]:
            raise _Unsupported(f"widened union as {t}")
        for b in node.branches:
            if _avro_schema.is_null(b):
                branches += [-1, 0]
            elif widened == "long":
                branches += [self._node(_OP_INT, builder, True, [8]), 0]
            elif widened == "double":
                op, params = (_OP_FLOAT, [8]) if b.kind == "float" else (_OP_DOUBLE, [])
                branches += [self._node(op, builder, True, params), 0]
            else:
                branches += [self.value(b, out), 0]
        return self._node(_OP_UNION, builder, True, [0, len(node.branches), *branches])

    def skip(self, node: Any) -> int:
        """A node reading past a value of `node`, building nothing."""
        if isinstance(node, _avro_schema.AvroNamed) and node.fullname in self._skips:
            return self._skips[node.fullname]
        if isinstance(node, _avro_schema.AvroPrimitive):
            op, params = {
                "null": (_OP_NULL, []),
                "boolean": (_OP_BOOL, []),
                "int": (_OP_INT, [8]),
                "long": (_OP_INT, [8]),
                "float": (_OP_FLOAT, [4]),
                "double": (_OP_DOUBLE, []),
                "bytes": (_OP_BYTES, []),
                "string": (_OP_BYTES, []),
            }[node.kind]
            return self._node(op, -1, node.kind != "null", params)
        if isinstance(node, _avro_schema.AvroEnum):
            index = self._node(_OP_ENUM, -1, True, [len(node.symbols)] + [0] * (len(node.symbols) + 1))
        elif isinstance(node, _avro_schema.AvroFixed):
            index = self._node(_OP_FIXED, -1, node.size > 0, [node.size])
        elif isinstance(node, _avro_schema.AvroRecord):
            # Defined before its fields, so a recursive reference finds it (and counts as
            # possibly empty, which only makes a size check more lenient).
            index = self._node(_OP_RECORD, -1, False, [])
            self._skips[node.fullname] = index
            children = [self.skip(f.node) for f in node.fields]
            self.nodes[index][2] = any(self.nodes[c][2] for c in children)
            self.nodes[index][3] = [len(children), *children]
            return index
        elif isinstance(node, _avro_schema.AvroArray):
            return self._node(_OP_ARRAY, -1, True, [self.skip(node.items)])
        elif isinstance(node, _avro_schema.AvroMap):
            return self._node(_OP_MAP, -1, True, [0, 0, self.skip(node.values)])
        elif isinstance(node, _avro_schema.AvroUnion):
            branches: list[int] = []
            for b in node.branches:
                branches += [-1 if _avro_schema.is_null(b) else self.skip(b), 0]
            return self._node(_OP_UNION, -1, True, [0, len(node.branches), *branches])
        else:
            raise _Unsupported(f"schema node {node!r}")
        self._skips[node.fullname] = index
        return index

    def _symbols(self, symbols: list[str]) -> list[int]:
        offsets = [len(symbols), len(self.blob)]
        for s in symbols:
            self.blob += s.encode("utf-8")
            offsets.append(len(self.blob))
        return offsets

    def compile(self, record: Any, arrow_schema: pa.Schema) -> tuple[_Out, int]:
        root = self.alloc(pa.struct(list(arrow_schema)), False)
        return root, self._record(record, root)


class TooDeep(Exception):
    """Values nest deeper than the native decoder goes (recursive types left out): use fastavro."""


_TOO_DEEP = "values nested too deeply"


class NativeDecoder:
    """Decodes blocks of one writer schema into one Arrow schema with the C extension."""

    TooDeep = TooDeep

    def __init__(self, program: Any, root: _Out):
        self._program = program
        self._root = root
        self._decode = _extension().decode

    def decode(self, data: bytes, count: int, boundaries: bytes | None = None) -> tuple[list[pa.Array], int]:
        """Decodes `count` records from `data`: one block's records, or several blocks' back to
        back with `boundaries` (per block, int64 records and bytes at its end, cumulative); a
        block not ending at its boundary raises ValueError "block boundary".

        Returns:
            The top-level columns, and the number of bytes the records took.

        Raises:
            ValueError: the data is corrupt or truncated; see :meth:`error_details`.
            TooDeep: values nest deeper than the decoder's limit (only possible through
                recursive types, which are skipped); the data may be valid.
        """
        try:
            if boundaries is None:
                parts, used = self._decode(self._program, data, count)
            else:
                parts, used = self._decode(self._program, data, count, boundaries)
        except ValueError as e:
            if self.error_details(e)[1] == _TOO_DEEP:
                raise TooDeep(str(e)) from None
            raise
        return [_assemble(c, parts) for c in self._root.children], used

    @staticmethod
    def error_details(error: ValueError) -> tuple[int, str]:
        """(index of the record that failed, problem) of an error raised by :meth:`decode`."""
        args = error.args
        if len(args) == 2 and isinstance(args[0], int):
            return args[0], str(args[1])
        return 0, str(error)


def _assemble(out: _Out, parts: list[tuple]) -> pa.Array:
    length, null_count, validity, offsets, values = parts[out.builder]
    t = out.type
    if pa.types.is_null(t):
        return pa.nulls(length)
    bitmap = None if validity is None else pa.py_buffer(validity)
    if pa.types.is_struct(t) or pa.types.is_list(t) or pa.types.is_map(t):
        children = [_assemble(c, parts) for c in out.children]
        buffers = [bitmap] if offsets is None else [bitmap, pa.py_buffer(offsets)]
        return pa.Array.from_buffers(t, length, buffers, null_count, children=children)
    buffers = [bitmap]
    if offsets is not None:
        buffers.append(pa.py_buffer(offsets))
    buffers.append(pa.py_buffer(values))
    return pa.Array.from_buffers(t, length, buffers, null_count)


def build(record: Any, arrow_schema: pa.Schema) -> NativeDecoder | None:
    """A native decoder of `record` (a parsed writer schema) into `arrow_schema`, if possible.

    Args:
        record: the writer schema, parsed (``avro._parse``).
        arrow_schema: top-level fields of `record`, of the types :class:`avro.Typer` gives them
            or projections of those (nested fields left out).

    Returns:
        The decoder, or None when the extension is not built or the schema needs something it
        does not support (then use fastavro).
    """
    module = _extension()
    if module is None:
        return None
    compiler = _Compiler()
    try:
        root, node = compiler.compile(record, arrow_schema)
        words, blob = compiler.program(node)
    except _Unsupported as e:
        _LOGGER.debug("native Avro decoder not used: %s", e)
        return None
    return NativeDecoder(module.compile(words, blob), root)
