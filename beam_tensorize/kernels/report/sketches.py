"""Mergeable, bounded-memory summaries of a stream of values, updated with whole numpy arrays.

Each summary has `add` (a batch of values), `merge` (another summary of the same kind, any
order) and `to_json` / `from_json` (plain JSON data). Their sizes do not grow with the data:

* `NumericSketch`: count, NaN / infinite count, min, max, mean, standard deviation (exact up to
  floating-point rounding, printed with 12 significant digits) and a relative-error quantile
  sketch in the manner of DDSketch: each magnitude falls in a bucket named by its float64
  exponent and top 6 mantissa bits (64 buckets per power of two, found with one integer
  shift), counted per sign. Any quantile it gives is within a relative error `a`
  (`RELATIVE_ACCURACY`, 2**-7 = 0.78%) of a value whose rank is the requested one. At most
  `MAX_BUCKETS` buckets per sign are kept (magnitudes over 64 powers of two, 1.8e19); beyond
  that the smallest magnitudes merge into one bucket (their quantiles lose the bound). Bucket
  counts are exact sums, so the sketch is the same whatever order the batches come in.
* `TopK`: Misra-Gries heavy hitters with `capacity` counters (default 1,000). Exact (and the
  same in any order) while there are at most `capacity` distinct values; otherwise each count
  is an under-estimate by at most `dropped` (at most occurrences / (capacity + 1)), and every
  value more frequent than that is kept.
* `DistinctSketch`: k-minimum values over 62-bit hashes (K = 2,048): exact below K distinct
  values, otherwise a relative standard error of about 1 / sqrt(K - 2) (2.2%).

Example:
    >>> import numpy as np
    >>> s = NumericSketch()
    >>> s.add(np.arange(1, 101, dtype=np.float64))
    >>> round(s.quantile(0.5)), s.minimum, s.maximum
    (50, 1.0, 100.0)
    >>> t = TopK(capacity=2)
    >>> t.add(["a", "b", "c"], [3, 1, 1])  # three distinct values, two counters
    >>> t.items(), t.dropped  # counts may lack at most `dropped`
    ([('a', 2)], 1)
"""

from __future__ import annotations

import functools
import hashlib
import math
import threading
from collections.abc import Iterable, Sequence

import numpy as np

from beam_tensorize.kernels.extensions import load_extension

__all__ = [
    "DISTINCT_K",
    "MAX_BUCKETS",
    "RELATIVE_ACCURACY",
    "TOP_K_CAPACITY",
    "DistinctSketch",
    "NumericSketch",
    "TopK",
    "round_float",
]

#: Mantissa bits a `NumericSketch` bucket keeps: 64 buckets per power of two.
_MANTISSA_BITS = 6
_SHIFT = 52 - _MANTISSA_BITS
_SIGN = 1 << (63 - _SHIFT)
#: Relative accuracy of `NumericSketch` quantiles: half a bucket, 2**-7 (0.78%).
RELATIVE_ACCURACY = 2.0 ** -(_MANTISSA_BITS + 1)
#: Most buckets per sign in a `NumericSketch` (64 powers of two).
MAX_BUCKETS = 4096
#: Counters of a `TopK`.
TOP_K_CAPACITY = 1000
#: Smallest hashes kept by a `DistinctSketch`.
DISTINCT_K = 2048
_HASH_SPACE = float(2**62)


def round_float(value: float | None, digits: int = 12) -> float | None:
    """`value` with `digits` significant digits (None / NaN / inf as JSON can hold them: None)."""
    if value is None or not math.isfinite(value):
        return None
    return float(f"{value:.{digits}g}")


def _bucket_index(magnitude: np.ndarray) -> np.ndarray:
    """Bucket of positive finite float64 values: the exponent and the top `_MANTISSA_BITS`
    mantissa bits (monotone in the value)."""
    return magnitude.view(np.int64) >> _SHIFT


def _bucket_value(index: np.ndarray) -> np.ndarray:
    """The middle of each bucket (within `RELATIVE_ACCURACY` of every value in it)."""
    return ((np.asarray(index, np.int64) << _SHIFT) | (1 << (_SHIFT - 1))).view(np.float64)


