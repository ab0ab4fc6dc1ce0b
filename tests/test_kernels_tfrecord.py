"""Tests for beam_tensorize.kernels.tfrecord.framing (checked against TensorFlow's reader/writer)."""

from __future__ import annotations

import gzip
import io
import os
import struct

import google_crc32c
import numpy as np
import pyarrow as pa
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf

from beam_tensorize.kernels.tfrecord.framing import (
    frame_records,
    iter_tfrecords,
    masked_crc32c,
    write_tfrecords,
)

RECORDS = [b"", b"a", bytes(range(256)), b"xyz" * 50_000, b"\x00" * 7]


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
