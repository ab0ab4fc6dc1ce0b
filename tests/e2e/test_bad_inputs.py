"""Bad input as a new user makes it: one clear line, a non-zero exit code, nothing written.

Each test runs the CLI in-process and checks the exit code, the exact message and the disk.
(The cases of the reliability issue not yet covered here are listed in its note.)
"""

from __future__ import annotations

import os
import re

import pytest

from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
from pipelines.tensorize import main

pytestmark = pytest.mark.pipeline

HELP = "run 'python -m pipelines.tensorize --help' for the flags"


def _on_sample(out, *more: str, config: str = SAMPLE_CONFIG) -> list[str]:
    """The flags of a run on the bundled sample into `out`, then `more`."""
    return ["--input", SAMPLE_AVRO, "--config", config, "--output", str(out), *more]


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


def test_a_shell_expanded_glob_is_refused_not_cut_to_its_first_file(tmp_path, capsys):
    # `--input dir/*.avro` unquoted: the shell hands over one file per argument; the files
    # after the first would otherwise be dropped without a word.
    out = tmp_path / "out"
    code, err = _run(capsys, *_on_sample(out), "second.avro", "third.avro")
    assert code == 2
    assert err == (
        "error: unexpected argument 'second.avro' (and 1 more): several inputs are one "
        "comma-separated --input, or a glob in quotes (--input 'data/*.avro'); " + HELP + "\n"
    )
    assert not out.exists()


def test_a_stray_value_after_a_beam_switch_is_refused(tmp_path, capsys):
    # Beam's on/off flags take no value: the word after one is a stray argument.
    out = tmp_path / "out"
    code, err = _run(capsys, *_on_sample(out), "--save_main_session", "yes")
    assert code == 2
    assert err.startswith("error: unexpected argument 'yes': ")
    assert not out.exists()


@pytest.mark.parametrize(
    ("flag", "value", "message"),
    [
        ("--input_format", "xml", "argument --input_format: invalid choice: 'xml' (choose from 'auto', 'avro', 'orc', 'parquet', 'tfrecord')"),
        ("--num_shards", "x", "argument --num_shards: invalid int value: 'x'"),
        ("--output_format", "csv", "argument --output_format: invalid choice: 'csv' (choose from 'tfrecord', 'parquet', 'avro')"),
        ("--input_passes", "3", "argument --input_passes: invalid choice: 3 (choose from 1, 2)"),
        ("--input_passes", "once", "argument --input_passes: invalid int value: 'once'"),
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
        "error: --compression 'zstd' does not apply to --output_format 'tfrecord'; use one of none, gzip, zlib\n",
    )
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--num_shards", "0"], "--num_shards must be a positive integer, got 0"),
        (["--max_records_per_file", "-3"], "--max_records_per_file must be a positive integer, got -3"),
        (["--batch_rows", "0"], "--batch_rows must be a positive integer, got 0"),
        (["--max_bad_records_ratio", "1.5"], "--max_bad_records_ratio must be between 0 and 1, got 1.5"),
        (["--drift_threshold", "-1"], "--drift_threshold must be between 0 and 1, got -1.0"),
        (
            ["--num_shards", "2", "--max_records_per_file", "5"],
            "give --num_shards or --max_records_per_file, not both",
        ),
        (["--dedup_block_size", "10"], "give --dedup_block_size and --dedup_user_cols together"),
        (
            ["--dedup_block_size", "10", "--dedup_user_cols", "userId,movieId"],
            "deduplication writes Parquet blocks: use --output_format parquet",
        ),
        (
            ["--skip_conversion", "--execution_mode", "test"],
            "--skip_conversion writes the feature lists and metadata of train mode; use --execution_mode train",
        ),
        (
            ["--partition_field_name", "movieId", "--partition_by", "movieId"],
            "give --partition_field_name (partition=<id>/ folders) or --partition_by, not both",
        ),
    ],
    ids=lambda value: " ".join(value) if isinstance(value, list) else "",
)
def test_the_settings_checks_name_the_flags(tmp_path, capsys, flags, message):
    """The CLI leaves the settings' checks to `TensorizeSpec`; its messages name the flags."""
    code, err = _run(capsys, "--output", str(tmp_path / "o"), *flags)
    assert (code, err) == (2, f"error: {message}\n")
    assert not (tmp_path / "o").exists()


def test_a_file_of_another_format_fails_naming_it(tmp_path, capsys):
    csv = tmp_path / "data.avro"
    csv.write_text("userId,movieId\n1,2\n")
    out = tmp_path / "o"
    code, err = _run(capsys, "--input", str(csv), "--config", SAMPLE_CONFIG, "--output", str(out))
    assert code == 1
    lines = err.splitlines()
    assert len(lines) == 1, err  # the runner's error log and traceback go to the log file
    assert re.match(
        re.escape(
            f"error: the job failed; {out} holds no new complete output: {csv}: not a file of a known format "
            "(avro, orc, parquet, tfrecord): its first bytes are 7573657249642c6d; check the input path, or "
            "give the format (--input_format) (details: "
        ),
        lines[0],
    ), lines[0]
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


