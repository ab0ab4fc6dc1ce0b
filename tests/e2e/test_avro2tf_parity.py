"""Parity with Avro2TF: what a migrating user gets with the same config and flags, checked
against Avro2TF's documented rules (its README and main sources), on inputs built here."""

from __future__ import annotations

import json

import fastavro
import pyarrow as pa
import pytest

from pipelines.tensorize import main

pytestmark = pytest.mark.pipeline

_SCHEMA = {
    "type": "record",
    "name": "Row",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "response", "type": "int"},
        {"name": "score", "type": "double"},
    ],
}

_LABEL_CONFIG = {
    "features": [
        {"outputTensorInfo": {"name": "id", "dtype": "long", "shape": []}},
        {"outputTensorInfo": {"name": "score", "dtype": "double", "shape": []}},
    ],
    "labels": [{"outputTensorInfo": {"name": "response", "dtype": "int", "shape": []}}],
}


def _avro(path, rows) -> str:
    with open(path, "wb") as f:
        fastavro.writer(f, _SCHEMA, rows)
    return str(path)


def _metadata(out) -> dict[str, dict]:
    document = json.loads((out / "metadata" / "tensor_metadata.json").read_text())
    return {t["name"]: t for t in document["features"] + document["labels"]}


def test_num_unique_values_of_integer_columns_is_their_largest_train_value(tmp_path):
    """TensorMetadataGeneration: an int / long column's cardinality is its maximum (a 0/1
    label gives 1), computed in train mode; validation runs keep it; appending adds the new
    data's values."""
    config = tmp_path / "config.json"
    config.write_text(json.dumps(_LABEL_CONFIG))
    train = _avro(tmp_path / "train.avro", [{"id": i, "response": i % 2, "score": 0.5} for i in range(40)])
    out = tmp_path / "out"
    common = ["--config", str(config), "--output", str(out), "--quiet"]
    assert main(["--input", train, *common]) == 0
    tensors = _metadata(out)
    assert tensors["response"]["numUniqueValues"] == 1
    assert tensors["id"]["numUniqueValues"] == 39
    assert tensors["score"]["numUniqueValues"] is None

    validation = _avro(tmp_path / "validation.avro", [{"id": 500, "response": 7, "score": 1.0}])
    assert main(["--input", validation, *common, "--execution_mode", "validation"]) == 0
    assert (_metadata(out)["response"]["numUniqueValues"], _metadata(out)["id"]["numUniqueValues"]) == (1, 39)

    more = _avro(tmp_path / "more.avro", [{"id": 3, "response": 4, "score": 1.0}])
    assert main(["--input", more, *common, "--save_mode", "append"]) == 0
    assert (_metadata(out)["response"]["numUniqueValues"], _metadata(out)["id"]["numUniqueValues"]) == (4, 39)


_CAPPED_GENRES = {
    "features": [
        {
            "inputFeatureInfo": {"columnExpr": "genreFeatures.term"},
            "outputTensorInfo": {"name": "genreIds", "dtype": "long", "shape": [-1], "vocabSizeCap": 3},
        },
        {
            "inputFeatureInfo": {"columnConfig": {"genreFeatures": {"whitelist": ["*"]}}},
            "outputTensorInfo": {"name": "genreVector", "dtype": "float", "shape": [], "isSparse": True,
                                 "vocabSizeCap": 3},
        },
    ]
}  # fmt: skip


def _sample_genres() -> list[list[dict]]:
    from beam_tensorize.sample import SAMPLE_AVRO

    with open(SAMPLE_AVRO, "rb") as f:
        return [row["genreFeatures"] or [] for row in fastavro.reader(f)]


