"""The consumer side: parse specs and tf.data datasets built from an output's metadata, and
HybridBackend's data-loading API (`Dataset.from_parquet`, `ParquetDataset`, `rebatch`,
`parse`, `deduplicate`, `populate_defaults`, `DataFrame`): `import beam_tensorize.tf as data` stands for `hb.data`.

Importing this package imports TensorFlow (without the lines its C++ prints on a machine without
a GPU: see `_quiet`).
"""

from beam_tensorize.tf._quiet import import_tensorflow

import_tensorflow()  # first: the modules below import TensorFlow

from beam_tensorize.tf.dataframe import DataFrame  # noqa: E402 - after import_tensorflow
from beam_tensorize.tf.dataset import load_metadata, make_dataset, parse_spec  # noqa: E402
from beam_tensorize.tf.parquet import (  # noqa: E402
    Dataset,
    ParquetDataset,
    TabularDataset,
    deduplicate,
    parse,
    populate_defaults,
    read_parquet,
    rebatch,
)

__all__ = [
    "DataFrame",
    "Dataset",
    "ParquetDataset",
    "TabularDataset",
    "deduplicate",
    "load_metadata",
    "make_dataset",
    "parse",
    "parse_spec",
    "populate_defaults",
    "read_parquet",
    "rebatch",
]
