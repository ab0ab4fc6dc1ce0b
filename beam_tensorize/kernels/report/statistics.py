"""The run report's statistics: a mergeable accumulator updated with whole record batches.

`Statistics` holds, in memory that does not grow with the data (see `sketches`):

* per input file: rows decoded, records that did not decode, rows that did not convert;
* per tensor: rows, null rows, empty rows (lists with no value), the list-length distribution,
  numbers (`NumericSketch`), text / feature-list entries (`TopK`), entries not in the tensor's
  feature list, and for hashed tensors the load of every bucket (occurrences of each id, the
  dummy id too) and, per bucket, the smallest and largest 62-bit hash of the distinct values in
  it (two differ: the bucket holds colliding values), plus a distinct count of the input values
  (`DistinctSketch`);
* dead letters by reason, with their count and the smallest example (as JSON text).

It is filled from the batches *before* hashing and feature-list lookup (what `ExtractFeatures`
gives): the statistics describe the values people recognise (strings, NTV `name,term`
entries), which a feature list maps one to one to the ids the records hold. Hashing does not:
a hashed tensor (other than name-term-value vectors, whose values stay the input's) is described
as the ids its records hold, `0 .. hashBucketSize - 1` and the dummy id `hashBucketSize`: its
numbers and entries are the bucket loads, its lengths the ids per row (`numHashFunctions` per
value, and per row without a value); of its input only the distinct count is given, under
`hashing`. Hashed tensors' buckets come from what the hashing step saw of the same batch
(`add_distinct_hashes` with `hashing.hash_tensors_with_distinct`'s results, each distinct value
hashed once for both), or, for batches no hashing step saw, from hashing their distinct values
with the job's hash functions (`add_batch`). `describe` turns it into the report's JSON
document (see docs/report.md).

Example:
    >>> import pyarrow as pa
    >>> from beam_tensorize.config import parse_config
    >>> config = parse_config({"features": [
    ...     {"outputTensorInfo": {"name": "x", "dtype": "float", "shape": []}},
    ...     {"outputTensorInfo": {"name": "g", "dtype": "long", "shape": [-1]}}]})
    >>> stats = Statistics(config)
    >>> stats.add_batch(pa.RecordBatch.from_pydict({"x": [1.0, 2.0, None], "g": [["a", "b"], ["a"], []]}),
    ...                 vocabularies={"g": pa.array(["a"])})
    >>> report = stats.describe()
    >>> x, g = report["tensors"]
    >>> x["numeric"]["mean"], x["nullRate"]
    (1.5, 0.3333333333)
    >>> g["categorical"]["top"][0], g["featureList"]["unknownShare"], g["emptyRate"]
    ({'value': 'a', 'count': 2}, 0.3333333333, 0.3333333333)
"""

from __future__ import annotations

import copy
import json
import re
import time
from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_tensorize.config.model import TensorConfig, TensorizeConfig
from beam_tensorize.kernels.arrow_types import as_large_list, is_list_type, list_lengths
from beam_tensorize.kernels.features.conversion import is_hashed_ntv
from beam_tensorize.kernels.features.hashing import DistinctHashes, distinct_hashes, hash_buckets
from beam_tensorize.kernels.features.ntv import NTV_SEPARATOR, is_ntv, ntv_parts
from beam_tensorize.kernels.features.vocab import split_term_only, uses_feature_list, vocab_array
from beam_tensorize.kernels.provenance import source_of
from beam_tensorize.kernels.report.sketches import (
    DistinctSketch,
    NumericSketch,
    TopK,
    round_float,
)

__all__ = [
    "COVERAGE_KS",
    "MAX_DEAD_LETTER_REASONS",
    "MAX_TRACKED_BUCKETS",
    "QUANTILES",
    "REPORT_VERSION",
    "TOP_SHOWN",
    "Statistics",
    "TensorStatistics",
    "list_vocabularies",
]

