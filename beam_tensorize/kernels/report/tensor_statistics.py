"""The run report's statistics of one tensor: `TensorStatistics`, filled with its columns and merged.

A tensor's statistics are updated with whole columns as `ExtractFeatures` gives them (before
hashing and feature-list lookup) and merged with those of other bundles: row, null and empty
counts, list lengths and numbers (`NumericSketch`), text and NTV `name,term` entries (`TopK`),
entries not in the tensor's feature list, and for hashed tensors the bucket loads, the smallest
and largest identity hash per bucket and a distinct count (`DistinctSketch`). `summary` turns
them into the tensor's entry of the report; `statistics.Statistics` holds one per tensor (its
module docstring tells the rules).

Example:
    >>> from beam_tensorize.config import parse_config
    >>> config = parse_config({"features": [
    ...     {"outputTensorInfo": {"name": "g", "dtype": "long", "shape": [-1]}}]})
    >>> stats = TensorStatistics(config.tensors[0])
    >>> stats.add(pa.array([["a", "b"], ["a"], []]), vocabulary=pa.array(["a"]))
    >>> stats.kind, stats.rows, stats.empties, stats.unknown, stats.top.counts
    ('categorical', 3, 1, 1, {'a': 2, 'b': 1})
"""

from __future__ import annotations

import copy

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_tensorize.config.model import TensorConfig
from beam_tensorize.kernels.arrow_types import as_large_list, is_list_type, list_lengths
from beam_tensorize.kernels.features.hashing import DistinctHashes, distinct_hashes, hash_buckets
from beam_tensorize.kernels.features.ntv import count_ntv_entries, is_ntv, ntv_parts
from beam_tensorize.kernels.features.vocab_index import VocabIndex, as_index
from beam_tensorize.kernels.report.sketches import DistinctSketch, NumericSketch, TopK
from beam_tensorize.kernels.report.summary import describe_tensor

__all__ = ["MAX_TRACKED_BUCKETS", "TensorStatistics"]

#: Hashed tensors with more buckets get no per-bucket arrays (the collision share is then the
#: one expected of a uniform hash, marked `estimated`).
MAX_TRACKED_BUCKETS = 1 << 20
_IDENTITY_BUCKETS = 1 << 62


def _strings(values: pa.Array) -> pa.Array:
    """Distinct categorical values as text (bytes decoded as UTF-8, invalid bytes replaced)."""
    t = values.type
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return values
    if pa.types.is_binary(t) or pa.types.is_large_binary(t) or pa.types.is_fixed_size_binary(t):
        return pa.array([v.decode("utf-8", "replace") for v in values.to_pylist()], pa.string())
    return values.cast(pa.string())


