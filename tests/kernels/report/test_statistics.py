"""The run report's statistics against values computed independently (numpy, Counter), on the
bundled sample and on generated data with known distributions; sketches within their
documented error; drift measures; the page's structure."""

from __future__ import annotations

import math
import os
import re
from collections import Counter

import farmhash
import fastavro
import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from beam_tensorize.config import load_config, parse_config
from beam_tensorize.kernels.features.extract import extract_tensors
from beam_tensorize.kernels.features.hashing import hash_tensors, hash_tensors_with_distinct
from beam_tensorize.kernels.formats import AvroFormat, ParquetFormat, Split
from beam_tensorize.kernels.provenance import with_source
from beam_tensorize.kernels.report.drift import compare, jensen_shannon, l_infinity
from beam_tensorize.kernels.report.render import render_html, tensor_anchor
from beam_tensorize.kernels.report.sketches import (
    RELATIVE_ACCURACY,
    DistinctSketch,
    NumericSketch,
    TopK,
)
from beam_tensorize.kernels.report.statistics import COVERAGE_KS, QUANTILES, Statistics
from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG

A = RELATIVE_ACCURACY


def _quantile_ok(data: np.ndarray, q: float, estimate: float) -> bool:
    """`estimate` is within the relative accuracy of a value whose rank is q's."""
    ordered = np.sort(data)
    rank = q * (len(ordered) - 1)
    low, high = ordered[math.floor(rank)], ordered[math.ceil(rank)]
    slack = lambda v: A * abs(v) + 1e-12  # noqa: E731
    return low - slack(low) <= estimate <= high + slack(high)


# --- sketches --------------------------------------------------------------------------------


def test_numeric_sketch_moments_and_quantiles_match_numpy():
    rng = np.random.default_rng(1)
    data = np.concatenate([rng.lognormal(3, 2, 30_000), -rng.exponential(5, 10_000), np.zeros(500)])
    sketch = NumericSketch()
    for chunk in np.array_split(rng.permutation(data), 7):
        sketch.add(np.concatenate([chunk, [np.nan, np.inf]]))
    assert (sketch.count, sketch.nan, sketch.inf, sketch.zeros) == (len(data), 7, 7, 500)
    assert (sketch.minimum, sketch.maximum) == (data.min(), data.max())
    assert sketch.mean == pytest.approx(data.mean(), rel=1e-9)
    assert sketch.std == pytest.approx(data.std(), rel=1e-9)
    for q in QUANTILES:
        assert _quantile_ok(data, q, sketch.quantile(q)), q


def test_numeric_sketch_of_float32_strided_and_integer_batches_equals_float64():
    """Batches that are not contiguous float64 (converted in a reused buffer) give the sketch of
    the same values as float64, batch after batch of different sizes."""
    rng = np.random.default_rng(4)
    batches = [
        rng.normal(0, 3, 70_000).astype(np.float32),
        rng.normal(5, 1, (2_000, 2))[:, 0],  # a strided view
        rng.integers(-50, 50, 90_000),
        rng.random(10) < 0.5,
    ]
    given, reference = NumericSketch(), NumericSketch()
    for batch in batches:
        given.add(batch)
        reference.add(np.array(batch, dtype=np.float64))
    reference.integral = given.integral
    assert given.integral is False and (given.count, given.zeros) == (reference.count, reference.zeros)
    assert (given.minimum, given.maximum, given.total, given.squares) == (
        reference.minimum,
        reference.maximum,
        reference.total,
        reference.squares,
    )
    assert given.points()[0].tolist() == reference.points()[0].tolist()
    assert given.points()[1].tolist() == reference.points()[1].tolist()


def test_sketches_do_not_depend_on_the_order_of_batches():
    rng = np.random.default_rng(2)
    data = rng.normal(0, 100, 20_000)
    words = [f"w{i}" for i in rng.zipf(1.5, 20_000) % 700]

    def build(order):
        numbers, top = NumericSketch(), TopK()
        for i in order:
            part = slice(i * 2000, (i + 1) * 2000)
            numbers.add(data[part])
            counted = Counter(words[part])
            top.add(list(counted), list(counted.values()))
        return numbers, top

    (n1, t1), (n2, t2) = build(range(10)), build(reversed(range(10)))
    a, b = n1.to_json(), n2.to_json()
    for key in ("sum", "sumOfSquares"):  # float sums: equal up to rounding
        assert a.pop(key) == pytest.approx(b.pop(key), rel=1e-12)
    assert a == b
    assert t1.to_json() == t2.to_json() and t1.exact  # <= capacity distinct values: exact
    assert dict(t1.items()) == Counter(words)


def test_top_k_stays_within_its_error_bound_on_a_long_tail():
    rng = np.random.default_rng(3)
    words = [f"v{i}" for i in rng.zipf(1.3, 100_000)]
    truth = Counter(words)
    assert len(truth) > 5_000
    top = TopK(capacity=200)
    for start in range(0, len(words), 8192):
        counted = Counter(words[start : start + 8192])
        top.add(list(counted), list(counted.values()))
    bound = len(words) / (200 + 1)
    assert 0 < top.dropped <= bound
    for value, count in top.items():
        assert truth[value] - top.dropped <= count <= truth[value]
    for value, count in truth.items():
        if count > bound:
            assert value in top.counts
    true_top = [v for v, _ in truth.most_common(20)]
    assert [v for v, _ in top.items(20)][:5] == true_top[:5]


def test_distinct_sketch_is_exact_below_k_and_close_above():
    rng = np.random.default_rng(4)
    small = DistinctSketch()
    small.add(rng.integers(0, 2**62, 1000))
    assert small.exact and small.estimate() == 1000
    big = DistinctSketch()
    values = rng.integers(0, 2**62, 200_000)
    for part in np.array_split(np.concatenate([values, values[:50_000]]), 9):
        big.add(part)
    assert not big.exact
    assert abs(big.estimate() - 200_000) / 200_000 < 3 / math.sqrt(2048)