def _bucket_points(index: np.ndarray, integral: bool) -> np.ndarray:
    """The representative magnitude of each bucket: its middle, or for whole numbers the one
    whole number the bucket holds, when it holds one (then exact)."""
    middle = _bucket_value(index)
    if not integral or not len(index):
        return middle
    index = np.asarray(index, np.int64)
    low = (index << _SHIFT).view(np.float64)
    high = ((index + 1) << _SHIFT).view(np.float64)
    whole = np.ceil(low)
    single = (whole < high) & (whole + 1 >= high)
    return np.where(single, whole, middle)


_SCRATCH = threading.local()
#: The number types the C extension summarizes (others go through numpy).
_NATIVE_TYPES = frozenset(np.dtype(t) for t in (np.float64, np.float32, np.int64, np.int32))


@functools.lru_cache(maxsize=1)
def _extension():
    """The optional C extension `_sketch` (one pass per batch), or None (numpy)."""
    return load_extension("beam_tensorize.kernels.report._sketch", 1, "numeric sketch", "numpy")


def _scratch(size: int, dtype=np.int64) -> np.ndarray:
    """A buffer of `size` values of `dtype` (int64 or float64), reused by this thread's
    sketches: a fresh array per batch costs more than the work on it (large ones are mapped
    from the system and faulted in again on every batch)."""
    name = f"buffer_{np.dtype(dtype).name}"
    buffer = getattr(_SCRATCH, name, None)
    if buffer is None or len(buffer) < size:
        buffer = np.empty(max(size, 1 << 16), dtype)
        setattr(_SCRATCH, name, buffer)
    return buffer[:size]


class _Store:
    """Dense bucket counts from `offset` on, for one sign of a `NumericSketch`."""

    def __init__(self):
        self.offset = 0
        self.dense = np.zeros(0, np.int64)

    def add_dense(self, offset: int, dense: np.ndarray) -> None:
        if not len(dense):
            return
        if not len(self.dense):
            self.offset, self.dense = offset, dense.astype(np.int64, copy=True)
        else:
            low = min(self.offset, offset)
            high = max(self.offset + len(self.dense), offset + len(dense))
            merged = np.zeros(high - low, np.int64)
            merged[self.offset - low : self.offset - low + len(self.dense)] += self.dense
            merged[offset - low : offset - low + len(dense)] += dense
            self.offset, self.dense = low, merged
        if len(self.dense) > MAX_BUCKETS:  # fold the smallest magnitudes into one bucket
            cut = len(self.dense) - MAX_BUCKETS
            folded = self.dense[: cut + 1].sum()
            self.offset, self.dense = self.offset + cut, self.dense[cut:].copy()
            self.dense[0] = folded

    def add_indices(self, index: np.ndarray) -> None:
        if len(index):
            low = int(index.min())
            self.add_dense(low, np.bincount(index - low))

    def merge(self, other: _Store) -> None:
        self.add_dense(other.offset, other.dense)

    @property
    def index(self) -> np.ndarray:
        return np.flatnonzero(self.dense) + self.offset

    @property
    def counts(self) -> np.ndarray:
        return self.dense[self.dense > 0]

    def to_json(self) -> list:
        return [self.index.tolist(), self.counts.tolist()]

    @classmethod
    def from_json(cls, data) -> _Store:
        store = cls()
        index, counts = (np.asarray(part, np.int64) for part in data)
        if len(index):
            store.offset = int(index.min())
            store.dense = np.zeros(int(index.max()) - store.offset + 1, np.int64)
            store.dense[index - store.offset] = counts
        return store


