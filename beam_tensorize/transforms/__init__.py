"""Beam PTransforms over Arrow record batches (thin wrappers of `beam_tensorize.kernels`)."""

from beam_tensorize.transforms.commit import CommitOutput
from beam_tensorize.transforms.dedup import DeduplicateFeatures
from beam_tensorize.transforms.encode import DEAD_LETTERS, EXAMPLES, EncodeExamples
from beam_tensorize.transforms.extract import ExtractFeatures
from beam_tensorize.transforms.feature_lists import (
    ApplyFeatureLists,
    BuildFeatureLists,
    BuildVocab,
    ExtractListTensors,
    LoadFeatureLists,
)
from beam_tensorize.transforms.hashing import HashFeatures
from beam_tensorize.transforms.metadata import EmitMetadata
from beam_tensorize.transforms.ranking import PrepRankingData
from beam_tensorize.transforms.report import ComputeStatistics
from beam_tensorize.transforms.tensorize import Tensorize, TensorizeOutputs

__all__ = [
    "PrepRankingData",
    "DEAD_LETTERS",
    "EXAMPLES",
    "ApplyFeatureLists",
    "BuildFeatureLists",
    "BuildVocab",
    "CommitOutput",
    "DeduplicateFeatures",
    "ComputeStatistics",
    "EmitMetadata",
    "EncodeExamples",
    "ExtractFeatures",
    "ExtractListTensors",
    "HashFeatures",
    "LoadFeatureLists",
    "Tensorize",
    "TensorizeOutputs",
]
