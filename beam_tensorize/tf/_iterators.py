"""Batches handed to eager Python without TensorFlow's generic rebuilding of each element.

An eager `next()` on a `tf.data` iterator rebuilds the element from the op's flat outputs
through each component's `TypeSpec`: for a `tf.SparseTensor` that is a `DeserializeSparse`
op and then ~80 us of Python (tensor conversions, shape merging), ~5 ms per batch of 50
list columns, as much as reading the batch's 200 columns takes. `Batches` wraps a dataset
of tensors and sparse tensors (a dict of them, or any nest: `(features, labels)`), its
`element_spec` unchanged; its eager iterators (`iter(dataset)`, a `for` loop) rebuild each
batch in one pass over the flat outputs. Inside a `tf.function`, and for elements holding
other kinds (ragged tensors, ...), iteration is TensorFlow's own, and so is every dataset made
from it (`map`, `prefetch`, ...).

Example:
    >>> import tensorflow as tf
    >>> dataset = Batches(tf.data.Dataset.from_tensors({"id": [1, 2], "tags": tf.sparse.from_dense([[0, 7]])}))
    >>> batch = next(iter(dataset))
    >>> batch["id"].numpy().tolist(), batch["tags"].values.numpy().tolist(), batch["tags"].shape.as_list()
    ([1, 2], [7], [1, 2])
"""

from __future__ import annotations

import tensorflow as tf
from tensorflow.python.data.ops import iterator_ops
from tensorflow.python.eager import context
from tensorflow.python.framework import ops
from tensorflow.python.ops import gen_dataset_ops, gen_sparse_ops

__all__ = ["Batches"]


def _made_in_place() -> bool:
    """Whether a `tf.SparseTensor` is its four attributes (as it is from TF 2.x on), so that one
    is made without its constructor's checks, which its parts, made by TensorFlow, pass."""
    with tf.Graph().as_default():  # a graph of its own: nothing added to a TF1 program's graph
        probe = tf.SparseTensor(
            tf.zeros([0, 1], tf.int64), tf.zeros([0], tf.int64), tf.constant([0], tf.int64)
        )
    return set(vars(probe)) == {"_indices", "_values", "_dense_shape", "_dense_shape_default"}


_IN_PLACE = _made_in_place()


def _sparse(serialized: tf.Tensor, dtype: tf.DType) -> tf.SparseTensor:
    """A sparse tensor from its serialized variant (what `SparseTensorSpec` does, eagerly)."""
    indices, values, dense_shape = gen_sparse_ops.deserialize_sparse(serialized, dtype)
    if not _IN_PLACE:
        return tf.SparseTensor(indices, values, dense_shape)
    made = tf.SparseTensor.__new__(tf.SparseTensor)
    made._indices, made._values, made._dense_shape = indices, values, dense_shape
    made._dense_shape_default = tf.TensorShape(dense_shape.numpy())
    return made


class _Plan:
    """How an element is rebuilt from the flat outputs (in `tf.nest`'s order: a dict's keys
    sorted): each component's sparse dtype, or None for a tensor; then packed as the spec is
    (a dict of names directly, any other structure by `tf.nest`)."""

    def __init__(self, spec):
        self._spec = spec
        self._dtypes = [
            s.dtype if isinstance(s, tf.SparseTensorSpec) else None for s in tf.nest.flatten(spec)
        ]
        flat_dict = isinstance(spec, dict) and all(
            isinstance(name, str) and type(s) in (tf.TensorSpec, tf.SparseTensorSpec)
            for name, s in spec.items()
        )
        self._names = sorted(spec) if flat_dict else None
        self._order = list(spec) if flat_dict else None

    @staticmethod
    def of(spec) -> _Plan | None:
        """The plan for `spec`, or None unless it is a structure of tensors and sparse tensors."""
        leaves = tf.nest.flatten(spec)
        if not leaves or not all(type(s) in (tf.TensorSpec, tf.SparseTensorSpec) for s in leaves):
            return None
        return _Plan(spec)

    def element(self, flat):
        made = [
            tensor if dtype is None else _sparse(tensor, dtype) for dtype, tensor in zip(self._dtypes, flat)
        ]
        if self._names is None:
            return tf.nest.pack_sequence_as(self._spec, made)
        by_name = dict(zip(self._names, made))
        return {name: by_name[name] for name in self._order}


class _EagerIterator(iterator_ops.OwnedIterator):
    """TensorFlow's iterator, with eager elements rebuilt by a `_Plan`."""

    def __init__(self, dataset: tf.data.Dataset, plan: _Plan):
        self._plan = plan
        super().__init__(dataset)

    def _next_internal(self):
        if not context.executing_eagerly():
            return super()._next_internal()
        with context.execution_mode(context.SYNC):  # as TensorFlow's: the end comes as an error
            flat = gen_dataset_ops.iterator_get_next(
                self._iterator_resource,
                output_types=self._flat_output_types,
                output_shapes=self._flat_output_shapes,
            )
        return self._plan.element(flat)


class Batches(tf.data.Dataset):
    """`impl`, whose eager iterators rebuild each batch in one pass (see the module)."""

    def __init__(self, impl: tf.data.Dataset):
        self._impl = impl
        self._plan = _Plan.of(impl.element_spec)
        super().__init__(impl._variant_tensor)

    def _inputs(self):
        return self._impl._inputs()

    @property
    def element_spec(self):
        return self._impl.element_spec

    def __iter__(self):
        if self._plan is None or not context.executing_eagerly():
            return super().__iter__()
        with ops.colocate_with(self._variant_tensor):
            return _EagerIterator(self, self._plan)
