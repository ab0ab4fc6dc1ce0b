"""Building feature lists in train mode: each batch's partial counts per list, the lists
summed, ordered and capped from them, and each tensor's list (shared, term-only, own counts)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence

import pyarrow as pa
import pyarrow.compute as pc

from beam_tensorize.config.model import TensorConfig, TensorizeConfig
from beam_tensorize.kernels.features.feature_list import FeatureList, uses_feature_list
from beam_tensorize.kernels.features.ntv import is_ntv, ntv_names_and_terms
from beam_tensorize.kernels.features.vocab_entries import (
    column_entry_counts,
    count_entries,
    entries_of,
)

__all__ = [
    "OWN_COUNTS_PREFIX",
    "TERM_ONLY_PREFIX",
    "EntryCounts",
    "build_feature_list",
    "entry_counts_by_list",
    "feature_list_caps",
    "lists_per_tensor",
    "own_counts",
    "own_counts_name",
    "partial_counts",
    "split_term_only",
    "term_only_name",
]


def partial_counts(
    batch: pa.RecordBatch,
    tensors: Sequence[TensorConfig],
    list_key: Mapping[str, str],
    term_only: bool = False,
) -> Iterator[tuple[tuple[str, str | None], int]]:
    """((feature-list key, entry), count) for every distinct entry in `batch`.

    Tensors sharing a list map to the same key (`list_key`). Every tensor that uses a list also
    yields `((key, None), 1 if NTV else 0)`, so its list exists even when empty, and the
    summed marker tells NTV lists from string lists. With `term_only`, each such tensor also
    counts its terms alone (NTV: without the name) under `term_only_name(tensor)`: Avro2TF's
    term-only feature list, never shared, capped by the tensor's own `vocabSizeCap`.
    """
    names = set(batch.schema.names)
    sharing = Counter(list_key.values())
    for tensor in tensors:
        if tensor.name not in list_key or tensor.name not in names:
            continue
        column = batch.column(tensor.name)
        if not uses_feature_list(tensor, column.type):
            continue
        key = list_key[tensor.name]
        ntv = is_ntv(column.type)
        yield (key, None), int(ntv)  # marks the list, and whether it is NTV
        if sharing[key] > 1 or tensor.output.vocab_size_cap is not None:
            # the tensor's own counts, whole (Avro2TF's temporary feature list of the tensor)
            own = own_counts_name(tensor.name)
            yield (own, None), int(ntv)
            yield from (((own, entry), count) for entry, count in column_entry_counts(column).items())
        if term_only:
            terms = ntv_names_and_terms(column)[1] if ntv else entries_of(column)
            only = term_only_name(tensor.name)
            yield (only, None), 0
            yield from (((only, term), count) for term, count in count_entries(terms).items())
        if ntv and sharing[key] > 1:
            # Shared by term (Avro2TF): count terms; note the NTV names each tensor holds.
            ntv_names, terms = ntv_names_and_terms(column)
            yield from (((key, _name_mark(tensor.name, n)), 0) for n in pc.unique(ntv_names).to_pylist())
            yield from (((key, term), count) for term, count in count_entries(terms).items())
            continue
        yield from (((key, entry), count) for entry, count in column_entry_counts(column).items())


#: Marks the term-only lists (`term_only_name`) among the lists `lists_per_tensor` gives.
TERM_ONLY_PREFIX = "\0termOnly\0"


def term_only_name(tensor: str) -> str:
    """The key of a tensor's term-only list among the built lists."""
    return f"{TERM_ONLY_PREFIX}{tensor}"


#: Marks the tensors' own counts (`own_counts_name`) among the lists `lists_per_tensor` gives.
OWN_COUNTS_PREFIX = "\0ownCounts\0"


def own_counts_name(tensor: str) -> str:
    """The key of a tensor's own entry counts (all its entries, as it holds them, counted in
    its rows only) among the built lists: kept for a tensor whose list is shared or capped,
    where the list's own counts are another thing."""
    return f"{OWN_COUNTS_PREFIX}{tensor}"


def split_term_only(
    lists: Mapping[str, FeatureList],
) -> tuple[dict[str, FeatureList], dict[str, FeatureList]]:
    """(the tensors' lists, the term-only lists by tensor name) of what `lists_per_tensor` gave
    (own counts, see `own_counts`, left out)."""
    tensors = {
        name: fl for name, fl in lists.items() if not name.startswith((TERM_ONLY_PREFIX, OWN_COUNTS_PREFIX))
    }
    return tensors, _prefixed(lists, TERM_ONLY_PREFIX)