class NumericSketch:
    """Moments, extremes and a quantile sketch of numbers (see the module docstring)."""

    def __init__(self):
        self.count = 0  # finite values
        self.nan = 0
        self.inf = 0
        self.minimum: float | None = None
        self.maximum: float | None = None
        self.total = 0.0
        self.squares = 0.0
        self.zeros = 0
        self.integral = True  # only whole numbers given (integer arrays)
        self.positive = _Store()
        self.negative = _Store()

    def add(self, values: np.ndarray) -> None:
        """Add a batch of numbers (integers keep `integral`; floats clear it)."""
        self._add(values, None)

    def add_counts(self, values: np.ndarray, counts: np.ndarray) -> None:
        """Add each of `values` `counts` times (int counts, one per value; e.g. the distinct ids
        of a batch and their occurrences): the sketch of the values repeated that often."""
        counts = np.asarray(counts, np.int64)
        values = np.asarray(values)
        if len(values) != len(counts):
            raise ValueError(f"{len(values)} values but {len(counts)} counts")
        if (counts < 0).any():
            raise ValueError("counts must not be negative")
        self._add(values, counts)

    def _add(self, values: np.ndarray, counts: np.ndarray | None) -> None:
        values = np.asarray(values)
        if counts is not None and not counts.all():
            values, counts = values[counts > 0], counts[counts > 0]
        if not len(values):
            return
        if not (np.issubdtype(values.dtype, np.integer) or values.dtype == np.bool_):
            self.integral = False
        native = _extension()
        if counts is None and native is not None and values.dtype in _NATIVE_TYPES:
            summary = native.summarize(np.ascontiguousarray(values))
            if summary is not None:  # (None: a NaN or an infinity among them, counted below)
                self._add_summary(*summary)
                return
        if values.dtype != np.float64 or not values.flags.c_contiguous:
            converted = _scratch(len(values), np.float64)
            np.copyto(converted, values, casting="unsafe")
            values = converted
        weights = None if counts is None else counts.astype(np.float64)
        total = float(values.sum()) if weights is None else float(np.dot(values, weights))
        if not math.isfinite(total):  # a NaN or an infinity (or a sum past float64's range)
            finite = np.isfinite(values)
            if not finite.all():
                nan = np.isnan(values)
                inf = ~finite & ~nan
                if counts is None:
                    self.nan += int(nan.sum())
                    self.inf += int(inf.sum())
                else:
                    self.nan += int(counts[nan].sum())
                    self.inf += int(counts[inf].sum())
                    counts, weights = counts[finite], weights[finite]
                values = values[finite]
                if not len(values):
                    return
                total = float(values.sum()) if weights is None else float(np.dot(values, weights))
        if weights is None:  # as the C extension: numpy's pairwise sum of the squares
            with np.errstate(over="ignore"):  # (a square past float64's range is inf, as there)
                squares = float(np.add.reduce(np.square(values)))
        else:
            squares = float(np.einsum("i,i,i->", values, values, weights))
        count = len(values) if counts is None else int(counts.sum())
        self._add_moments(count, float(values.min()), float(values.max()), total, squares)
        # One shift of the float64 bits names each value's bucket: `index` for positive values,
        # `index - _SIGN` for negative ones (arithmetic shift of the sign bit); one bincount
        # counts them. The codes go to a reused buffer (a fresh one per batch costs more than
        # the shift).
        code = _scratch(len(values))
        np.right_shift(values.view(np.int64), _SHIFT, out=code)
        first = int(code.min())
        np.subtract(code, first, out=code)
        if weights is None:
            dense = np.bincount(code)
        else:  # float64 sums of whole counts: exact below 2**53 occurrences per bucket
            dense = np.bincount(code, weights=weights).astype(np.int64)
        split = min(max(-first, 0), len(dense))  # codes below 0: negative values
        parts = ((self.negative, dense[:split], first + _SIGN), (self.positive, dense[split:], first + split))
        for store, bucket_counts, offset in parts:
            if not len(bucket_counts):
                continue
            nonzero = np.flatnonzero(bucket_counts)
            if not len(nonzero):
                continue
            start, stop = int(nonzero[0]), int(nonzero[-1]) + 1
            if offset + start == 0:  # bucket 0: zeros (and the smallest subnormals)
                self.zeros += int(bucket_counts[0])
                start = int(nonzero[1]) if len(nonzero) > 1 else stop
            if start < stop:
                store.add_dense(offset + start, bucket_counts[start:stop])

    def _add_moments(self, count: int, low: float, high: float, total: float, squares: float) -> None:
        """Add a batch's count of finite values, their extremes, sum and sum of squares."""
        self.count += count
        self.minimum = low if self.minimum is None else min(self.minimum, low)
        self.maximum = high if self.maximum is None else max(self.maximum, high)
        self.total += total
        self.squares += squares

    def _add_summary(
        self, count, low, high, total, squares, zeros, negative_first, negative, positive_first, positive
    ):
        """Add what the C extension's `summarize` gave of a batch (finite values only)."""
        self._add_moments(count, low, high, total, squares)
        self.zeros += zeros
        for store, first, dense in (
            (self.negative, negative_first, negative),
            (self.positive, positive_first, positive),
        ):
            if dense:
                store.add_dense(first, np.frombuffer(dense, np.int64))

    def merge(self, other: NumericSketch) -> None:
        self.count += other.count
        self.nan += other.nan
        self.inf += other.inf
        for attr, pick in (("minimum", min), ("maximum", max)):
            mine, theirs = getattr(self, attr), getattr(other, attr)
            setattr(self, attr, theirs if mine is None else mine if theirs is None else pick(mine, theirs))
        self.total += other.total
        self.squares += other.squares
        self.zeros += other.zeros
        self.integral = self.integral and other.integral
        self.positive.merge(other.positive)
        self.negative.merge(other.negative)

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count else None

    @property
    def std(self) -> float | None:
        if not self.count:
            return None
        mean = self.total / self.count
        return math.sqrt(max(self.squares / self.count - mean * mean, 0.0))

    def points(self) -> tuple[np.ndarray, np.ndarray]:
        """(representative value, count) of every bucket, ascending by value."""
        values = np.concatenate(
            [
                -_bucket_points(self.negative.index[::-1], self.integral),
                [0.0],
                _bucket_points(self.positive.index, self.integral),
            ]
        )
        counts = np.concatenate([self.negative.counts[::-1], [self.zeros], self.positive.counts])
        keep = counts > 0
        return values[keep].astype(np.float64), counts[keep].astype(np.int64)

    def quantile(self, q: float) -> float | None:
        """The value at rank `q` (0..1), within the relative accuracy; clipped to min / max."""
        if not self.count:
            return None
        values, counts = self.points()
        rank = q * (self.count - 1)
        at = int(np.searchsorted(np.cumsum(counts), rank, side="right"))
        return float(np.clip(values[min(at, len(values) - 1)], self.minimum, self.maximum))

    def histogram(self, edges: Sequence[float]) -> list[int]:
        """Counts of values per bin `[edges[i], edges[i+1])` (the last bin closed), each bucket
        counted at its representative value clipped to [min, max] and to the edges (a value
        within the relative accuracy of an edge may be counted in the bin beside)."""
        values, counts = self.points()
        edges = np.asarray(edges, dtype=np.float64)
        if not len(values):
            return [0] * (len(edges) - 1)
        clipped = np.clip(np.clip(values, self.minimum, self.maximum), edges[0], edges[-1])
        bins = np.clip(np.searchsorted(edges, clipped, side="right") - 1, 0, len(edges) - 2)
        return np.bincount(bins, weights=counts, minlength=len(edges) - 1).astype(np.int64).tolist()

    def to_json(self) -> dict:
        return {
            "count": self.count,
            "nan": self.nan,
            "inf": self.inf,
            "min": self.minimum,
            "max": self.maximum,
            "sum": self.total,
            "sumOfSquares": self.squares,
            "zeros": self.zeros,
            "integral": self.integral,
            "relativeAccuracy": RELATIVE_ACCURACY,
            "positive": self.positive.to_json(),
            "negative": self.negative.to_json(),
        }

    @classmethod
    def from_json(cls, data: dict) -> NumericSketch:
        sketch = cls()
        sketch.count, sketch.nan, sketch.inf = data["count"], data["nan"], data["inf"]
        sketch.minimum, sketch.maximum = data["min"], data["max"]
        sketch.total, sketch.squares, sketch.zeros = data["sum"], data["sumOfSquares"], data["zeros"]
        sketch.integral = data.get("integral", False)
        sketch.positive = _Store.from_json(data["positive"])
        sketch.negative = _Store.from_json(data["negative"])
        return sketch