def test_an_output_that_is_a_file_fails_before_any_processing(tmp_path, capsys):
    target = tmp_path / "out.txt"
    target.write_text("keep me")
    code, err = _run(capsys, "--input", SAMPLE_AVRO, "--config", SAMPLE_CONFIG, "--output", str(target))
    assert (code, err) == (
        2,
        f"error: the output {target} is a file, not a folder: choose a folder for --output\n",
    )
    assert target.read_text() == "keep me"


def test_an_output_that_cannot_be_written_fails_before_any_processing(tmp_path, capsys):
    (tmp_path / "file").write_text("x")
    out = tmp_path / "file" / "out"
    code, err = _run(capsys, "--input", SAMPLE_AVRO, "--config", SAMPLE_CONFIG, "--output", str(out))
    assert code == 2
    assert err.startswith(f"error: cannot write to the output {out}: ")
    assert err.endswith(
        "check that it is a folder you may write to (and the credentials of its file system)\n"
    )
    assert err.count("\n") == 1


def test_an_output_that_does_not_answer_fails_after_the_probe_timeout(tmp_path, monkeypatch):
    import time

    from beam_tensorize.job import preflight

    def hanging(path):
        time.sleep(5)

    monkeypatch.setattr(preflight, "create_file", hanging)
    start = time.monotonic()
    with pytest.raises(OSError) as err:
        preflight.check_output_writable(str(tmp_path / "o"), timeout=0.2)
    assert time.monotonic() - start < 2
    assert str(err.value) == (
        f"cannot write to the output {tmp_path / 'o'}: no answer within 0.2 s; check the network and the "
        "credentials of its file system"
    )


def test_a_missing_external_feature_list_folder_is_named(tmp_path, capsys):
    missing = tmp_path / "lists"
    out = tmp_path / "o"
    args = _on_sample(out, "--external_feature_lists", str(missing))
    code, err = _run(capsys, *args)
    assert code == 1 and err.count("\n") == 1
    assert (
        f"external feature lists: {missing} does not exist or holds no list file; give a folder of files "
        "named after tensors, one entry per line"
    ) in err
    assert not (out / "_SUCCESS").exists()


def test_an_empty_external_feature_list_is_an_error(tmp_path, capsys):
    lists = tmp_path / "lists"
    lists.mkdir()
    (lists / "genreIds").write_text("")
    out = tmp_path / "o"
    args = _on_sample(out, "--external_feature_lists", str(lists))
    code, err = _run(capsys, *args)
    assert code == 1
    assert (
        f"external feature list {lists / 'genreIds'} is empty; give one entry per line (or remove it)" in err
    )
    assert not (out / "_SUCCESS").exists()


