"""Vectorised RecordBatch -> serialized ``tf.train.Example`` encoder.

Every row of a :class:`pyarrow.RecordBatch` becomes one serialized
``tf.train.Example`` whose feature keys are the column names, in a fixed order,
so the output does not change from process to process (tfx_bsl's encoder writes
features in hash-seeded map order).

The encoder does not call protobuf. It computes the size of every nested
message per row with numpy, writes the small per-row headers (tags and varint
lengths) as a byte matrix with a validity mask, reuses the Arrow value buffers
as zero-copy payloads, and concatenates all pieces row by row with
``pyarrow.compute.binary_join_element_wise``. There is no per-row Python loop.

When the optional C extension ``_tfrecordencode`` is built, the columns are
normalised the same way (flat values plus per-row value counts) and handed to
it as numpy / Arrow buffers: one pass computes every row's message size, a
second writes all rows into one preallocated buffer. The bytes are the same
either way; ``BEAM_TENSORIZE_TFRECORD_ENCODER=python`` forces the numpy path
(see ``native``). The numpy path's byte matrices and varints are in ``wire``.

Wire format written (field numbers from ``example.proto`` /
``feature.proto``)::

    Example   { Features features = 1; }
    Features  { map<string, Feature> feature = 1; }   # entry {key = 1; value = 2}
    Feature   { oneof { BytesList bytes_list = 1; FloatList float_list = 2;
                        Int64List int64_list = 3; } }
    BytesList { repeated bytes value = 1; }
    FloatList { repeated float value = 1 [packed]; }   # omitted when empty
    Int64List { repeated int64 value = 1 [packed]; }   # omitted when empty

Map entries are written ascending by the UTF-8 bytes of the key (a key before
the longer keys it prefixes): the bytes of protobuf's deterministic
serialization in C++ and in its pure-Python runtime. (The upb runtime of
Python protobuf 6 puts a prefix key *after* the longer key; the messages are
equal either way.) The unit tests build every expected message entry by entry
with protobuf itself.
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_tensorize.kernels.arrow_types import binary_offsets, is_list_type, list_offsets
from beam_tensorize.kernels.tfrecord.native import native
from beam_tensorize.kernels.tfrecord.wire import (
    ByteRows,
    concat_parts,
    constant,
    masked,
    offsets_buffer,
    scatter_rows,
    varint,
    varint_bytes,
)

__all__ = [
    "check_not_nullable",
    "encode_examples",
    "encode_features",
    "feature_key_order",
    "length_delimited",
]

_LOGGER = logging.getLogger(__name__)

# Field tags: (field_number << 3) | wire_type, wire type 2 = length-delimited.
_TAG_1 = 0x0A  # Example.features, Features.feature, map key, list value
_TAG_2 = 0x12  # map entry value
_KIND_TAGS = {"bytes": 0x0A, "float": 0x12, "int64": 0x1A}

_MAX_BINARY_BYTES = 2**31 - 1
_INT64_MAX = 2**63 - 1


def feature_key_order(names: list[str] | tuple[str, ...]) -> list[str]:
    """Returns feature keys in the order deterministic serialization writes them.

    Keys are sorted by their UTF-8 bytes, a prefix before the longer key: the order of
    protobuf's deterministic serialization in C++ (and in its pure-Python runtime). The
    upb runtime of Python protobuf 6 puts a prefix *after* the longer key; the encoded
    messages are equal either way, and ours do not depend on the protobuf runtime.

    Args:
        names: Feature keys.

    Returns:
        The keys, sorted.

    Example:
        >>> feature_key_order(["b", "ab", "a"])
        ['a', 'ab', 'b']
    """
    return sorted(names, key=lambda name: name.encode("utf-8"))


# --------------------------------------------------------------------------- #
# Column normalisation
# --------------------------------------------------------------------------- #


class _Column:
    """One input column reduced to flat values plus per-row value counts."""

    __slots__ = ("counts", "kind", "name", "valid", "values")

    def __init__(self, name: str, kind: str, counts: np.ndarray, values: object, valid: np.ndarray):
        self.name = name
        self.kind = kind  # "int64" | "float" | "bytes"
        self.counts = counts  # int64 [n], 0 for null lists / null scalars
        self.values = values  # np.int64 / np.float32 ('<f4') array, or pa.LargeBinaryArray
        self.valid = valid  # bool [n]: the row's value is not null


def _is_binary_like(typ: pa.DataType) -> bool:
    return (
        pa.types.is_binary(typ)
        or pa.types.is_large_binary(typ)
        or pa.types.is_string(typ)
        or pa.types.is_large_string(typ)
        or pa.types.is_fixed_size_binary(typ)
        or pa.types.is_binary_view(typ)
        or pa.types.is_string_view(typ)
    )


def _decode_dictionary(array: pa.Array) -> pa.Array:
    if pa.types.is_dictionary(array.type):
        return array.dictionary_decode()
    return array


def _normalise(name: str, array: pa.Array) -> _Column:
    """Reduces a list or scalar column to (kind, counts, flat values)."""
    array = _decode_dictionary(array)
    typ = array.type
    if pa.types.is_binary_view(typ) or pa.types.is_string_view(typ):
        array = array.cast(pa.large_binary())
        typ = array.type
    nulls = array.null_count
    valid = array.is_valid().to_numpy(zero_copy_only=False) if nulls else np.ones(len(array), np.bool_)
    if is_list_type(typ, views=True):
        if nulls or not (pa.types.is_list(typ) or pa.types.is_large_list(typ)):
            counts = pc.fill_null(pc.list_value_length(array), 0).to_numpy().astype(np.int64, copy=False)
        else:
            counts = np.diff(list_offsets(array))
        values = _decode_dictionary(array.flatten())
        if values.null_count:
            first = int(np.flatnonzero(values.is_null().to_numpy(zero_copy_only=False))[0])
            row = int(np.searchsorted(np.cumsum(counts), first, side="right"))
            raise ValueError(
                f"column {name!r}: null element inside a list (row {row}); "
                "a null list is allowed, a null value in a list is not"
            )
    else:
        counts = valid.astype(np.int64)
        values = array.drop_null() if array.null_count else array
    if pa.types.is_decimal(values.type):  # a FloatList, as Spark-TFRecord writes decimals
        values = values.cast(pa.float64())
    vtype = values.type
    if pa.types.is_integer(vtype) or pa.types.is_boolean(vtype):
        if pa.types.is_uint64(vtype) and len(values) and pc.max(values).as_py() > _INT64_MAX:
            raise ValueError(f"column {name!r}: uint64 value does not fit in int64")
        flat = values.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        return _Column(name, "int64", counts, flat, valid)
    if pa.types.is_floating(vtype):
        flat = values.to_numpy(zero_copy_only=False)
        with np.errstate(over="ignore"):
            flat = np.ascontiguousarray(flat, dtype="<f4")
        return _Column(name, "float", counts, flat, valid)
    if _is_binary_like(vtype):
        return _Column(name, "bytes", counts, values.cast(pa.large_binary()), valid)
    if is_list_type(vtype, views=True):
        raise TypeError(f"column {name!r}: nested lists ({typ}) cannot be written as a tf.train.Feature")
    raise TypeError(
        f"column {name!r}: unsupported type {typ}; expected integers, bool, floats, "
        "binary or string (or lists of them)"
    )


# --------------------------------------------------------------------------- #
# Encoding
# --------------------------------------------------------------------------- #


def _segment_sums(element_sizes: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Per-row sums of element sizes, and the cumulative byte offsets of rows."""
    element_offsets = np.zeros(element_sizes.shape[0] + 1, np.int64)
    np.cumsum(element_sizes, out=element_offsets[1:])
    row_ends = np.cumsum(counts)
    row_offsets = np.zeros(counts.shape[0] + 1, np.int64)
    row_offsets[1:] = element_offsets[row_ends]
    return np.diff(row_offsets), row_offsets