def test_distinct_sketch_keeps_the_k_smallest_distinct_hashes_after_every_batch():
    rng = np.random.default_rng(9)
    for _ in range(200):
        k = int(rng.integers(1, 40))
        sketch, seen = DistinctSketch(k), np.zeros(0, np.int64)
        for _ in range(int(rng.integers(1, 8))):
            batch = rng.integers(0, int(rng.integers(1, 150)), size=int(rng.integers(0, 60)))
            sketch.add(batch)
            seen = np.concatenate([seen, batch])
            assert sketch.hashes.tolist() == np.unique(seen)[:k].tolist()
        other = DistinctSketch(k)
        other.add(rng.integers(0, 150, size=30))
        sketch.merge(other)
        assert sketch.hashes.tolist() == np.unique(np.concatenate([seen, other.hashes]))[:k].tolist()


# --- generated data with known distributions -------------------------------------------------

GENERATED_CONFIG = {
    "features": [
        {"outputTensorInfo": {"name": "x", "dtype": "double", "shape": []}},
        {"outputTensorInfo": {"name": "n", "dtype": "long", "shape": []}},
        {"outputTensorInfo": {"name": "cat", "dtype": "string", "shape": []}},
        {"outputTensorInfo": {"name": "tags", "dtype": "long", "shape": [-1]}},
        {
            "inputFeatureInfo": {
                "columnExpr": "h",
                "transformConfig": {"hashInfo": {"hashBucketSize": 1024}},
            },
            "outputTensorInfo": {"name": "h", "dtype": "long", "shape": []},
        },
    ]
}
ROWS = 30_000


def generated_table(seed: int = 5, shift: float = 0.0) -> pa.Table:
    """Rows with known distributions: x ~ N(10 + shift, 2) with 5% nulls and 10 NaNs, n uniform
    0..99, cat Zipf over ~3,000 values, tags Poisson(2) lists of 60 values, h 1,500 distinct."""
    rng = np.random.default_rng(seed)
    x = rng.normal(10 + shift, 2, ROWS)
    x[rng.choice(ROWS, 10, replace=False)] = np.nan
    x_mask = rng.random(ROWS) < 0.05
    tags_len = rng.poisson(2, ROWS)
    tag_values = [f"t{i}" for i in rng.integers(0, 60, int(tags_len.sum()))]
    offsets = np.concatenate([[0], np.cumsum(tags_len)])
    return pa.table(
        {
            "x": pa.array(x, mask=x_mask),
            "n": pa.array(rng.integers(0, 100, ROWS)),
            "cat": pa.array([f"c{i % 3000}" for i in rng.zipf(1.2, ROWS)]),
            "tags": pa.ListArray.from_arrays(pa.array(offsets, pa.int32()), pa.array(tag_values)),
            "h": pa.array([f"id{i}" for i in rng.integers(0, 1500, ROWS)]),
        }
    )


def _statistics(table: pa.Table, config, files=("a.parquet", "b.parquet"), vocabularies=None) -> dict:
    stats = Statistics(config)
    half = table.num_rows // 2
    for path, part in zip(files, (table.slice(0, half), table.slice(half))):
        for offset, batch in enumerate(part.to_batches(max_chunksize=4096)):
            stats.add_batch(with_source(batch, path, offset, unit="row"), vocabularies)
    return stats.describe()


def write_generated_files(folder, table: pa.Table) -> list[str]:
    """The generated rows as two Parquet files (halves, row groups of 5,000)."""
    half = table.num_rows // 2
    paths = [str(folder / "a.parquet"), str(folder / "b.parquet")]
    for path, part in zip(paths, (table.slice(0, half), table.slice(half))):
        pq.write_table(part, path, row_group_size=5000)
    return paths


@pytest.fixture(scope="module")
def generated(tmp_path_factory):
    """The statistics of the generated rows written to Parquet files and read back by the
    job's own reader and extraction, in batches of 4,096 rows."""
    table = generated_table()
    config = parse_config(GENERATED_CONFIG)
    vocabulary = pa.array([f"t{i}" for i in range(40)])
    stats = Statistics(config)
    paths = write_generated_files(tmp_path_factory.mktemp("generated"), table)
    for path in paths:
        with open(path, "rb") as f:
            for split in ParquetFormat().plan_splits(f, path, os.path.getsize(path), 1 << 30):
                for batch in ParquetFormat().read_split(f, split, None, 4096):
                    stats.add_batch(extract_tensors(batch, config.tensors, ()), {"tags": vocabulary})
    return table, stats.describe(), paths


def test_generated_numbers_match_numpy(generated):
    table, report, _ = generated
    x = {t["name"]: t for t in report["tensors"]}["x"]
    data = table["x"].to_numpy(zero_copy_only=False)
    valid = data[~table["x"].is_null().to_numpy(zero_copy_only=False)]
    finite = valid[np.isfinite(valid)]
    assert x["rows"] == ROWS and x["nullRows"] == table["x"].null_count
    assert x["nullRate"] == pytest.approx(table["x"].null_count / ROWS, abs=1e-9)
    numbers = x["numeric"]
    assert (numbers["count"], numbers["nanCount"]) == (len(finite), int(np.isnan(valid).sum()))
    assert numbers["min"] == pytest.approx(finite.min()) and numbers["max"] == pytest.approx(finite.max())
    assert numbers["mean"] == pytest.approx(finite.mean(), rel=1e-9)
    assert numbers["std"] == pytest.approx(finite.std(), rel=1e-9)
    assert numbers["mean"] == pytest.approx(10, abs=0.05) and numbers["std"] == pytest.approx(2, abs=0.05)
    for q in numbers["quantiles"]:
        assert _quantile_ok(finite, q["q"], q["value"]), q
    edges = np.asarray(numbers["histogram"]["edges"])
    exact = np.histogram(finite, bins=edges)[0]
    near_edge = sum(int((np.abs(finite - e) <= A * abs(e) + 1e-9).sum()) for e in edges)
    assert sum(numbers["histogram"]["counts"]) == len(finite)
    assert np.abs(np.asarray(numbers["histogram"]["counts"]) - exact).sum() <= 2 * near_edge


