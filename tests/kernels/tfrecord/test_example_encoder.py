"""Tests for beam_tensorize.kernels.tfrecord.example_encoder.

The reference for every comparison is protobuf itself: each row is built as a
``tf.train.Example`` and serialized deterministically, map entry by map entry, in
UTF-8 key order (see ``canonical_bytes``).

Every test runs twice (the ``both_paths`` fixture of conftest.py): with the C extension
``_tfrecordencode`` (skipped when it is not built) and with the numpy / pyarrow fallback. The
tests at the end compare the two paths byte for byte on fixed and random batches.
"""

from __future__ import annotations

import decimal
import math
import os
import time

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf

from beam_tensorize.kernels.tfrecord import example_encoder
from beam_tensorize.kernels.tfrecord import native as tfrecord_native
from beam_tensorize.kernels.tfrecord.example_encoder import (
    encode_examples,
    encode_features,
    feature_key_order,
)
from beam_tensorize.kernels.tfrecord.framing import NATIVE_ENV
from tests.fuzzing import fuzz_settings

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1

NATIVE = tfrecord_native.extension()
needs_native = pytest.mark.skipif(NATIVE is None, reason="the C extension _tfrecordencode is not built")


pytestmark = pytest.mark.usefixtures("both_paths")  # see conftest.py


def _value_type(typ: pa.DataType) -> pa.DataType:
    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    if (
        pa.types.is_list(typ)
        or pa.types.is_large_list(typ)
        or pa.types.is_fixed_size_list(typ)
        or pa.types.is_list_view(typ)
    ):
        typ = typ.value_type
    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    return typ


def _is_list_column(typ: pa.DataType) -> bool:
    return (
        pa.types.is_list(typ)
        or pa.types.is_large_list(typ)
        or pa.types.is_fixed_size_list(typ)
        or pa.types.is_list_view(typ)
    )


def reference(batch: pa.RecordBatch) -> list[bytes]:
    """Serializes each row with protobuf, filling one Example in place."""
    kinds = {}
    for field in batch.schema:
        value_type = _value_type(field.type)
        if pa.types.is_integer(value_type) or pa.types.is_boolean(value_type):
            kinds[field.name] = "int64_list"
        elif pa.types.is_floating(value_type):
            kinds[field.name] = "float_list"
        else:
            kinds[field.name] = "bytes_list"
    is_list = {field.name: _is_list_column(field.type) for field in batch.schema}
    out = []
    for row in batch.to_pylist():
        example = tf.train.Example()
        if row:
            example.features.SetInParent()
        for name, value in row.items():
            if value is None:  # a null is left out (Spark-TFRecord's rule)
                continue
            values_list = getattr(example.features.feature[name], kinds[name])
            values_list.SetInParent()
            values = value if is_list[name] else [value]
            if kinds[name] == "int64_list":
                values_list.value.extend(int(v) for v in values)
            elif kinds[name] == "float_list":
                values_list.value.extend(float(v) for v in values)
            else:
                values_list.value.extend(v.encode("utf-8") if isinstance(v, str) else v for v in values)
        out.append(canonical_bytes(example))
    return out


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def canonical_bytes(example) -> bytes:
    """Deterministic serialization with map keys in plain UTF-8 byte order.

    Each map entry is serialized by protobuf itself; only the order of the entries is fixed
    here (protobuf's runtimes disagree on where a key that is a prefix of another goes).
    """
    if not example.HasField("features"):
        return b""
    keys = sorted(example.features.feature, key=lambda k: k.encode("utf-8"))
    entries = b"".join(
        tf.train.Features(feature={k: example.features.feature[k]}).SerializeToString(deterministic=True)
        for k in keys
    )
    serialized = b"\n" + _varint(len(entries)) + entries
    assert tf.train.Example.FromString(serialized) == example
    return serialized


def assert_matches_protobuf(batch: pa.RecordBatch) -> pa.Array:
    encoded = encode_examples(batch)
    assert len(encoded) == batch.num_rows
    expected = reference(batch)
    got = encoded.to_pylist()
    for i, (g, e) in enumerate(zip(got, expected)):
        assert g == e, f"row {i}: {g!r} != {e!r}"
    return encoded


def batch_of(**columns: pa.Array) -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict(columns)