def test_an_empty_input_gives_a_complete_empty_output_and_says_so(tmp_path, capsys):
    import json

    import fastavro

    from beam_tensorize.kernels.avro import read_header

    with open(SAMPLE_AVRO, "rb") as f:
        schema = json.loads(read_header(f, SAMPLE_AVRO).metadata["avro.schema"])
    empty = tmp_path / "empty.avro"
    with open(empty, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), [])
    out = tmp_path / "o"
    assert main(["--input", str(empty), "--config", SAMPLE_CONFIG, "--output", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "  rows read:     0\n" in printed
    assert "the input holds no rows: the output is complete and empty" in printed
    assert (out / "_SUCCESS").exists()
    assert (out / "trainingData" / "part-00000-of-00001.tfrecord").stat().st_size == 0
    metadata = json.loads((out / "metadata" / "tensor_metadata.json").read_text())
    assert metadata["data"]["trainingData"]["numRecords"] == 0


def test_an_input_pattern_that_matches_nothing_is_an_error(tmp_path, capsys, own_tempdir):
    out = tmp_path / "o"
    code, err = _run(
        capsys, "--input", str(tmp_path / "none-*.avro"), "--config", SAMPLE_CONFIG, "--output", str(out)
    )
    assert (code, err) == (
        2,
        f"error: no input file matches the input pattern '{tmp_path / 'none-*.avro'}'\n",
    )
    assert not out.exists()  # found out before anything is read or written
    # and Beam's folder for the pipeline, built but never run, is gone
    assert list(own_tempdir.glob("beam-pipeline-temp*")) == []


def test_overwrite_with_another_config_leaves_no_stale_feature_lists(tmp_path):
    from beam_tensorize.sample import AVRO2TF_CONFIG

    out = tmp_path / "o"
    assert main(["--input", SAMPLE_AVRO, "--config", SAMPLE_CONFIG, "--output", str(out)]) == 0
    assert sorted(os.listdir(out / "featureList")) == ["genreIds", "genreVector"]
    args = _on_sample(out, "--save_mode", "overwrite", config=AVRO2TF_CONFIG)
    assert main(args) == 0
    assert sorted(os.listdir(out / "featureList")) == ["genreFeatures", "genreFeatures_term"]
    assert sorted(os.listdir(out / "metadata" / "featureListCounts")) == [
        "genreFeatures.tsv",
        "genreFeatures_term.tsv",
    ]


#: The flag that makes `two_genres_config`'s rows of other than two genres bad records.
CHECK_SHAPES = "--check_shapes"


def two_genres_config(tmp_path):
    """A config whose `genres` takes exactly two genre terms: with `--check_shapes`
    (`CHECK_SHAPES`), the sample's rows with another number of genres are bad records."""
    import json

    config = tmp_path / "genres2.json"
    config.write_text(json.dumps({"features": [
        {"outputTensorInfo": {"name": "userId", "dtype": "long", "shape": []}},
        {"inputFeatureInfo": {"columnExpr": "genreFeatures.term"},
         "outputTensorInfo": {"name": "genres", "dtype": "string", "shape": [2]}},
    ]}))  # fmt: skip
    return config


def test_a_failed_run_keeps_the_dead_letters_of_the_output_it_leaves(tmp_path, capsys):
    import hashlib

    config = two_genres_config(tmp_path)
    out = tmp_path / "o"
    args = ["--input", SAMPLE_AVRO, "--config", str(config), "--output", str(out), CHECK_SHAPES]
    assert main([*args, "--max_bad_records_ratio", "1"]) == 0
    dead = out / "deadLetters" / "trainingData" / "part-00000-of-00001.jsonl"
    digest = hashlib.md5(dead.read_bytes()).hexdigest()
    assert len(dead.read_text().splitlines()) == 213
    capsys.readouterr()
    code = main([*args, "--save_mode", "overwrite", "--max_bad_records_ratio", "0.5"])
    err = capsys.readouterr().err
    failed = out / "deadLetters" / "trainingData" / "_failed" / "part-00000-of-00001.jsonl"
    assert code == 1
    assert (
        f"213 of 300 records could not be converted (71.00% > the allowed 50.00%); nothing was committed. See the reasons in {failed}"
        in err
    )
    assert hashlib.md5(dead.read_bytes()).hexdigest() == digest and (out / "_SUCCESS").exists()
    assert len(failed.read_text().splitlines()) == 213
    assert main([*args, "--save_mode", "overwrite", "--max_bad_records_ratio", "1"]) == 0
    assert sorted(os.listdir(out / "deadLetters" / "trainingData")) == ["part-00000-of-00001.jsonl"]


def test_a_validation_run_with_another_config_is_refused_and_damages_nothing(tmp_path, capsys):
    import hashlib
    import json

    from beam_tensorize.sample import AVRO2TF_CONFIG

    out = tmp_path / "o"
    assert main(["--input", SAMPLE_AVRO, "--config", SAMPLE_CONFIG, "--output", str(out)]) == 0
    metadata = out / "metadata" / "tensor_metadata.json"
    recorded = json.loads(metadata.read_text())
    assert (
        len(recorded["configFingerprint"]) == 64
        and recorded["config"]["features"][0]["outputTensorInfo"]["name"] == "userId"
    )
    before = hashlib.md5(metadata.read_bytes()).hexdigest()
    capsys.readouterr()
    args = _on_sample(out, "--execution_mode", "validation", config=AVRO2TF_CONFIG)
    code, err = _run(capsys, *args)
    assert code == 2
    assert err.startswith(f"error: the output {out} was written with another config (added movieId_hashed, ")
    assert "removed genreIds" in err and err.endswith(
        "give its config, or write to another --output (a train run may replace an output that holds only "
        "trainingData with --save_mode overwrite)\n"
    )
    assert hashlib.md5(metadata.read_bytes()).hexdigest() == before
    assert not (out / "validationData").exists()
    # The same config, spelled differently (defaults written out), is the same config.
    spelled = tmp_path / "spelled.json"
    spelled.write_text(json.dumps(recorded["config"]))
    assert (
        main(
            [
                "--input",
                SAMPLE_AVRO,
                "--config",
                str(spelled),
                "--output",
                str(out),
                "--execution_mode",
                "validation",
            ]
        )
        == 0
    )


def _killed_run_leftovers(out, pid: int) -> list:
    """What a run killed midway leaves: its temporary data files and dead letters, and its lock."""
    import json
    import socket

    files = [
        out / "trainingData" / "_temporary" / "deadbeef" / "part-1.tfrecord",
        out / "trainingData" / "_temporary" / "deadbeef" / "day=1" / "part-2.tfrecord",
        out / "deadLetters" / "trainingData" / "_temporary" / "cafe.jsonl",
    ]
    for path in files:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"x" * 1000)
    lock = out / "_temporary" / ".run-0123.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    lock.write_text(json.dumps({"host": socket.gethostname(), "pid": pid, "started": 0}))
    return [*files, lock]


def test_what_a_killed_run_left_is_removed_by_the_next_run_which_says_so(tmp_path, capsys):
    import subprocess

    gone = subprocess.Popen(["true"])
    gone.wait()  # its process id now names no process
    out = tmp_path / "o"
    _killed_run_leftovers(out, gone.pid)
    code, err = _run(capsys, "--input", SAMPLE_AVRO, "--config", SAMPLE_CONFIG, "--output", str(out))
    assert code == 0
    assert err.startswith(
        f"note: removed 4 temporary file(s) (0.0 MiB) that runs which did not finish had left in {out}\n"
    )
    assert [p for p in out.rglob("*") if "_temporary" in p.parts] == []
    assert (out / "_SUCCESS").exists()


def test_a_running_job_s_temporary_files_are_left_alone(tmp_path, capsys):
    out = tmp_path / "o"
    leftovers = _killed_run_leftovers(out, os.getpid())  # a live process holds the lock
    code, err = _run(capsys, "--input", SAMPLE_AVRO, "--config", SAMPLE_CONFIG, "--output", str(out))
    assert code == 0 and "note: removed" not in err
    assert all(p.exists() for p in leftovers)
    # This run's own lock is gone; the other job's stays.
    assert sorted(p.name for p in (out / "_temporary").iterdir()) == [".run-0123.lock"]


def test_append_keeps_earlier_files_in_the_metadata_and_reuses_the_feature_lists(tmp_path, capsys):
    """Appending adds files beside the earlier ones: the metadata lists all of them with the
    total count, and the new rows are indexed with the earlier feature lists (a term they had
    not seen gets the unknown id), so every file's ids mean the same entries."""
    import json

    import fastavro

    from beam_tensorize.kernels.tfrecord.decoding import raw_decode
    from beam_tensorize.kernels.tfrecord.files import file_records

    out = tmp_path / "o"
    common = ["--config", SAMPLE_CONFIG, "--output", str(out), "--quiet"]
    assert main(["--input", SAMPLE_AVRO, *common]) == 0
    lists_before = {p.name: p.read_bytes() for p in (out / "featureList").iterdir()}
    counts_before = {p.name: p.read_bytes() for p in (out / "metadata" / "featureListCounts").iterdir()}
    with open(SAMPLE_AVRO, "rb") as f:
        reader = fastavro.reader(f)
        schema, rows = reader.writer_schema, list(reader)[:10]
    for row in rows:  # a genre the earlier run never saw
        row["genreFeatures"] = [{"name": "Genre", "term": "Zzz", "value": 1.0}]
    new = tmp_path / "new.avro"
    with open(new, "wb") as f:
        fastavro.writer(f, schema, rows)
    assert main(["--input", str(new), *common, "--save_mode", "append"]) == 0
    metadata = json.loads((out / "metadata" / "tensor_metadata.json").read_text())
    data = metadata["data"]["trainingData"]
    assert data["files"] == ["part-00000-of-00001.tfrecord", "part-00000-of-00001-1.tfrecord"]
    assert (data["numRecords"], data["badRecords"]) == (310, 0)
    assert {p.name: p.read_bytes() for p in (out / "featureList").iterdir()} == lists_before
    assert {
        p.name: p.read_bytes() for p in (out / "metadata" / "featureListCounts").iterdir()
    } == counts_before
    unknown = len(lists_before["genreIds"].decode().splitlines())
    path = out / "trainingData" / "part-00000-of-00001-1.tfrecord"
    with open(path, "rb") as f:
        appended = raw_decode(list(file_records(f, str(path)))).column("genreIds").to_pylist()
    assert appended == [[unknown]] * 10


def test_worker_processes_tracebacks_go_to_the_log_file_not_the_console(tmp_path, capfd):
    """With worker processes (multi_processing), what they print themselves (their log lines,
    the traceback of the failed step) goes to the log file too: the console gets one line."""
    csv = tmp_path / "data.avro"
    csv.write_text("userId,movieId\n1,2\n")
    args = [
        "--input",
        str(csv),
        "--config",
        SAMPLE_CONFIG,
        "--output",
        str(tmp_path / "o"),
        "--direct_running_mode",
        "multi_processing",
        "--direct_num_workers",
        "2",
        "--progress_interval",
        "600",
    ]  # fmt: skip  (no progress line on a slow, busy machine)
    assert main(args) == 1
    err = capfd.readouterr().err
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"error: the job failed; {tmp_path / 'o'} holds no new complete output: {csv}: ")
    log = err.rsplit("(details: ", 1)[1].split(",")[0]
    with open(log) as f:
        assert f.read().count("Traceback") >= 1


