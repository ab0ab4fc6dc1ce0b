"""The run report in pipelines: `ComputeStatistics` in a TestPipeline, and the CLI end to end
(files committed with the output, none from a failing run, reruns give the same JSON, drift of a
validation run against the train report, `pipelines.report` rebuilding the page)."""

from __future__ import annotations

import json
import os
import re
from collections import Counter

import apache_beam as beam
import fastavro
import pyarrow as pa
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from beam_tensorize.config import parse_config
from beam_tensorize.job.finish import dead_letter_json
from beam_tensorize.kernels.features.vocab import FeatureList
from beam_tensorize.kernels.provenance import with_source
from beam_tensorize.kernels.report.statistics import Statistics
from beam_tensorize.report import ComputeStatistics
from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
from beam_tensorize.transforms import HashFeatures
from pipelines import report as report_cli
from pipelines.tensorize import main
from tests.e2e.test_bad_inputs import CHECK_SHAPES, two_genres_config
from tests.kernels.report.test_statistics import (
    GENERATED_CONFIG,
    HASHED_KINDS_CONFIG,
    generated_table,
    hashed_kinds_batches,
)

pytestmark = pytest.mark.pipeline


def _without_timings(report: dict) -> dict:
    return {k: v for k, v in report.items() if k != "timings"}


def test_compute_statistics_in_a_pipeline_equals_the_kernel_on_all_batches():
    config = parse_config(GENERATED_CONFIG)
    table = generated_table().slice(0, 6000)
    batches = [
        with_source(b, f"part{i % 2}.parquet", i, unit="row")
        for i, b in enumerate(table.to_batches(max_chunksize=1500))
    ]
    letters = [
        {"source": "part0.parquet: record 7", "reason": "bad x", "tensors": {"x": None}},
        {"source": "part1.parquet", "offset": 3, "record": 1, "reason": "cannot decode"},
    ]
    lists = {"tags": FeatureList(tuple(f"t{i}" for i in range(40)))}
    expected = Statistics(config)
    for batch in batches:
        expected.add_batch(batch, {"tags": pa.array(lists["tags"].entries)})
    for letter in letters:
        expected.add_dead_letter(letter, dead_letter_json(letter))
    expected = expected.describe()

    def check(found):
        (report,) = found
        assert report["timings"]["statistics"] > 0
        assert _without_timings(report) == expected

    with TestPipeline() as p:
        feature_lists = p | "Lists" >> beam.Create([lists])
        dead = p | "Dead" >> beam.Create(letters)
        stats = (
            p
            | beam.Create(batches, reshuffle=False)
            | ComputeStatistics(config, feature_lists=feature_lists, dead_letters=dead)
        )
        assert_that(stats, check)


def test_compute_statistics_takes_the_hashing_steps_distinct_values():
    """`HashFeatures(distinct_hashes=True)` feeding `ComputeStatistics(hashes=...)` gives the
    statistics of the kernel hashing the values itself."""
    config = parse_config(HASHED_KINDS_CONFIG)
    batches = hashed_kinds_batches()
    expected = Statistics(config)
    for batch in batches:
        expected.add_batch(batch)
    expected = expected.describe()

    def check(found):
        (report,) = found
        assert _without_timings(report) == expected

    with TestPipeline() as p:
        extracted = p | beam.Create(batches, reshuffle=False)
        hashed, hashes = extracted | HashFeatures(config, distinct_hashes=True)
        assert_that(hashed | beam.Map(lambda b: b.num_rows), equal_to([700, 700, 700]), label="Rows")
        assert_that(extracted | ComputeStatistics(config, hashes=hashes), check)


def _report(out, split="trainingData") -> dict:
    with open(os.path.join(out, "report", f"{split}.json")) as f:
        return json.load(f)


def test_a_run_commits_its_report_and_a_rerun_gives_the_same_json(tmp_path):
    out = str(tmp_path / "out")
    assert main(["--output", out, "--quiet"]) == 0
    assert sorted(os.listdir(os.path.join(out, "report"))) == [
        "trainingData.html",
        "trainingData.json",
        "trainingData.stats.pb",
    ]
    first = _report(out)
    metadata = json.load(open(os.path.join(out, "metadata", "tensor_metadata.json")))
    assert first["rowsRead"] == first["rowsWritten"] == metadata["data"]["trainingData"]["numRecords"] == 300
    assert first["split"] == "trainingData" and first["executionMode"] == "train"
    assert [t["name"] for t in first["tensors"]] == [
        t["name"] for t in metadata["features"] + metadata.get("labels", [])
    ]
    assert set(first["timings"]) == {
        "statistics", "readAndExtract", "commitAndMetadata", "renderPage", "writeReport"
    }  # fmt: skip
    assert first["files"] == [{"file": SAMPLE_AVRO, "rowsRead": 300, "rowsWritten": 300, "badRows": 0}]
    assert main(["--output", out, "--quiet"]) == 0
    assert _without_timings(_report(out)) == _without_timings(first)


