"""`hybridbackend.tensorflow` as the examples of HybridBackend's documentation use it
(`import hybridbackend.tensorflow as hb`, then `hb.data....`): its `data` module is
`beam_tensorize.tf`."""

from __future__ import annotations

from beam_tensorize import tf as data

__all__ = ["data"]
