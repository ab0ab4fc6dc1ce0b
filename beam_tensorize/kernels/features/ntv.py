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
from beam_tensorize.kernels.arrow_types import list_lengths
from beam_tensorize.kernels.features.expressions import ExpressionEvalError, cast_like_spark

__all__ = [
    "NTV_SEPARATOR",
    "NTV_TYPE",
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


def _ntv_column(batch: pa.RecordBatch, name: str) -> pa.Array:
    names = batch.schema.names
    if name not in names:
        folded = [n for n in names if n.lower() == name.lower()]
        if len(folded) != 1:
            raise ExpressionEvalError(f"no NTV column {name!r} in the input; available: {', '.join(names)}")
        name = folded[0]
    column = batch.column(name)
    item = column.type.value_type if hasattr(column.type, "value_type") else None
    if (
        item is None
        or not pa.types.is_struct(item)
        or not all(item.get_field_index(f) >= 0 for f in ("name", "term", "value"))
    ):
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
    _, name, term, _ = ntv_parts(ntv)
    return name, term


def ntv_parts(ntv: pa.Array) -> tuple[np.ndarray, pa.Array, pa.Array, np.ndarray]:
    """(row of each record, its name, its term, its value) of an NTV column, as `ntv_triples`."""
    item = getattr(ntv.type, "value_type", None)
    if item is None or not pa.types.is_struct(item) or {"name", "term", "value"} - {f.name for f in item}:
        raise ExpressionEvalError(
            f"an NTV column must be a list of records with name, term and value; got {ntv.type}"
        )
    row_of = np.repeat(np.arange(len(ntv), dtype=np.int64), list_lengths(ntv))
    records = ntv.flatten()
    if records.null_count:
        valid = np.asarray(records.is_valid(), dtype=bool)
        records, row_of = records.filter(pa.array(valid)), row_of[valid]
    name, term = (_as_text(pc.struct_field(records, [item.get_field_index(f)])) for f in ("name", "term"))
    values = pc.struct_field(records, [item.get_field_index("value")])
    try:
        values = values.cast(pa.float64()).fill_null(0.0)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
        raise ExpressionEvalError(f"NTV value must be numeric, got {values.type}") from err
    return row_of, name, term, np.asarray(values, dtype=np.float64)


def _as_text(values: pa.Array) -> pa.Array:
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        values = cast_like_spark(values, "string")
    return values.fill_null("null")
