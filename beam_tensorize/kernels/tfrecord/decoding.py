"""Serialized TFRecord payloads -> Arrow: decoding with a schema, and schema inference.

Records are parsed into tfx_bsl's raw columns by `raw_decoding` (one ``large_list`` column per
feature, ``large_list<large_list<...>>`` for SequenceExample feature lists; its names are
importable from here too). `conform` turns those into the columns a schema asks for;
`SchemaInference` collects what a sample of records holds and derives a schema with these
rules:

* Int64List -> int64, FloatList -> float32, BytesList -> string (binary if a value is not
  UTF-8);
* a feature that never holds more than one value in a record is a scalar (a record without
  it, or with an empty list, reads as null — Spark-TFRecord's rule), otherwise a list;
* a SequenceExample feature list -> list of lists.

Record types: "Example", "SequenceExample" and "ByteArray" (each record as it is, in one
binary column named `byteArray`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_tensorize.kernels.arrow_types import is_list_type, leaf_type, list_depth, list_lengths
from beam_tensorize.kernels.tfrecord.raw_decoding import (
    BYTE_ARRAY_COLUMN,
    RECORD_TYPES,
    RecordError,
    check_record_type,
    raw_decode,
)

__all__ = [
    "BYTE_ARRAY_COLUMN",
    "RECORD_TYPES",
    "FeatureSummary",
    "RecordError",
    "SchemaInference",
    "conform",
    "decode_records",
    "raw_decode",
    "widened_type",
]

_KINDS = {pa.int64(): "int64", pa.float32(): "float", pa.large_binary(): "bytes"}


# --------------------------------------------------------------------------- #
# Schemas
# --------------------------------------------------------------------------- #


def widened_type(typ: pa.DataType) -> pa.DataType:
    """The type a column of `typ` reads back as after a write (the documented widening).

    Integers and bool -> int64, floats -> float32, strings -> string, binary -> binary;
    lists keep their nesting with widened values.

    Example:
        >>> widened_type(pa.list_(pa.int8()))
        ListType(list<item: int64>)
    """
    if pa.types.is_dictionary(typ):
        return widened_type(typ.value_type)
    if is_list_type(typ):
        return pa.list_(widened_type(typ.value_type))
    if pa.types.is_integer(typ) or pa.types.is_boolean(typ):
        return pa.int64()
    if pa.types.is_floating(typ) or pa.types.is_decimal(typ):
        return pa.float32()
    if pa.types.is_string(typ) or pa.types.is_large_string(typ) or pa.types.is_string_view(typ):
        return pa.string()
    if (
        pa.types.is_binary(typ)
        or pa.types.is_large_binary(typ)
        or pa.types.is_binary_view(typ)
        or pa.types.is_fixed_size_binary(typ)
    ):
        return pa.binary()
    raise TypeError(f"type {typ} cannot be stored in a tf.train.Feature")


def _kind_of_type(typ: pa.DataType) -> str:
    typ = leaf_type(typ)
    if pa.types.is_integer(typ) or pa.types.is_boolean(typ):
        return "int64"
    if pa.types.is_floating(typ) or pa.types.is_decimal(typ):
        return "float"  # decimals are written as FloatList (Spark-TFRecord's rule)
    return "bytes"


def _null_row_count(array: pa.Array) -> int:
    return array.null_count if not pa.types.is_null(array.type) else len(array)


def _scalar_from_lists(name: str, raw: pa.Array, where: str, first_index: int) -> pa.Array:
    """The one value of each list (null for a null or empty list)."""
    lengths = list_lengths(raw)
    too_long = np.flatnonzero(lengths > 1)
    if too_long.size:
        row = int(too_long[0])
        problem = f"feature {name!r} holds {lengths[row]} values; the schema says a scalar"
        raise RecordError(where, first_index + row, problem)
    values = raw.flatten()
    if len(values) == 0:
        return pa.nulls(len(raw), values.type)
    offsets = np.asarray(raw.offsets, dtype=np.int64)
    has_one = lengths == 1
    taken = values.take(pa.array(np.where(has_one, offsets[:-1] - offsets[0], 0)))
    return pc.if_else(pa.array(has_one), taken, pa.scalar(None, values.type))


def _cast_values(name: str, values: pa.Array, target: pa.DataType, where: str, first_index: int) -> pa.Array:
    try:
        if pa.types.is_decimal(leaf_type(target)) and pa.types.is_floating(leaf_type(values.type)):
            values = _rounded_half_up(values, leaf_type(target).scale)
        return values.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as error:
        raise RecordError(
            where, first_index, f"feature {name!r} cannot be read as {target}: {error}"
        ) from None


def _map_leaves(column: pa.Array, leaves: Callable[[pa.Array], pa.Array]) -> pa.Array:
    """`column` (scalars, or lists of any depth) with its flat values replaced by
    `leaves(values)` (as large lists, nulls kept)."""
    if not is_list_type(column.type):
        return leaves(column)
    offsets = pa.array(np.asarray(column.offsets, dtype=np.int64) - column.offsets[0].as_py())
    inner = _map_leaves(column.flatten(), leaves)
    return pa.LargeListArray.from_arrays(offsets, inner, mask=column.is_null() if column.null_count else None)


def _rounded_half_up(values: pa.Array, scale: int) -> pa.Array:
    """Float values (any list depth) rounded to `scale` decimal places with ties away from zero,
    as Spark stores a float in a decimal column (`Decimal.changePrecision`, `ROUND_HALF_UP`:
    2.5 -> 3, -2.5 -> -3; Arrow's own cast rounds ties to even, 2.5 -> 2)."""
    return _map_leaves(
        values, lambda flat: pc.round(flat.cast(pa.float64()), scale, round_mode="half_towards_infinity")
    )


#: Kinds a field of another kind takes when the schema was inferred, as the inference widened
#: it: int64 values read into a float field, numbers into a string field (as text). A given
#: schema takes none (Spark-TFRecord's deserializer refuses every other kind).
_PROMOTIONS = {("int64", "float"), ("int64", "bytes"), ("float", "bytes")}


def _promote_leaves(column: pa.Array, kind: str) -> pa.Array:
    """`column` (lists of int64 / float values, any depth) with its values as `kind`: floats,
    or text as Java prints numbers (`1`, `0.5`, `1.0`: a float always shows a fraction)."""
    return _map_leaves(column, lambda values: _promoted(values, kind))


def _promoted(values: pa.Array, kind: str) -> pa.Array:
    if kind == "float":
        return values.cast(pa.float32())
    text = values.cast(pa.large_string())
    if pa.types.is_floating(values.type):
        plain = pc.match_substring_regex(text, r"^-?[0-9]+$")
        suffix = pa.scalar(".0", pa.large_string())
        text = pc.if_else(
            plain, pc.binary_join_element_wise(text, suffix, pa.scalar("", pa.large_string())), text
        )
    return text.cast(pa.large_binary())


def conform(
    raw: pa.RecordBatch,
    schema: pa.Schema,
    where: str = "records",
    first_index: int = 0,
    widened: bool = False,
) -> pa.RecordBatch:
    """Turns raw decoded columns (see `raw_decode`) into the columns of `schema`.

    A feature the records lack reads as nulls; features not in the schema are dropped. A
    scalar field takes the one value of each record (null for none); a list field the list;
    a list-of-lists field a SequenceExample feature list.

    With `widened` (the schema was inferred, see `SchemaInference`), int64 values read into a
    float field and numbers into a string field (as Java prints them), as the inference widened
    the field for records of mixed kinds; without it (a given schema) a feature of another kind
    than its field is an error, as in Spark-TFRecord.

    Raises:
        RecordError: a feature's kind does not match its field, a scalar field meets a record
            with several values, or bytes are not UTF-8 for a string field. The message names
            `where`, the record (counting from `first_index`) and the feature; for a problem of
            the whole batch, its first record.

    Example:
        >>> raw = pa.RecordBatch.from_pydict({"x": pa.array([[1], []], pa.large_list(pa.int64()))})
        >>> conform(raw, pa.schema([("x", pa.int64()), ("y", pa.list_(pa.string()))])).to_pydict()
        {'x': [1, None], 'y': [None, None]}
    """
    n = raw.num_rows
    columns = []
    for field in schema:
        target = field.type
        if field.name not in raw.schema.names or pa.types.is_null(raw.schema.field(field.name).type):
            columns.append(pa.nulls(n, target))
            continue
        column = raw.column(field.name)
        if pa.types.is_null(target):  # inferred from records where it was always empty
            values = column.flatten()
            while is_list_type(values.type):
                values = values.flatten()
            if len(values):
                row = int(np.flatnonzero(list_lengths(column) > 0)[0]) if list_depth(column.type) == 1 else 0
                problem = (
                    f"feature {field.name!r} holds values, but the schema says null (it was empty "
                    "in every record the schema was inferred from): infer from more records, or "
                    "give a schema"
                )
                raise RecordError(where, first_index + row, problem)
            columns.append(pa.nulls(n))
            continue
        have_kind = _KINDS.get(leaf_type(column.type))
        want_kind = _kind_of_type(target)
        first = first_index + int(np.argmax(np.asarray(column.is_valid(), dtype=bool)))
        if have_kind is None:  # no values in any record: only empty lists, any kind fits
            columns.append(_cast_values(field.name, column, target, where, first_index))
            continue
        if have_kind != want_kind:
            if not widened or (have_kind, want_kind) not in _PROMOTIONS:
                problem = f"feature {field.name!r} holds {have_kind} values; the schema says {target}"
                raise RecordError(where, first, problem)
            column = _promote_leaves(column, want_kind)
        have_depth, want_depth = list_depth(column.type), max(list_depth(target), 1)
        if have_depth != want_depth:
            what = "a feature list" if have_depth == 2 else "a feature"
            raise RecordError(where, first, f"feature {field.name!r} is {what}; the schema says {target}")
        if list_depth(target) == 0:
            column = _scalar_from_lists(field.name, column, where, first_index)
        columns.append(_cast_values(field.name, column, target, where, first))
    for field, column in zip(schema, columns, strict=True):
        if not field.nullable and _null_row_count(column):
            row = first_index + int(np.argmin(np.asarray(column.is_valid(), dtype=bool)))
            problem = f"feature {field.name!r} is missing; the schema says it cannot be null"
            raise RecordError(where, row, problem)
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def decode_records(
    records: Sequence[bytes],
    schema: pa.Schema,
    record_type: str = "Example",
    where: str = "records",
    on_bad: Callable[[int, str], None] | None = None,
    first_index: int = 0,
    widened: bool = False,
) -> pa.RecordBatch:
    """Serialized records -> a RecordBatch of `schema`.

    Args:
        records: serialized Examples / SequenceExamples (or any bytes for "ByteArray").
        schema: the columns wanted (see `conform`).
        record_type: "Example", "SequenceExample" or "ByteArray".
        where: names the records in errors (e.g. a file name).
        on_bad: without it a bad record raises `RecordError`; with it, it is called as
            `on_bad(index, message)` and the record is left out.
        first_index: the number of the first record (in messages and `on_bad` indices), e.g.
            its position in its file.
        widened: `schema` was inferred: values of a narrower kind widen into it (see `conform`).

    Example:
        >>> from beam_tensorize.kernels.tfrecord.example_encoder import encode_examples
        >>> records = encode_examples(pa.RecordBatch.from_pydict({"x": [[1, 2], [3]]})).to_pylist()
        >>> decode_records(records, pa.schema([("x", pa.list_(pa.int64()))])).to_pydict()
        {'x': [[1, 2], [3]]}
    """
    records = list(records)
    if record_type == "ByteArray":
        return pa.RecordBatch.from_arrays(
            [pa.array(records, pa.binary()).cast(schema.field(0).type)], schema=schema
        )
    try:
        return conform(raw_decode(records, record_type), schema, where, first_index, widened)
    except RecordError as error:
        if on_bad is None and len(records) == 1:
            raise error.moved(where, first_index) from None
    parts = []
    for index, record in enumerate(records, first_index):
        try:
            parts.append(conform(raw_decode([record], record_type), schema, where, index, widened))
        except RecordError as error:
            if on_bad is None:
                raise error.moved(where, index) from None
            on_bad(index, str(error.moved(where, index)))
    if not parts:
        return pa.RecordBatch.from_pylist([], schema=schema)
    return pa.Table.from_batches(parts, schema=schema).combine_chunks().to_batches()[0]


# --------------------------------------------------------------------------- #
# Inference
# --------------------------------------------------------------------------- #


@dataclasses.dataclass
class FeatureSummary:
    """What a sample showed of one feature.

    Attributes:
        name: the feature key.
        kinds: list kinds seen ("int64", "float", "bytes"); several widen (see `arrow_type`).
        feature_list: seen as a SequenceExample feature list.
        context: seen as a plain (context) feature.
        records: records holding it.
        max_values: most values in one record (one step, for feature lists).
        utf8: every bytes value seen is UTF-8.
    """

    name: str
    kinds: set = dataclasses.field(default_factory=set)
    feature_list: bool = False
    context: bool = False
    records: int = 0
    max_values: int = 0
    utf8: bool = True

    def merge(self, other: FeatureSummary) -> None:
        self.kinds |= other.kinds
        self.feature_list |= other.feature_list
        self.context |= other.context
        self.records += other.records
        self.max_values = max(self.max_values, other.max_values)
        self.utf8 &= other.utf8

    def arrow_type(self) -> pa.DataType | None:
        """The inferred type (None if no record held a value of a known kind), by
        Spark-TFRecord's rules: kinds seen in different records widen int64 -> float ->
        string (bytes that are not all UTF-8: binary); a feature only ever empty is null."""
        if not self.kinds:
            return None
        if "bytes" in self.kinds:
            leaf = pa.string() if self.utf8 else pa.binary()
        elif "float" in self.kinds:
            leaf = pa.float32()
        else:
            leaf = pa.int64()
        if self.feature_list:
            return pa.list_(pa.list_(leaf))
        if self.max_values == 0:
            return pa.null()
        return leaf if self.max_values == 1 else pa.list_(leaf)

    def describe(self) -> str:
        typ = self.arrow_type()
        shown = "no values" if typ is None else str(typ)
        return f"{self.name}: {shown} (in {self.records} records, at most {self.max_values} values)"


class SchemaInference:
    """Accumulates `FeatureSummary`s over decoded samples; `schema()` applies the rules.

    Example:
        >>> from beam_tensorize.kernels.tfrecord.example_encoder import encode_examples
        >>> records = encode_examples(pa.RecordBatch.from_pydict(
        ...     {"id": [1, 2], "tags": [["a"], ["b", "c"]], "w": [0.5, 1.5]})).to_pylist()
        >>> inference = SchemaInference()
        >>> inference.observe(records)
        >>> inference.schema()
        id: int64
        tags: list<item: string>
          child 0, item: string
        w: float
    """

    def __init__(self, record_type: str = "Example"):
        check_record_type(record_type)
        self.record_type = record_type
        self.features: dict[str, FeatureSummary] = {}
        self.records = 0

    def observe(self, records: Sequence[bytes], where: str = "records") -> None:
        """Adds what `records` hold (a batch mixing kinds is observed record by record)."""
        records = list(records)
        self.records += len(records)
        if self.record_type == "ByteArray":
            return
        try:
            raw = raw_decode(records, self.record_type)
        except RecordError as error:
            if len(records) == 1:
                raise error.moved(where, error.index) from None
            for index, record in enumerate(records):
                try:
                    self._observe_raw(raw_decode([record], self.record_type))
                except RecordError as single:
                    raise single.moved(where, index) from None
            return
        self._observe_raw(raw)

    def _observe_raw(self, raw: pa.RecordBatch) -> None:
        for name, column in zip(raw.schema.names, raw.columns, strict=True):
            summary = FeatureSummary(name)
            summary.records = len(column) - _null_row_count(column)
            if not pa.types.is_null(column.type):
                summary.kinds.add(_KINDS[leaf_type(column.type)])
                if list_depth(column.type) == 2:
                    summary.feature_list = True
                    steps = column.flatten()
                    summary.max_values = int(list_lengths(steps).max()) if len(steps) else 0
                else:
                    summary.context = True
                    summary.max_values = int(list_lengths(column).max()) if len(column) else 0
                if summary.kinds == {"bytes"}:
                    values = column.flatten().flatten() if summary.feature_list else column.flatten()
                    try:
                        values.cast(pa.large_string())
                    except pa.ArrowInvalid:
                        summary.utf8 = False
            self.features.setdefault(name, FeatureSummary(name)).merge(summary)

    def merge(self, other: SchemaInference) -> None:
        """Adds another accumulator's observations."""
        self.records += other.records
        for name, summary in other.features.items():
            self.features.setdefault(name, FeatureSummary(name)).merge(summary)

    def schema(self) -> pa.Schema:
        """The inferred schema, fields by name; features that never held a value are left out.

        Raises:
            ValueError: a feature was seen both as a feature and as a feature list.
        """
        if self.record_type == "ByteArray":
            return pa.schema([(BYTE_ARRAY_COLUMN, pa.binary())])
        fields = []
        for name in sorted(self.features):
            summary = self.features[name]
            if summary.feature_list and summary.context:
                raise ValueError(
                    f"feature {name!r} is a feature in some records and a feature list in others"
                )
            typ = summary.arrow_type()
            if typ is not None:
                fields.append(pa.field(name, typ))
        return pa.schema(fields)

    def report(self) -> str:
        """One line per feature seen: name, inferred type, how many records held it."""
        lines = [f"{self.records} records sampled, {len(self.features)} features:"]
        lines += [f"  {self.features[name].describe()}" for name in sorted(self.features)]
        return "\n".join(lines)