# --------------------------------------------------------------------------- #
# Types
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize(
    "typ",
    [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint16(), pa.uint32(), pa.uint64()],
    ids=str,
)
def test_integer_types_as_scalars_and_lists(typ):
    info = np.iinfo(typ.to_pandas_dtype())
    low, high = int(info.min), min(int(info.max), INT64_MAX)
    values = [low, 0, 1, high, None]
    boundaries = [v for v in (0, 1, 127, 128, 255, 256, 16383, 16384) if v <= high]
    batch = batch_of(
        s=pa.array(values, typ),
        l=pa.array([[low, high], None, [], [5], boundaries], pa.list_(typ)),
    )
    assert_matches_protobuf(batch)


def test_bool_as_int64():
    batch = batch_of(
        b=pa.array([True, False, None]),
        bl=pa.array([[True, False, True], None, []], pa.list_(pa.bool_())),
    )
    encoded = assert_matches_protobuf(batch)
    parsed = tf.train.Example.FromString(encoded[0].as_py())
    assert list(parsed.features.feature["bl"].int64_list.value) == [1, 0, 1]


@pytest.mark.parametrize("typ", [pa.float16(), pa.float32(), pa.float64()], ids=str)
def test_float_types_as_float32(typ):
    values = [1.5, -0.0, None, 0.1, 65504.0]
    batch = batch_of(
        s=pa.array(np.array([v or 0.0 for v in values]).astype(typ.to_pandas_dtype()), typ).cast(typ),
        l=pa.array([[0.25, -2.0], None, [], [0.1, 1e-3, 3.0], [1.0]], pa.list_(typ)),
    )
    assert_matches_protobuf(batch)


@pytest.mark.parametrize("typ", [pa.binary(), pa.string(), pa.large_binary(), pa.large_string()], ids=str)
def test_binary_and_string_types(typ):
    text = pa.types.is_string(typ) or pa.types.is_large_string(typ)

    def v(s):
        return s if text else s.encode("utf-8")

    batch = batch_of(
        s=pa.array([v("a"), v(""), None, v("héllo wörld ✓")], typ),
        l=pa.array([[v("x"), v("")], None, [], [v("日本語"), v("z" * 300)]], pa.list_(typ)),
        ll=pa.array([[v("x")], [], None, [v("q"), v("r")]], pa.large_list(typ)),
    )
    assert_matches_protobuf(batch)


def test_view_types_and_dictionaries():
    batch = batch_of(
        sv=pa.array(["a", None, "ccc"], pa.string_view()),
        bv=pa.array([b"", b"x", None], pa.binary_view()),
        d=pa.array(["red", "green", None]).dictionary_encode(),
        dl=pa.array([["a", "b"], None, ["a"]], pa.list_(pa.dictionary(pa.int8(), pa.string()))),
        lv=pa.array([[1, 2], None, []], pa.list_view(pa.int64())),
        fb=pa.array([b"ab", b"cd", None], pa.binary(2)),
    )
    assert_matches_protobuf(batch)


def test_list_view_with_out_of_order_views():
    values = pa.array([1, 2, 3, 4, 5], pa.int64())
    views = pa.ListViewArray.from_arrays(
        pa.array([3, 0, 1], pa.int32()),
        pa.array([2, 3, 0], pa.int32()),
        values,
        mask=pa.array([False, False, True]),
    )
    assert views.to_pylist() == [[4, 5], [1, 2, 3], None]
    assert_matches_protobuf(batch_of(v=views, s=pa.array(["a", "b", "c"])))


def test_fixed_size_lists():
    batch = batch_of(
        f3=pa.array([[1.0, 2.0, 3.0], None, [4.0, 5.0, -0.0]], pa.list_(pa.float32(), 3)),
        f1=pa.array([[1.0], [2.0], None], pa.list_(pa.float32(), 1)),
        f40=pa.array([list(range(40)), None, list(range(40, 80))], pa.list_(pa.float32(), 40)),
        i2=pa.array([[INT64_MIN, INT64_MAX], [0, 1], None], pa.list_(pa.int64(), 2)),
        s2=pa.array([["a", "b"], None, ["", "c"]], pa.list_(pa.string(), 2)),
    )
    assert_matches_protobuf(batch)


# --------------------------------------------------------------------------- #
# Values
# --------------------------------------------------------------------------- #


def test_int64_extremes_and_varint_boundaries():
    boundaries = [0, 1, 127, 128, 16383, 16384, 2**21 - 1, 2**21, 2**28, 2**35, 2**42, 2**49]
    boundaries += [2**56 - 1, 2**56, 2**62, INT64_MAX, -1, -2, -128, -(2**31), INT64_MIN]
    batch = batch_of(
        scalar=pa.array(boundaries, pa.int64()),
        lists=pa.array([[b, -b if b > INT64_MIN else 0] for b in boundaries], pa.list_(pa.int64())),
    )
    encoded = assert_matches_protobuf(batch)
    last = tf.train.Example.FromString(encoded[-1].as_py())
    assert list(last.features.feature["scalar"].int64_list.value) == [INT64_MIN]