# Float lists of one fixed length up to this many values (e.g. scalars) are
# written with the header matrix instead of as a separate piece of the final
# row-wise concatenation; so are int64 columns with at most one value per row.
_MAX_INLINE_FLOAT_VALUES = 4


class _EncodedColumn:
    """Sizes and byte pieces of one column's map entry on every row.

    A row's entry is ``header + payload`` where the header holds the tags and
    varint lengths of the nested messages (see ``header_parts``) and the
    payload is the list content. Small fixed-width payloads (scalars) are kept
    as a byte matrix (``inline``); others as a binary array (``payload``).
    """

    def __init__(self, column: _Column, n: int, omit_nulls: bool = True):
        self.column = column
        #: The rows that hold the feature (all, or only those whose value is not null).
        self.written = column.valid if omit_nulls else np.ones(n, np.bool_)
        counts = column.counts
        present = counts > 0
        self.present = present
        # Map entry key field plus the tag of the value field: constant per column.
        self.key_part = _key_part(column.name)
        self.inline: ByteRows | None = None
        if column.kind == "int64":
            element = varint(column.values.view(np.uint64))
            self.element_varints = element
            payload, self.payload_offsets = _segment_sums(element.lengths, counts)
            if n and counts.max() <= 1:
                self.inline = scatter_rows(element, present)
        elif column.kind == "float":
            payload = counts * 4
            self.payload_offsets = np.zeros(n + 1, np.int64)
            np.cumsum(payload, out=self.payload_offsets[1:])
            width = int(counts.max()) if n else 0
            if 0 < width <= _MAX_INLINE_FLOAT_VALUES and np.all((counts == 0) | (counts == width)):
                matrix = column.values.view(np.uint8).reshape(-1, 4 * width)
                inline = ByteRows(matrix, None, np.full(matrix.shape[0], 4 * width, np.int64))
                self.inline = scatter_rows(inline, present)
        else:
            sizes = pc.binary_length(column.values).to_numpy().astype(np.int64, copy=False)
            self.element_length = varint(sizes)
            encoded = 1 + self.element_length.lengths + sizes
            payload, self.payload_offsets = _segment_sums(encoded, counts)
        self.packed = column.kind != "bytes"
        if self.packed:
            self.payload_length = varint(payload)
            list_size = np.where(present, 1 + self.payload_length.lengths + payload, 0)
        else:
            list_size = payload
        self.list_length = varint(list_size)
        feature_size = 1 + self.list_length.lengths + list_size
        self.feature_length = varint(feature_size)
        entry_size = len(self.key_part) + self.feature_length.lengths + feature_size
        self.entry_length = varint(entry_size)
        self.size = np.where(self.written, 1 + self.entry_length.lengths + entry_size, 0)

    def header_parts(self, n: int) -> list[ByteRows]:
        """The map entry up to the list payload (with an inline payload, all of it)."""
        parts = [
            constant(bytes([_TAG_1]), n),
            self.entry_length,
            constant(self.key_part, n),
            self.feature_length,
            *self.feature_header_parts(n),
        ]
        if self.written.all():
            return parts
        return [masked(part, self.written) for part in parts]

    def feature_header_parts(self, n: int) -> list[ByteRows]:
        """The `Feature` message up to the list payload (with an inline payload, all of it)."""
        parts = [constant(bytes([_KIND_TAGS[self.column.kind]]), n), self.list_length]
        if self.packed:
            parts.append(constant(bytes([_TAG_1]), n, self.present))
            parts.append(masked(self.payload_length, self.present))
        if self.inline is not None:
            parts.append(self.inline)
        return parts

    def payload(self, n: int, binary_type: pa.DataType) -> pa.Array:
        """The list payload of every row as a binary array (zero-copy if possible)."""
        large = binary_type == pa.large_binary()
        if self.column.kind == "int64":
            element = self.element_varints
            data = element.matrix.reshape(-1) if element.mask is None else element.matrix[element.mask]
            data_buffer = pa.py_buffer(data)
        elif self.column.kind == "float":
            data_buffer = pa.py_buffer(self.column.values)
        else:
            values = self.column.values
            headers = concat_parts(
                [constant(bytes([_TAG_1]), len(values)), self.element_length],
                len(values),
                pa.large_binary(),
            )
            joined = pc.binary_join_element_wise(headers, values, pa.scalar(b"", pa.large_binary()))
            # The joined elements are laid out back to back from offset 0, so
            # the row offsets computed from the encoded sizes index into them.
            data_buffer = joined.buffers()[2] or pa.py_buffer(b"")
        offsets = offsets_buffer(self.payload_offsets, large, cumulative=False)
        return pa.Array.from_buffers(binary_type, n, [None, offsets, data_buffer])