def test_generated_categories_match_counter_within_the_error(generated):
    table, report, _ = generated
    cat = {t["name"]: t for t in report["tensors"]}["cat"]["categorical"]
    truth = Counter(table["cat"].to_pylist())
    assert cat["occurrences"] == ROWS and not cat["exact"] and len(truth) > 1000
    assert 0 < cat["maxCountError"] <= ROWS / 1001
    for entry in cat["top"]:
        assert truth[entry["value"]] - cat["maxCountError"] <= entry["count"] <= truth[entry["value"]]
    assert [e["value"] for e in cat["top"][:5]] == [v for v, _ in truth.most_common(5)]
    ordered = sorted(truth.values(), reverse=True)
    for point in cat["coverage"]:
        exact_share = sum(ordered[: point["k"]]) / ROWS
        assert (
            exact_share - point["k"] * cat["maxCountError"] / ROWS - 1e-9
            <= point["share"]
            <= exact_share + 1e-9
        )


def test_generated_lists_and_feature_list_coverage_match_counter(generated):
    table, report, _ = generated
    tags = {t["name"]: t for t in report["tensors"]}["tags"]
    lengths = np.asarray([len(v) for v in table["tags"].to_pylist()])
    values = [v for row in table["tags"].to_pylist() for v in row]
    assert tags["emptyRows"] == int((lengths == 0).sum())
    assert tags["lengths"]["mean"] == pytest.approx(lengths.mean(), rel=1e-9)
    assert tags["lengths"]["mean"] == pytest.approx(2, abs=0.05)
    for q in tags["lengths"]["quantiles"]:
        assert _quantile_ok(lengths, q["q"], q["value"])
    histogram = tags["lengths"]["histogram"]  # whole numbers: one bin each, exact counts
    assert histogram["edges"][0] == -0.5 and histogram["counts"] == np.bincount(lengths).tolist()
    counted = Counter(values)
    assert tags["categorical"]["exact"]
    assert [(e["value"], e["count"]) for e in tags["categorical"]["top"]] == sorted(
        counted.items(), key=lambda item: (-item[1], item[0])
    )[:20]
    unknown = sum(c for v, c in counted.items() if int(v[1:]) >= 40)
    assert tags["featureList"] == {
        "size": 40,
        "unknownOccurrences": unknown,
        "unknownShare": pytest.approx(unknown / len(values), abs=1e-9),
    }
    assert [p["k"] for p in tags["categorical"]["coverage"]] == list(COVERAGE_KS)


def test_generated_hash_buckets_and_collisions_match_farmhash(generated):
    table, report, _ = generated
    hashing = {t["name"]: t for t in report["tensors"]}["h"]["hashing"]
    values = table["h"].to_pylist()
    buckets = Counter(farmhash.fingerprint64(v) % 1024 for v in values)
    distinct = set(values)
    per_bucket = Counter(farmhash.fingerprint64(v) % 1024 for v in distinct)
    colliding = sum(1 for v in distinct if per_bucket[farmhash.fingerprint64(v) % 1024] > 1)
    assert hashing["distinctValues"] == len(distinct) and hashing["distinctExact"]
    assert hashing["collidingValues"] == colliding
    assert hashing["collidingShare"] == pytest.approx(colliding / len(distinct), abs=1e-9)
    assert hashing["bucketsUsed"] == len(buckets)
    loads = np.asarray([buckets.get(b, 0) for b in range(1024)])
    assert (hashing["load"]["min"], hashing["load"]["max"]) == (loads.min(), loads.max())
    assert (
        hashing["load"]["histogram"]["counts"]
        == np.histogram(loads, bins=hashing["load"]["histogram"]["edges"])[0].tolist()
    )


HASHED_KINDS_CONFIG = {
    "features": [
        {  # one fingerprint function (the default): FarmHash fingerprints
            "inputFeatureInfo": {"columnExpr": "s", "transformConfig": {"hashInfo": {"hashBucketSize": 64}}},
            "outputTensorInfo": {"name": "s", "dtype": "long", "shape": []},
        },
        {  # three keyed functions over lists with nulls and empty lists
            "inputFeatureInfo": {
                "columnExpr": "tags",
                "transformConfig": {"hashInfo": {"hashBucketSize": 50, "numHashFunctions": 3}},
            },
            "outputTensorInfo": {"name": "tags", "dtype": "long", "shape": [-1]},
        },
        {  # Avro2TF's MD5, on numbers
            "inputFeatureInfo": {
                "columnExpr": "n",
                "transformConfig": {"hashInfo": {"hashBucketSize": 40, "hashFunction": "avro2tf_md5"}},
            },
            "outputTensorInfo": {"name": "n", "dtype": "long", "shape": []},
        },
        {  # name-term-value entries into a sparse vector
            "inputFeatureInfo": {
                "columnExpr": "ntv",
                "transformConfig": {"hashInfo": {"hashBucketSize": 30, "combiner": "SUM"}},
            },
            "outputTensorInfo": {"name": "ntv", "dtype": "float", "shape": [30], "isSparse": True},
        },
    ]
}