def test_float_special_values():
    specials = [math.nan, math.inf, -math.inf, -0.0, 0.0, 1e-45, 3.4028234663852886e38, -1.5]
    batch = batch_of(
        f32=pa.array(specials, pa.float32()),
        f64=pa.array([*specials[:-1], 1e300], pa.float64()),
        lists=pa.array([specials] * len(specials), pa.list_(pa.float32())),
    )
    encoded = assert_matches_protobuf(batch)
    parsed = tf.train.Example.FromString(encoded[-1].as_py())
    assert parsed.features.feature["f64"].float_list.value[0] == math.inf


def test_unicode_keys_and_values():
    batch = batch_of(
        **{
            "é": pa.array(["ü", "日本", None]),
            "日本/語": pa.array([[1], [2, 3], None]),
            "emoji 🙂": pa.array([[b"\x00\xff"], [], None], pa.list_(pa.binary())),
            "a/b c": pa.array([1.0, None, 2.0], pa.float32()),
            "\uffff": pa.array([1, 2, 3]),
            "\U00010000": pa.array([1, 2, 3]),
        }
    )
    assert_matches_protobuf(batch)


def test_empty_strings_empty_lists_and_nulls():
    batch = batch_of(
        s=pa.array(["", None, ""]),
        ls=pa.array([[""], [], None], pa.list_(pa.string())),
        li=pa.array([[], None, []], pa.list_(pa.int64())),
        lf=pa.array([None, [], None], pa.list_(pa.float32())),
        all_null=pa.array([None, None, None], pa.list_(pa.int64())),
        null_scalar=pa.array([None, None, None], pa.float64()),
    )
    encoded = assert_matches_protobuf(batch)
    # A null is left out (Spark-TFRecord's rule); an empty list is an empty list of its kind.
    parsed = tf.train.Example.FromString(encoded[1].as_py())
    assert sorted(parsed.features.feature) == ["lf", "ls"]
    assert parsed.features.feature["lf"].WhichOneof("kind") == "float_list"
    # With omit_nulls=False a null is written as an empty list of its kind.
    kept = tf.train.Example.FromString(encode_examples(batch, omit_nulls=False)[1].as_py())
    assert sorted(kept.features.feature) == ["all_null", "lf", "li", "ls", "null_scalar", "s"]
    assert kept.features.feature["li"].WhichOneof("kind") == "int64_list"
    assert kept.features.feature["null_scalar"].WhichOneof("kind") == "float_list"


def test_null_list_backed_by_values_is_empty():
    offsets = pa.array([0, 2, 5, 6], pa.int32())
    values = pa.array([1, 2, 3, 4, 5, 6], pa.int64())
    lists = pa.ListArray.from_arrays(offsets, values, mask=pa.array([False, True, False]))
    assert lists.to_pylist() == [[1, 2], None, [6]]
    assert_matches_protobuf(batch_of(x=lists, y=pa.array(["a", "b", "c"])))


def test_sliced_batch():
    batch = batch_of(
        i=pa.array([[1], [2, 3], None, [4, 5, 6], [7]]),
        f=pa.array([1.0, None, 3.0, 4.0, 5.0], pa.float32()),
        s=pa.array([["a"], ["b", "c"], None, [], ["d"]]),
    )
    sliced = batch.slice(1, 3)
    assert encode_examples(sliced).to_pylist() == encode_examples(batch).to_pylist()[1:4]
    assert_matches_protobuf(sliced)


# --------------------------------------------------------------------------- #
# Keys and layout
# --------------------------------------------------------------------------- #


def test_many_columns_in_unsorted_order():
    rng = np.random.default_rng(7)
    names = [f"col_{i:03d}" for i in rng.permutation(60)]
    columns = {}
    for i, name in enumerate(names):
        if i % 3 == 0:
            columns[name] = pa.array(rng.integers(-5, 5, 4))
        elif i % 3 == 1:
            columns[name] = pa.array(rng.random(4).astype(np.float32))
        else:
            columns[name] = pa.array([[f"{name}-{j}"] * j for j in range(4)])
    assert_matches_protobuf(pa.RecordBatch.from_pydict(columns))


