"""Fixed shapes as Avro2TF treats them: never checked by default (rows kept as they are,
counted, read back ragged), checked with `--check_shapes`. The CLI, TensorFlow reading the
output back, the Parquet output and Spark give the same records and metadata."""

from __future__ import annotations

import json
from pathlib import Path

import fastavro
import pytest

from pipelines.tensorize import main
from tests.conftest import tensor_lists

pytestmark = pytest.mark.pipeline

SCHEMA = {
    "type": "record",
    "name": "Row",
    "fields": [
        {"name": "id", "type": "long"},
        {"name": "tags", "type": {"type": "array", "items": "long"}},
        {"name": "pairs", "type": {"type": "array", "items": {"type": "array", "items": "float"}}},
    ],
}
CONFIG = {
    "features": [
        {"outputTensorInfo": {"name": "id", "dtype": "long", "shape": []}},
        {"outputTensorInfo": {"name": "tags", "dtype": "long", "shape": [3]}},
        {"outputTensorInfo": {"name": "pairs", "dtype": "float", "shape": [2, 2]}},
    ],
    "labels": [],
}
# Row 1 and 3: `tags` of 1 and 5 values; row 2: `pairs` of 3 pairs; row 4: a pair of 3 values
# (an inner dimension: always a bad record).
ROWS = [
    {"id": 0, "tags": [1, 2, 3], "pairs": [[0.5, 1.0], [1.5, 2.0]]},
    {"id": 1, "tags": [4], "pairs": [[0.5, 1.0], [1.5, 2.0]]},
    {"id": 2, "tags": [5, 6, 7], "pairs": [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]},
    {"id": 3, "tags": [1, 2, 3, 4, 5], "pairs": [[0.0, 0.0], [0.0, 0.0]]},
    {"id": 4, "tags": [1, 2, 3], "pairs": [[1.0, 2.0, 3.0], [4.0, 5.0]]},
]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("off-shape")
    avro, config = folder / "rows.avro", folder / "config.json"
    with open(avro, "wb") as f:
        fastavro.writer(f, SCHEMA, ROWS)
    config.write_text(json.dumps(CONFIG))
    return avro, config


def _run(inputs, out: Path, *flags: str) -> int:
    avro, config = inputs
    return main(["--input", str(avro), "--config", str(config), "--output", str(out),
                 "--report", "none", "--max_bad_records_ratio", "0.5", *flags])  # fmt: skip


def _metadata(out: Path) -> dict:
    return json.loads((out / "metadata" / "tensor_metadata.json").read_text())


def test_rows_off_their_fixed_shape_are_written_as_they_are_and_read_back_ragged(inputs, tmp_path, capsys):
    from beam_tensorize.tf import make_dataset

    out = tmp_path / "out"
    assert _run(inputs, out) == 0
    assert (
        "  off shape:     rows kept whose outer dimension differs from the config's fixed shape: "
        "pairs 1, tags 2 (read back ragged; --check_shapes makes them bad records)"
    ) in capsys.readouterr().out
    metadata = _metadata(out)
    assert metadata["data"]["trainingData"]["offShape"] == {"pairs": 1, "tags": 2}
    assert metadata["data"]["trainingData"]["numRecords"] == 4
    assert metadata["data"]["trainingData"]["badRecords"] == 1  # row 4: an inner dimension
    entries = {e["name"]: e for e in metadata["features"]}
    assert entries["id"]["parse"]["type"] == "FixedLenFeature" and "offShapeRows" not in entries["id"]
    # The config's shapes stay (as Avro2TF's metadata); the parse entries read what was written.
    assert entries["tags"]["shape"] == [3] and entries["tags"]["offShapeRows"] == 2
    assert entries["tags"]["parse"] == {"type": "RaggedFeature", "valueKey": "tags", "dtype": "int64",
                                        "partitions": []}  # fmt: skip
    assert entries["pairs"]["shape"] == [2, 2] and entries["pairs"]["layout"] == "ragged"
    assert entries["pairs"]["parse"]["partitions"] == [{"type": "UniformRowLength", "length": 2}]
    assert metadata["transform"]["checkShapes"] is False
    dead = (out / "deadLetters" / "trainingData" / "part-00000-of-00001.jsonl").read_text().splitlines()
    assert [json.loads(line)["reason"] for line in dead] == [
        "tensor 'pairs': expected 2 values at dimension 1, got 3"
    ]

    (batch,) = list(make_dataset(str(out), batch_size=8, labels=False))
    assert batch["id"].numpy().tolist() == [0, 1, 2, 3]
    assert tensor_lists(batch["tags"]) == [r["tags"] for r in ROWS[:4]]
    assert tensor_lists(batch["pairs"]) == [r["pairs"] for r in ROWS[:4]]


