"""The commit protocol end to end (DESIGN §6: readers never see a half-written output): the CLI
stopped at each step of its commit, for overwrite, overwrite_partitions and append, TFRecord and
Parquet; after each, `make_dataset` (or `Dataset.from_output`) reads exactly the old or exactly
the new rows, and the next run recovers without a manual step. Also a real SIGKILL, concurrent
appends in separate processes, and a symbolic link inside the output."""

from __future__ import annotations

import collections
import hashlib
import os
import shutil
import subprocess
import sys

import fastavro
import pytest

from beam_tensorize.job import transaction
from beam_tensorize.job.transaction import COMMIT_STEPS, FAULT_VARIABLE, JOURNAL_FILE
from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
from pipelines.tensorize import main

pytestmark = pytest.mark.pipeline


class _Died(Exception):
    pass


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    """The sample (old data) and 120 other rows (new data: other movie ids)."""
    folder = tmp_path_factory.mktemp("inputs")
    with open(SAMPLE_AVRO, "rb") as f:
        reader = fastavro.reader(f)
        schema, records = reader.writer_schema, list(reader)
    new = [{**r, "movieId": r["movieId"] + 100_000} for r in records[:120]]
    path = str(folder / "new.avro")
    with open(path, "wb") as f:
        fastavro.writer(f, schema, new)
    return SAMPLE_AVRO, path


def _args(data: str, out: str, fmt: str, mode: str, partitioned: bool = False) -> list[str]:
    args = ["--input", data, "--config", SAMPLE_CONFIG, "--output", out, "--output_format", fmt]
    args += ["--save_mode", mode, "--report", "json", "--quiet"]
    return args + (["--partition_by", "numGenres"] if partitioned or mode == "overwrite_partitions" else [])


def _rows(out: str, fmt: str) -> collections.Counter:
    """(userId values, movieId) of every row a reader of the output sees."""
    if fmt == "tfrecord":
        from beam_tensorize.tf import make_dataset

        batches = make_dataset(out, batch_size=1000, labels=False)
    else:  # what the metadata lists (partitioned Parquet outputs are not from_output's)
        import pyarrow.parquet as pq

        from beam_tensorize.tf.dataset import committed_split

        root, folder, _, data = committed_split(out, "train")
        rows = collections.Counter()
        for name in data["files"]:
            table = pq.read_table(os.path.join(root, folder, name), columns=["userId", "movieId"])
            rows.update(
                (tuple(u), m) for u, m in zip(table["userId"].to_pylist(), table["movieId"].to_pylist())
            )
        return rows
    rows = collections.Counter()
    for batch in batches:
        users, movies = batch["userId"], batch["movieId"].numpy().reshape(-1).tolist()
        users = users.to_list() if hasattr(users, "to_list") else users.numpy().tolist()
        rows.update((tuple(u), m) for u, m in zip(users, movies))
    return rows


def _leftovers(out: str) -> list[str]:
    return sorted(
        os.path.relpath(os.path.join(folder, name), out)
        for folder, dirs, files in os.walk(out)
        for name in dirs + files
        if name in ("_temporary", JOURNAL_FILE, transaction.LOCK_FILE)
    )


@pytest.fixture(scope="module")
def outputs(inputs, tmp_path_factory):
    """Per (format, mode): the old output, and the new one a run without faults gives."""
    old_data, new_data = inputs
    made = {}
    for fmt in ("tfrecord", "parquet"):
        for mode in ("overwrite", "overwrite_partitions", "append"):
            folder = tmp_path_factory.mktemp(f"{fmt}-{mode}")
            old, new = str(folder / "old"), str(folder / "new")
            assert main(_args(old_data, old, fmt, "error", mode == "overwrite_partitions")) == 0
            shutil.copytree(old, new)
            assert main(_args(new_data, new, fmt, mode)) == 0
            made[fmt, mode] = (old, _rows(old, fmt), _rows(new, fmt))
    return made


CASES = [("tfrecord", "overwrite", step) for step in COMMIT_STEPS] + [
    (fmt, mode, step)
    for fmt in ("tfrecord", "parquet")
    for mode in ("overwrite", "overwrite_partitions", "append")
    if (fmt, mode) != ("tfrecord", "overwrite")
    for step in ("locked", "journal", "moved-one", "marked")
]


