"""Feature lists (vocabularies): entries of a column, their counts, order, and lookup.

An entry is a string value, or `name,term` for a name-term-value (NTV) record. A feature
list is ordered by count descending, then entry ascending (by UTF-8 bytes), optionally cut
to its top N; an entry's index is its position. Entries not in the list get the one
out-of-vocabulary index `len(list)`.

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

import dataclasses
import hashlib
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_tensorize.config.model import TensorConfig, TensorizeConfig
from beam_tensorize.kernels.arrow_types import list_offsets
from beam_tensorize.kernels.features.columns import replace_tensor_columns
from beam_tensorize.kernels.features.conversion import DENSE_VECTOR_KEY, is_hashed_ntv
from beam_tensorize.kernels.features.ntv import is_ntv, ntv_names_and_terms, ntv_triples
from beam_tensorize.kernels.features.sparse import combine_sparse, drop_zeros, sparse_to_dense

__all__ = [
    "FeatureList",
    "FeatureListLookup",
    "apply_feature_lists",
    "build_feature_list",
    "feature_list_caps",
    "lists_per_tensor",
    "count_entries",
    "entries_of",
    "is_text",
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
    column: pa.Array, feature_list: Sequence[str] | pa.Array, discard_unknown: bool = False
) -> pa.Array:
    """Replace strings by their feature-list index (unknown -> `len(feature_list)`), same nesting.

    A null scalar gets the unknown index too; a null list stays an (empty) list. With
    `discard_unknown`, lists lose their unknown entries (scalars keep the unknown index: a
    value cannot be left out of a scalar).

    Example:
        >>> lookup_ids(pa.array([["b", "zz", "a"]]), ["a", "b"], discard_unknown=True).to_pylist()
        [[1, 0]]
    """
    vocab = feature_list if isinstance(feature_list, pa.Array) else pa.array(list(feature_list), pa.string())
    if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
        if pa.types.is_list(column.type):
            column = column.cast(pa.large_list(column.type.value_type))
        offsets = list_offsets(column)
        ids = lookup_ids(column.flatten(), vocab, discard_unknown)
        if discard_unknown and not pa.types.is_list(ids.type) and not pa.types.is_large_list(ids.type):
            known = np.asarray(ids) != len(vocab)
            if not known.all():
                kept = np.concatenate([[0], np.cumsum(known)])
                offsets, ids = kept[np.asarray(offsets)], ids.filter(pa.array(known))
        mask = column.is_null() if column.null_count else None
        return pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), ids, mask=mask)
    found = pc.index_in(column.cast(pa.string()), vocab)
    return found.cast(pa.int64()).fill_null(len(vocab))


def lookup_ntv(
    ntv: pa.Array, feature_list: Sequence[str] | pa.Array
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(row of each record, its feature-list index, its value) for an NTV column."""
    vocab = feature_list if isinstance(feature_list, pa.Array) else pa.array(list(feature_list), pa.string())
    row_of, entries, values = ntv_triples(ntv)
    ids = np.asarray(pc.index_in(entries, vocab).fill_null(len(vocab)), dtype=np.int64)
    return row_of, ids, values


# --- whole batches -------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class FeatureList:
    """A feature list: ordered entries, their counts when built here, and whether it indexes
    NTV records (`name,term`) rather than strings."""

    entries: tuple[str, ...]
    counts: tuple[int, ...] | None = None
    ntv: bool = False
    #: A list shared by NTV tensors (Avro2TF shares them by term): its entries are terms, and
    #: this holds (tensor, the one NTV name it has) pairs; `lists_per_tensor` gives each such
    #: tensor the entries `name,term`, so equal terms get equal ids.
    names: tuple[tuple[str, str], ...] = ()

    def __len__(self) -> int:
        return len(self.entries)

    def to_text(self) -> str:
        """The `featureList/<tensor>` file: one entry per line; the line number is the index."""
        bad = [e for e in self.entries if "\n" in e or "\r" in e]
        if bad:
            raise ValueError(f"feature-list entry {bad[0]!r} contains a line break and cannot be written")
        return "".join(f"{entry}\n" for entry in self.entries)

    def counts_text(self) -> str:
        """`count<TAB>entry` lines, in list order (for people to inspect)."""
        counts = self.counts or (0,) * len(self.entries)
        return "".join(f"{count}\t{entry}\n" for count, entry in zip(counts, self.entries))

    def digest(self) -> str:
        """SHA-256 of `to_text()` (recorded in the metadata, checked when the list is loaded)."""
        return hashlib.sha256(self.to_text().encode("utf-8")).hexdigest()

    @classmethod
    def from_text(cls, text: str, ntv: bool = False) -> FeatureList:
        """Read a `featureList/<tensor>` file's text."""
        return cls(tuple(text.splitlines()), None, ntv)

    def check_recorded(self, recorded: Mapping | None, where: str) -> None:
        """Raise ValueError if this list (read from `where`) is not the one the metadata's
        `featureList` entry `recorded` describes (its `size` and `sha256`): a truncated or
        edited list would give other ids than the written records hold.

        Example:
            >>> FeatureList(("a", "b")).check_recorded({"size": 3}, "featureList/g")
            Traceback (most recent call last):
            ...
            ValueError: featureList/g holds 2 entries, but the metadata records 3 ...
        """
        if not recorded:
            return
        size, digest = recorded.get("size"), recorded.get("sha256")
        if size is not None and size != len(self):
            raise ValueError(
                f"{where} holds {len(self)} entries, but the metadata records {size} (the list the "
                "records were indexed with): it was cut or changed after the train run; restore it, or "
                "run train mode again"
            )
        if digest is not None and digest != self.digest():
            raise ValueError(
                f"{where} is not the list the records were indexed with (its SHA-256 differs from the "
                "metadata's): it was edited or reordered after the train run; restore it, or run train "
                "mode again"
            )