def own_counts(lists: Mapping[str, FeatureList]) -> dict[str, FeatureList]:
    """Each tensor's own entry counts (`featureListCounts/<tensor>.tsv`), by tensor name, of
    what `lists_per_tensor` gave: the counted list of a tensor whose list is shared or capped,
    else the list itself."""
    tensors, _ = split_term_only(lists)
    counted = {name: fl for name, fl in tensors.items() if fl.counts is not None}
    counted.update(_prefixed(lists, OWN_COUNTS_PREFIX))
    return {name: counted[name] for name in tensors if name in counted}


def _prefixed(lists: Mapping[str, FeatureList], prefix: str) -> dict[str, FeatureList]:
    return {name[len(prefix) :]: fl for name, fl in lists.items() if name.startswith(prefix)}


def feature_list_caps(config: TensorizeConfig, list_key: Mapping[str, str]) -> dict[str, int | None]:
    """Feature-list key -> its `vocabSizeCap`; a shared list gets the smallest cap of its group,
    a tensor's term-only list (`term_only_name`) the tensor's own cap.

    Example:
        >>> from beam_tensorize.config import parse_config
        >>> config = parse_config({"features": [
        ...     {"outputTensorInfo": {"name": "a", "dtype": "long", "shape": [-1], "vocabSizeCap": 5}},
        ...     {"outputTensorInfo": {"name": "b", "dtype": "long", "shape": [-1], "vocabSizeCap": 3}}]})
        >>> {k.replace(TERM_ONLY_PREFIX, "termOnly:"): v for k, v in feature_list_caps(config, {"a": "a", "b": "a"}).items()}
        {'a': 3, 'termOnly:a': 5, 'termOnly:b': 3}
    """
    caps: dict[str, int | None] = {}
    for name, key in list_key.items():
        cap = config.tensor(name).output.vocab_size_cap
        if cap is not None:
            caps[key] = cap if caps.get(key) is None else min(caps[key], cap)
            caps[term_only_name(name)] = cap  # Avro2TF's writeTermOnlyFeatureList caps it too
    return caps


class EntryCounts:
    """Summed `partial_counts` of one feature-list key: (entry, count) pairs, the entry None
    carrying the NTV marker, kept as Arrow columns and summed by pyarrow's `group_by`. Train
    mode combines one of these per list and batch (`entry_counts_by_list`), not one Beam element
    per entry: a list of 632,221 entries sent ~1M elements through the runner.

    Example:
        >>> counts = EntryCounts.of([("a", 1), (None, 0)]).merge(EntryCounts.of([("b", 2), ("a", 1)]))
        >>> sorted(counts.pairs(), key=str)
        [('a', 2), ('b', 2), (None, 0)]
    """

    def __init__(self, tables: Sequence[pa.Table] = ()):
        self._tables = list(tables)
        self._rows = sum(t.num_rows for t in self._tables)
        self._summed_rows = 0  # rows after the last sum: the next one is due at twice as many

    @classmethod
    def of(cls, pairs: Iterable[tuple[str | None, int]]) -> EntryCounts:
        """The counts of (entry, count) pairs (an entry may repeat: its counts add up)."""
        pairs = list(pairs)
        entries = pa.array([entry for entry, _ in pairs], pa.string())
        counts = pa.array([count for _, count in pairs], pa.int64())
        return cls([pa.table({"entry": entries, "count": counts})])

    def merge(self, other: EntryCounts) -> EntryCounts:
        """Add `other`'s counts to these (in place); returns self."""
        self._tables += other._tables
        self._rows += other._rows
        if len(self._tables) > 1 and self._rows > 2 * self._summed_rows + 65_536:
            self._sum()
        return self

    def summed(self) -> pa.Table:
        """One row per entry: `entry` (string, null for the marker) and its total `count`."""
        self._sum()
        return self._tables[0] if self._tables else EntryCounts.of([])._tables[0]

    def pairs(self) -> list[tuple[str | None, int]]:
        """(entry, total count) of every entry."""
        table = self.summed()
        return list(zip(table["entry"].to_pylist(), table["count"].to_pylist()))

    def _sum(self) -> None:
        if len(self._tables) > 1 or (self._tables and self._rows > self._summed_rows):
            table = pa.concat_tables(self._tables)
            grouped = table.group_by("entry", use_threads=False).aggregate([("count", "sum")])
            # group_by gives chunks that are slices of shared buffers, and a pickled slice
            # carries its whole buffer: one chunk each (632k entries pickled to 277 MB, not 14)
            entry, count = grouped["entry"].combine_chunks(), grouped["count_sum"].combine_chunks()
            self._tables = [pa.table({"entry": entry, "count": count})]
            self._rows = self._summed_rows = self._tables[0].num_rows

    def __getstate__(self) -> dict:
        self._sum()  # one table travels
        return dict(self.__dict__)


