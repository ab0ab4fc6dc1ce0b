"""The Spark path: the same kernels on PySpark give the Beam job's output, byte for byte.

Each `tensorize_spark` run is compared with the Beam job (`ReadAvro | Tensorize` on the
DirectRunner) on the bundled MovieLens sample (300 rows, the Avro2TF test file); the data
sources are compared with what the kernels read directly. One SparkSession serves the whole
test session (the `spark` fixture of conftest.py).
"""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need the 'spark' extra (pip install -e '.[spark]')")

import apache_beam as beam
import fastavro
import pyarrow as pa

from beam_tensorize.config import load_config, parse_config
from beam_tensorize.io import ReadAvro
from beam_tensorize.kernels import avro
from beam_tensorize.kernels.tfrecord.framing import decompressed_reader, iter_tfrecords
from beam_tensorize.sample import AVRO2TF_CONFIG, SAMPLE_AVRO, SAMPLE_CONFIG
from beam_tensorize.spark import AVRO_FORMAT, register_data_sources, source_batches, tensorize_spark
from beam_tensorize.transforms import Tensorize

pytestmark = [pytest.mark.spark, pytest.mark.xdist_group("spark")]

#: Small batches and byte ranges: the sample rewritten in small Avro blocks (`small_blocks`)
#: is read as 7 ranges (Spark partitions) of several batches each, so the record placement
#: and order in the files are exercised.
SMALL_READS = {"batch_rows": 40, "split_bytes": 20000}

#: Shared feature lists with a cap, an external list, an NTV sparse vector (filter_zeros),
#: hashing of NTV records with two hash functions, extra columns.
FEATURES_CONFIG = {
    "features": [
        {
            "inputFeatureInfo": {"columnExpr": "genreFeatures.term"},
            "outputTensorInfo": {"name": "genreIds", "dtype": "long", "shape": [-1], "vocabSizeCap": 12},
        },
        {
            "inputFeatureInfo": {"columnExpr": "lower(genreFeatures.term)"},
            "outputTensorInfo": {"name": "genreIdsLower", "dtype": "long", "shape": [-1]},
        },
        {
            "inputFeatureInfo": {"columnExpr": "genreFeatures.term"},
            "outputTensorInfo": {"name": "genreNames", "dtype": "long", "shape": [-1]},
        },
        {
            "inputFeatureInfo": {"columnConfig": {"movieLatentFactorFeatures": {"whitelist": ["*"]}}},
            "outputTensorInfo": {"name": "latent", "dtype": "float", "shape": [], "isSparse": True},
        },
        {
            "inputFeatureInfo": {
                "columnConfig": {"genreFeatures": {"whitelist": ["Genre"]}},
                "transformConfig": {
                    "hashInfo": {"hashBucketSize": 8, "numHashFunctions": 2, "combiner": "MAX"}
                },
            },
            "outputTensorInfo": {"name": "genreHashed", "dtype": "float", "shape": [], "isSparse": True},
        },
    ],
    "labels": [{"outputTensorInfo": {"name": "response", "dtype": "double", "shape": []}}],
}

#: `genres` must hold exactly 2 values: 213 of the 300 sample rows do not.
BAD_ROWS_CONFIG = {
    "features": [
        {"outputTensorInfo": {"name": "userId", "dtype": "long", "shape": []}},
        {
            "inputFeatureInfo": {"columnExpr": "genreFeatures.term"},
            "outputTensorInfo": {"name": "genres", "dtype": "string", "shape": [2]},
        },
    ]
}


def _beam(config, out, inputs=SAMPLE_AVRO, *, batch_rows=8192, split_bytes=64 << 20, mode="train", **kwargs):
    """The Beam job with the same arguments, on the DirectRunner."""
    columns = Tensorize.input_columns(config, kwargs.get("extra_columns", ()))
    with beam.Pipeline() as p:
        _ = (
            p
            | ReadAvro(inputs, columns=columns, batch_rows=batch_rows, split_bytes=split_bytes)
            | Tensorize(config, str(out), execution_mode=mode, **kwargs)
        )


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_parquet_and_orc_inputs_give_the_beam_files_of_the_avro_input(spark, tmp_path, fmt):
    """Spark reads Parquet / ORC through the same format layer: its output equals the Beam job's
    output for the same rows read from Avro, file for file (with `num_shards`: one file per
    input split would follow each format's splits)."""
    import pyarrow.orc as orc
    import pyarrow.parquet as pq

    from beam_tensorize.kernels.avro import read_avro_range

    with open(SAMPLE_AVRO, "rb") as f:
        table = pa.Table.from_batches(list(read_avro_range(f, SAMPLE_AVRO))).replace_schema_metadata(None)
    path = str(tmp_path / f"sample.{fmt}")
    if fmt == "parquet":
        pq.write_table(table, path, row_group_size=70)  # 5 row groups: 5 Spark partitions
    else:
        orc.write_table(table, path)
    config = load_config(AVRO2TF_CONFIG)
    _beam(config, tmp_path / "beam", num_shards=1)
    result = tensorize_spark(spark, path, config, str(tmp_path / "spark"), split_bytes=1, num_shards=1)
    assert result["numRecords"] == 300
    _assert_same_output(tmp_path / "beam", tmp_path / "spark")


def test_parquet_output_same_files_as_beam(spark, tmp_path, small_blocks):
    """Parquet output, partitioned and sharded: Spark writes the Beam job's files byte for byte."""
    config = load_config(SAMPLE_CONFIG)
    kwargs = {"output_format": "parquet", "num_shards": 2, "partition_by": ["numGenres"]}
    _beam(config, tmp_path / "beam", small_blocks, **SMALL_READS, **kwargs)
    result = tensorize_spark(spark, small_blocks, config, str(tmp_path / "spark"), **SMALL_READS, **kwargs)
    assert result["numRecords"] == 300
    assert all(f.endswith(".parquet") for f in result["files"])
    _assert_same_output(tmp_path / "beam", tmp_path / "spark")


def _tree(folder) -> dict[str, bytes]:
    """Every file under `folder` by relative path, with its bytes."""
    found = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            with open(path, "rb") as f:
                found[os.path.relpath(path, folder)] = f.read()
    return found