def test_discard_unknown_entries_leaves_entries_out_of_the_list_out(tmp_path):
    """FeatureIndicesConversion with --discard-unknown-entries: entries beyond the 3 kept are
    dropped from id lists and sparse vectors (no unknown id); the metadata counts 3."""
    from collections import Counter

    import tensorflow as tf

    from beam_tensorize.sample import SAMPLE_AVRO

    config = tmp_path / "config.json"
    config.write_text(json.dumps(_CAPPED_GENRES))
    out = tmp_path / "out"
    args = ["--input", SAMPLE_AVRO, "--config", str(config), "--output", str(out), "--quiet"]
    assert main([*args, "--discard_unknown_entries"]) == 0

    genres = _sample_genres()
    counts = Counter(g["term"] for row in genres for g in row)
    top = sorted(counts, key=lambda t: (-counts[t], t.encode()))[:3]
    assert (out / "featureList" / "genreIds").read_text().splitlines() == top
    tensors = _metadata(out)
    assert (tensors["genreIds"]["numUniqueValues"], tensors["genreIds"]["featureList"]["unknownId"]) == (
        3,
        None,
    )
    assert (tensors["genreVector"]["shape"], tensors["genreVector"]["numUniqueValues"]) == ([3], None)

    (path,) = (out / "trainingData").glob("part-*.tfrecord")
    examples = [
        tf.train.Example.FromString(r.numpy()).features.feature for r in tf.data.TFRecordDataset(str(path))
    ]
    assert len(examples) == len(genres)
    for row, feature in zip(genres, examples):
        assert list(feature["genreIds"].int64_list.value) == [
            top.index(g["term"]) for g in row if g["term"] in top
        ]
        names = [f"{g['name']},{g['term']}" for g in row]
        vector_list = (out / "featureList" / "genreVector").read_text().splitlines()
        assert sorted(feature["genreVector/indices"].int64_list.value) == sorted(
            {vector_list.index(n) for n in names if n in vector_list}
        )


def test_extra_columns_as_expressions_with_aliases(tmp_path, capsys):
    """Avro2TF's --extra-columns-to-keep 'expr:alias': an expression kept under the alias;
    an unnamed field access is named by its field, as Spark names it."""
    import tensorflow as tf

    from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG

    out = tmp_path / "out"
    args = ["--input", SAMPLE_AVRO, "--config", SAMPLE_CONFIG, "--output", str(out), "--quiet"]
    assert (
        main([*args, "--extra_columns_to_keep", "userId:user, genreFeatures.term:terms,genreFeatures.name"])
        == 0
    )
    with open(SAMPLE_AVRO, "rb") as f:
        rows = list(fastavro.reader(f))
    records = [
        tf.train.Example.FromString(r.numpy()).features.feature
        for path in sorted((out / "trainingData").glob("part-*.tfrecord"))
        for r in tf.data.TFRecordDataset(str(path))
    ]
    assert [
        (list(f["user"].int64_list.value), [t.decode() for t in f["terms"].bytes_list.value]) for f in records
    ] == [([row["userId"]], [g["term"] for g in row["genreFeatures"] or []]) for row in rows]
    assert all(set(t.decode() for t in f["name"].bytes_list.value) <= {"Genre"} for f in records)
    document = json.loads((out / "metadata" / "tensor_metadata.json").read_text())
    assert [c["name"] for c in document["extraColumns"]] == ["user", "terms", "name"]

    capsys.readouterr()
    for value, message in [
        ("a:b:c", "extra column 'a:b:c': give a column, or 'expression:name' with one ':'"),
        ("lower(title)", "extra column 'lower(title)' is an expression: name it, e.g. 'lower(title):name'"),
        ("userId:movieId", "extra columns ['movieId'] have the names of tensors"),
    ]:
        assert main([*args, "--extra_columns_to_keep", value, "--save_mode", "overwrite"]) == 2
        assert f"error: {message}" in capsys.readouterr().err


