"""`EncodeExamples`: tensor columns -> serialized tf.train.Example (or Parquet tensor columns),
bad rows to a dead letter."""

from __future__ import annotations

from collections.abc import Sequence

import apache_beam as beam
import pyarrow as pa
from apache_beam.metrics import Metrics
from apache_beam.transforms.display import DisplayDataItem

from beam_tensorize import metrics
from beam_tensorize.config.model import TensorConfig, TensorizeConfig
from beam_tensorize.kernels.features.conversion import FeatureLayout, layout_of
from beam_tensorize.kernels.output import output_format_names
from beam_tensorize.kernels.output.dead_letters import (
    DEAD_LETTERS,
    SERIALIZED_COLUMN,
    encode_with_dead_letters,
)

__all__ = ["DEAD_LETTERS", "EXAMPLES", "SERIALIZED_COLUMN", "EncodeExamples"]

#: Output tag of the encoded batches.
EXAMPLES = "examples"


class EncodeExamples(beam.PTransform):
    """Turn batches of tensor columns into serialized `tf.train.Example`s.

    Encoding is vectorised and deterministic (features sorted by key, the bytes of
    `SerializeToString(deterministic=True)`). Rows that cannot be stored under their tensor
    config (null dense value, wrong length for a fixed dimension, overflow, ...) are counted
    (`beam_tensorize/bad_records`) and sent to the `dead_letters` output as dicts with their
    source location, the reason and the tensor values. Columns that are not tensors (extra
    columns kept from the input) are stored by their Arrow type (see `layout_for_column`).

    Args:
        config: the parsed config.
        tensors: optional subset of `config.tensors` (must match the input columns).
        keep_columns: columns passed through as they are beside `serialized` and left out of
            the Examples (e.g. the partition columns of `WriteTFRecord(partition_by=...)`).
        output_format: "tfrecord" (Examples), "parquet" (the same tensors as columns, see
            `beam_tensorize.kernels.output.parquet`) or "avro" (those columns, a sparse tensor
            as one `{indices, values}` column, see `beam_tensorize.kernels.output.avro`); bad
            rows are the same.
        check_shapes: a row whose outer dimension differs from its tensor's fixed shape is a
            bad row. By default it is written as it is, as Avro2TF does, and counted in the
            batch's schema metadata (`beam_tensorize.kernels.output.dead_letters.off_shape_of`;
            `CommitOutput` then records the tensor as ragged in the metadata).

    Returns (from `expand`):
        A `DoOutputsTuple`: `.examples` — batches with a binary column `serialized` (for
        Parquet and Avro, the tensor columns) plus the kept columns, keeping the source tags;
        `.dead_letters` — dicts `{"source", "reason", "tensors"}`.

    Example:
        >>> import apache_beam as beam
        >>> from beam_tensorize.config import load_config
        >>> from beam_tensorize.io import ReadAvro
        >>> from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
        >>> from beam_tensorize.transforms import ApplyFeatureLists, BuildFeatureLists, ExtractFeatures, HashFeatures
        >>> config = load_config(SAMPLE_CONFIG)
        >>> with beam.Pipeline() as p:
        ...     tensors = p | ReadAvro(SAMPLE_AVRO) | ExtractFeatures(config) | HashFeatures(config)
        ...     lists = tensors | BuildFeatureLists(config)
        ...     out = tensors | ApplyFeatureLists(config, lists) | EncodeExamples(config)
        ...     _ = (out.examples | beam.Map(lambda b: b.num_rows) | beam.CombineGlobally(sum)
        ...          | beam.Map(print))
        300
    """

    def __init__(
        self,
        config: TensorizeConfig,
        tensors: Sequence[TensorConfig] | None = None,
        keep_columns: Sequence[str] = (),
        output_format: str = "tfrecord",
        check_shapes: bool = False,
    ):
        super().__init__()
        if output_format not in output_format_names():
            raise ValueError(
                f"EncodeExamples: output_format {output_format!r} is not one of {', '.join(output_format_names())}"
            )
        self._output_format = output_format
        keep = tuple(keep_columns)
        tensors = config.tensors if tensors is None else tensors
        self._layouts = tuple(layout_of(t) for t in tensors if t.name not in keep)
        self._keep = keep
        self._check_shapes = check_shapes

    def display_data(self) -> dict:
        return {
            "output_format": DisplayDataItem(self._output_format, label="Output format"),
            "tensors": DisplayDataItem(", ".join(layout.name for layout in self._layouts), label="Tensors"),
            "keep_columns": DisplayDataItem(", ".join(self._keep) or "(none)", label="Columns kept"),
            "check_shapes": DisplayDataItem(self._check_shapes, label="Checks fixed shapes"),
        }

    def expand(self, tensor_batches):
        return tensor_batches | "EncodeExamples" >> beam.ParDo(
            _EncodeExamplesFn(self._layouts, self._keep, self._output_format, self._check_shapes)
        ).with_output_types(pa.RecordBatch).with_outputs(DEAD_LETTERS, main=EXAMPLES)


class _EncodeExamplesFn(beam.DoFn):
    def __init__(
        self,
        layouts: tuple[FeatureLayout, ...],
        keep: tuple[str, ...],
        output_format: str,
        check_shapes: bool,
    ):
        self._layouts = layouts
        self._keep = keep
        self._output_format = output_format
        self._check_shapes = check_shapes
        self._bad = Metrics.counter(metrics.NAMESPACE, metrics.BAD_RECORDS)

    def process(self, batch: pa.RecordBatch):
        examples, dead_letters = encode_with_dead_letters(
            batch, self._layouts, self._keep, self._output_format, self._check_shapes
        )
        yield examples
        if dead_letters:
            self._bad.inc(len(dead_letters))
            for letter in dead_letters:
                yield beam.pvalue.TaggedOutput(DEAD_LETTERS, letter)