def _sample_with(tmp_path, name: str, movie_id_type, convert) -> str:
    """The sample's first 50 rows as an Avro file whose `movieId` has another type."""
    import fastavro

    with open(SAMPLE_AVRO, "rb") as f:
        reader = fastavro.reader(f)
        schema, rows = reader.writer_schema, list(reader)[:50]
    for field in schema["fields"]:
        if field["name"] == "movieId":
            field["type"] = movie_id_type
    for row in rows:
        row["movieId"] = convert(row["movieId"])
    path = tmp_path / name
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), rows)
    return str(path)


def test_a_type_clash_between_input_files_fails_naming_column_types_and_files(tmp_path, capsys):
    """`movieId` a long in one file and a string in another: no silent switch to feature-list
    ids for half of the rows, but one line naming the column, both types and both files."""
    folder = tmp_path / "in"
    folder.mkdir()
    a = _sample_with(folder, "a.avro", "long", int)
    b = _sample_with(folder, "b.avro", "string", str)
    out = tmp_path / "o"
    code, err = _run(
        capsys, "--input", str(folder / "*.avro"), "--config", SAMPLE_CONFIG, "--output", str(out)
    )
    assert code == 1
    assert len(err.splitlines()) == 1, err
    assert (
        f"column 'movieId' is int64 in {a} but string in {b}: the input files cannot be read as one "
        "table; convert one of them (or read them in separate jobs), or read only one of them"
    ) in err
    assert not (out / "trainingData").exists() and not (out / "_SUCCESS").exists()


