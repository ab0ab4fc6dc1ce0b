"""`report/<split>.stats.pb`: the run report's statistics as TFDV's
`DatasetFeatureStatisticsList`, and the report's drift figures as TFDV measures them.

The first tests need nothing but the package. The others hold our statistics and figures
against TensorFlow Data Validation itself: TFDV's own statistics of the written records must
give the same counts, values and top entries; `tfdv.validate_statistics` finds no anomaly in a
train split against its `schema.pbtxt`; and its drift comparators, run on our two `stats.pb`,
measure the distances our report gives. TFDV has no release installable beside this package's
tfx-bsl 1.21 (see README, "With TFX"): these run where it is installed without its pins, as
`.ci/run` does, and are skipped elsewhere (`BEAM_TENSORIZE_REQUIRE_TFDV=1` makes them fail).
"""

from __future__ import annotations

import json
import math
import os
import sys
import types

import fastavro
import numpy as np
import pytest
from tensorflow_metadata.proto.v0 import anomalies_pb2, statistics_pb2

from beam_tensorize.kernels.report.drift import tfdv_jensen_shannon
from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
from pipelines.tensorize import main
from tests.compat.avro2tf.helpers import (
    AVRO2TF_CONFIG_PATH_VALUE_MOVIELENS,
    AVRO2TF_CONFIG_PATH_VALUE_SAMPLE,
    INPUT_TEXT_FILE_PATHS,
    resource,
)

pytestmark = pytest.mark.pipeline


def _stats(out: str, split: str = "trainingData") -> statistics_pb2.DatasetFeatureStatisticsList:
    with open(os.path.join(out, "report", f"{split}.stats.pb"), "rb") as f:
        return statistics_pb2.DatasetFeatureStatisticsList.FromString(f.read())


def _report(out: str, split: str = "trainingData") -> dict:
    with open(os.path.join(out, "report", f"{split}.json")) as f:
        return json.load(f)


def _by_name(stats) -> dict:
    (dataset,) = stats.datasets
    return {"/".join(f.path.step): f for f in dataset.features}


def _common(feature):
    stats = feature.num_stats if feature.HasField("num_stats") else feature.string_stats
    return stats.common_stats


@pytest.fixture(scope="module")
def sample(tmp_path_factory) -> str:
    out = str(tmp_path_factory.mktemp("sample") / "out")
    assert main(["--output", out, "--quiet", "--report", "json"]) == 0
    return out


def test_the_stats_pb_holds_the_report_s_figures_for_every_stored_feature(sample):
    stats, report = _stats(sample), _report(sample)
    (dataset,) = stats.datasets
    assert (dataset.name, dataset.num_examples) == ("trainingData", 300)
    features = _by_name(stats)
    with open(os.path.join(sample, "metadata", "tensor_metadata.json")) as f:
        metadata = json.load(f)
    stored = {key for e in metadata["features"] + metadata["labels"] for key in e["featureKeys"]}
    assert sorted(features) == sorted(stored)  # as TFDV names them, sorted
    tensors = {t["name"]: t for t in report["tensors"]}

    genres = features["genres"].string_stats  # strings: the report's entries
    assert (genres.unique, genres.top_values[0].value, genres.top_values[0].frequency) == (19, "comedy", 123)
    assert genres.common_stats.tot_num_values == 785 and genres.common_stats.max_num_values == 6
    assert [b.label for b in genres.rank_histogram.buckets][:2] == ["comedy", "drama"]
    lengths = sum(len(v) * c for v, c in tensors["genres"]["categorical"]["summary"])
    assert genres.avg_length == pytest.approx(lengths / 785)

    # feature-list ids, as TFDV describes a categorical int: the ids the records hold
    with open(os.path.join(sample, "featureList", "genreIds")) as f:
        comedy = f.read().splitlines().index("Comedy")
    ids = features["genreIds"].string_stats
    assert (ids.top_values[0].value, ids.top_values[0].frequency, ids.unique) == (str(comedy), 123, 19)
    # without the lists, the ids are not guessed: their counts only
    from beam_tensorize.kernels.report.tfdv_statistics import statistics_list

    unlisted = _by_name(statistics_list(report, metadata))["genreIds"].string_stats
    assert (len(unlisted.top_values), unlisted.common_stats.tot_num_values) == (0, 785)
    buckets = features["movieBucket"].string_stats  # hash buckets
    assert buckets.unique == tensors["movieBucket"]["categorical"]["distinctAtLeast"] == 240

    response, numeric = features["response"].num_stats, tensors["response"]["numeric"]
    assert (response.mean, response.std_dev, response.min, response.max) == (
        numeric["mean"], numeric["std"], numeric["min"], numeric["max"],
    )  # fmt: skip
    standard, quantiles = response.histograms
    assert [b.sample_count for b in standard.buckets] == numeric["histogram"]["counts"]
    assert sum(b.sample_count for b in quantiles.buckets) == pytest.approx(300)

    factors = features["movieLatentFactors"].num_stats.common_stats  # a fixed shape [30]
    assert (factors.min_num_values, factors.max_num_values, factors.tot_num_values) == (30, 30, 9000)
    user = features["userId"].num_stats.common_stats  # a one-value list of a scalar column
    assert (user.num_non_missing, user.tot_num_values, user.avg_num_values) == (300, 300, 1.0)
    # a sparse tensor: its entries of a row that share an index are summed when written, so
    # only the examples are counted
    for key in ("genreVector/indices", "genreVector/values"):
        common = features[key].num_stats.common_stats
        assert (common.num_non_missing, common.tot_num_values) == (300, 0)