_NATIVE_KINDS = {"int64": 0, "float": 1, "bytes": 2}
_MODE_EXAMPLES, _MODE_FEATURES = 0, 1


def _key_part(name: str) -> bytes:
    """A map entry's bytes before its value's length: key field, then the value field's tag."""
    key = name.encode("utf-8")
    return bytes([_TAG_1]) + varint_bytes(len(key)) + key + bytes([_TAG_2])


def _native_column(column: _Column, omit_nulls: bool) -> tuple:
    """One column as the C extension takes it (see _tfrecordencode.c)."""
    counts = np.ascontiguousarray(column.counts, np.int64)
    written = np.ascontiguousarray(column.valid, np.bool_).view(np.uint8) if omit_nulls else None
    value_offsets = None
    if column.kind == "int64":
        values = np.ascontiguousarray(column.values, np.int64)
    elif column.kind == "float":
        values = np.ascontiguousarray(column.values, "<f4")
    else:
        value_offsets, values = binary_offsets(column.values)  # large_binary: int64 offsets
    return (_NATIVE_KINDS[column.kind], _key_part(column.name), counts, written, values, value_offsets)


def _encode_native(
    extension: Any, columns: list[_Column], n: int, omit_nulls: bool, mode: int
) -> pa.BinaryArray | pa.LargeBinaryArray:
    specs = [_native_column(column, omit_nulls) for column in columns]
    offsets, data, large = extension.encode(specs, n, mode, _MAX_BINARY_BYTES)
    binary_type = pa.large_binary() if large else pa.binary()
    return pa.Array.from_buffers(binary_type, n, [None, pa.py_buffer(offsets), pa.py_buffer(data)])


