"""What the report page says of values and tensors: numbers and shares as text (`_fmt`,
`_pct`), a tensor's facts (its cards: rows, nulls, numbers, entries, feature list, hashing) and
the value whose share drifted most."""

from __future__ import annotations

import html

__all__: list[str] = []  # package-internal: used by `page`


def _fmt(value, digits: int = 4) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return html.escape(str(value))


def _pct(value) -> str:
    return "-" if value is None else f"{100 * value:.2f}%"


def _distinct(categories: dict) -> str:
    """The distinct count of a categorical summary: the number when it is exact, else a lower
    bound (with the counts' error)."""
    if categories["exact"]:
        return _fmt(categories["distinctAtLeast"])
    return f"≥ {categories['distinctAtLeast']:,} (counts ±{categories['maxCountError']:,})"


def _tensor_facts(tensor: dict) -> list[tuple[str, str]]:
    # A hashed tensor described as the ids its records hold (else: an NTV vector's values).
    ids = tensor.get("hashing", {}).get("statisticsOf") == "ids"
    facts = [
        ("kind", _fmt(tensor.get("kind"))),
        ("rows", _fmt(tensor.get("rows"))),
        ("null", _pct(tensor.get("nullRate"))),
        ("empty", _pct(tensor.get("emptyRate"))),
    ]
    numbers = tensor.get("numeric")
    if numbers:
        quantiles = {q["q"]: q["value"] for q in numbers.get("quantiles", [])}
        facts += [
            ("ids" if ids else "values", _fmt(numbers["count"])),
            ("min", _fmt(numbers["min"])),
            ("median", _fmt(quantiles.get(0.5))),
            ("max", _fmt(numbers["max"])),
        ]
        if not ids:  # the mean of ids tells nothing
            facts += [("mean", _fmt(numbers["mean"])), ("std", _fmt(numbers["std"]))]
        if numbers.get("nanCount"):
            facts.append(("NaN", _fmt(numbers["nanCount"])))
    lengths = tensor.get("lengths")
    if lengths and lengths.get("count"):
        facts.append(
            (
                "ids per row" if ids else "values per row",
                f"{_fmt(lengths['min'])}-{_fmt(lengths['max'])}, mean {_fmt(lengths['mean'])}",
            )
        )
    categories = tensor.get("categorical")
    if categories and ids:
        facts.append(("distinct ids", _distinct(categories)))
    elif categories:
        facts += [("entries", _fmt(categories["occurrences"])), ("distinct", _distinct(categories))]
        top20 = next((c["share"] for c in categories["coverage"] if c["k"] == 20), None)
        facts.append(("top 20 cover", _pct(top20)))
    listed = tensor.get("featureList")
    if listed:
        facts += [("list size", _fmt(listed["size"])), ("not in list", _pct(listed["unknownShare"]))]
    hashing = tensor.get("hashing")
    if hashing:
        facts.append(("buckets", _fmt(hashing["hashBucketSize"])))
        if "bucketsUsedShare" in hashing:
            facts.append(("buckets used", _pct(hashing["bucketsUsedShare"])))
        if hashing.get("dummyIdOccurrences"):
            facts.append(("dummy ids", _fmt(hashing["dummyIdOccurrences"])))
        facts += [
            (
                "input: distinct values",
                ("≈ " if not hashing["distinctExact"] else "") + _fmt(hashing["distinctValues"]),
            ),
            ("input: values sharing a bucket", _pct(hashing.get("collidingShare"))),
        ]
    sparse = tensor.get("sparse")
    if sparse:
        facts += [("dimension", _fmt(sparse["dimension"])), ("density", _pct(sparse["density"]))]
    return facts


def _largest_difference(drift: dict) -> str:
    """Categorical drift: which shown value's share differs most, and its two shares."""
    freq = drift.get("frequencies") or {}
    if not freq.get("values"):
        return ""
    gaps = [abs(a - b) for a, b in zip(freq["train"], freq["current"])]
    at = gaps.index(max(gaps))
    return (
        f" (most for {html.escape(str(freq['values'][at]))}: {_pct(freq['train'][at])} of train, "
        f"{_pct(freq['current'][at])} here)"
    )
