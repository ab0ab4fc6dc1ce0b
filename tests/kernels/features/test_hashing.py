"""Hashing kernel: ids must equal TensorFlow's at serving time, and Avro2TF's salted MD5."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import hashlib
import random
from collections import defaultdict

import numpy as np
import pyarrow as pa
import pytest
import tensorflow as tf

from beam_tensorize.config.model import HashInfo
from beam_tensorize.kernels.features import hash_columns, hash_functions
from beam_tensorize.kernels.features.hashing import (
    MAX_STRONG_HASH_FUNCTIONS,
    STRONG_HASH_KEYS,
    avro2tf_salt,
    canonical_strings,
    hash_buckets,
    hash_column,
    hash_ntv,
)
from beam_tensorize.kernels.features.sparse import sparse_to_dense

# The first eight Avro2TF salts and some ids, computed with OpenJDK 17 by a throw-away Java program
# doing what HashingUtils.scala does: java.util.Random(817294693), 16 x
# "A-Za-z0-9".charAt(nextInt(62)) per salt, MessageDigest MD5 of (s + salt).getBytes("UTF-8"),
# new BigInteger(1, digest).mod(n).
JAVA_SALTS = (
    "HlHffttmhdWWvj8M",
    "XEMn2fYeLMsReIvo",
    "tgkJLoUMPjszVLFH",
    "Dii2gBIsq3nK1NH0",
    "PCzMalmJsagemjc8",
    "VFNl6YYRVyfLtyts",
    "v1YHLyt632GOe5Mh",
    "0oYy6IO89xnLmALZ",
)
# (string, n) -> ids of hash functions 0..3
JAVA_MD5_IDS = {
    ("", 100): [33, 24, 87, 55],
    ("", 2147483647): [1492137320, 623412290, 548774807, 517858596],
    ("hello", 100): [16, 94, 57, 62],
    ("hello", 1000003): [428663, 182326, 163383, 96047],
    ("Genre,Drama", 1000003): [862043, 801701, 592750, 913921],
    ("Genre,Drama", 2147483647): [103783195, 607755060, 953225990, 1115669794],
    ("1", 100): [46, 7, 84, 37],
    ("1.0E7", 1000003): [83825, 264123, 923132, 536405],
    ("café", 1000003): [134239, 581204, 992905, 184549],
    ("\U0001f600 emoji", 2147483647): [607128255, 800442357, 247354100, 1462044472],
    ("true", 100): [99, 31, 28, 39],
}


def _random_strings(count: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    alphabets = [
        "abcdefghijklmnopqrstuvwxyz0123456789 ,._-",
        "äöüßéèçñøåΩπλ",
        "中文日本語한국어",
        "\U0001f600\U0001f680\U0001f9e0\u2764\ufe0f",
    ]
    out = ["", " ", ",", "a", "A", "null", "0", "-0.0"]
    while len(out) < count:
        alphabet = "".join(rng.sample(alphabets, rng.randint(1, len(alphabets))))
        out.append("".join(rng.choice(alphabet) for _ in range(rng.choice([1, 2, 5, 8, 9, 15, 16, 17, 40]))))
    out.append("long " * 5000)
    out.append("\U0001f600" * 3000)
    return out


def _random_bytes(count: int, seed: int = 11) -> list[bytes]:
    rng = random.Random(seed)
    out = [b"", b"\xff", b"\xc3\x28", b"\x80abc", b"\x00" * 9]
    out += [bytes(rng.randrange(256) for _ in range(rng.randrange(0, 33))) for _ in range(count)]
    out.append(bytes(range(256)) * 40)
    return out


STRINGS = _random_strings(3000)
BYTES = _random_bytes(1000)


def _tf_fast(values, n: int) -> list[int]:
    return tf.strings.to_hash_bucket_fast(tf.constant(values, tf.string), n).numpy().tolist()


def _tf_strong(values, n: int, j: int) -> list[int]:
    key = list(STRONG_HASH_KEYS[j])
    return tf.strings.to_hash_bucket_strong(tf.constant(values, tf.string), n, key=key).numpy().tolist()


def _md5_id(text: str, j: int, n: int) -> int:
    return int.from_bytes(hashlib.md5((text + JAVA_SALTS[j]).encode("utf-8")).digest(), "big") % n


# --- hash_buckets against TensorFlow ---------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 3, 1000, 2**31 - 1, 2**63 - 1])
def test_fast_hash_equals_tensorflow_on_strings(n):
    for values in (pa.array(STRINGS, pa.string()), pa.array(STRINGS, pa.large_string())):
        assert hash_buckets(values, n).tolist() == _tf_fast(STRINGS, n)


@pytest.mark.parametrize("binary_type", [pa.binary(), pa.large_binary()])
def test_fast_hash_equals_tensorflow_on_bytes_that_are_not_utf8(binary_type):
    values = pa.array(BYTES, binary_type)
    assert hash_buckets(values, 1_000_003).tolist() == _tf_fast(BYTES, 1_000_003)


def test_strong_hash_equals_tensorflow_for_every_documented_key():
    sample = STRINGS[:400] + STRINGS[-2:]
    values = pa.array(sample)
    for j in range(MAX_STRONG_HASH_FUNCTIONS):
        assert hash_buckets(values, 9973, j, MAX_STRONG_HASH_FUNCTIONS).tolist() == _tf_strong(
            sample, 9973, j
        ), j


@pytest.mark.parametrize("n", [2, 1000, 2**31 - 1, 2**63 - 1])
def test_strong_hash_equals_tensorflow_on_many_strings_and_bytes(n):
    for j in (0, 1, 3):
        assert hash_buckets(pa.array(STRINGS), n, j, 4).tolist() == _tf_strong(STRINGS, n, j)
        assert hash_buckets(pa.array(BYTES, pa.binary()), n, j, 4).tolist() == _tf_strong(BYTES, n, j)


def test_strong_hash_on_sliced_array():
    values = pa.array(STRINGS).slice(17, 300)
    assert hash_buckets(values, 512, 2, 3).tolist() == _tf_strong(STRINGS[17:317], 512, 2)


def test_documented_keys():
    assert len(STRONG_HASH_KEYS) == MAX_STRONG_HASH_FUNCTIONS == 64
    assert STRONG_HASH_KEYS[0] == (0x243F6A8885A308D3, 0x13198A2E03707344)
    assert STRONG_HASH_KEYS[5] == (0x243F6A8885A308D3 + 5, 0x13198A2E03707344 + 5)
    assert len(set(STRONG_HASH_KEYS)) == 64
    assert all(0 <= half < 2**63 for key in STRONG_HASH_KEYS for half in key)


def test_keras_hashing_layers_agree():
    sample = STRINGS[:500]
    for n in (1, 7, 1000):
        layer = tf.keras.layers.Hashing(n)
        assert hash_column(pa.array(sample), HashInfo(n)).flatten().to_pylist() == (
            np.asarray(layer(tf.constant(sample))).reshape(-1).tolist()
        )
    k = 3
    ids = np.asarray(hash_column(pa.array(sample), HashInfo(1000, num_hash_functions=k)).flatten()).reshape(
        -1, k
    )
    for j in range(k):
        layer = tf.keras.layers.Hashing(1000, salt=list(STRONG_HASH_KEYS[j]))
        assert ids[:, j].tolist() == np.asarray(layer(tf.constant(sample))).reshape(-1).tolist()


def test_hash_buckets_rejects_bad_input():
    with pytest.raises(ValueError, match="nulls"):
        hash_buckets(pa.array(["a", None]), 10)
    with pytest.raises(ValueError, match="strings or bytes"):
        hash_buckets(pa.array([1, 2]), 10)
    with pytest.raises(ValueError, match="function_index"):
        hash_buckets(pa.array(["a"]), 10, function_index=2, num_functions=2)
    with pytest.raises(ValueError, match="num_buckets"):
        hash_buckets(pa.array(["a"]), 0)
    with pytest.raises(ValueError, match="too large"):
        hash_buckets(pa.array(["a"]), 10, 0, MAX_STRONG_HASH_FUNCTIONS + 1)
    with pytest.raises(ValueError, match="hash_function"):
        hash_buckets(pa.array(["a"]), 10, hash_function="murmur")


# --- canonical strings -----------------------------------------------------------------------


def test_canonical_strings_of_numbers_and_booleans():
    assert canonical_strings(pa.array([1, -12, None, 0], pa.int64())).to_pylist() == ["1", "-12", None, "0"]
    assert canonical_strings(pa.array([7], pa.uint8())).to_pylist() == ["7"]
    assert canonical_strings(pa.array([True, False, None])).to_pylist() == ["true", "false", None]
    doubles = [1.0, 0.1, 1e7, 1.5e-4, -0.0, float("nan"), float("inf"), 123456.789, None]
    assert canonical_strings(pa.array(doubles, pa.float64())).to_pylist() == [
        "1.0",
        "0.1",
        "1.0E7",
        "1.5E-4",
        "-0.0",
        "NaN",
        "Infinity",
        "123456.789",
        None,
    ]
    assert canonical_strings(pa.array([0.1, 3.4e38, 1.0], pa.float32())).to_pylist() == [
        "0.1",
        "3.4E38",
        "1.0",
    ]
    assert canonical_strings(pa.array(["x", None])).to_pylist() == ["x", None]
    assert canonical_strings(pa.array([b"\xff"])).to_pylist() == [b"\xff"]
    assert canonical_strings(pa.array(["b", "a", "b"]).dictionary_encode()).to_pylist() == ["b", "a", "b"]
    with pytest.raises(ValueError, match="cannot hash"):
        canonical_strings(pa.array([[1]]))


@pytest.mark.parametrize(
    ("values", "texts"),
    [
        (pa.array([3, -5, 10**12], pa.int64()), ["3", "-5", "1000000000000"]),
        (pa.array([3, -5], pa.int32()), ["3", "-5"]),
        (pa.array([True, False]), ["true", "false"]),
        (pa.array([2.5, 1e7, 1e-5], pa.float64()), ["2.5", "1.0E7", "1.0E-5"]),
        (pa.array([0.1, 2.5], pa.float32()), ["0.1", "2.5"]),
    ],
)
def test_numbers_hash_as_their_canonical_string(values, texts):
    for k in (1, 3):
        ids = np.asarray(hash_column(values, HashInfo(1009, num_hash_functions=k)).flatten()).reshape(-1, k)
        for j in range(k):
            expected = _tf_fast(texts, 1009) if k == 1 else _tf_strong(texts, 1009, j)
            assert ids[:, j].tolist() == expected


# --- hash_column -----------------------------------------------------------------------------


def test_scalar_column_one_function_exact_ids_and_dummy():
    values = ["Drama", None, "", "Comedy", "Drama", "\U0001f600"]
    out = hash_column(pa.array(values), HashInfo(50))
    assert out.type == pa.large_list(pa.int64())
    expected = _tf_fast(["Drama", "", "Comedy", "Drama", "\U0001f600"], 50)
    assert out.to_pylist() == [
        [expected[0]],
        [50],
        [expected[1]],
        [expected[2]],
        [expected[3]],
        [expected[4]],
    ]


def test_scalar_column_four_functions_shape_and_order():
    values = ["a", "b", None, "c"]
    out = hash_column(pa.array(values), HashInfo(101, num_hash_functions=4))
    rows = out.to_pylist()
    assert [len(r) for r in rows] == [4, 4, 4, 4]
    assert rows[2] == [101] * 4
    for j in range(4):
        assert [rows[i][j] for i in (0, 1, 3)] == _tf_strong(["a", "b", "c"], 101, j)


def test_list_column_element_major_with_nulls_and_empties():
    values = [["a", "b"], None, [], ["c", None, "a"], [None], ["b"]]
    k, n = 2, 97
    out = hash_column(pa.array(values, pa.list_(pa.string())), HashInfo(n, num_hash_functions=k)).to_pylist()
    ids = {s: [_tf_strong([s], n, j)[0] for j in range(k)] for s in "abc"}
    assert out == [
        ids["a"] + ids["b"],
        [n, n],
        [n, n],
        ids["c"] + ids["a"],
        [n, n],
        ids["b"],
    ]


def test_list_column_one_function_many_values_large_and_fixed_size_lists():
    rng = random.Random(3)
    rows = [rng.sample(STRINGS[:200], rng.randint(0, 6)) for _ in range(500)]
    expected = [_tf_fast(r, 1000) if r else [1000] for r in rows]
    for t in (pa.list_(pa.string()), pa.large_list(pa.string())):
        assert hash_column(pa.array(rows, t), HashInfo(1000)).to_pylist() == expected
    fixed = pa.array([["x", "y"], ["y", "z"]], pa.list_(pa.string(), 2))
    assert hash_column(fixed, HashInfo(1000)).to_pylist() == [
        _tf_fast(["x", "y"], 1000),
        _tf_fast(["y", "z"], 1000),
    ]


def test_sliced_and_chunked_columns():
    column = pa.array([["a"], None, ["b", "c"], [], ["d"]], pa.large_list(pa.string()))
    n = 31
    sliced = hash_column(column.slice(1, 3), HashInfo(n)).to_pylist()
    assert sliced == [[n], _tf_fast(["b", "c"], n), [n]]
    chunked = pa.chunked_array([pa.array(["a", None]), pa.array(["b"])])
    assert hash_column(chunked, HashInfo(n)).to_pylist() == [_tf_fast(["a"], n), [n], _tf_fast(["b"], n)]


def test_list_of_numbers_and_dictionary_column():
    out = hash_column(pa.array([[1, 2], [2]], pa.list_(pa.int64())), HashInfo(64)).to_pylist()
    assert out == [_tf_fast(["1", "2"], 64), _tf_fast(["2"], 64)]
    dictionary = pa.array(["x", "y", "x", None]).dictionary_encode()
    assert hash_column(dictionary, HashInfo(64)).to_pylist() == [
        _tf_fast(["x"], 64),
        _tf_fast(["y"], 64),
        _tf_fast(["x"], 64),
        [64],
    ]


def test_bytes_column_hashes_raw_bytes():
    out = hash_column(
        pa.array([b"\xff\xfe", None], pa.binary()), HashInfo(77, num_hash_functions=2)
    ).to_pylist()
    assert out == [[_tf_strong([b"\xff\xfe"], 77, 0)[0], _tf_strong([b"\xff\xfe"], 77, 1)[0]], [77, 77]]


def test_empty_and_all_null_columns():
    assert hash_column(pa.array([], pa.string()), HashInfo(5)).to_pylist() == []
    assert hash_column(
        pa.array([None, None], pa.string()), HashInfo(5, num_hash_functions=2)
    ).to_pylist() == [
        [5, 5],
        [5, 5],
    ]
    assert hash_column(pa.nulls(2), HashInfo(5)).to_pylist() == [[5], [5]]


def test_hashes_distinct_values_only(monkeypatch):
    hashed = []

    def fingerprints(data):
        hashed.append(len(data))
        return hash_functions._fingerprints(data)

    monkeypatch.setattr(hash_columns, "_fingerprints", fingerprints)
    values = [f"v{i % 37}" for i in range(5000)]
    out = hash_column(pa.array(values), HashInfo(1000))
    assert out.flatten().to_pylist() == _tf_fast(values, 1000)
    assert hashed == [37]


def test_hash_column_rejects_nested_lists_and_structs():
    with pytest.raises(ValueError, match="list of list"):
        hash_column(pa.array([[["a"]]]), HashInfo(10))
    with pytest.raises(ValueError, match="struct"):
        hash_column(pa.array([{"a": 1}]), HashInfo(10))
    with pytest.raises(ValueError, match="too large"):
        hash_column(pa.array(["a"]), HashInfo(10, num_hash_functions=65))


def test_large_ids_do_not_overflow():
    n = 2**63 - 1
    out = hash_column(pa.array(STRINGS[:300]), HashInfo(n)).flatten().to_pylist()
    assert out == _tf_fast(STRINGS[:300], n)


# --- NTV -------------------------------------------------------------------------------------


def _ntv(rows):
    entry = pa.struct([("name", pa.string()), ("term", pa.string()), ("value", pa.float64())])
    return pa.array(
        [
            None if r is None else [None if e is None else dict(zip(("name", "term", "value"), e)) for e in r]
            for r in rows
        ],
        pa.large_list(entry),
    )


def _expected_ntv(rows, n, k, combiner, hasher):
    indices, values = [], []
    for row in rows:
        groups = defaultdict(list)
        for entry in row or []:
            if entry is None:
                continue
            name, term, value = entry
            key = f"{'null' if name is None else name},{'null' if term is None else term}"
            for j in range(k):
                groups[hasher(key, j, n, k)].append(0.0 if value is None else value)
        ids = sorted(groups)
        combine = {"SUM": sum, "MAX": max, "AVG": lambda v: sum(v) / len(v)}[combiner]
        indices.append(ids)
        values.append([combine(groups[i]) for i in ids])
    return indices, values


def _assert_rows_close(actual, expected):
    assert len(actual) == len(expected)
    for got, want in zip(actual, expected):
        assert got == pytest.approx(want)


def _tf_hasher(key, j, n, k):
    return _tf_fast([key], n)[0] if k == 1 else _tf_strong([key], n, j)[0]


NTV_ROWS = [
    [("genre", "Drama", 1.0), ("genre", "Comedy", 2.0), ("year", "1999", 4.0), ("genre", "War", 0.5)],
    None,
    [],
    [None, ("genre", "Drama", 3.0), (None, "x", 1.5), ("n", None, None), ("genre", "Drama", 7.0)],
    [("a", "b", -1.0)],
    [("t", str(i), float(i)) for i in range(30)],
]


@pytest.mark.parametrize("combiner", ["SUM", "AVG", "MAX"])
@pytest.mark.parametrize(("n", "k"), [(2, 1), (3, 1), (3, 2), (5, 4), (1000, 1), (1000, 3)])
def test_ntv_combiners_with_collisions(combiner, n, k):
    indices, values = hash_ntv(_ntv(NTV_ROWS), HashInfo(n, num_hash_functions=k, combiner=combiner))
    assert indices.type == pa.large_list(pa.int64())
    assert values.type == pa.large_list(pa.float64())
    exp_indices, exp_values = _expected_ntv(NTV_ROWS, n, k, combiner, _tf_hasher)
    assert indices.to_pylist() == exp_indices
    _assert_rows_close(values.to_pylist(), exp_values)
    for row in indices.to_pylist():
        assert row == sorted(set(row))


def test_ntv_combiner_values_by_hand():
    # n = 1: every entry lands in bucket 0.
    rows = [[("g", "a", 2.0), ("g", "b", 3.0), ("g", "c", 7.0)], [("g", "a", 2.0)], []]
    for combiner, expected in (("SUM", 12.0), ("AVG", 4.0), ("MAX", 7.0)):
        indices, values = hash_ntv(_ntv(rows), HashInfo(1, combiner=combiner))
        assert indices.to_pylist() == [[0], [0], []]
        assert values.to_pylist() == [[expected], [2.0], []]
    # two functions, one bucket: each entry counts twice, AVG unchanged.
    indices, values = hash_ntv(_ntv(rows), HashInfo(1, num_hash_functions=2, combiner="AVG"))
    assert values.to_pylist() == [[4.0], [2.0], []]
    indices, values = hash_ntv(_ntv(rows), HashInfo(1, num_hash_functions=2, combiner="SUM"))
    assert values.to_pylist() == [[24.0], [4.0], []]


def test_ntv_entry_is_name_comma_term():
    indices, values = hash_ntv(_ntv([[("Genre", "Drama", 1.5)]]), HashInfo(100_000))
    assert indices.to_pylist() == [_tf_fast(["Genre,Drama"], 100_000)]
    assert values.to_pylist() == [[1.5]]


def test_ntv_plain_list_and_other_value_types():
    entry = pa.struct([("name", pa.string()), ("term", pa.string()), ("value", pa.float32())])
    ntv = pa.array([[{"name": "a", "term": "b", "value": 2.5}]], pa.list_(entry))
    indices, values = hash_ntv(ntv, HashInfo(10))
    assert indices.to_pylist() == [_tf_fast(["a,b"], 10)]
    assert values.to_pylist() == [[2.5]]


def test_ntv_rejects_non_ntv():
    with pytest.raises(ValueError, match="name, term and value"):
        hash_ntv(pa.array([["a"]]), HashInfo(10))
    with pytest.raises(ValueError, match="name, term and value"):
        hash_ntv(pa.array(["a"]), HashInfo(10))


def test_ntv_empty_batch():
    indices, values = hash_ntv(_ntv([]), HashInfo(10))
    assert indices.to_pylist() == [] and values.to_pylist() == []


# --- dense form ------------------------------------------------------------------------------


def test_sparse_to_dense():
    indices = pa.array([[0, 3], [], None, [1]], pa.large_list(pa.int64()))
    values = pa.array([[1.5, -2.0], [], None, [4.0]], pa.large_list(pa.float64()))
    assert sparse_to_dense(indices, values, 4).to_pylist() == [
        [1.5, 0.0, 0.0, -2.0],
        [0.0] * 4,
        [0.0] * 4,
        [0.0, 4.0, 0.0, 0.0],
    ]


def test_dense_form_of_hashed_ntv():
    n = 3
    info = HashInfo(n, num_hash_functions=2, combiner="AVG")
    indices, values = hash_ntv(_ntv(NTV_ROWS), info)
    dense = sparse_to_dense(indices, values, n).to_pylist()
    exp_indices, exp_values = _expected_ntv(NTV_ROWS, n, 2, "AVG", _tf_hasher)
    for row, ids, vals in zip(dense, exp_indices, exp_values):
        expected = [0.0] * n
        for i, v in zip(ids, vals):
            expected[i] = v
        assert row == pytest.approx(expected)


def test_sparse_to_dense_rejects_bad_input():
    indices = pa.array([[5]], pa.large_list(pa.int64()))
    values = pa.array([[1.0]], pa.large_list(pa.float64()))
    with pytest.raises(ValueError, match=r"\[0, 5\)"):
        sparse_to_dense(indices, values, 5)
    with pytest.raises(ValueError, match="same number"):
        sparse_to_dense(indices, pa.array([[1.0, 2.0]], pa.large_list(pa.float64())), 10)


# --- avro2tf_md5 -----------------------------------------------------------------------------


def test_avro2tf_salts_match_java():
    assert tuple(avro2tf_salt(j) for j in range(8)) == JAVA_SALTS
    assert len(avro2tf_salt(200)) == 16


@pytest.mark.parametrize(("text", "n"), sorted(JAVA_MD5_IDS))
def test_avro2tf_md5_ids_match_java(text, n):
    expected = JAVA_MD5_IDS[(text, n)]
    assert [_md5_id(text, j, n) for j in range(4)] == expected
    ids = hash_column(pa.array([text]), HashInfo(n, num_hash_functions=4, hash_function="avro2tf_md5"))
    assert ids.to_pylist() == [expected]
    one = hash_column(pa.array([text]), HashInfo(n, hash_function="avro2tf_md5"))
    assert one.to_pylist() == [expected[:1]]


def test_avro2tf_md5_on_many_strings():
    n, k = 1_000_003, 3
    values = pa.array(STRINGS)
    for j in range(k):
        expected = [_md5_id(s, j, n) for s in STRINGS]
        assert hash_buckets(values, n, j, k, "avro2tf_md5").tolist() == expected


def test_avro2tf_md5_ntv_and_numbers():
    info = HashInfo(7, num_hash_functions=2, combiner="SUM", hash_function="avro2tf_md5")
    indices, values = hash_ntv(_ntv(NTV_ROWS), info)
    exp = _expected_ntv(NTV_ROWS, 7, 2, "SUM", lambda key, j, n, k: _md5_id(key, j, n))
    assert indices.to_pylist() == exp[0]
    _assert_rows_close(values.to_pylist(), exp[1])
    out = hash_column(pa.array([1.0e7, 1.0], pa.float64()), HashInfo(1_000_003, hash_function="avro2tf_md5"))
    assert out.to_pylist() == [[83825], [_md5_id("1.0", 0, 1_000_003)]]
    assert hash_column(
        pa.array([1], pa.int32()), HashInfo(100, 4, hash_function="avro2tf_md5")
    ).to_pylist() == [[46, 7, 84, 37]]


def _java_salts(count: int) -> list[str]:
    """java.util.Random(817294693).nextInt(62) over "A-Za-z0-9", 16 characters per salt."""
    seed = (817294693 ^ 0x5DEECE66D) % 2**48
    chars = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    drawn = []
    while len(drawn) < 16 * count:
        seed = (seed * 0x5DEECE66D + 11) % 2**48
        bits = seed >> 17
        if bits - bits % 62 + 61 < 2**31:  # else Java draws again
            drawn.append(chars[bits % 62])
    return ["".join(drawn[i : i + 16]) for i in range(0, len(drawn), 16)]


def test_avro2tf_md5_allows_many_functions():
    salts = _java_salts(100)
    assert tuple(salts[:8]) == JAVA_SALTS
    out = hash_column(pa.array(["x"]), HashInfo(10, num_hash_functions=100, hash_function="avro2tf_md5"))
    expected = [int.from_bytes(hashlib.md5(("x" + salt).encode()).digest(), "big") % 10 for salt in salts]
    assert out.to_pylist() == [expected]