def test_int_and_long_files_read_as_one_long_column(tmp_path, capsys):
    """Avro's promotion: `movieId` an int in one file and a long in another reads as int64."""
    import json

    from beam_tensorize.kernels.tfrecord.decoding import raw_decode
    from beam_tensorize.kernels.tfrecord.files import file_records

    folder = tmp_path / "in"
    folder.mkdir()
    _sample_with(folder, "a.avro", "int", int)
    _sample_with(folder, "b.avro", "long", lambda v: v + (1 << 40))
    out = tmp_path / "o"
    code, _ = _run(capsys, "--input", str(folder / "*.avro"), "--config", SAMPLE_CONFIG, "--output", str(out))
    assert code == 0
    ids = []
    for path in sorted((out / "trainingData").glob("part-*.tfrecord")):
        with open(path, "rb") as f:
            ids += [v for (v,) in raw_decode(list(file_records(f, str(path)))).column("movieId").to_pylist()]
    assert len(ids) == 100 and sum(i >= 1 << 40 for i in ids) == 50  # raw ids, no feature list
    metadata = json.loads((out / "metadata" / "tensor_metadata.json").read_text())
    assert "featureList" not in next(t for t in metadata["features"] if t["name"] == "movieId")


def test_a_union_of_several_types_names_the_tensor_and_says_what_to_do(tmp_path, capsys):
    """An Avro ['null', 'string', 'long'] column reads as a struct of its branches: a numeric
    tensor on it fails naming the tensor, the type, and the fix (a branch, or a CAST); the
    branch selector works."""
    import json

    import fastavro

    schema = {"type": "record", "name": "R", "fields": [
        {"name": "userId", "type": "long"}, {"name": "movieId", "type": ["null", "string", "long"]}]}  # fmt: skip
    data = tmp_path / "u.avro"
    with open(data, "wb") as f:
        fastavro.writer(
            f, fastavro.parse_schema(schema), [{"userId": 1, "movieId": "a"}, {"userId": 2, "movieId": 3}]
        )

    def config(expr: str) -> str:
        path = tmp_path / f"c{len(expr)}.json"
        path.write_text(json.dumps({"features": [
            {"inputFeatureInfo": {"columnExpr": expr}, "outputTensorInfo": {"name": "movie", "dtype": "long", "shape": []}},
            {"inputFeatureInfo": {"columnExpr": "userId"}, "outputTensorInfo": {"name": "userId", "dtype": "long", "shape": []}}]}))  # fmt: skip
        return str(path)

    code, err = _run(
        capsys, "--input", str(data), "--config", config("movieId"), "--output", str(tmp_path / "a")
    )
    assert code == 1 and len(err.splitlines()) == 1
    assert (
        "tensor 'movie': dtype long needs numbers, got struct<member0: string, member1: int64>; the input "
        "column is a union of several types (Avro ['null', 'string', 'long'] and the like): pick one branch "
        "in the columnExpr (e.g. x.member1) or CAST it"
    ) in err
    out = tmp_path / "b"
    code, err = _run(
        capsys,
        "--input",
        str(data),
        "--config",
        config("movieId.member1"),
        "--output",
        str(out),
        "--max_bad_records_ratio",
        "0.5",
    )
    assert code == 0, err
    assert (
        json.loads((out / "metadata" / "tensor_metadata.json").read_text())["data"]["trainingData"][
            "numRecords"
        ]
        == 1
    )


def test_records_that_do_not_decode_are_dead_letters_counted_against_the_ratio(tmp_path, capsys):
    import base64
    import json

    import tensorflow as tf

    from tests.conftest import UNDECODABLE_CONFIG, UNDECODABLE_GOOD_IDS, write_undecodable_avro

    path = write_undecodable_avro(tmp_path / "bad.avro")
    config = tmp_path / "config.json"
    config.write_text(json.dumps(UNDECODABLE_CONFIG))
    out = tmp_path / "o"
    args = ["--input", path, "--config", str(config), "--output", str(out), "--quiet"]
    code, err = _run(capsys, *args)
    failed = out / "deadLetters" / "trainingData" / "_failed" / "part-00000-of-00001.jsonl"
    assert code == 1
    assert (
        f"5 of 20 records could not be converted (25.00% > the allowed 0.00%); nothing was committed. "
        f"See the reasons in {failed} (the first: {path} (offset 208, record 3): cannot decode Avro "
        "record 3 of 16 in the block: ValueError: string is not valid UTF-8); fix the input, or allow "
        "more bad records with --max_bad_records_ratio"
    ) in err
    # Only the dead letters, for inspection: the failed run's temporary files are gone.
    assert [p for p in out.rglob("*") if p.is_file()] == [failed]

    code, err = _run(capsys, *args, "--max_bad_records_ratio", "0.25")
    assert code == 0, err
    (records,) = (out / "trainingData").glob("part-*.tfrecord")
    ids = [
        tf.train.Example.FromString(r.numpy()).features.feature["id"].int64_list.value[0]
        for r in tf.data.TFRecordDataset(str(records))
    ]
    assert ids == UNDECODABLE_GOOD_IDS
    lines = (out / "deadLetters" / "trainingData" / "part-00000-of-00001.jsonl").read_text().splitlines()
    letters = sorted((json.loads(line) for line in lines), key=lambda d: d["record"])
    assert [(d["source"], d["offset"], d["record"]) for d in letters] == [
        (path, 208, i) for i in (3, 12, 13, 14, 15)
    ]
    assert base64.b64decode(letters[0]["data"]["base64"]) == b"\x06\x10BAD\xff\xfeF8X\x02\x08t003"
    assert "union branch index 5 out of range (2 branches)" in letters[1]["reason"]
    metadata = json.loads((out / "metadata" / "tensor_metadata.json").read_text())
    assert (
        metadata["data"]["trainingData"]["numRecords"],
        metadata["data"]["trainingData"]["badRecords"],
    ) == (15, 5)


