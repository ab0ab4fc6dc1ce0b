"""The run report's entries made of the statistics: numeric and categorical distributions, and a
tensor's whole entry (see docs/report.md).

`describe_numbers` gives a `NumericSketch` as moments, `QUANTILES` and a histogram;
`describe_categories` a `TopK` as its `TOP_SHOWN` top entries and coverage curve (at
`COVERAGE_KS`); `describe_tensor` a `TensorStatistics` as its entry of the report's `tensors`,
hashed tensors described as the ids their records hold (bucket loads, collisions).

Example:
    >>> from beam_tensorize.kernels.report.sketches import NumericSketch
    >>> sketch = NumericSketch()
    >>> sketch.add(np.array([1, 2, 2, 3]))
    >>> numbers = describe_numbers(sketch)
    >>> numbers["mean"], numbers["histogram"]["counts"]
    (2.0, [1, 2, 1])
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from beam_tensorize.kernels.features.conversion import is_hashed_ntv
from beam_tensorize.kernels.report.sketches import NumericSketch, TopK, round_float

if TYPE_CHECKING:
    from beam_tensorize.kernels.report.tensor_statistics import TensorStatistics

__all__ = [
    "COVERAGE_KS",
    "QUANTILES",
    "TOP_SHOWN",
    "describe_categories",
    "describe_numbers",
    "describe_tensor",
]

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


def _share(part: int, whole: int) -> float:
    return round_float(part / whole, 10) if whole else 0.0


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


def describe_tensor(stats: TensorStatistics) -> dict:
    """A tensor's entry of the report (see docs/report.md)."""
    out = stats.tensor.output
    entry = {
        "name": stats.name,
        "dtype": out.dtype,
        "shape": list(out.shape),
        "isSparse": bool(out.is_sparse),
        "kind": stats.kind,
        "rows": stats.rows,
        "nullRows": stats.nulls,
        "emptyRows": stats.empties,
        "nullRate": _share(stats.nulls, stats.rows),
        "emptyRate": _share(stats.empties, stats.rows),
    }
    if stats.not_summarized is not None:
        entry["notSummarized"] = f"values of type {stats.not_summarized} have no statistics"
    if stats.lengths is not None:
        entry["lengths"] = describe_numbers(stats.lengths)
    if stats.values is not None:
        entry["numeric"] = describe_numbers(stats.values)
    if stats.top is not None:
        entry["categorical"] = describe_categories(stats.top)
    if stats.unknown is not None:
        occurrences = stats.top.total if stats.top else 0
        entry["featureList"] = {
            "size": stats.list_size,
            "unknownOccurrences": stats.unknown,
            "unknownShare": _share(stats.unknown, occurrences),
        }
    if stats.hash_info is not None and not stats.ntv and stats.not_summarized is None:  # its ids
        ids, top = _hashed_ids(stats)
        if ids.count:
            entry["numeric"] = describe_numbers(ids)
        if top is not None and top.total:
            entry["categorical"] = describe_categories(top)
    if stats.hash_info is not None:
        entry["hashing"] = _describe_hashing(stats)
        entry["hashing"]["statisticsOf"] = "input" if stats.ntv else "ids"
    dimension = _dimension(stats)
    if dimension and stats.lengths is not None and stats.lengths.count:
        entry["sparse"] = {
            "dimension": dimension,
            "meanNonZeros": round_float(stats.lengths.mean),
            "density": round_float(stats.lengths.mean / dimension, 10),
        }
    return entry


def _dimension(stats: TensorStatistics) -> int | None:
    """The length of the vector a sparse / NTV tensor becomes (None: not a vector)."""
    if stats.hash_info is not None and is_hashed_ntv(stats.tensor):
        return stats.hash_info.hash_bucket_size
    if stats.ntv and stats.list_size is not None:
        return stats.list_size + 1
    shape = stats.tensor.output.shape
    if stats.tensor.output.is_sparse and shape and all(d > 0 for d in shape):
        return int(np.prod(shape))
    return None


def _hashed_ids(stats: TensorStatistics) -> tuple[NumericSketch, TopK | None]:
    """The numbers and the entries (ids as text; None past `MAX_TRACKED_BUCKETS` buckets) of
    the ids a hashed tensor's records hold, from the bucket loads: exact. The entries keep
    the `TOP_K_CAPACITY` most frequent ids (ties: the smaller id); `dropped` is the load of
    the next one, so every id more frequent than that is listed, with its exact count."""
    if stats.loads is None:
        return stats.ids, None
    used = np.flatnonzero(stats.loads)
    loads = stats.loads[used]
    ids = NumericSketch()
    ids.add_counts(used, loads)
    top = TopK()
    order = np.lexsort((used, -loads))
    kept = order[: top.capacity]
    top.total = int(loads.sum())
    top.dropped = int(loads[order[top.capacity]]) if len(order) > top.capacity else 0
    top.counts = {str(i): c for i, c in zip(used[kept].tolist(), loads[kept].tolist())}
    return ids, top


def _describe_hashing(stats: TensorStatistics) -> dict:
    info = stats.hash_info
    n, k = info.hash_bucket_size, info.num_hash_functions
    distinct = stats.distinct.estimate()
    entry = {
        "hashBucketSize": n,
        "numHashFunctions": k,
        "distinctValues": distinct,
        "distinctExact": stats.distinct.exact,
    }
    if stats.loads is None:
        expected = 1 - (1 - 1 / n) ** max(distinct - 1, 0)
        entry.update({"collidingShare": round_float(expected, 10), "estimated": True})
        return entry
    loads = stats.loads[:n]
    used = loads > 0
    occupied = stats.high >= 0
    alone = int((occupied & (stats.low == stats.high)).sum())
    colliding = max(distinct - alone, 0) if distinct else 0
    top = int(loads.max()) if n else 0
    if top <= INTEGER_BINS:  # one bin per load (loads are whole numbers)
        edges = np.arange(-0.5, top + 1.0)
    else:
        edges = np.linspace(0, top, HISTOGRAM_BINS + 1)
    histogram = np.histogram(loads, bins=edges)[0]
    entry.update(
        {
            "estimated": not stats.distinct.exact,
            "collidingValues": colliding,
            "collidingShare": _share(colliding, distinct),
            "bucketsUsed": int(used.sum()),
            "bucketsUsedShare": _share(int(used.sum()), n),
            "dummyIdOccurrences": int(stats.loads[n]),
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
