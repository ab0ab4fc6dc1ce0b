"""TensorFlow internals this package relies on, in one place (tests/test_tf_dataset.py fails
loudly when they move).

* `deprecation.silence`: parsing a `tf.io.SparseFeature` calls TF's own deprecated
  `sparse_merge`, which logs a deprecation warning on every `make_dataset` that users can do
  nothing about.
"""

from __future__ import annotations

import tensorflow as tf
from tensorflow.python.util import deprecation

__all__ = ["parse_example"]


def parse_example(records, spec):
    """`tf.io.parse_example` without the deprecation warning TF logs for its own use of
    `sparse_merge` when `spec` holds a `tf.io.SparseFeature`."""
    with deprecation.silence():
        return tf.io.parse_example(records, spec)