@pytest.mark.parametrize(("fmt", "mode", "step"), CASES)
def test_a_job_stopped_in_its_commit_leaves_the_old_or_the_new_rows(
    inputs, outputs, tmp_path, monkeypatch, fmt, mode, step
):
    old, old_rows, new_rows = outputs[fmt, mode]
    assert old_rows != new_rows
    out = str(tmp_path / "out")
    shutil.copytree(old, out)

    def die(point: str) -> None:
        if point == step:
            raise _Died(f"stopped at {point}")

    monkeypatch.setattr(transaction, "fault_hook", die)
    assert main(_args(inputs[1], out, fmt, mode)) == 1
    monkeypatch.setattr(transaction, "fault_hook", None)
    seen = _rows(out, fmt)
    decided = COMMIT_STEPS.index(step) >= COMMIT_STEPS.index("journal")
    assert seen == (new_rows if decided else old_rows)
    assert main(_args(inputs[1], out, fmt, mode)) == 0  # the next run: nothing to do by hand
    again = new_rows if mode != "append" or not decided else new_rows + (new_rows - old_rows)
    assert _rows(out, fmt) == again
    assert _leftovers(out) == []


def _md5s(root: str) -> dict[str, str]:
    found = {}
    for folder, _, files in os.walk(root):
        for name in files:
            with open(os.path.join(folder, name), "rb") as f:
                found[os.path.relpath(os.path.join(folder, name), root)] = hashlib.md5(f.read()).hexdigest()
    return found


def _cli(*args: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "pipelines.tensorize", *args],
        env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2", **(env or {})},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.parametrize("fmt", ["tfrecord", "parquet"])
def test_a_job_killed_by_sigkill_after_its_commit_point(inputs, outputs, tmp_path, fmt):
    old, old_rows, new_rows = outputs[fmt, "overwrite"]
    out = str(tmp_path / "out")
    shutil.copytree(old, out)
    before = _md5s(out)
    # before the commit point: the old output, byte for byte (temporary files aside)
    killed = _cli(*_args(inputs[1], out, fmt, "overwrite"), env={FAULT_VARIABLE: "locked"})
    killed.communicate(timeout=300)
    assert killed.returncode == -9
    assert {k: v for k, v in _md5s(out).items() if "_temporary" not in k and "_commit" not in k} == before
    assert _rows(out, fmt) == old_rows
    # after it, half moved: readers finish the commit and see the new rows
    killed = _cli(*_args(inputs[1], out, fmt, "overwrite"), env={FAULT_VARIABLE: "moved-one"})
    killed.communicate(timeout=300)
    assert killed.returncode == -9
    assert os.path.exists(os.path.join(out, JOURNAL_FILE))
    assert _rows(out, fmt) == new_rows
    assert not os.path.exists(os.path.join(out, JOURNAL_FILE))


def test_concurrent_appends_are_all_listed_once(inputs, tmp_path):
    """Three processes append at once: every row of every run is read exactly once."""
    out = str(tmp_path / "out")
    assert main(_args(inputs[0], out, "tfrecord", "error")) == 0
    first = _rows(out, "tfrecord")
    runs = [_cli(*_args(inputs[1], out, "tfrecord", "append")) for _ in range(3)]
    results = [(run.communicate(timeout=600), run.returncode) for run in runs]
    assert [code for _, code in results] == [0, 0, 0], results
    rows = _rows(out, "tfrecord")
    added = rows - first
    assert sum(added.values()) == 3 * 120 and set(added.values()) == {3}
    import json

    with open(os.path.join(out, "metadata", "tensor_metadata.json")) as f:
        data = json.load(f)["data"]["trainingData"]
    assert data["numRecords"] == 300 + 3 * 120
    assert len(data["files"]) == 4 and len(set(data["files"])) == 4
    assert _leftovers(out) == [] or _leftovers(out) == ["_temporary"]  # a run's lock may linger


def test_an_overwrite_never_deletes_through_a_symbolic_link(inputs, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(_args(inputs[0], str(out), "tfrecord", "error")) == 0
    outside = tmp_path / "users_folder"
    shutil.move(out / "trainingData", outside)
    (outside / "notes.txt").write_text("mine")
    os.symlink(outside, out / "trainingData")
    before = _md5s(str(outside))
    capsys.readouterr()
    assert main(_args(inputs[1], str(out), "tfrecord", "overwrite")) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines() == [
        f"error: {out}/trainingData is a symbolic link (to {outside}): a commit replaces files only "
        "inside the output folder; replace the link with a folder, or choose another output"
    ]
    assert _md5s(str(outside)) == before


def test_concurrent_overwrites_each_report_their_own_rows_and_one_wins_whole(inputs, outputs, tmp_path):
    old, old_rows, new_rows = outputs["tfrecord", "overwrite"]
    out = str(tmp_path / "out")
    shutil.copytree(old, out)
    runs = [_cli(*_args(data, out, "tfrecord", "overwrite")[:-1]) for data in inputs]  # with a summary
    results = [run.communicate(timeout=600) for run in runs]
    assert [run.returncode for run in runs] == [0, 0], results
    written = [next(line for line in stdout.splitlines() if "rows written:" in line) for stdout, _ in results]
    assert [w.split()[2] for w in written] == ["300", "120"]
    assert _rows(out, "tfrecord") in (old_rows, new_rows)  # one run's output, whole
    assert _leftovers(out) in ([], ["_temporary"])