def check_not_nullable(batch: pa.RecordBatch) -> None:
    """Raise ValueError naming the column and row of a null in a field the schema says is not
    nullable (Spark-TFRecord's serializer throws there rather than leaving the value out)."""
    for field, column in zip(batch.schema, batch.columns, strict=True):
        if not field.nullable and column.null_count:
            row = int(np.argmin(np.asarray(column.is_valid(), dtype=bool)))
            raise ValueError(f"column {field.name!r} holds a null (row {row}) but its field is not nullable")


def encode_examples(batch: pa.RecordBatch, omit_nulls: bool = True) -> pa.BinaryArray | pa.LargeBinaryArray:
    r"""Serializes every row of a RecordBatch as a ``tf.train.Example``.

    Each column becomes the feature named after it. Integer and bool columns
    (``int8``..``int64``, ``uint8``..``uint64`` within int64 range) become an
    ``Int64List``, float and decimal columns (``float16``/``float32``/``float64``,
    decimals; cast to float32) a ``FloatList``, binary and string columns a ``BytesList``. A
    column may hold lists (``list``, ``large_list``, ``fixed_size_list``,
    list views) or plain scalars (a list of one value). A null list or null
    scalar is left out of the row's Example (Spark-TFRecord's rule; a reader's
    ``FixedLenFeature`` then gives its ``default_value``); with
    ``omit_nulls=False`` it is written as an empty list of its kind (tfx_bsl's
    encoder instead writes a ``Feature`` with no list set). An empty list is
    written as an empty list. Dictionary encoded values are decoded first.

    The result is byte-identical to protobuf's deterministic serialization of
    each row's ``tf.train.Example`` (see the module docstring for the key
    order). A batch without columns gives empty
    Examples (``b""``, the serialization of ``tf.train.Example()``).

    Args:
        batch: The rows to encode. Column names are the feature keys; any
            characters are allowed.
        omit_nulls: Leave null values out (default) rather than writing an
            empty list.

    Returns:
        A ``pa.BinaryArray`` with one serialized Example per row (a
        ``pa.LargeBinaryArray`` if the batch encodes to 2 GiB or more).

    Raises:
        ValueError: A list contains a null element, two columns share a name, a
            column whose field is not nullable holds a null, or a uint64 value exceeds
            the int64 range.
        TypeError: A column's type cannot be written as a ``tf.train.Feature``
            (nested lists, structs, temporal types, an all-null column of type
            null, ...).

    Example:
        >>> import pyarrow as pa
        >>> batch = pa.RecordBatch.from_pydict({"x": pa.array([[1, 2], None])})
        >>> encode_examples(batch).to_pylist()
        [b'\n\r\n\x0b\n\x01x\x12\x06\x1a\x04\n\x02\x01\x02', b'\n\x00']
        >>> encode_examples(batch, omit_nulls=False).to_pylist()[1]
        b'\n\t\n\x07\n\x01x\x12\x02\x1a\x00'
    """
    names = list(batch.schema.names)
    if len(set(names)) != len(names):
        duplicates = sorted({name for name in names if names.count(name) > 1})
        raise ValueError(f"duplicate column names cannot be feature keys: {duplicates}")
    check_not_nullable(batch)
    n = batch.num_rows
    columns = [_normalise(name, batch.column(name)) for name in feature_key_order(names)]
    if n == 0:
        return pa.array([], pa.binary())
    if not columns:
        return pa.Array.from_buffers(
            pa.binary(), n, [None, pa.py_buffer(np.zeros(n + 1, np.int32)), pa.py_buffer(b"")]
        )
    extension = native()
    if extension is not None:
        result = _encode_native(extension, columns, n, omit_nulls, _MODE_EXAMPLES)
        _LOGGER.debug("encoded %d rows, %d columns (native)", n, len(columns))
        return result
    encoded = [_EncodedColumn(column, n, omit_nulls) for column in columns]
    features_size = encoded[0].size.copy()
    for column in encoded[1:]:
        features_size += column.size
    features_length = varint(features_size)
    total = int(features_size.sum() + features_length.lengths.sum()) + n
    binary_type = pa.large_binary() if total > _MAX_BINARY_BYTES else pa.binary()
    pieces: list[pa.Array] = []
    parts = [constant(bytes([_TAG_1]), n), features_length]
    for column in encoded:
        parts.extend(column.header_parts(n))
        if column.inline is None:
            pieces.append(concat_parts(parts, n, binary_type))
            pieces.append(column.payload(n, binary_type))
            parts = []
    if parts:
        pieces.append(concat_parts(parts, n, binary_type))
    if len(pieces) == 1:
        return pieces[0]
    result = pc.binary_join_element_wise(*pieces, pa.scalar(b"", binary_type))
    _LOGGER.debug("encoded %d rows, %d columns, %d bytes", n, len(columns), total)
    return result


