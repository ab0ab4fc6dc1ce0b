"""Feature lists (vocabularies): entries of a column, their counts, order, and lookup.

An entry is a string value, or `name,term` for a name-term-value (NTV) record. A feature
list is ordered by count descending, then entry ascending (by UTF-8 bytes), optionally cut
to its top N; an entry's index is its position. Entries not in the list get the one
out-of-vocabulary index `len(list)`.

Train mode counts entries batch by batch and builds the lists (`vocab_build`); the lists are
`FeatureList`s (`feature_list`), applied to batches by `vocab_apply`, which looks entries up
through a `VocabIndex` built once per list (`vocab_index`); the column-level pieces are in
`vocab_entries`. This module gathers their names.

Example:
    >>> import pyarrow as pa
    >>> entries = entries_of(pa.array([["b", "a"], ["b"]]))
    >>> counts = count_entries(entries)
    >>> order_feature_list(counts)
    ['b', 'a']
    >>> lookup_ids(pa.array([["a", "zzz"]]), ["b", "a"]).to_pylist()
    [[1, 2]]
"""

from __future__ import annotations

from beam_tensorize.kernels.features.feature_list import (
    FeatureList,
    may_use_feature_list,
    uses_feature_list,
    vocab_array,
)
from beam_tensorize.kernels.features.vocab_apply import (
    FeatureListLookup,
    _known_or_one_unknown,  # noqa: F401 (cited from `beam_tensorize.tf.serving`)
    apply_feature_lists,
)
from beam_tensorize.kernels.features.vocab_build import (
    OWN_COUNTS_PREFIX,
    TERM_ONLY_PREFIX,
    EntryCounts,
    build_feature_list,
    entry_counts_by_list,
    feature_list_caps,
    lists_per_tensor,
    own_counts,
    own_counts_name,
    partial_counts,
    split_term_only,
    term_only_name,
)
from beam_tensorize.kernels.features.vocab_entries import (
    count_entries,
    entries_of,
    is_text,
    lookup_ids,
    lookup_ntv,
    order_feature_list,
)
from beam_tensorize.kernels.features.vocab_index import VocabIndex

__all__ = [
    "EntryCounts",
    "entry_counts_by_list",
    "OWN_COUNTS_PREFIX",
    "TERM_ONLY_PREFIX",
    "FeatureList",
    "FeatureListLookup",
    "apply_feature_lists",
    "build_feature_list",
    "count_entries",
    "entries_of",
    "feature_list_caps",
    "is_text",
    "lists_per_tensor",
    "lookup_ids",
    "lookup_ntv",
    "may_use_feature_list",
    "order_feature_list",
    "own_counts",
    "own_counts_name",
    "partial_counts",
    "split_term_only",
    "term_only_name",
    "uses_feature_list",
    "vocab_array",
    "VocabIndex",
]