def hashed_kinds_batches() -> list[pa.RecordBatch]:
    """Batches of the four hashed tensors above; the second holds `s` dictionary-encoded."""
    rng = np.random.default_rng(11)
    batches = []
    for i in range(3):
        rows = 700
        s = [None if r % 13 == 0 else f"v{x}" for r, x in enumerate(rng.integers(0, 300, rows))]
        tags = [
            None if r % 17 == 0 else [None if t % 7 == 0 else f"t{t}" for t in rng.integers(0, 90, r % 4)]
            for r in range(rows)
        ]
        ntv = [
            [{"name": "g", "term": f"x{t}", "value": float(t)} for t in rng.integers(0, 25, r % 3)]
            for r in range(rows)
        ]
        s_array = pa.array(s)
        batch = pa.RecordBatch.from_pydict(
            {
                "s": s_array.dictionary_encode() if i == 1 else s_array,
                "tags": pa.array(tags, pa.list_(pa.string())),
                "n": pa.array(rng.integers(0, 500, rows)),
                "ntv": pa.array(ntv),
            }
        )
        batches.append(with_source(batch, "part.parquet", i * rows, unit="row"))
    return batches


def test_hashed_tensor_statistics_from_the_hashing_step_equal_hashing_again():
    """The statistics fed with what the hashing step hashed (`hash_tensors_with_distinct`)
    equal those that hash the values themselves, for every hash function kind, and the hashing
    step's batches are those of `hash_tensors`."""
    config = parse_config(HASHED_KINDS_CONFIG)
    itself, from_step = Statistics(config), Statistics(config)
    for batch in hashed_kinds_batches():
        itself.add_batch(batch)
        hashed, seen = hash_tensors_with_distinct(batch, config.tensors)
        assert hashed.equals(hash_tensors(batch, config.tensors))
        assert sorted(seen) == ["n", "ntv", "s", "tags"]
        from_step.add_batch(batch, hashes=False)
        from_step.add_distinct_hashes(seen)
    expected, found = itself.describe(), from_step.describe()
    assert found == expected
    by_name = {t["name"]: t["hashing"] for t in found["tensors"]}
    # Checked independently: `s` (its second batch dictionary-encoded) against FarmHash.
    values = [v for b in hashed_kinds_batches() for v in b.column("s").to_pylist() if v is not None]
    distinct = set(values)
    per_bucket = Counter(farmhash.fingerprint64(v) % 64 for v in distinct)
    assert by_name["s"]["distinctValues"] == len(distinct)
    assert by_name["s"]["collidingValues"] == sum(
        per_bucket[farmhash.fingerprint64(v) % 64] > 1 for v in distinct
    )
    assert by_name["s"]["load"]["max"] == max(
        Counter(farmhash.fingerprint64(v) % 64 for v in values).values()
    )
    assert by_name["s"]["dummyIdOccurrences"] == sum(b.column("s").null_count for b in hashed_kinds_batches())
    # `tags`: a null list and a list of nulls only get 3 dummy ids each.
    tags = [t for b in hashed_kinds_batches() for t in b.column("tags").to_pylist()]
    assert by_name["tags"]["dummyIdOccurrences"] == 3 * sum(
        1 for t in tags if not t or all(v is None for v in t)
    )
    assert by_name["tags"]["distinctValues"] == len({v for t in tags if t for v in t if v is not None})
    assert by_name["ntv"]["distinctValues"] == len(
        {
            f"{e['name']},{e['term']}"
            for b in hashed_kinds_batches()
            for r in b.column("ntv").to_pylist()
            for e in r
        }
    )


