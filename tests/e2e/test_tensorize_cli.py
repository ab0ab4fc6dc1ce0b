"""The `tensorize` CLI end to end: files on disk, read back with TensorFlow via the metadata."""

from __future__ import annotations

import collections
import json
import os
import shutil
import tempfile

import fastavro
import numpy as np
import pytest

from beam_tensorize.sample import AVRO2TF_CONFIG, SAMPLE_AVRO
from pipelines.tensorize import main

pytestmark = pytest.mark.pipeline

SHARED_MOVIELENS = os.path.join(
    os.path.dirname(__file__), "..", "..", "..", "shared", "data", "avro2tf-movielens"
)


@pytest.fixture(scope="module")
def sample_records() -> list[dict]:
    with open(SAMPLE_AVRO, "rb") as f:
        return list(fastavro.reader(f))


@pytest.fixture(scope="module")
def sample_run(tmp_path_factory):
    """The README's first command: no flags, in a fresh working directory."""
    cwd = tmp_path_factory.mktemp("cwd")
    old = os.getcwd()
    os.chdir(cwd)
    try:
        assert main([]) == 0
    finally:
        os.chdir(old)
    return cwd / "tensorize_output"


def _parsed_rows(output_dir, split="train"):
    """Every record of a split as a dict of numpy values, parsed with the metadata's spec."""
    import tensorflow as tf

    from beam_tensorize.tf import make_dataset

    rows = []
    for batch in make_dataset(str(output_dir), split=split, batch_size=64, labels=False):
        size = next(iter(batch.values())).shape[0]
        for i in range(size):
            row = {}
            for name, value in batch.items():
                item = None if isinstance(value, tf.SparseTensor) else value[i]
                if isinstance(value, tf.SparseTensor):
                    part = tf.sparse.slice(value, [i, 0], [1, value.dense_shape[1]])
                    item = dict(zip(part.indices[:, 1].numpy().tolist(), part.values.numpy().tolist()))
                elif isinstance(item, tf.RaggedTensor):
                    item = item.to_list()
                else:
                    item = item.numpy()
                    item = item.tolist() if item.ndim else item.item()
                row[name] = item
            rows.append(row)
    return rows


def test_sample_run_layout(sample_run):
    assert sorted(os.listdir(sample_run)) == [
        "_SUCCESS",
        "deadLetters",
        "featureList",
        "metadata",
        "report",
        "trainingData",
    ]
    assert sorted(os.listdir(sample_run / "report")) == [
        "trainingData.html",
        "trainingData.json",
        "trainingData.stats.pb",
    ]
    assert sorted(os.listdir(sample_run / "metadata")) == [
        "featureListCounts",
        "schema.pbtxt",
        "tensor_metadata.json",
    ]
    assert sorted(os.listdir(sample_run / "featureList")) == ["genreIds", "genreVector"]
    assert (sample_run / "deadLetters" / "trainingData" / "part-00000-of-00001.jsonl").read_text() == ""
    assert sorted(os.listdir(sample_run / "trainingData")) == ["_SUCCESS", "part-00000-of-00001.tfrecord"]
    metadata = json.loads((sample_run / "metadata" / "tensor_metadata.json").read_text())
    assert [t["name"] for t in metadata["features"]] == [
        "userId",
        "movieId",
        "genres",
        "movieLatentFactors",
        "numGenres",
        "genreIds",
        "genreVector",
        "movieBucket",
    ]
    assert [t["name"] for t in metadata["labels"]] == ["response"]
    assert metadata["data"] == {
        "trainingData": {
            "format": "tfrecord",
            "files": ["part-00000-of-00001.tfrecord"],
            "numRecords": 300,
            "badRecords": 0,
        }
    }
    factors = metadata["features"][3]
    assert factors["parse"] == {
        "type": "FixedLenFeature",
        "key": "movieLatentFactors",
        "dtype": "float32",
        "shape": [30],
    }
    assert factors["featureKeys"] == {"movieLatentFactors": "float32"}


