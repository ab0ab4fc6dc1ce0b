"""The hash functions' two paths: the C extension `_hashes` and the fallbacks (pyfarmhash for
FarmHash Fingerprint64, numpy for SipHash-2-4) give the same hashes, value for value, for every
length up to a few blocks, both offset widths and sliced arrays; bad buffers are refused."""

from __future__ import annotations

import random

import farmhash
import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from beam_tensorize.kernels.features import hash_functions
from beam_tensorize.kernels.features.hash_functions import STRONG_HASH_KEYS, hash_buckets
from tests.fuzzing import fuzz_settings

pytestmark = pytest.mark.skipif(
    hash_functions._extension() is None, reason="the C extension is not built here"
)

_RNG = random.Random(11)
#: Every length from 0 to 300 bytes (FarmHash branches at 4, 8, 16, 32, 64 and loops per 64),
#: three random values each, and a few long ones.
_VALUES = [bytes(_RNG.randrange(256) for _ in range(n)) for n in list(range(301)) * 3] + [
    bytes(_RNG.randrange(256) for _ in range(n)) for n in (1000, 4096, 65_537)
]


@pytest.mark.parametrize("kind", [pa.binary(), pa.large_binary()])
def test_fingerprint64_is_pyfarmhash_s(kind):
    data = pa.array(_VALUES, kind)
    got = hash_functions._fingerprints(data)
    assert got.dtype == np.uint64
    assert got.tolist() == [farmhash.fingerprint64(v) for v in _VALUES]


@pytest.mark.parametrize("kind", [pa.binary(), pa.large_binary()])
@pytest.mark.parametrize("function", [0, 1, 63])
def test_siphash24_is_the_numpy_path_s(kind, function):
    data = pa.array(_VALUES[:905], kind)
    keys = STRONG_HASH_KEYS[function]
    assert (
        hash_functions._siphash24(data, *keys).tolist()
        == hash_functions._numpy_siphash24(data, *keys).tolist()
    )


def test_slices_empty_arrays_and_empty_strings(monkeypatch):
    whole = pa.array([b"x" * n for n in range(40)] + [b"", b"tail"], pa.binary())
    sliced = whole.slice(17, 20)
    assert hash_functions._fingerprints(sliced).tolist() == [
        farmhash.fingerprint64(b"x" * n) for n in range(17, 37)
    ]
    only_empty = pa.array([b"", b""], pa.binary())
    assert only_empty.buffers()[2] is None or only_empty.buffers()[2].size == 0
    assert hash_functions._fingerprints(only_empty).tolist() == [farmhash.fingerprint64(b"")] * 2
    assert hash_functions._fingerprints(pa.array([], pa.binary())).tolist() == []
    assert hash_functions._siphash24(pa.array([], pa.large_binary()), 1, 2).tolist() == []
    assert (
        hash_functions._siphash24(sliced, 1, 2).tolist()
        == hash_functions._numpy_siphash24(sliced, 1, 2).tolist()
    )


def test_hash_buckets_are_the_same_without_the_extension(monkeypatch):
    values = pa.array([f"movie-{i}" for i in range(2000)] + ["", "ü" * 70])
    native = [hash_buckets(values, 1000, j, 3).tolist() for j in range(3)] + [
        hash_buckets(values, 97).tolist()
    ]
    monkeypatch.setattr(hash_functions, "_extension", lambda: None)
    fallback = [hash_buckets(values, 1000, j, 3).tolist() for j in range(3)] + [
        hash_buckets(values, 97).tolist()
    ]
    assert native == fallback


def test_the_extension_refuses_bad_buffers():
    native = hash_functions._extension()
    out = np.empty(2, np.uint64)
    with pytest.raises(ValueError, match="non-decreasing positions within data"):
        native.fingerprint64(np.array([0, 3, 1], np.int32), b"abc", out)
    with pytest.raises(ValueError, match="non-decreasing positions within data"):
        native.fingerprint64(np.array([0, 2, 4], np.int64), b"abc", out)
    with pytest.raises(ValueError, match="out must be 2 uint64 values"):
        native.fingerprint64(np.array([0, 1, 2], np.int32), b"abc", np.empty(3, np.uint64))
    with pytest.raises(ValueError, match="offsets must be int32 or int64"):
        native.siphash24(np.array([0.0, 1.0, 2.0]), b"abc", 1, 2, out)
    with pytest.raises(TypeError):
        native.fingerprint64(np.array([0, 1, 2], np.int32), b"abc")
    with pytest.raises(OverflowError):
        native.siphash24(np.array([0, 1, 2], np.int32), b"abc", -1, 2, out)


@fuzz_settings(150)
@given(
    values=st.lists(st.binary(max_size=200), max_size=40),
    kind=st.sampled_from([pa.binary(), pa.large_binary()]),
    cut=st.tuples(st.integers(0, 40), st.integers(0, 40)),
    function=st.integers(0, len(STRONG_HASH_KEYS) - 1),
)
def test_random_arrays_hash_as_the_reference_paths_do(values, kind, cut, function):
    """Random values, either offset width, any slice: FarmHash as pyfarmhash, SipHash as numpy."""
    start, length = cut
    data = pa.array(values, kind).slice(start, length)
    expected = [farmhash.fingerprint64(v) for v in values[start : start + length]]
    assert hash_functions._fingerprints(data).tolist() == expected
    keys = STRONG_HASH_KEYS[function]
    assert (
        hash_functions._siphash24(data, *keys).tolist()
        == hash_functions._numpy_siphash24(data, *keys).tolist()
    )
