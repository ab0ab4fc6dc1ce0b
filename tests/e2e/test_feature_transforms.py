"""Hashing, feature lists, modes and determinism, end to end through the CLI.

Expected values are computed independently in the tests: feature lists by counting the Avro
records with `collections.Counter`, hash ids with TensorFlow's own ops.
"""

from __future__ import annotations

import collections
import filecmp
import json
import os

import fastavro
import numpy as np
import pytest

from beam_tensorize.kernels.features.hashing import STRONG_HASH_KEYS
from beam_tensorize.sample import AVRO2TF_CONFIG, SAMPLE_AVRO
from pipelines.tensorize import main

pytestmark = pytest.mark.pipeline


@pytest.fixture(scope="module")
def records():
    with open(SAMPLE_AVRO, "rb") as f:
        return list(fastavro.reader(f))


def _run(*args):
    assert main(list(args)) == 0


@pytest.fixture(scope="module")
def train_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("movielens") / "out"
    _run("--input", SAMPLE_AVRO, "--config", AVRO2TF_CONFIG, "--output", str(out))
    return out


def _expected_list(entries):
    counts = collections.Counter(entries)
    return [e for e, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0].encode()))]


def _parse_all(out, split="train"):
    import tensorflow as tf

    from beam_tensorize.tf import make_dataset

    rows = []
    for batch in make_dataset(str(out), split=split, batch_size=1000, labels=False):
        size = int(next(iter(batch.values())).shape[0])
        for i in range(size):
            row = {}
            for name, value in batch.items():
                if isinstance(value, tf.SparseTensor):
                    part = tf.sparse.slice(value, [i, 0], [1, value.dense_shape[1]])
                    row[name] = dict(zip(part.indices[:, 1].numpy().tolist(), part.values.numpy().tolist()))
                elif isinstance(value, tf.RaggedTensor):
                    row[name] = value[i].numpy().tolist()
                else:
                    item = value[i].numpy()
                    row[name] = item.tolist() if item.ndim else item.item()
            rows.append(row)
    return rows


def test_feature_list_files(train_run, records):
    genres = _expected_list(f"Genre,{g['term']}" for r in records for g in r["genreFeatures"])
    terms = _expected_list(g["term"] for r in records for g in r["genreFeatures"])
    assert (train_run / "featureList" / "genreFeatures").read_text().splitlines() == genres
    assert (train_run / "featureList" / "genreFeatures_term").read_text().splitlines() == terms
    counts = (
        (train_run / "metadata" / "featureListCounts" / "genreFeatures_term.tsv").read_text().splitlines()
    )
    tally = collections.Counter(g["term"] for r in records for g in r["genreFeatures"])
    assert counts == [f"{tally[t]}\t{t}" for t in terms]
    assert sorted(os.listdir(train_run / "featureList")) == ["genreFeatures", "genreFeatures_term"]


def test_every_tensor_of_the_avro2tf_config(train_run, records):
    import tensorflow as tf

    genres = _expected_list(f"Genre,{g['term']}" for r in records for g in r["genreFeatures"])
    terms = _expected_list(g["term"] for r in records for g in r["genreFeatures"])
    rows = sorted(_parse_all(train_run), key=lambda r: (r["userId"], r["movieId_hashed"]))
    assert len(rows) == 300
    expected_rows = []
    for r in records:
        movie = tf.constant([str(r["movieId"])])
        hashed = [
            int(tf.strings.to_hash_bucket_strong(movie, 1000, key=list(STRONG_HASH_KEYS[j]))[0])
            for j in range(4)
        ]
        genre_terms = [g["term"] for g in r["genreFeatures"]]
        buckets = collections.defaultdict(list)
        for t in genre_terms:
            buckets[int(tf.strings.to_hash_bucket_fast([f"Genre,{t}"], 100)[0])].append(1.0)
        expected_rows.append(
            {
                "userId": [r["userId"]],
                "movieId_hashed": hashed,
                "genreFeatures": {genres.index(f"Genre,{t}"): 1.0 for t in genre_terms},
                "genreFeatures_term": [terms.index(t) for t in genre_terms],
                "genreFeatures_movieLatentFactorFeatures": {b: sum(v) / len(v) for b, v in buckets.items()},
                "response": float(np.float32(r["response"])),
                "movieId_hashed_response": hashed,
                "genreFeatures_movieLatentFactorFeatures_response": {
                    b: sum(v) / len(v) for b, v in buckets.items()
                },
            }
        )
    expected_rows.sort(key=lambda r: (r["userId"], r["movieId_hashed"]))
    assert rows == expected_rows