def test_sample_run_values_match_avro_row_by_row(sample_run, sample_records):
    import tensorflow as tf

    genre_list = (sample_run / "featureList" / "genreIds").read_text().splitlines()
    ntv_list = (sample_run / "featureList" / "genreVector").read_text().splitlines()
    counts = collections.Counter(g["term"] for r in sample_records for g in r["genreFeatures"])
    assert genre_list == sorted(counts, key=lambda t: (-counts[t], t))
    assert ntv_list == [f"Genre,{t}" for t in genre_list]
    rows = _parsed_rows(sample_run)
    assert len(rows) == len(sample_records) == 300
    for row, record in zip(rows, sample_records):  # one shard keeps input order
        assert row["userId"] == [record["userId"]]
        assert row["movieId"] == record["movieId"]
        assert row["genres"] == [g["term"].lower().encode() for g in record["genreFeatures"]]
        np.testing.assert_array_equal(
            row["movieLatentFactors"],
            np.array([f["value"] for f in record["movieLatentFactorFeatures"]], dtype=np.float32),
        )
        assert row["numGenres"] == len(record["genreFeatures"])
        assert row["genreIds"] == [genre_list.index(g["term"]) for g in record["genreFeatures"]]
        assert row["genreVector"] == {
            ntv_list.index(f"Genre,{g['term']}"): 1.0 for g in record["genreFeatures"]
        }
        assert row["movieBucket"] == int(tf.strings.to_hash_bucket_fast([str(record["movieId"])], 1000)[0])
        assert row["response"] == float(np.float32(record["response"]))


def test_sample_run_twice_is_byte_identical_and_prints_a_summary(sample_run, tmp_path, capsys):
    shutil.copytree(sample_run, tmp_path / "first")
    old = os.getcwd()
    os.chdir(sample_run.parent)
    try:
        assert main([]) == 0  # the default run overwrites its own output
    finally:
        os.chdir(old)
    summary = capsys.readouterr().out
    assert "Output written to tensorize_output" in summary
    assert "rows read:     300" in summary
    assert "rows written:  300  (bad records: 0)" in summary
    assert (
        "tensors:       userId, movieId, genres, movieLatentFactors, numGenres, genreIds, genreVector, "
        "movieBucket, response" in summary
    )
    assert "feature lists: featureList/genreIds (19 entries), featureList/genreVector (19 entries)" in summary
    assert "files:         trainingData/part-00000-of-00001.tfrecord" in summary
    for rel in ["trainingData/part-00000-of-00001.tfrecord", "metadata/tensor_metadata.json", "_SUCCESS",
                "featureList/genreIds", "featureList/genreVector"]:  # fmt: skip
        assert (sample_run / rel).read_bytes() == (tmp_path / "first" / rel).read_bytes(), rel


def test_file_uris_name_local_paths_as_in_spark(sample_run, tmp_path, capsys):
    """`file:///...` (and Hadoop's `file:/...`) paths, as Spark and Avro2TF users write them,
    read and write the local files they name; the output is the sample run's."""
    from beam_tensorize.sample import SAMPLE_CONFIG

    out = tmp_path / "out"
    args = ["--input", "file://" + SAMPLE_AVRO, "--config", "file:" + SAMPLE_CONFIG, "--output", f"file://{out}",
            "--quiet"]  # fmt: skip
    assert main(args) == 0
    for rel in ["trainingData/part-00000-of-00001.tfrecord", "metadata/tensor_metadata.json",
                "featureList/genreIds", "featureList/genreVector"]:  # fmt: skip
        assert (out / rel).read_bytes() == (sample_run / rel).read_bytes(), rel
    capsys.readouterr()
    assert (
        main(["--input", "file://elsewhere/data.avro", "--config", SAMPLE_CONFIG, "--output", str(out)]) == 2
    )
    assert capsys.readouterr().err.splitlines()[0] == (
        "error: argument --input: file://elsewhere/data.avro: a file URI of another host (elsewhere); give a "
        "path of this machine's file system; run 'python -m pipelines.tensorize --help' for the flags"
    )


def test_input_without_config_is_rejected(tmp_path, capsys):
    assert main(["--input", SAMPLE_AVRO, "--output", str(tmp_path / "out")]) == 2
    assert (
        "--input and --config go together: give both, or neither for the bundled sample"
        in capsys.readouterr().err
    )
    assert not (tmp_path / "out").exists()