def test_avro2tf_flag_names_run_the_same_job(tmp_path, capsys):
    """Avro2TF's hyphenated flags are aliases; flags meaningless on Beam give a note; flags
    of features not built yet are refused in one line."""
    from beam_tensorize.sample import AVRO2TF_CONFIG, SAMPLE_AVRO
    from tests.e2e.test_scale import _tree

    ours = ["--input", SAMPLE_AVRO, "--output", str(tmp_path / "ours"), "--config", AVRO2TF_CONFIG,
            "--execution_mode", "train", "--filter_zeros", "--quiet"]  # fmt: skip
    theirs = ["--input-paths", SAMPLE_AVRO, "--working-dir", str(tmp_path / "theirs"),
              f"--avro2tf-config-path={AVRO2TF_CONFIG}", "--execution-mode", "training",
              "--enable-filter-zero", "true", "--enable-cache", "true", "--min-parts", "10",
              "--num-output-files", "-1"]  # fmt: skip
    assert main(ours) == 0
    capsys.readouterr()
    assert main(theirs) == 0
    err = capsys.readouterr().err
    assert "--enable-cache" not in err and "note: --min-parts: Beam plans" in err  # cache: --input_passes 1
    assert _tree(tmp_path / "theirs") == _tree(tmp_path / "ours")
    # --skip-conversion: the feature lists and the metadata, no records.
    skipped = ["--working-dir", str(tmp_path / "skipped"), "--skip-conversion", "true"]
    capsys.readouterr()
    assert main([*theirs[:2], *skipped, *theirs[4:]]) == 0
    assert not (tmp_path / "skipped" / "trainingData").exists()
    assert (tmp_path / "skipped" / "_SUCCESS").exists()  # the job is complete
    summary = capsys.readouterr().out
    assert "  files:         none (--skip_conversion: the feature lists and the metadata only)\n" in summary
    assert "report:" not in summary  # none is written
    assert (tmp_path / "skipped" / "featureList" / "genreFeatures").read_text() == (
        tmp_path / "ours" / "featureList" / "genreFeatures"
    ).read_text()
    metadata = json.loads((tmp_path / "skipped" / "metadata" / "tensor_metadata.json").read_text())
    assert (
        metadata["data"] == {}
        and metadata["features"]
        == json.loads((tmp_path / "ours" / "metadata" / "tensor_metadata.json").read_text())["features"]
    )


def test_term_only_feature_lists(tmp_path):
    """FeatureListGeneration's term-only lists: each list tensor's terms counted alone (NTV
    names left out), by count then term, cut to the tensor's own vocabSizeCap as
    writeTermOnlyFeatureList cuts it; an overwrite without them removes them."""
    from collections import Counter

    from beam_tensorize.sample import SAMPLE_AVRO

    config = tmp_path / "config.json"
    config.write_text(json.dumps(_CAPPED_GENRES))
    out = tmp_path / "out"
    args = ["--input", SAMPLE_AVRO, "--config", str(config), "--output", str(out), "--quiet"]
    assert main([*args, "--enable-term-only-feature-list", "true"]) == 0
    counts = Counter(g["term"] for row in _sample_genres() for g in row)
    expected = sorted(counts, key=lambda t: (-counts[t], t.encode()))
    folder = out / "termOnlyFeatureList"
    assert sorted(p.name for p in folder.iterdir()) == ["genreIds", "genreVector"]
    # "Genre,Drama" -> "Drama"; both cut to their vocabSizeCap 3
    assert (folder / "genreVector").read_text().splitlines() == expected[:3]
    assert (folder / "genreIds").read_text().splitlines() == expected[:3]
    assert len((out / "featureList" / "genreIds").read_text().splitlines()) == 3
    assert main([*args, "--save_mode", "overwrite"]) == 0
    assert not folder.exists() or not list(folder.iterdir())


def test_daily_inputs_by_date_or_days_range(tmp_path, capsys):
    """IOUtils' daily layout: <input>/daily/yyyy/MM/dd/; missing days are skipped with a note,
    files named _* or .* are left out, and the two ranges exclude each other."""
    import datetime
    import shutil

    from beam_tensorize.job.daily import day_folders
    from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG

    root = tmp_path / "events"
    for day in ("2018/01/01", "2018/01/03"):
        (root / "daily" / day).mkdir(parents=True)
        shutil.copy(SAMPLE_AVRO, root / "daily" / day / "part-0.avro")
        (root / "daily" / day / "_SUCCESS").write_bytes(b"")
    (root / "daily" / "2018" / "01" / "04").mkdir()  # an existing but empty day
    out = tmp_path / "out"
    args = ["--input-paths", str(root), "--config", SAMPLE_CONFIG, "--output", str(out)]
    assert main([*args, "--input-date-range", "20180101-20180104", "--progress_interval", "60"]) == 0
    err = capsys.readouterr().err
    assert (
        f"note: 2 day folder(s) of the range hold no files (missing or empty) and are skipped: "
        f"{root}/daily/2018/01/02, {root}/daily/2018/01/04"
    ) in err
    document = json.loads((out / "metadata" / "tensor_metadata.json").read_text())
    assert document["data"]["trainingData"]["numRecords"] == 600

    assert day_folders("r", days_range="0-0", today=datetime.date(2018, 1, 3)) == ["r/daily/2018/01/03"]
    for flags, message in [
        (["--input_date_range", "20180101-20180103", "--input_days_range", "3-1"],
         "give either --input_date_range or --input_days_range, not both"),
        (["--input_date_range", "2018-01-01"], "--input_date_range '2018-01-01': give two dates as yyyyMMdd-yyyyMMdd"),
        (["--input_date_range", "20180103-20180101"], "the range ends before it starts (2018-01-03 > 2018-01-01)"),
        (["--input_date_range", "20170101-20170102"], "no day folder of the range '20170101-20170102' holds files"),
    ]:  # fmt: skip
        assert main([*args, *flags, "--save_mode", "overwrite"]) == 2
        assert message in capsys.readouterr().err


