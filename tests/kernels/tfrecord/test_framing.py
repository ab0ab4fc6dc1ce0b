"""Tests for beam_tensorize.kernels.tfrecord.framing (checked against TensorFlow's reader/writer).

Every test runs twice (the ``both_paths`` fixture of conftest.py): with the C extension
``_tfrecordencode`` (skipped when it is not built) and with the numpy / pyarrow fallback. The
tests at the end compare the two byte for byte and check the extension's CRC-32C.
"""

from __future__ import annotations

import gzip
import io
import os
import struct
import time

import google_crc32c
import numpy as np
import pyarrow as pa
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf

from beam_tensorize.kernels.tfrecord import native as tfrecord_native
from beam_tensorize.kernels.tfrecord.framing import (
    NATIVE_ENV,
    frame_records,
    iter_tfrecords,
    masked_crc32c,
    write_tfrecords,
)

RECORDS = [b"", b"a", bytes(range(256)), b"xyz" * 50_000, b"\x00" * 7]

NATIVE = tfrecord_native.extension()
needs_native = pytest.mark.skipif(NATIVE is None, reason="the C extension _tfrecordencode is not built")


pytestmark = pytest.mark.usefixtures("both_paths")  # see conftest.py


def tf_read(path: str, compression: str = "") -> list[bytes]:
    dataset = tf.data.TFRecordDataset(path, compression_type=compression)
    return [record.numpy() for record in dataset]


def test_crc32c_known_vector():
    assert google_crc32c.value(b"123456789") == 0xE3069283
    crc = 0xE3069283
    assert masked_crc32c(b"123456789") == (((crc >> 15) | (crc << 17)) + 0xA282EAD8) % 2**32
    assert masked_crc32c(b"") == 0xA282EAD8
    assert masked_crc32c(bytearray(b"123456789")) == masked_crc32c(memoryview(b"123456789"))


def test_frame_layout():
    framed = frame_records([b"abc"])
    length, length_crc = struct.unpack("<QI", framed[:12])
    assert length == 3
    assert length_crc == masked_crc32c(struct.pack("<Q", 3))
    assert framed[12:15] == b"abc"
    assert struct.unpack("<I", framed[15:]) == (masked_crc32c(b"abc"),)


def test_length_checksums_for_many_lengths():
    lengths = [0, 1, 255, 256, 65535, 70000, 1 << 20]
    framed = frame_records([b"q" * n for n in lengths])
    pos = 0
    for n in lengths:
        length, length_crc = struct.unpack_from("<QI", framed, pos)
        assert length == n
        assert length_crc == masked_crc32c(struct.pack("<Q", n))
        pos += 16 + n
    assert pos == len(framed)


@pytest.mark.parametrize(
    "records",
    [
        RECORDS,
        pa.array(RECORDS, pa.binary()),
        pa.array([b"pad", *RECORDS], pa.large_binary()).slice(1),
        pa.chunked_array([pa.array(RECORDS[:2]), pa.array(RECORDS[2:])]),
        [bytearray(r) for r in RECORDS],
    ],
    ids=["list", "binary", "sliced-large-binary", "chunked", "bytearray"],
)
def test_frame_records_read_by_tensorflow(tmp_path, records):
    path = tmp_path / "data.tfrecord"
    path.write_bytes(frame_records(records))
    assert tf_read(str(path)) == RECORDS
    with open(path, "rb") as f:
        assert list(iter_tfrecords(f, str(path))) == RECORDS


def test_string_array_is_framed_as_utf8(tmp_path):
    path = tmp_path / "s.tfrecord"
    path.write_bytes(frame_records(pa.array(["é", "", "abc"])))
    assert tf_read(str(path)) == ["é".encode(), b"", b"abc"]


def test_empty_input():
    assert frame_records([]) == b""
    assert frame_records(pa.array([], pa.binary())) == b""
    assert list(iter_tfrecords(io.BytesIO(b""))) == []


def test_tensorflow_writer_read_by_iter_tfrecords(tmp_path):
    path = str(tmp_path / "tf.tfrecord")
    with tf.io.TFRecordWriter(path) as writer:
        for record in RECORDS:
            writer.write(record)
    with open(path, "rb") as f:
        assert list(iter_tfrecords(f, path)) == RECORDS
    with open(path, "rb") as f:
        assert f.read() == frame_records(RECORDS)


def test_tensorflow_gzip_writer_read_through_gzip(tmp_path):
    path = str(tmp_path / "tf.tfrecord.gz")
    with tf.io.TFRecordWriter(path, tf.io.TFRecordOptions(compression_type="GZIP")) as writer:
        for record in RECORDS:
            writer.write(record)
    with gzip.open(path, "rb") as f:
        assert list(iter_tfrecords(f, path)) == RECORDS


