"""The tensorize config: an Avro2TF-compatible document, parsed into frozen dataclasses.

Example::

    from beam_tensorize.config import load_config

    config = load_config("avro2tf_config.json")
    config.tensor("userId").output.dtype
"""

from __future__ import annotations

from beam_tensorize.config.errors import ConfigError, TensorizeError
from beam_tensorize.config.model import (
    HashInfo,
    InputFeatureInfo,
    NtvSelection,
    OutputTensorInfo,
    TensorConfig,
    TensorizeConfig,
    Tokenization,
    TransformConfig,
)
from beam_tensorize.config.parse import load_config, parse_config

__all__ = [
    "TensorizeError",
    "ConfigError",
    "HashInfo",
    "InputFeatureInfo",
    "NtvSelection",
    "OutputTensorInfo",
    "TensorConfig",
    "TensorizeConfig",
    "Tokenization",
    "TransformConfig",
    "load_config",
    "parse_config",
]
