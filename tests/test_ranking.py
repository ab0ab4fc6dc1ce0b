"""Ranking data preparation (Avro2TF's PrepRankingData) on query/document groups built here:
every grouped tensor is checked against a grouping computed independently from the input."""

from __future__ import annotations

import json
import os

import fastavro
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf

from pipelines.prep_ranking import main as prep_ranking
from pipelines.tensorize import main as tensorize

pytestmark = pytest.mark.pipeline

_SCHEMA = {
    "type": "record",
    "name": "Impression",
    "fields": [
        {"name": "qid", "type": "long"},
        {"name": "query", "type": "string"},
        {"name": "doc", "type": "long"},
        {"name": "clicked", "type": "int"},
        {"name": "score", "type": "float"},
        {"name": "tags", "type": {"type": "array", "items": "string"}},
        {"name": "terms", "type": {"type": "array", "items": {"type": "record", "name": "NTV",
            "fields": [{"name": "name", "type": "string"}, {"name": "term", "type": "string"},
                       {"name": "value", "type": "float"}]}}},
    ],
}  # fmt: skip

_CONFIG = {
    "features": [
        {"outputTensorInfo": {"name": "qid", "dtype": "long", "shape": [], "isDocumentFeature": False}},
        {"inputFeatureInfo": {"columnExpr": "query"},
         "outputTensorInfo": {"name": "queryText", "dtype": "string", "shape": [], "isDocumentFeature": False}},
        {"outputTensorInfo": {"name": "doc", "dtype": "long", "shape": []}},
        {"outputTensorInfo": {"name": "score", "dtype": "float", "shape": []}},
        {"outputTensorInfo": {"name": "tags", "dtype": "long", "shape": [-1]}},
        {"inputFeatureInfo": {"columnConfig": {"terms": {"whitelist": ["*"]}}},
         "outputTensorInfo": {"name": "termVector", "dtype": "float", "shape": [], "isSparse": True}},
    ],
    "labels": [{"outputTensorInfo": {"name": "clicked", "dtype": "int", "shape": []}}],
}  # fmt: skip

MAX = 3


def _rows() -> list[dict]:
    rows = []
    for q in range(5):
        for d in range(q + 1):  # groups of 1..5 documents: padded and cut
            rows.append({
                "qid": 100 + q, "query": f"query {q}", "doc": 10 * q + d, "clicked": (q + d) % 2,
                "score": 0.5 * d, "tags": [f"t{(q + d) % 3}"] * (d % 3),
                "terms": [{"name": "w", "term": f"x{d}", "value": 1.0 + d}],
            })  # fmt: skip
    return rows[::2] + rows[1::2]  # interleaved groups: input order, not group order


@pytest.fixture(scope="module")
def tensorized(tmp_path_factory):
    root = tmp_path_factory.mktemp("ranking")
    with open(root / "impressions.avro", "wb") as f:
        fastavro.writer(f, _SCHEMA, _rows())
    (root / "config.json").write_text(json.dumps(_CONFIG))
    out = root / "tensorized"
    args = [
        "--input",
        str(root / "impressions.avro"),
        "--config",
        str(root / "config.json"),
        "--output",
        str(out),
    ]
    assert tensorize([*args, "--quiet"]) == 0
    return root, out


def _groups() -> dict[int, list[dict]]:
    groups: dict[int, list[dict]] = {}
    for row in _rows():
        groups.setdefault(row["qid"], []).append(row)
    return groups


def test_example_records_group_pad_and_cut_and_make_dataset_reads_them(tensorized):
    root, tensorized_dir = tensorized
    out = root / "grouped"
    args = ["--input", str(tensorized_dir), "--output", str(out), "--group-id-list", "qid",
            "--group-list-max-size", str(MAX)]  # fmt: skip
    assert prep_ranking(args) == 0
    metadata = json.loads((out / "metadata" / "tensor_metadata.json").read_text())
    by_name = {t["name"]: t for t in metadata["features"] + metadata["labels"]}
    assert by_name["doc"]["shape"] == [MAX] and by_name["clicked"]["shape"] == [MAX]
    assert by_name["termVector"]["shape"] == [MAX, by_name["termVector"]["parse"]["size"][1]]
    assert by_name["qid"]["shape"] == [] and metadata["contentFeatures"] == [
        "doc",
        "score",
        "tags",
        "termVector",
        "clicked",
    ]
    assert (out / "metadata" / "content_feature_list").read_text().splitlines() == metadata["contentFeatures"]

    from beam_tensorize.tf import make_dataset

    tags = (tensorized_dir / "featureList" / "tags").read_text().splitlines()
    terms = (tensorized_dir / "featureList" / "termVector").read_text().splitlines()
    batches = list(make_dataset(str(out), batch_size=100, labels=False))
    features = batches[0]
    groups = _groups()
    # Groups come in the order of their first row in the input.
    first_seen = list(dict.fromkeys(row["qid"] for row in _rows()))
    assert features["qid"].numpy().tolist() == first_seen
    for i, qid in enumerate(first_seen):
        docs = groups[qid][:MAX]
        pad = MAX - len(docs)
        assert features["queryText"][i].numpy().decode() == docs[0]["query"]
        assert features["doc"][i].numpy().tolist() == [r["doc"] for r in docs] + [0] * pad
        assert features["clicked"][i].numpy().tolist() == [r["clicked"] for r in docs] + [-1] * pad
        assert features["score"][i].numpy().tolist() == [r["score"] for r in docs] + [0.0] * pad
        assert features["tags"][i].to_list() == [[tags.index(t) for t in r["tags"]] for r in docs]
        sparse = tf.sparse.slice(features["termVector"], [i, 0, 0], [1, MAX, 10**6])
        got = sorted(
            zip(
                sparse.indices[:, 1].numpy().tolist(),
                sparse.indices[:, 2].numpy().tolist(),
                sparse.values.numpy().tolist(),
            )
        )
        want = sorted(
            (p, terms.index(f"w,{t['term']}"), t["value"]) for p, r in enumerate(docs) for t in r["terms"]
        )
        assert got == want


