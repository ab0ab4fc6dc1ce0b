"""Serving parity: `Preprocessor` (Python, the batch kernels) and its TensorFlow model give,
for every raw record, exactly what the batch job wrote."""

from __future__ import annotations

import dataclasses
import json
import os
import random
import subprocess
import sys

import apache_beam as beam
import fastavro
import numpy as np
import pytest
import tensorflow as tf
from hypothesis import example, given, settings
from hypothesis import strategies as st

from beam_tensorize import Tensorize
from beam_tensorize.config import load_config, parse_config
from beam_tensorize.sample import AVRO2TF_CONFIG, SAMPLE_AVRO, SAMPLE_CONFIG
from beam_tensorize.serving import Preprocessor, ServingError
from beam_tensorize.tf import make_dataset
from beam_tensorize.tf.serving import (
    PreprocessingModule,
    as_float64,
    flatten_outputs,
    raw_parse_spec,
    raw_tensors,
)

_WORDS = ["the", "Matrix", "runs", "café", "İstanbul", "a", "an", "of", "dream", "K", "data_set", "x1"]
_TAGS = [f"tag{i}" for i in range(12)]
_NAMES = ["a", "b", "c"]

TEXT_SCHEMA = {
    "type": "record",
    "name": "Doc",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "title", "type": ["null", "string"]},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "flag", "type": "boolean"},
        {"name": "category", "type": ["null", "string"]},
        {"name": "grid", "type": {"type": "array", "items": {"type": "array", "items": "long"}}},
        {"name": "score", "type": "float"},
        {
            "name": "features",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "NTV",
                    "fields": [
                        {"name": "name", "type": "string"},
                        {"name": "term", "type": "string"},
                        {"name": "value", "type": "double"},
                    ],
                },
            },
        },
    ],
}


def _text_config() -> dict:
    def feature(name, dtype, shape, expr=None, column_config=None, transform=None, sparse=False, cap=None):
        inputs = {"columnExpr": expr} if expr else {"columnConfig": column_config}
        if transform:
            inputs["transformConfig"] = transform
        out = {"name": name, "dtype": dtype, "shape": shape, "isSparse": sparse}
        if cap:
            out["vocabSizeCap"] = cap
        return {"inputFeatureInfo": inputs, "outputTensorInfo": out}

    every = {"features": {"whitelist": ["*"]}}
    return {
        "features": [
            feature(
                "titleIds",
                "long",
                [-1],
                "title",
                transform={"tokenization": {"removeStopWords": True}},
                cap=6,
            ),
            feature(
                "titleHashed",
                "long",
                [-1],
                "title",
                transform={"tokenization": {}, "hashInfo": {"hashBucketSize": 50, "numHashFunctions": 3}},
            ),
            feature("tagIds", "long", [-1], "tags", cap=8),
            feature("idBucket", "long", [], "id", transform={"hashInfo": {"hashBucketSize": 1000}}),
            feature(
                "flagBuckets",
                "long",
                [2],
                "flag",
                transform={"hashInfo": {"hashBucketSize": 10, "numHashFunctions": 2}},
            ),
            feature("categoryId", "long", [], "category"),
            feature("grid", "long", [-1, -1], "grid"),
            feature("ntvSparse", "float", [], column_config=every, sparse=True, cap=5),
            feature("ntvDense", "float", [], column_config={"features": {"whitelist": ["a"]}}),
            feature(
                "ntvHashed",
                "float",
                [],
                column_config=every,
                transform={"hashInfo": {"hashBucketSize": 16, "numHashFunctions": 2, "combiner": "AVG"}},
                sparse=True,
            ),
            feature(
                "ntvMax",
                "float",
                [],
                column_config=every,
                transform={"hashInfo": {"hashBucketSize": 8, "combiner": "MAX"}},
            ),
        ],
        "labels": [feature("score", "float", [], "score")],
    }