def test_key_order_puts_prefixes_first():
    # Keys where one is a prefix of another: plain byte order puts the shorter key first.
    names = ["b", "ab", "a", "a/b", "a0", "age", "age_bucket", "/x", "B", "x/indices", "x", "x/values"]
    batch = pa.RecordBatch.from_arrays([pa.array([i]) for i in range(len(names))], names)
    encoded = assert_matches_protobuf(batch)
    order = feature_key_order(names)
    assert order.index("a") < order.index("ab")
    assert order.index("age") < order.index("age_bucket")
    assert order.index("x") < order.index("x/indices") < order.index("x/values")
    positions = [encoded[0].as_py().index(b"\n" + bytes([len(k)]) + k.encode()) for k in order]
    assert positions == sorted(positions)


def test_key_with_control_and_nul_characters():
    names = ["a\x00", "a", "a\x01b", "\x7f", "\x80é"]
    batch = pa.RecordBatch.from_arrays([pa.array([1.0], pa.float32()) for _ in names], names)
    assert_matches_protobuf(batch)


def test_long_lists_need_multi_byte_varints():
    rng = np.random.default_rng(3)
    batch = batch_of(
        i200=pa.array([list(range(200)), [INT64_MIN] * 200, None]),
        f200=pa.array([rng.random(200).tolist(), [], None], pa.list_(pa.float32())),
        s200=pa.array([["x" * 5] * 200, ["y" * 200], None]),
        i20000=pa.array([list(range(20000)), [], [-1] * 20000]),
        f20000=pa.array([rng.random(20000).tolist(), None, [0.5]], pa.list_(pa.float32())),
        s20000=pa.array([["ab"] * 20000, ["z" * 20000], ["w" * 200000]]),
    )
    encoded = assert_matches_protobuf(batch)
    # Row 2 holds a 200 kB string: its Example length needs a 3-byte varint.
    assert len(encoded[2].as_py()) > 2**14 * 8
    assert encoded[2].as_py()[1] & 0x80 and encoded[2].as_py()[2] & 0x80


def test_large_binary_output_when_over_limit(monkeypatch):
    batch = batch_of(
        s=pa.array([["abc", "d"], None, ["e" * 300]]),
        i=pa.array([1, 2, None]),
        f=pa.array([[1.0, 2.0], [], None], pa.list_(pa.float32())),
    )
    expected = reference(batch)
    monkeypatch.setattr(example_encoder, "_MAX_BINARY_BYTES", 10)
    encoded = encode_examples(batch)
    assert encoded.type == pa.large_binary()
    assert encoded.to_pylist() == expected


def test_output_is_binary_array():
    encoded = encode_examples(batch_of(x=pa.array([1, 2])))
    assert encoded.type == pa.binary()


def test_empty_batch_returns_empty_array():
    batch = batch_of(x=pa.array([], pa.list_(pa.int64())), y=pa.array([], pa.string()))
    encoded = encode_examples(batch)
    assert len(encoded) == 0
    assert encoded.type == pa.binary()


def test_batch_without_columns_gives_empty_examples():
    batch = pa.RecordBatch.from_pydict({"x": pa.array([1, 2, 3])}).select([])
    assert batch.num_rows == 3 and batch.num_columns == 0
    encoded = encode_examples(batch)
    assert encoded.to_pylist() == [tf.train.Example().SerializeToString(deterministic=True)] * 3
    assert encoded.to_pylist() == [b""] * 3


def test_parse_example_reads_encoder_output():
    batch = batch_of(
        ids=pa.array([[1, 2, 3], None, [INT64_MIN]]),
        score=pa.array([0.5, 1.5, None], pa.float32()),
        tags=pa.array([["a", "bb"], [], ["ccc"]]),
        title=pa.array(["x", "y", "z"]),
    )
    encoded = encode_examples(batch).to_pylist()
    parsed = tf.io.parse_example(
        tf.constant(encoded),
        {
            "ids": tf.io.RaggedFeature(tf.int64),
            "score": tf.io.RaggedFeature(tf.float32),
            "tags": tf.io.RaggedFeature(tf.string),
            "title": tf.io.FixedLenFeature([], tf.string),
        },
    )
    assert parsed["ids"].to_list() == [[1, 2, 3], [], [INT64_MIN]]
    assert parsed["score"].to_list() == [[0.5], [1.5], []]
    assert parsed["tags"].to_list() == [[b"a", b"bb"], [], [b"ccc"]]
    assert parsed["title"].numpy().tolist() == [b"x", b"y", b"z"]