def test_partition_ids_as_partition_id_generation(tmp_path):
    """PartitionIdGeneration: MD5 of the field's text with Avro2TF's global salt, modulo
    --num-partitions, as `partitionId` in the records and `partition=<id>/` folders."""
    import hashlib

    import tensorflow as tf

    from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG

    out = tmp_path / "out"
    args = ["--input", SAMPLE_AVRO, "--config", SAMPLE_CONFIG, "--output", str(out), "--quiet"]
    assert main([*args, "--partition-field-name", "movieId", "--num-partitions", "4"]) == 0
    with open(SAMPLE_AVRO, "rb") as f:
        movies = [row["movieId"] for row in fastavro.reader(f)]

    def expected(value) -> int:  # HashingUtils.md5 with the global salt of seed 817294693
        return int.from_bytes(hashlib.md5(f"{value}HlHffttmhdWWvj8M".encode()).digest(), "big") % 4

    folders = sorted(p.name for p in (out / "trainingData").iterdir() if p.is_dir())
    assert folders == [f"partition={i}" for i in sorted({expected(m) for m in movies})]
    seen = []
    for folder in folders:
        for path in sorted((out / "trainingData" / folder).glob("part-*")):
            for record in tf.data.TFRecordDataset(str(path)):
                feature = tf.train.Example.FromString(record.numpy()).features.feature
                movie = feature["movieId"].int64_list.value[0]
                assert [int(folder.split("=")[1])] == list(feature["partitionId"].int64_list.value)
                assert feature["partitionId"].int64_list.value[0] == expected(movie)
                seen.append(movie)
    assert sorted(seen) == sorted(movies)
    document = json.loads((out / "metadata" / "tensor_metadata.json").read_text())
    assert document["extraColumns"] == []
    entry = document["features"][-1]  # TensorMetadataGeneration: TensorMetadata(partitionId, int, [], N)
    assert {k: entry[k] for k in ("name", "dtype", "shape", "isSparse", "numUniqueValues")} == {
        "name": "partitionId", "dtype": "int", "shape": [], "isSparse": False, "numUniqueValues": 4,
    }  # fmt: skip
    assert entry["parse"] == {"type": "FixedLenFeature", "key": "partitionId", "dtype": "int64", "shape": []}
    from beam_tensorize.tf import make_dataset

    (batch,) = make_dataset(str(out), batch_size=300, labels=False)
    ids = batch["partitionId"].numpy().tolist()  # one scalar per record
    assert sorted(ids) == sorted(expected(m) for m in movies)
    assert batch["partitionId"].shape == (300,)


def test_shuffle_is_seeded_and_deterministic(tmp_path):
    """--shuffle (Avro2TF's, made deterministic): the same records in another order, the same
    bytes on a rerun with the same seed, another order with another seed."""
    import tensorflow as tf

    from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG

    def records(*flags) -> list[bytes]:
        out = tmp_path / "-".join(flags or ("plain",))
        args = ["--input", SAMPLE_AVRO, "--config", SAMPLE_CONFIG, "--output", str(out), "--quiet", *flags]
        assert main(args) == 0
        (path,) = (out / "trainingData").glob("part-*.tfrecord")
        return [r.numpy() for r in tf.data.TFRecordDataset(str(path))]

    plain = records()
    shuffled = records("--shuffle")
    assert shuffled != plain and sorted(shuffled) == sorted(plain)
    assert records("--shuffle", "--shuffle_seed", "0") == shuffled
    other = records("--shuffle", "--shuffle_seed", "5")
    assert other != shuffled and sorted(other) == sorted(plain)