def test_movielens_avro2tf_config_supported_tensors(tmp_path, sample_records):
    """The shared Avro2TF case: every tensor this version supports comes out right."""
    source = (
        os.path.join(SHARED_MOVIELENS, "config.json") if os.path.isdir(SHARED_MOVIELENS) else AVRO2TF_CONFIG
    )
    avro = (
        os.path.join(SHARED_MOVIELENS, "trainSmall.avro") if os.path.isdir(SHARED_MOVIELENS) else SAMPLE_AVRO
    )
    document = json.load(open(source))
    keep = {"userId", "response"}  # the others need hashing / feature lists (a later version)
    document["features"] = [t for t in document["features"] if t["outputTensorInfo"]["name"] in keep]
    document["labels"] = [t for t in document["labels"] if t["outputTensorInfo"]["name"] in keep]
    config = tmp_path / "config.json"
    config.write_text(json.dumps(document))
    out = tmp_path / "out"
    args = [
        "--input",
        avro,
        "--config",
        str(config),
        "--output",
        str(out),
        "--num_shards",
        "3",
        "--compression",
        "gzip",
    ]
    assert main(args) == 0
    assert sorted(os.listdir(out / "trainingData")) == [
        "_SUCCESS",
        *(f"part-0000{i}-of-00003.tfrecord.gz" for i in range(3)),
    ]
    rows = _parsed_rows(out)
    got = sorted((r["userId"][0], float(r["response"])) for r in rows)
    assert got == sorted((r["userId"], float(np.float32(r["response"]))) for r in sample_records)


def test_bad_config_reports_json_path(tmp_path, capsys):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"features": [{"outputTensorInfo": {"name": "userId", "dtype": "lng"}}]}))
    code = main(["--input", SAMPLE_AVRO, "--config", str(config), "--output", str(tmp_path / "out")])
    assert code == 2
    err = capsys.readouterr().err
    assert (
        "features[0].outputTensorInfo.dtype: 'lng' is not one of int, long, float, double, string, boolean, bytes, sparseVector"
        in err
    )
    assert not (tmp_path / "out").exists()


def test_existing_output_fails_without_overwrite(tmp_path, sample_run, capsys):
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"features": [{"outputTensorInfo": {"name": "userId", "dtype": "long"}}]}))
    out = tmp_path / "out"
    args = ["--input", SAMPLE_AVRO, "--config", str(config), "--output", str(out)]
    assert main(args) == 0
    capsys.readouterr()
    assert main(args) == 2  # refused before any data is read (docs/errors.md)
    err = capsys.readouterr().err
    assert err == (
        f"error: {out}/trainingData already holds 1 file(s) (e.g. {out}/trainingData/part-00000-of-00001.tfrecord); "
        "choose another output folder or another save mode (overwrite, overwrite_partitions, append, ignore)\n"
    )
    assert main([*args, "--save_mode", "overwrite"]) == 0


def test_help_explains_every_flag(capsys):
    assert main(["--help"]) == 0
    text = capsys.readouterr().out
    for flag in [
        "--input",
        "--output",
        "--config",
        "--execution_mode",
        "--num_shards",
        "--compression",
        "--save_mode",
        "--max_bad_records_ratio",
        "--batch_rows",
        "--split_bytes",
        "--runner",
    ]:
        assert flag in text, flag


