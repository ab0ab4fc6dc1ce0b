"""beam_tensorize: Avro, Parquet, ORC or TFRecord -> tf.train.Example TFRecords (or Parquet, Avro) + metadata.

Composable Apache Beam transforms over Arrow record batches, driven by one
Avro2TF-compatible config:

    >>> import apache_beam as beam
    >>> import beam_tensorize as bt
    >>> config = bt.load_config(bt.sample.SAMPLE_CONFIG)
    >>> with beam.Pipeline() as p:
    ...     _ = (p | bt.ReadAvro(bt.sample.SAMPLE_AVRO, columns=bt.Tensorize.input_columns(config))
    ...            | bt.Tensorize(config, "tensorized", save_mode="overwrite"))

The Beam transforms are imported on first use, so the kernels (`beam_tensorize.kernels`)
stay importable without Apache Beam, e.g. inside Spark workers.
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

_LAZY = {
    "ConfigError": "beam_tensorize.config",
    "TensorizeError": "beam_tensorize.config",
    "Preprocessor": "beam_tensorize.serving",
    "ServingError": "beam_tensorize.serving",
    "WriteAvro": "beam_tensorize.io",
    "DeduplicateFeatures": "beam_tensorize.transforms",
    "PrepRankingData": "beam_tensorize.transforms",
    "load_config": "beam_tensorize.config",
    "parse_config": "beam_tensorize.config",
    "sample": "beam_tensorize.sample",
    "ReadAvro": "beam_tensorize.io",
    "ReadOrc": "beam_tensorize.io",
    "ReadParquet": "beam_tensorize.io",
    "ReadTable": "beam_tensorize.io",
    "WriteParquet": "beam_tensorize.io",
    "WriteTFRecord": "beam_tensorize.io",
    "ReadTFRecord": "beam_tensorize.io",
    "TensorizeSpec": "beam_tensorize.job.spec",
    "ApplyFeatureLists": "beam_tensorize.transforms",
    "BuildFeatureLists": "beam_tensorize.transforms",
    "BuildVocab": "beam_tensorize.transforms",
    "ComputeStatistics": "beam_tensorize.transforms",
    "EmitMetadata": "beam_tensorize.transforms",
    "CommitOutput": "beam_tensorize.transforms",
    "HashFeatures": "beam_tensorize.transforms",
    "LoadFeatureLists": "beam_tensorize.transforms",
    "EncodeExamples": "beam_tensorize.transforms",
    "ExtractFeatures": "beam_tensorize.transforms",
    "Tensorize": "beam_tensorize.transforms",
    "TensorizeOutputs": "beam_tensorize.transforms",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str):
    if name not in _LAZY:
        raise AttributeError(f"module 'beam_tensorize' has no attribute {name!r}")
    module = importlib.import_module(_LAZY[name])
    return module if name == "sample" else getattr(module, name)