def may_use_feature_list(tensor: TensorConfig) -> bool:
    """Whether `tensor` gets a feature list when its input turns out to be text or NTV."""
    transform = tensor.input.transform_config
    return transform.hash_info is None and tensor.output.dtype in (
        "int",
        "long",
        "float",
        "double",
        "sparseVector",
    )


def uses_feature_list(tensor: TensorConfig, column_type: pa.DataType) -> bool:
    """Whether `tensor`, whose extracted column has `column_type`, is indexed by a feature list."""
    if not may_use_feature_list(tensor):
        return False
    if is_ntv(column_type):
        return True
    return is_text(column_type) and tensor.output.dtype in ("int", "long")


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
            yield from (((own, entry), count) for entry, count in count_entries(entries_of(column)).items())
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
        yield from (((key, entry), count) for entry, count in count_entries(entries_of(column)).items())


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


def build_feature_list(counted: Iterable[tuple[str | None, int]], cap: int | None = None) -> FeatureList:
    """One feature list from the summed `partial_counts` of its key.

    Args:
        counted: (entry, total count) pairs; the entry `None` carries the NTV marker (a total
            above 0 means the list indexes `name,term` records).
        cap: keep only the first `cap` entries.

    Returns:
        The entries by count descending, then entry ascending, with their counts.

    Example:
        >>> build_feature_list([("a", 1), ("b", 3), (None, 0), ("c", 1)], cap=2)
        FeatureList(entries=('b', 'a'), counts=(3, 1), ntv=False, names=())
    """
    counts, ntv = {}, False
    names: dict[str, set[str]] = {}
    for entry, count in counted:
        if entry is None:
            ntv = ntv or count > 0
        elif entry.startswith(_NAME_MARK):
            tensor, name = entry[1:].split(_NAME_MARK, 1)
            names.setdefault(tensor, set()).add(name)
        else:
            counts[entry] = count
    several = {tensor: sorted(found) for tensor, found in names.items() if len(found) > 1}
    if several:
        tensor, found = sorted(several.items())[0]
        raise ValueError(
            f"tensor {tensor!r} shares a feature list (--tensors_sharing_feature_lists) but its "
            f"name-term-value records have several names ({', '.join(map(repr, found[:5]))}); NTV "
            "tensors share lists by term, so each must hold one name across the data (as in "
            "Avro2TF): split the tensor by name in its columnExpr, or do not share its list"
        )
    entries = order_feature_list(counts, cap)
    pairs = tuple(sorted((tensor, found.pop()) for tensor, found in names.items()))
    return FeatureList(tuple(entries), tuple(counts[e] for e in entries), ntv, pairs)


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


def vocab_array(feature_list: FeatureList | Sequence[str] | pa.Array) -> pa.Array:
    """A feature list's entries as an Arrow string array (for lookups)."""
    if isinstance(feature_list, pa.Array):
        return feature_list
    entries = feature_list.entries if isinstance(feature_list, FeatureList) else feature_list
    return pa.array(list(entries), pa.string())