#: Longer values are kept (and reported) by their start, length and digest: a report holds no
#: whole 1 GB string, and the statistics sent between steps stay small.
MAX_VALUE_CHARS = 256


def shortened(value: str) -> str:
    """A long value's stand-in: its first characters, its length and a digest of the whole.

    Example:
        >>> shortened("x" * 1000)[:12], shortened("x" * 1000)[-40:]
        ('xxxxxxxxxxxx', '… (1000 characters, sha256 44f8354494a5)')
    """
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:12]
    return f"{value[:64]}… ({len(value)} characters, sha256 {digest})"


class TopK:
    """Misra-Gries frequent values (see the module docstring).

    Args:
        capacity: counters kept.
    """

    def __init__(self, capacity: int = TOP_K_CAPACITY):
        self.capacity = capacity
        self.counts: dict[str, int] = {}
        self.total = 0  # occurrences added
        self.dropped = 0  # what every kept count may lack (Misra-Gries decrements)

    def add(self, values: Sequence[str], counts: Sequence[int] | np.ndarray) -> None:
        """Add distinct `values` (a sequence or an Arrow array) seen `counts` times each."""
        counts = np.asarray(counts, dtype=np.int64)
        self.total += int(counts.sum())
        if len(counts) > self.capacity:  # summarize the batch first, in numpy
            keep = np.argpartition(-counts, self.capacity)[: self.capacity + 1]
            floor = int(counts[keep].min())
            keep = keep[counts[keep] > floor]
            self.dropped += floor
            values = values.take(keep) if hasattr(values, "take") else [values[i] for i in keep.tolist()]
            counts = counts[keep] - floor
        if hasattr(values, "to_pylist"):  # an Arrow array
            values = values.to_pylist()
        merged = self.counts
        for value, count in zip(values, counts.tolist()):
            if isinstance(value, str) and len(value) > MAX_VALUE_CHARS:
                value = shortened(value)
            merged[value] = merged.get(value, 0) + count
        self._shrink()

    def merge(self, other: TopK) -> None:
        self.total += other.total
        self.dropped += other.dropped
        for value, count in other.counts.items():
            self.counts[value] = self.counts.get(value, 0) + count
        self._shrink()

    def _shrink(self) -> None:
        if len(self.counts) <= self.capacity:
            return
        ordered = sorted(self.counts.values(), reverse=True)
        floor = ordered[self.capacity]
        self.dropped += floor
        self.counts = {v: c - floor for v, c in self.counts.items() if c > floor}

    @property
    def exact(self) -> bool:
        return self.dropped == 0

    def items(self, k: int | None = None) -> list[tuple[str, int]]:
        """The `k` (default all) most frequent values, by count descending then value."""
        ordered = sorted(self.counts.items(), key=lambda item: (-item[1], item[0]))
        return ordered if k is None else ordered[:k]

    def coverage(self, ks: Iterable[int]) -> list[tuple[int, float]]:
        """(k, share of all occurrences that the top k values account for) for each k."""
        counts = np.cumsum([c for _, c in self.items()]) if self.counts else np.zeros(1)
        out = []
        for k in ks:
            covered = float(counts[min(k, len(counts)) - 1]) if self.counts else 0.0
            out.append((k, covered / self.total if self.total else 0.0))
        return out

    def to_json(self) -> dict:
        return {
            "capacity": self.capacity,
            "total": self.total,
            "dropped": self.dropped,
            "counts": [[v, c] for v, c in self.items()],
        }

    @classmethod
    def from_json(cls, data: dict) -> TopK:
        top = cls(data["capacity"])
        top.total, top.dropped = data["total"], data["dropped"]
        top.counts = {v: c for v, c in data["counts"]}
        return top