#: Version of the report's JSON document.
REPORT_VERSION = 1
#: Quantiles the report gives of every numeric distribution.
QUANTILES = (0.0, 0.01, 0.05, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 1.0)
#: Points of the coverage curve (share of occurrences covered by the top k entries).
COVERAGE_KS = (1, 2, 5, 10, 20, 50, 100, 200, 500, 1000)
#: Entries listed with their counts.
TOP_SHOWN = 20
#: Bins of the numeric histograms.
HISTOGRAM_BINS = 10
#: Whole numbers spanning at most this many values get one histogram bin per value.
INTEGER_BINS = 40
#: Hashed tensors with more buckets get no per-bucket arrays (the collision share is then the
#: one expected of a uniform hash, marked `estimated`).
MAX_TRACKED_BUCKETS = 1 << 20
#: Dead-letter reasons kept apart; further reasons are counted under `OTHER_REASONS`.
MAX_DEAD_LETTER_REASONS = 100
OTHER_REASONS = "(other reasons)"
#: Longest example kept per dead-letter reason (characters of JSON).
EXAMPLE_CHARS = 1000
_IDENTITY_BUCKETS = 1 << 62
_ROW_SOURCE = re.compile(r"^(.*): (?:record|stripe) ")


def _share(part: int, whole: int) -> float:
    return round_float(part / whole, 10) if whole else 0.0


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
    """The statistics of one tensor (see the module docstring)."""

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

    def add(self, column: pa.Array, vocabulary: pa.Array | None = None, hashes: bool = True) -> None:
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

    def _add_values(self, column: pa.Array, vocabulary: pa.Array | None, hashes: bool) -> None:
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
            self._add_counted(*_ntv_entry_counts(names, terms), vocabulary)
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

    def _add_leaf(self, flat: pa.Array, vocabulary: pa.Array | None) -> None:
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

    def _add_categories(self, values: pa.Array, vocabulary: pa.Array | None) -> None:
        if values.null_count:
            values = values.drop_null()
        counted = pc.value_counts(values)
        self._add_counted(counted.field("values"), np.asarray(counted.field("counts"), np.int64), vocabulary)

    def _add_counted(self, distinct: pa.Array, counts: np.ndarray, vocabulary: pa.Array | None) -> None:
        """Add distinct entries seen `counts` times each."""
        if self.top is None:
            self.top = TopK()
        self.top.add(_strings(distinct), counts)
        if vocabulary is not None:
            known = np.asarray(pc.is_in(distinct.cast(pa.string()), vocabulary).fill_null(False), bool)
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
        """This tensor's entry of the report (see docs/report.md)."""
        out = self.tensor.output
        entry = {
            "name": self.name,
            "dtype": out.dtype,
            "shape": list(out.shape),
            "isSparse": bool(out.is_sparse),
            "kind": self.kind,
            "rows": self.rows,
            "nullRows": self.nulls,
            "emptyRows": self.empties,
            "nullRate": _share(self.nulls, self.rows),
            "emptyRate": _share(self.empties, self.rows),
        }
        if self.not_summarized is not None:
            entry["notSummarized"] = f"values of type {self.not_summarized} have no statistics"
        if self.lengths is not None:
            entry["lengths"] = describe_numbers(self.lengths)
        if self.values is not None:
            entry["numeric"] = describe_numbers(self.values)
        if self.top is not None:
            entry["categorical"] = describe_categories(self.top)
        if self.unknown is not None:
            occurrences = self.top.total if self.top else 0
            entry["featureList"] = {
                "size": self.list_size,
                "unknownOccurrences": self.unknown,
                "unknownShare": _share(self.unknown, occurrences),
            }
        if self.hash_info is not None and not self.ntv and self.not_summarized is None:  # its ids
            ids, top = self._hashed_ids()
            if ids.count:
                entry["numeric"] = describe_numbers(ids)
            if top is not None and top.total:
                entry["categorical"] = describe_categories(top)
        if self.hash_info is not None:
            entry["hashing"] = self._describe_hashing()
            entry["hashing"]["statisticsOf"] = "input" if self.ntv else "ids"
        dimension = self._dimension()
        if dimension and self.lengths is not None and self.lengths.count:
            entry["sparse"] = {
                "dimension": dimension,
                "meanNonZeros": round_float(self.lengths.mean),
                "density": round_float(self.lengths.mean / dimension, 10),
            }
        return entry

    @property
    def kind(self) -> str:
        if self.hash_info is not None:
            return "hashed"
        if self.ntv:
            return "ntv"
        if self.top is not None:
            return "categorical"
        return "numeric"

    def _dimension(self) -> int | None:
        """The length of the vector a sparse / NTV tensor becomes (None: not a vector)."""
        if self.hash_info is not None and is_hashed_ntv(self.tensor):
            return self.hash_info.hash_bucket_size
        if self.ntv and self.list_size is not None:
            return self.list_size + 1
        shape = self.tensor.output.shape
        if self.tensor.output.is_sparse and shape and all(d > 0 for d in shape):
            return int(np.prod(shape))
        return None

    def _hashed_ids(self) -> tuple[NumericSketch, TopK | None]:
        """The numbers and the entries (ids as text; None past `MAX_TRACKED_BUCKETS` buckets) of
        the ids a hashed tensor's records hold, from the bucket loads: exact. The entries keep
        the `TOP_K_CAPACITY` most frequent ids (ties: the smaller id); `dropped` is the load of
        the next one, so every id more frequent than that is listed, with its exact count."""
        if self.loads is None:
            return self.ids, None
        used = np.flatnonzero(self.loads)
        loads = self.loads[used]
        ids = NumericSketch()
        ids.add_counts(used, loads)
        top = TopK()
        order = np.lexsort((used, -loads))
        kept = order[: top.capacity]
        top.total = int(loads.sum())
        top.dropped = int(loads[order[top.capacity]]) if len(order) > top.capacity else 0
        top.counts = {str(i): c for i, c in zip(used[kept].tolist(), loads[kept].tolist())}
        return ids, top

    def _describe_hashing(self) -> dict:
        info = self.hash_info
        n, k = info.hash_bucket_size, info.num_hash_functions
        distinct = self.distinct.estimate()
        entry = {
            "hashBucketSize": n,
            "numHashFunctions": k,
            "distinctValues": distinct,
            "distinctExact": self.distinct.exact,
        }
        if self.loads is None:
            expected = 1 - (1 - 1 / n) ** max(distinct - 1, 0)
            entry.update({"collidingShare": round_float(expected, 10), "estimated": True})
            return entry
        loads = self.loads[:n]
        used = loads > 0
        occupied = self.high >= 0
        alone = int((occupied & (self.low == self.high)).sum())
        colliding = max(distinct - alone, 0) if distinct else 0
        top = int(loads.max()) if n else 0
        if top <= INTEGER_BINS:  # one bin per load (loads are whole numbers)
            edges = np.arange(-0.5, top + 1.0)
        else:
            edges = np.linspace(0, top, HISTOGRAM_BINS + 1)
        histogram = np.histogram(loads, bins=edges)[0]
        entry.update(
            {
                "estimated": not self.distinct.exact,
                "collidingValues": colliding,
                "collidingShare": _share(colliding, distinct),
                "bucketsUsed": int(used.sum()),
                "bucketsUsedShare": _share(int(used.sum()), n),
                "dummyIdOccurrences": int(self.loads[n]),
                "load": {
                    "min": int(loads.min()) if n else 0,
                    "max": top,
                    "mean": round_float(float(loads.mean()) if n else 0.0),
                    "quantiles": [
                        {"q": q, "value": round_float(float(np.quantile(loads, q)))} for q in QUANTILES
                    ],
                    "histogram": {
                        "edges": [round_float(e) for e in edges.tolist()],
                        "counts": histogram.astype(int).tolist(),
                    },
                },
            }
        )
        return entry