def _text_records(count: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    records = []
    for i in range(count):
        words = [rng.choice(_WORDS) for _ in range(rng.randint(0, 6))]
        ntv = [
            {
                "name": rng.choice(_NAMES),
                "term": f"t{rng.randint(0, 7)}",
                "value": rng.choice([0.0, 0.1, 0.2, 1.5, -3.0]),
            }
            for _ in range(rng.randint(0, 5))
        ]
        records.append(
            {
                "id": rng.randint(-(10**12), 10**12),
                "title": None if i % 7 == 3 else " ".join(words) + rng.choice(["", "!", " (1999)", "'s"]),
                "tags": [rng.choice(_TAGS) for _ in range(rng.randint(0, 4))],
                "flag": rng.random() < 0.5,
                "category": None if i % 5 == 2 else rng.choice(["x", "y", "z", "w"]),
                "grid": [
                    [rng.randint(0, 9) for _ in range(rng.randint(0, 3))] for _ in range(rng.randint(0, 3))
                ],
                "score": rng.choice([0.0, 1.0, 0.25]),
                "features": ntv,
            }
        )
    return records


def _tensorize(out, inputs, config, **settings) -> None:
    with beam.Pipeline() as p:
        _ = p | Tensorize(
            config, str(out), inputs=[str(i) for i in inputs], save_mode="overwrite", **settings
        )


def _written(out, split="trainingData") -> list[bytes]:
    folder = os.path.join(out, split)
    files = sorted(f for f in os.listdir(folder) if f.endswith(".tfrecord"))
    return [r.numpy() for f in files for r in tf.data.TFRecordDataset(os.path.join(folder, f))]


def _avro_records(path) -> list[dict]:
    with open(path, "rb") as f:
        return list(fastavro.reader(f))


@pytest.fixture(scope="module")
def text_output(tmp_path_factory):
    """Train on text data (tokenization, capped lists, multi-hash, NTV lists and hashing,
    filter zeros), then a validation run with other records (entries unknown to the lists)."""
    root = tmp_path_factory.mktemp("text")
    train, valid = root / "train.avro", root / "valid.avro"
    for path, seed in ((train, 1), (valid, 2)):
        with open(path, "wb") as f:
            fastavro.writer(f, fastavro.parse_schema(TEXT_SCHEMA), _text_records(240, seed))
    config = parse_config(_text_config())
    out = root / "out"
    _tensorize(out, [train], config, filter_zeros=True, extra_columns=["id:rowId"])
    _tensorize(
        out, [valid], config, execution_mode="validation", filter_zeros=True, extra_columns=["id:rowId"]
    )
    return out, train, valid


@pytest.fixture(scope="module")
def sample_output(tmp_path_factory):
    out = tmp_path_factory.mktemp("sample") / "out"
    _tensorize(out, [SAMPLE_AVRO], load_config(SAMPLE_CONFIG))
    return out


@pytest.fixture(scope="module")
def avro2tf_output(tmp_path_factory):
    out = tmp_path_factory.mktemp("avro2tf") / "out"
    _tensorize(out, [SAMPLE_AVRO], load_config(AVRO2TF_CONFIG))
    return out


# --- Python: the same Example bytes ------------------------------------------------------------


@pytest.mark.parametrize("which", ["sample_output", "avro2tf_output"])
def test_every_sample_record_serializes_to_the_written_example(which, request):
    out = request.getfixturevalue(which)
    pre = Preprocessor.from_output(str(out))
    records = _avro_records(SAMPLE_AVRO)
    assert pre.serialize(records) == _written(out)


def test_text_records_serialize_to_the_written_examples_in_train_and_validation(text_output):
    out, train, valid = text_output
    pre = Preprocessor.from_output(str(out))
    assert pre.settings.filter_zeros and pre.settings.extra_columns == ("id:rowId",)
    assert pre.serialize(_avro_records(train)) == _written(out)
    validation = pre.serialize(_avro_records(valid))
    assert validation == _written(out, "validationData")
    # The validation records do meet entries the train lists do not hold.
    unknown = len(pre.feature_lists["tagIds"])
    assert any(unknown in f["tagIds"] for f in pre.transform(_avro_records(valid)))


def test_transform_gives_the_feature_values_of_each_record(sample_output):
    pre = Preprocessor.from_output(str(sample_output))
    records = _avro_records(SAMPLE_AVRO)[:3]
    features = pre.transform(records)
    for record, got, written in zip(records, features, _written(sample_output)[:3]):
        example = tf.train.Example.FromString(written)
        assert set(got) == set(example.features.feature)
        for key, values in got.items():
            feature = example.features.feature[key]
            expected = getattr(feature, feature.WhichOneof("kind")).value
            assert list(values) == list(expected), key
        assert got["movieId"].dtype == np.int64 and got["movieLatentFactors"].dtype == np.float32
        assert got["movieId"].tolist() == [record["movieId"]]


def test_from_config_with_a_feature_list_folder_matches_from_output(text_output):
    out, train, _ = text_output
    recorded = Preprocessor.from_output(str(out))
    pre = Preprocessor.from_config(
        recorded.config,
        str(out / "featureList"),
        input_schema=recorded.settings.input_schema,
        filter_zeros=True,
        extra_columns=("id:rowId",),
    )
    records = _avro_records(train)[:50]
    assert pre.serialize(records) == recorded.serialize(records)


def test_a_record_the_job_would_reject_is_an_error_naming_it(sample_output):
    pre = Preprocessor.from_output(str(sample_output))
    good = _avro_records(SAMPLE_AVRO)[0]
    short = dict(good, movieLatentFactorFeatures=good["movieLatentFactorFeatures"][:2])
    # The job kept rows off their fixed shape (its default, Avro2TF's rule): so does serving.
    assert pre.settings.check_shapes is False
    kept = pre.transform([good, short])[1]["movieLatentFactors"]
    assert kept.tolist() == pytest.approx([f["value"] for f in short["movieLatentFactorFeatures"]])
    checking = Preprocessor(
        pre.config, pre.feature_lists, dataclasses.replace(pre.settings, check_shapes=True)
    )
    with pytest.raises(ServingError, match=r"record 1: tensor 'movieLatentFactors': expected 30 values"):
        checking.transform([good, short])
    with pytest.raises(ServingError, match=r"record 0 does not fit the input schema"):
        pre.transform([dict(good, movieId="not a number")])


def test_a_fraction_for_an_integer_column_is_refused_not_truncated(sample_output):
    """Arrow would store 1215.7 in the int64 column as 1215; the batch job dead-letters it."""
    pre = Preprocessor.from_output(str(sample_output))
    good = _avro_records(SAMPLE_AVRO)[0]
    with pytest.raises(
        ServingError, match=r"^record 1: movieId = 1215.7 is not an integer \(column type int32\)"
    ):
        pre.transform([good, {**good, "movieId": 1215.7}])
    whole = pre.transform([{**good, "movieId": float(good["movieId"])}])[0]  # 1215.0 is the integer
    assert whole["movieId"].tolist() == [good["movieId"]]


def test_metadata_without_a_config_is_a_one_line_error(tmp_path):
    (tmp_path / "metadata").mkdir()
    (tmp_path / "metadata" / "tensor_metadata.json").write_text('{"features": []}')
    with pytest.raises(ServingError, match=r"^the metadata at .*tensor_metadata.json has no 'config' entry"):
        Preprocessor.from_output(str(tmp_path))


def test_an_output_without_metadata_is_a_one_line_error(tmp_path):
    with pytest.raises(ServingError, match=r"^cannot read the metadata at .*tensor_metadata.json"):
        Preprocessor.from_output(str(tmp_path))


def test_the_preprocessor_runs_without_beam_or_tensorflow(sample_output):
    blocker = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('apache_beam', 'tensorflow', 'keras'):\n"
        "            raise ImportError('blocked: ' + name)\n"
        "sys.meta_path.insert(0, Block())\n"
        "import fastavro\n"
        "from beam_tensorize.serving import Preprocessor\n"
        f"pre = Preprocessor.from_output({str(sample_output)!r})\n"
        f"records = list(fastavro.reader(open({SAMPLE_AVRO!r}, 'rb')))\n"
        "print(len(pre.serialize(records)), pre.transform(records[:1])[0]['movieBucket'].tolist())\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('apache_beam', 'tensorflow')))\n"
    )
    done = subprocess.run([sys.executable, "-c", blocker], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    first = Preprocessor.from_output(str(sample_output)).transform(_avro_records(SAMPLE_AVRO)[:1])[0]
    assert done.stdout.splitlines() == ["300 " + str(first["movieBucket"].tolist()), "[]"]


# --- TensorFlow: the same tensors --------------------------------------------------------------


def _assert_same_tensors(got: dict, expected: dict) -> None:
    assert sorted(got) == sorted(expected)
    for name, want in expected.items():
        have = got[name]
        assert type(have) is type(want), name
        assert have.dtype == want.dtype, name
        if isinstance(want, tf.SparseTensor):
            assert have.indices.numpy().tolist() == want.indices.numpy().tolist(), name
            assert have.values.numpy().tolist() == want.values.numpy().tolist(), name
            assert have.dense_shape.numpy().tolist() == want.dense_shape.numpy().tolist(), name
        else:
            assert (
                have.to_list() == want.to_list()
                if isinstance(want, tf.RaggedTensor)
                else (have.numpy().tolist() == want.numpy().tolist())
            ), name


def _dataset_tensors(out, split, rows) -> dict:
    batch = next(iter(make_dataset(str(out), split=split, batch_size=rows, labels=False)))
    return dict(batch)


@pytest.mark.parametrize("split, records", [("train", "train"), ("validation", "valid")])
def test_the_tensorflow_model_gives_the_tensors_make_dataset_reads(text_output, split, records):
    out, train, valid = text_output
    pre = Preprocessor.from_output(str(out))
    rows = _avro_records(train if records == "train" else valid)
    got = PreprocessingModule(pre)(raw_tensors(pre, rows))
    _assert_same_tensors(got, _dataset_tensors(out, split, len(rows)))


@pytest.mark.parametrize("which", ["sample_output", "avro2tf_output"])
def test_the_saved_model_reloaded_gives_the_same_tensors(which, request, tmp_path):
    out = request.getfixturevalue(which)
    pre = Preprocessor.from_output(str(out))
    records = _avro_records(SAMPLE_AVRO)
    loaded = tf.saved_model.load(pre.save(str(tmp_path / "model")))
    expected = _dataset_tensors(out, "train", len(records))
    flat = loaded.signatures["serving_default"](serialized=tf.constant(pre.raw_examples(records)))
    want = flatten_outputs(expected)
    assert sorted(flat) == sorted(want)
    for key in want:
        assert flat[key].numpy().tolist() == want[key].numpy().tolist(), key
    # The raw-tensor entry point is saved too, and gives the structured tensors.
    raw = tf.io.parse_example(tf.constant(pre.raw_examples(records)), raw_parse_spec(pre))
    _assert_same_tensors(loaded.transform(as_float64(raw)), expected)


def test_avro2tf_md5_hashing_has_no_tensorflow_model(tmp_path):
    config = parse_config(
        {"features": [{"inputFeatureInfo": {"columnExpr": "movieId", "transformConfig": {"hashInfo": {
            "hashBucketSize": 10, "hashFunction": "avro2tf_md5"}}}, "outputTensorInfo": {"name": "m", "dtype": "long"}}]}
    )  # fmt: skip
    out = tmp_path / "out"
    _tensorize(out, [SAMPLE_AVRO], config)
    pre = Preprocessor.from_output(str(out))
    assert len(pre.serialize(_avro_records(SAMPLE_AVRO))) == 300  # Python serves it
    with pytest.raises(ServingError, match=r"tensor 'm' \(features\[0\]\) hashes with avro2tf_md5"):
        PreprocessingModule(pre)


def test_metadata_records_the_transform_settings(text_output):
    out, _, _ = text_output
    with open(out / "metadata" / "tensor_metadata.json") as f:
        entry = json.load(f)["transform"]
    assert entry["filterZeros"] is True and entry["extraColumns"] == ["id:rowId"]
    assert entry["inputColumns"]["title"] == "string" and entry["inputColumns"]["id"] == "int64"
    assert entry["partitionIds"] is None and entry["discardUnknownEntries"] is False


# --- property tests: hashing, lookup and tokenization, Python kernels vs TensorFlow ops ------------


_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.one_of(_TEXT, st.sampled_from(_WORDS + ["İİ", "ǅ", "ΣΑΣ", "Straße", "\x000", "a\x00B"])),
        min_size=1,
        max_size=8,
    )
)
@example(["\x000", "a\x00B İstanbul"])  # NUL (tf.strings.lower stops at it) and U+0130
def test_tokenization_in_python_and_tensorflow_agree(texts):
    import re

    import pyarrow as pa

    from beam_tensorize.kernels.features.tokenize import ENGLISH_STOP_WORDS, tokenize

    python = tokenize(pa.array(texts), remove_stop_words=True).to_pylist()
    # Spark ML's RegexTokenizer: Java's toLowerCase (full case mapping), split on ASCII \W.
    java = [
        [t for t in re.split(r"[^A-Za-z0-9_]+", s.lower()) if t and t not in ENGLISH_STOP_WORDS]
        for s in texts
    ]
    assert python == java
    module_tokens = _tokens_in_tensorflow(texts)
    assert module_tokens == java