def test_same_protos_as_tfx_bsl_encoder_except_null_lists():
    """tfx_bsl writes a null list as a Feature with no list at all; we leave it out."""
    from tfx_bsl.coders.example_coder import RecordBatchToExamplesEncoder

    batch = batch_of(
        a=pa.array([[1, 2], None, [3]], pa.list_(pa.int64())),
        b=pa.array([[0.5], [], None], pa.list_(pa.float32())),
        c=pa.array([[b"x"], [b"y", b""], None], pa.list_(pa.binary())),
    )
    ours = [tf.train.Example.FromString(r) for r in encode_examples(batch).to_pylist()]
    theirs = [tf.train.Example.FromString(r) for r in RecordBatchToExamplesEncoder().encode(batch)]
    assert ours[0] == theirs[0]
    for row, key in [(1, "a"), (2, "b"), (2, "c")]:
        assert theirs[row].features.feature[key].WhichOneof("kind") is None
        assert key not in ours[row].features.feature
        del theirs[row].features.feature[key]
    assert ours == theirs


# --------------------------------------------------------------------------- #
# Errors
# --------------------------------------------------------------------------- #


def test_null_element_in_list_names_column():
    batch = batch_of(ok=pa.array([[1], [2], [3]]), bad_col=pa.array([[1], [2, None], [3]]))
    with pytest.raises(ValueError, match=r"'bad_col'.*null element.*row 1"):
        encode_examples(batch)


@pytest.mark.parametrize(
    "values, typ",
    [([[1.0, None]], pa.list_(pa.float32())), ([["a", None]], pa.list_(pa.string()))],
)
def test_null_element_error_for_every_kind(values, typ):
    with pytest.raises(ValueError, match="'x'"):
        encode_examples(batch_of(x=pa.array(values, typ)))


def test_nested_list_is_rejected():
    with pytest.raises(TypeError, match="'nested'"):
        encode_examples(batch_of(nested=pa.array([[[1]], [[2, 3]]])))


def test_unsupported_type_is_rejected():
    with pytest.raises(TypeError, match="'when'"):
        encode_examples(batch_of(when=pa.array([1, 2], pa.timestamp("s"))))
    with pytest.raises(TypeError, match="'rec'"):
        encode_examples(batch_of(rec=pa.array([{"a": 1}])))


def test_uint64_overflow_is_rejected():
    with pytest.raises(ValueError, match="'u'"):
        encode_examples(batch_of(u=pa.array([2**64 - 1], pa.uint64())))


def test_duplicate_column_names_are_rejected():
    batch = pa.RecordBatch.from_arrays([pa.array([1]), pa.array([2])], ["x", "x"])
    with pytest.raises(ValueError, match="duplicate"):
        encode_examples(batch)


# --------------------------------------------------------------------------- #
# Property test
# --------------------------------------------------------------------------- #

_KINDS = {
    "int64": (pa.int64(), st.integers(INT64_MIN, INT64_MAX)),
    "float32": (
        pa.float32(),
        st.floats(width=32, allow_nan=False) | st.sampled_from([math.inf, -math.inf, -0.0]),
    ),
    "binary": (pa.binary(), st.binary(max_size=200)),
}


@st.composite
def random_batches(draw):
    n = draw(st.integers(1, 12))
    names = draw(
        st.lists(
            st.text(st.sampled_from("ab/_é日\x00Z"), min_size=1, max_size=4),
            min_size=1,
            max_size=6,
            unique=True,
        )
    )
    arrays = []
    for _ in names:
        kind = draw(st.sampled_from(sorted(_KINDS)))
        typ, values = _KINDS[kind]
        shape = draw(st.sampled_from(["list", "large_list", "scalar"]))
        if shape == "scalar":
            rows = draw(st.lists(st.none() | values, min_size=n, max_size=n))
            arrays.append(pa.array(rows, typ))
        else:
            rows = draw(st.lists(st.none() | st.lists(values, max_size=40), min_size=n, max_size=n))
            list_type = pa.list_(typ) if shape == "list" else pa.large_list(typ)
            arrays.append(pa.array(rows, list_type))
    return pa.RecordBatch.from_arrays(arrays, names)


@fuzz_settings(150)
@given(random_batches())
def test_random_batches_match_deterministic_protobuf(batch):
    assert encode_examples(batch).to_pylist() == reference(batch)