def test_partition_by_writes_the_hive_layout_and_every_row_reads_back(tmp_path, sample_run):
    import apache_beam as beam
    from apache_beam.testing.test_pipeline import TestPipeline

    from beam_tensorize.io import ReadTFRecord

    out = tmp_path / "partitioned"
    assert main(["--partition_by", "numGenres", "--num_shards", "2", "--output", str(out)]) == 0
    data = out / "trainingData"
    folders = sorted(os.listdir(data))
    assert folders.pop(0) == "_SUCCESS"  # as Avro2TF writes it
    assert folders == [f"numGenres={n}" for n in range(1, 7)]
    assert all(
        sorted(os.listdir(data / f)) == ["part-00000-of-00002.tfrecord", "part-00001-of-00002.tfrecord"]
        for f in folders
    )
    metadata = json.loads((out / "metadata" / "tensor_metadata.json").read_text())
    assert metadata["data"]["trainingData"]["partitionColumns"] == ["numGenres"]
    assert metadata["data"]["trainingData"]["files"][0] == "numGenres=1/part-00000-of-00002.tfrecord"

    def rows(folder):
        read = ReadTFRecord(str(folder))
        path = tmp_path / f"{folder.parent.name}.json"
        with TestPipeline() as p:
            _ = (
                p
                | read
                | beam.FlatMap(lambda b: [json.dumps(r, sort_keys=True) for r in b.to_pylist()])
                | beam.combiners.ToList()
                | beam.Map(lambda lines: path.write_text("\n".join(sorted(lines))))
            )
        return read.schema, path.read_text().splitlines()

    partitioned_schema, partitioned = rows(data)
    plain_schema, plain = rows(sample_run / "trainingData")
    assert len(partitioned) == 300
    assert partitioned == plain  # every row, numGenres back from the folder names
    assert partitioned_schema.field("numGenres").type == plain_schema.field("numGenres").type
    assert sorted(partitioned_schema.names) == sorted(plain_schema.names)
    # TensorFlow sees the same tensors through the metadata, numGenres from the folders.
    by_movie = sorted(_parsed_rows(out), key=lambda r: (r["movieId"], r["userId"]))
    expected = sorted(_parsed_rows(sample_run), key=lambda r: (r["movieId"], r["userId"]))
    assert [r["numGenres"] for r in by_movie] == [r["numGenres"] for r in expected]
    assert [r["genreIds"] for r in by_movie] == [r["genreIds"] for r in expected]


def test_save_mode_ignore_leaves_an_existing_output_alone(tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["--output", str(out), "--num_shards", "2"]) == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    capsys.readouterr()
    assert main(["--output", str(out), "--num_shards", "3", "--save_mode", "ignore", "--filter_zeros"]) == 0
    assert (
        "trainingData already held data; with --save_mode ignore nothing was written"
        in capsys.readouterr().out
    )
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_avro2tf_spellings_training_and_a_trailing_group_separator(tmp_path):
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipelines.tensorize import TensorizeOptions, _resolve

    config = tmp_path / "config.json"
    config.write_text(json.dumps({"features": [
        {"inputFeatureInfo": {"columnExpr": "genreFeatures.term"}, "outputTensorInfo": {"name": "a", "dtype": "long", "shape": [-1]}},
        {"inputFeatureInfo": {"columnExpr": "lower(genreFeatures.term)"}, "outputTensorInfo": {"name": "b", "dtype": "long", "shape": [-1]}},
    ]}))  # fmt: skip
    argv = ["--input", SAMPLE_AVRO, "--config", str(config), "--output", str(tmp_path / "o"),
            "--execution_mode", "training", "--tensors_sharing_feature_lists", "a,b;"]  # fmt: skip
    spec = _resolve(PipelineOptions(argv).view_as(TensorizeOptions))
    assert (spec.execution_mode, spec.split) == ("train", "trainingData")
    assert spec.shared_feature_lists == (("a", "b"),)
    assert main(argv) == 0
    assert sorted(os.listdir(tmp_path / "o" / "featureList")) == ["a", "b"]
    assert (tmp_path / "o" / "featureList" / "a").read_text() == (
        tmp_path / "o" / "featureList" / "b"
    ).read_text()


@pytest.mark.parametrize("runner", [[], ["--runner", "DirectRunner"]])
def test_the_direct_runner_runs_in_process_without_trying_prism(tmp_path, monkeypatch, runner, own_tempdir):
    """The DirectRunner (the default) is Beam's in-process runner whatever the network allows:
    Beam's Prism runner is never started, and the temporary directory gets no `beam-temp*`
    folder from its job server."""
    from apache_beam.runners.portability import prism_runner

    tried = []
    run_on_prism = prism_runner.PrismRunner.run_pipeline

    def record(self, *args, **kwargs):  # Beam falls back when Prism fails: record the attempt
        tried.append(True)
        return run_on_prism(self, *args, **kwargs)

    monkeypatch.setattr(prism_runner.PrismRunner, "run_pipeline", record)
    assert main(["--output", str(tmp_path / "out"), "--quiet", "--report", "none", *runner]) == 0
    assert (tmp_path / "out" / "_SUCCESS").exists()
    assert tried == []
    assert list(own_tempdir.glob("beam-temp*")) == []


