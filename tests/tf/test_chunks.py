"""Lists read by `Dataset.from_parquet` become `tf.SparseTensor`s whose indices are made with
the chunk (in C, or numpy without the extension): the same tensors TensorFlow's own
`RaggedTensor.to_sparse` makes, batch by batch, across chunks and files."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import tensorflow as tf

from beam_tensorize.tf import Dataset, _chunks, _reader


@pytest.fixture(params=["native", "numpy"])
def indices_path(request, monkeypatch):
    if request.param == "native":
        if _chunks._NATIVE is None:  # setup.py builds it; a build without a compiler has none
            pytest.fail("the C extension beam_tensorize.tf._sparseindex is not built")
    else:
        monkeypatch.setattr(_chunks, "_NATIVE", None)
    return request.param


def _lists(rng, rows, make):
    """Random lists of 0-4 values, about one in ten null."""
    out = []
    for _ in range(rows):
        if rng.random() < 0.1:
            out.append(None)
        else:
            out.append([make(rng) for _ in range(int(rng.integers(0, 5)))])
    return out


def _write(path, rng, rows):
    table = pa.table(
        {
            "ids": pa.array(_lists(rng, rows, lambda r: int(r.integers(0, 1000))), pa.list_(pa.int64())),
            "scores": pa.array(_lists(rng, rows, lambda r: float(r.random())), pa.list_(pa.float32())),
            "tags": pa.array(_lists(rng, rows, lambda r: f"t{int(r.integers(0, 9))}"), pa.list_(pa.string())),
            "empty": pa.array([[] for _ in range(rows)], pa.list_(pa.int64())),
            "age": pa.array(rng.integers(0, 99, rows)),
        }
    )
    pq.write_table(table, path, row_group_size=max(1, rows // 3))
    return table


def _expected(table, batch_size, drop_remainder):
    """Each batch's columns as `tf.SparseTensor`s hold them: indices, values, dense shape."""
    rows = table.num_rows
    for start in range(0, rows, batch_size):
        if drop_remainder and start + batch_size > rows:
            return
        piece = table.slice(start, batch_size).to_pydict()
        batch = {"age": piece["age"]}
        for name in ("ids", "scores", "tags", "empty"):
            lists = [v or [] for v in piece[name]]
            batch[name] = (
                [[r, p] for r, values in enumerate(lists) for p in range(len(values))],
                [v.encode() if isinstance(v, str) else v for values in lists for v in values],
                [len(lists), max(map(len, lists))],
            )
        yield batch


@pytest.mark.parametrize(
    ("batch_size", "drop_remainder"), [(7, False), (7, True), (64, False), (64, True), (5_000, False)]
)
def test_lists_come_as_the_sparse_tensors_tensorflow_makes(
    tmp_path, monkeypatch, indices_path, batch_size, drop_remainder
):
    """Chunks of 63 rows (batches of 7: nine per chunk), of 64 (batches of 64: a chunk is a
    batch) and one chunk for all; the rows of two files run on across the file boundary."""
    monkeypatch.setattr(_reader, "_CHUNK_ROWS", 64)
    rng = np.random.default_rng(batch_size)
    first, second = _write(tmp_path / "a.parquet", rng, 1_001), _write(tmp_path / "b.parquet", rng, 234)
    table = pa.concat_tables([first, second])
    files = [str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet")]
    dataset = Dataset.from_parquet(files, batch_size=batch_size, drop_remainder=drop_remainder)
    got = list(dataset)
    want = list(_expected(table, batch_size, drop_remainder))
    assert len(got) == len(want) == (1_235 // batch_size if drop_remainder else -(-1_235 // batch_size))
    for batch, expected in zip(got, want):
        assert batch["age"].numpy().tolist() == expected["age"]
        for name in ("ids", "scores", "tags", "empty"):
            value = batch[name]
            assert isinstance(value, tf.SparseTensor)
            got_lists = (
                value.indices.numpy().tolist(),
                value.values.numpy().tolist(),
                value.dense_shape.numpy().tolist(),
            )
            assert got_lists == expected[name], name


def test_the_c_and_numpy_indices_agree_and_bad_splits_are_refused():
    rng = np.random.default_rng(3)
    lengths = rng.integers(0, 7, (3, 4, 5))
    splits = np.zeros((3, 4, 6), np.int64)
    np.cumsum(lengths, axis=2, out=splits[:, :, 1:])
    native = _chunks._sparse_layout(splits, 13)
    saved, _chunks._NATIVE = _chunks._NATIVE, None
    try:
        fallback = _chunks._sparse_layout(splits, 13)
    finally:
        _chunks._NATIVE = saved
    for a, b in zip(native, fallback):
        assert a.tolist() == b.tolist()
    indices, counts, shapes = native
    assert counts.tolist() == lengths.sum(axis=2).tolist()
    assert shapes[:, :, 0].tolist() == [[5] * 4, [5] * 4, [3] * 4]  # 13 rows: 5, 5, 3
    assert shapes[:, :, 1].tolist() == lengths.max(axis=2).tolist()
    first = lengths[0, 0]
    assert indices[: first.sum()].tolist() == [[r, p] for r in range(5) for p in range(first[r])]
    if saved is not None:
        bad = splits.copy()
        bad[0, 0, 2] = bad[0, 0, 1] - 1
        with pytest.raises(ValueError, match="decreasing splits"):
            saved.fill_indices(bad, np.empty(indices.shape, np.int64), 5, np.empty((3, 4), np.int64))
        with pytest.raises(ValueError, match="more values than room"):
            saved.fill_indices(splits, np.empty((1, 2), np.int64), 5, np.empty((3, 4), np.int64))
