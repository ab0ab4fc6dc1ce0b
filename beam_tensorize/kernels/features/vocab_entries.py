"""Feature-list entries of a column: finding and counting them, ordering them into a list,
and looking them up (see `beam_tensorize.kernels.features.vocab` for what a feature list is).

Example:
    >>> import pyarrow as pa
    >>> order_feature_list(count_entries(entries_of(pa.array([["b", "a"], ["b"]]))))
    ['b', 'a']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_tensorize.kernels.arrow_types import holds_one_value, list_offsets
from beam_tensorize.kernels.features.ntv import (
    NTV_SEPARATOR,
    count_ntv_entries,
    is_ntv,
    ntv_names_and_terms,
    ntv_parts,
    ntv_triples,
)
from beam_tensorize.kernels.features.vocab_index import VocabIndex, as_index

__all__ = [
    "column_entry_counts",
    "count_entries",
    "entries_of",
    "is_text",
    "lookup_ids",
    "lookup_ntv",
    "order_feature_list",
]


def is_text(t: pa.DataType) -> bool:
    """Strings, or (large) lists of strings."""
    while pa.types.is_list(t) or pa.types.is_large_list(t):
        t = t.value_type
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def _flat_values(column: pa.Array) -> pa.Array:
    while pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
        column = column.flatten()
    return column


def entries_of(column: pa.Array) -> pa.Array:
    """Every feature-list entry a column holds (strings, lists of strings, or NTV)."""
    if is_ntv(column.type):
        return ntv_triples(column)[1]
    values = _flat_values(column)
    if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
        raise TypeError(f"a feature list needs strings or name-term-value records, got {column.type}")
    return values.drop_null()


def count_entries(entries: pa.Array) -> dict[str, int]:
    """Occurrences of each distinct entry."""
    counted = pc.value_counts(entries)
    return dict(zip(counted.field("values").to_pylist(), counted.field("counts").to_pylist()))


def column_entry_counts(column: pa.Array) -> dict[str, int]:
    """`count_entries(entries_of(column))`, with an NTV column's `name,term` strings built for
    its distinct entries only.

    Example:
        >>> ntv = pa.array([[{"name": "g", "term": "a", "value": 1.0}], [{"name": "g", "term": "a", "value": 2.0}]])
        >>> column_entry_counts(ntv)
        {'g,a': 2}
    """
    if is_ntv(column.type):
        entries, counts = count_ntv_entries(*ntv_names_and_terms(column))
        return dict(zip(entries.to_pylist(), counts.tolist()))
    return count_entries(entries_of(column))


def order_feature_list(
    counts: Mapping[str, int] | Iterable[tuple[str, int]], cap: int | None = None
) -> list[str]:
    """Entries by count descending, then entry ascending (UTF-8 bytes); the top `cap` if given."""
    items = counts.items() if isinstance(counts, Mapping) else counts
    ordered = sorted(items, key=lambda item: (-item[1], item[0].encode("utf-8")))
    if cap is not None:
        ordered = ordered[:cap]
    return [entry for entry, _ in ordered]


def lookup_ids(
    column: pa.Array, feature_list: Sequence[str] | pa.Array | VocabIndex, discard_unknown: bool = False
) -> pa.Array:
    """Replace strings by their feature-list index (unknown -> `len(feature_list)`), same nesting.

    A null scalar gets the unknown index too; a null list stays an (empty) list. With
    `discard_unknown`, lists lose their unknown entries (scalars keep the unknown index: a
    value cannot be left out of a scalar). Pass a `VocabIndex` to look up many batches in one
    large list (it is indexed once).

    Example:
        >>> lookup_ids(pa.array([["b", "zz", "a"]]), ["a", "b"], discard_unknown=True).to_pylist()
        [[1, 0]]
    """
    index = as_index(feature_list)
    if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
        if pa.types.is_list(column.type):
            column = column.cast(pa.large_list(column.type.value_type))
        offsets = list_offsets(column)
        ids = lookup_ids(column.flatten(), index, discard_unknown)
        if discard_unknown and not pa.types.is_list(ids.type) and not pa.types.is_large_list(ids.type):
            known = np.asarray(ids) != len(index)
            if not known.all():
                kept = np.concatenate([[0], np.cumsum(known)])
                offsets, ids = kept[np.asarray(offsets)], ids.filter(pa.array(known))
        mask = column.is_null() if column.null_count else None
        return pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), ids, mask=mask)
    found = index.positions(column)
    found[found < 0] = len(index)
    return pa.array(found, pa.int64())


def lookup_ntv(
    ntv: pa.Array, feature_list: Sequence[str] | pa.Array | VocabIndex
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row of each record, its feature-list index, its value) for an NTV column: the index of
    its `name,term` entry, `len(feature_list)` when not in the list. Only the distinct entries of
    the batch are joined into strings and looked up (one name, as a whitelist of one gives: its
    distinct terms)."""
    index = as_index(feature_list)
    row_of, names, terms, values = ntv_parts(ntv)
    if holds_one_value(names):  # one name (a whitelist of one): its distinct terms
        codes = pc.dictionary_encode(terms)
        entries = pc.binary_join_element_wise(names[0].as_py(), codes.dictionary, NTV_SEPARATOR)
        found = index.positions(entries)[np.asarray(codes.indices, dtype=np.int64)]
    else:
        found = index.positions(pc.binary_join_element_wise(names, terms, NTV_SEPARATOR))
    found[found < 0] = len(index)
    return row_of, found, values
