"""The consumer side: parse specs and tf.data datasets built from an output's metadata.

Importing this package imports TensorFlow.
"""

from beam_tensorize.tf.dataset import load_metadata, make_dataset, parse_spec

__all__ = ["load_metadata", "make_dataset", "parse_spec"]
