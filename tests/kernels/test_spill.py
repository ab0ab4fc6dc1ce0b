"""Files of kept batches (`beam_tensorize.kernels.spill`): batches come back as written, with
their source tags, across schema changes; a damaged file is an error naming it."""

from __future__ import annotations

import pyarrow as pa
import pytest

from beam_tensorize.kernels.provenance import source_of, split_key, with_source, with_split
from beam_tensorize.kernels.spill import SpillWriter, read_spill


def _write(path, batches) -> SpillWriter:
    with SpillWriter(open(path, "wb")) as spill:
        for batch in batches:
            spill.write(batch)
    return spill


def test_batches_come_back_in_order_with_their_tags_across_schema_changes(tmp_path):
    ints = pa.RecordBatch.from_pydict({"a": [1, 2], "ids": [[1], []]})
    strings = pa.RecordBatch.from_pydict({"a": ["x", None]})
    nested = pa.RecordBatch.from_pydict({"a": [{"t": "x", "v": 1.5}]})
    batches = [
        with_split(with_source(ints, "in/a.avro", 16), "in/a.avro", 0),
        with_source(ints.slice(1), "in/a.avro", 96),
        strings,  # untagged, another schema: a new stream
        with_source(ints, "in/b.parquet", 8192, unit="row"),  # the first schema again
        nested,
        ints.slice(0, 0),  # no rows
    ]
    spill = _write(tmp_path / "k.spill", batches)
    assert (spill.rows, spill.nbytes) == (8, sum(b.nbytes for b in batches))
    back = list(read_spill(open(tmp_path / "k.spill", "rb"), "k.spill"))
    assert [b.to_pydict() for b in back] == [b.to_pydict() for b in batches]
    mapped = list(read_spill(pa.memory_map(str(tmp_path / "k.spill")), "k.spill"))  # as local files are read
    assert all(
        m.equals(b) and m.schema.metadata == b.schema.metadata for m, b in zip(mapped, back, strict=True)
    )
    assert [b.schema for b in back] == [b.schema for b in batches]
    assert [b.schema.metadata for b in back] == [b.schema.metadata for b in batches]
    assert source_of(back[0]) == ("in/a.avro", 16) and split_key(back[0]) == split_key(batches[0])
    assert source_of(back[3]) == ("in/b.parquet", 8192) and back[2].schema.metadata is None
    data = (tmp_path / "k.spill").read_bytes()
    assert (
        data[:1] == b"S" and data[-1:] == b"E" and data.count(b"S\xff\xff\xff\xff") == 5
    )  # ints, strings, ints, nested, ints


def test_a_file_with_no_batches(tmp_path):
    _write(tmp_path / "empty.spill", [])
    assert (tmp_path / "empty.spill").read_bytes() == b"E"
    assert list(read_spill(open(tmp_path / "empty.spill", "rb"), "empty.spill")) == []


@pytest.mark.parametrize(
    "cut, message",
    [
        (lambda data: data[:-1], "the file of kept batches ends early; rerun the job"),
        (lambda data: b"", "the file of kept batches ends early; rerun the job"),
        (lambda data: b"X" + data[1:], "the file of kept batches holds b'X' where a stream starts"),
        (lambda data: data[: len(data) // 2], "the file of kept batches is damaged ("),
    ],
    ids=["no-end-marker", "empty", "overwritten", "truncated-stream"],
)
@pytest.mark.parametrize("opener", [open, pa.memory_map], ids=["python-file", "memory-map"])
def test_a_damaged_file_is_an_error_naming_it(tmp_path, cut, message, opener):
    batch = pa.RecordBatch.from_pydict({"a": list(range(1000))})
    _write(tmp_path / "k.spill", [batch, batch])
    (tmp_path / "k.spill").write_bytes(cut((tmp_path / "k.spill").read_bytes()))
    with pytest.raises(ValueError) as err:
        list(read_spill(opener(str(tmp_path / "k.spill"), "rb"), "gs://b/k.spill"))
    assert str(err.value).startswith(f"gs://b/k.spill: {message}")


def test_a_failing_writer_closes_its_file(tmp_path):
    sink = open(tmp_path / "k.spill", "wb")
    with pytest.raises(RuntimeError), SpillWriter(sink) as spill:
        spill.write(pa.RecordBatch.from_pydict({"a": [1]}))
        raise RuntimeError("stop")
    assert sink.closed and not (tmp_path / "k.spill").read_bytes().endswith(b"E")