def test_tfdv_jensen_shannon_rebuckets_as_tfdv_does():
    # the same mass spread over other edges: no divergence
    assert (
        tfdv_jensen_shannon({"edges": [0, 1, 2], "counts": [1, 1]}, {"edges": [0, 2], "counts": [2]}) == 0.0
    )
    # disjoint ranges
    assert tfdv_jensen_shannon({"edges": [0, 1], "counts": [4]}, {"edges": [1, 2], "counts": [4]}) == 1.0
    # [0, 2] holding 4 spreads 2 and 2 over [0, 1] and [1, 2]; against 3 and 1
    p, q = np.array([0.5, 0.5]), np.array([0.75, 0.25])
    m = (p + q) / 2
    expected = (np.sum(p * np.log2(p / m)) + np.sum(q * np.log2(q / m))) / 2
    found = tfdv_jensen_shannon({"edges": [0, 2], "counts": [4]}, {"edges": [0, 1, 2], "counts": [3, 1]})
    assert found == pytest.approx(expected)
    # NaNs are buckets of their own, and an empty side measures nothing
    assert tfdv_jensen_shannon({"edges": [0, 1], "counts": [1]}, {"edges": [0, 1], "counts": [1]}, 0, 1) > 0
    assert tfdv_jensen_shannon({"edges": [0, 1], "counts": [0]}, {"edges": [0, 1], "counts": [1]}) is None


def test_a_validation_run_writes_its_stats_pb_with_the_train_lists_ids(sample, tmp_path):
    inputs = ["--input", _shifted(tmp_path / "validation.avro"), "--config", SAMPLE_CONFIG]
    assert (
        main([*inputs, "--output", sample, "--quiet", "--report", "json", "--execution_mode", "validation"])
        == 0
    )
    features = _by_name(_stats(sample, "validationData"))
    with open(os.path.join(sample, "featureList", "genreIds")) as f:
        ids = {entry: str(i) for i, entry in enumerate(f.read().splitlines())}
    top = {v.value: v.frequency for v in features["genreIds"].string_stats.top_values}
    report = {t["name"]: t for t in _report(sample, "validationData")["tensors"]}
    assert top == {ids[v]: c for v, c in report["genreIds"]["categorical"]["summary"]}


def _new_genres(path) -> str:
    """The sample's first 100 rows, every 10th with the genre `Zombie` and every 25th with
    `Space-Opera` too: values the train split never had."""
    with open(SAMPLE_AVRO, "rb") as f:
        reader = fastavro.reader(f)
        schema, rows = reader.writer_schema, list(reader)[:100]
    for i, row in enumerate(rows):
        added = [t for t, every in (("Zombie", 10), ("Space-Opera", 25)) if i % every == 0]
        row["genreFeatures"] = row["genreFeatures"] + [
            {"name": "Genre", "term": t, "value": 1.0} for t in added
        ]
    with open(path, "wb") as f:
        fastavro.writer(f, schema, rows)
    return str(path)