def _is_numeric(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


class TensorStatistics:
    """The statistics of one tensor (see the module docstring of `statistics`)."""

    def __init__(self, tensor: TensorConfig):
        self.name = tensor.name
        self.tensor = tensor
        self.rows = 0
        self.nulls = 0
        self.empties = 0
        self.lengths: NumericSketch | None = None
        self.values: NumericSketch | None = None
        self.top: TopK | None = None
        self.unknown: int | None = None
        self.list_size: int | None = None
        self.ntv = False
        #: The input type, when its values could not be summarised (then only rows count).
        self.not_summarized: str | None = None
        hash_info = tensor.input.transform_config.hash_info
        self.hash_info = hash_info
        self.loads: np.ndarray | None = None
        self.low: np.ndarray | None = None
        self.high: np.ndarray | None = None
        self.distinct: DistinctSketch | None = None
        #: The hashed ids (numbers), when there are too many buckets for `loads` to tell them.
        self.ids: NumericSketch | None = None
        if hash_info is not None:
            self.distinct = DistinctSketch()
            n = hash_info.hash_bucket_size
            if n <= MAX_TRACKED_BUCKETS:
                self.loads = np.zeros(n + 1, np.int64)  # the last: the dummy id
                self.low = np.full(n, np.iinfo(np.int64).max, np.int64)
                self.high = np.full(n, -1, np.int64)
            else:
                self.ids = NumericSketch()

    # --- filling -----------------------------------------------------------------------------

    def add(
        self, column: pa.Array, vocabulary: pa.Array | VocabIndex | None = None, hashes: bool = True
    ) -> None:
        """Add a column of this tensor (as extracted, before hashing / feature lists); a hashed
        tensor's values are hashed for its bucket statistics unless `hashes` is False (the
        hashing step's `DistinctHashes` then come through `add_distinct_hashes`)."""
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks()
        rows = len(column)
        self.rows += rows
        self.nulls += column.null_count
        if self.not_summarized is not None:
            return
        try:
            self._add_values(column, vocabulary, hashes)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError):
            # The statistics never fail a job: its own steps judge the values (and name the
            # tensor); a type the report cannot summarise gets its row counts only.
            self.not_summarized = str(column.type)
            self.lengths = self.values = self.top = self.unknown = None

    def _add_values(self, column: pa.Array, vocabulary: pa.Array | VocabIndex | None, hashes: bool) -> None:
        t = column.type
        lengths = None
        if self.hash_info is not None and not is_ntv(t):  # described as its ids
            self._add_hashed_lengths(column)
            if hashes:
                self.add_distinct_hashes(distinct_hashes(column, self.tensor))
            return
        if is_ntv(t):
            self.ntv = True
            lengths = list_lengths(column)
            _, names, terms, values = ntv_parts(column)
            self._add_numbers(values)
            self._add_counted(*count_ntv_entries(names, terms), vocabulary)
        elif is_list_type(t):
            lengths = list_lengths(column)
            flat = column.flatten()
            while is_list_type(flat.type):
                flat = flat.flatten()
            self._add_leaf(flat, vocabulary)
        elif pa.types.is_struct(t) and {"indices", "values"} <= {f.name for f in t}:
            lengths = list_lengths(column.field("indices"))
            self._add_numbers(np.asarray(column.field("values").flatten().drop_null(), np.float64))
        else:
            self._add_leaf(column, vocabulary)
        if lengths is not None:
            valid = np.asarray(column.is_valid(), bool) if column.null_count else None
            kept = lengths if valid is None else lengths[valid]
            self.empties += int((kept == 0).sum())
            if self.lengths is None:
                self.lengths = NumericSketch()
            self.lengths.add(kept)
        if self.hash_info is not None and hashes:
            self.add_distinct_hashes(distinct_hashes(column, self.tensor))

    def _add_hashed_lengths(self, column: pa.Array) -> None:
        """Empty list rows, and the ids per row of a hashed list: k per non-null value, k for a
        row without one (the dummy id k times), null rows included (they hold the dummy ids)."""
        if not is_list_type(column.type):
            return
        column = as_large_list(column)
        lengths = list_lengths(column)  # 0 for null rows
        valid = np.asarray(column.is_valid(), bool) if column.null_count else None
        self.empties += int(((lengths == 0) if valid is None else ((lengths == 0) & valid)).sum())
        flat = column.flatten()
        if flat.null_count:  # count the non-null values of each row
            seen = np.concatenate([[0], np.cumsum(np.asarray(flat.is_valid(), bool), dtype=np.int64)])
            starts = np.concatenate([[0], np.cumsum(lengths)])
            lengths = seen[starts[1:]] - seen[starts[:-1]]
        if self.lengths is None:
            self.lengths = NumericSketch()
        self.lengths.add(self.hash_info.num_hash_functions * np.maximum(lengths, 1))

    def _add_leaf(self, flat: pa.Array, vocabulary: pa.Array | VocabIndex | None) -> None:
        flat = flat.drop_null() if flat.null_count else flat
        if pa.types.is_dictionary(flat.type):
            flat = flat.dictionary_decode()
        if _is_numeric(flat.type):
            if pa.types.is_decimal(flat.type):
                flat = flat.cast(pa.float64())
            self._add_numbers(flat.to_numpy(zero_copy_only=False))  # integers stay integers
        else:
            self._add_categories(flat, vocabulary)

    def _add_numbers(self, values) -> None:
        if self.values is None:
            self.values = NumericSketch()
        self.values.add(np.asarray(values))

    def _add_categories(self, values: pa.Array, vocabulary: pa.Array | VocabIndex | None) -> None:
        if values.null_count:
            values = values.drop_null()
        counted = pc.value_counts(values)
        self._add_counted(counted.field("values"), np.asarray(counted.field("counts"), np.int64), vocabulary)

    def _add_counted(
        self, distinct: pa.Array, counts: np.ndarray, vocabulary: pa.Array | VocabIndex | None
    ) -> None:
        """Add distinct entries seen `counts` times each."""
        if self.top is None:
            self.top = TopK()
        self.top.add(_strings(distinct), counts)
        if vocabulary is not None:
            vocabulary = as_index(vocabulary)
            known = vocabulary.positions(distinct) >= 0
            self.unknown = (self.unknown or 0) + int(counts[~known].sum())
            self.list_size = len(vocabulary)

    def add_distinct_hashes(self, seen: DistinctHashes) -> None:
        """Add what the hashing step saw of one batch of this (hashed) tensor: bucket loads,
        the dummy ids, and the distinct values' identities (for distinct counts and collisions)."""
        n, k = self.hash_info.hash_bucket_size, self.hash_info.num_hash_functions
        if self.loads is not None:
            self.loads[n] += seen.dummy_rows * k
        else:
            self.ids.add_counts(
                np.append(seen.ids.reshape(-1), n),
                np.append(np.repeat(seen.counts, k), seen.dummy_rows * k),
            )
        if not len(seen.counts):
            return
        if seen.fingerprints is not None:  # one FarmHash function: its fingerprint names the value
            identity = (seen.fingerprints >> np.uint64(2)).astype(np.int64)
        else:
            identity = hash_buckets(seen.keys, _IDENTITY_BUCKETS, 0, 2)
        self.distinct.add(identity)
        if self.loads is None:
            return
        for j in range(k):
            buckets = seen.ids[:, j]
            self.loads[:n] += np.bincount(buckets, weights=seen.counts, minlength=n).astype(np.int64)
            if j == 0:
                np.minimum.at(self.low, buckets, identity)
                np.maximum.at(self.high, buckets, identity)

    def merge(self, other: TensorStatistics) -> None:
        self.rows += other.rows
        self.nulls += other.nulls
        self.empties += other.empties
        self.ntv = self.ntv or other.ntv
        if self.not_summarized is None:
            self.not_summarized = other.not_summarized
        if self.not_summarized is not None:  # no partial summaries: the same for any bundling
            self.lengths = self.values = self.top = self.unknown = None
            other = copy.copy(other)
            other.lengths = other.values = other.top = other.unknown = None
        for attr in ("lengths", "values", "top", "distinct", "ids"):
            mine, theirs = getattr(self, attr), getattr(other, attr)
            if theirs is None:
                continue
            if mine is None:
                setattr(self, attr, theirs)
            else:
                mine.merge(theirs)
        if other.unknown is not None:
            self.unknown = (self.unknown or 0) + other.unknown
            self.list_size = other.list_size
        if other.loads is not None:
            self.loads += other.loads
            np.minimum(self.low, other.low, out=self.low)
            np.maximum(self.high, other.high, out=self.high)

    # --- the report ----------------------------------------------------------------------------

    def describe(self) -> dict:
        """This tensor's entry of the report (see docs/report.md and `summary.describe_tensor`)."""
        return describe_tensor(self)

    @property
    def kind(self) -> str:
        if self.hash_info is not None:
            return "hashed"
        if self.ntv:
            return "ntv"
        if self.top is not None:
            return "categorical"
        return "numeric"
