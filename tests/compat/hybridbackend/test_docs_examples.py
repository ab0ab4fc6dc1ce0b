"""The code examples of DeepRec-AI/HybridBackend docs/data.md ("Data Loading"), run on small
Parquet files (docs/data.md is Copyright 2021 Alibaba Group Holding Limited, Apache License 2.0).

Each example is as written but for its import lines: `import tensorflow as tf` (TensorFlow 1)
is `import tensorflow.compat.v1 as tf`, and `import hybridbackend.tensorflow as hb` imports
`_hb`, whose `data` is `beam_tensorize.tf`. As in TensorFlow 1, an example builds a graph; the
test then runs its `batch` in a session (the examples' `...`) and checks it against the
example's comment and the page's table of what each kind of column comes back as (a
variable-length list: "tf.SparseTensor / hb.data.DataFrame.Value"). The examples' paths
(`/path/to/f1.parquet`, the remote `s3://`, `oss://`, `hdfs://` files) are files of a
temporary folder, and `func`, which the page leaves undefined, yields the name of `f1`.

Not run (see README.md): the shell `export`s of section 2.5 and section 4.1, which strips
dataset ops from an exported graph with TensorFlow 1's `TransformGraph` and calls no `hb.data`.
"""

from __future__ import annotations

import collections
import os
from types import SimpleNamespace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

_ROWS = 1100  # more than the examples' batches of 1024 rows
_BLOCK = 1024  # section 3.2: "deduplicate every 1024 rows"


def _f1_table() -> pa.Table:
    """f1: `A` scalars, `B` lists of 32, `C` lists of 0 to 3 (empty ones too), `D` of 1 to 3."""
    rows = range(_ROWS)
    return pa.table({
        "A": pa.array(list(rows), pa.int64()),
        "B": pa.array([[32 * i + j for j in range(32)] for i in rows], pa.list_(pa.int64())),
        "C": pa.array([list(range(i, i + i % 4)) for i in rows], pa.list_(pa.int64())),
        "D": pa.array([[-i] * (i % 3 + 1) for i in rows], pa.list_(pa.int64())),
    })  # fmt: skip


def _remote_table(k: int) -> pa.Table:
    """The three files of section 2.5: 400 rows each of `a`, `b` (not selected) and `c`."""
    a = [1000 * k + i for i in range(400)]
    return pa.table({"a": a, "b": [str(v) for v in a], "c": [v / 2 for v in a]})


def _user_rows() -> dict[str, list]:
    """The rows before deduplication (section 3.2): a user's features follow from the user."""
    users = [(i * 7) % 50 for i in range(_ROWS)]
    return {
        "user": users,
        "user-feat-0": [[100 * u + j for j in range(32)] for u in users],
        "user-feat-1": [[u] * (u % 4) for u in users],
        "item-feat-0": [[i] * (i % 3) for i in range(_ROWS)],
    }


def _deduplicate(rows: dict[str, list], path: str) -> None:
    """Deduplicated as docs/tutorial/ranking/taobao/data/deduplicate.py does it: per block of
    rows, the distinct users (`np.unique`), each user column's value at a user's first row,
    `user-index` (each row's user among them) and the other columns as one list per block."""
    user_cols, non_user_cols = ["user", "user-feat-0", "user-feat-1"], ["item-feat-0"]
    columns = {name: [] for name in ["user-index", *user_cols, *non_user_cols]}
    for start in range(0, _ROWS, _BLOCK):
        users = rows["user"][start : start + _BLOCK]
        val, index, inverse = np.unique(users, return_index=True, return_inverse=True)
        columns["user-index"].append(inverse.tolist())
        columns["user"].append(val.tolist())
        for name in user_cols[1:]:
            columns[name].append([rows[name][start + i] for i in index])
        for name in non_user_cols:
            columns[name].append(rows[name][start : start + _BLOCK])
    types = {"user-index": pa.list_(pa.int64()), "user": pa.list_(pa.int64())}
    table = pa.table({
        name: pa.array(values, types.get(name, pa.list_(pa.list_(pa.int64()))))
        for name, values in columns.items()
    })  # fmt: skip
    pq.write_table(table, path, compression="zstd")


@pytest.fixture(scope="module")
def files(tmp_path_factory) -> SimpleNamespace:
    folder = tmp_path_factory.mktemp("hybridbackend_docs")
    f1 = str(folder / "f1.parquet")
    pq.write_table(_f1_table(), f1)
    remote = []
    for k in range(3):
        remote.append(str(folder / f"f{k + 1}-remote.parquet"))
        pq.write_table(_remote_table(k), remote[-1])
    dedup = str(folder / "f1-deduplicated.parquet")
    _deduplicate(_user_rows(), dedup)
    return SimpleNamespace(f1=f1, remote=remote, dedup=dedup)


