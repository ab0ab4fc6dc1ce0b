"""A feature list's entries indexed once, then looked up by any number of batches.

`pyarrow.compute.index_in` builds a hash table of the whole list at every call: with a list of
1M entries that took ~215 ms for each batch of 20,000 values, so a job spent its time on the
list rather than on its rows. `VocabIndex` keeps lists of at least `INDEXED_FROM` entries as
their sorted 64-bit fingerprints (FarmHash Fingerprint64, by the C hash extension) with the
entry each stands for: a batch costs its own values' fingerprints, a binary search of each
(~4 ms for those 20,000 values, 1M entries) and a check that the entry found equals the value
(so a value outside the list whose fingerprint happens to equal an entry's is still not
found). Smaller lists, or a build without the C extension, use `index_in` as before. Either
way the result is `index_in`'s: the position of the value's first occurrence in the list.

Example:
    >>> index = VocabIndex(["b", "a", "b"])
    >>> index.positions(pa.array(["a", "zz", None, "b"])).tolist()
    [1, -1, -1, 0]
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_tensorize.kernels.features.hash_functions import _as_binary, _extension, _fingerprints

__all__ = ["INDEXED_FROM", "VocabIndex", "as_index"]

#: Lists of at least this many entries are looked up through their fingerprints; below it,
#: `index_in`'s own hash table is as fast (measured: 0.2-2 ms per 20,000 values up to 20,000
#: entries, where the fingerprint search took 1-3 ms).
INDEXED_FROM = 32_768


class VocabIndex:
    """A feature list's entries (strings), for finding values' positions among them.

    Args:
        entries: the list's entries in order (a string array, or a sequence of str).
    """

    def __init__(self, entries: pa.Array | Sequence[str]):
        if not isinstance(entries, pa.Array):
            entries = pa.array(list(entries), pa.string())
        if not (pa.types.is_string(entries.type) or pa.types.is_large_string(entries.type)):
            entries = entries.cast(pa.string())
        self.entries = entries
        self._sorted: np.ndarray | None = None  # fingerprints, ascending
        self._ids: np.ndarray | None = None  # the position of the entry each stands for
        self._shared: dict[int, list[int]] = {}  # a fingerprint several entries have -> their positions

    def __len__(self) -> int:
        return len(self.entries)

    @property
    def indexed(self) -> bool:
        """Whether lookups go through the fingerprints (large lists, C extension built)."""
        return len(self.entries) >= INDEXED_FROM and not self.entries.null_count and _extension() is not None

    def positions(self, values: pa.Array) -> np.ndarray:
        """The position (int64) of each value's first occurrence among the entries; -1 for a
        value not among them and for a null.

        Raises:
            pa.ArrowInvalid / pa.ArrowNotImplementedError: values that are not text.
        """
        if isinstance(values, pa.ChunkedArray):
            values = values.combine_chunks()
        if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)):
            values = values.cast(pa.string())
        if not self.indexed:
            return np.asarray(pc.index_in(values, self.entries).fill_null(-1), dtype=np.int64)
        if self._sorted is None:
            self._build()
        return self._search(values)

    def _build(self) -> None:
        fingerprints = _fingerprints(_as_binary(self.entries))
        order = np.argsort(fingerprints, kind="stable")  # equal ones keep the entries' order
        self._sorted, self._ids = fingerprints[order], order.astype(np.int64)
        repeated = np.flatnonzero(self._sorted[1:] == self._sorted[:-1])
        for fingerprint in np.unique(self._sorted[repeated]).tolist():  # rare: equal entries or a collision
            first = int(np.searchsorted(self._sorted, np.uint64(fingerprint)))
            last = int(np.searchsorted(self._sorted, np.uint64(fingerprint), side="right"))
            self._shared[fingerprint] = self._ids[first:last].tolist()

    def _search(self, values: pa.Array) -> np.ndarray:
        found = np.full(len(values), -1, dtype=np.int64)
        if not len(values) or not len(self._sorted):
            return found
        valid = np.asarray(values.is_valid(), bool) if values.null_count else None
        fingerprints = _fingerprints(_as_binary(values.fill_null("") if valid is not None else values))
        order = np.argsort(fingerprints)  # searched in order: each search starts near the last
        slots = np.empty(len(values), dtype=np.int64)
        slots[order] = np.searchsorted(self._sorted, fingerprints[order])
        np.minimum(slots, len(self._sorted) - 1, out=slots)
        hit = self._sorted[slots] == fingerprints
        if valid is not None:
            hit &= valid
        rows = np.flatnonzero(hit)
        candidates = self._ids[slots[rows]]
        same = pc.equal(values.take(pa.array(rows)), self.entries.take(pa.array(candidates)))
        same = np.asarray(same.fill_null(False), bool)
        found[rows[same]] = candidates[same]
        if self._shared:  # a value may be a later entry sharing the first one's fingerprint
            for row in rows[~same].tolist():
                for position in self._shared.get(int(fingerprints[row]), ())[1:]:
                    if self.entries[position].as_py() == values[row].as_py():
                        found[row] = position
                        break
        return found


def as_index(feature_list) -> VocabIndex:
    """`feature_list` (a `VocabIndex`, a `FeatureList`, a string array or a sequence of
    entries) as a `VocabIndex` (the same object if it is one)."""
    if isinstance(feature_list, VocabIndex):
        return feature_list
    entries = getattr(feature_list, "entries", feature_list)  # a FeatureList's
    return VocabIndex(entries)