def test_avro_output_holds_the_tensors_of_the_parquet_output(tmp_path):
    """--output_format avro (Avro2TF's default): one record per row, the tensors as fields, a
    sparse tensor as a record {indices, values}; the same values as the Parquet output, the
    same bytes on a rerun."""
    import hashlib

    import pyarrow.parquet as pq

    from beam_tensorize.kernels.output.avro import avro_schema
    from beam_tensorize.sample import AVRO2TF_CONFIG, SAMPLE_AVRO

    def run(fmt: str, name: str):
        out = tmp_path / name
        args = ["--input", SAMPLE_AVRO, "--config", AVRO2TF_CONFIG, "--output", str(out), "--quiet"]
        assert main([*args, "--output-format", fmt]) == 0
        (path,) = (out / "trainingData").glob(f"part-*.{fmt}")
        return out, path

    out, avro_path = run("avro", "avro")
    _, again = run("avro", "again")
    assert hashlib.md5(avro_path.read_bytes()).digest() == hashlib.md5(again.read_bytes()).digest()
    _, parquet_path = run("parquet", "parquet")
    with open(avro_path, "rb") as f:
        records = list(fastavro.reader(f))
    table = pq.read_table(parquet_path).to_pylist()
    assert len(records) == len(table) == 300
    sparse = {
        "genreFeatures",
        "genreFeatures_movieLatentFactorFeatures",
        "genreFeatures_movieLatentFactorFeatures_response",
    }
    for record, row in zip(records, table):
        for name, value in record.items():
            if name in sparse:
                assert value == {"indices": row[f"{name}/indices"], "values": row[f"{name}/values"]}
            else:
                assert value == row[name], name
    document = json.loads((out / "metadata" / "tensor_metadata.json").read_text())
    assert document["data"]["trainingData"]["format"] == "avro"
    with pytest.raises(ValueError, match="'x/indices' is not an Avro field name"):
        avro_schema(pa.schema([("x/indices", pa.int64())]))


def test_avro2tf_flag_names_with_underscores_and_notes():
    from pipelines.avro2tf_flags import translate

    argv, notes = translate(
        ["--num_output_files", "2", "--min_parts=4", "--working_dir", "o", "--runner", "X"]
    )
    assert argv == ["--num_shards", "2", "--output", "o", "--runner", "X"]
    assert notes == [
        "--min-parts: Beam plans input splits from the file sizes (--split_bytes), so there is no "
        "minimum number of partitions to set"
    ]
    assert translate(["--num-output-files=-1"]) == ([], [])


def test_bad_values_of_the_avro2tf_settings_are_one_line(tmp_path, capsys):
    from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG

    args = ["--input", SAMPLE_AVRO, "--config", SAMPLE_CONFIG, "--output", str(tmp_path / "o")]
    for flags, message in [
        (["--partition_field_name", "genres"], "--partition_field_name: tensor 'genres' is not a scalar"),
        (["--partition_field_name", "nope"], "--partition_field_name: 'nope' is neither a tensor"),
        (["--partition_field_name", "movieId", "--num_partitions", "0"], "--num_partitions must be"),
        (["--partition_field_name", "movieId", "--partition_by", "movieId"],
         "give --partition_field_name (partition=<id>/ folders) or --partition_by, not both"),
        (["--shuffle_seed", "x"], "argument --shuffle_seed: invalid int value: 'x'"),
        (["--skip_conversion", "--execution_mode", "validation"], "--skip_conversion writes the feature lists"),
        (["--dedup_block_size", "8"], "give --dedup_block_size and --dedup_user_cols together"),
    ]:  # fmt: skip
        assert main([*args, *flags]) == 2, flags
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and err.startswith("error: ") and message in err, err
    assert not (tmp_path / "o").exists()