def test_a_validation_run_names_string_values_outside_the_train_schema(tmp_path, capsys):
    out = str(tmp_path / "out")
    assert main(["--output", out, "--quiet", "--report", "json"]) == 0
    schema_path = os.path.join(out, "metadata", "schema.pbtxt")
    with open(schema_path) as f:
        schema = f.read()
    inputs = ["--input", _new_genres(tmp_path / "v.avro"), "--config", SAMPLE_CONFIG, "--output", out]
    assert main([*inputs, "--execution_mode", "validation"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[-1] == (
        "  anomalies:     genres 14 value(s) not in the train split's ('zombie', 'space-opera') "
        "(schema: metadata/schema.pbtxt; see report/validationData.html)"
    )
    anomalies = _report(out, "validationData")["anomalies"]
    assert anomalies == {
        "against": "metadata/schema.pbtxt",
        "features": [{"name": "genres", "kind": "unexpectedStringValues", "values": ["zombie", "space-opera"],
                      "count": 14, "share": 0.04844290657, "exact": True}],  # of 289
    }  # fmt: skip
    with open(os.path.join(out, "report", "validationData.html")) as f:
        assert "<b>genres</b>: 14 value(s) not in the train split's (zombie, space-opera)" in f.read()
    with open(schema_path) as f:
        assert f.read() == schema  # the train split's domains stay
    # values the train split had: no anomaly, no line
    assert main(["--input", SAMPLE_AVRO, *inputs[2:], "--execution_mode", "test", "--report", "json"]) == 0
    assert _report(out, "testData")["anomalies"]["features"] == []
    assert "anomalies:" not in capsys.readouterr().out


def _shifted(path) -> str:
    """The sample's later users, every rating one higher (capped at 5): `userId` and `response`
    drift, the genres hardly."""
    with open(SAMPLE_AVRO, "rb") as f:
        reader = fastavro.reader(f)
        schema, rows = reader.writer_schema, list(reader)
    rows = [dict(r, response=min(r["response"] + 1.0, 5.0)) for r in rows if r["userId"] > 120]
    with open(path, "wb") as f:
        fastavro.writer(f, schema, rows, codec="deflate")
    return str(path)


def _with_nulls(folder) -> tuple[str, str]:
    """An input with null lists, null scalars in lists and a hashed nullable column."""
    schema = {"type": "record", "name": "r", "fields": [
        {"name": "x", "type": ["null", "double"]},
        {"name": "tags", "type": ["null", {"type": "array", "items": "string"}]},
        {"name": "n", "type": ["null", "long"]},
        {"name": "y", "type": "double"}]}  # fmt: skip
    rows = [
        {"x": None if i % 7 == 0 else i / 10, "tags": None if i % 5 == 0 else ["abcde"[(i * j) % 5] for j in range(i % 4)],
         "n": None if i % 3 == 0 else i % 51, "y": float(i % 2)}
        for i in range(200)
    ]  # fmt: skip
    config = {"features": [
        {"inputFeatureInfo": {"columnExpr": "x"}, "outputTensorInfo": {"name": "x", "dtype": "float", "shape": [-1]}},
        {"inputFeatureInfo": {"columnExpr": "tags"}, "outputTensorInfo": {"name": "tags", "dtype": "string", "shape": [-1]}},
        {"inputFeatureInfo": {"columnExpr": "tags"}, "outputTensorInfo": {"name": "tagIds", "dtype": "long", "shape": [-1]}},
        {"inputFeatureInfo": {"columnExpr": "n"}, "outputTensorInfo": {"name": "n", "dtype": "long", "shape": [-1]}},
        {"inputFeatureInfo": {"columnExpr": "n", "transformConfig": {"hashInfo": {"hashBucketSize": 10}}},
         "outputTensorInfo": {"name": "nb", "dtype": "long", "shape": []}}],
        "labels": [{"inputFeatureInfo": {"columnExpr": "y"}, "outputTensorInfo": {"name": "y", "dtype": "double", "shape": []}}]}  # fmt: skip
    folder.mkdir()
    with open(folder / "in.avro", "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), rows)
    (folder / "config.json").write_text(json.dumps(config))
    return str(folder / "in.avro"), str(folder / "config.json")


# --- against TFDV ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tfdv():
    """TFDV, imported beside tfx-bsl 1.21: `tfx_bsl.arrow.sql_util`, which TFDV 1.16 imports for
    SQL slicing (unused here) and tfx-bsl 1.21 no longer has, stands in empty.

    Importing TFDV registers its own Beam coder for `pa.RecordBatch`; ours is registered again
    after this module's tests, so that the pipelines of later tests do not pickle TFDV's coder for
    worker processes, which cannot import TFDV without the stand-in (tests/runners/)."""
    import apache_beam as beam
    import pyarrow as pa

    from beam_tensorize.io import RecordBatchCoder

    try:
        import tfx_bsl.arrow

        if "tfx_bsl.arrow.sql_util" not in sys.modules and not hasattr(tfx_bsl.arrow, "sql_util"):
            stub = types.ModuleType("tfx_bsl.arrow.sql_util")
            sys.modules["tfx_bsl.arrow.sql_util"] = stub
            tfx_bsl.arrow.sql_util = stub
        import tensorflow_data_validation
    except ImportError as error:
        if os.environ.get("BEAM_TENSORIZE_REQUIRE_TFDV"):
            raise
        pytest.skip(
            f"TFDV is not installed ({error}); no release installs beside tfx-bsl 1.21 with its pins: "
            "pip install --no-deps tensorflow-data-validation==1.16.1 joblib cloudpickle pyfarmhash"
        )
    yield tensorflow_data_validation
    beam.coders.registry.register_coder(pa.RecordBatch, RecordBatchCoder)


RUNS = {
    "sample": lambda folder: [],
    "movielens": lambda folder: ["--config", resource(AVRO2TF_CONFIG_PATH_VALUE_MOVIELENS), "--input", SAMPLE_AVRO],
    "text": lambda folder: ["--config", resource(AVRO2TF_CONFIG_PATH_VALUE_SAMPLE), "--input", resource(INPUT_TEXT_FILE_PATHS)],
    "nulls": lambda folder: [flag for pair in zip(("--input", "--config"), _with_nulls(folder / "in")) for flag in pair],
}  # fmt: skip


@pytest.mark.parametrize("run", sorted(RUNS))
def test_tfdv_s_own_statistics_of_the_records_are_ours(tfdv, tmp_path, run):
    out = str(tmp_path / "out")
    assert main([*RUNS[run](tmp_path), "--output", out, "--quiet", "--report", "json"]) == 0
    schema = tfdv.load_schema_text(os.path.join(out, "metadata", "schema.pbtxt"))
    ours = _stats(out)
    # our statistics agree with the schema, as TFDV's own do
    assert dict(tfdv.validate_statistics(ours, schema).anomaly_info) == {}
    theirs = tfdv.generate_statistics_from_tfrecord(
        os.path.join(out, "trainingData", "part-*"), stats_options=tfdv.StatsOptions(schema=schema)
    )
    assert ours.datasets[0].num_examples == theirs.datasets[0].num_examples
    mine, tfdvs = _by_name(ours), _by_name(theirs)
    assert sorted(mine) == sorted(tfdvs)
    for name, feature in mine.items():
        other = tfdvs[name]
        assert (feature.type, feature.WhichOneof("stats")) == (other.type, other.WhichOneof("stats")), name
        common, expected = _common(feature), _common(other)
        assert common.num_non_missing == expected.num_non_missing, name
        if common.tot_num_values == 0 and expected.tot_num_values:
            assert name.endswith(("/indices", "/values")) or feature.num_stats.common_stats == common, name
            continue  # only counted (sparse entries; a dense vector of all ids has its counts)
        assert (common.min_num_values, common.max_num_values, common.tot_num_values) == (
            expected.min_num_values, expected.max_num_values, expected.tot_num_values,
        ), name  # fmt: skip
        assert common.avg_num_values == pytest.approx(expected.avg_num_values, rel=1e-6), name
        if feature.HasField("string_stats"):
            a, b = feature.string_stats, other.string_stats
            assert a.unique == b.unique, name
            assert {v.label: v.sample_count for v in a.rank_histogram.buckets} == {
                v.label: v.sample_count for v in b.rank_histogram.buckets
            }, name
            assert a.avg_length == pytest.approx(b.avg_length, rel=1e-6), name
        elif feature.num_stats.histograms:  # (a dense vector of all ids has no numbers)
            a, b = feature.num_stats, other.num_stats
            for field in ("mean", "std_dev", "min", "max", "num_zeros"):
                assert getattr(a, field) == pytest.approx(getattr(b, field), rel=1e-6, abs=1e-9), (
                    name,
                    field,
                )


def test_tfdv_finds_the_anomalies_the_report_names(tfdv, tmp_path):
    out = str(tmp_path / "out")
    assert main(["--output", out, "--quiet", "--report", "json"]) == 0
    inputs = ["--input", _new_genres(tmp_path / "v.avro"), "--config", SAMPLE_CONFIG, "--output", out]
    assert main([*inputs, "--execution_mode", "validation", "--quiet", "--report", "json"]) == 0
    schema = tfdv.load_schema_text(os.path.join(out, "metadata", "schema.pbtxt"))
    found = tfdv.validate_statistics(_stats(out, "validationData"), schema).anomaly_info
    assert (
        sorted(found)
        == [f["name"] for f in _report(out, "validationData")["anomalies"]["features"]]
        == ["genres"]
    )
    (reason,) = found["genres"].reason
    assert reason.type == anomalies_pb2.AnomalyInfo.ENUM_TYPE_UNEXPECTED_STRING_VALUES
    assert "zombie" in reason.description and "space-opera" in reason.description


def _drift_measurements(tfdv, schema, current, previous) -> dict[str, float]:
    anomalies = tfdv.validate_statistics(current, schema, previous_statistics=previous)
    return {
        "/".join(info.path.step): measurement.value
        for info in anomalies.drift_skew_info
        for measurement in info.drift_measurements
    }


def test_the_report_s_drift_figures_are_tfdv_s(tfdv, tmp_path):
    out = str(tmp_path / "out")
    assert main(["--output", out, "--quiet", "--report", "json"]) == 0
    args = ["--input", _shifted(tmp_path / "v.avro"), "--config", SAMPLE_CONFIG, "--output", out, "--quiet"]
    assert main([*args, "--execution_mode", "validation", "--report", "json"]) == 0
    schema = tfdv.load_schema_text(os.path.join(out, "metadata", "schema.pbtxt"))
    for feature in schema.feature:  # TFDV's comparators: L-infinity for categories, else JSD
        if feature.type == 1 or feature.int_domain.is_categorical:  # BYTES, or ids
            feature.drift_comparator.infinity_norm.threshold = 0.1
        elif "/" not in feature.name:
            feature.drift_comparator.jensen_shannon_divergence.threshold = 0.1
    drift = {t["name"]: t for t in _report(out, "validationData")["drift"]["tensors"]}

    # what tfdv.visualize_statistics(train, validation) shows: Facets Overview of both
    from tensorflow_data_validation.utils.display_util import get_statistics_html

    page = get_statistics_html(
        _stats(out), _stats(out, "validationData"), lhs_name="train", rhs_name="validation"
    )
    assert "<facets-overview" in page and len(page) > 10_000

    measured = _drift_measurements(tfdv, schema, _stats(out, "validationData"), _stats(out))
    assert sorted(measured) == sorted(n for n in drift if n != "genreVector")  # (sparse: none)
    for name, value in measured.items():
        assert drift[name]["distance"] == pytest.approx(value, abs=1e-9), name
    assert sorted(n for n, t in drift.items() if t["flagged"]) == ["response", "userId"]

    # TFDV on its own statistics of the records: the same flags, the same distances give or take
    # its own histograms' edges
    def generated(split):
        pattern = os.path.join(out, split, "part-*")
        return tfdv.generate_statistics_from_tfrecord(pattern, stats_options=tfdv.StatsOptions(schema=schema))

    own = _drift_measurements(tfdv, schema, generated("validationData"), generated("trainingData"))
    assert sorted(own) == sorted(measured)
    for name, value in own.items():
        assert math.isclose(drift[name]["distance"], value, rel_tol=0.05, abs_tol=1e-3), (name, value)
        assert (value > 0.1) == drift[name]["flagged"], name