def test_per_file_rows_and_dead_letters_by_reason(generated):
    _, report, (a, b) = generated
    assert report["files"] == [
        {"file": a, "rowsRead": ROWS // 2, "rowsWritten": ROWS // 2, "badRows": 0},
        {"file": b, "rowsRead": ROWS // 2, "rowsWritten": ROWS // 2, "badRows": 0},
    ]
    stats = Statistics(parse_config(GENERATED_CONFIG))
    stats.add_batch(with_source(generated_table().to_batches()[0].slice(0, 10), "a.avro", 0))
    letters = [
        {
            "source": "a.avro: record 3 of the rows starting at byte 0",
            "reason": "too long",
            "tensors": {"x": 2},
        },
        {
            "source": "a.avro: record 1 of the rows starting at byte 0",
            "reason": "too long",
            "tensors": {"x": 1},
        },
        {"source": "b.avro", "offset": 9, "record": 0, "reason": "cannot decode"},
    ]
    import json

    for letter in letters:
        stats.add_dead_letter(letter, json.dumps(letter, sort_keys=True))
    described = stats.describe()
    assert described["files"] == [
        {"file": "a.avro", "rowsRead": 10, "rowsWritten": 8, "badRows": 2},
        {"file": "b.avro", "rowsRead": 1, "rowsWritten": 0, "badRows": 1},
    ]
    assert described["deadLetters"] == [
        {"reason": "too long", "count": 2, "example": letters[1]},
        {"reason": "cannot decode", "count": 1, "example": letters[2]},
    ]


# --- the bundled sample ----------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample():
    config = load_config(SAMPLE_CONFIG)
    with open(SAMPLE_AVRO, "rb") as f:
        rows = list(fastavro.reader(f))
    with open(SAMPLE_AVRO, "rb") as f:
        batches = list(AvroFormat().read_split(f, Split(SAMPLE_AVRO, 0, 1 << 20), None, 64))
    stats = Statistics(config)
    vocabulary = pa.array(["Drama", "Comedy", "Action"])
    for batch in batches:
        stats.add_batch(
            extract_tensors(batch, config.tensors, ()), {"genreIds": vocabulary, "genreVector": vocabulary}
        )
    return rows, {t["name"]: t for t in stats.describe()["tensors"]}, stats.describe()


def test_sample_statistics_match_the_records(sample):
    rows, tensors, report = sample
    assert report["rowsRead"] == len(rows) == 300
    for name, values in (
        ("movieId", [r["movieId"] for r in rows]),
        ("response", [r["response"] for r in rows]),
        ("numGenres", [len(r["genreFeatures"]) for r in rows]),
        ("movieLatentFactors", [f["value"] for r in rows for f in r["movieLatentFactorFeatures"]]),
    ):
        data = np.asarray(values, np.float64)
        numbers = tensors[name]["numeric"]
        assert numbers["count"] == len(data), name
        assert (numbers["min"], numbers["max"]) == pytest.approx((data.min(), data.max())), name
        assert numbers["mean"] == pytest.approx(data.mean(), rel=1e-9), name
        assert numbers["std"] == pytest.approx(data.std(), rel=1e-9), name
        for q in numbers["quantiles"]:
            assert _quantile_ok(data, q["q"], q["value"]), (name, q)
    terms = [f["term"] for r in rows for f in r["genreFeatures"]]
    genres = Counter(t.lower() for t in terms)
    top = tensors["genres"]["categorical"]["top"]
    assert [(e["value"], e["count"]) for e in top] == sorted(genres.items(), key=lambda i: (-i[1], i[0]))[:20]
    lengths = np.asarray([len(r["genreFeatures"]) for r in rows])
    assert tensors["genreIds"]["lengths"]["mean"] == pytest.approx(lengths.mean())
    unknown = sum(1 for t in terms if t not in ("Drama", "Comedy", "Action"))
    assert tensors["genreIds"]["featureList"]["unknownOccurrences"] == unknown
    assert tensors["genreVector"]["sparse"] == {
        "dimension": 4,
        "meanNonZeros": pytest.approx(lengths.mean()),
        "density": pytest.approx(lengths.mean() / 4),
    }
    movies = [r["movieId"] for r in rows]
    loads = Counter(farmhash.fingerprint64(str(m)) % 1000 for m in movies)
    hashing = tensors["movieBucket"]["hashing"]
    assert hashing["distinctValues"] == len(set(movies))
    assert hashing["bucketsUsed"] == len(loads) and hashing["load"]["max"] == max(loads.values())


# --- drift and the page ------------------------------------------------------------------------


def test_drift_measures():
    assert l_infinity({"a": 3, "b": 1}, 4, {"a": 1, "b": 3}, 4) == 0.5
    assert l_infinity({"a": 1}, 1, {"b": 1}, 1) == 1.0
    assert jensen_shannon([1, 0], [0, 1]) == 1.0
    assert jensen_shannon([2, 2], [5, 5]) == 0.0
    p, q = np.asarray([0.5, 0.5]), np.asarray([0.9, 0.1])
    m = (p + q) / 2
    expected = (np.sum(p * np.log2(p / m)) + np.sum(q * np.log2(q / m))) / 2
    assert jensen_shannon([5, 5], [9, 1]) == pytest.approx(expected)


def test_drift_flags_the_shifted_tensor_only():
    config = parse_config(GENERATED_CONFIG)
    train = _statistics(generated_table(seed=5), config)
    same = _statistics(generated_table(seed=6), config)
    shifted = _statistics(generated_table(seed=6, shift=3.0), config)
    calm = compare(train, same, "trainingData", 0.1)
    assert calm["flagged"] == [] and {t["name"] for t in calm["tensors"]} == {"x", "n", "cat", "tags", "h"}
    drifting = compare(train, shifted, "trainingData", 0.1)
    assert drifting["flagged"] == ["x"]
    (x,) = [t for t in drifting["tensors"] if t["name"] == "x"]
    assert x["measure"] == "Jensen-Shannon" and x["distance"] > 0.3
    (cat,) = [t for t in calm["tensors"] if t["name"] == "cat"]
    assert cat["measure"] == "L-infinity" and cat["distance"] < 0.02


def test_the_page_has_an_overview_and_a_section_with_a_plot_per_tensor(generated):
    _, report, _ = generated
    page = render_html({**report, "split": "validationData"})
    assert page.count('<section class="tensor"') == len(GENERATED_CONFIG["features"])
    for tensor in report["tensors"]:
        start = page.index(f'id="{tensor_anchor(tensor["name"])}"')
        assert '<svg class="plot"' in page[start : page.index("</section>", start)], tensor["name"]
    assert "<script" not in page  # nothing runs, nothing to fetch
    assert not re.search(r"(src|href)=\"(https?:)?//", page)


def test_a_column_the_report_cannot_summarise_counts_rows_only_and_does_not_fail():
    """A union read as a struct of its branches (the job's own conversion step fails on it,
    naming the tensor): the statistics keep its row counts and say why there is nothing else."""
    config = parse_config(
        {
            "features": [
                {"inputFeatureInfo": {"columnExpr": "m"}, "outputTensorInfo": {"name": "m", "dtype": "long"}}
            ]
        }
    )
    union = pa.array([{"member0": "a", "member1": None}, {"member0": None, "member1": 3}, None])
    stats = Statistics(config)
    stats.add_batch(pa.RecordBatch.from_arrays([union], ["m"]))
    (entry,) = stats.describe()["tensors"]
    assert (entry["rows"], entry["nullRows"]) == (3, 1)
    assert (
        entry["notSummarized"] == "values of type struct<member0: string, member1: int64> have no statistics"
    )
    assert "numeric" not in entry and "categorical" not in entry
    page = render_html(stats.describe())
    assert "values of type struct&lt;member0: string, member1: int64&gt; have no statistics" in page


def test_long_values_are_kept_by_their_start_length_and_digest():
    """A 1 GB string used to travel whole between the job's steps (and fail there); the top
    values hold a short stand-in, and two long values stay apart."""
    from beam_tensorize.kernels.report.sketches import MAX_VALUE_CHARS, TopK

    a, b = "a" * 5_000_000, "a" * 4_999_999 + "b"
    top = TopK(10)
    top.add(pa.array([a, b, "short"]), [3, 1, 2])
    top.add([a], [1])
    items = top.items()
    assert [count for _, count in items] == [4, 2, 1]
    assert items[1][0] == "short"
    long_a, long_b = items[0][0], items[2][0]
    assert long_a.startswith("a" * 64 + "… (5000000 characters, sha256 ") and long_a != long_b
    assert all(len(value) <= MAX_VALUE_CHARS for value, _ in items)


# --- hashed tensors: the ids the records hold ----------------------------------------------------


def test_numeric_sketch_add_counts_equals_adding_the_repeated_values():
    values = np.asarray([3, 0, -2, 7, 1000, 3], np.int64)
    counts = np.asarray([2, 5, 1, 0, 4, 1], np.int64)
    weighted, repeated = NumericSketch(), NumericSketch()
    weighted.add_counts(values, counts)
    repeated.add(np.repeat(values, counts))
    assert weighted.to_json() == repeated.to_json()
    assert (weighted.count, weighted.zeros, weighted.minimum, weighted.maximum) == (13, 5, -2.0, 1000.0)
    assert weighted.integral
    floats = NumericSketch()
    floats.add_counts(np.asarray([0.5, np.nan, np.inf, 2.5]), np.asarray([2, 3, 1, 2]))
    assert (floats.count, floats.nan, floats.inf, floats.mean, floats.integral) == (4, 3, 1, 1.5, False)
    with pytest.raises(ValueError, match="2 values but 1 counts"):
        NumericSketch().add_counts(np.asarray([1, 2]), np.asarray([1]))


def _hashed_columns(config, batches) -> dict[str, tuple[list, list | None]]:
    """Per hashed tensor: every id its records hold, and the ids per row (None for scalars),
    from the hashing kernel's own output."""
    found: dict[str, tuple[list, list | None]] = {}
    for batch in batches:
        hashed = hash_tensors(batch, config.tensors)
        for name in hashed.schema.names:
            column = hashed.column(name)
            ids, lengths = found.setdefault(
                name,
                ([], [] if pa.types.is_list(column.type) or pa.types.is_large_list(column.type) else None),
            )
            if lengths is None:
                ids.extend(column.to_pylist())
            else:
                for row in column.to_pylist():
                    ids.extend(row)
                    lengths.append(len(row))
    return found


def test_a_hashed_tensor_is_described_as_the_ids_its_records_hold():
    """`s` (scalars with nulls), `tags` (lists of 3 ids per value, null and empty lists) and `n`
    (MD5 of numbers): the numbers, entries and ids per row are those of `hash_tensors`' output
    (the dummy id included); the NTV vector keeps its input's values."""
    config = parse_config(HASHED_KINDS_CONFIG)
    batches = hashed_kinds_batches()
    stats = Statistics(config)
    for batch in batches:
        stats.add_batch(batch)
    tensors = {t["name"]: t for t in stats.describe()["tensors"]}
    held = _hashed_columns(config, batches)
    for name, buckets in (("s", 64), ("tags", 50), ("n", 40)):
        tensor, (ids, lengths) = tensors[name], held[name]
        assert tensor["kind"] == "hashed" and tensor["hashing"]["statisticsOf"] == "ids", name
        numbers = tensor["numeric"]
        data = np.asarray(ids, np.float64)
        assert (numbers["count"], numbers["min"], numbers["max"]) == (len(ids), data.min(), data.max()), name
        assert 0 <= numbers["min"] <= numbers["max"] <= buckets
        assert numbers["mean"] == pytest.approx(data.mean(), rel=1e-11), name
        edges = numbers["histogram"]["edges"]  # whole numbers below 128: exact
        assert numbers["histogram"]["counts"] == np.histogram(data, bins=edges)[0].tolist(), name
        assert [q["value"] for q in numbers["quantiles"]] == [
            float(np.quantile(data, q, method="lower")) for q in QUANTILES
        ], name
        categories = tensor["categorical"]
        assert categories["exact"] and categories["occurrences"] == len(ids)
        assert dict(map(tuple, categories["summary"])) == {str(i): c for i, c in Counter(ids).items()}, name
        assert (
            categories["distinctAtLeast"]
            == len(set(ids))
            == tensor["hashing"]["bucketsUsed"] + (buckets in ids)
        )
        assert (
            dict(map(tuple, categories["summary"])).get(str(buckets), 0)
            == tensor["hashing"]["dummyIdOccurrences"]
        )
        if lengths is not None:
            assert tensor["lengths"]["count"] == len(lengths) == 2100
            assert (
                tensor["lengths"]["histogram"]["counts"]
                == np.histogram(lengths, bins=tensor["lengths"]["histogram"]["edges"])[0].tolist()
            )
            assert tensor["lengths"]["mean"] == pytest.approx(np.mean(lengths), rel=1e-11)
        else:
            assert "lengths" not in tensor
    # The exact values: `tags` rows hold 3 ids per non-null value, 3 dummy ids (50) without one.
    tags = tensors["tags"]
    assert (
        tags["numeric"]["min"],
        tags["numeric"]["max"],
        tags["lengths"]["min"],
        tags["lengths"]["max"],
    ) == (0, 50, 3, 9)
    assert tags["hashing"]["dummyIdOccurrences"] == 3 * sum(
        1 for b in batches for t in b.column("tags").to_pylist() if not t or all(v is None for v in t)
    )
    # The NTV vector: its values and `name,term` entries (the input's), no ids.
    ntv = tensors["ntv"]
    assert ntv["hashing"]["statisticsOf"] == "input"
    assert ntv["numeric"]["max"] == 24.0 and ntv["categorical"]["top"][0]["value"].startswith("g,x")


def test_hashed_ids_past_the_tracked_buckets_come_from_a_sketch_of_what_was_hashed():
    """2**21 buckets: no per-bucket arrays; the ids' numbers are a sketch of the ids hashed
    (the statistics' own hashing and the hashing step's give the same), no entries."""
    config = parse_config(
        {
            "features": [
                {
                    "inputFeatureInfo": {
                        "columnExpr": "tags",
                        "transformConfig": {"hashInfo": {"hashBucketSize": 1 << 21, "numHashFunctions": 2}},
                    },
                    "outputTensorInfo": {"name": "tags", "dtype": "long", "shape": [-1]},
                }
            ]
        }
    )
    batches = [b.select(["tags"]) for b in hashed_kinds_batches()]
    itself, from_step = Statistics(config), Statistics(config)
    for batch in batches:
        itself.add_batch(batch)
        from_step.add_batch(batch, hashes=False)
        from_step.add_distinct_hashes(hash_tensors_with_distinct(batch, config.tensors)[1])
    (tensor,) = itself.describe()["tensors"]
    assert from_step.describe()["tensors"] == [tensor]
    ids, lengths = _hashed_columns(config, batches)["tags"]
    reference = NumericSketch()
    reference.add(np.asarray(ids, np.int64))
    numbers = tensor["numeric"]
    assert (numbers["count"], numbers["min"], numbers["max"]) == (len(ids), min(ids), max(ids))
    assert max(ids) == 1 << 21  # the dummy id
    assert numbers["sketch"]["positive"] == reference.to_json()["positive"]
    assert numbers["mean"] == pytest.approx(np.mean(ids), rel=1e-11)
    assert "categorical" not in tensor and tensor["hashing"]["estimated"]
    assert (tensor["lengths"]["min"], tensor["lengths"]["max"]) == (2, 6) and tensor["lengths"][
        "count"
    ] == len(lengths)


def test_the_sample_s_hashed_tensor_shows_its_bucket_ids_not_the_movie_ids(sample):
    """movieBucket = movieId hashed into 1,000 buckets: ids 9..998 (the movie ids go to 112,852),
    240 distinct ids of 275 distinct movies; the page's card says so."""
    rows, tensors, report = sample
    bucket = tensors["movieBucket"]
    ids = [farmhash.fingerprint64(str(r["movieId"])) % 1000 for r in rows]
    numbers = bucket["numeric"]
    assert (
        (numbers["count"], numbers["min"], numbers["max"])
        == (300, 9.0, 998.0)
        == (len(ids), min(ids), max(ids))
    )
    median = next(q["value"] for q in numbers["quantiles"] if q["q"] == 0.5)
    assert median == 540.0 and _quantile_ok(np.asarray(ids), 0.5, median)  # 542.5 within 0.78%
    assert tensors["movieId"]["numeric"]["max"] == 112852.0  # the input, on its own tensor
    categories = bucket["categorical"]
    assert (categories["occurrences"], categories["distinctAtLeast"], categories["exact"]) == (300, 240, True)
    assert [(e["value"], e["count"]) for e in categories["top"][:4]] == [
        ("509", 4),
        ("900", 4),
        ("909", 4),
        ("419", 3),
    ]
    hashing = bucket["hashing"]
    assert (hashing["distinctValues"], hashing["bucketsUsed"], hashing["statisticsOf"]) == (275, 240, "ids")
    assert hashing["load"]["histogram"] == {
        "edges": [-0.5, 0.5, 1.5, 2.5, 3.5, 4.5],
        "counts": [760, 191, 41, 5, 3],
    }
    page = render_html(report)
    start = page.index(f'id="{tensor_anchor("movieBucket")}"')
    section = page[start : page.index("</section>", start)]
    cards = dict(re.findall(r'<span class="muted">([^<]+)</span><b>([^<]*)</b>', section))
    assert cards == {
        "kind": "hashed", "rows": "300", "null": "0.00%", "empty": "0.00%",
        "ids": "300", "min": "9", "median": "540", "max": "998", "distinct ids": "240",
        "buckets": "1,000", "buckets used": "24.00%",
        "input: distinct values": "275", "input: values sharing a bucket": "24.73%",
    }  # fmt: skip
    assert "top 20 ids" in section and "1.129e+05" not in section


# --- the page: distinct counts, categorical drift, plot sizes ----------------------------------


def _cards(page: str, name: str) -> dict[str, str]:
    start = page.index(f'id="{tensor_anchor(name)}"')
    section = page[start : page.index("</section>", start)]
    return dict(re.findall(r'<span class="muted">([^<]+)</span><b>([^<]*)</b>', section))


def test_distinct_is_a_number_when_exact_and_a_bound_when_not(generated, sample):
    _, report, _ = generated
    page = render_html(report)
    assert _cards(page, "tags")["distinct"] == "60"  # 60 tags, counted exactly
    cat = {t["name"]: t for t in report["tensors"]}["cat"]["categorical"]
    assert not cat["exact"]
    assert (cat["distinctAtLeast"], cat["maxCountError"]) == (659, 8)
    assert _cards(page, "cat")["distinct"] == "≥ 659 (counts ±8)"
    assert _cards(render_html(sample[2]), "genres")["distinct"] == "19"


def test_categorical_drift_keeps_both_splits_shares_of_the_values():
    train = {
        "tensors": [
            {"name": "g", "categorical": {"occurrences": 10, "summary": [["a", 6], ["b", 3], ["c", 1]]}}
        ]
    }
    current = {
        "tensors": [
            {"name": "g", "categorical": {"occurrences": 20, "summary": [["a", 6], ["b", 4], ["d", 10]]}}
        ]
    }
    (g,) = compare(train, current, "trainingData", 0.1)["tensors"]
    assert (g["measure"], g["distance"], g["flagged"]) == ("L-infinity", 0.5, True)
    assert g["frequencies"] == {
        "values": ["a", "d", "b", "c"],
        "train": [0.6, 0.0, 0.3, 0.1],
        "current": [0.3, 0.5, 0.2, 0.0],
    }
    # Past the shown values, the one that differs most still is among them (here the last).
    from beam_tensorize.kernels.report.drift import frequencies

    a = {f"v{i:02d}": 100 - i for i in range(30)} | {"rare": 1}
    b = {f"v{i:02d}": 100 - i for i in range(30)} | {"rare": 500}
    shown = frequencies(a, sum(a.values()), b, sum(b.values()), limit=5)
    assert shown["values"] == ["rare", "v00", "v01", "v02", "v03"]
    shown = frequencies(b, sum(b.values()), b, sum(b.values()), limit=3)
    assert shown["values"] == ["rare", "v00", "v01"] and shown["train"] == shown["current"]


def test_the_categorical_drift_plot_shows_train_and_this_split_side_by_side():
    from beam_tensorize.kernels.report.render import draw_figure

    drift = {
        "name": "g", "measure": "L-infinity", "distance": 0.5, "flagged": True, "compared": "values",
        "frequencies": {"values": ["a", "d", "b", "c"], "train": [0.6, 0.0, 0.3, 0.1], "current": [0.3, 0.5, 0.2, 0.0]},
    }  # fmt: skip
    tensor = {"name": "g", "kind": "categorical", "categorical": {"top": [{"value": "a", "count": 6}],
              "coverage": [{"k": 1, "share": 0.3}], "exact": True, "occurrences": 20, "distinctAtLeast": 3,
              "maxCountError": 0}}  # fmt: skip
    fig = draw_figure(tensor, drift)
    train = [(b.start, b.value) for b in fig.bars if b.series == "train"]
    current = [(b.start, b.value) for b in fig.bars if b.series == "this split"]
    assert [v for _, v in train] == [0.6, 0.0, 0.3, 0.1] and [v for _, v in current] == [0.3, 0.5, 0.2, 0.0]
    assert all(t < c for (t, _), (c, _) in zip(train, current))  # train above this split, value by value
    ticks = [t for t in fig.texts if t.role == "tick" and t.anchor == "end"]
    assert [t.text for t in sorted(ticks, key=lambda t: t.y)] == ["a", "d", "b", "c"]  # most frequent on top
    assert fig.legend == ["train", "this split"] and fig.title == "share of entries"
    svg = fig.svg("g: drift")
    # the bars not 0 wide, and each series' legend swatch
    assert svg.count('fill="#9aa5b1"') == 3 + 1 and svg.count('fill="#3e7cb1"') == 3 + 1
    page = render_html({"split": "validationData", "tensors": [tensor], "drift": {
        "against": "trainingData", "threshold": 0.1, "flagged": ["g"], "tensors": [drift]}})  # fmt: skip
    assert "(most for d: 0.00% of train, 50.00% here)" in page and "top 1 entries (this split)" in page


def _plot_sizes(page: str) -> list[tuple[int, int, str]]:
    """(width, height, viewBox) of every plot of a page, each parsed as XML."""
    import xml.etree.ElementTree as ET

    found = []
    for svg in re.findall(r'<svg class="plot".*?</svg>', page):
        root = ET.fromstring(svg)
        found.append((int(root.get("width")), int(root.get("height")), root.get("viewBox")))
    return found


def test_plots_are_drawn_at_the_size_shown_with_readable_text_and_the_same_bytes(generated, sample):
    """Every plot: 560 pixels wide, drawn in the pixels it is shown in (its viewBox), tick labels
    and titles at least 10 pixels and inside the plot; the same document gives the same page."""
    import json

    from beam_tensorize.kernels.report.plots import text_width
    from beam_tensorize.kernels.report.render import PLOT_WIDTH, TICK_PX, draw_figure

    _, report, _ = generated
    train = sample[2]
    for document in (report, train):
        sizes = _plot_sizes(render_html(document))
        assert len(sizes) == len(document["tensors"])
        for width, height, view in sizes:
            assert view == f"0 0 {width} {height}" and width == PLOT_WIDTH == 560 and height >= 300
    drifting = {
        **report,
        "drift": compare(
            report,
            _statistics(generated_table(seed=6, shift=3.0), parse_config(GENERATED_CONFIG)),
            "trainingData",
            0.1,
        ),
    }
    drift_of = {t["name"]: t for t in drifting["drift"]["tensors"]}
    panels = set()
    for document in (report, train, drifting):
        for tensor in document["tensors"]:
            fig = draw_figure(tensor, drift_of.get(tensor["name"]) if document is drifting else None)
            panels.add(fig.title)
            pixels = [t.px for t in fig.texts]
            assert pixels and min(pixels) >= 10 and min(pixels) == TICK_PX, tensor["name"]
            assert fig.width == PLOT_WIDTH and any(t.role == "tick" for t in fig.texts)
            for t in fig.texts:
                if t.vertical:
                    continue
                before, after = {"start": (0, 1), "middle": (0.5, 0.5), "end": (1, 0)}[t.anchor]
                width = text_width(t.text, t.px)
                assert t.x - before * width >= 0 and t.x + after * width <= fig.width, (tensor["name"], t)
                assert t.px <= t.y <= fig.height, (tensor["name"], t)
    assert {"values", "coverage by top k", "bucket load (occurrences per bucket)", "share of values",
            "share of entries"} <= panels  # fmt: skip
    page = render_html(drifting)
    assert render_html(json.loads(json.dumps(drifting))) == page
    assert len(_plot_sizes(page)) == len(drifting["tensors"])