def test_a_folder_is_its_files_and_hadoops_hidden_files_are_skipped(tmp_path, capsys):
    """`--input data/daily/2018/01/03` (no trailing '/') with `_SUCCESS` and `.crc` files inside,
    as Spark and Hadoop leave them: the Avro files are read, the hidden ones skipped with a note."""
    import shutil

    import pyarrow.parquet as pq

    folder = tmp_path / "daily" / "2018" / "01" / "03"
    (folder / "_temporary").mkdir(parents=True)
    shutil.copy(SAMPLE_AVRO, folder / "part-00000.avro")
    (folder / "_SUCCESS").write_bytes(b"")
    (folder / ".part-00000.avro.crc").write_bytes(b"crc!")
    (folder / "_temporary" / "part-00001.avro").write_bytes(b"half written")
    out = tmp_path / "out"
    code, err = _run(capsys, "--input", str(folder), "--config", SAMPLE_CONFIG, "--output", str(out),
                     "--output_format", "parquet", "--quiet")  # fmt: skip
    assert code == 0
    assert err.count(f"{folder}/**: skipped 3 hidden file(s) (names starting with '_' or '.'") == 1
    assert pq.read_table(out / "trainingData").num_rows == 300


def test_a_fixed_size_list_column_has_its_statistics_in_the_report(tmp_path, capsys):
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    data = tmp_path / "vectors.parquet"
    vectors = pa.array([[1.0, 2.0, 3.0], [5.0, 6.0, 7.0]], pa.list_(pa.float32(), 3))
    pq.write_table(pa.table({"vec": vectors}), data)
    config = tmp_path / "config.json"
    tensor = {
        "inputFeatureInfo": {"columnExpr": "vec"},
        "outputTensorInfo": {"name": "vec", "dtype": "float", "shape": [-1]},
    }
    config.write_text(json.dumps({"features": [tensor]}))
    out = tmp_path / "out"
    code, err = _run(
        capsys,
        "--input",
        str(data),
        "--config",
        str(config),
        "--output",
        str(out),
        "--report",
        "json",
        "--quiet",
    )
    assert (code, err) == (0, "")
    report = json.loads((out / "report" / "trainingData.json").read_text())
    (vec,) = report["tensors"]
    assert vec["numeric"]["mean"] == pytest.approx(4.0)
    assert vec["numeric"]["min"] == 1.0 and vec["numeric"]["max"] == 7.0


def _flip_a_bit_in_a_data_page(path) -> None:
    """One flipped bit inside the first column chunk's pages (its header and values)."""
    import pyarrow.parquet as pq

    chunk = pq.ParquetFile(str(path)).metadata.row_group(0).column(0)
    data = bytearray(open(path, "rb").read())
    start = min(o for o in (chunk.dictionary_page_offset, chunk.data_page_offset) if o is not None)
    data[start + chunk.total_compressed_size - 8] ^= 0x04
    with open(path, "wb") as f:
        f.write(bytes(data))