def test_elwc_records_hold_the_context_and_one_example_per_document(tensorized):
    root, tensorized_dir = tensorized
    out = root / "elwc"
    args = ["--input", str(tensorized_dir), "--output", str(out), "--group_id_list", "qid",
            "--group_list_max_size", str(MAX), "--record_format", "elwc", "--skip_padding"]  # fmt: skip
    assert prep_ranking(args) == 0
    (path,) = (out / "trainingData").glob("part-*.tfrecord")
    groups = _groups()
    for record in tf.data.TFRecordDataset(str(path)):
        examples, context = _elwc(record.numpy())
        assert sorted(context.features.feature) == ["qid", "queryText"]
        qid = context.features.feature["qid"].int64_list.value[0]
        docs = groups[qid][:MAX]
        assert [e.features.feature["doc"].int64_list.value[0] for e in examples] == [r["doc"] for r in docs]
    document = json.loads((out / "metadata" / "tensor_metadata.json").read_text())
    assert document["recordType"] == "ExampleListWithContext"
    from beam_tensorize.tf import make_dataset

    with pytest.raises(ValueError) as raised:  # not a UnicodeDecodeError from inside TensorFlow
        make_dataset(str(out))
    assert str(raised.value).startswith(
        f"{out}/trainingData holds ExampleListWithContext records; make_dataset parses tf.train.Examples"
    )


def test_bad_settings_are_one_line(tensorized, capsys):
    root, tensorized_dir = tensorized
    base = ["--input", str(tensorized_dir), "--output", str(root / "x"), "--group_list_max_size", "2"]
    for extra, message in [
        (["--group_id_list", "nope"], "group id 'nope' is not a tensor of the metadata"),
        (["--group_id_list", "tags"], "group id 'tags' is not a scalar tensor"),
        (
            ["--group_id_list", "qid", "--group_list_max_size", "0"],
            "the group list size must be a positive integer",
        ),
        (
            ["--group_id_list", "qid", "--group_list_max_sise", "3"],
            "unknown flag --group_list_max_sise (did you mean --group_list_max_size?); "
            "run 'python -m pipelines.prep_ranking --help' for the flags",
        ),
        (["--group_id_list", "qid", "part-2"], "unexpected argument 'part-2': "),
    ]:
        assert prep_ranking([*base, *extra]) == 2
        assert f"error: {message}" in capsys.readouterr().err


def _elwc(data: bytes) -> tuple[list, object]:
    """(document Examples, context Example) of a serialized ExampleListWithContext."""
    examples, context, pos = [], None, 0
    while pos < len(data):
        tag = data[pos]
        pos += 1
        length, shift = 0, 0
        while True:
            byte = data[pos]
            pos += 1
            length |= (byte & 0x7F) << shift
            shift += 7
            if byte < 0x80:
                break
        message = tf.train.Example.FromString(data[pos : pos + length])
        pos += length
        if tag == 0x0A:
            examples.append(message)
        else:
            context = message
    return examples, context


def test_avro_records_keep_lists_of_lists_and_sparse_records(tensorized):
    """--record_format avro (Avro2TF's output): one record per group; document lists stay
    nested, sparse vectors are records {indices0, indices1, values}."""
    root, tensorized_dir = tensorized
    out = root / "avro"
    args = ["--input", str(tensorized_dir), "--output", str(out), "--group_id_list", "qid",
            "--group_list_max_size", str(MAX), "--record_format", "avro"]  # fmt: skip
    assert prep_ranking(args) == 0
    (path,) = (out / "trainingData").glob("part-*.avro")
    with open(path, "rb") as f:
        records = list(fastavro.reader(f))
    tags = (tensorized_dir / "featureList" / "tags").read_text().splitlines()
    groups = _groups()
    assert [r["qid"] for r in records] == list(dict.fromkeys(row["qid"] for row in _rows()))
    for record in records:
        docs = groups[record["qid"]][:MAX]
        assert record["doc"] == [r["doc"] for r in docs] + [0] * (MAX - len(docs))
        assert record["tags"] == [[tags.index(t) for t in r["tags"]] for r in docs]
        assert record["termVector"]["indices0"] == [p for p, r in enumerate(docs) for _ in r["terms"]]
    document = json.loads((out / "metadata" / "tensor_metadata.json").read_text())
    assert document["data"]["trainingData"]["format"] == "avro" and document["recordType"] == "Avro"


def test_the_readme_example_runs_on_the_bundled_sample_and_prints_a_summary(tmp_path, capsys, monkeypatch):
    """README's ranking command, as written, after the Quick start's first command."""
    import re as _re

    from pipelines.tensorize import main as tensorize

    readme = open(os.path.join(os.path.dirname(__file__), "..", "README.md")).read()
    block = _re.search(r"# after the Quick start's first command.*?\n(.*?)\n```", readme, _re.S).group(1)
    args = block.replace("\\\n", " ").split()[3:]  # after `.venv/bin/python -m pipelines.prep_ranking`
    monkeypatch.chdir(tmp_path)
    assert tensorize(["--quiet"]) == 0
    capsys.readouterr()
    assert prep_ranking(args) == 0
    out = capsys.readouterr().out
    assert out.splitlines() == [
        "Ranking data written to ranking_output",
        "  groups:        275 (by movieId, at most 10 documents each, example records)",
        "  files:         trainingData/part-00000-of-00001.tfrecord",
        "  metadata:      ranking_output/metadata/tensor_metadata.json",
    ]
