"""A validation or test split's anomalies against the train split's schema (`schema.pbtxt`):
string values outside a feature's `string_domain`, as `tfdv.validate_statistics` reports them
(`ENUM_TYPE_UNEXPECTED_STRING_VALUES`), found in the split's report (its frequent-values
summary: every value when the count is exact, else the most frequent ones).

Example:
    >>> report = {"tensors": [{"name": "g", "categorical": {"occurrences": 4, "exact": True,
    ...           "summary": [["a", 2], ["z", 1], ["y", 1]]}}]}
    >>> unexpected_string_values(report, {"g": ["a", "b"]})["features"]  # doctest: +NORMALIZE_WHITESPACE
    [{'name': 'g', 'kind': 'unexpectedStringValues', 'values': ['y', 'z'], 'count': 2,
      'share': 0.5, 'exact': True}]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from beam_tensorize.kernels.report.sketches import round_float

__all__ = ["SHOWN_VALUES", "unexpected_string_values"]

#: Values an anomaly names (the most frequent first).
SHOWN_VALUES = 10


def unexpected_string_values(report: Mapping, domains: Mapping[str, Sequence[str]]) -> dict:
    """The report's `anomalies` entry: for each tensor with a domain, the values outside it
    (most frequent first, then by value), how often they occur and their share of the values."""
    features = []
    for tensor in report.get("tensors", []):
        domain, categorical = domains.get(tensor["name"]), tensor.get("categorical")
        if domain is None or not categorical:
            continue
        allowed = set(domain)
        outside = sorted(
            ((str(v), int(c)) for v, c in categorical.get("summary", []) if str(v) not in allowed),
            key=lambda pair: (-pair[1], pair[0]),
        )
        if not outside:
            continue
        count = sum(c for _, c in outside)
        occurrences = categorical.get("occurrences") or count
        features.append(
            {
                "name": tensor["name"],
                "kind": "unexpectedStringValues",
                "values": [v for v, _ in outside[:SHOWN_VALUES]],
                "count": count,
                "share": round_float(count / occurrences, 10),
                "exact": bool(categorical.get("exact")),
            }
        )
    return {"against": "metadata/schema.pbtxt", "features": features}