def entry_counts_by_list(
    batch: pa.RecordBatch,
    tensors: Sequence[TensorConfig],
    list_key: Mapping[str, str],
    term_only: bool = False,
) -> list[tuple[str, EntryCounts]]:
    """`partial_counts` of a batch gathered by feature-list key: (key, its entries' counts)."""
    grouped: dict[str, list[tuple[str | None, int]]] = {}
    for (key, entry), count in partial_counts(batch, tensors, list_key, term_only):
        grouped.setdefault(key, []).append((entry, count))
    return [(key, EntryCounts.of(pairs)) for key, pairs in grouped.items()]


def build_feature_list(
    counted: Iterable[tuple[str | None, int]] | EntryCounts, cap: int | None = None
) -> FeatureList:
    """One feature list from the summed `partial_counts` of its key.

    Args:
        counted: (entry, total count) pairs, or their `EntryCounts`; the entry `None` carries
            the NTV marker (a total above 0 means the list indexes `name,term` records).
        cap: keep only the first `cap` entries.

    Returns:
        The entries by count descending, then entry ascending (by UTF-8 bytes), with their
        counts.

    Example:
        >>> build_feature_list([("a", 1), ("b", 3), (None, 0), ("c", 1)], cap=2)
        FeatureList(entries=('b', 'a'), counts=(3, 1), ntv=False, names=())
    """
    table = (counted if isinstance(counted, EntryCounts) else EntryCounts.of(counted)).summed()
    entry, count = table["entry"], table["count"]
    marker = pc.is_null(entry)
    ntv = bool(pc.any(pc.and_(marker, pc.greater(count, 0))).as_py())
    mark = pc.fill_null(pc.starts_with(entry, _NAME_MARK), False)
    names: dict[str, set[str]] = {}
    for marked in table.filter(mark)["entry"].to_pylist():
        tensor, name = marked[1:].split(_NAME_MARK, 1)
        names.setdefault(tensor, set()).add(name)
    several = {tensor: sorted(found) for tensor, found in names.items() if len(found) > 1}
    if several:
        tensor, found = sorted(several.items())[0]
        raise ValueError(
            f"tensor {tensor!r} shares a feature list (--tensors_sharing_feature_lists) but its "
            f"name-term-value records have several names ({', '.join(map(repr, found[:5]))}); NTV "
            "tensors share lists by term, so each must hold one name across the data (as in "
            "Avro2TF): split the tensor by name in its columnExpr, or do not share its list"
        )
    kept = table.filter(pc.and_(pc.invert(marker), pc.invert(mark)))
    kept = kept.append_column("bytes", kept["entry"].cast(pa.binary()))  # UTF-8 byte order
    order = pc.sort_indices(kept, sort_keys=[("count", "descending"), ("bytes", "ascending")])
    if cap is not None:
        order = order[:cap]
    kept = kept.take(order)
    pairs = tuple(sorted((tensor, found.pop()) for tensor, found in names.items()))
    return FeatureList(tuple(kept["entry"].to_pylist()), tuple(kept["count"].to_pylist()), ntv, pairs)


#: Marks the counting entries that carry an NTV name of a tensor sharing a list by term.
_NAME_MARK = "\0"


def _name_mark(tensor: str, name: str | None) -> str:
    return f"{_NAME_MARK}{tensor}{_NAME_MARK}{'' if name is None else name}"


def lists_per_tensor(
    keyed_lists: Mapping[str, FeatureList], list_key: Mapping[str, str]
) -> dict[str, FeatureList]:
    """Tensor name -> its list, from the lists built per key (tensors sharing a key share it).

    Example:
        >>> lists_per_tensor({"a": FeatureList(("x",))}, {"a": "a", "b": "a", "c": "c"})["b"].entries
        ('x',)
    """
    tensors = {}
    for name, key in list_key.items():
        if key in keyed_lists:
            tensors[name] = _list_of(keyed_lists[key], name)
    tensors.update(
        {key: fl for key, fl in keyed_lists.items() if key.startswith((TERM_ONLY_PREFIX, OWN_COUNTS_PREFIX))}
    )
    return tensors


def _list_of(shared: FeatureList, tensor: str) -> FeatureList:
    """A tensor's own list from a list it shares: a list shared by term gives an NTV tensor
    its entries as `name,term` (other tensors of the group: the plain terms)."""
    if not shared.names:
        return shared
    name = dict(shared.names).get(tensor)
    if name is None:
        return FeatureList(shared.entries, shared.counts, False)
    return FeatureList(tuple(f"{name},{term}" for term in shared.entries), shared.counts, True)
