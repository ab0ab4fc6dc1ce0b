"""Bad input as a new user makes it: one clear line, a non-zero exit code, nothing written.

Each test runs the CLI in-process and checks the exit code, the exact message and the disk.
(The cases of the reliability issue not yet covered here are listed in its note.)
"""

from __future__ import annotations

import os

import pytest

from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
from pipelines.tensorize import main

pytestmark = pytest.mark.pipeline

HELP = "run 'python -m pipelines.tensorize --help' for the flags"


def _run(capsys, *args) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().err


def test_a_misspelled_flag_is_refused_with_a_hint(tmp_path, capsys):
    out = tmp_path / "out"
    code, err = _run(
        capsys, "--input", SAMPLE_AVRO, "--config", SAMPLE_CONFIG, "--output", str(out), "--num_shard", "4"
    )
    assert code == 2
    assert err == f"error: unknown flag --num_shard (did you mean --num_shards?); {HELP}\n"
    assert not out.exists()


def test_an_unknown_flag_without_a_close_match(tmp_path, capsys):
    code, err = _run(capsys, "--output", str(tmp_path / "o"), "--frobnicate=yes")
    assert (code, err) == (2, f"error: unknown flag --frobnicate; {HELP}\n")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--input_format", "xml", "argument --input_format: invalid choice: 'xml' (choose from 'auto', 'avro', 'orc', 'parquet', 'tfrecord')"),
        ("--num_shards", "x", "argument --num_shards: invalid int value: 'x'"),
        ("--output_format", "csv", "argument --output_format: invalid choice: 'csv' (choose from 'tfrecord', 'parquet')"),
    ],
)  # fmt: skip
def test_a_bad_flag_value_is_one_line(tmp_path, capsys, flag, value, message):
    code, err = _run(capsys, "--output", str(tmp_path / "o"), flag, value)
    assert (code, err) == (2, f"error: {message}; {HELP}\n")
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("output", [None, "", "  "], ids=["missing", "empty", "blank"])
def test_an_output_is_required_with_input_and_config(tmp_path, capsys, monkeypatch, output):
    monkeypatch.chdir(tmp_path)
    args = ["--input", SAMPLE_AVRO, "--config", SAMPLE_CONFIG] + (
        [] if output is None else ["--output", output]
    )
    code, err = _run(capsys, *args)
    assert (code, err) == (
        2,
        "error: --output is required with --input and --config: give the folder to write to\n",
    )
    assert os.listdir(tmp_path) == []  # nothing written into the current folder


def test_a_compression_of_the_other_format_is_refused(tmp_path, capsys):
    args = ["--output", str(tmp_path / "o"), "--output_format", "parquet", "--compression", "gzip"]
    code, err = _run(capsys, *args, "--output_format", "tfrecord", "--compression", "zstd")
    assert (code, err) == (
        2,
        "error: --compression zstd does not apply to --output_format tfrecord; use one of none, gzip, zlib\n",
    )
    assert not (tmp_path / "o").exists()


def test_a_file_of_another_format_fails_naming_it(tmp_path, capsys):
    csv = tmp_path / "data.avro"
    csv.write_text("userId,movieId\n1,2\n")
    out = tmp_path / "o"
    code, err = _run(capsys, "--input", str(csv), "--config", SAMPLE_CONFIG, "--output", str(out))
    assert code == 1
    lines = err.splitlines()
    assert len(lines) == 1, err  # the runner's error log and traceback go to the log file
    assert lines[0].startswith(
        f"error: the job failed; {out} holds no new complete output: {csv}: not a file of a known format "
        "(avro, orc, parquet, tfrecord): its first bytes are 7573657249642c6d; check the input path, or "
        "give the format (--input_format) [while running 'ReadInput/PlanSplits'] (details: "
    )
    log = lines[0].rsplit("(details: ", 1)[1].split(",")[0]
    with open(log) as f:
        assert "Traceback" in f.read()
    assert not (out / "_SUCCESS").exists() and not (out / "trainingData").exists()


def test_verbose_shows_the_runner_error_on_the_console(tmp_path, capsys):
    csv = tmp_path / "data.avro"
    csv.write_text("userId,movieId\n1,2\n")
    args = ["--input", str(csv), "--config", SAMPLE_CONFIG, "--output", str(tmp_path / "o"), "--verbose"]
    code, err = _run(capsys, *args)
    assert code == 1 and "Traceback" in err and "(details:" not in err