def _lists(value) -> list[list]:
    """A fetched variable-length list column as one list per row, whichever form the page's
    table allows: a `tf.SparseTensor`'s value or an `hb.data.DataFrame.Value`."""
    import tensorflow as tf

    if isinstance(value, tf.compat.v1.SparseTensorValue):
        rows = [[] for _ in range(value.dense_shape[0])]
        for (row, *_), v in zip(value.indices.tolist(), value.values.tolist()):
            rows[row].append(v)
        return rows
    assert type(value).__name__ == "_Value", f"not a tf.SparseTensor nor a DataFrame.Value: {type(value)}"
    splits = value.nested_row_splits[0].tolist()
    values = value.values.tolist()
    return [values[splits[i] : splits[i + 1]] for i in range(len(splits) - 1)]


def _sparse_lists(value) -> list[list]:
    """A column the example's comment says is a sparse tensor, as one list per row."""
    import tensorflow as tf

    assert isinstance(value, tf.compat.v1.SparseTensorValue), f"not a tf.SparseTensor: {type(value)}"
    return _lists(value)


def test_read_and_batch_example_1(files):
    """2.3 Read and batch, Example 1."""
    import tensorflow.compat.v1 as tf

    from tests.compat.hybridbackend import _hb as hb

    with tf.Graph().as_default() as graph:
        # Read from a parquet file.
        ds = hb.data.Dataset.from_parquet(files.f1)
        ds = ds.batch(1024)
        ds = ds.prefetch(4)
        it = tf.data.make_one_shot_iterator(ds)
        batch = it.get_next()
        # {'a': tensora, 'c': tensorc}

    with tf.Session(graph=graph) as sess:
        result = sess.run(batch)
    table = _f1_table().slice(0, 1024).to_pydict()
    assert sorted(result) == ["A", "B", "C", "D"]
    assert result["A"].tolist() == table["A"]
    for name in "BCD":
        assert _lists(result[name]) == table[name], name


def test_read_and_batch_example_2(files):
    """2.3 Read and batch, Example 2, as written: a Dataset of file names without `fields`.
    HybridBackend refuses it ("`fields` must be specified": no file can be opened while the
    graph is built), and so do we; with the fields the comment names, it reads them."""
    import tensorflow.compat.v1 as tf

    from tests.compat.hybridbackend import _hb as hb

    def func():
        yield files.f1

    with tf.Graph().as_default():
        filenames = tf.data.Dataset.from_generator(func, tf.string, tf.TensorShape([]))
        with pytest.raises(
            ValueError, match=r"a tf\.data\.Dataset of file names in a graph needs a DataFrame\.Field"
        ):
            hb.data.Dataset.from_parquet(filenames)

    with tf.Graph().as_default() as graph:
        filenames = tf.data.Dataset.from_generator(func, tf.string, tf.TensorShape([]))
        fields = [
            hb.data.DataFrame.Field("A", tf.int64),
            hb.data.DataFrame.Field("C", tf.int64, ragged_rank=1),
        ]
        ds = hb.data.Dataset.from_parquet(filenames, fields=fields)
        ds = ds.batch(1024)
        ds = ds.prefetch(4)
        it = tf.data.make_one_shot_iterator(ds)
        batch = it.get_next()
        # {'A': scalar_tensor, 'C': sparse_tensor}

    with tf.Session(graph=graph) as sess:
        result = sess.run(batch)
    table = _f1_table().slice(0, 1024).to_pydict()
    assert result["A"].tolist() == table["A"]
    assert _sparse_lists(result["C"]) == table["C"]


def test_read_shuffle_and_batch_example(files):
    """2.4 Read, shuffle and batch."""
    import tensorflow.compat.v1 as tf

    from tests.compat.hybridbackend import _hb as hb

    def func():
        yield files.f1

    with tf.Graph().as_default() as graph:
        filenames = tf.data.Dataset.from_generator(func, tf.string, tf.TensorShape([]))
        # Define data frame fields.
        fields = [
            hb.data.DataFrame.Field("A", tf.int64),
            hb.data.DataFrame.Field("C", tf.int64, ragged_rank=1),
        ]
        # Read from parquet files by reading upstream filename dataset.
        ds = hb.data.Dataset.from_parquet(filenames, fields=fields)
        ds = ds.shuffle_batch(1024, buffer_size=2048)
        ds = ds.prefetch(4)
        it = tf.data.make_one_shot_iterator(ds)
        batch = it.get_next()
        # {'a': tensora, 'c': tensorc}

    with tf.Session(graph=graph) as sess:
        result = sess.run(batch)
    table = _f1_table().to_pydict()
    assert sorted(result) == ["A", "C"]
    rows = list(zip(result["A"].tolist(), map(tuple, _lists(result["C"]))))
    assert len(rows) == 1024
    assert not collections.Counter(rows) - collections.Counter(zip(table["A"], map(tuple, table["C"])))


