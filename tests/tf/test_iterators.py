"""`Batches`: eager iterators rebuild each batch in one pass, and give exactly what
TensorFlow's own iterators give (values, dtypes, shapes, key order, the end), both ways of
making a sparse tensor; in a `tf.function`, for other structures and for datasets made from
it, iteration is TensorFlow's own."""

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import tensorflow as tf
from tensorflow.python.data.ops import iterator_ops

from beam_tensorize.tf import DataFrame, Dataset, _iterators
from beam_tensorize.tf._iterators import Batches


def _batches() -> tf.data.Dataset:
    """Three batches: dense numbers and strings, sparse numbers and strings of rank 2 and 3,
    an empty sparse tensor; keys not in sorted order."""

    def batch(i):
        return {
            "zeta": tf.constant([i, i + 1], tf.int64),
            "name": tf.constant([b"a%d" % i, b""]),
            "tags": tf.sparse.from_dense(tf.constant([[i + 1, 0, 3], [0, 0, 0]], tf.int64)),
            "alpha": tf.sparse.from_dense(tf.constant([[b"x", b""], [b"", b"y%d" % i]])),
            "cube": tf.sparse.from_dense(tf.constant([[[1.5, 0.0]], [[0.0, float(i)]]], tf.float32)),
            "empty": tf.sparse.SparseTensor(tf.zeros([0, 2], tf.int64), tf.zeros([0], tf.float64), [2, 0]),
            "weight": tf.constant([[0.5, 1.0], [2.0, 4.0]], tf.float32) * i,
        }

    dataset = tf.data.Dataset.from_tensors(batch(0))
    for i in (1, 2):
        dataset = dataset.concatenate(tf.data.Dataset.from_tensors(batch(i)))
    return dataset


def _same(ours: dict, theirs: dict) -> None:
    assert list(ours) == list(theirs)
    for name, expected in theirs.items():
        got = ours[name]
        assert type(got) is type(expected), name
        if isinstance(expected, tf.SparseTensor):
            assert got.shape == expected.shape and got.shape.as_list() == expected.shape.as_list(), name
            assert got.dtype == expected.dtype and got.indices.dtype == tf.int64, name
            for part in ("indices", "values", "dense_shape"):
                np.testing.assert_array_equal(getattr(got, part).numpy(), getattr(expected, part).numpy())
            np.testing.assert_array_equal(
                tf.sparse.to_dense(got).numpy(), tf.sparse.to_dense(expected).numpy()
            )
        else:
            assert got.dtype == expected.dtype and got.shape == expected.shape, name
            np.testing.assert_array_equal(got.numpy(), expected.numpy())


@pytest.mark.parametrize("in_place", [True, False], ids=["in-place", "constructor"])
def test_an_eager_iterator_gives_what_tensorflow_s_own_gives(monkeypatch, in_place):
    assert _iterators._IN_PLACE  # this TensorFlow's SparseTensor is its four attributes
    monkeypatch.setattr(_iterators, "_IN_PLACE", in_place)
    impl = _batches()
    dataset = Batches(impl)
    assert dataset.element_spec == impl.element_spec
    iterator = iter(dataset)
    assert type(iterator) is _iterators._EagerIterator
    ours, theirs = list(iterator), list(impl)
    assert len(ours) == len(theirs) == 3
    for a, b in zip(ours, theirs):
        _same(a, b)
    with pytest.raises(StopIteration):
        next(iterator)
    # what is built from the batches works on them as on TensorFlow's
    assert tf.sparse.reduce_sum(ours[2]["tags"]).numpy() == 6
    assert tf.sparse.to_dense(ours[1]["alpha"]).numpy().tolist() == [[b"x", b""], [b"", b"y1"]]
    assert ours[0]["cube"].shape.as_list() == [2, 1, 2]
    assert tf.sparse.to_dense(ours[0]["empty"]).shape.as_list() == [2, 0]


def test_in_a_tf_function_and_for_datasets_made_from_it_iteration_is_tensorflow_s():
    dataset = Batches(_batches())

    @tf.function
    def total(ds):
        out = tf.constant(0, tf.int64)
        for batch in ds:
            out += tf.sparse.reduce_sum(batch["tags"]) + tf.reduce_sum(batch["zeta"])
        return out

    assert int(total(dataset)) == (1 + 3 + 0 + 1) + (2 + 3 + 1 + 2) + (3 + 3 + 2 + 3)
    assert type(iter(dataset.prefetch(1))) is iterator_ops.OwnedIterator
    _same(next(iter(dataset.prefetch(1))), next(iter(_batches())))