class DistinctSketch:
    """K-minimum-values distinct count over 62-bit hashes (see the module docstring)."""

    def __init__(self, k: int = DISTINCT_K):
        self.k = k
        self.hashes = np.zeros(0, np.int64)

    def add(self, hashes: np.ndarray) -> None:
        """Add the hashes (int64 in [0, 2**62)) of some values."""
        hashes = np.asarray(hashes, np.int64)
        kept = self.hashes
        if len(kept) >= self.k:  # only hashes below the k-th smallest can enter
            hashes = hashes[hashes < kept[-1]]
        if not len(kept):
            self.hashes = np.unique(hashes)[: self.k]
            return
        new = np.unique(hashes)  # few once the sketch is full: merged into the sorted kept ones
        at = np.searchsorted(kept, new)
        unseen = kept[np.minimum(at, len(kept) - 1)] != new
        new, at = new[unseen], at[unseen]
        if len(new):
            self.hashes = np.insert(kept, at, new)[: self.k]

    def merge(self, other: DistinctSketch) -> None:
        self.add(other.hashes)

    @property
    def exact(self) -> bool:
        return len(self.hashes) < self.k

    def estimate(self) -> int:
        if self.exact:
            return len(self.hashes)
        return round((self.k - 1) * _HASH_SPACE / float(self.hashes[-1] + 1))

    def to_json(self) -> dict:
        return {"k": self.k, "hashes": self.hashes.tolist()}

    @classmethod
    def from_json(cls, data: dict) -> DistinctSketch:
        sketch = cls(data["k"])
        sketch.hashes = np.asarray(data["hashes"], np.int64)
        return sketch