def _tokens_in_tensorflow(texts):
    from beam_tensorize.kernels.features.tokenize import ENGLISH_STOP_WORDS
    from beam_tensorize.tf.serving import _table, tokens_of

    ragged = tf.RaggedTensor.from_row_lengths(tf.constant(texts), tf.ones(len(texts), tf.int64))
    tokens = tokens_of(ragged, _table(sorted(ENGLISH_STOP_WORDS)))
    return [[t.decode() for t in row] for row in tokens.to_list()]


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.one_of(_TEXT, st.integers(-(2**63), 2**63 - 1).map(str)), min_size=1, max_size=20),
    st.integers(1, 2**40),
    st.integers(1, 4),
)
def test_hashing_in_python_and_tensorflow_agree(values, buckets, functions):
    import pyarrow as pa

    from beam_tensorize.config.model import HashInfo
    from beam_tensorize.kernels.features.hashing import hash_column
    from beam_tensorize.tf.serving import _hash_values

    info = HashInfo(buckets, num_hash_functions=functions)
    python = hash_column(pa.array([values, []], pa.list_(pa.string())), info).to_pylist()
    ragged = tf.ragged.constant([values, []], dtype=tf.string, row_splits_dtype=tf.int64)
    assert _hash_values(ragged, info, pa.string()).to_list() == python