def _records(folder, split="trainingData") -> list[bytes]:
    """The serialized records of a split, sorted (the multiset, whatever the files)."""
    records = []
    for name, content in _tree(os.path.join(folder, split)).items():
        if not name.startswith(("_", ".")) and ".tfrecord" in name:
            compression = "gzip" if name.endswith(".gz") else "zlib" if name.endswith(".zlib") else "none"
            records.extend(iter_tfrecords(decompressed_reader(io.BytesIO(content), compression), name))
    return sorted(records)


def _assert_same_output(beam_out, spark_out, split="trainingData"):
    assert _records(spark_out, split) == _records(beam_out, split)
    beam_files, spark_files = _tree(beam_out), _tree(spark_out)
    assert sorted(spark_files) == sorted(beam_files)
    for name, content in beam_files.items():
        assert spark_files[name] == content, f"{name} differs"


def _metadata(folder) -> dict:
    with open(os.path.join(folder, "metadata", "tensor_metadata.json")) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def small_blocks(tmp_path_factory) -> str:
    """The 300 sample records rewritten as a deflate Avro file of many small blocks."""
    with open(SAMPLE_AVRO, "rb") as f:
        reader = fastavro.reader(f)
        schema, records = reader.writer_schema, list(reader)
    path = tmp_path_factory.mktemp("avro") / "small_blocks.avro"
    with open(path, "wb") as f:
        fastavro.writer(f, schema, records, codec="deflate", sync_interval=3000)
    return str(path)


@pytest.fixture(scope="module")
def sample_train(spark, small_blocks, tmp_path_factory):
    """The sample config (hashing, feature lists, NTV sparse vector) in train mode, by both
    jobs: 3 GZIP shards, read in small batches and byte ranges."""
    config = load_config(SAMPLE_CONFIG)
    beam_out = tmp_path_factory.mktemp("beam") / "out"
    spark_out = tmp_path_factory.mktemp("spark") / "out"
    options = {"num_shards": 3, "compression": "gzip", **SMALL_READS}
    _beam(config, beam_out, small_blocks, **options)
    result = tensorize_spark(spark, small_blocks, config, str(spark_out), **options)
    return config, beam_out, spark_out, result, options, small_blocks


def test_sample_config_same_files_as_beam(sample_train):
    _, beam_out, spark_out, result, _, _ = sample_train
    _assert_same_output(beam_out, spark_out)
    names = [f"part-0000{i}-of-00003.tfrecord.gz" for i in range(3)]
    assert result == {
        "output": str(spark_out),
        "split": "trainingData",
        "files": [str(spark_out / "trainingData" / n) for n in names],
        "numRecords": 300,
        "badRecords": 0,
        "metadata": str(spark_out / "metadata" / "tensor_metadata.json"),
    }
    assert len(_records(spark_out)) == 300
    assert all(
        len(list(iter_tfrecords(decompressed_reader(open(f, "rb"), "gzip")))) > 50 for f in result["files"]
    )
    genre_ids = (spark_out / "featureList" / "genreIds").read_text().splitlines()
    assert len(genre_ids) == 19 and genre_ids[:3] == ["Comedy", "Drama", "Action"]
    entries = (spark_out / "featureList" / "genreVector").read_text().splitlines()
    assert entries[:2] == ["Genre,Comedy", "Genre,Drama"]
    tensors = {t["name"]: t for t in _metadata(spark_out)["features"]}
    assert tensors["movieBucket"]["numUniqueValues"] == 1001
    assert tensors["genreVector"]["parse"]["size"] == 20
    assert (spark_out / "_SUCCESS").exists() and not (spark_out / "trainingData" / "_temporary").exists()


def test_avro2tf_config_same_files_as_beam(spark, tmp_path):
    config = load_config(AVRO2TF_CONFIG)
    _beam(config, tmp_path / "beam")
    result = tensorize_spark(spark, SAMPLE_AVRO, AVRO2TF_CONFIG, str(tmp_path / "spark"))
    _assert_same_output(tmp_path / "beam", tmp_path / "spark")
    assert result["numRecords"] == 300 and result["files"][0].endswith("part-00000-of-00001.tfrecord")
    assert len((tmp_path / "spark" / "featureList" / "genreFeatures_term").read_text().splitlines()) == 19


def test_shared_external_lists_extra_columns_and_a_file_read_twice(spark, small_blocks, tmp_path):
    config = parse_config(FEATURES_CONFIG)
    external = tmp_path / "lists"
    external.mkdir()
    (external / "genreNames").write_text("Drama\nComedy\nAction\n")
    options = {
        "num_shards": 2,
        "shared_feature_lists": [["genreIds", "genreIdsLower"]],
        "external_feature_lists": str(external),
        "extra_columns": ["userId", "weight"],
        "filter_zeros": True,
        **SMALL_READS,
    }
    inputs = [small_blocks, small_blocks]  # equal source tags: ties in the record order
    _beam(config, tmp_path / "beam", inputs, **options)
    result = tensorize_spark(spark, inputs, config, str(tmp_path / "spark"), **options)
    _assert_same_output(tmp_path / "beam", tmp_path / "spark")
    assert result["numRecords"] == 600
    shared = (tmp_path / "spark" / "featureList" / "genreIds").read_text().splitlines()
    assert len(shared) == 12 and shared[:3] == ["Comedy", "comedy", "Drama"]
    assert (tmp_path / "spark" / "featureList" / "genreIdsLower").read_text().splitlines() == shared
    assert (tmp_path / "spark" / "featureList" / "genreNames").read_text() == "Drama\nComedy\nAction\n"
    extra = {c["name"]: c["dtype"] for c in _metadata(tmp_path / "spark")["extraColumns"]}
    assert extra == {"userId": "long", "weight": "double"}


def test_validation_mode_uses_the_lists_of_the_train_run(spark, sample_train, tmp_path):
    config, beam_train, spark_train, _, options, avro_file = sample_train
    beam_out, spark_out = tmp_path / "beam", tmp_path / "spark"
    shutil.copytree(beam_train, beam_out)
    shutil.copytree(spark_train, spark_out)
    lists_before = _tree(spark_out / "featureList")
    _beam(config, beam_out, avro_file, mode="validation", **options)
    result = tensorize_spark(spark, avro_file, config, str(spark_out), mode="validation", **options)
    _assert_same_output(beam_out, spark_out, "validationData")
    assert result["split"] == "validationData" and result["numRecords"] == 300
    # Same input, same lists: the validation files are the training files.
    assert _tree(spark_out / "validationData") == _tree(spark_out / "trainingData")
    assert _tree(spark_out / "featureList") == lists_before
    assert sorted(_metadata(spark_out)["data"]) == ["trainingData", "validationData"]


