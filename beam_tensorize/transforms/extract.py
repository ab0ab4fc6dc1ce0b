"""`ExtractFeatures`: input record batches -> one column per output tensor."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import apache_beam as beam
import pyarrow as pa
from apache_beam.transforms.display import DisplayDataItem

from beam_tensorize.config.model import TensorConfig, TensorizeConfig
from beam_tensorize.kernels.features.extract import extra_column_names, extract_tensors

__all__ = ["ExtractFeatures"]


class ExtractFeatures(beam.PTransform):
    """Evaluate each tensor's `columnExpr` / `columnConfig` on every batch.

    Args:
        config: the parsed config; every feature and label is computed.
        tensors: optional subset of `config.tensors` to compute instead.
        extra_columns: input columns to keep as they are (after the tensor columns): names, or
            Avro2TF's `expression:name` (`words.term:terms`).

    The output batches have one column per tensor, named by tensor, and keep the input
    batches' source tags. An expression that does not fit the input schema fails the step
    with the tensor name, its config path and the available fields.

    Example:
        >>> import apache_beam as beam
        >>> from beam_tensorize.config import load_config
        >>> from beam_tensorize.io import ReadAvro
        >>> from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
        >>> config = load_config(SAMPLE_CONFIG)
        >>> with beam.Pipeline() as p:
        ...     tensors = p | ReadAvro(SAMPLE_AVRO) | ExtractFeatures(config)
    """

    def __init__(
        self,
        config: TensorizeConfig,
        tensors: Sequence[TensorConfig] | None = None,
        extra_columns: Sequence[str] = (),
    ):
        super().__init__()
        self._tensors = tuple(config.tensors if tensors is None else tensors)
        self._extra = tuple(extra_columns)
        clash = set(extra_column_names(self._extra)) & {t.name for t in self._tensors}
        if clash:
            raise ValueError(f"extra columns {sorted(clash)} have the names of tensors")

    def display_data(self) -> dict:
        return {
            "tensors": DisplayDataItem(", ".join(t.name for t in self._tensors), label="Tensors"),
            "extra_columns": DisplayDataItem(", ".join(self._extra) or "(none)", label="Extra columns"),
        }

    def expand(self, batches):
        return batches | "ExtractTensors" >> beam.ParDo(
            _ExtractTensorsFn(self._tensors, self._extra)
        ).with_output_types(pa.RecordBatch)


class _ExtractTensorsFn(beam.DoFn):
    def __init__(self, tensors: tuple[TensorConfig, ...], extra: tuple[str, ...]):
        self._tensors = tensors
        self._extra = extra

    def process(self, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        yield extract_tensors(batch, self._tensors, self._extra)