def test_a_nest_of_batches_and_labels_is_rebuilt_too():
    impl = _batches().map(lambda batch: (batch, {"label": batch["zeta"] * 2, "tags": batch["tags"]}))
    dataset = Batches(impl)
    assert type(iter(dataset)) is _iterators._EagerIterator
    for (features, labels), (want_features, want_labels) in zip(dataset, impl):
        _same(features, want_features)
        _same(labels, want_labels)
    # a dict holding named tuples (ParquetDataset's lists as DataFrame.Values)
    values = Batches(
        _batches().map(lambda b: {"v": DataFrame.Value(b["weight"][0], (b["zeta"],)), "z": b["zeta"]})
    )
    for got, want in zip(values, values._impl):
        assert type(got["v"]) is DataFrame.Value and list(got) == ["v", "z"]
        np.testing.assert_array_equal(got["v"].values.numpy(), want["v"].values.numpy())
        np.testing.assert_array_equal(
            got["v"].nested_row_splits[0].numpy(), want["v"].nested_row_splits[0].numpy()
        )
        np.testing.assert_array_equal(got["z"].numpy(), want["z"].numpy())


def test_other_kinds_of_elements_are_iterated_by_tensorflow():
    ragged = tf.data.Dataset.from_tensors({"a": [[1]]}).map(
        lambda d: {"a": tf.RaggedTensor.from_tensor(d["a"])}
    )
    plain = lambda t: t.to_list() if isinstance(t, tf.RaggedTensor) else t.numpy().tolist()  # noqa: E731
    dataset = Batches(ragged)
    assert type(iter(dataset)) is iterator_ops.OwnedIterator
    got = [tf.nest.map_structure(plain, x) for x in dataset]
    assert got == [tf.nest.map_structure(plain, x) for x in ragged] == [{"a": [[1]]}]


def test_an_eager_iterator_is_saved_and_restored_by_a_checkpoint(tmp_path):
    dataset = Batches(_batches())
    iterator = iter(dataset)
    next(iterator)
    checkpoint = tf.train.Checkpoint(iterator=iterator)
    path = checkpoint.save(str(tmp_path / "it"))
    assert int(next(iterator)["zeta"][0]) == 1
    checkpoint.restore(path)
    assert int(next(iterator)["zeta"][0]) == 1
    assert int(next(iterator)["zeta"][0]) == 2


def test_from_parquet_batches_come_through_the_one_pass_rebuild(tmp_path):
    path = str(tmp_path / "t.parquet")
    pq.write_table(pa.table({"id": [1, 2, 3], "tags": [[7], [], [8, 9]], "name": ["a", "b", None]}), path)
    dataset = Dataset.from_parquet(path, batch_size=2)
    iterator = iter(dataset)
    assert type(iterator) is _iterators._EagerIterator
    first, second = list(iterator)
    assert list(first) == ["id", "tags", "name"]
    assert first["id"].numpy().tolist() == [1, 2]
    assert tf.sparse.to_dense(first["tags"]).numpy().tolist() == [[7], [0]]
    assert first["tags"].shape.as_list() == [2, 1]
    assert tf.sparse.to_dense(second["tags"]).numpy().tolist() == [[8, 9]]
    assert second["name"].numpy().tolist() == [b""]
    rows = Dataset.from_parquet(path)  # one row per element, lists as rank-1 sparse tensors
    assert type(iter(rows)) is _iterators._EagerIterator
    assert [r["tags"].values.numpy().tolist() for r in rows] == [[7], [], [8, 9]]


def test_keras_predicts_on_from_parquet_batches(tmp_path):
    """Keras takes the iterator into its compiled step (TensorFlow's iteration there)."""
    path = str(tmp_path / "k.parquet")
    pq.write_table(pa.table({"a": [1.0, 2.0, 3.0, 4.0, 5.0], "b": [10.0, 20.0, 30.0, 40.0, 50.0]}), path)
    inputs = {name: tf.keras.Input(shape=(), name=name, dtype="float32") for name in ("a", "b")}
    model = tf.keras.Model(inputs, tf.keras.layers.Lambda(lambda d: d["a"] + d["b"])(inputs))
    dataset = Dataset.from_parquet(path, batch_size=2)
    assert type(iter(dataset)) is _iterators._EagerIterator
    np.testing.assert_allclose(np.ravel(model.predict(dataset, verbose=0)), [11, 22, 33, 44, 55])
