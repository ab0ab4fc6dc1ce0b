"""Drift between two run reports (a validation / test split against the train split), as TFDV
measures it.

* Text and feature-list entries (`categorical`): the L-infinity distance between the two
  normalized distributions, `max_v |p(v) - q(v)|` over every value in either report's frequent
  values summary (0: same shares, 1: disjoint). Values outside a summary count as 0, so with
  more distinct values than the summary holds the distance is within the summaries' count
  error (`maxCountError / occurrences`) of the exact one.
* Numbers: TFDV's approximate Jensen-Shannon divergence (base 2, between 0 and 1) of the two
  reports' histograms (`tfdv_jensen_shannon`: both rebucketed onto the union of their bucket
  edges, values spread evenly within a bucket), so that `tfdv.validate_statistics` with a
  `jensen_shannon_divergence` threshold on the reports' `stats.pb` measures the same figure.
  The page plots the two distributions over `DRIFT_BINS` common equal-width bins, read from
  each report's quantile sketch.

Both kinds keep what the page plots, train beside this split: the numbers' two histograms
(`histograms`), the entries' shares of the `DRIFT_VALUES` values most frequent in either report,
the value whose shares differ most always among them (`frequencies`).

A tensor with both kinds (name-term-value) is compared on its entries; a tensor with neither
(only list lengths) on its lengths. A distance above the threshold flags the tensor.

Example:
    >>> a = {"tensors": [{"name": "g", "categorical": {"occurrences": 4, "summary": [["x", 3], ["y", 1]]}}]}
    >>> b = {"tensors": [{"name": "g", "categorical": {"occurrences": 4, "summary": [["x", 1], ["y", 3]]}}]}
    >>> compare(a, b, "trainingData", 0.1)["tensors"][0]  # doctest: +NORMALIZE_WHITESPACE
    {'name': 'g', 'measure': 'L-infinity', 'distance': 0.5, 'flagged': True, 'compared': 'values',
     'frequencies': {'values': ['x', 'y'], 'train': [0.75, 0.25], 'current': [0.25, 0.75]}}
"""

from __future__ import annotations

import numpy as np

from beam_tensorize.kernels.report.sketches import NumericSketch, round_float

__all__ = [
    "DEFAULT_DRIFT_THRESHOLD",
    "DRIFT_BINS",
    "DRIFT_VALUES",
    "compare",
    "frequencies",
    "jensen_shannon",
    "l_infinity",
    "numeric_bins",
    "tfdv_jensen_shannon",
]

#: `--drift_threshold`'s default (TFDV's examples use 0.01 for L-infinity; 0.1 flags what a
#: person would see on the plots).
DEFAULT_DRIFT_THRESHOLD = 0.1
#: Histogram bins the numeric distributions are compared on.
DRIFT_BINS = 20
#: Values whose shares a categorical comparison keeps for the page.
DRIFT_VALUES = 20


def l_infinity(a: dict[str, int], total_a: int, b: dict[str, int], total_b: int) -> float:
    """Largest difference of the share of any value between two count tables."""
    if not total_a or not total_b:
        return 0.0 if total_a == total_b else 1.0
    keys = set(a) | set(b)
    return max((abs(a.get(k, 0) / total_a - b.get(k, 0) / total_b) for k in keys), default=0.0)


def frequencies(
    a: dict[str, int], total_a: int, b: dict[str, int], total_b: int, limit: int = DRIFT_VALUES
) -> dict:
    """Each split's share of the `limit` values most frequent in either count table (by the
    larger of their two shares, then by value), the value whose shares differ most (the
    L-infinity distance, first in that order on a tie) always among them; in that order."""

    def share(counts: dict[str, int], total: int, key: str) -> float:
        return counts.get(key, 0) / total if total else 0.0

    keys = sorted(set(a) | set(b), key=lambda k: (-max(share(a, total_a, k), share(b, total_b, k)), k))
    shown = keys[:limit]
    if keys and limit > 0:
        widest = max(keys, key=lambda k: abs(share(a, total_a, k) - share(b, total_b, k)))
        if widest not in shown:
            shown[-1] = widest
    return {
        "values": shown,
        "train": [round_float(share(a, total_a, k), 10) for k in shown],
        "current": [round_float(share(b, total_b, k), 10) for k in shown],
    }


def jensen_shannon(p, q) -> float:
    """Jensen-Shannon divergence (base 2) of two histograms (counts; normalized here)."""
    p, q = np.asarray(p, np.float64), np.asarray(q, np.float64)
    if p.sum() == 0 or q.sum() == 0:
        return 0.0 if p.sum() == q.sum() else 1.0
    p, q = p / p.sum(), q / q.sum()
    m = (p + q) / 2

    def kl(x):
        nz = x > 0
        return float(np.sum(x[nz] * np.log2(x[nz] / m[nz])))

    return max(0.0, min(1.0, (kl(p) + kl(q)) / 2))


def _buckets(histogram: dict) -> list[tuple[float, float, float]]:
    edges, counts = histogram["edges"], histogram["counts"]
    return [(edges[i], edges[i + 1], float(counts[i])) for i in range(len(counts))]


def _rebucket(buckets: list[tuple[float, float, float]], boundaries: list[float]) -> list[float]:
    """Counts over `boundaries` (which hold every edge of `buckets`), each bucket's count
    spread evenly over its width (TFDV's `RebucketHistogram`)."""
    counts = [0.0] * (len(boundaries) - 1)
    index = {b: i for i, b in enumerate(boundaries)}
    for low, high, count in buckets:
        first, last = index[low], index[high]
        for i in range(first, last):
            counts[i] += count * (boundaries[i + 1] - boundaries[i]) / (high - low)
    return counts