def test_the_runner_of_other_flags_is_beams_choice():
    from apache_beam.options.pipeline_options import PipelineOptions

    from beam_tensorize.runners.direct import direct_runner_for

    assert type(direct_runner_for(PipelineOptions(["--runner", "direct"]))).__name__ == "FnApiRunner"
    assert direct_runner_for(PipelineOptions(["--runner", "PortableRunner"])) is None
    assert direct_runner_for(PipelineOptions(["--runner", "BundleBasedDirectRunner"])) is None
    assert direct_runner_for(PipelineOptions(["--streaming"])) is None


def test_split_bytes_sets_the_input_splits_as_the_min_parts_note_says(tmp_path, capsys):
    """Avro2TF's --min-parts points to --split_bytes: smaller splits, more files (one each)."""
    out = tmp_path / "out"
    args = ["--input", SAMPLE_AVRO, "--config", AVRO2TF_CONFIG, "--output", str(out), "--quiet"]
    assert main([*args, "--split_bytes", "40000"]) == 0
    assert sorted(p.name for p in (out / "trainingData").glob("part-*")) == [
        "part-00000-of-00002.tfrecord",
        "part-00001-of-00002.tfrecord",
    ]
    assert len(_parsed_rows(out)) == 300
    assert main([*args, "--split_bytes", "0"]) == 2
    assert capsys.readouterr().err.endswith("error: --split_bytes must be a positive integer, got 0\n")


def test_the_log_file_is_kept_only_when_the_command_fails(tmp_path, capsys):
    """Every run used to leave a 30 KB log in the temporary folder (410 after a day)."""
    log = os.path.join(tempfile.gettempdir(), f"beam_tensorize-{os.getpid()}.log")
    out = tmp_path / "out"
    args = ["--input", SAMPLE_AVRO, "--config", AVRO2TF_CONFIG, "--output", str(out), "--quiet"]
    assert main(args) == 0
    assert not os.path.exists(log)
    bad = tmp_path / "bad.avro"
    bad.write_bytes(open(SAMPLE_AVRO, "rb").read()[:5000])  # cut inside the first block
    assert main(["--input", str(bad), *args[2:], "--save_mode", "overwrite"]) == 1
    assert f"(details: {log}, or rerun with --verbose)" in capsys.readouterr().err
    assert os.path.getsize(log) > 0
    os.remove(log)


def test_version_and_hints_that_name_the_command_as_run(capsys, monkeypatch):
    from beam_tensorize import __version__

    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"beam_tensorize {__version__}\n"
    assert main(["--versoin"]) == 2
    assert "did you mean --version?" in capsys.readouterr().err
    monkeypatch.setattr("sys.argv", ["/usr/local/bin/beam-tensorize"])
    assert main(["--num_shard", "2"]) == 2
    assert capsys.readouterr().err.endswith("run 'beam-tensorize --help' for the flags\n")


def test_progress_lines_never_show_more_written_than_read_nor_a_missing_rate():
    from beam_tensorize import metrics
    from pipelines.console import ProgressLine

    line = ProgressLine()
    assert line({metrics.ROWS_COUNTED: 1000}, 2.0) == (
        "progress: counting feature-list entries: 1,000 rows read (500 rows/s), 0:00:02 elapsed"
    )
    # the first line of the second pass: the job's rate so far, not "n/a"; written <= read
    first = {metrics.ROWS_COUNTED: 1000, metrics.ROWS_READ: 400, metrics.EXAMPLES_WRITTEN: 450}
    assert line(first, 4.0) == "progress: 400 rows read, 400 written (100 rows/s), 0:00:04 elapsed"
    later = {metrics.ROWS_COUNTED: 1000, metrics.ROWS_READ: 1000, metrics.EXAMPLES_WRITTEN: 900}
    assert line(later, 6.0) == "progress: 1,000 rows read, 900 written (300 rows/s), 0:00:06 elapsed"
