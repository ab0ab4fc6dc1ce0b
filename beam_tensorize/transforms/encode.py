"""`EncodeExamples`: tensor columns -> serialized tf.train.Example, bad rows to a dead letter."""

from __future__ import annotations

import base64
import json
from collections.abc import Sequence

import apache_beam as beam
import numpy as np
import pyarrow as pa
from apache_beam.metrics import Metrics

from beam_tensorize import metrics
from beam_tensorize.config.model import TensorConfig, TensorizeConfig
from beam_tensorize.kernels.example_encoder import encode_examples
from beam_tensorize.kernels.features import FeatureLayout, layout_for_column, layout_of, to_feature_columns
from beam_tensorize.kernels.provenance import describe_row

__all__ = ["DEAD_LETTERS", "EXAMPLES", "SERIALIZED_COLUMN", "EncodeExamples", "dead_letter_json"]

#: Output tag of the encoded batches.
EXAMPLES = "examples"
#: Output tag of the rows that could not be encoded.
DEAD_LETTERS = "dead_letters"
#: Column of serialized examples in the output batches.
SERIALIZED_COLUMN = "serialized"


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

    Returns (from `expand`):
        A `DoOutputsTuple`: `.examples` — batches with a binary column `serialized` (plus the
        kept columns), keeping the source tags; `.dead_letters` — dicts `{"source", "reason",
        "tensors"}`.

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
    ):
        super().__init__()
        keep = tuple(keep_columns)
        tensors = config.tensors if tensors is None else tensors
        self._layouts = tuple(layout_of(t) for t in tensors if t.name not in keep)
        self._keep = keep

    def expand(self, tensor_batches):
        return tensor_batches | "EncodeExamples" >> beam.ParDo(
            _EncodeExamplesFn(self._layouts, self._keep)
        ).with_outputs(DEAD_LETTERS, main=EXAMPLES)


class _EncodeExamplesFn(beam.DoFn):
    def __init__(self, layouts: tuple[FeatureLayout, ...], keep: tuple[str, ...]):
        self._layouts = layouts
        self._keep = keep
        self._bad = Metrics.counter(metrics.NAMESPACE, metrics.BAD_RECORDS)

    def process(self, batch: pa.RecordBatch):
        missing = [name for name in self._keep if name not in batch.schema.names]
        if missing:
            raise KeyError(f"EncodeExamples: columns to keep {missing} are not among {batch.schema.names}")
        known = {layout.name for layout in self._layouts} | set(self._keep)
        extra = [layout_for_column(f.name, f.type) for f in batch.schema if f.name not in known]
        encoded = batch.drop_columns(list(self._keep)) if self._keep else batch
        result = to_feature_columns(encoded, self._layouts + tuple(extra))
        serialized = encode_examples(result.features)
        kept = batch.select(list(self._keep))
        if len(result.bad_rows):
            good = np.ones(batch.num_rows, bool)
            good[result.bad_rows] = False
            kept = kept.filter(pa.array(good))
        fields = [pa.field(SERIALIZED_COLUMN, serialized.type), *kept.schema]
        schema = pa.schema(fields, metadata=batch.schema.metadata)
        yield pa.RecordBatch.from_arrays([serialized, *kept.columns], schema=schema)
        if len(result.bad_rows):
            self._bad.inc(len(result.bad_rows))
            rows = batch.take(pa.array(result.bad_rows)).to_pylist()
            for row_index, reason, values in zip(result.bad_rows, result.reasons, rows):
                yield beam.pvalue.TaggedOutput(
                    DEAD_LETTERS,
                    {"source": describe_row(batch, int(row_index)), "reason": reason, "tensors": values},
                )


def dead_letter_json(record: dict) -> str:
    """One dead-letter record as a JSON line (bytes as base64, other odd values as text)."""
    return json.dumps(record, sort_keys=True, default=_json_default, allow_nan=True)


def _json_default(value):
    if isinstance(value, (bytes, bytearray)):
        return {"base64": base64.b64encode(bytes(value)).decode()}
    return str(value)