def test_metadata_of_the_avro2tf_config(train_run):
    metadata = json.loads((train_run / "metadata" / "tensor_metadata.json").read_text())
    by_name = {t["name"]: t for t in metadata["features"] + metadata["labels"]}
    # NTV vectors as Avro2TF describes them: the vector length ends the shape, no id count.
    assert by_name["genreFeatures"]["shape"] == [20]  # 19 genres + unknown
    assert by_name["genreFeatures"]["numUniqueValues"] is None
    assert by_name["genreFeatures"]["parse"]["size"] == 20
    assert by_name["genreFeatures_term"]["numUniqueValues"] == 20
    assert by_name["genreFeatures_term"]["featureList"]["path"] == "featureList/genreFeatures_term"
    assert by_name["movieId_hashed"]["numUniqueValues"] == 1001
    assert by_name["movieId_hashed"]["hashing"]["numHashFunctions"] == 4
    assert by_name["genreFeatures_movieLatentFactorFeatures"]["shape"] == [100]
    assert by_name["genreFeatures_movieLatentFactorFeatures"]["numUniqueValues"] is None
    assert by_name["userId"]["numUniqueValues"] is None


def _write_avro(path, records):
    with open(SAMPLE_AVRO, "rb") as f:
        schema = fastavro.reader(f).writer_schema
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), records)


def test_test_mode_reuses_train_lists(train_run, records, tmp_path):
    terms = (train_run / "featureList" / "genreFeatures_term").read_text().splitlines()
    new = [dict(r) for r in records[:20]]
    new[0] = dict(
        new[0], genreFeatures=[{"name": "Genre", "term": "Brand-New", "value": 1.0}] + new[0]["genreFeatures"]
    )
    avro = tmp_path / "test.avro"
    _write_avro(avro, new)
    before = {p: (train_run / "featureList" / p).read_bytes() for p in os.listdir(train_run / "featureList")}
    _run(
        "--input",
        str(avro),
        "--config",
        AVRO2TF_CONFIG,
        "--output",
        str(train_run),
        "--execution_mode",
        "test",
    )
    assert {p: (train_run / "featureList" / p).read_bytes() for p in before} == before  # lists untouched
    rows = _parse_all(train_run, "test")  # one shard keeps the input order
    assert rows[0]["genreFeatures_term"] == [len(terms)] + [
        terms.index(g["term"]) for g in new[0]["genreFeatures"][1:]
    ]
    for row, record in zip(rows[1:], new[1:]):
        assert row["genreFeatures_term"] == [terms.index(g["term"]) for g in record["genreFeatures"]]
    metadata = json.loads((train_run / "metadata" / "tensor_metadata.json").read_text())
    assert sorted(metadata["data"]) == ["testData", "trainingData"]
    assert metadata["data"]["testData"]["numRecords"] == 20


def test_test_mode_without_train_run_fails(tmp_path, capsys):
    args = ["--input", SAMPLE_AVRO, "--config", AVRO2TF_CONFIG, "--output", str(tmp_path / "o"),
            "--execution_mode", "test"]  # fmt: skip
    assert main(args) == 2  # refused before any data is read (docs/errors.md)
    err = capsys.readouterr().err
    assert (
        err
        == f"error: no feature lists in {tmp_path / 'o'}/featureList: run train mode into this output folder first\n"
    )
    assert not (tmp_path / "o" / "_SUCCESS").exists() and not (tmp_path / "o" / "testData").exists()