def test_write_tfrecords_gzip_read_by_tensorflow(tmp_path):
    path = str(tmp_path / "ours.tfrecord.gz")
    records = [f"record-{i}".encode() * (i % 7) for i in range(20_000)]
    with gzip.open(path, "wb") as f:
        written = write_tfrecords(f, (r for r in records))
    assert written == sum(16 + len(r) for r in records)
    assert tf_read(path, "GZIP") == records


def test_write_tfrecords_returns_bytes_written(tmp_path):
    path = tmp_path / "w.tfrecord"
    array = pa.chunked_array([pa.array(RECORDS[:3]), pa.array([], pa.binary()), pa.array(RECORDS[3:])])
    with open(path, "wb") as f:
        written = write_tfrecords(f, array)
    assert written == path.stat().st_size == sum(16 + len(r) for r in RECORDS)
    assert tf_read(str(path)) == RECORDS
    buffer = io.BytesIO()
    assert write_tfrecords(buffer, pa.array(RECORDS)) == written
    assert write_tfrecords(io.BytesIO(), []) == 0


def test_flipped_data_byte_names_path_and_offset():
    framed = bytearray(frame_records([b"first", b"second record", b"third"]))
    second = 16 + len(b"first")
    framed[second + 12 + 3] ^= 0x01
    with pytest.raises(ValueError, match=rf"bad\.tfrecord.*data.*byte offset {second}\b"):
        list(iter_tfrecords(io.BytesIO(bytes(framed)), "gs://b/bad.tfrecord"))
    # Without verification the (corrupt) data is returned.
    records = list(iter_tfrecords(io.BytesIO(bytes(framed)), verify_crc=False))
    assert records[0] == b"first" and records[1] != b"second record" and len(records) == 3


def test_flipped_length_byte_names_path_and_offset():
    framed = bytearray(frame_records([b"first", b"second"]))
    second = 16 + len(b"first")
    framed[second] ^= 0x02
    with pytest.raises(ValueError, match=rf"p\.tfr.*length.*byte offset {second}\b"):
        list(iter_tfrecords(io.BytesIO(bytes(framed)), "p.tfr"))


def test_flipped_data_crc_byte_is_detected():
    framed = bytearray(frame_records([b"only"]))
    framed[-1] ^= 0x80
    with pytest.raises(ValueError, match="byte offset 0"):
        list(iter_tfrecords(io.BytesIO(bytes(framed)), "x"))


@pytest.mark.parametrize("cut", [1, 4, 8, 13, 20])
def test_truncated_stream_raises(cut):
    framed = frame_records([b"complete", b"0123456789"])
    second = 16 + len(b"complete")
    truncated = framed[: len(framed) - cut]
    reader = iter_tfrecords(io.BytesIO(truncated), "cut.tfrecord")
    assert next(reader) == b"complete"
    with pytest.raises(ValueError, match=rf"cut\.tfrecord.*truncated.*byte offset {second}\b"):
        next(reader)


def test_truncated_header_raises():
    framed = frame_records([b"a"]) + b"\x05\x00\x00"
    with pytest.raises(ValueError, match="truncated TFRecord header at byte offset 17"):
        list(iter_tfrecords(io.BytesIO(framed), "h"))


class _TrickleReader(io.RawIOBase):
    """A raw stream that returns at most a few bytes per read call."""

    def __init__(self, data: bytes, step: int):
        self._data = data
        self._pos = 0
        self._step = step

    def readable(self):
        return True

    def read(self, size=-1):
        size = self._step if size < 0 else min(size, self._step)
        chunk = self._data[self._pos : self._pos + size]
        self._pos += len(chunk)
        return chunk


def test_short_reads_are_handled():
    framed = frame_records(RECORDS)
    assert list(iter_tfrecords(_TrickleReader(framed, 5))) == RECORDS


def test_many_records_round_trip():
    rng = np.random.default_rng(0)
    records = [rng.bytes(int(n)) for n in rng.integers(0, 600, 5000)]
    framed = frame_records(pa.array(records, pa.binary()))
    assert framed == frame_records(records)
    assert list(iter_tfrecords(io.BytesIO(framed))) == records


def test_null_and_non_binary_arrays_are_rejected():
    with pytest.raises(ValueError, match="record 1"):
        frame_records(pa.array([b"a", None]))
    with pytest.raises(TypeError):
        frame_records(pa.array([1, 2]))


def test_write_tfrecords_slices_large_arrays(monkeypatch):
    from beam_tensorize.kernels.tfrecord import framing as tfrecord

    monkeypatch.setattr(tfrecord, "_WRITE_ARRAY_SLICE", 2)
    records = pa.chunked_array([pa.array(RECORDS), pa.array([b"x"] * 5)])
    buffer = io.BytesIO()
    written = write_tfrecords(buffer, records)
    assert buffer.getvalue() == frame_records(RECORDS + [b"x"] * 5)
    assert written == len(buffer.getvalue())


# --------------------------------------------------------------------------- #
# Native against fallback, byte for byte
# --------------------------------------------------------------------------- #


