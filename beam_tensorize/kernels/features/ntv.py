"""Select name-term-value (NTV) entries by name and merge several NTV columns into one.

An NTV column is an array of records with fields `name`, `term` and `value` (Avro2TF's
`columnConfig`). The result keeps, per row, the entries of every listed column whose `name`
passes that column's whitelist or blacklist (`"*"` = every name), columns in config order and
entries in their input order.

Example:
    >>> import pyarrow as pa
    >>> from beam_tensorize.config.model import NtvSelection
    >>> batch = pa.RecordBatch.from_pydict({"g": [[{"name": "Genre", "term": "Drama", "value": 1.0},
    ...                                            {"name": "Year", "term": "1999", "value": 1.0}]]})
    >>> select_ntv(batch, [NtvSelection("g", whitelist=("Genre",))]).to_pylist()
    [[{'name': 'Genre', 'term': 'Drama', 'value': 1.0}]]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_tensorize.config.model import ALL_NAMES, NtvSelection
from beam_tensorize.kernels.arrow_types import holds_one_value, list_lengths
from beam_tensorize.kernels.features.expressions import ExpressionEvalError, cast_like_spark

__all__ = [
    "NTV_SEPARATOR",
    "NTV_TYPE",
    "count_ntv_entries",
    "is_ntv",
    "ntv_names_and_terms",
    "ntv_parts",
    "ntv_triples",
    "select_ntv",
]

#: Joins `name` and `term` into one NTV entry for feature lists and hashing (Avro2TF's form).
NTV_SEPARATOR = ","
#: The normalized type of one NTV entry.
NTV_TYPE = pa.struct([("name", pa.string()), ("term", pa.string()), ("value", pa.float64())])


def is_ntv(t: pa.DataType) -> bool:
    """A (large) list of records with `name`, `term` and `value` fields."""
    if not (pa.types.is_list(t) or pa.types.is_large_list(t)):
        return False
    item = t.value_type
    return pa.types.is_struct(item) and all(item.get_field_index(f) >= 0 for f in ("name", "term", "value"))


def select_ntv(batch: pa.RecordBatch, selections: Sequence[NtvSelection]) -> pa.LargeListArray:
    """Merge the selected NTV entries of several columns, row by row.

    Args:
        batch: input rows holding the NTV columns.
        selections: one per NTV column, with its whitelist or blacklist.

    Returns:
        `large_list<struct<name: string, term: string, value: double>>`, one list per row
        (a null NTV column counts as empty).

    Raises:
        ExpressionEvalError: a column is missing or is not an array of name/term/value records.
    """
    rows = batch.num_rows
    row_ids, entries = [], []
    for selection in selections:
        if selection.selects_nothing:  # read only as far as its names (`input_columns`)
            _ntv_column(batch, selection.column, ("name",))
            continue
        column = _ntv_column(batch, selection.column)
        lengths = list_lengths(column)
        flat = column.flatten()
        keep = np.asarray(_keep_mask(pc.struct_field(flat, ["name"]), selection), dtype=bool)
        everything = keep.all()
        entries.append(_normalize(flat if everything else flat.filter(pa.array(keep))))
        owners = np.repeat(np.arange(rows), lengths)
        row_ids.append(owners if everything else owners[keep])
    all_rows = np.concatenate(row_ids) if row_ids else np.zeros(0, np.int64)
    if len(entries) == 1:  # one column's entries are in row order already
        values = entries[0]
    else:  # a stable sort by row keeps config column order, then input order, inside each row
        order = np.argsort(all_rows, kind="stable")
        values = pa.concat_arrays(entries).take(pa.array(order)) if entries else pa.array([], NTV_TYPE)
    counts = np.bincount(all_rows, minlength=rows)
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    return pa.LargeListArray.from_arrays(pa.array(offsets), values)


def _ntv_column(
    batch: pa.RecordBatch, name: str, fields: Sequence[str] = ("name", "term", "value")
) -> pa.Array:
    names = batch.schema.names
    if name not in names:
        folded = [n for n in names if n.lower() == name.lower()]
        if len(folded) != 1:
            raise ExpressionEvalError(f"no NTV column {name!r} in the input; available: {', '.join(names)}")
        name = folded[0]
    column = batch.column(name)
    item = column.type.value_type if hasattr(column.type, "value_type") else None
    if item is None or not pa.types.is_struct(item) or not all(item.get_field_index(f) >= 0 for f in fields):
        raise ExpressionEvalError(
            f"column {name!r} is {column.type}, not an array of name/term/value records"
        )
    if pa.types.is_fixed_size_list(column.type):
        column = column.cast(pa.large_list(item))
    return column


def _keep_mask(names: pa.Array, selection: NtvSelection) -> pa.Array:
    if selection.whitelist is not None:
        if ALL_NAMES in selection.whitelist:
            return pc.is_valid(names)
        return pc.is_in(names, pa.array(selection.whitelist, pa.string())).fill_null(False)
    if ALL_NAMES in selection.blacklist:
        return pa.repeat(pa.scalar(False), len(names))
    blocked = pc.is_in(names, pa.array(selection.blacklist, pa.string())).fill_null(False)
    return pc.invert(blocked)


def _normalize(entries: pa.Array) -> pa.StructArray:
    fields = [pc.struct_field(entries, [entries.type.get_field_index(f)]) for f in NTV_TYPE.names]
    name, term, value = (a.cast(t.type) for a, t in zip(fields, NTV_TYPE))
    return pa.StructArray.from_arrays([name, term, value], fields=list(NTV_TYPE))


def ntv_triples(ntv: pa.Array) -> tuple[np.ndarray, pa.Array, np.ndarray]:
    """(row, `name,term` entry, value) of every record of an NTV column, in row order.

    Names and terms that are not strings are printed as Spark's CAST to STRING does; a null
    name or term is written `null` (as Avro2TF's Scala string formatting does); a null value
    counts as 0. Null rows and null records contribute nothing.

    Raises:
        ExpressionEvalError: `ntv` is not a list of name/term/value records.
    """
    row_of, name, term, values = ntv_parts(ntv)
    return row_of, pc.binary_join_element_wise(name, term, NTV_SEPARATOR), values


def ntv_names_and_terms(ntv: pa.Array) -> tuple[pa.Array, pa.Array]:
    """The names and the terms of every record of an NTV column (as in `ntv_triples`)."""
    records, valid = _records(ntv)
    if valid is not None:
        records = records.filter(pa.array(valid))
    return _text_field(records, "name"), _text_field(records, "term")


def ntv_parts(ntv: pa.Array) -> tuple[np.ndarray, pa.Array, pa.Array, np.ndarray]:
    """(row of each record, its name, its term, its value) of an NTV column, as `ntv_triples`."""
    records, valid = _records(ntv)
    row_of = np.repeat(np.arange(len(ntv), dtype=np.int64), list_lengths(ntv))
    if valid is not None:
        records, row_of = records.filter(pa.array(valid)), row_of[valid]
    name, term = _text_field(records, "name"), _text_field(records, "term")
    item = records.type
    values = pc.struct_field(records, [item.get_field_index("value")])
    try:
        values = values.cast(pa.float64()).fill_null(0.0)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
        raise ExpressionEvalError(f"NTV value must be numeric, got {values.type}") from err
    return row_of, name, term, np.asarray(values, dtype=np.float64)


def _records(ntv: pa.Array) -> tuple[pa.StructArray, np.ndarray | None]:
    """The records of an NTV column's lists, and which are not null (None: all)."""
    item = getattr(ntv.type, "value_type", None)
    if item is None or not pa.types.is_struct(item) or {"name", "term", "value"} - {f.name for f in item}:
        raise ExpressionEvalError(
            f"an NTV column must be a list of records with name, term and value; got {ntv.type}"
        )
    records = ntv.flatten()
    return records, np.asarray(records.is_valid(), dtype=bool) if records.null_count else None


def _text_field(records: pa.StructArray, name: str) -> pa.Array:
    """A field of the records as text (see `ntv_triples`)."""
    values = pc.struct_field(records, [records.type.get_field_index(name)])
    if pa.types.is_large_string(values.type):  # (names and terms are joined: one type for both)
        values = values.cast(pa.string())
    elif not pa.types.is_string(values.type):
        values = cast_like_spark(values, "string")
    return values.fill_null("null") if values.null_count else values


def count_ntv_entries(names: pa.Array, terms: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """The distinct `name,term` entries of NTV records (as `ntv_triples` writes them) and how
    often each occurs, in order of first occurrence; `names` and `terms` as
    `ntv_names_and_terms` gives them.

    Only distinct entries are joined into strings: when every record has the same name (one
    whitelisted name), the terms are counted; otherwise the pairs of dictionary indices of
    name and term (and, if two pairs print alike, as ``"a,b" + "c"`` and ``"a" + "b,c"`` do,
    the joined strings).

    Example:
        >>> entries, counts = count_ntv_entries(pa.array(["g", "g", "h"]), pa.array(["a", "a", "a"]))
        >>> entries.to_pylist(), counts.tolist()
        (['g,a', 'h,a'], [2, 1])
    """
    if holds_one_value(names):
        counted = pc.value_counts(terms)
        joined = pc.binary_join_element_wise(names[0].as_py(), counted.field("values"), NTV_SEPARATOR)
        return joined, np.asarray(counted.field("counts"), np.int64)
    name_codes, term_codes = pc.dictionary_encode(names), pc.dictionary_encode(terms)
    width = max(len(term_codes.dictionary), 1)
    pairs = np.asarray(name_codes.indices, np.int64) * width + np.asarray(term_codes.indices, np.int64)
    counted = pc.value_counts(pa.array(pairs, pa.int64()))
    distinct = np.asarray(counted.field("values"), np.int64)
    entries = pc.binary_join_element_wise(
        name_codes.dictionary.take(pa.array(distinct // width)),
        term_codes.dictionary.take(pa.array(distinct % width)),
        NTV_SEPARATOR,
    )
    if len(pc.unique(entries)) < len(entries):  # two pairs print alike
        counted = pc.value_counts(pc.binary_join_element_wise(names, terms, NTV_SEPARATOR))
        return counted.field("values"), np.asarray(counted.field("counts"), np.int64)
    return entries, np.asarray(counted.field("counts"), np.int64)