def test_bad_records_go_to_dead_letters_and_a_failed_check_commits_nothing(spark, small_blocks, tmp_path):
    config = parse_config(BAD_ROWS_CONFIG)
    beam_out, spark_out = tmp_path / "beam", tmp_path / "spark"
    # `genres` of other than 2 values are bad records with check_shapes (kept by default).
    _beam(config, beam_out, small_blocks, max_bad_records_ratio=1.0, check_shapes=True, **SMALL_READS)
    result = tensorize_spark(
        spark,
        small_blocks,
        config,
        str(spark_out),
        max_bad_records_ratio=1.0,
        check_shapes=True,
        **SMALL_READS,
    )
    _assert_same_output(beam_out, spark_out)
    assert (result["numRecords"], result["badRecords"]) == (87, 213)
    lines = (
        (spark_out / "deadLetters" / "trainingData" / "part-00000-of-00001.jsonl").read_text().splitlines()
    )
    letter = json.loads(lines[0])
    assert len(lines) == 213
    assert letter["reason"].startswith("tensor 'genres': expected 2 values at dimension 0, got ")
    assert (
        f"{small_blocks}: record " in letter["source"] and "of the rows starting at byte" in letter["source"]
    )

    before = _tree(spark_out)
    with pytest.raises(
        ValueError, match=r"213 of 300 records could not be converted \(71\.00% > the allowed 50\.00%\)"
    ):
        tensorize_spark(
            spark,
            small_blocks,
            config,
            str(spark_out),
            save_mode="overwrite",
            max_bad_records_ratio=0.5,
            check_shapes=True,
            **SMALL_READS,
        )
    after = _tree(spark_out)
    failed = os.path.join("deadLetters", "trainingData", "_failed", "part-00000-of-00001.jsonl")
    assert len(after.pop(failed).splitlines()) == 213  # the failed run's reasons, for inspection
    assert after == before  # the old output, _SUCCESS and dead letters included; no temporary files


def test_save_mode_error_fails_before_writing(spark, sample_train, tmp_path):
    config, _, spark_train, _, _, avro_file = sample_train
    out = tmp_path / "out"
    shutil.copytree(spark_train, out)
    before = _tree(out)
    with pytest.raises(FileExistsError, match=r"trainingData already holds 3 file\(s\)"):
        tensorize_spark(spark, avro_file, config, str(out))
    assert _tree(out) == before


@pytest.mark.parametrize(("save_mode", "shards"), [("overwrite", 3), ("append", 6), ("ignore", 3)])
def test_save_modes_as_in_beam(spark, sample_train, tmp_path, save_mode, shards):
    config, beam_train, spark_train, _, options, avro_file = sample_train
    beam_out, spark_out = tmp_path / "beam", tmp_path / "spark"
    shutil.copytree(beam_train, beam_out)
    shutil.copytree(spark_train, spark_out)
    before = _tree(spark_out)
    _beam(config, beam_out, avro_file, save_mode=save_mode, **options)
    result = tensorize_spark(spark, avro_file, config, str(spark_out), save_mode=save_mode, **options)
    _assert_same_output(beam_out, spark_out)
    assert len([n for n in os.listdir(spark_out / "trainingData") if n.endswith(".gz")]) == shards
    if save_mode == "ignore":
        assert _tree(spark_out) == before
        assert result == {
            "output": str(spark_out),
            "split": "trainingData",
            "skipped": True,
            "files": [],
            "numRecords": 0,
        }


def test_partition_by_same_files_as_beam(spark, small_blocks, tmp_path):
    config = load_config(SAMPLE_CONFIG)
    options = {"num_shards": 2, "compression": "zlib", "partition_by": ["numGenres"], **SMALL_READS}
    _beam(config, tmp_path / "beam", small_blocks, **options)
    result = tensorize_spark(spark, small_blocks, config, str(tmp_path / "spark"), **options)
    _assert_same_output(tmp_path / "beam", tmp_path / "spark")
    folders = sorted(os.listdir(tmp_path / "spark" / "trainingData"))
    assert folders.pop(0) == "_SUCCESS"  # as Avro2TF writes it
    assert folders == [f"numGenres={n}" for n in range(1, 7)]
    # Up to 2 files per folder: which shards a small folder gets depends on the file's path.
    assert result["numRecords"] == 300 and 6 < len(result["files"]) <= 12
    assert result["files"][0].endswith("trainingData/numGenres=1/part-00000-of-00002.tfrecord.zlib")
    assert _metadata(tmp_path / "spark")["data"]["trainingData"]["partitionColumns"] == ["numGenres"]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"mode": "trial"}, "execution_mode 'trial' is not one of train, validation, test"),
        ({"num_shards": 0}, "num_shards must be a positive integer, got 0"),
        (
            {"compression": "lzo"},
            "compression 'lzo' does not apply to output_format 'tfrecord'; use one of none, gzip, zlib",
        ),
        ({"shared_feature_lists": [["genreIds", "nope"]]}, "unknown tensor 'nope'"),
        ({"extra_columns": ["userId"]}, r"extra columns \['userId'\] have the names of tensors"),
        ({"batch_rows": 0}, "batch_rows must be a positive integer, got 0"),
    ],
)
def test_bad_arguments_fail_before_anything_runs(spark, tmp_path, arguments, message):
    with pytest.raises(ValueError, match=message):
        tensorize_spark(spark, SAMPLE_AVRO, SAMPLE_CONFIG, str(tmp_path / "out"), **arguments)
    assert not (tmp_path / "out").exists()