def test_train_twice_is_byte_identical_and_multiprocessing_agrees(train_run, tmp_path):
    import tensorflow as tf

    again = tmp_path / "again"
    _run("--input", SAMPLE_AVRO, "--config", AVRO2TF_CONFIG, "--output", str(again))
    same_bytes = [
        "featureList/genreFeatures",
        "featureList/genreFeatures_term",
        "metadata/tensor_metadata.json",
        "metadata/featureListCounts/genreFeatures.tsv",
        "trainingData/part-00000-of-00001.tfrecord",
    ]
    for rel in same_bytes:
        if rel.startswith("metadata/tensor"):  # another test adds a test split to train_run's
            continue
        assert filecmp.cmp(train_run / rel, again / rel, shallow=False), rel
    multi = tmp_path / "multi"
    _run("--input", SAMPLE_AVRO, "--config", AVRO2TF_CONFIG, "--output", str(multi),
         "--direct_running_mode", "multi_processing", "--direct_num_workers", "2")  # fmt: skip
    for rel in same_bytes[:4]:  # lists and metadata: the same bytes on another runner set-up
        assert filecmp.cmp(again / rel, multi / rel, shallow=False), rel
    data = "trainingData/part-00000-of-00001.tfrecord"
    records_one = sorted(tf.data.TFRecordDataset([str(again / data)]).as_numpy_iterator())
    records_two = sorted(tf.data.TFRecordDataset([str(multi / data)]).as_numpy_iterator())
    assert records_one == records_two and len(records_one) == 300


SMALL_CONFIG = {
    "features": [
        {
            "inputFeatureInfo": {"columnExpr": "genreFeatures.term"},
            "outputTensorInfo": {"name": "a", "dtype": "long", "shape": [-1]},
        },
        {
            "inputFeatureInfo": {"columnExpr": "lower(genreFeatures.term)"},
            "outputTensorInfo": {"name": "b", "dtype": "long", "shape": [-1], "vocabSizeCap": 3},
        },
        {
            "inputFeatureInfo": {
                "columnExpr": "concat_ws(' ', genreFeatures.term)",
                "transformConfig": {"tokenization": {"removeStopWords": True}},
            },
            "outputTensorInfo": {"name": "tokens", "dtype": "long", "shape": [-1]},
        },
    ]
}


def test_shared_external_capped_and_tokenized_lists(tmp_path, records):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(SMALL_CONFIG))
    external = tmp_path / "external"
    external.mkdir()
    (external / "tokens").write_text("drama\ncomedy\n")
    out = tmp_path / "out"
    _run("--input", SAMPLE_AVRO, "--config", str(config), "--output", str(out),
         "--tensors_sharing_feature_lists", "a,b", "--external_feature_lists", str(external))  # fmt: skip
    terms = [g["term"] for r in records for g in r["genreFeatures"]]
    shared = _expected_list(terms + [t.lower() for t in terms])[:3]  # one list from both, smallest cap
    assert (out / "featureList" / "a").read_text().splitlines() == shared
    assert (out / "featureList" / "b").read_text().splitlines() == shared
    assert (out / "featureList" / "tokens").read_text() == "drama\ncomedy\n"
    # each tensor of the shared list has its own counts, of all its entries (Avro2TF's
    # temporary feature list per tensor), by count then entry
    for name, values in (("a", terms), ("b", [t.lower() for t in terms])):
        counts = collections.Counter(values)
        lines = (out / "metadata" / "featureListCounts" / f"{name}.tsv").read_text().splitlines()
        assert lines == [f"{counts[e]}\t{e}" for e in _expected_list(values)]
    rows = _parse_all(out)
    first_tokens = [
        t
        for g in records[0]["genreFeatures"]
        for t in g["term"].lower().replace("-", " ").replace("'", " ").split()
    ]
    assert rows[0]["tokens"] == [{"drama": 0, "comedy": 1}.get(t, 2) for t in first_tokens]
    assert rows[0]["a"] == [
        shared.index(g["term"]) if g["term"] in shared else 3 for g in records[0]["genreFeatures"]
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--tensors_sharing_feature_lists", "a,nope"],
            "tensors sharing feature lists: unknown tensor 'nope'",
        ),
        (["--tensors_sharing_feature_lists", "a"], "group 'a' needs two or more tensor names"),
    ],
)
def test_bad_feature_list_options(tmp_path, capsys, args, message):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(SMALL_CONFIG))
    assert (
        main(["--input", SAMPLE_AVRO, "--config", str(config), "--output", str(tmp_path / "o"), *args]) == 2
    )
    assert message in capsys.readouterr().err


def test_external_list_for_unknown_tensor_fails(tmp_path, capsys):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(SMALL_CONFIG))
    external = tmp_path / "external"
    external.mkdir()
    (external / "nope").write_text("x\n")
    args = ["--input", SAMPLE_AVRO, "--config", str(config), "--output", str(tmp_path / "o"),
            "--external_feature_lists", str(external)]  # fmt: skip
    assert main(args) == 1
    assert f"feature list {external}/nope is named after no tensor of the config" in capsys.readouterr().err