def _ntv_entry_counts(names: pa.Array, terms: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """The distinct `name,term` entries of NTV records (as `ntv_triples` writes them), in order
    of first occurrence, and their counts. Only distinct entries are joined into strings: when
    every record has the same name (one whitelisted name), the terms are counted; otherwise the
    pairs of dictionary indices of name and term."""
    if _one_value(names):
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
    if len(pc.unique(entries)) < len(entries):  # two pairs print alike ("a,b" + "c", "a" + "b,c")
        counted = pc.value_counts(pc.binary_join_element_wise(names, terms, NTV_SEPARATOR))
        return counted.field("values"), np.asarray(counted.field("counts"), np.int64)
    return entries, np.asarray(counted.field("counts"), np.int64)


def _one_value(strings: pa.Array) -> bool:
    """Whether a non-empty (large) string array without nulls holds one value only, compared
    as bytes (no hashing)."""
    if not len(strings) or strings.null_count:
        return False
    wide = pa.types.is_large_string(strings.type) or pa.types.is_large_binary(strings.type)
    if not (wide or pa.types.is_string(strings.type) or pa.types.is_binary(strings.type)):
        return False
    offsets = np.frombuffer(strings.buffers()[1], np.int64 if wide else np.int32)
    offsets = offsets[strings.offset : strings.offset + len(strings) + 1]
    size = int(offsets[1] - offsets[0])
    if not (np.diff(offsets) == size).all():
        return False
    if size == 0:
        return True
    data = np.frombuffer(strings.buffers()[2], np.uint8)[int(offsets[0]) : int(offsets[-1])]
    return bool((data.reshape(-1, size) == data[:size]).all())


def describe_numbers(sketch: NumericSketch) -> dict:
    """A numeric distribution of the report: moments, quantiles, a histogram, the sketch."""
    entry = {
        "count": sketch.count,
        "nanCount": sketch.nan,
        "infCount": sketch.inf,
        "min": round_float(sketch.minimum),
        "max": round_float(sketch.maximum),
        "mean": round_float(sketch.mean),
        "std": round_float(sketch.std),
        "zeros": sketch.zeros,
        "quantiles": [{"q": q, "value": round_float(sketch.quantile(q))} for q in QUANTILES],
    }
    if sketch.count:
        low, high = sketch.minimum, sketch.maximum
        if sketch.integral and high - low <= INTEGER_BINS:  # one bin per whole number
            edges = np.arange(low - 0.5, high + 1.0)
        else:
            edges = np.linspace(low, high if high > low else low + 1, HISTOGRAM_BINS + 1)
        entry["histogram"] = {
            "edges": [round_float(e) for e in edges.tolist()],
            "counts": sketch.histogram(edges),
        }
    data = sketch.to_json()
    entry["sketch"] = {
        key: data[key] for key in ("relativeAccuracy", "integral", "zeros", "positive", "negative")
    }
    return entry


def describe_categories(top: TopK) -> dict:
    """A categorical distribution of the report: top entries, coverage curve, the summary."""
    return {
        "occurrences": top.total,
        "distinctAtLeast": len(top.counts),
        "exact": top.exact,
        "maxCountError": top.dropped,
        "top": [{"value": v, "count": c} for v, c in top.items(TOP_SHOWN)],
        "coverage": [{"k": k, "share": round_float(s, 10)} for k, s in top.coverage(COVERAGE_KS)],
        "summary": top.to_json()["counts"],
    }


def list_vocabularies(lists: Mapping) -> dict[str, pa.Array]:
    """The entries of each tensor's feature list (`{tensor: FeatureList}`), as `add_batch`
    takes them (`vocabularies`)."""
    return {name: vocab_array(fl) for name, fl in split_term_only(lists)[0].items()}


class Statistics:
    """The whole run's statistics: files, tensors and dead letters (see the module docstring).

    Args:
        config: the job's config; every tensor gets an entry.
    """

    def __init__(self, config: TensorizeConfig):
        self.tensors = {t.name: TensorStatistics(t) for t in config.tensors}
        #: file -> [rows decoded, records that did not decode, rows that did not convert]
        self.files: dict[str, list[int]] = {}
        #: reason -> [count, smallest example]
        self.reasons: dict[str, list] = {}
        #: Seconds spent filling these statistics, and when (epoch seconds) the first and the
        #: last batch came: the caller keeps them (see `ComputeStatistics`).
        self.seconds = 0.0
        self.first_batch: float | None = None
        self.last_batch: float | None = None

    def add_batch(
        self, batch: pa.RecordBatch, vocabularies: Mapping[str, pa.Array] | None = None, hashes: bool = True
    ) -> None:
        """Add one extracted batch; `vocabularies`: the feature lists' entries by tensor;
        `hashes=False`: the hashed tensors' buckets come from the hashing step instead
        (`add_distinct_hashes`)."""
        vocabularies = vocabularies or {}
        source = source_of(batch)
        path = source[0] if source else ""
        self.files.setdefault(path, [0, 0, 0])[0] += batch.num_rows
        names = set(batch.schema.names)
        for name, stats in self.tensors.items():
            if name not in names:
                continue
            column = batch.column(name)
            vocabulary = vocabularies.get(name)
            if vocabulary is not None and not uses_feature_list(stats.tensor, column.type):
                vocabulary = None
            stats.add(column, vocabulary, hashes)

    def add_distinct_hashes(self, seen: Mapping[str, DistinctHashes]) -> None:
        """Add what the hashing step saw of one batch (`hash_tensors_with_distinct`), by tensor
        (its time counts in `seconds`)."""
        started = time.perf_counter()
        for name, distinct in seen.items():
            self.tensors[name].add_distinct_hashes(distinct)
        self.seconds += time.perf_counter() - started

    def add_dead_letter(self, letter: dict, text: str) -> None:
        """Add one dead letter (`text`: its JSON line)."""
        source = str(letter.get("source", ""))
        if "tensors" in letter:  # a row that did not convert; its source names the row
            match = _ROW_SOURCE.match(source)
            self.files.setdefault(match.group(1) if match else source, [0, 0, 0])[2] += 1
        else:  # a record that did not decode
            self.files.setdefault(source, [0, 0, 0])[1] += 1
        reason = str(letter.get("reason", "?"))
        self._add_reason(reason, 1, text[:EXAMPLE_CHARS])

    def _add_reason(self, reason: str, count: int, example: str) -> None:
        if reason not in self.reasons and len(self.reasons) >= MAX_DEAD_LETTER_REASONS:
            reason = OTHER_REASONS
        entry = self.reasons.setdefault(reason, [0, example])
        entry[0] += count
        entry[1] = min(entry[1], example)

    def merge(self, other: Statistics) -> Statistics:
        for name, stats in other.tensors.items():
            self.tensors[name].merge(stats)
        for path, counts in other.files.items():
            mine = self.files.setdefault(path, [0, 0, 0])
            for i, value in enumerate(counts):
                mine[i] += value
        for reason, (count, example) in sorted(other.reasons.items()):
            self._add_reason(reason, count, example)
        self.seconds += other.seconds
        for attr, pick in (("first_batch", min), ("last_batch", max)):
            mine, theirs = getattr(self, attr), getattr(other, attr)
            setattr(self, attr, theirs if mine is None else mine if theirs is None else pick(mine, theirs))
        return self

    def describe(self) -> dict:
        """The report's JSON document, without the split, drift and timings (see docs/report.md)."""
        files = []
        for path, (decoded, undecodable, unconvertible) in sorted(self.files.items()):
            if not (decoded or undecodable or unconvertible):
                continue
            files.append(
                {
                    "file": path,
                    "rowsRead": decoded + undecodable,
                    "rowsWritten": decoded - unconvertible,
                    "badRows": undecodable + unconvertible,
                }
            )
        letters = [
            {
                "reason": reason,
                "count": count,
                "example": json.loads(example) if _is_json(example) else example,
            }
            for reason, (count, example) in sorted(self.reasons.items(), key=lambda r: (-r[1][0], r[0]))
        ]
        return {
            "version": REPORT_VERSION,
            "rowsRead": sum(f["rowsRead"] for f in files),
            "rowsWritten": sum(f["rowsWritten"] for f in files),
            "badRows": sum(f["badRows"] for f in files),
            "files": files,
            "deadLetters": letters,
            "tensors": [stats.describe() for stats in self.tensors.values()],
        }

    def document(self) -> dict:
        """`describe()` with the `timings` the statistics can tell: `statistics` (the seconds
        spent filling them, summed), `readAndExtract` (first to last batch) and `lastBatchAt`
        (epoch seconds, for the report step to time the stages after it)."""
        document = self.describe()
        document["timings"] = {"statistics": self.seconds}
        if self.first_batch is not None:
            document["timings"]["readAndExtract"] = self.last_batch - self.first_batch
            document["timings"]["lastBatchAt"] = self.last_batch
        return document

    def add_timed_batch(
        self, batch: pa.RecordBatch, vocabularies: Mapping[str, pa.Array] | None = None, hashes: bool = True
    ) -> None:
        """`add_batch`, keeping the seconds it took and when it came (`document()`'s timings)."""
        started = time.perf_counter()
        self.add_batch(batch, vocabularies, hashes)
        self.seconds += time.perf_counter() - started
        now = time.time()
        self.first_batch = now if self.first_batch is None else min(self.first_batch, now)
        self.last_batch = now if self.last_batch is None else max(self.last_batch, now)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