def test_settings_are_tensorize_spec_fields_and_a_spec_takes_keyword_overrides(spark, tmp_path):
    """`tensorize_spark` takes a TensorizeSpec's fields as keywords (a name it has no field for
    is a TypeError naming it), or a spec with changes of its fields (`output` among them)."""
    from beam_tensorize.job.spec import TensorizeSpec

    out = str(tmp_path / "out")
    with pytest.raises(
        TypeError, match=r"no setting 'numShards'; the settings are TensorizeSpec's: .*num_shards"
    ):
        tensorize_spark(spark, SAMPLE_AVRO, SAMPLE_CONFIG, out, numShards=2)
    spec = TensorizeSpec(SAMPLE_CONFIG, str(tmp_path / "elsewhere"), inputs=[SAMPLE_AVRO])
    with pytest.raises(TypeError, match="mode or execution_mode, not both"):
        tensorize_spark(spark, SAMPLE_AVRO, SAMPLE_CONFIG, out, "validation", execution_mode="train")
    with pytest.raises(ValueError, match="num_shards must be a positive integer, got 0"):
        tensorize_spark(spark, spec, num_shards=0)  # overrides are checked as the spec's fields are
    result = tensorize_spark(spark, spec, output=out, num_shards=2, compression="gzip")
    assert result["numRecords"] == 300 and result["output"] == out
    assert sorted(os.listdir(tmp_path / "out" / "trainingData")) == [
        "_SUCCESS",
        "part-00000-of-00002.tfrecord.gz",
        "part-00001-of-00002.tfrecord.gz",
    ]
    assert not (tmp_path / "elsewhere").exists()


# --- the Avro data source ------------------------------------------------------------------


def _kernel_batches(path, columns, batch_rows=40, split_bytes=20000) -> list[pa.RecordBatch]:
    """What the Beam reader's kernel gives for a file, range by range."""
    batches = []
    with open(path, "rb") as f:
        for start, end in avro.split_ranges(os.path.getsize(path), split_bytes):
            batches.extend(avro.read_avro_range(f, path, columns, start, end, batch_rows))
    return batches


def test_avro_source_reads_the_values_of_the_kernel(spark):
    """The bundled file, 7 byte ranges: 5 of them start no block and give no rows."""
    register_data_sources(spark)
    df = (
        spark.read.format(AVRO_FORMAT)
        .option("columns", "userId,MOVIEID,genreFeatures.term")
        .option("splitBytes", "20000")
        .option("batchRows", "40")
        .load(SAMPLE_AVRO)
    )
    assert df.columns == ["userId", "movieId", "genreFeatures"]
    assert df.rdd.getNumPartitions() == 7
    rows = [row.asDict(recursive=True) for row in df.collect()]
    columns = ["userId", "MOVIEID", "genreFeatures.term"]
    expected = [r for b in _kernel_batches(SAMPLE_AVRO, columns) for r in b.to_pylist()]
    assert len(rows) == 300 and rows == expected
    assert rows[0] == {
        "userId": 1,
        "movieId": 1215,
        "genreFeatures": [{"term": t} for t in ["Action", "Adventure", "Comedy", "Fantasy", "Horror"]],
    }


def _batch_summary(batches):
    from beam_tensorize.kernels.provenance import source_of

    for batch in source_batches(batches):
        path, offset = source_of(batch)
        yield pa.RecordBatch.from_pydict(
            {
                "path": [path],
                "offset": [offset],
                "rows": [batch.num_rows],
                "first": [batch.column(0)[0].as_py()],
            }
        )


def test_avro_source_provenance_gives_back_the_reader_batches(spark, small_blocks):
    register_data_sources(spark)
    df = (
        spark.read.format(AVRO_FORMAT)
        .options(columns="userId", provenance="true", splitBytes="20000", batchRows="40")
        .load(small_blocks)
    )
    assert df.columns == ["userId", "_source_file", "_source_offset", "_source_unit"]
    got = df.mapInArrow(_batch_summary, "path string, offset long, rows long, first long").collect()
    from beam_tensorize.kernels.provenance import source_of

    expected = [
        (*source_of(b), b.num_rows, b.column(0)[0].as_py()) for b in _kernel_batches(small_blocks, ["userId"])
    ]
    assert sorted(tuple(r) for r in got) == sorted(expected)
    assert len(expected) > 7 and sum(r["rows"] for r in got) == 300


@pytest.mark.parametrize(
    ("path", "columns", "message"),
    [
        (
            SAMPLE_AVRO,
            "userId,nope",
            "reads column 'nope', which this file does not have; its columns are: response",
        ),
        ("/nowhere/*.avro", "userId", "no Avro file matches the input pattern '/nowhere/\\*.avro'"),
    ],
)
def test_avro_source_errors_name_the_file_and_column(spark, path, columns, message):
    register_data_sources(spark)
    with pytest.raises(Exception, match=message):
        spark.read.format(AVRO_FORMAT).option("columns", columns).load(path).count()


# --- the TFRecord data source --------------------------------------------------------------


def test_tfrecord_source_writes_partition_folders_that_tensorflow_parses(spark, tmp_path):
    import tensorflow as tf

    register_data_sources(spark)
    rows = [(1, "a", [3, 4], 0.5), (1, "b", [], 1.5), (2, "a/b", [7], None)]
    df = spark.createDataFrame(rows, "day int, user string, clicks array<long>, w float").repartition(2)
    out = str(tmp_path / "events")
    df.write.format("tfrecord").mode("overwrite").option("partition_by", "day").option(
        "compression", "gzip"
    ).save(out)
    written = sorted(name for name in _tree(out) if not name.startswith("_"))
    assert {name.split("/")[0] for name in written} == {"day=1", "day=2"}
    assert all(name.split("/")[1].endswith("-of-00002.tfrecord.gz") for name in written)
    assert (tmp_path / "events" / "_SUCCESS").exists() and not (tmp_path / "events" / "_temporary").exists()

    spec = {
        "user": tf.io.FixedLenFeature([], tf.string),
        "clicks": tf.io.VarLenFeature(tf.int64),
        "w": tf.io.VarLenFeature(tf.float32),
    }
    parsed = set()
    for name in written:
        day = int(name.split("/")[0].split("=")[1])
        records = list(tf.data.TFRecordDataset(os.path.join(out, name), compression_type="GZIP"))
        if records:
            features = tf.io.parse_example(tf.stack(records), spec)
            for user, clicks, w in zip(
                features["user"].numpy(),
                tf.sparse.to_dense(features["clicks"]).numpy().tolist(),
                tf.sparse.to_dense(features["w"], default_value=-1.0).numpy().tolist(),
            ):
                parsed.add((day, user.decode(), tuple(c for c in clicks if c), tuple(v for v in w if v >= 0)))
    assert parsed == {(1, "a", (3, 4), (0.5,)), (1, "b", (), (1.5,)), (2, "a/b", (7,), ())}

    back = spark.read.format("tfrecord").load(out)
    assert back.schema.simpleString() == "struct<clicks:array<bigint>,user:string,w:float,day:bigint>"
    got = sorted((r.day, r.user, r.clicks, r.w) for r in back.collect())
    assert got == [(1, "a", [3, 4], 0.5), (1, "b", [], 1.5), (2, "a/b", [7], None)]