def _fallback(records) -> bytes:
    old = os.environ.get(NATIVE_ENV)
    os.environ[NATIVE_ENV] = "python"
    try:
        return frame_records(records)
    finally:
        if old is None:
            del os.environ[NATIVE_ENV]
        else:
            os.environ[NATIVE_ENV] = old


def _random_records(rng: np.random.Generator):
    """Random records in every input form frame_records takes (Arrow types, slices, chunks,
    lists of bytes-likes), and the plain bytes they hold."""
    n = int(rng.choice([1, 2, 7, 100, 1000]))
    sizes = rng.choice(np.array([0, 1, 7, 8, 9, 31, 33, 127, 128, 1000, 70_000]), n, p=None)
    records = [rng.bytes(int(size)) for size in sizes]
    form = str(
        rng.choice(["binary", "large_binary", "string", "large_string", "binary_view", "chunked", "list"])
    )
    if form == "list":
        kind = str(rng.choice(["bytes", "bytearray", "memoryview"]))
        wrap = {"bytes": bytes, "bytearray": bytearray, "memoryview": memoryview}[kind]
        return [wrap(r) for r in records], records
    if form in ("string", "large_string"):
        texts = ["".join(rng.choice(["a", "é", "日", "🙂", "\x00"], int(size) // 4)) for size in sizes]
        records = [t.encode() for t in texts]
        values = pa.array(texts, getattr(pa, form)())
    elif form == "chunked":
        cut = int(rng.integers(0, n + 1))
        values = pa.chunked_array(
            [pa.array(records[:cut], pa.binary()), pa.array(records[cut:], pa.binary())]
        )
        return values, records
    else:
        values = pa.array(records, getattr(pa, form)())
    start = int(rng.integers(0, n))
    stop = int(rng.integers(start, n + 1))
    return values.slice(start, stop - start), records[start:stop]


@needs_native
class TestNativeMatchesFallback:
    """The C extension frames exactly as the numpy / pyarrow fallback does."""

    @pytest.fixture
    def both_paths(self, monkeypatch):  # overrides conftest.py's: these tests run both paths
        monkeypatch.delenv(NATIVE_ENV, raising=False)
        return "both"

    def test_crc32c_matches_google_crc32c(self):
        rng = np.random.default_rng(1)
        data = rng.bytes(5000)
        for size in [*range(0, 80), 255, 256, 1000, 4097]:
            for start in range(9):
                piece = memoryview(data)[start : start + size]
                expected = google_crc32c.value(bytes(piece))
                assert NATIVE.crc32c(piece) == expected, (size, start)
                assert NATIVE.crc32c(piece, True) == expected, (size, start)  # the table code
        assert NATIVE.crc32c(b"123456789") == 0xE3069283
        assert isinstance(NATIVE.hardware_crc(), bool)

    def test_random_records(self):
        """Random records in every input form, for a bounded time."""
        rng = np.random.default_rng(7)
        deadline = time.monotonic() + 2.0
        done = 0
        while done < 20 or time.monotonic() < deadline:
            values, records = _random_records(rng)
            native = frame_records(values)
            assert native == _fallback(values), (done, type(values))
            assert list(iter_tfrecords(io.BytesIO(native))) == records
            done += 1

    def test_encoded_examples_framed_and_read_by_tensorflow(self, tmp_path):
        from beam_tensorize.kernels.tfrecord.example_encoder import encode_examples

        batch = pa.RecordBatch.from_pydict(
            {
                "ids": pa.array([[1, 2], None, [3] * 300], pa.large_list(pa.int64())),
                "name": pa.array(["a", "日本", None]),
                "score": pa.array([0.5, None, 2.0], pa.float32()),
            }
        )
        examples = encode_examples(batch)
        path = tmp_path / "examples.tfrecord"
        buffer = io.BytesIO()
        write_tfrecords(buffer, examples.slice(1))
        path.write_bytes(buffer.getvalue())
        assert buffer.getvalue() == _fallback(examples.slice(1))
        assert tf_read(str(path)) == examples.to_pylist()[1:]
        parsed = tf.train.Example.FromString(tf_read(str(path))[1])
        assert list(parsed.features.feature["ids"].int64_list.value) == [3] * 300

    def test_inconsistent_offsets_raise(self):
        data = b"abcdef"
        with pytest.raises(ValueError, match="order"):
            NATIVE.frame(np.array([0, 4, 2], np.int64), data, 2, 8)
        with pytest.raises(ValueError, match="past"):
            NATIVE.frame(np.array([0, 7], np.int32), data, 1, 4)
        with pytest.raises(ValueError, match="short"):
            NATIVE.frame(np.array([0, 1], np.int64), data, 2, 8)
        with pytest.raises(ValueError, match="width"):
            NATIVE.frame(np.array([0, 1], np.int64), data, 1, 2)
        with pytest.raises(TypeError):
            NATIVE.frame_list([b"a", 1])