def apply_feature_lists(
    batch: pa.RecordBatch,
    tensors: Sequence[TensorConfig],
    lists: Mapping[str, FeatureList | Sequence[str] | pa.Array],
    filter_zeros: bool = False,
    discard_unknown: bool = False,
) -> pa.RecordBatch:
    """Replace text and NTV tensor columns by feature-list indices.

    Text becomes int64 indices (same nesting). NTV becomes a sparse vector
    `struct<indices, values>` (repeated entries in a row summed, indices ascending; the records
    of a row not in the list become one entry, the unknown id `len(list)` with the value 1, as
    in Avro2TF; zero values dropped with `filter_zeros`), or with `isSparse: false` a dense
    vector of `len(list) + 1` values. With `discard_unknown` (Avro2TF's
    `--discard-unknown-entries`), entries not in the list are left out of lists and vectors
    (dense vectors then have `len(list)` values); scalars keep the unknown id. With `filter_zeros`, the sparse vectors of hashed NTV tensors lose
    their zero entries too (as Avro2TF filters every sparse vector). Other columns pass through.

    Raises:
        KeyError: a tensor needs a list that `lists` does not have.
    """

    def replace(tensor: TensorConfig, field: pa.Field, column: pa.Array):
        if filter_zeros and is_hashed_ntv(tensor) and pa.types.is_struct(column.type):
            sparse = pa.StructArray.from_arrays(list(drop_zeros(*column.flatten())), ["indices", "values"])
            return pa.field(tensor.name, sparse.type), sparse
        if not uses_feature_list(tensor, column.type):
            return None
        if tensor.name not in lists:
            raise KeyError(f"no feature list for tensor {tensor.name!r}")
        vocab = vocab_array(lists[tensor.name])
        if is_ntv(column.type):
            return _apply_ntv(tensor, column, vocab, filter_zeros, discard_unknown)
        ids = lookup_ids(column, vocab, discard_unknown)
        return pa.field(tensor.name, ids.type), ids

    return replace_tensor_columns(batch, tensors, replace)


def _apply_ntv(tensor, column, vocab, filter_zeros, discard_unknown) -> tuple[pa.Field, pa.Array]:
    row_of, ids, values = _known_or_one_unknown(*lookup_ntv(column, vocab), len(vocab), discard_unknown)
    indices, merged = combine_sparse(row_of, ids, values, len(column))
    if filter_zeros:
        indices, merged = drop_zeros(indices, merged)
    if tensor.output.is_sparse or tensor.output.dtype == "sparseVector":
        sparse = pa.StructArray.from_arrays([indices, merged], ["indices", "values"])
        return pa.field(tensor.name, sparse.type), sparse
    dense = sparse_to_dense(indices, merged, len(vocab) + (0 if discard_unknown else 1))
    return pa.field(tensor.name, dense.type, metadata={DENSE_VECTOR_KEY: b"1"}), dense


def _known_or_one_unknown(
    row_of: np.ndarray, ids: np.ndarray, values: np.ndarray, unknown_id: int, discard: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """NTV records not in the list, as Avro2TF's FeatureIndicesConversion treats them: left
    out (`discard`), else one entry per row with the unknown id and the value 1."""
    unknown = ids == unknown_id
    if not unknown.any():
        return row_of, ids, values
    keep = ~unknown
    if not discard:
        positions = np.flatnonzero(unknown)
        first = positions[np.unique(row_of[positions], return_index=True)[1]]
        keep[first] = True
        values = values.copy()
        values[first] = 1.0
    return row_of[keep], ids[keep], values[keep]


class FeatureListLookup:
    """Feature lists turned into lookup arrays once, then applied to any number of batches.

    Args:
        lists: the feature lists by tensor name.

    Example:
        >>> import pyarrow as pa
        >>> from beam_tensorize.config import parse_config
        >>> config = parse_config({"features": [{"outputTensorInfo": {"name": "g", "dtype": "long", "shape": [-1]}}]})
        >>> lookup = FeatureListLookup({"g": FeatureList(("b", "a"))})
        >>> lookup.apply(pa.RecordBatch.from_pydict({"g": [["a", "zz"]]}), config.tensors).to_pydict()
        {'g': [[1, 2]]}
    """

    def __init__(self, lists: Mapping[str, FeatureList | Sequence[str] | pa.Array]):
        self._vocab = {
            name: vocab_array(feature_list) for name, feature_list in split_term_only(lists)[0].items()
        }

    def apply(
        self,
        batch: pa.RecordBatch,
        tensors: Sequence[TensorConfig],
        filter_zeros: bool = False,
        discard_unknown: bool = False,
    ) -> pa.RecordBatch:
        """`apply_feature_lists` with these lists.

        Raises:
            ValueError: a tensor needs a list that is missing (the message says how to get it).
        """
        try:
            return apply_feature_lists(batch, tensors, self._vocab, filter_zeros, discard_unknown)
        except KeyError as err:
            raise ValueError(
                f"{err.args[0]}: build it in train mode first, or give it as an external feature list"
            ) from None
