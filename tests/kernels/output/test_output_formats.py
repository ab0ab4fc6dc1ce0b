"""The output-format protocol: the built-in formats, and a new format added by one class."""

from __future__ import annotations

import io
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from apache_beam.testing.test_pipeline import TestPipeline

from beam_tensorize.config import load_config
from beam_tensorize.job.spec import TensorizeSpec
from beam_tensorize.kernels.features.conversion import FeatureLayout
from beam_tensorize.kernels.output import (
    OutputFormat,
    base,
    check_output_format,
    get_output_format,
    output_format_names,
    register_output_format,
)
from beam_tensorize.kernels.output.dead_letters import encode_with_dead_letters
from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
from beam_tensorize.transforms import Tensorize


class _JsonLinesWriter:
    def __init__(self, raw):
        self._raw = raw
        self.count = 0

    def write(self, rows: pa.RecordBatch) -> None:
        for row in rows.to_pylist():
            self._raw.write(json.dumps(row, sort_keys=True).encode() + b"\n")
        self.count += rows.num_rows

    def close(self) -> int:
        return self.count

    def abort(self) -> None:
        pass


class JsonLines(OutputFormat):
    """A toy format: one JSON object per row."""

    name, compressions = "jsonl", ("none",)

    def open_writer(self, raw, compression):
        return _JsonLinesWriter(raw)


@pytest.fixture
def jsonl(monkeypatch):
    monkeypatch.setattr(base, "_FORMATS", dict(base._FORMATS))  # registered for this test only
    register_output_format(JsonLines)
    return JsonLines()


def test_the_built_in_formats_and_what_they_answer():
    assert output_format_names() == ("tfrecord", "parquet", "avro")
    tfrecord, parquet, avro = (get_output_format(name) for name in output_format_names())
    assert [fmt.compressions for fmt in (tfrecord, parquet, avro)] == [
        ("none", "gzip", "zlib"),
        ("snappy", "none", "gzip", "zstd"),
        ("snappy", "deflate", "zstd", "none"),
    ]
    assert [tfrecord.extension(c) for c in tfrecord.compressions] == [
        ".tfrecord",
        ".tfrecord.gz",
        ".tfrecord.zlib",
    ]
    assert (parquet.extension("zstd"), avro.extension("deflate")) == (".parquet", ".avro")
    assert (tfrecord.columnar, parquet.columnar, avro.columnar) == (False, True, True)
    assert (tfrecord.empty_files, parquet.empty_files, avro.empty_files) == (True, False, False)
    assert get_output_format(parquet) is parquet


def test_each_format_encodes_the_same_tensors_its_own_way():
    layouts = [
        FeatureLayout.for_tensor("id", "long", (), False),
        FeatureLayout.for_tensor("v", "float", (10,), True),
    ]
    batch = pa.RecordBatch.from_pydict(
        {"id": [1, 2], "v": [{"indices": [3], "values": [0.5]}, {"indices": [], "values": []}]}
    )
    columns = {
        name: encode_with_dead_letters(batch, layouts, output_format=name).examples.schema.names
        for name in output_format_names()
    }
    assert columns == {
        "tfrecord": ["serialized"],
        "parquet": ["id", "v/indices", "v/values"],
        "avro": ["id", "v"],
    }
    avro = encode_with_dead_letters(batch, layouts, output_format="avro").examples
    assert avro.column("v").to_pylist() == [{"indices": [3], "values": [0.5]}, {"indices": [], "values": []}]


def test_unknown_formats_and_compressions_are_named_with_the_choices():
    with pytest.raises(ValueError, match=r"output format 'csv' is not one of tfrecord, parquet, avro"):
        get_output_format("csv")
    with pytest.raises(
        ValueError,
        match=r"WriteX: compression 'gzip' is not one of snappy, deflate, zstd, none \(for avro output\)",
    ):
        check_output_format("avro", "gzip", "WriteX")
    with pytest.raises(ValueError, match="needs a `name` and `compressions`"):
        register_output_format(type("Nameless", (OutputFormat,), {}))


def test_a_new_output_format_takes_one_class(tmp_path, jsonl):
    assert output_format_names() == ("tfrecord", "parquet", "avro", "jsonl")
    raw = io.BytesIO()
    assert jsonl.write_file(raw, [("k", pa.RecordBatch.from_pydict({"x": [1, 2]}))], "none") == 2
    assert raw.getvalue() == b'{"x": 1}\n{"x": 2}\n'

    config = load_config(SAMPLE_CONFIG)
    runs = {"jsonl": {}, "jsonl_2": {"num_shards": 2}, "parquet": {}}
    with TestPipeline() as p:
        for folder, settings in runs.items():
            fmt = folder.split("_")[0]
            spec = TensorizeSpec(
                config, str(tmp_path / folder), inputs=(SAMPLE_AVRO,), output_format=fmt, **settings
            )
            _ = p | f"Tensorize_{folder}" >> Tensorize(spec)
    parquet_rows = pq.read_table(tmp_path / "parquet" / "trainingData").to_pylist()
    for folder, files in (("jsonl", ["part-00000-of-00001.jsonl"]),
                          ("jsonl_2", ["part-00000-of-00002.jsonl", "part-00001-of-00002.jsonl"])):  # fmt: skip
        data = tmp_path / folder / "trainingData"
        assert sorted(p.name for p in data.iterdir()) == ["_SUCCESS", *files]
        rows = [json.loads(line) for name in files for line in (data / name).read_text().splitlines()]
        assert len(rows) == 300 and (tmp_path / folder / "_SUCCESS").exists()
        key = lambda row: json.dumps(row, sort_keys=True)  # noqa: E731
        assert sorted(rows, key=key) == sorted(
            (json.loads(json.dumps(r, sort_keys=True)) for r in parquet_rows), key=key
        )
        metadata = json.loads((tmp_path / folder / "metadata" / "tensor_metadata.json").read_text())
        assert metadata["data"]["trainingData"] == {
            "badRecords": 0,
            "files": files,
            "format": "jsonl",
            "numRecords": 300,
        }