def test_a_parquet_page_whose_checksum_fails_is_an_error_naming_the_file(tmp_path, capsys):
    """Parquet pages carry CRCs: the job writes them and checks them on read (input and
    `Dataset.from_parquet`), so a flipped bit is an error, not a wrong value."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import tensorflow as tf

    from beam_tensorize.tf import Dataset

    out = tmp_path / "out"
    code, _ = _run(capsys, *_on_sample(out, "--output_format", "parquet", "--quiet"))
    assert code == 0
    written = out / "trainingData" / "part-00000-of-00001.parquet"
    _flip_a_bit_in_a_data_page(written)
    first = pq.ParquetFile(str(written)).schema_arrow.names[0]  # the column the bit is in
    with pytest.raises((OSError, tf.errors.OpError), match="CRC checksum verification failed"):
        next(iter(Dataset.from_parquet(str(written), fields=[first], batch_size=1000)))
    data = tmp_path / "ids.parquet"
    pq.write_table(
        pa.table({"movieId": list(range(300))}), data, write_page_checksum=True, compression="none"
    )
    _flip_a_bit_in_a_data_page(data)
    config = tmp_path / "config.json"
    config.write_text('{"features": [{"inputFeatureInfo": {"columnExpr": "movieId"}, '
                      '"outputTensorInfo": {"name": "movieId", "dtype": "long", "shape": []}}]}')  # fmt: skip
    code, err = _run(capsys, "--input", str(data), "--config", str(config), "--output", str(tmp_path / "o2"))
    assert code == 1
    assert err.startswith(
        f"error: the job failed; {tmp_path / 'o2'} holds no new complete output: {data}: the Parquet data "
        "after row 0 cannot be read (could not verify page integrity, CRC checksum verification failed"
    )
    assert not (tmp_path / "o2" / "trainingData").exists()


@pytest.mark.parametrize("damage", ["truncated", "rotated"])
def test_a_damaged_feature_list_is_refused_by_validation_runs_and_serving(tmp_path, capsys, damage):
    """The metadata records each list's size and SHA-256: a list cut short or with its lines
    rotated would index records with other ids than the train run's."""
    from beam_tensorize.serving import Preprocessor, ServingError

    out = tmp_path / "out"
    assert _run(capsys, *_on_sample(out, "--quiet"))[0] == 0
    listed = out / "featureList" / "genreIds"
    lines = listed.read_text().splitlines(keepends=True)
    listed.write_text("".join(lines[:5] if damage == "truncated" else lines[1:] + lines[:1]))
    before = sorted(p.name for p in out.iterdir())
    code, err = _run(capsys, *_on_sample(out, "--execution_mode", "validation"))
    reason = (
        f"{listed} holds 5 entries, but the metadata records 19 (the list the records were indexed with): "
        "it was cut or changed after the train run; restore it, or run train mode again"
        if damage == "truncated"
        else f"{listed} is not the list the records were indexed with (its SHA-256 differs from the "
        "metadata's): it was edited or reordered after the train run; restore it, or run train mode again"
    )
    assert (code, err) == (2, f"error: {reason}\n")
    assert sorted(p.name for p in out.iterdir()) == before and not (out / "validationData").exists()
    with pytest.raises(ServingError, match=f"^{re.escape(reason)}$"):
        Preprocessor.from_output(str(out))


def test_validation_without_a_train_run_is_refused_before_reading(tmp_path, capsys):
    out = tmp_path / "out"
    code, err = _run(capsys, *_on_sample(out, "--execution_mode", "test"))
    assert (code, err) == (
        2,
        f"error: no feature lists in {out}/featureList: run train mode into this output folder first\n",
    )
    assert not (out / "testData").exists()


def test_an_input_store_that_does_not_answer_is_one_line_within_the_probe_time(tmp_path, capsys, monkeypatch):
    """An object store behind a dead network retries for minutes: the inputs are listed in a
    probe that gives up after PROBE_TIMEOUT (60 s; here shortened), before any data is read."""
    import time

    from beam_tensorize.job import preflight

    def no_answer(pattern, *args, **kwargs):
        time.sleep(30)

    monkeypatch.setattr(preflight, "PROBE_TIMEOUT", 0.5)
    monkeypatch.setattr(preflight, "match_files", no_answer)
    out = tmp_path / "out"
    started = time.monotonic()
    code, err = _run(capsys, "--input", "s3://bucket/x.avro", "--config", SAMPLE_CONFIG, "--output", str(out))
    assert time.monotonic() - started < 10
    assert (code, err) == (
        2,
        "error: cannot list the input s3://bucket/x.avro: no answer within 0.5 s; check the network and the "
        "credentials of its file system\n",
    )
    assert not out.exists()


def test_the_probe_time_is_for_all_input_patterns_together(monkeypatch):
    """Several inputs on a dead store do not wait PROBE_TIMEOUT each (three patterns took over
    three minutes): `a` answers after 1 s, `b` gets the 0.5 s left of 1.5 s and is named."""
    import time

    from beam_tensorize.job import preflight

    monkeypatch.setattr(preflight, "match_files", lambda pattern, **kwargs: time.sleep(1.0))
    with pytest.raises(OSError) as raised:
        preflight.check_inputs_found(["gs://a/*.avro", "gs://b/*.avro", "gs://c/*.avro"], timeout=1.5)
    assert str(raised.value) == (
        "cannot list the input gs://b/*.avro: no answer within 1.5 s; check the network and the "
        "credentials of its file system"
    )


def test_a_huge_string_value_does_not_travel_whole_in_the_report(tmp_path, capsys):
    """One 24 MiB string (the issue's case was 1 GB, which failed after minutes with Beam's
    gRPC-size advice): the report's statistics hold its start, length and digest only."""
    import json

    import pyarrow as pa
    import pyarrow.parquet as pq

    titles = [f"t{i % 7}" for i in range(300)]
    titles[5] = "y" * (24 * 2**20)
    data = tmp_path / "big.parquet"
    pq.write_table(pa.table({"title": titles}), data)
    config = tmp_path / "config.json"
    config.write_text('{"features": [{"inputFeatureInfo": {"columnExpr": "title"}, '
                      '"outputTensorInfo": {"name": "title", "dtype": "string", "shape": []}}]}')  # fmt: skip
    out = tmp_path / "out"
    code, err = _run(
        capsys,
        "--input",
        str(data),
        "--config",
        str(config),
        "--output",
        str(out),
        "--report",
        "html",
        "--quiet",
    )
    assert (code, err) == (0, "")
    text = (out / "report" / "trainingData.json").read_text()
    assert len(text) < 100_000 and (out / "report" / "trainingData.html").stat().st_size < 200_000
    assert "y" * 64 + "\\u2026 (25165824 characters, sha256 " in text
    assert json.loads(text)["rowsWritten"] == 300


