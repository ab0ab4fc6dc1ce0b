"""The consumer side: parse specs and tf.data datasets built from an output's metadata.

Importing this package imports TensorFlow.
"""

from beam_tensorize.tf.dataframe import DataFrame
from beam_tensorize.tf.dataset import load_metadata, make_dataset, parse_spec
from beam_tensorize.tf.parquet import Dataset

__all__ = ["DataFrame", "Dataset", "load_metadata", "make_dataset", "parse_spec"]