def test_read_selected_fields_from_remote_files_example(files):
    """2.5 Read selected fields from files on S3/OSS/HDFS (the three files are local here)."""
    import tensorflow.compat.v1 as tf

    from tests.compat.hybridbackend import _hb as hb

    with tf.Graph().as_default() as graph:
        # Read from parquet files on remote services for selected fields.
        ds = hb.data.Dataset.from_parquet(files.remote, fields=["a", "c"])
        ds = ds.batch(1024)
        ds = ds.prefetch(4)
        it = tf.data.make_one_shot_iterator(ds)
        batch = it.get_next()
        # {'a': tensora, 'c': tensorc}

    with tf.Session(graph=graph) as sess:
        result = sess.run(batch)
    assert sorted(result) == ["a", "c"]
    rows = collections.Counter(zip(result["a"].tolist(), result["c"].tolist()))
    assert sum(rows.values()) == 1024
    every = collections.Counter()
    for k in range(3):
        table = _remote_table(k)
        every.update(zip(table["a"].to_pylist(), table["c"].to_pylist()))
    assert not rows - every


def test_tensors_and_sparse_tensors_example(files):
    """2.6 Tensors and sparse tensors."""
    import tensorflow.compat.v1 as tf

    from tests.compat.hybridbackend import _hb as hb

    with tf.Graph().as_default() as graph:
        # Define data frame fields.
        fields = [
            hb.data.DataFrame.Field("A", tf.int64),  # scalar
            hb.data.DataFrame.Field("AA", tf.int64, default_value=42),  # field not exists
            hb.data.DataFrame.Field("B", tf.int64, shape=[32]),  # fixed-length list
            hb.data.DataFrame.Field("C", tf.int64, ragged_rank=1),  # variable-length list
            hb.data.DataFrame.Field("D", tf.int64, ragged_rank=1),
        ]  # variable-length list
        # Read from parquet files by reading upstream filename dataset.
        ds = hb.data.Dataset.from_parquet(files.f1, fields=fields, to_dense={"D": True})
        ds = ds.batch(1024)
        ds = ds.prefetch(4)
        it = tf.data.make_one_shot_iterator(ds)
        batch = it.get_next()
        # {'A': scalar_tensor, 'AA': [42] * 1024, 'B': list_tensor, 'C': sparse_tensor, 'D': padded_list_tensor}

    with tf.Session(graph=graph) as sess:
        result = sess.run(batch)
    table = _f1_table().slice(0, 1024).to_pydict()
    assert sorted(result) == ["A", "AA", "B", "C", "D"]
    assert result["A"].tolist() == table["A"]
    assert result["AA"].tolist() == [42] * 1024
    assert result["B"].shape == (1024, 32) and result["B"].tolist() == table["B"]
    assert _sparse_lists(result["C"]) == table["C"]
    assert result["D"].tolist() == [d + [0] * (3 - len(d)) for d in table["D"]]


def test_read_deduplicated_data_and_restore_example(files):
    """3.2 Read deduplicated data and restore: `batch(1)` holds the rows of one stored block
    (1024), the original rows, in order, the index column among them. (HybridBackend checks
    fields against the stored columns, so it would refuse `shape=[32]` on `user-feat-0`,
    stored as lists of lists; the fields describe the restored rows here.)"""
    import tensorflow.compat.v1 as tf

    from tests.compat.hybridbackend import _hb as hb

    with tf.Graph().as_default() as graph:
        # Define data frame fields.
        fields = [
            hb.data.DataFrame.Field("user", tf.int64),  # scalar
            hb.data.DataFrame.Field("user-index", tf.int64),  # scalar
            hb.data.DataFrame.Field("user-feat-0", tf.int64, shape=[32]),  # fixed-length list
            hb.data.DataFrame.Field("user-feat-1", tf.int64, ragged_rank=1),  # variable-length list
            hb.data.DataFrame.Field("item-feat-0", tf.int64, ragged_rank=1),
        ]  # variable-length list

        # Read from deduplicated parquet files (deduplicate every 1024 rows)
        # by specifying the `key` and `value` feature columns.
        ds = hb.data.Dataset.from_parquet(
            files.dedup,
            fields=fields,
            key_idx_field_names=["user-index"],
            value_field_names=[["user", "user-feat-0", "user-feat-1"]],
        )
        ds = ds.batch(1)
        ds = ds.prefetch(4)
        it = tf.data.make_one_shot_iterator(ds)
        batch = it.get_next()

    with tf.Session(graph=graph) as sess:
        result = sess.run(batch)
    rows = _user_rows()
    n = len(result["user"])
    assert n == 1024
    assert result["user-index"].tolist() == np.unique(rows["user"][:n], return_inverse=True)[1].tolist()
    assert result["user"].tolist() == rows["user"][:n]
    assert (
        result["user-feat-0"].shape == (n, 32) and result["user-feat-0"].tolist() == rows["user-feat-0"][:n]
    )
    assert _lists(result["user-feat-1"]) == rows["user-feat-1"][:n]
    assert _lists(result["item-feat-0"]) == rows["item-feat-0"][:n]
