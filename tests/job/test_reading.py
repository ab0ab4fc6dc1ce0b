"""Reading the files of one input as one table: Avro's schema evolution (a field a later
schema adds reads as its default in earlier files, as Avro2TF's Spark job reads them)."""

from __future__ import annotations

import json

import fastavro
import pytest

from beam_tensorize.job.reading import plan_splits, read_split_batches, unified_schema

SCHEMA = {"type": "record", "name": "Rating", "fields": [{"name": "user", "type": "long"}]}


def _write(path, fields, records) -> str:
    schema = {**SCHEMA, "fields": [*SCHEMA["fields"], *fields]}
    with open(path, "wb") as f:
        fastavro.writer(f, fastavro.parse_schema(schema), records)
    return str(path)


@pytest.fixture
def evolved(tmp_path):
    """An early file without `rating` and `tags`, a later one adding both with defaults."""
    added = [
        {"name": "rating", "type": "double", "default": 2.5},
        {"name": "tags", "type": {"type": "array", "items": "string"}, "default": []},
    ]
    _write(tmp_path / "a-early.avro", [], [{"user": 1}, {"user": 2}])
    _write(tmp_path / "b-later.avro", added, [{"user": 3, "rating": 4.0, "tags": ["x"]}])
    return str(tmp_path / "*.avro")


def test_an_earlier_file_reads_a_later_field_as_its_default(evolved):
    columns = ["user", "rating", "tags"]
    splits = plan_splits([evolved])
    schema = unified_schema(splits, columns)
    assert schema.names == ["user", "rating", "tags"]
    assert json.loads(schema.field("rating").metadata[b"default"]) == 2.5
    rows = [
        r
        for fmt, split in splits
        for b in read_split_batches(fmt, split, columns, schema=schema)
        for r in b.select(columns).to_pylist()
    ]
    assert rows == [
        {"user": 1, "rating": 2.5, "tags": []},
        {"user": 2, "rating": 2.5, "tags": []},
        {"user": 3, "rating": 4.0, "tags": ["x"]},
    ]


def test_a_field_added_without_a_default_is_an_error_naming_the_earlier_file(tmp_path):
    early = _write(tmp_path / "a.avro", [], [{"user": 1}])
    _write(tmp_path / "b.avro", [{"name": "rating", "type": "double"}], [{"user": 3, "rating": 4.0}])
    splits = plan_splits([str(tmp_path / "*.avro")])
    schema = unified_schema(splits, ["user", "rating"])
    with pytest.raises(ValueError) as raised:
        [
            b
            for fmt, split in splits
            for b in read_split_batches(fmt, split, ["user", "rating"], schema=schema)
        ]
    assert (
        str(raised.value)
        == f"{early}: the file has no column 'rating', and the schema that adds it gives no default"
    )


def test_a_column_no_file_has_is_still_an_error(evolved, tmp_path):
    with pytest.raises(
        ValueError,
        match=r"a-early.avro: the config reads column 'score', which this file does not have; its columns are: user",
    ):
        unified_schema(plan_splits([evolved]), ["user", "score"])


def test_the_cli_reads_the_defaults(evolved, tmp_path, capsys):
    """The whole job: the rows of the early file get the default in the written records."""
    import pyarrow.parquet as pq

    from pipelines.tensorize import main

    config = tmp_path / "config.json"
    tensors = [("user", "long", []), ("rating", "double", []), ("tags", "string", [-1])]
    config.write_text(
        json.dumps(
            {"features": [{"outputTensorInfo": {"name": n, "dtype": d, "shape": s}} for n, d, s in tensors]}
        )
    )
    out = tmp_path / "out"
    args = [
        "--input",
        evolved,
        "--config",
        str(config),
        "--output",
        str(out),
        "--output_format",
        "parquet",
        "--quiet",
    ]
    assert main(args) == 0, capsys.readouterr().err
    table = pq.read_table(out / "trainingData")
    assert sorted(zip(table["user"].to_pylist(), table["rating"].to_pylist())) == [
        (1, 2.5),
        (2, 2.5),
        (3, 4.0),
    ]