def tfdv_jensen_shannon(a: dict, b: dict, nan_a: int = 0, nan_b: int = 0) -> float | None:
    """TFDV's approximate Jensen-Shannon divergence of two histograms (`{"edges", "counts"}`,
    as the report keeps them), its `AlignHistograms` step by step: point buckets apart, both
    rebucketed onto the union of their edges, NaN counts as buckets of their own; None when one
    is empty (TFDV measures nothing then)."""
    sides = []
    points: dict[float, list[float]] = {}
    for side, histogram in enumerate((a, b)):
        spread = []
        for low, high, count in _buckets(histogram):
            if low == high:
                points.setdefault(low, [0.0, 0.0])[side] += count
            else:
                spread.append((low, high, count))
        sides.append(spread)
    edges_a = {e for low, high, _ in sides[0] for e in (low, high)}
    edges_b = {e for low, high, _ in sides[1] for e in (low, high)}
    if edges_a == edges_b:
        p, q = [c for *_, c in sides[0]], [c for *_, c in sides[1]]
    else:
        boundaries = sorted(edges_a | edges_b)
        p, q = _rebucket(sides[0], boundaries), _rebucket(sides[1], boundaries)
    for point in sorted(points):
        p.append(points[point][0])
        q.append(points[point][1])
    if nan_a or nan_b:
        p += [0.0, float(nan_a)]
        q += [float(nan_b), 0.0]
    p, q = np.asarray(p, np.float64), np.asarray(q, np.float64)
    if not p.sum() or not q.sum():
        return None
    p, q = p / p.sum(), q / q.sum()
    m = (p + q) / 2
    both = (p > 0) & (m > 0)
    kl_p = float(np.sum(p[both] * np.log2(p[both] / m[both])))
    both = (q > 0) & (m > 0)
    kl_q = float(np.sum(q[both] * np.log2(q[both] / m[both])))
    return min((kl_p + kl_q) / 2, 1.0)


def _sketch(numbers: dict) -> NumericSketch:
    data = dict(numbers["sketch"])
    data.update(
        {
            "count": numbers["count"],
            "nan": numbers.get("nanCount", 0),
            "inf": numbers.get("infCount", 0),
            "min": numbers["min"],
            "max": numbers["max"],
            "sum": 0.0,
            "sumOfSquares": 0.0,
        }
    )
    return NumericSketch.from_json(data)


def numeric_bins(a: dict, b: dict, bins: int = DRIFT_BINS) -> tuple[list[float], list[int], list[int]]:
    """Common bin edges of two numeric distributions of reports, and each one's counts."""
    sa, sb = _sketch(a), _sketch(b)
    lows = [s.minimum for s in (sa, sb) if s.count]
    highs = [s.maximum for s in (sa, sb) if s.count]
    if not lows:
        return [0.0, 1.0], [0], [0]
    low, high = min(lows), max(highs)
    edges = np.linspace(low, high if high > low else low + 1, bins + 1)
    return edges.tolist(), sa.histogram(edges), sb.histogram(edges)


def _compare_tensor(train: dict, current: dict) -> dict | None:
    for key in ("categorical", "numeric", "lengths"):
        if key in train and key in current:
            break
    else:
        return None
    compared = {"categorical": "values", "numeric": "values", "lengths": "lengths"}[key]
    if key == "categorical":
        a, b = train[key], current[key]
        counts = (
            dict(map(tuple, a["summary"])),
            a["occurrences"],
            dict(map(tuple, b["summary"])),
            b["occurrences"],
        )
        return {
            "measure": "L-infinity",
            "distance": l_infinity(*counts),
            "compared": compared,
            "frequencies": frequencies(*counts),
        }
    edges, base, now = numeric_bins(train[key], current[key])
    a, b = train[key], current[key]
    distance = None
    if a.get("histogram") and b.get("histogram"):
        distance = tfdv_jensen_shannon(
            a["histogram"], b["histogram"], a.get("nanCount", 0), b.get("nanCount", 0)
        )
    if distance is None:  # one side holds no number
        distance = jensen_shannon(base, now)
    return {
        "measure": "Jensen-Shannon",
        "distance": distance,
        "compared": compared,
        "histograms": {"edges": [round_float(e) for e in edges], "train": base, "current": now},
    }


def compare(train: dict, current: dict, against: str, threshold: float) -> dict:
    """The `drift` entry of `current`'s report: every tensor both reports describe, its
    distance to `train` (the report of split `against`) and whether it exceeds `threshold`."""
    previous = {t["name"]: t for t in train.get("tensors", [])}
    tensors = []
    for tensor in current.get("tensors", []):
        if tensor["name"] not in previous:
            continue
        found = _compare_tensor(previous[tensor["name"]], tensor)
        if found is None:
            continue
        distance = round_float(found.pop("distance"), 10)
        entry = {"name": tensor["name"], "measure": found.pop("measure"), "distance": distance}
        entry["flagged"] = distance > threshold
        entry.update(found)
        tensors.append(entry)
    return {
        "against": against,
        "threshold": threshold,
        "flagged": [t["name"] for t in tensors if t["flagged"]],
        "tensors": tensors,
    }
