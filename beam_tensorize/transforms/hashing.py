"""`HashFeatures`: hash the tensors that have a `hashInfo` into bucket ids / vectors."""

from __future__ import annotations

from collections.abc import Iterable
from typing import NamedTuple

import apache_beam as beam
import pyarrow as pa
from apache_beam.transforms.display import DisplayDataItem

from beam_tensorize.config.model import TensorConfig, TensorizeConfig
from beam_tensorize.kernels.features.hashing import hash_tensors, hash_tensors_with_distinct

__all__ = ["HashFeatures", "HashOutputs"]


class HashOutputs(NamedTuple):
    """`HashFeatures(..., distinct_hashes=True)`'s outputs: the hashed batches, and per batch a
    dict `{tensor: DistinctHashes}` of what was hashed (for `ComputeStatistics(hashes=...)`);
    `hashes` is None when no tensor is hashed."""

    batches: beam.PCollection
    hashes: beam.PCollection | None


class HashFeatures(beam.PTransform):
    """Replace every hashed tensor's column by TensorFlow-compatible bucket ids.

    One hash function equals `tf.strings.to_hash_bucket_fast` / Keras `Hashing(n)`; several
    use `tf.strings.to_hash_bucket_strong` with the fixed keys of
    `beam_tensorize.kernels.features.hashing.STRONG_HASH_KEYS`; `hashFunction: avro2tf_md5` gives
    Avro2TF's ids. Name-term-value inputs become sparse (or dense) vectors of bucket values
    merged with the combiner. Tensors without `hashInfo` pass through.

    Args:
        config: the parsed config.
        distinct_hashes: also give, per batch, what was hashed
            (`beam_tensorize.kernels.features.hashing.DistinctHashes` by tensor), so that the run
            report's `ComputeStatistics` does not hash the same values again: the output is then
            a `HashOutputs`.

    Example:
        >>> import apache_beam as beam, pyarrow as pa
        >>> from beam_tensorize.config import parse_config
        >>> config = parse_config({"features": [{
        ...     "inputFeatureInfo": {"columnExpr": "g", "transformConfig": {"hashInfo": {"hashBucketSize": 100}}},
        ...     "outputTensorInfo": {"name": "g", "dtype": "long", "shape": [-1]}}]})
        >>> with beam.Pipeline() as p:
        ...     batches = p | beam.Create([pa.RecordBatch.from_pydict({"g": [["Drama"], None]})])
        ...     _ = batches | HashFeatures(config) | beam.Map(lambda b: print(b.to_pydict()))
        {'g': [[40], [100]]}
    """

    def __init__(self, config: TensorizeConfig, distinct_hashes: bool = False):
        super().__init__()
        self._tensors = config.tensors
        self._distinct_hashes = distinct_hashes

    def display_data(self) -> dict:
        hashed = [t.name for t in self._tensors if t.input.transform_config.hash_info]
        return {"hashed": DisplayDataItem(", ".join(hashed) or "(none)", label="Hashed tensors")}

    def expand(self, batches):
        if not any(t.input.transform_config.hash_info for t in self._tensors):
            return HashOutputs(batches, None) if self._distinct_hashes else batches
        if not self._distinct_hashes:
            return batches | "HashTensors" >> beam.ParDo(_HashTensorsFn(self._tensors)).with_output_types(
                pa.RecordBatch
            )
        outputs = batches | "HashTensors" >> beam.ParDo(
            _HashTensorsWithDistinctFn(self._tensors)
        ).with_output_types(pa.RecordBatch).with_outputs(_HASHES, main="batches")
        return HashOutputs(outputs.batches, outputs[_HASHES])


_HASHES = "hashes"


class _HashTensorsFn(beam.DoFn):
    def __init__(self, tensors: tuple[TensorConfig, ...]):
        self._tensors = tensors

    def process(self, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        yield hash_tensors(batch, self._tensors)


class _HashTensorsWithDistinctFn(_HashTensorsFn):
    def process(self, batch: pa.RecordBatch) -> Iterable:
        hashed, seen = hash_tensors_with_distinct(batch, self._tensors)
        yield hashed
        yield beam.pvalue.TaggedOutput(_HASHES, seen)
