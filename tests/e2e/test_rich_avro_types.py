"""CLI end to end on a rich Avro schema: ragged, fixed 2-D, sparse, maps, enums, unions.

TensorFlow parses the output with the spec built from the emitted metadata, and every
value is checked against the Avro records; the one bad record lands in the dead letters.
"""

from __future__ import annotations

import json

import fastavro
import numpy as np
import pytest

from beam_tensorize.kernels.avro import read_header
from pipelines.tensorize import main

pytestmark = pytest.mark.pipeline

SCHEMA = {
    "type": "record",
    "name": "Row",
    "namespace": "test.rich",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "grid", "type": {"type": "array", "items": {"type": "array", "items": "float"}}},
        {"name": "matrix", "type": {"type": "array", "items": {"type": "array", "items": "int"}}},
        {
            "name": "sv",
            "type": {
                "type": "record",
                "name": "Sparse",
                "fields": [
                    {"name": "indices", "type": {"type": "array", "items": "int"}},
                    {"name": "values", "type": {"type": "array", "items": "double"}},
                ],
            },
        },
        {"name": "tags", "type": {"type": "map", "values": "long"}},
        {"name": "color", "type": {"type": "enum", "name": "Color", "symbols": ["RED", "GREEN"]}},
        {"name": "maybe", "type": ["null", "string"], "default": None},
        {
            "name": "words",
            "type": {
                "type": "array",
                "items": {"type": "record", "name": "Word", "fields": [{"name": "term", "type": "string"}]},
            },
        },
    ],
}

CONFIG = {
    "features": [
        {"outputTensorInfo": {"name": "id", "dtype": "long", "shape": []}},
        {"outputTensorInfo": {"name": "grid", "dtype": "float", "shape": [-1, -1]}},
        {"outputTensorInfo": {"name": "matrix", "dtype": "int", "shape": [2, 3]}},
        {"outputTensorInfo": {"name": "sv", "dtype": "sparseVector", "shape": [10]}},
        {
            "inputFeatureInfo": {"columnExpr": "coalesce(tags['a'], -1)"},
            "outputTensorInfo": {"name": "tagA", "dtype": "long", "shape": []},
        },
        {"outputTensorInfo": {"name": "color", "dtype": "string", "shape": []}},
        {
            "inputFeatureInfo": {"columnExpr": "coalesce(maybe, 'none')"},
            "outputTensorInfo": {"name": "maybeOrNone", "dtype": "string", "shape": []},
        },
        {
            "inputFeatureInfo": {"columnExpr": "words.term"},
            "outputTensorInfo": {"name": "terms", "dtype": "string", "shape": [-1]},
        },
    ],
    "labels": [
        {
            "inputFeatureInfo": {"columnExpr": "CAST(id AS DOUBLE) / 2"},
            "outputTensorInfo": {"name": "half", "dtype": "double", "shape": []},
        }
    ],
}


def _record(i: int) -> dict:
    rng = np.random.default_rng(i)
    return {
        "id": i,
        "grid": [[float(x) for x in rng.integers(0, 9, size=k)] for k in rng.integers(0, 4, size=i % 4)],
        # record 7 has a 2x2 matrix: a bad record for shape [2, 3]
        "matrix": [[i, i + 1], [i + 2, i + 3]] if i == 7 else [[i, i + 1, i + 2], [i + 3, i + 4, i + 5]],
        "sv": {"indices": [i % 10, (i + 3) % 10], "values": [0.5 * i, 1.5]},
        "tags": {"a": i * 10} if i % 2 else {"b": 1},
        "color": "RED" if i % 3 else "GREEN",
        "maybe": None if i % 5 == 0 else f"m{i}",
        "words": [{"term": f"w{j}"} for j in range(i % 3)],
    }


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    root = tmp_path_factory.mktemp("rich")
    records = [_record(i) for i in range(40)]
    avro = root / "rich.avro"
    with open(avro, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(SCHEMA), records, codec="deflate", sync_interval=400)
    config = root / "config.json"
    config.write_text(json.dumps(CONFIG))
    out = root / "out"
    args = ["--input", str(avro), "--config", str(config), "--output", str(out),
            "--num_shards", "2", "--max_bad_records_ratio", "0.05", "--extra_columns_to_keep", "maybe"]  # fmt: skip
    assert main(args) == 0
    return out, records, avro


def test_every_tensor_round_trips_through_tensorflow(run):
    import tensorflow as tf

    from beam_tensorize.tf import make_dataset

    out, records, _ = run
    parsed = {}
    for batch in make_dataset(str(out), batch_size=100, labels=False):
        for i, rid in enumerate(batch["id"].numpy().tolist()):
            sv = tf.sparse.to_dense(tf.sparse.slice(batch["sv"], [i, 0], [1, 10])).numpy()[0]
            parsed[rid] = {
                "grid": batch["grid"][i].to_list(),
                "matrix": batch["matrix"][i].numpy().tolist(),
                "sv": sv.tolist(),
                "tagA": int(batch["tagA"][i]),
                "color": batch["color"][i].numpy().decode(),
                "maybeOrNone": batch["maybeOrNone"][i].numpy().decode(),
                "maybe": [v.decode() for v in batch["maybe"][i].numpy().tolist()],
                "terms": [t.decode() for t in batch["terms"][i].numpy().tolist()],
                "half": float(batch["half"][i]),
            }
    assert sorted(parsed) == [r["id"] for r in records if r["id"] != 7]
    for r in records:
        if r["id"] == 7:
            continue
        got = parsed[r["id"]]
        assert got["grid"] == r["grid"]
        assert got["matrix"] == r["matrix"]
        dense = [0.0] * 10
        for index, value in zip(r["sv"]["indices"], r["sv"]["values"]):
            dense[index] = float(np.float32(value))
        assert got["sv"] == dense
        assert got["tagA"] == r["tags"].get("a", -1)
        assert got["color"] == r["color"]
        assert got["maybeOrNone"] == (r["maybe"] or "none")
        assert got["maybe"] == ([] if r["maybe"] is None else [r["maybe"]])  # extra column, kept raw
        assert got["terms"] == [w["term"] for w in r["words"]]
        assert got["half"] == r["id"] / 2


def test_metadata_and_dead_letters(run):
    out, _, avro = run
    metadata = json.loads((out / "metadata" / "tensor_metadata.json").read_text())
    assert metadata["data"]["trainingData"] == {
        "format": "tfrecord",
        "files": ["part-00000-of-00002.tfrecord", "part-00001-of-00002.tfrecord"],
        "numRecords": 39,
        "badRecords": 1,
    }
    assert metadata["extraColumns"] == [
        {
            "name": "maybe",
            "dtype": "string",
            "shape": [-1],
            "layout": "ragged",
            "featureKeys": {"maybe": "string"},
            "parse": {"type": "RaggedFeature", "valueKey": "maybe", "dtype": "string", "partitions": []},
        }
    ]
    grid = metadata["features"][1]
    assert grid["featureKeys"] == {"grid": "float32", "grid/row_lengths_1": "int64"}
    lines = (out / "deadLetters" / "trainingData" / "part-00000-of-00001.jsonl").read_text().splitlines()
    assert len(lines) == 1
    dead = json.loads(lines[0])
    assert dead["reason"] == "tensor 'matrix': expected 3 values at dimension 1, got 2"
    with open(avro, "rb") as f:
        first_block = read_header(f, str(avro)).data_start
    assert dead["source"] == f"{avro}: record 7 of the rows starting at byte {first_block}"
    assert dead["tensors"]["id"] == 7 and dead["tensors"]["matrix"] == [[7, 8], [9, 10]]