def test_tfrecord_source_raw_bytes_sequence_examples_and_save_modes(spark, sample_train, tmp_path):
    register_data_sources(spark)
    spark_train = sample_train[2]
    raw = (
        spark.read.format("tfrecord")
        .option("recordType", "ByteArray")
        .load(str(spark_train / "trainingData"))
    )
    assert raw.columns == ["byteArray"]
    assert sorted(r.byteArray for r in raw.collect()) == _records(spark_train)

    out = str(tmp_path / "sequences")
    schema = "id bigint, steps array<array<bigint>>"
    rows = [(1, [[1, 2], [3]]), (2, [[4], []]), (3, [])]
    seq = spark.createDataFrame(rows, schema).coalesce(1)
    seq.write.format("tfrecord").mode("overwrite").option("recordType", "SequenceExample").save(out)
    assert sorted(n for n in _tree(out) if not n.startswith("_")) == ["part-00000-of-00001.tfrecord"]
    back = spark.read.format("tfrecord").option("recordType", "SequenceExample").schema(schema).load(out)
    assert sorted((r.id, r.steps) for r in back.collect()) == rows

    before = _tree(out)
    with pytest.raises(Exception, match="sequences already holds 1 file"):
        seq.write.format("tfrecord").mode("append").option("saveMode", "error").save(out)
    seq.write.format("tfrecord").mode("append").option("saveMode", "ignore").save(out)
    assert _tree(out) == before
    seq.write.format("tfrecord").mode("append").option("recordType", "SequenceExample").save(out)
    assert "part-00000-of-00001-1.tfrecord" in _tree(out)


