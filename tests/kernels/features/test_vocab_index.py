"""`VocabIndex`: positions as `pyarrow.compute.index_in` gives them, on both of its paths."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from beam_tensorize.kernels.features import vocab_index
from beam_tensorize.kernels.features.vocab_entries import lookup_ids, lookup_ntv
from beam_tensorize.kernels.features.vocab_index import INDEXED_FROM, VocabIndex, as_index


def _reference(values: pa.Array, entries: pa.Array) -> list[int]:
    """What the lookups gave before: `index_in`, -1 for a value not found or null."""
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    return pc.index_in(values.cast(pa.string()), entries).fill_null(-1).to_pylist()


@pytest.fixture(params=["index_in", "fingerprints"])
def path(request, monkeypatch):
    """Every list looked up by `index_in` (as below INDEXED_FROM) or through fingerprints."""
    monkeypatch.setattr(vocab_index, "INDEXED_FROM", 1 if request.param == "fingerprints" else 1 << 62)
    return request.param


def _random_case(rng: np.random.Generator):
    words = ["", "a", "b", "ab", "é", "日本", "a,b", "x" * 40] + [f"w{i}" for i in range(60)]
    entries = [words[i] for i in rng.integers(0, len(words), rng.integers(1, 50))]  # repeats too
    values = [None if rng.random() < 0.1 else words[i] for i in rng.integers(0, len(words), 200)]
    return pa.array(entries, pa.string()), values


@pytest.mark.parametrize("seed", range(20))
def test_positions_are_the_first_occurrences_index_in_gives(path, seed):
    rng = np.random.default_rng(seed)
    entries, values = _random_case(rng)
    index = VocabIndex(entries)
    assert index.indexed == (path == "fingerprints")
    for kind in (pa.string(), pa.large_string()):
        array = pa.array(values, kind)
        assert index.positions(array).tolist() == _reference(array, entries)
        assert index.positions(array.slice(7, 50)).tolist() == _reference(array.slice(7, 50), entries)
        chunked = pa.chunked_array([array.slice(0, 90), array.slice(90)])
        assert index.positions(chunked).tolist() == _reference(array, entries)
    assert index.positions(pa.array([], pa.string())).tolist() == []


def test_entries_sharing_a_fingerprint_are_told_apart(monkeypatch):
    """A weak fingerprint (the length) makes most entries collide: each value still finds the
    entry equal to it, and a value outside the list finds nothing."""
    monkeypatch.setattr(vocab_index, "INDEXED_FROM", 1)

    def by_length(data):
        offsets = np.frombuffer(data.buffers()[1], np.int32 if data.type == pa.binary() else np.int64)
        offsets = offsets[data.offset : data.offset + len(data) + 1]
        return np.diff(offsets).astype(np.uint64)

    monkeypatch.setattr(vocab_index, "_fingerprints", by_length)
    entries = pa.array(["ab", "cd", "ab", "e", "ef", "f", "cd"])
    values = pa.array(["cd", "ab", "ef", "zz", "f", "g", None, "e", ""])
    index = VocabIndex(entries)
    assert index.positions(values).tolist() == [1, 0, 4, -1, 5, -1, -1, 3, -1]
    assert index.positions(values).tolist() == _reference(values, entries)


def test_a_large_list_is_indexed_and_found_by_its_fingerprints():
    entries = pa.array([f"user{i}" for i in range(INDEXED_FROM + 5000)])
    index = VocabIndex(entries)
    assert index.indexed
    rng = np.random.default_rng(1)
    values = pa.array([f"user{i}" for i in rng.integers(0, len(entries) + 3000, 5000)] + [None, "other"])
    assert index.positions(values).tolist() == _reference(values, entries)
    ids = lookup_ids(pa.array([["user3", "nobody"], None]), index).to_pylist()
    assert ids == [[3, len(entries)], None]  # a null list stays null


def test_without_the_hash_extension_index_in_is_used(monkeypatch):
    monkeypatch.setattr(vocab_index, "INDEXED_FROM", 1)
    monkeypatch.setattr(vocab_index, "_extension", lambda: None)
    index = VocabIndex(["a", "b"])
    assert not index.indexed
    assert index.positions(pa.array(["b", "c"])).tolist() == [1, -1]


def test_as_index_takes_every_form_of_a_list():
    from beam_tensorize.kernels.features.feature_list import FeatureList

    index = VocabIndex(["a"])
    assert as_index(index) is index
    for form in (["b", "a"], ("b", "a"), pa.array(["b", "a"]), FeatureList(("b", "a"))):
        assert as_index(form).positions(pa.array(["a", "c"])).tolist() == [1, -1]
    assert VocabIndex(pa.array(["1", "2"], pa.large_string())).positions(pa.array([2, 3])).tolist() == [1, -1]


@pytest.mark.parametrize(
    "records",
    [
        [("a", "x"), ("a", "b,c"), ("a", "y"), ("a", ""), ("a", "x")],  # one name: its distinct terms
        [("a", "x"), ("b", "x"), ("a", "b,c")],  # several names: the joined entries
    ],
)
def test_ntv_lookup_through_the_index_finds_the_joined_entries(path, records):
    vocab = ["b,x", "a,b,c", "a,x", "a,", "z", "a,x"]
    column = pa.array(
        [[{"name": n, "term": t, "value": float(i)} for i, (n, t) in enumerate(records)], None, []],
        pa.list_(pa.struct([("name", pa.string()), ("term", pa.string()), ("value", pa.float64())])),
    )
    rows, ids, values = lookup_ntv(column, VocabIndex(vocab))
    joined = [f"{n},{t}" for n, t in records]
    assert rows.tolist() == [0] * len(records)
    assert ids.tolist() == [vocab.index(e) if e in vocab else len(vocab) for e in joined]
    assert values.tolist() == [float(i) for i in range(len(records))]