def test_check_shapes_makes_them_bad_records(inputs, tmp_path):
    out = tmp_path / "out"
    assert _run(inputs, out, "--check_shapes", "--max_bad_records_ratio", "1") == 0
    metadata = _metadata(out)
    assert metadata["data"]["trainingData"]["numRecords"] == 1
    assert metadata["data"]["trainingData"]["badRecords"] == 4
    assert "offShape" not in metadata["data"]["trainingData"]
    entries = {e["name"]: e for e in metadata["features"]}
    assert entries["tags"]["parse"] == {
        "type": "FixedLenFeature",
        "key": "tags",
        "dtype": "int64",
        "shape": [3],
    }
    assert "offShapeRows" not in entries["tags"]
    assert metadata["transform"]["checkShapes"] is True
    dead = (out / "deadLetters" / "trainingData" / "part-00000-of-00001.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["reason"] for line in dead) == [
        "tensor 'pairs': expected 2 values at dimension 0, got 3",
        "tensor 'pairs': expected 2 values at dimension 1, got 3",
        "tensor 'tags': expected 3 values at dimension 0, got 1",
        "tensor 'tags': expected 3 values at dimension 0, got 5",
    ]


def test_appending_adds_the_counts_and_parquet_holds_the_same_values(inputs, tmp_path):
    import pyarrow.parquet as pq

    out = tmp_path / "out"
    assert _run(inputs, out, "--output_format", "parquet") == 0
    assert _run(inputs, out, "--output_format", "parquet", "--save_mode", "append") == 0
    metadata = _metadata(out)
    assert metadata["data"]["trainingData"]["offShape"] == {"pairs": 2, "tags": 4}
    assert {e["name"]: e.get("offShapeRows") for e in metadata["features"]} == {
        "id": None,
        "tags": 4,
        "pairs": 2,
    }
    table = pq.read_table(sorted((out / "trainingData").glob("*.parquet"))[0])
    assert table.column("tags").to_pylist() == [r["tags"] for r in ROWS[:4]]
    assert table.column("pairs").to_pylist() == [r["pairs"] for r in ROWS[:4]]

    from beam_tensorize.tf import Dataset

    (batch,) = list(Dataset.from_output(str(out), batch_size=8))
    assert batch["id"].numpy().tolist() == [0, 1, 2, 3] * 2
    assert tensor_lists(batch["tags"]) == [r["tags"] for r in ROWS[:4]] * 2
    assert tensor_lists(batch["pairs"]) == [r["pairs"] for r in ROWS[:4]] * 2


@pytest.mark.spark
@pytest.mark.xdist_group("spark")
def test_spark_writes_the_same_records_and_metadata(inputs, tmp_path, spark):
    from beam_tensorize.spark import tensorize_spark

    avro, config = inputs
    beam_out, spark_out = tmp_path / "beam", tmp_path / "spark"
    assert _run(inputs, beam_out) == 0
    result = tensorize_spark(spark, str(avro), str(config), str(spark_out), max_bad_records_ratio=0.5)
    assert result["offShape"] == {"pairs": 1, "tags": 2}
    assert _metadata(spark_out) == _metadata(beam_out)
    (name,) = _metadata(beam_out)["data"]["trainingData"]["files"]
    assert (spark_out / "trainingData" / name).read_bytes() == (beam_out / "trainingData" / name).read_bytes()