@settings(max_examples=30, deadline=None)
@given(st.lists(_TEXT, max_size=15, unique=True), st.lists(_TEXT, min_size=1, max_size=15))
def test_feature_list_lookup_in_python_and_tensorflow_agree(entries, values):
    import pyarrow as pa

    from beam_tensorize.kernels.features.vocab import lookup_ids
    from beam_tensorize.tf.serving import _lookup, _table

    python = lookup_ids(pa.array(values), entries).to_pylist()
    assert _lookup(_table(entries), tf.constant(values), len(entries)).numpy().tolist() == python


def test_keras_layer_and_model_give_the_module_s_tensors(sample_output):
    pre = Preprocessor.from_output(str(sample_output))
    raw = raw_tensors(pre, _avro_records(SAMPLE_AVRO)[:20])
    expected = PreprocessingModule(pre)(raw)
    _assert_same_tensors(pre.keras_layer()(raw), expected)
    _assert_same_tensors(pre.keras_model()(raw), expected)
    assert expected["genreVector"].dense_shape.numpy().tolist() == [20, 20]


def test_serving_requests_without_labels(sample_output):
    pre = Preprocessor.from_output(str(sample_output), labels=False)
    records = [{k: v for k, v in r.items() if k != "response"} for r in _avro_records(SAMPLE_AVRO)[:5]]
    features = pre.transform(records)
    assert "response" not in features[0] and len(features) == 5
    outputs = PreprocessingModule(pre).serve(tf.constant(pre.raw_examples(records)))
    assert "response" not in outputs
    assert outputs["movieBucket"].numpy().tolist() == [f["movieBucket"][0] for f in features]
    with pytest.raises(ServingError, match=r"record 0: tensor 'response': null value"):
        Preprocessor.from_output(str(sample_output)).transform(records[:1])


def test_the_saved_model_of_the_text_data_reloaded_gives_every_tensor(text_output, tmp_path):
    out, _, valid = text_output
    pre = Preprocessor.from_output(str(out))
    rows = _avro_records(valid)
    loaded = tf.saved_model.load(pre.save(str(tmp_path / "text_model")))
    _assert_same_tensors(
        loaded.transform(raw_tensors(pre, rows)), _dataset_tensors(out, "validation", len(rows))
    )