def test_a_null_is_left_out_so_fixed_len_features_take_their_default():
    """Spark-TFRecord leaves null fields out of the Example; TensorFlow's FixedLenFeature
    then gives its default_value (an empty list would fail the parse)."""
    batch = batch_of(x=pa.array([1.5, None], pa.float64()), ids=pa.array([[1, 2], None]))
    parsed = tf.io.parse_example(
        encode_examples(batch).to_pylist(),
        {
            "x": tf.io.FixedLenFeature([], tf.float32, default_value=-1.0),
            "ids": tf.io.FixedLenFeature([2], tf.int64, default_value=[0, 0]),
        },
    )
    assert parsed["x"].numpy().tolist() == [1.5, -1.0]
    assert parsed["ids"].numpy().tolist() == [[1, 2], [0, 0]]


def test_a_null_feature_list_and_context_value_are_left_out_of_sequence_examples():
    from beam_tensorize.kernels.tfrecord.sequence_example import encode_sequence_examples

    batch = batch_of(
        id=pa.array([7, None]), steps=pa.array([[[1], [2, 3]], None], pa.list_(pa.list_(pa.int64())))
    )
    first, second = (
        tf.train.SequenceExample.FromString(r) for r in encode_sequence_examples(batch).to_pylist()
    )
    assert list(first.context.feature) == ["id"] and list(first.feature_lists.feature_list) == ["steps"]
    assert not second.context.feature and not second.feature_lists.feature_list


# --------------------------------------------------------------------------- #
# Native against fallback, byte for byte
# --------------------------------------------------------------------------- #


def _both(monkeypatch, encode, *args, **kwargs):
    """`encode(*args, **kwargs)` with the C extension, then with the fallback."""
    monkeypatch.delenv(NATIVE_ENV, raising=False)
    native = encode(*args, **kwargs)
    monkeypatch.setenv(NATIVE_ENV, "python")
    fallback = encode(*args, **kwargs)
    monkeypatch.delenv(NATIVE_ENV, raising=False)
    return native, fallback


def assert_same_bytes(monkeypatch, batch: pa.RecordBatch) -> None:
    """Native and fallback give the same array (type, offsets and bytes), with and without
    omit_nulls, for Examples and for every column's Features."""
    for omit_nulls in (True, False):
        native, fallback = _both(monkeypatch, encode_examples, batch, omit_nulls=omit_nulls)
        assert native.type == fallback.type
        assert native.to_pylist() == fallback.to_pylist()
        assert native.equals(fallback)
    for name in batch.schema.names:
        native, fallback = _both(monkeypatch, encode_features, name, batch.column(name))
        assert native.type == fallback.type
        assert native.to_pylist() == fallback.to_pylist(), name


def _random_values(rng: np.random.Generator, kind: str, count: int) -> list:
    if kind == "int":
        pools = [rng.integers(0, 128, count), rng.integers(-(2**40), 2**40, count)]
        pools.append(rng.choice(np.array([0, 127, 128, 16383, 16384, -1, INT64_MIN, INT64_MAX]), count))
        return pools[int(rng.integers(3))].tolist()
    if kind == "bool":
        return (rng.random(count) < 0.5).tolist()
    if kind == "float":
        values = rng.normal(0, 10.0 ** int(rng.integers(-3, 40)), count)
        specials = np.array([math.nan, math.inf, -math.inf, -0.0, 0.0, 1e39, -1e-46, 65504.0, 1e300])
        return np.where(rng.random(count) < 0.15, rng.choice(specials, count), values).tolist()
    sizes = rng.choice(np.array([0, 1, 3, 20, 127, 128, 300]), count)
    if kind == "text":
        alphabet = ["a", "Z", "é", "日", "🙂", "\x00", " "]
        return ["".join(rng.choice(alphabet, int(size))) for size in sizes]
    return [rng.bytes(int(size)) for size in sizes]


_SCALAR_TYPES = {
    "int": [pa.int8(), pa.int16(), pa.int32(), pa.int64(), pa.uint8(), pa.uint32(), pa.uint64()],
    "bool": [pa.bool_()],
    "float": [pa.float16(), pa.float32(), pa.float64()],
    "text": [pa.string(), pa.large_string(), pa.string_view()],
    "bytes": [pa.binary(), pa.large_binary(), pa.binary_view()],
}


def _fit(values: list, typ: pa.DataType) -> list:
    """The values made to fit `typ` (integers wrapped into its range, floats of float16)."""
    if pa.types.is_integer(typ):
        info = np.iinfo(typ.to_pandas_dtype())
        top = min(int(info.max), INT64_MAX)
        return [min(max(v, int(info.min)), top) for v in values]
    if typ == pa.float16():
        with np.errstate(over="ignore"):
            return [np.float16(v) for v in values]
    return values