def test_the_example_of_docs_spark_md_runs(spark, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("BEAM_TENSORIZE_CACHE", str(tmp_path / "cache"))  # local_session's archive
    docs = os.path.join(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "docs", "spark.md"
    )
    with open(docs, encoding="utf-8") as f:
        example = f.read().split("```python\n", 1)[1].split("```", 1)[0]
    # Spark's workers resolve relative paths in the folder Spark started in: write to tmp_path.
    out = str(tmp_path / "spark_output")
    exec(compile(example.replace('"spark_output"', repr(out)), "docs/spark.md", "exec"), {})
    printed = capsys.readouterr().out
    assert f"300 ['{out}/trainingData/part-00000-of-00002.tfrecord'," in printed
    assert "|userId|" in printed and "genreIds" in printed
    assert (tmp_path / "spark_output" / "_SUCCESS").exists()
    # The session was the test session's (already running), so none was recorded here.
    assert not (tmp_path / "cache").exists()


# --- packaging -----------------------------------------------------------------------------


def test_only_the_spark_package_imports_pyspark():
    """`import beam_tensorize` (and its Beam and kernel modules) works without PySpark."""
    import beam_tensorize

    root = os.path.dirname(beam_tensorize.__file__)
    users = []
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            if name.endswith(".py") and os.sep + "spark" + os.sep not in path:
                with open(path, encoding="utf-8") as f:
                    if any(line.lstrip().startswith(("import pyspark", "from pyspark")) for line in f):
                        users.append(path)
    assert users == []
    blocked = (
        "import sys; sys.modules['pyspark'] = None; import beam_tensorize, beam_tensorize.io, "
        "beam_tensorize.transforms, beam_tensorize.kernels.features.vocab, beam_tensorize.kernels.output.shards; "
        "print(beam_tensorize.Tensorize.__name__)"
    )
    done = subprocess.run([sys.executable, "-c", blocked], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Tensorize"


def test_spark_writes_the_cli_files_one_per_input_split(spark, tmp_path):
    """With no `num_shards`, each Spark task reads its input split and writes its own file (no
    shuffle), and the files are those of the Beam command line, byte for byte."""
    from pipelines.tensorize import main
    from tests.e2e.test_scale import _three_inputs, _tree

    pattern = _three_inputs(tmp_path / "in")
    assert (
        # (no report on either side: the schema's string domains come from the train report)
        main(
            [
                "--input",
                pattern,
                "--config",
                SAMPLE_CONFIG,
                "--output",
                str(tmp_path / "beam"),
                "--quiet",
                "--report",
                "none",
            ]
        )
        == 0
    )
    result = tensorize_spark(spark, pattern, SAMPLE_CONFIG, str(tmp_path / "spark"))
    assert result["numRecords"] == 300
    beam_files = _tree(tmp_path / "beam")
    assert len([f for f in beam_files if f.startswith("trainingData/part-")]) == 3
    assert _tree(tmp_path / "spark") == beam_files
    # read once (the default on a local disk: the batches kept between the two steps) or twice
    tensorize_spark(spark, pattern, SAMPLE_CONFIG, str(tmp_path / "twice"), input_passes=2)
    assert _tree(tmp_path / "twice") == beam_files
    assert not (tmp_path / "spark" / "_temporary").exists()


def test_records_that_do_not_decode_are_the_cli_s_dead_letters(spark, tmp_path):
    """Spark tasks give undecodable Avro records as dead letters, as the Beam job does: the
    same files, dead letters and counts as the command line."""
    from pipelines.tensorize import main
    from tests.conftest import UNDECODABLE_CONFIG, write_undecodable_avro
    from tests.e2e.test_scale import _tree

    path = write_undecodable_avro(tmp_path / "bad.avro")
    config = tmp_path / "config.json"
    config.write_text(json.dumps(UNDECODABLE_CONFIG))
    common = ["--input", path, "--config", str(config), "--max_bad_records_ratio", "0.25", "--quiet"]
    assert main([*common, "--output", str(tmp_path / "beam"), "--report", "none"]) == 0
    result = tensorize_spark(spark, path, str(config), str(tmp_path / "spark"), max_bad_records_ratio=0.25)
    assert (result["numRecords"], result["badRecords"]) == (15, 5)
    beam_files = _tree(tmp_path / "beam")
    assert "deadLetters/trainingData/part-00000-of-00001.jsonl" in beam_files
    assert _tree(tmp_path / "spark") == beam_files
    # the dead letters of the one read travel in the kept file; reading twice gives the same
    tensorize_spark(
        spark, path, str(config), str(tmp_path / "twice"), max_bad_records_ratio=0.25, input_passes=2
    )
    assert _tree(tmp_path / "twice") == beam_files


def test_shared_ntv_lists_by_term_discarded_unknowns_and_integer_maxima_as_the_cli(spark, tmp_path):
    """Avro2TF's rules on both engines: NTV tensors sharing a list by term, entries beyond
    the caps discarded, numUniqueValues of an int column its maximum: the same files."""
    from pipelines.tensorize import main
    from tests.e2e.test_scale import _tree

    vector = {"columnConfig": {"genreFeatures": {"whitelist": ["*"]}}}
    config = tmp_path / "config.json"
    config.write_text(json.dumps({"features": [
        {"inputFeatureInfo": vector,
         "outputTensorInfo": {"name": "v1", "dtype": "float", "shape": [], "isSparse": True, "vocabSizeCap": 5}},
        {"inputFeatureInfo": vector, "outputTensorInfo": {"name": "v2", "dtype": "float", "shape": []}},
        {"inputFeatureInfo": {"columnExpr": "genreFeatures.term"},
         "outputTensorInfo": {"name": "ids", "dtype": "long", "shape": [-1], "vocabSizeCap": 4}},
        {"inputFeatureInfo": {"columnExpr": "size(genreFeatures)"},
         "outputTensorInfo": {"name": "numGenres", "dtype": "int", "shape": []}},
    ]}))  # fmt: skip
    flags = [
        "--tensors_sharing_feature_lists",
        "v1,v2",
        "--discard_unknown_entries",
        "--term_only_feature_lists",
    ]
    assert (
        main(["--input", SAMPLE_AVRO, "--config", str(config), "--output", str(tmp_path / "beam"), *flags])
        == 0
    )
    tensorize_spark(
        spark, SAMPLE_AVRO, str(config), str(tmp_path / "spark"),
        shared_feature_lists=[["v1", "v2"]], discard_unknown_entries=True, term_only_feature_lists=True,
    )  # fmt: skip
    beam_files = _tree(tmp_path / "beam")
    assert _tree(tmp_path / "spark") == beam_files
    lists = tmp_path / "beam" / "featureList"
    assert (lists / "v2").read_text() == (lists / "v1").read_text()
    assert len((lists / "v1").read_text().splitlines()) == 5
    assert sorted(os.listdir(tmp_path / "beam" / "termOnlyFeatureList")) == ["ids", "v1", "v2"]
    metadata = _metadata(tmp_path / "beam")
    by_name = {t["name"]: t for t in metadata["features"]}
    assert by_name["v2"]["shape"] == [5] and by_name["numGenres"]["numUniqueValues"] >= 1


def test_tfrecord_source_codec_option_and_unknown_options(spark, tmp_path):
    """Spark-TFRecord's `codec` takes Hadoop codec class names; a codec TensorFlow cannot
    read, and an option the source does not know, are errors rather than ignored."""
    import tensorflow as tf

    register_data_sources(spark)
    df = spark.createDataFrame([(1, "a"), (2, None)], "id long, name string").coalesce(1)
    out = str(tmp_path / "gz")
    df.write.format("tfrecord").mode("overwrite").option(
        "codec", "org.apache.hadoop.io.compress.GzipCodec"
    ).save(out)
    (name,) = [n for n in _tree(out) if n.startswith("part-")]
    assert name == "part-00000-of-00001.tfrecord.gz"
    records = [
        tf.train.Example.FromString(r.numpy())
        for r in tf.data.TFRecordDataset(os.path.join(out, name), "GZIP")
    ]
    assert [sorted(e.features.feature) for e in records] == [["id", "name"], ["id"]]  # the null is left out
    assert sorted(tuple(r) for r in spark.read.format("tfrecord").load(out).collect()) == [
        (1, "a"),
        (2, None),
    ]

    for option, value, message in [
        (
            "codec",
            "org.apache.hadoop.io.compress.SnappyCodec",
            "is not supported: TensorFlow reads only GZIP",
        ),
        ("codec", "lzo", "option codec 'lzo' is not a known codec"),
        ("recordTyp", "Example", "unknown option(s) recordtyp when writing"),
    ]:
        with pytest.raises(Exception, match=re.escape(message)):
            df.write.format("tfrecord").mode("overwrite").option(option, value).save(str(tmp_path / "x"))
    with pytest.raises(Exception, match=re.escape("unknown option(s) codec when reading")):
        spark.read.format("tfrecord").option("codec", "gzip").load(out).collect()


def test_tfrecord_source_decimals_and_an_unsupported_type_without_rows(spark, tmp_path):
    """Spark-TFRecord writes DecimalType as a FloatList (scalar, array, array of arrays) and
    reads it back into the decimal column of a given schema; a type it cannot write fails
    even when the DataFrame has no rows."""
    from decimal import Decimal

    import tensorflow as tf

    register_data_sources(spark)
    schema = "d decimal(6,2), ds array<decimal(6,2)>"
    df = spark.createDataFrame([(Decimal("1.25"), [Decimal("0.50"), Decimal("2.00")]), (None, [])], schema)
    out = str(tmp_path / "dec")
    df.coalesce(1).write.format("tfrecord").mode("overwrite").save(out)
    (name,) = [n for n in _tree(out) if n.startswith("part-")]
    first = tf.train.Example.FromString(next(iter(tf.data.TFRecordDataset(os.path.join(out, name)))).numpy())
    assert list(first.features.feature["d"].float_list.value) == [1.25]
    back = spark.read.format("tfrecord").schema(schema).load(out)
    assert sorted(back.collect(), key=str) == sorted(df.collect(), key=str)

    nested = "id long, steps array<array<decimal(6,2)>>"
    seq = spark.createDataFrame([(1, [[Decimal("1.50")], [Decimal("2.25"), Decimal("3.00")]])], nested)
    seq_out = str(tmp_path / "seq")
    seq.write.format("tfrecord").mode("overwrite").option("recordType", "SequenceExample").save(seq_out)
    read = spark.read.format("tfrecord").option("recordType", "SequenceExample").schema(nested).load(seq_out)
    assert [tuple(r) for r in read.collect()] == [tuple(r) for r in seq.collect()]

    empty = spark.createDataFrame([], "id long, pos struct<x: int, y: int>")
    with pytest.raises(Exception, match=re.escape("tfrecord: cannot write Example records: column 'pos'")):
        empty.write.format("tfrecord").mode("overwrite").save(str(tmp_path / "never"))
    assert not (tmp_path / "never").exists()


def test_tokenization_gives_spark_ml_s_tokens_as_avro2tf_does(spark):
    """Avro2TF tokenizes with Spark ML's RegexTokenizer (pattern \\W) and StopWordsRemover;
    our kernel gives the same tokens on the same text, stop words removed or not."""
    from pyspark.ml.feature import RegexTokenizer, StopWordsRemover

    from beam_tensorize.kernels.features.tokenize import ENGLISH_STOP_WORDS, tokenize

    texts = [
        "The Matrix (1999) would've been THE best!",
        "Café naïve Ünïcode_word and snake_case-words; won't d ll re ve won",
        "  leading and trailing   ",
        "",
        "It's 3.14 o'clock, isn't it? Who'd've thought",
        "Straße ΣΟΦΙΑ ﬁ ligature, tab\there\nnewline",
    ]
    df = spark.createDataFrame([(t,) for t in texts], "text string")
    tokens = RegexTokenizer(inputCol="text", outputCol="tokens", pattern="\\W").transform(df)
    removed = StopWordsRemover(inputCol="tokens", outputCol="kept").transform(tokens)
    rows = removed.collect()
    assert set(StopWordsRemover.loadDefaultStopWords("english")) == ENGLISH_STOP_WORDS
    column = pa.array(texts)
    assert tokenize(column).to_pylist() == [list(r.tokens) for r in rows]
    assert tokenize(column, remove_stop_words=True).to_pylist() == [list(r.kept) for r in rows]


def test_partition_ids_give_the_cli_files(spark, tmp_path):
    """Avro2TF's partition ids (`partitionId`, `partition=<id>/`) and a seeded shuffle: the
    same files on Spark."""
    from pipelines.tensorize import main
    from tests.e2e.test_scale import _tree

    flags = ["--partition_field_name", "movieId", "--num_partitions", "3", "--shuffle", "--shuffle_seed", "7"]
    flags += ["--report", "none"]  # as the Spark run (the schema's string domains come from a report)
    out = tmp_path / "beam"
    assert (
        main(["--input", SAMPLE_AVRO, "--config", SAMPLE_CONFIG, "--output", str(out), *flags, "--quiet"])
        == 0
    )
    tensorize_spark(
        spark,
        SAMPLE_AVRO,
        SAMPLE_CONFIG,
        str(tmp_path / "spark"),
        partition_field_name="movieId",
        num_partitions=3,
        shuffle=True,
        shuffle_seed=7,
    )
    beam_files = _tree(out)
    assert {name.split("/")[1] for name in beam_files if name.startswith("trainingData/partition=")} == {
        "partition=0", "partition=1", "partition=2"
    }  # fmt: skip
    assert _tree(tmp_path / "spark") == beam_files


@pytest.mark.parametrize("shards", [None, 2])
def test_avro_output_gives_the_cli_files(spark, tmp_path, shards):
    """Avro output (Avro2TF's default): the same files on Spark as on Beam, with one file per
    input split or `num_shards` files."""
    from pipelines.tensorize import main
    from tests.e2e.test_scale import _tree

    flags = ["--output_format", "avro", "--quiet"] + ([] if shards is None else ["--num_shards", str(shards)])
    assert (
        main(["--input", SAMPLE_AVRO, "--config", AVRO2TF_CONFIG, "--output", str(tmp_path / "beam"), *flags])
        == 0
    )
    tensorize_spark(
        spark, SAMPLE_AVRO, AVRO2TF_CONFIG, str(tmp_path / "spark"), num_shards=shards, output_format="avro"
    )
    beam_files = _tree(tmp_path / "beam")
    assert len([n for n in beam_files if n.startswith("trainingData/part-") and n.endswith(".avro")]) == (
        shards or 1
    )
    assert _tree(tmp_path / "spark") == beam_files


def _report_without_timings(out, split="trainingData") -> dict:
    document = json.loads((out / "report" / f"{split}.json").read_text())
    assert set(document["timings"]) >= {"statistics", "readAndExtract", "writeReport"}
    document.pop("timings")
    return document


@pytest.mark.parametrize("shards", [None, 2])
def test_the_run_report_is_the_cli_s(spark, small_blocks, tmp_path, shards):
    """`report=` on Spark: each task's statistics, merged on the driver, give the command
    line's report (every statistic, per-file counts, dead letters, drift), `timings` aside;
    with or without `num_shards`, the input read as 7 splits on Spark and one on Beam."""
    from pipelines.tensorize import main
    from tests.conftest import UNDECODABLE_CONFIG, write_undecodable_avro

    shard_flags = ["--num_shards", str(shards)] if shards else []
    spark_shards = {"num_shards": shards} if shards else {}
    # The sample config (numbers, lists, strings, feature lists, hashing, an NTV vector) read
    # as several splits; then a validation run against it: drift.
    for mode, split in (("train", "trainingData"), ("validation", "validationData")):
        flags = ["--input", small_blocks, "--config", SAMPLE_CONFIG, "--quiet", "--execution_mode", mode]
        flags += ["--report", "html", "--batch_rows", "40", *shard_flags]
        assert main([*flags, "--output", str(tmp_path / "beam")]) == 0
        tensorize_spark(
            spark, small_blocks, SAMPLE_CONFIG, str(tmp_path / "spark"), mode, report="html",
            **SMALL_READS, **spark_shards,
        )  # fmt: skip
        expected = _report_without_timings(tmp_path / "beam", split)
        assert _report_without_timings(tmp_path / "spark", split) == expected
        assert (tmp_path / "spark" / "report" / f"{split}.html").stat().st_size > 10_000
        stats = f"report/{split}.stats.pb"  # TFDV's statistics, from the same sketches
        assert (tmp_path / "spark" / stats).read_bytes() == (tmp_path / "beam" / stats).read_bytes()
    assert expected["rowsRead"] == 300 and "drift" in expected
    assert {t["name"] for t in expected["tensors"]} >= {"genreVector", "movieBucket", "genres"}

    # Records that do not decode and rows that do not convert: the per-file counts and the
    # dead letters grouped by reason. (With `num_shards` Spark reads through its data source,
    # which fails on a record that does not decode instead of setting it aside.)
    if shards:
        return
    path = write_undecodable_avro(tmp_path / "bad.avro")
    config = tmp_path / "config.json"
    config.write_text(json.dumps(UNDECODABLE_CONFIG))
    flags = ["--input", path, "--config", str(config), "--max_bad_records_ratio", "0.25", "--quiet"]
    assert main([*flags, "--report", "json", "--output", str(tmp_path / "beam-bad")]) == 0
    tensorize_spark(
        spark, path, str(config), str(tmp_path / "spark-bad"), max_bad_records_ratio=0.25, report="json"
    )
    expected = _report_without_timings(tmp_path / "beam-bad")
    assert _report_without_timings(tmp_path / "spark-bad") == expected
    assert (expected["rowsRead"], expected["badRows"]) == (20, 5)
    assert not (tmp_path / "spark-bad" / "report" / "trainingData.html").exists()


def test_no_report_unless_asked_for(sample_train):
    """`tensorize_spark`'s default is `Tensorize`'s: no report."""
    _, _, spark_out, *_ = sample_train
    assert not (spark_out / "report").exists()


def test_avro_schema_evolution_gives_the_beam_files(spark, tmp_path):
    """An early file without a field that a later schema adds with a default: both runtimes
    read the early rows as the default (as Avro2TF's Spark job does), file for file."""
    with open(SAMPLE_AVRO, "rb") as f:
        reader = fastavro.reader(f)
        schema, records = reader.writer_schema, list(reader)
    folder = tmp_path / "in"
    folder.mkdir()
    with open(folder / "a.avro", "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), records[:100])
    later = {k: v for k, v in schema.items() if not k.startswith("__")}
    later["fields"] = [*later["fields"], {"name": "rating", "type": "double", "default": 2.5}]
    with open(folder / "b.avro", "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(later), [dict(r, rating=4.0) for r in records[100:]])
    raw = json.loads(open(SAMPLE_CONFIG).read())
    raw["features"].append({"outputTensorInfo": {"name": "rating", "dtype": "double", "shape": []}})
    config = parse_config(raw)
    _beam(config, tmp_path / "beam", inputs=str(folder / "*.avro"))
    result = tensorize_spark(spark, str(folder / "*.avro"), config, str(tmp_path / "spark"))
    assert result["numRecords"] == 300
    _assert_same_output(tmp_path / "beam", tmp_path / "spark")
    import tensorflow as tf

    ratings = sorted(
        tf.train.Example.FromString(r).features.feature["rating"].float_list.value[0]
        for r in _records(tmp_path / "spark")
    )
    assert ratings == [2.5] * 100 + [4.0] * 200


def test_tfrecord_source_takes_partition_by_and_every_spark_save_mode(spark, tmp_path):
    """Spark-TFRecord users' habits: `.partitionBy(...)` and a plain `.save()` (Spark's
    `errorifexists`), which Spark refuses for Python data sources, write as the options do;
    other formats are written as before."""
    register_data_sources(spark)
    df = spark.createDataFrame(
        [(1, "a", 2.0), (2, "b", 3.0), (3, "a", None)], "id long, day string, x double"
    )
    df = df.coalesce(1)
    habit, option = str(tmp_path / "habit"), str(tmp_path / "option")
    df.write.format("tfrecord").partitionBy("day").save(habit)
    df.write.format("tfrecord").mode("append").option("saveMode", "error").option("partition_by", "day").save(
        option
    )
    assert _tree(habit) == _tree(option)
    assert sorted(n for n in _tree(habit) if not n.startswith("_")) == [
        "day=a/part-00000-of-00001.tfrecord",
        "day=b/part-00000-of-00001.tfrecord",
    ]
    # errorifexists over an existing output: one line from the driver, nothing written
    before = _tree(habit)
    with pytest.raises(FileExistsError, match=r"habit already holds 2 file\(s\) \(e\.g\. .*day=a/part-00000"):
        df.write.format("tfrecord").partitionBy("day").save(habit)
    df.write.mode("ignore").partitionBy("day").format("tfrecord").save(habit)  # any order of calls
    assert _tree(habit) == before
    df.write.save(habit, format="tfrecord", mode="overwrite", partitionBy="id")  # save's own arguments
    assert sorted(n.split("/")[0] for n in _tree(habit) if not n.startswith("_")) == ["id=1", "id=2", "id=3"]
    with pytest.raises(ValueError, match=r"partitionBy\('day'\) and option partition_by='id' differ"):
        df.write.format("tfrecord").option("partition_by", "id").partitionBy("day").save(str(tmp_path / "x"))
    # other formats: Spark's own partitionBy and modes, untouched
    parquet = str(tmp_path / "parquet")
    df.write.partitionBy("day").parquet(parquet)
    assert {n.split("/")[0] for n in _tree(parquet) if n.startswith("day=")} == {"day=a", "day=b"}
    with pytest.raises(Exception, match="PATH_ALREADY_EXISTS"):
        df.write.format("parquet").save(parquet)
    back = spark.read.format("tfrecord").load(option)
    assert sorted((r.id, r.day, r.x) for r in back.collect()) == [
        (1, "a", 2.0),
        (2, "b", 3.0),
        (3, "a", None),
    ]


def test_the_data_sources_take_file_uris_as_spark_users_write_them(spark, tmp_path):
    """`.save("file:///...")` and `.load("file:/...")`, Spark's own spellings of local paths."""
    register_data_sources(spark)
    rows = spark.createDataFrame([(1, "a"), (2, "b")], "id bigint, name string").coalesce(1)
    rows.write.format("tfrecord").mode("overwrite").save(f"file://{tmp_path}/out")
    assert sorted(os.listdir(tmp_path / "out")) == ["_SUCCESS", "part-00000-of-00001.tfrecord"]
    back = spark.read.format("tfrecord").load(f"file:{tmp_path}/out")
    assert sorted((r.id, r.name) for r in back.collect()) == [(1, "a"), (2, "b")]
    with pytest.raises(Exception, match="a file URI of another host"):
        spark.read.format("tfrecord").load("file://elsewhere/out").collect()
