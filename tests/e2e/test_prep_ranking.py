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
    # The group id leaves features / labels, as Avro2TF's updateMetadata drops it; the records
    # keep it and `extraColumns` says how to parse it.
    assert "qid" not in by_name and [e["name"] for e in metadata["extraColumns"]] == ["qid"]
    assert metadata["extraColumns"][0]["shape"] == [] and by_name["queryText"]["shape"] == []
    assert metadata["contentFeatures"] == [
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


def test_bad_settings_are_one_line(tensorized, capsys, own_tempdir):
    """Each a one-line error; a refused job leaves no folder in the temporary directory
    (Beam's `beam-pipeline-temp*` of a pipeline built but never run)."""
    root, tensorized_dir = tensorized
    base = ["--input", str(tensorized_dir), "--output", str(root / "x"), "--group_list_max_size", "2"]
    for extra, message in [
        (["--group_id_list", "nope"], "group id 'nope' is not a tensor of the metadata"),
        (["--group_id_list", "qid", "--drop_column_list", "qid"], "group id 'qid' is also a dropped column"),
        (["--group_id_list", "qid", "--shuffle", "maybe"], "--shuffle must be true or false, got 'maybe'"),
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
    assert list(own_tempdir.glob("beam-pipeline-temp*")) == []


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


def _avro_groups(tensorized_dir, out, group_ids: str) -> list[dict]:
    """The Avro records of prep_ranking grouping `tensorized_dir` by `group_ids` into `out`."""
    args = ["--input", str(tensorized_dir), "--output", str(out), "--group_id_list", group_ids,
            "--group_list_max_size", str(MAX), "--record_format", "avro"]  # fmt: skip
    assert prep_ranking(args) == 0
    (path,) = (out / "trainingData").glob("part-*.avro")
    with open(path, "rb") as f:
        return list(fastavro.reader(f))


def test_avro_records_keep_lists_of_lists_and_sparse_records(tensorized):
    """--record_format avro (Avro2TF's output): one record per group; document lists stay
    nested, sparse vectors are records {indices0, indices1, values}."""
    root, tensorized_dir = tensorized
    out = root / "avro"
    records = _avro_groups(tensorized_dir, out, "qid")
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

    readme = open(os.path.join(os.path.dirname(__file__), "..", "..", "README.md")).read()
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


def test_a_list_tensor_as_group_id_groups_rows_by_its_whole_list(tensorized):
    """Any tensor can be a group id (Spark groups by arrays too): here `tags` (shape [-1])."""
    root, tensorized_dir = tensorized
    out = root / "by_tags"
    records = _avro_groups(tensorized_dir, out, "tags")
    tags = (tensorized_dir / "featureList" / "tags").read_text().splitlines()
    groups: dict[tuple, list[dict]] = {}
    for row in _rows():
        groups.setdefault(tuple(tags.index(t) for t in row["tags"]), []).append(row)
    assert [tuple(r["tags"]) for r in records] == list(groups)  # groups in first-row order
    for record in records:
        docs = groups[tuple(record["tags"])][:MAX]
        assert record["doc"] == [r["doc"] for r in docs] + [0] * (MAX - len(docs))
        assert record["qid"] == docs[0]["qid"]  # a query tensor: the group's first row
    metadata = json.loads((out / "metadata" / "tensor_metadata.json").read_text())
    assert "tags" not in [e["name"] for e in metadata["features"]]
    assert [e["name"] for e in metadata["extraColumns"]] == ["tags"]


# Avro2TF's layout: its output's Avro records (a sparse vector a record {indices, values}) and
# a tensor_metadata.json of names, dtypes and shapes only.
_AVRO2TF_SCHEMA = {
    "type": "record",
    "name": "Avro2TFRecord",
    "fields": [
        {"name": "qid", "type": ["long", "null"]},
        {"name": "queryText", "type": ["string", "null"]},
        {"name": "doc", "type": ["long", "null"]},
        {"name": "tags", "type": [{"type": "array", "items": "long"}, "null"]},
        {"name": "termVector", "type": {"type": "record", "name": "SparseVector", "fields": [
            {"name": "indices", "type": {"type": "array", "items": "long"}},
            {"name": "values", "type": {"type": "array", "items": "float"}}]}},
        {"name": "clicked", "type": ["int", "null"]},
    ],
}  # fmt: skip
_AVRO2TF_METADATA = {
    "features": [
        {"name": "qid", "dtype": "long", "shape": [], "numUniqueValues": 104, "isSparse": False,
         "isDocumentFeature": False},
        {"name": "queryText", "dtype": "string", "shape": [], "numUniqueValues": None, "isSparse": False,
         "isDocumentFeature": False},
        {"name": "doc", "dtype": "long", "shape": [], "numUniqueValues": 44, "isSparse": False,
         "isDocumentFeature": True},
        {"name": "tags", "dtype": "long", "shape": [-1], "numUniqueValues": 4, "isSparse": False,
         "isDocumentFeature": True},
        {"name": "termVector", "dtype": "float", "shape": [6], "numUniqueValues": None, "isSparse": True,
         "isDocumentFeature": True},
    ],
    "labels": [{"name": "clicked", "dtype": "int", "shape": [], "numUniqueValues": 1, "isSparse": False,
                "isDocumentFeature": True}],
}  # fmt: skip


def _avro2tf_row(row: dict) -> dict:
    return {"qid": row["qid"], "queryText": row["query"], "doc": row["doc"], "clicked": row["clicked"],
            "tags": [int(t[1:]) for t in row["tags"]],
            "termVector": {"indices": [int(t["term"][1:]) for t in row["terms"]],
                           "values": [t["value"] for t in row["terms"]]}}  # fmt: skip


@pytest.fixture(scope="module")
def avro2tf_output(tmp_path_factory):
    """An Avro2TF-style output: `trainingData/` (Avro file, _SUCCESS, a hidden .crc) and
    `metadata/tensor_metadata.json`."""
    root = tmp_path_factory.mktemp("avro2tf")
    data = root / "trainingData"
    data.mkdir()
    with open(data / "part-00000.avro", "wb") as f:
        fastavro.writer(f, _AVRO2TF_SCHEMA, [_avro2tf_row(r) for r in _rows()])
    (data / "_SUCCESS").write_text("")
    (data / ".part-00000.avro.crc").write_bytes(b"\x00crc")
    (root / "metadata").mkdir()
    (root / "metadata" / "tensor_metadata.json").write_text(json.dumps(_AVRO2TF_METADATA))
    return root


def test_avro2tf_layout_in_and_out(avro2tf_output, tmp_path, capsys):
    data_out, metadata_out = tmp_path / "ranking" / "data", tmp_path / "ranking" / "metadata"
    args = [
        "--input-data-path", str(avro2tf_output / "trainingData"),  # a folder, no trailing slash
        "--input-metadata-path", str(avro2tf_output / "metadata" / "tensor_metadata.json"),
        "--output-data-path", str(data_out), "--output-metadata-path", str(metadata_out),
        "--group-id-list", "qid", "--group-list-max-size", str(MAX),
        "--drop-column-list", "tags,notAColumn",
    ]  # fmt: skip
    assert prep_ranking(args) == 0  # Avro records by default (Avro2TF's output)
    assert (data_out / "_SUCCESS").exists() and sorted(p.name for p in metadata_out.iterdir()) == [
        "content_feature_list",
        "tensor_metadata.json",
    ]
    assert (metadata_out / "content_feature_list").read_text() == "doc\ntermVector\nclicked"
    metadata = json.loads((metadata_out / "tensor_metadata.json").read_text())
    assert [(e["name"], e["shape"]) for e in metadata["features"]] == [
        ("queryText", []),
        ("doc", [MAX]),
        ("termVector", [MAX, 6]),
    ]  # qid (the group id) and tags (dropped) gone, as Avro2TF's updateMetadata writes it
    assert [(e["name"], e["shape"]) for e in metadata["labels"]] == [("clicked", [MAX])]
    (path,) = data_out.glob("part-*.avro")
    with open(path, "rb") as f:
        reader = fastavro.reader(f)
        records = list(reader)
        fields = [field["name"] for field in reader.writer_schema["fields"]]
    assert fields == ["qid", "doc", "termVector", "clicked", "queryText"]
    groups = _groups()
    assert [r["qid"] for r in records] == list(dict.fromkeys(row["qid"] for row in _rows()))
    for record in records:
        docs = groups[record["qid"]][:MAX]
        pad = MAX - len(docs)
        assert record["queryText"] == docs[0]["query"]
        assert record["doc"] == [r["doc"] for r in docs] + [0] * pad
        assert record["clicked"] == [r["clicked"] for r in docs] + [-1] * pad
        assert record["termVector"] == {
            "indices0": [p for p, r in enumerate(docs) for _ in r["terms"]],
            "indices1": [int(t["term"][1:]) for r in docs for t in r["terms"]],
            "values": [t["value"] for r in docs for t in r["terms"]],
        }

    # again into the same metadata folder: refused before anything runs
    capsys.readouterr()
    assert prep_ranking(args) == 2
    err = capsys.readouterr().err
    assert err == (
        f"error: {metadata_out}/tensor_metadata.json already exists; choose another metadata folder or "
        "another save mode (overwrite, append, ignore)\n"
    )
    # validation data: Avro2TF writes the metadata for training data only
    validation = [*args[:4], "--output-data-path", str(tmp_path / "v" / "data"),
                  "--output-metadata-path", str(tmp_path / "v" / "metadata"), *args[8:],
                  "--execution-mode", "validation"]  # fmt: skip
    assert prep_ranking(validation) == 0
    assert (tmp_path / "v" / "data" / "_SUCCESS").exists() and not (tmp_path / "v" / "metadata").exists()


def test_avro2tf_layout_as_examples_and_elwc(avro2tf_output, tmp_path):
    base = ["--input-data-path", str(avro2tf_output / "trainingData/"),
            "--input-metadata-path", str(avro2tf_output / "metadata"),
            "--group-id-list", "qid", "--group-list-max-size", str(MAX)]  # fmt: skip
    assert prep_ranking([*base, "--output", str(tmp_path / "ex"), "--record_format", "example"]) == 0
    from beam_tensorize.tf import make_dataset

    features = next(iter(make_dataset(str(tmp_path / "ex"), batch_size=100, labels=False)))
    groups = _groups()
    first_seen = list(dict.fromkeys(row["qid"] for row in _rows()))
    assert features["qid"].numpy().tolist() == first_seen  # the group id, from extraColumns
    for i, qid in enumerate(first_seen):
        docs = groups[qid][:MAX]
        assert features["doc"][i].numpy().tolist() == [r["doc"] for r in docs] + [0] * (MAX - len(docs))
        assert features["tags"][i].to_list() == [[int(t[1:]) for t in r["tags"]] for r in docs]
        assert features["queryText"][i].numpy().decode() == docs[0]["query"]
    dense = tf.sparse.to_dense(features["termVector"]).numpy()
    assert dense.shape == (len(first_seen), MAX, 6) and dense[0, 0, 0] == 1.0  # qid 100: x0 = 1.0

    assert prep_ranking([*base, "--output", str(tmp_path / "elwc"), "--record_format", "elwc"]) == 0
    (path,) = (tmp_path / "elwc" / "trainingData").glob("part-*.tfrecord")
    for record in tf.data.TFRecordDataset(str(path)):
        examples, context = _elwc(record.numpy())
        assert sorted(context.features.feature) == ["qid", "queryText"]
        docs = groups[context.features.feature["qid"].int64_list.value[0]][:MAX]
        assert [list(e.features.feature["tags"].int64_list.value) for e in examples] == [
            [int(t[1:]) for t in r["tags"]] for r in docs
        ]


def test_same_input_same_bytes_and_a_fixed_shuffle(avro2tf_output, tmp_path):
    base = ["--input-data-path", str(avro2tf_output / "trainingData"),
            "--input-metadata-path", str(avro2tf_output / "metadata" / "tensor_metadata.json"),
            "--group-id-list", "qid", "--group-list-max-size", str(MAX)]  # fmt: skip

    def run(name: str, *flags: str) -> tuple[bytes, list[int]]:
        assert prep_ranking([*base, "--output", str(tmp_path / name), *flags]) == 0
        (path,) = (tmp_path / name / "trainingData").glob("part-*.avro")
        with open(path, "rb") as f:
            return path.read_bytes(), [r["qid"] for r in fastavro.reader(f)]

    plain, again = run("a"), run("b")
    shuffled, shuffled_again = run("c", "--shuffle", "true"), run("d", "--enable-shuffle")
    assert plain == again and shuffled == shuffled_again
    assert sorted(shuffled[1]) == sorted(plain[1]) and shuffled[1] != plain[1]


def test_input_and_output_flags_come_in_pairs(avro2tf_output, tensorized, tmp_path, capsys):
    _, tensorized_dir = tensorized
    data = ["--input-data-path", str(avro2tf_output / "trainingData")]
    meta = ["--input-metadata-path", str(avro2tf_output / "metadata")]
    out = ["--output", str(tmp_path / "o")]
    group = ["--group-id-list", "qid", "--group-list-max-size", "2"]
    ours_in = "--input (a tensorized output folder)"
    theirs_in = "--input_data_path with --input_metadata_path (Avro2TF's layout)"
    ours_out = "--output (one folder for records and metadata)"
    theirs_out = "--output_data_path with --output_metadata_path (Avro2TF's layout)"
    for args, message in [
        ([*data, *meta, "--input", str(tensorized_dir), *out], f"give {ours_in} or {theirs_in}, not both"),
        ([*out], f"give {ours_in} or {theirs_in}"),
        ([*data, *out], "--input_data_path needs --input_metadata_path (its tensor_metadata.json)"),
        ([*meta, *out], "--input_metadata_path needs --input_data_path (the Avro data it describes)"),
        ([*data, *meta], f"give {ours_out} or {theirs_out}"),
        ([*data, *meta, *out, "--output-data-path", "x"], f"give {ours_out} or {theirs_out}, not both"),
        ([*data, *meta, "--output-data-path", "x"],
         "--output_data_path needs --output_metadata_path (where tensor_metadata.json goes)"),
        ([*data, "--input-metadata-path", str(tmp_path / "none.json"), *out],
         f"{tmp_path}/none.json does not exist: give Avro2TF's tensor_metadata.json (or its folder)"),
        ([*data, *meta, *out, "--group-id-list", "doc", "--record_format", "example", "--drop-column-list", "doc"],
         "group id 'doc' is also a dropped column; keep it, or group by another"),
    ]:  # fmt: skip
        assert prep_ranking([*group, *args]) == 2, args
        assert capsys.readouterr().err == f"error: {message}\n"


def test_example_records_schema_gives_tfx_bsl_the_tensors_of_make_dataset(tensorized):
    """Grouped Example records (N-dimensional sparse tensors with an index key per dimension,
    padded lists, ragged lists of lists): tfx-bsl reads them with metadata/schema.pbtxt as
    make_dataset does."""
    from tfx_bsl.public import tfxio

    from beam_tensorize.tf import make_dataset
    from tests.kernels.test_tfmd_schema import _files, _same, _schema

    root, tensorized_dir = tensorized
    out = root / "grouped_tfx"
    args = ["--input", str(tensorized_dir), "--output", str(out), "--group-id-list", "qid",
            "--group-list-max-size", str(MAX)]  # fmt: skip
    assert prep_ranking(args) == 0
    schema = _schema(str(out))
    assert schema.tensor_representation_group[""].tensor_representation["termVector"].WhichOneof("kind") == (
        "sparse_tensor"
    )
    source = tfxio.TFExampleRecord(file_pattern=_files(str(out)), schema=schema)
    options = tfxio.TensorFlowDatasetOptions(batch_size=100, shuffle=False, num_epochs=1)
    theirs = next(iter(source.TensorFlowDataset(options)))
    ours = next(iter(make_dataset(str(out), batch_size=100, labels=False)))
    assert sorted(theirs) == sorted(ours)
    for name in ours:
        _same(name, ours[name], theirs[name])