def random_column(rng: np.random.Generator, n: int) -> pa.Array:
    """A random column of every kind and shape the encoder takes: scalars, lists, large lists,
    fixed-size lists, list views, dictionaries, with null and empty lists, null scalars."""
    kind = str(rng.choice(sorted(_SCALAR_TYPES)))
    typ = _SCALAR_TYPES[kind][int(rng.integers(len(_SCALAR_TYPES[kind])))]
    shape = str(rng.choice(["scalar", "list", "large_list", "fixed", "list_view", "dictionary"]))
    null_rate = float(rng.choice([0.0, 0.1, 0.5, 1.0]))
    nulls = rng.random(n) < null_rate
    if shape in ("scalar", "dictionary"):
        values = _fit(_random_values(rng, kind, n), typ)
        rows = [None if null else v for v, null in zip(values, nulls)]
        if shape == "dictionary" and kind in ("int", "text", "bytes") and not pa.types.is_binary_view(typ):
            if pa.types.is_string_view(typ):
                typ = pa.string()
            return pa.array(rows, typ).dictionary_encode()
        return pa.array(rows, typ)
    if shape == "fixed":
        width = int(rng.integers(1, 6))
        counts = np.full(n, width)
    else:
        long_lists = rng.random() < 0.1  # payloads past 127 and 16383 bytes
        counts = rng.integers(0, 300 if long_lists else 6, n)
    values = _fit(_random_values(rng, kind, int(counts.sum())), typ)
    rows, start = [], 0
    for count, null in zip(counts, nulls):
        rows.append(None if null else values[start : start + count])
        start += count
    if shape == "fixed":
        return pa.array(rows, pa.list_(typ, width))
    list_type = {"list": pa.list_, "large_list": pa.large_list, "list_view": pa.list_view}[shape]
    return pa.array(rows, list_type(typ))


def random_batch(rng: np.random.Generator) -> pa.RecordBatch:
    n = int(rng.choice([1, 2, 5, 17, 60]))
    pad = int(rng.integers(0, 4)) if rng.random() < 0.5 else 0
    names = set()
    while len(names) < int(rng.integers(1, 8)):
        names.add("".join(rng.choice(["a", "b", "/", "_", "é", "日", "\x00", "🙂"], int(rng.integers(1, 5)))))
    columns = [random_column(rng, n + 2 * pad) for _ in names]
    batch = pa.RecordBatch.from_arrays(columns, list(names))
    return batch.slice(pad, n) if pad else batch


