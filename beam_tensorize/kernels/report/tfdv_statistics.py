"""The run report's statistics as TFDV's `DatasetFeatureStatisticsList`
(`report/<split>.stats.pb`), for `tfdv.load_stats_binary`, `tfdv.visualize_statistics`,
`tfdv.validate_statistics` and Facets.

Built from the report's one-pass sketches (no second pass over the data, no TFDV at run time)
and the metadata document, feature by stored feature as TFDV names them (a sparse tensor's
`<name>/indices` and `<name>/values`, ...):

* every feature: examples holding it, values per example (min / max / mean / total and a
  quantile histogram of the counts);
* numbers (`num_stats`): mean, standard deviation, zeros, min, median, max, an equal-width and
  a quantile histogram;
* strings and ids TFX treats as categories (feature-list ids and hash buckets: an
  `int_domain` with `is_categorical` in `schema.pbtxt`): `string_stats` as TFDV computes them
  for such features: distinct values, top values and the rank histogram, over the values the
  records hold (feature-list entries are given their ids through the run's lists);
What the sketches do not hold is left out rather than guessed: a sparse tensor's indices and
values (the report sketches its input entries, and a row's entries that share an index are
written summed into one) and a dense vector of all ids have their example counts only; values
the report did not summarise (`notSummarized`) have none.

Example:
    >>> report = {"split": "trainingData", "rowsWritten": 2, "tensors": [
    ...     {"name": "x", "rows": 2, "nullRows": 0, "kind": "numeric", "numeric": {
    ...      "count": 2, "min": 1.0, "max": 3.0, "mean": 2.0, "std": 1.0, "zeros": 0,
    ...      "quantiles": [{"q": 0.0, "value": 1.0}, {"q": 0.5, "value": 1.0},
    ...                    {"q": 1.0, "value": 3.0}]}}]}
    >>> metadata = {"features": [{"name": "x", "featureKeys": {"x": "float32"}, "parse": {
    ...     "type": "FixedLenFeature", "key": "x", "dtype": "float32", "shape": []}}], "labels": []}
    >>> stats = statistics_list(report, metadata)
    >>> feature = stats.datasets[0].features[0]
    >>> feature.path.step[0], feature.num_stats.mean, feature.num_stats.common_stats.num_non_missing
    ('x', 2.0, 2)
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence

from tensorflow_metadata.proto.v0 import path_pb2
from tensorflow_metadata.proto.v0 import statistics_pb2 as sp

from beam_tensorize.kernels.tfmd_schema import per_dimension

__all__ = ["STATS_SUFFIX", "statistics_list"]

#: `report/<split>` + this: the binary `DatasetFeatureStatisticsList`.
STATS_SUFFIX = ".stats.pb"

_TYPES = {"int64": sp.FeatureNameStatistics.INT, "float32": sp.FeatureNameStatistics.FLOAT,
          "string": sp.FeatureNameStatistics.STRING}  # fmt: skip
#: TFDV's defaults (`StatsOptions.num_top_values`, `num_rank_histogram_buckets`).
_TOP_VALUES = 20
_RANK_BUCKETS = 1000


def _quantile_histogram(quantiles: Sequence[Mapping], count: int) -> sp.Histogram:
    """TFDV's QUANTILES histogram from the report's quantiles: equal shares of the values
    between consecutive quantiles."""
    histogram = sp.Histogram(type=sp.Histogram.QUANTILES)
    for low, high in itertools.pairwise(quantiles):
        histogram.buckets.add(
            low_value=low["value"], high_value=high["value"], sample_count=(high["q"] - low["q"]) * count
        )
    return histogram


def _standard_histogram(histogram: Mapping) -> sp.Histogram:
    out = sp.Histogram(type=sp.Histogram.STANDARD)
    edges, counts = histogram["edges"], histogram["counts"]
    for (low, high), n in zip(itertools.pairwise(edges), counts):
        out.buckets.add(low_value=low, high_value=high, sample_count=n)
    return out


def _common(tensor: Mapping, per_example: int | None) -> sp.CommonStatistics:
    """Examples holding the feature and values per example: `per_example` values in each (a
    fixed shape, whatever the input's lists held), else the tensor's list lengths."""
    rows = tensor["rows"]
    common = sp.CommonStatistics(num_non_missing=rows, num_missing=0)
    lengths = tensor.get("lengths")
    if not rows:
        return common
    if per_example is not None:
        common.min_num_values = common.max_num_values = per_example
        common.avg_num_values = float(per_example)
        common.tot_num_values = per_example * rows
    elif lengths is not None and lengths.get("count"):
        # the lengths are of the rows with a list; a null one is written as an empty list
        nulls = rows - lengths["count"]
        common.min_num_values = 0 if nulls else int(lengths["min"])
        common.max_num_values = int(lengths["max"])
        common.tot_num_values = round(lengths["mean"] * lengths["count"])
        common.avg_num_values = common.tot_num_values / rows
        if lengths.get("quantiles"):
            histogram = _quantile_histogram(lengths["quantiles"], lengths["count"])
            if nulls:
                histogram.buckets.insert(
                    0, sp.Histogram.Bucket(low_value=0, high_value=0, sample_count=nulls)
                )
            common.num_values_histogram.CopyFrom(histogram)
    else:  # a list of a scalar input (the report keeps lengths of list inputs): one value, none if null
        values = rows - tensor.get("nullRows", 0)
        common.min_num_values = 0 if values < rows else 1
        common.max_num_values = 1 if values else 0
        common.avg_num_values = values / rows
        common.tot_num_values = values
    return common


def _numbers(numeric: Mapping, common: sp.CommonStatistics) -> sp.NumericStatistics:
    stats = sp.NumericStatistics(common_stats=common)
    if not numeric.get("count"):
        return stats
    stats.mean, stats.std_dev, stats.num_zeros = numeric["mean"], numeric["std"], numeric["zeros"]
    stats.min, stats.max = numeric["min"], numeric["max"]
    quantiles = numeric.get("quantiles") or []
    median = [q["value"] for q in quantiles if q["q"] == 0.5]
    if median:
        stats.median = median[0]
    nan = numeric.get("nanCount", 0)
    if numeric.get("histogram"):
        stats.histograms.append(_standard_histogram(numeric["histogram"]))
    if quantiles:
        stats.histograms.append(_quantile_histogram(quantiles, numeric["count"]))
    for histogram in stats.histograms:
        histogram.num_nan = nan
    return stats


def _counts(
    tensor: Mapping, ids: tuple[Mapping[str, int], int | None] | None
) -> tuple[list[tuple[str, int]], bool] | None:
    """The (value, count) pairs the report keeps for the tensor, most frequent first (values
    mapped to the ids the records hold when `ids`, `_ids_of`'s, is given), and whether they are
    all of them."""
    categorical = tensor.get("categorical")
    if categorical is None:
        return None
    pairs = [(str(value), int(count)) for value, count in categorical.get("summary", [])]
    if ids is not None:
        known, unknown = ids
        merged: dict[str, int] = {}
        for value, count in pairs:
            id_ = known.get(value, unknown)
            if id_ is not None:
                merged[str(id_)] = merged.get(str(id_), 0) + count
        pairs = sorted(merged.items(), key=lambda p: (-p[1], int(p[0])))
    return pairs, bool(categorical.get("exact"))


def _strings(pairs: list[tuple[str, int]], exact: bool, distinct: int, common) -> sp.StringStatistics:
    stats = sp.StringStatistics(common_stats=common, unique=distinct)
    for value, count in pairs[:_TOP_VALUES]:
        stats.top_values.add(value=value, frequency=count)
    for rank, (value, count) in enumerate(pairs[:_RANK_BUCKETS]):
        stats.rank_histogram.buckets.add(low_rank=rank, high_rank=rank, label=value, sample_count=count)
    total = sum(count for _, count in pairs)
    if exact and total:
        stats.avg_length = sum(len(value.encode("utf-8")) * count for value, count in pairs) / total
    return stats


def _feature(name: str, dtype: str) -> sp.FeatureNameStatistics:
    return sp.FeatureNameStatistics(path=path_pb2.Path(step=[name]), type=_TYPES[dtype])


def _ids_of(entry: Mapping, lists: Mapping | None) -> tuple[dict[str, int], int | None] | None:
    """`{feature-list entry: id}` of a tensor with a feature list, and the unknown id that
    entries the report saw but the list lacks take (None: the records leave them out)."""
    if not entry.get("featureList") or lists is None or entry["name"] not in lists:
        return None
    from beam_tensorize.kernels.features.vocab import vocab_array

    ids = {str(value): i for i, value in enumerate(vocab_array(lists[entry["name"]]).to_pylist())}
    return ids, entry["featureList"].get("unknownId")


def _tensor_features(
    tensor: Mapping, entry: Mapping, lists: Mapping | None
) -> list[sp.FeatureNameStatistics]:
    parse, keys = entry["parse"], entry["featureKeys"]
    kind = parse["type"]
    if tensor.get("notSummarized"):
        return []
    fixed = math.prod(parse["shape"]) if kind == "FixedLenFeature" else None
    categorical_ids = entry.get("featureList") or entry.get("hashing")
    if kind == "SparseFeature":
        # The report holds a sparse tensor's input entries; entries of a row that share an
        # index (repeated entries, a hash bucket, the unknown id) are written summed into one,
        # so the stored indices and values are not those: only the examples are counted.
        common = sp.CommonStatistics(num_non_missing=tensor["rows"])
        keys = per_dimension(parse["indexKey"])
        stored = [_feature(key, "int64") for key in keys] + [_feature(parse["valueKey"], "float32")]
        for feature in stored:
            feature.num_stats.CopyFrom(sp.NumericStatistics(common_stats=common))
        return stored
    key = parse.get("key") or parse.get("valueKey")
    if key not in keys:
        return []
    feature = _feature(key, keys[key])
    common = _common(tensor, fixed)
    if kind == "FixedLenFeature" and keys[key] == "float32" and entry.get("featureList"):
        feature.num_stats.CopyFrom(sp.NumericStatistics(common_stats=common))  # a vector of all ids
        return [feature]
    if keys[key] == "string" or (categorical_ids and keys[key] == "int64"):
        ids = _ids_of(entry, lists) if entry.get("featureList") else None
        if entry.get("featureList") and ids is None:  # the entries' ids unknown: counts only
            feature.string_stats.CopyFrom(sp.StringStatistics(common_stats=common))
            return [feature]
        found = _counts(tensor, ids)
        if found is not None:
            pairs, exact = found
            categorical = tensor["categorical"]
            distinct = len(pairs) if entry.get("featureList") else categorical["distinctAtLeast"]
            feature.string_stats.CopyFrom(_strings(pairs, exact, distinct, common))
            return [feature]
    if tensor.get("numeric") is not None:
        feature.num_stats.CopyFrom(_numbers(tensor["numeric"], common))
    elif keys[key] == "string":
        feature.string_stats.CopyFrom(sp.StringStatistics(common_stats=common))
    else:
        feature.num_stats.CopyFrom(sp.NumericStatistics(common_stats=common))
    return [feature]


def statistics_list(
    report: Mapping, metadata: Mapping, lists: Mapping | None = None
) -> sp.DatasetFeatureStatisticsList:
    """The report's statistics of one split as a `DatasetFeatureStatisticsList`.

    Args:
        report: the run report's document (`report/<split>.json`).
        metadata: the output's metadata document (how each tensor is stored).
        lists: the run's feature lists by tensor name (their entries' ids); without them a
            feature-list tensor's ids have only their counts.

    Returns:
        One dataset named after the split, its features sorted by name (as TFDV sorts them).
    """
    entries = {e["name"]: e for e in [*metadata["features"], *metadata["labels"]]}
    dataset = sp.DatasetFeatureStatistics(name=report["split"], num_examples=report["rowsWritten"])
    features = []
    for tensor in report["tensors"]:
        entry = entries.get(tensor["name"])
        if entry is not None:
            features.extend(_tensor_features(tensor, entry, lists))
    dataset.features.extend(sorted(features, key=lambda f: tuple(f.path.step)))
    return sp.DatasetFeatureStatisticsList(datasets=[dataset])