def encode_features(name: str, array: pa.Array) -> pa.BinaryArray | pa.LargeBinaryArray:
    r"""Serializes every row of one column as a ``tf.train.Feature`` message.

    The bytes are those of the column's feature inside `encode_examples` (same types, same
    null handling); `name` is only used in error messages.

    Example:
        >>> encode_features("x", pa.array([[1, 2], None])).to_pylist()
        [b'\x1a\x04\n\x02\x01\x02', b'\x1a\x00']
    """
    if isinstance(array, pa.ChunkedArray):
        array = array.combine_chunks()
    n = len(array)
    if n == 0:
        return pa.array([], pa.binary())
    extension = native()
    if extension is not None:
        return _encode_native(extension, [_normalise(name, array)], n, True, _MODE_FEATURES)
    column = _EncodedColumn(_normalise(name, array), n)
    total = int(column.size.sum())
    binary_type = pa.large_binary() if total > _MAX_BINARY_BYTES else pa.binary()
    header = concat_parts(column.feature_header_parts(n), n, binary_type)
    if column.inline is not None:
        return header
    return pc.binary_join_element_wise(header, column.payload(n, binary_type), pa.scalar(b"", binary_type))


def length_delimited(tag: int, payloads: pa.Array) -> pa.LargeBinaryArray:
    r"""Prefixes each payload with a field tag and its varint length (a protobuf field).

    Null payloads are written as empty fields. The result is always large_binary.

    Example:
        >>> length_delimited(0x0A, pa.array([b"ab", None])).to_pylist()
        [b'\n\x02ab', b'\n\x00']
    """
    if isinstance(payloads, pa.ChunkedArray):
        payloads = payloads.combine_chunks()
    payloads = pc.fill_null(payloads.cast(pa.large_binary()), b"")
    n = len(payloads)
    lengths = pc.binary_length(payloads).to_numpy().astype(np.int64, copy=False)
    header = concat_parts([constant(bytes([tag]), n), varint(lengths)], n, pa.large_binary())
    return pc.binary_join_element_wise(header, payloads, pa.scalar(b"", pa.large_binary()))