@needs_native
class TestNativeMatchesFallback:
    """The C extension and the numpy / pyarrow fallback give the same bytes."""

    @pytest.fixture
    def both_paths(self):  # overrides conftest.py's: these tests run both paths themselves
        return "both"

    def test_fixed_cases(self, monkeypatch):
        batch = batch_of(
            i=pa.array([[1, 2], None, [], [INT64_MIN, INT64_MAX]]),
            s=pa.array(["a", None, "", "日本語" * 50]),
            f=pa.array([[0.5, math.nan], [math.inf], None, []], pa.list_(pa.float32())),
            b=pa.array([True, None, False, True]),
            d=pa.array(["x", "y", None, "x"]).dictionary_encode(),
            fb=pa.array([b"ab", None, b"cd", b"\x00\xff"], pa.binary(2)),
            dec=pa.array([decimal.Decimal("1.25"), None, decimal.Decimal("-3"), 0], pa.decimal128(10, 2)),
            lv=pa.array([[1], None, [2, 3], []], pa.list_view(pa.int64())),
            fs=pa.array([[1.0, 2.0], None, [3.0, 4.0], [5.0, 6.0]], pa.list_(pa.float64(), 2)),
            big=pa.array([list(range(5000)), [], None, [2**62] * 3000], pa.large_list(pa.int64())),
        )
        assert_same_bytes(monkeypatch, batch)
        assert_same_bytes(monkeypatch, batch.slice(1, 2))
        assert_same_bytes(monkeypatch, batch.slice(3))

    def test_null_list_backed_by_values_and_out_of_order_views(self, monkeypatch):
        values = pa.array([b"a", b"bb", b"", b"dddd", b"e", b"f"], pa.large_binary())
        lists = pa.LargeListArray.from_arrays(
            pa.array([0, 2, 5, 6], pa.int64()), values, mask=pa.array([False, True, False])
        )
        views = pa.ListViewArray.from_arrays(
            pa.array([3, 0, 1], pa.int32()), pa.array([2, 3, 0], pa.int32()), pa.array([1, 2, 3, 4, 5])
        )
        assert_same_bytes(monkeypatch, batch_of(l=lists, v=views))

    def test_large_output_and_empty_cases(self, monkeypatch):
        batch = batch_of(s=pa.array([["abc", "d"], None, ["e" * 300]]), i=pa.array([1, 2, None]))
        monkeypatch.setattr(example_encoder, "_MAX_BINARY_BYTES", 10)
        native, fallback = _both(monkeypatch, encode_examples, batch)
        assert native.type == fallback.type == pa.large_binary()
        assert native.to_pylist() == fallback.to_pylist()
        native, fallback = _both(monkeypatch, encode_features, "s", batch.column("s"))
        assert native.type == fallback.type == pa.large_binary()
        assert native.to_pylist() == fallback.to_pylist()
        monkeypatch.undo()
        assert_same_bytes(
            monkeypatch, batch_of(x=pa.array([], pa.list_(pa.int64())), y=pa.array([], pa.string()))
        )
        assert_same_bytes(monkeypatch, batch_of(x=pa.array([None, None], pa.float32())))
        assert_same_bytes(monkeypatch, batch_of(x=pa.array([[], []], pa.list_(pa.string()))))

    def test_random_batches(self, monkeypatch):
        """Random schemas of every supported kind, for a bounded time."""
        rng = np.random.default_rng(20240601)
        deadline = time.monotonic() + 3.0
        done = 0
        while done < 20 or time.monotonic() < deadline:
            batch = random_batch(rng)
            try:
                assert_same_bytes(monkeypatch, batch)
            except AssertionError as e:
                raise AssertionError(f"batch {done} differs: {batch.schema}\n{batch.to_pylist()}") from e
            done += 1

    def test_native_output_decodes_to_the_input(self, monkeypatch):
        batch = batch_of(
            ids=pa.array([[1, 2, 3], None, [INT64_MIN], []], pa.large_list(pa.int64())),
            score=pa.array([0.5, 1.5, None, -0.0], pa.float32()),
            tags=pa.array([["a", "日本"], [], ["c" * 200], None]),
        )
        monkeypatch.delenv(NATIVE_ENV, raising=False)
        parsed = [tf.train.Example.FromString(r) for r in encode_examples(batch).to_pylist()]
        # A null is left out. (Reading a missing key of a protobuf map inserts it: keys first.)
        keys = [sorted(p.features.feature) for p in parsed]
        assert keys == [["ids", "score", "tags"], ["score", "tags"], ["ids", "tags"], ["ids", "score"]]

        def values(name, kind, rows):
            return [list(getattr(parsed[r].features.feature[name], kind).value) for r in rows]

        assert values("ids", "int64_list", [0, 2, 3]) == [[1, 2, 3], [INT64_MIN], []]
        assert values("score", "float_list", [0, 1, 3]) == [[0.5], [1.5], [-0.0]]
        assert values("tags", "bytes_list", [0, 1, 2]) == [[b"a", "日本".encode()], [], [b"c" * 200]]

    def test_environment_variable_forces_the_fallback(self, monkeypatch):
        monkeypatch.setenv(NATIVE_ENV, "python")
        assert tfrecord_native.native() is None
        monkeypatch.setenv(NATIVE_ENV, "")
        assert tfrecord_native.native() is NATIVE

    def test_inconsistent_buffers_raise(self):
        counts = np.array([1, 2], np.int64)
        key = example_encoder._key_part("x")
        values = np.array([1, 2], np.int64)
        with pytest.raises(ValueError, match="counts"):
            NATIVE.encode([(0, key, counts, None, values, None)], 2, 0, 2**31 - 1)
        with pytest.raises(ValueError):
            NATIVE.encode([(0, key, counts[:1], None, values, None)], 2, 0, 2**31 - 1)
        offsets = np.array([0, 5, 3, 4], np.int64)
        with pytest.raises(ValueError, match="order"):
            NATIVE.encode([(2, key, np.array([3], np.int64), None, b"abcdef", offsets)], 1, 0, 2**31 - 1)
        offsets = np.array([0, 5, 9], np.int64)
        with pytest.raises(ValueError, match="past"):
            NATIVE.encode([(2, key, np.array([2], np.int64), None, b"abcdef", offsets)], 1, 0, 2**31 - 1)
