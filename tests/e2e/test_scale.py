"""Bounded memory by design: files written per input split with no shuffle, train mode's one
read (its batches kept on disk) or its counting pass reading only the feature-list columns, the same files whatever the worker count, and live
progress on the command line. (Throughput and memory are measured by
`benchmarks/bench_scale.py`, never timed here.)"""

from __future__ import annotations

import hashlib
import io
import json
import pathlib
import shutil

import apache_beam as beam
import fastavro
import pyarrow as pa
import pyarrow.parquet as pq

from beam_tensorize.config import load_config
from beam_tensorize.job.commit import CommitPlan, commit_files
from beam_tensorize.kernels.formats import base
from beam_tensorize.kernels.formats.parquet import ParquetFormat
from beam_tensorize.kernels.output.split_files import SplitFiles
from beam_tensorize.kernels.provenance import with_source, with_split
from beam_tensorize.kernels.tfrecord.files import file_records
from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
from beam_tensorize.transforms import Tensorize, keep
from pipelines.tensorize import main


class _Memory:
    """In-memory files for `SplitFiles`."""

    def __init__(self):
        self.files: dict[str, io.BytesIO] = {}

    def __call__(self, path: str) -> io.BytesIO:
        buffer = io.BytesIO()
        buffer.close = lambda: None  # kept readable after the writer closes it
        self.files[path] = buffer
        return buffer

    def records(self, path: str) -> list[bytes]:
        return list(file_records(io.BytesIO(self.files[path].getvalue()), path))


def _records(values, path="in.avro", offset=0, split_start=0) -> pa.RecordBatch:
    batch = pa.RecordBatch.from_pydict({"serialized": [v.encode() for v in values]})
    return with_split(with_source(batch, path, offset), path, split_start)


# -- the split-file kernel --------------------------------------------------------------------


def test_each_split_gets_its_own_file_closed_when_the_next_split_starts():
    memory = _Memory()
    files = SplitFiles("tmp", "tfrecord", "none", memory)
    assert files.write(_records(["a", "b"], offset=4)) == []
    assert files.write(_records(["c"], offset=90)) == []  # the same split: the same file
    closed = files.write(_records(["d"], "in.avro", 200, split_start=128))
    assert [(f.count, memory.records(f.temp_path)) for f in closed] == [(3, [b"a", b"b", b"c"])]
    (last,) = files.close()
    assert memory.records(last.temp_path) == [b"d"]
    # Files are keyed by their split's first batch (file, then position): they sort in input order.
    assert closed[0].key < last.key and closed[0].key.startswith("in.avro\0")


def test_max_records_per_file_rolls_over_within_a_batch():
    memory = _Memory()
    files = SplitFiles("tmp", "tfrecord", "none", memory, max_records_per_file=2)
    written = files.write(_records(list("abcde"))) + files.close()
    assert [memory.records(f.temp_path) for f in sorted(written, key=lambda f: f.key)] == [
        [b"a", b"b"],
        [b"c", b"d"],
        [b"e"],
    ]
    assert len({f.temp_path for f in written}) == 3


def test_partitions_get_one_open_file_each_and_leave_their_column_out():
    memory = _Memory()
    files = SplitFiles("tmp", "parquet", "none", memory, partition_by=["day"])
    batch = with_split(pa.RecordBatch.from_pydict({"day": [1, 2, 1], "x": [10, 20, 30]}), "in.avro", 0)
    written = files.write(batch) + files.close()
    tables = {f.folder: pq.read_table(pa.BufferReader(memory.files[f.temp_path].getvalue())) for f in written}
    assert {folder: t.to_pydict() for folder, t in tables.items()} == {
        "day=1": {"x": [10, 30]},
        "day=2": {"x": [20]},
    }


def test_commit_names_split_files_in_split_order(tmp_path):
    """The commit numbers each folder's files by key, whatever order the workers reported
    them in; an empty unpartitioned TFRecord output still gets one (empty) file."""
    temp = tmp_path / "out" / "_temporary" / "job"
    temp.mkdir(parents=True)
    written = []
    for key, name in [("b.avro\0x", "one"), ("a.avro\0y", "two"), ("a.avro\0x", "three")]:
        (temp / name).write_bytes(name.encode())
        written.append(("", key, str(temp / name), 1))
    plan = CommitPlan(str(tmp_path / "out"), str(temp), "error", True, "none", None)
    result = commit_files(written, plan, {"skip": False})
    assert result["files"] == [f"part-0000{i}-of-00003.tfrecord" for i in range(3)]
    assert [(tmp_path / "out" / f).read_text() for f in result["files"]] == ["three", "two", "one"]
    empty = CommitPlan(
        str(tmp_path / "empty"), str(tmp_path / "empty/_temporary/j"), "error", True, "none", None
    )
    assert commit_files([], empty, {"skip": False})["files"] == ["part-00000-of-00001.tfrecord"]
    assert (tmp_path / "empty" / "part-00000-of-00001.tfrecord").read_bytes() == b""