def test_the_text_of_hives_null_folder_name_as_a_value_reads_back_as_itself(tmp_path, capsys):
    """A partition value equal to `__HIVE_DEFAULT_PARTITION__` used to read back as null: it is
    escaped (`%5F_HIVE_DEFAULT_PARTITION__`, as Hive's unescaping gives the text back)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from beam_tensorize.tf import make_dataset

    data = tmp_path / "rows.parquet"
    countries = ["NL", "__HIVE_DEFAULT_PARTITION__", None, "__HIVE_DEFAULT_PARTITION__"]
    pq.write_table(pa.table({"userId": [1, 2, 3, 4], "country": countries}), data)
    config = tmp_path / "config.json"
    config.write_text(
        '{"features": [{"outputTensorInfo": {"name": "userId", "dtype": "long", "shape": []}}]}'
    )
    out = tmp_path / "out"
    args = ["--input", str(data), "--config", str(config), "--output", str(out), "--quiet"]
    assert _run(capsys, *args, "--extra_columns_to_keep", "country", "--partition_by", "country") == (0, "")
    folders = sorted(p.name for p in (out / "trainingData").iterdir() if p.is_dir())
    assert folders == [
        "country=%5F_HIVE_DEFAULT_PARTITION__",
        "country=NL",
        "country=__HIVE_DEFAULT_PARTITION__",
    ]
    rows = {}
    for batch in make_dataset(str(out), batch_size=10, labels=False):
        for user, country in zip(batch["userId"].numpy().tolist(), batch["country"].numpy().tolist()):
            rows[user] = country
    assert rows == {1: b"NL", 2: b"__HIVE_DEFAULT_PARTITION__", 3: b"", 4: b"__HIVE_DEFAULT_PARTITION__"}


def test_a_deleted_feature_list_is_refused_before_reading(tmp_path, capsys):
    out = tmp_path / "out"
    assert _run(capsys, *_on_sample(out, "--quiet"))[0] == 0
    (out / "featureList" / "genreVector").unlink()
    code, err = _run(capsys, *_on_sample(out, "--execution_mode", "validation"))
    assert (code, err) == (
        2,
        f"error: {out}/featureList/genreVector is missing: the metadata records it (the list the train run "
        "indexed its records with); restore it, or run train mode again\n",
    )
    assert not (out / "validationData").exists()


def test_an_int_column_in_one_file_and_a_double_in_another_fails_naming_both(tmp_path, capsys):
    """Read as one table the ids became doubles and every hashed id changed, exit 0."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"movieId": pa.array([1, 2], pa.int64())}), tmp_path / "a.parquet")
    pq.write_table(pa.table({"movieId": pa.array([3.0, 4.0], pa.float64())}), tmp_path / "b.parquet")
    config = tmp_path / "config.json"
    config.write_text('{"features": [{"inputFeatureInfo": {"columnExpr": "movieId", "transformConfig": '
                      '{"hashInfo": {"hashBucketSize": 100}}}, "outputTensorInfo": {"name": "bucket", '
                      '"dtype": "long", "shape": []}}]}')  # fmt: skip
    out = tmp_path / "out"
    code, err = _run(
        capsys, "--input", str(tmp_path / "*.parquet"), "--config", str(config), "--output", str(out)
    )
    assert code == 1
    assert (
        f"column 'movieId' is int64 in {tmp_path}/a.parquet but double in {tmp_path}/b.parquet: read as one "
        "table its integers would become floats (5 -> 5.0), which changes their text and so their hashes and "
        "feature-list entries; write the column with one type in every file, or read the files in separate jobs"
    ) in err
    assert not (out / "trainingData").exists() and not (out / "_SUCCESS").exists()


def test_a_union_column_that_cannot_convert_is_named_with_its_members(tmp_path, capsys):
    """An Avro union of string and long read as a string tensor used to fail with Arrow's
    'Unsupported cast from struct<member0: string, member1: int64> to utf8', naming nothing."""
    import json

    import fastavro

    schema = {"type": "record", "name": "R", "fields": [{"name": "u", "type": ["null", "string", "long"]}]}
    data = tmp_path / "union.avro"
    with open(data, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), [{"u": "a"}, {"u": 5}])
    config = tmp_path / "config.json"
    tensor = {
        "inputFeatureInfo": {"columnExpr": "u"},
        "outputTensorInfo": {"name": "text", "dtype": "string", "shape": []},
    }
    config.write_text(json.dumps({"features": [tensor]}))
    out = tmp_path / "out"
    code, err = _run(capsys, "--input", str(data), "--config", str(config), "--output", str(out))
    assert code == 1
    assert (
        "tensor 'text': dtype string cannot take struct<member0: string, member1: int64> input; it is an "
        "Avro union of several types (member0: string, member1: int64): pick one in the columnExpr "
        "(`<column>.member0`, ...)"
    ) in err
    assert not (out / "_SUCCESS").exists()
    tensor["inputFeatureInfo"]["columnExpr"] = "u.member0"  # as the message says
    config.write_text(json.dumps({"features": [tensor]}))
    assert _run(capsys, "--input", str(data), "--config", str(config), "--output", str(out), "--quiet",
                "--max_bad_records_ratio", "1")[0] == 0  # fmt: skip