def test_report_json_writes_no_page_and_report_none_writes_nothing(tmp_path):
    out = tmp_path / "json"
    assert main(["--output", str(out), "--quiet", "--report", "json"]) == 0
    assert sorted(os.listdir(out / "report")) == ["trainingData.json", "trainingData.stats.pb"]
    out = tmp_path / "none"
    assert main(["--output", str(out), "--quiet", "--report", "none"]) == 0
    assert not (out / "report").exists() and (out / "_SUCCESS").exists()


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--report", "pdf", "error: argument --report: invalid choice: 'pdf'"),
        ("--drift_threshold", "2", "--drift_threshold must be between 0 and 1, got 2.0"),
    ],
)
def test_bad_report_flags_are_one_line(tmp_path, capsys, flag, value, message):
    assert main(["--output", str(tmp_path / "o"), flag, value]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists()


def test_bad_rows_are_grouped_by_reason_and_a_failing_run_writes_no_report(tmp_path, capsys):
    args = ["--input", SAMPLE_AVRO, "--config", str(two_genres_config(tmp_path)), "--quiet", CHECK_SHAPES]
    out = tmp_path / "ok"
    assert main([*args, "--output", str(out), "--max_bad_records_ratio", "1"]) == 0
    report = _report(out)
    dead = (out / "deadLetters" / "trainingData" / "part-00000-of-00001.jsonl").read_text().splitlines()
    letters = [json.loads(line) for line in dead]
    by_reason = {}
    for letter in letters:
        by_reason.setdefault(letter["reason"], []).append(letter)
    assert [(d["reason"], d["count"]) for d in report["deadLetters"]] == sorted(
        ((r, len(v)) for r, v in by_reason.items()), key=lambda item: (-item[1], item[0])
    )
    for entry in report["deadLetters"]:
        assert entry["example"] in by_reason[entry["reason"]]
    assert report["files"] == [{"file": SAMPLE_AVRO, "rowsRead": 300, "rowsWritten": 87, "badRows": 213}]
    failed = tmp_path / "failed"
    assert main([*args, "--output", str(failed), "--max_bad_records_ratio", "0.5"]) == 1
    assert not (failed / "report").exists() and not (failed / "_SUCCESS").exists()


def _validation_input(path) -> str:
    """The sample's well-rated movies only: a validation split whose ratings drift."""
    with open(SAMPLE_AVRO, "rb") as f:
        reader = fastavro.reader(f)
        schema, rows = reader.writer_schema, [r for r in reader if r["response"] >= 4.0]
    with open(path, "wb") as f:
        fastavro.writer(f, schema, rows)
    return str(path)


def train_then_validation(tmp_path) -> str:
    """An output of the sample's train run, then a validation run of well-rated movies only."""
    out = str(tmp_path / "out")
    assert main(["--output", out, "--quiet"]) == 0
    validation = _validation_input(tmp_path / "valid.avro")
    args = ["--input", validation, "--config", SAMPLE_CONFIG, "--output", out, "--quiet"]
    assert main([*args, "--execution_mode", "validation"]) == 0
    return out


def test_a_validation_run_shows_drift_against_the_train_report_and_the_page_rebuilds(tmp_path, capsys):
    out = train_then_validation(tmp_path)
    report = _report(out, "validationData")
    drift = report["drift"]
    assert drift["against"] == "trainingData" and drift["threshold"] == 0.1
    assert "response" in drift["flagged"]
    distances = {t["name"]: t for t in drift["tensors"]}
    assert distances["response"]["measure"] == "Jensen-Shannon" and distances["response"]["flagged"]
    assert distances["genres"]["measure"] == "L-infinity"
    assert "drift" not in _report(out)  # the train report compares with nothing
    genre_ids = {t["name"]: t for t in report["tensors"]}["genreIds"]["featureList"]
    assert genre_ids["size"] == 19 and genre_ids["unknownShare"] == 0.0

    page = os.path.join(out, "report", "validationData.html")
    os.remove(page)
    capsys.readouterr()
    assert report_cli.main([out, "--split", "validationData"]) == 0
    assert capsys.readouterr().out.strip() == page
    text = open(page).read()
    assert text.count('<section class="tensor"') == len(report["tensors"]) and "drift" in text
    assert report_cli.main([str(tmp_path / "nothing")]) == 2
    assert "error: no run report in" in capsys.readouterr().err


def test_the_page_and_its_plots_are_drawn_in_the_writing_process(tmp_path, monkeypatch):
    """No child process and no plotting library: `write_report` draws each tensor's plot as
    inline SVG, the same page whoever writes it."""
    import subprocess

    from beam_tensorize.job.report import write_report

    def refused(*args, **kwargs):
        raise AssertionError(f"a child process was started: {args}")

    monkeypatch.setattr(subprocess, "Popen", refused)
    config = parse_config(GENERATED_CONFIG)
    stats = Statistics(config)
    for batch in generated_table().slice(0, 3000).to_batches(max_chunksize=1000):
        stats.add_batch(batch)
    document = {**stats.describe(), "timings": {"statistics": 0.0}}
    pages = []
    for folder in ("a", "b"):
        written = write_report(document, str(tmp_path / folder), "trainingData", "train", "html")
        pages.append(open(written["html"]).read())
    strip = re.compile(r"time per stage: [^<]*")  # the pages' own timings
    assert strip.sub("", pages[0]) == strip.sub("", pages[1])
    assert pages[0].count('<svg class="plot"') == len(document["tensors"]) and "<img" not in pages[0]


def test_the_summary_names_the_tensors_past_the_drift_threshold(tmp_path, capsys):
    """A validation run of well-rated movies only: `response` drifts (TFDV's Jensen-Shannon
    0.71); with a lower threshold the genres (L-infinity 0.021) and the latent factors too,
    farthest first, each with the digits it takes to read past the threshold. A run like its train data, and the train
    run itself, print no drift line."""
    out = str(tmp_path / "out")
    assert main(["--output", out]) == 0
    assert "drift:" not in capsys.readouterr().out
    validation = _validation_input(tmp_path / "valid.avro")
    args = [
        "--input",
        validation,
        "--config",
        SAMPLE_CONFIG,
        "--output",
        out,
        "--execution_mode",
        "validation",
    ]
    assert main(args) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[-2:] == [
        f"  report:        {out}/report/validationData.html",
        "  drift:         response 0.71 (past 0.1; see report/validationData.html)",
    ]
    drift = {t["name"]: t for t in _report(out, "validationData")["drift"]["tensors"]}
    assert drift["response"]["distance"] == 0.706057477 and drift["genres"]["distance"] == 0.02080077096
    assert main([*args, "--save_mode", "overwrite", "--drift_threshold", "0.01", "--report", "json"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "  drift:         response 0.71, genreIds 0.02, genreVector 0.02, genres 0.02, movieLatentFactors 0.02 "
        "(past 0.01; see report/validationData.json)"
    )
    assert main([*args, "--save_mode", "overwrite", "--drift_threshold", "0.0208"]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == (
        "  drift:         response 0.71, genreIds 0.021, genreVector 0.021, genres 0.021 "
        "(past 0.0208; see report/validationData.html)"
    )
    same = ["--input", SAMPLE_AVRO, "--config", SAMPLE_CONFIG, "--output", out, "--execution_mode", "test"]
    assert main(same) == 0
    printed = capsys.readouterr().out
    assert "report/testData.html" in printed and "drift:" not in printed
    assert _report(out, "testData")["drift"]["flagged"] == []


def test_a_validation_run_compares_entries_and_hashed_ids_with_train_side_by_side(tmp_path):
    """The categorical drift keeps both splits' shares of the values (train's from the sample,
    this split's from its well-rated movies), as counted from the files; the hashed tensor is
    compared on its bucket ids."""
    out = train_then_validation(tmp_path)
    with open(SAMPLE_AVRO, "rb") as f:
        rows = list(fastavro.reader(f))
    shares = []
    for part in (rows, [r for r in rows if r["response"] >= 4.0]):
        counted = Counter(g["term"].lower() for r in part for g in r["genreFeatures"])
        total = sum(counted.values())
        shares.append({k: float(f"{v / total:.10g}") for k, v in counted.items()})  # 10 digits
    drift = {t["name"]: t for t in _report(out, "validationData")["drift"]["tensors"]}
    genres = drift["genres"]["frequencies"]
    assert genres["values"][:3] == ["drama", "comedy", "action"] and len(genres["values"]) == 19
    assert genres["train"] == [shares[0][v] for v in genres["values"]]
    assert genres["current"] == [shares[1][v] for v in genres["values"]]
    assert (genres["train"][0], genres["current"][0]) == (0.1541401274, 0.1749408983)
    assert drift["genres"]["distance"] == pytest.approx(0.1749408983 - 0.1541401274, abs=1e-9)
    bucket = drift["movieBucket"]
    assert (bucket["measure"], bucket["distance"]) == ("L-infinity", 0.008518518519)
    assert bucket["frequencies"]["values"][:2] == ["419", "893"]
    page = open(os.path.join(out, "report", "validationData.html")).read()
    assert "(most for drama: 15.41% of train, 17.49% here)" in page
    assert 'aria-label="genres: drift"' in page and 'aria-label="movieBucket: drift"' in page


def test_the_summary_names_at_most_ten_drifting_tensors(tmp_path):
    from types import SimpleNamespace

    from pipelines.console import drift_line

    tensors = [{"name": f"t{i:02d}", "distance": 0.5 + i / 100, "flagged": True} for i in range(12)]
    tensors.append({"name": "calm", "distance": 0.05, "flagged": False})
    (tmp_path / "report").mkdir()
    (tmp_path / "report" / "testData.json").write_text(
        json.dumps({"drift": {"threshold": 0.5, "flagged": [], "tensors": tensors}})
    )
    spec = SimpleNamespace(output=str(tmp_path), split="testData", report="json")
    assert drift_line(spec) == (
        "t11 0.61, t10 0.60, t09 0.59, t08 0.58, t07 0.57, t06 0.56, t05 0.55, t04 0.54, t03 0.53, "
        "t02 0.52 and 2 more (past 0.5; see report/testData.json)"
    )
    assert drift_line(SimpleNamespace(output=str(tmp_path / "none"), split="testData", report="html")) == ""