# -- the job ----------------------------------------------------------------------------------


def _three_inputs(folder: pathlib.Path) -> str:
    """The sample's 300 rows as three Avro files (three input splits)."""
    with open(SAMPLE_AVRO, "rb") as f:
        reader = fastavro.reader(f)
        schema, rows = reader.writer_schema, list(reader)
    folder.mkdir()
    for i in range(3):
        with open(folder / f"part{i}.avro", "wb") as out:
            fastavro.writer(out, schema, rows[i * 100 : (i + 1) * 100], codec="deflate")
    return str(folder / "*.avro")


def _tree(folder: pathlib.Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.md5(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.relative_to(folder).parts[0] != "report"  # names inputs, has timings
    }


def test_one_file_per_input_split_and_the_same_files_with_two_worker_processes(tmp_path, capsys):
    pattern = _three_inputs(tmp_path / "in")
    common = ["--input", pattern, "--config", SAMPLE_CONFIG, "--quiet"]
    assert main([*common, "--output", str(tmp_path / "one")]) == 0
    args = ["--direct_running_mode", "multi_processing", "--direct_num_workers", "2"]
    assert main([*common, "--output", str(tmp_path / "two"), *args]) == 0
    # the batches kept between the stages (one read) or the input read twice: the same files
    assert main([*common, "--output", str(tmp_path / "twice"), *args, "--input_passes", "2"]) == 0
    one = _tree(tmp_path / "one")
    assert [f for f in one if f.startswith("trainingData/part-")] == [
        f"trainingData/part-0000{i}-of-00003.tfrecord" for i in range(3)
    ]
    assert _tree(tmp_path / "two") == _tree(tmp_path / "twice") == one
    # Files follow the input's order: file i holds the rows of input file i.
    for i in range(3):
        with open(tmp_path / "one" / "trainingData" / f"part-0000{i}-of-00003.tfrecord", "rb") as f:
            assert len(list(file_records(f, "x"))) == 100
    assert capsys.readouterr().out == ""  # --quiet


def test_max_records_per_file_and_num_shards_from_the_cli(tmp_path):
    common = ["--input", SAMPLE_AVRO, "--config", SAMPLE_CONFIG, "--quiet"]
    assert main([*common, "--output", str(tmp_path / "m"), "--max_records_per_file", "120"]) == 0
    names = sorted(p.name for p in (tmp_path / "m" / "trainingData").glob("part-*"))
    assert names == [f"part-0000{i}-of-00003.tfrecord" for i in range(3)]
    counts = []
    for name in names:
        with open(tmp_path / "m" / "trainingData" / name, "rb") as f:
            counts.append(len(list(file_records(f, name))))
    assert counts == [120, 120, 60]
    assert main([*common, "--output", str(tmp_path / "s"), "--num_shards", "4"]) == 0
    assert len(list((tmp_path / "s" / "trainingData").glob("part-*-of-00004.tfrecord"))) == 4
    assert (
        main([*common, "--output", str(tmp_path / "x"), "--num_shards", "2", "--max_records_per_file", "5"])
        == 2
    )


class _RecordingParquet(ParquetFormat):
    """Parquet that notes the columns each split read asks for (in a file: workers may be
    other processes)."""

    name = "recording_parquet"
    log = ""

    def read_split(self, f, split, columns=None, batch_rows=8192):
        with open(self.log, "a") as out:
            out.write(json.dumps(columns) + "\n")
        yield from super().read_split(f, split, columns, batch_rows)


def test_train_mode_reads_once_or_counts_from_the_feature_list_columns(tmp_path, monkeypatch):
    """Train mode with an output on a local disk reads the input once (every input column the
    config uses), keeping the extracted batches until the feature lists are counted. With
    `input_passes=2` it reads twice: the counting pass asks only for the columns of the
    tensors that get feature lists (here `genreFeatures`), the second pass for every column.
    Both write the same files, and the kept batches are gone after the commit."""
    with open(SAMPLE_AVRO, "rb") as f:
        table = pa.Table.from_pylist(list(fastavro.reader(f)))
    pq.write_table(table, tmp_path / "in.parquet")
    monkeypatch.setattr(base, "_FORMATS", dict(base._FORMATS))
    log = tmp_path / "columns.jsonl"
    monkeypatch.setattr(_RecordingParquet, "log", str(log))
    base.register_format(_RecordingParquet)
    config = load_config(SAMPLE_CONFIG)
    asked = {}
    for passes in (None, 2, 1):
        log.write_text("")
        with beam.Pipeline() as p:
            _ = p | Tensorize(
                config,
                str(tmp_path / f"out-{passes}"),
                inputs=[str(tmp_path / "in.parquet")],
                input_format="recording_parquet",
                input_passes=passes,
            )
        asked[passes] = sorted(json.loads(line) for line in log.read_text().splitlines())
        assert not (tmp_path / f"out-{passes}" / "_temporary").exists()
    assert asked[None] == asked[1] == [Tensorize.input_columns(config)]
    assert asked[2] == sorted([["genreFeatures"], Tensorize.input_columns(config)])
    assert "genreFeatures" in Tensorize.input_columns(config) and len(Tensorize.input_columns(config)) > 3
    assert _tree(tmp_path / "out-None") == _tree(tmp_path / "out-2") == _tree(tmp_path / "out-1")
    lists = json.loads((tmp_path / "out-2" / "metadata" / "tensor_metadata.json").read_text())
    assert {t["name"] for t in lists["features"] + lists["labels"] if "featureList" in t} == {
        "genreIds",
        "genreVector",
    }


def test_the_command_deletes_each_kept_file_once_its_batches_are_read(tmp_path, monkeypatch):
    """The command's runner runs each bundle once, so train mode deletes a file of kept
    batches as soon as the stage after the feature lists has read it (its bytes are not
    held until the commit removes the run's temporary folder); the output is the same."""
    real_delete = keep.FileSystems.delete
    deleted = []

    def recording_delete(paths):
        deleted.extend(p for p in paths if p.endswith(".spill"))
        return real_delete(paths)

    monkeypatch.setattr(keep.FileSystems, "delete", staticmethod(recording_delete))
    assert main(["--output", str(tmp_path / "once"), "--quiet"]) == 0
    assert len(deleted) == 1 and deleted[0].startswith(str(tmp_path / "once" / "_temporary") + "/")
    deleted.clear()
    assert main(["--output", str(tmp_path / "twice"), "--quiet", "--input_passes", "2"]) == 0
    assert deleted == []  # nothing kept
    assert _tree(tmp_path / "once") == _tree(tmp_path / "twice")


def test_progress_lines_and_a_timed_summary(tmp_path, capsys):
    big = tmp_path / "in"
    big.mkdir()
    for i in range(8):  # a few splits, so the reporter gets a chance to report
        shutil.copy(SAMPLE_AVRO, big / f"p{i}.avro")
    code = main(
        ["--input", str(big / "*.avro"), "--config", SAMPLE_CONFIG, "--output", str(tmp_path / "o"),
         "--progress_interval", "0.05"]
    )  # fmt: skip
    captured = capsys.readouterr()
    assert code == 0
    lines = [line for line in captured.err.splitlines() if line.startswith("progress: ")]
    assert lines, captured.err
    assert all(line.endswith(" elapsed") for line in lines)
    assert "  rows read:     2400" in captured.out
    assert "  time:          " in captured.out and "rows/s read)" in captured.out
    assert main(["--output", str(tmp_path / "p"), "--progress_interval", "0"]) == 2


def _steps(config, output: str, **settings) -> set[str]:
    """The names of the steps `Tensorize` adds to a pipeline (nothing runs)."""
    pipeline = beam.Pipeline()
    _ = pipeline | "T" >> Tensorize(config, output, inputs=[SAMPLE_AVRO], **settings)
    return {t.unique_name for t in pipeline.to_runner_api().components.transforms.values()}


def test_batches_are_kept_only_when_train_mode_counts_feature_lists(tmp_path):
    from beam_tensorize.config import parse_config

    sample = load_config(SAMPLE_CONFIG)
    unlisted = parse_config({"features": [{"inputFeatureInfo": {"columnExpr": "title"},
                                           "outputTensorInfo": {"name": "title", "dtype": "string", "shape": []}}]})  # fmt: skip
    out = str(tmp_path / "out")
    assert "T/KeepForFeatureLists/AfterKeeping" in _steps(sample, out)
    assert "T/ReadForFeatureLists/ReadSplits" not in _steps(sample, out)
    twice = _steps(sample, out, input_passes=2)
    assert "T/ReadForFeatureLists/ReadSplits" in twice and not any("KeepFor" in s for s in twice)
    for settings in ({"execution_mode": "validation"}, {"skip_conversion": True}):
        assert not any("KeepFor" in s or "ReadForFeatureLists" in s for s in _steps(sample, out, **settings))
    # no tensor gets a feature list: nothing to count, nothing to keep, one read
    for passes in (1, 2):
        steps = _steps(unlisted, out, input_passes=passes)
        assert "T/NothingToCount/Impulse" in steps
        assert not any("KeepFor" in s or "ReadForFeatureLists" in s for s in steps)
