"""The encoding step of `tensorize_spark`: the Beam job's kernels on each task's batches.

Extract, hash, look the entries up in the broadcast feature lists, encode the records (bad
rows become dead letters), gathering the run report's statistics on the way when asked for.
`EncodeBatches` is the `mapInArrow` function of the shuffled path (`num_shards`) and the
encoder the unshuffled path's `EncodeAndWrite` runs.
"""

from __future__ import annotations

import json
import pickle
from collections.abc import Iterator, Mapping

import pyarrow as pa
from pyspark import TaskContext

from beam_tensorize.job.finish import dead_letter_json, extra_layouts
from beam_tensorize.job.spec import TensorizeSpec
from beam_tensorize.kernels.features.conversion import layout_of
from beam_tensorize.kernels.features.extract import extract_tensors
from beam_tensorize.kernels.features.hashing import hash_tensors, hash_tensors_with_distinct
from beam_tensorize.kernels.features.vocab import FeatureListLookup
from beam_tensorize.kernels.features.vocab_index import VocabIndex
from beam_tensorize.kernels.metadata import integer_maxima, integer_tensor_names
from beam_tensorize.kernels.output import get_output_format
from beam_tensorize.kernels.output.dead_letters import (
    SERIALIZED_COLUMN,
    encode_with_dead_letters,
    off_shape_of,
)
from beam_tensorize.kernels.output.shards import ROWS, shard_chunks, shuffle_rows
from beam_tensorize.kernels.partitions import with_partition_ids
from beam_tensorize.kernels.report.statistics import Statistics, list_vocabularies
from beam_tensorize.spark._tasks import (
    DEAD_LETTER,
    LAYOUTS,
    MAXIMA,
    OFF_SHAPE_COUNTS,
    RECORD,
    STATISTICS,
    encoded_rows,
    ipc_bytes,
)
from beam_tensorize.spark.table_source import source_batches

__all__ = ["EncodeBatches", "tensor_batches"]


def tensor_batches(
    batches: Iterator[pa.RecordBatch],
    tensors,
    extra=(),
    statistics: Statistics | None = None,
    vocabularies: Mapping[str, pa.Array | VocabIndex] | None = None,
    already_extracted: bool = False,
) -> Iterator[pa.RecordBatch]:
    """ExtractFeatures + HashFeatures on the reader's batches (or on batches
    `already_extracted`); with `statistics`, also the run report's statistics of the extracted
    batches and of what the hashing saw (as the Beam job's `ComputeStatistics` gathers them)."""
    for batch in batches:
        extracted = batch if already_extracted else extract_tensors(batch, tensors, extra)
        if statistics is None:
            yield hash_tensors(extracted, tensors)
            continue
        statistics.add_timed_batch(extracted, vocabularies, hashes=False)
        hashed, seen = hash_tensors_with_distinct(extracted, tensors)
        statistics.add_distinct_hashes(seen)
        yield hashed


class EncodeBatches:
    """mapInArrow function: every record with its file and place in it, the dead letters, and
    the extra columns' layouts of each batch."""

    def __init__(self, spec: TensorizeSpec, lists_broadcast):
        """`spec`: the job's settings; `lists_broadcast`: the run's feature lists, broadcast."""
        #: The job's settings (the plain ones are read from it as they are).
        self.spec = spec
        self._lists = lists_broadcast
        #: The config whose run-report statistics each split gathers (None: no report).
        self._statistics_of = spec.config if spec.report != "none" else None
        #: (field, number of partitions) of Avro2TF's partition ids, or None.
        self._partition_ids = (
            (spec.partition_field_name, spec.num_partitions) if spec.partition_field_name else None
        )
        #: Write each batch's records in a seeded pseudo-random order (None: input order).
        self._shuffle_seed = spec.shuffle_seed if spec.shuffle else None
        #: The integer tensors whose largest values the metadata records (train mode).
        self._maxima_of = (
            tuple(integer_tensor_names(spec.config.tensors)) if spec.execution_mode == "train" else ()
        )
        #: The partition columns (left out of the records).
        self.partition_by = spec.folder_columns
        self._layouts = tuple(layout_of(t) for t in spec.config.tensors if t.name not in self.partition_by)

    def encoded(
        self, batches: Iterator[pa.RecordBatch], already_extracted: bool = False
    ) -> Iterator[tuple[int, object]]:
        """(kind, item) for each of the reader's batches (or of batches `already_extracted`):
        its extra columns' layouts (pickled), its encoded records (a batch), and its dead
        letters (JSON lines)."""
        lookup = FeatureListLookup(self._lists.value)
        statistics = vocabularies = None
        if self._statistics_of is not None:
            statistics = Statistics(self._statistics_of)
            vocabularies = list_vocabularies(self._lists.value)
        for batch in tensor_batches(
            batches,
            self.spec.config.tensors,
            self.spec.extra_columns,
            statistics,
            vocabularies,
            already_extracted,
        ):
            if self._partition_ids is not None:
                batch = with_partition_ids(batch, *self._partition_ids)
            if self.spec.extra_names:
                yield LAYOUTS, pickle.dumps(extra_layouts(batch, self.spec.extra_names))
            if self._maxima_of:
                yield MAXIMA, json.dumps(integer_maxima(batch, self._maxima_of)).encode()
            indexed = lookup.apply(
                batch, self.spec.config.tensors, self.spec.filter_zeros, self.spec.discard_unknown_entries
            )
            examples, dead_letters = encode_with_dead_letters(
                indexed, self._layouts, self.partition_by, self.spec.output_format, self.spec.check_shapes
            )
            off_shape = off_shape_of(examples)
            if off_shape:
                yield OFF_SHAPE_COUNTS, json.dumps(off_shape).encode()
            if self._shuffle_seed is not None:
                examples = shuffle_rows(examples, self._shuffle_seed)
            yield RECORD, examples
            if dead_letters:
                yield DEAD_LETTER, [dead_letter_json(d).encode() for d in dead_letters]
        if statistics is not None:
            yield STATISTICS, pickle.dumps(statistics)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        partition = TaskContext.get().partitionId()
        columnar = get_output_format(self.spec.output_format).columnar
        index = -1
        for kind, item in self.encoded(source_batches(batches)):
            if kind != RECORD:
                yield encoded_rows(
                    kind, "", -1, "", 0, pa.array(item if kind == DEAD_LETTER else [item], pa.binary())
                )
                continue
            index += 1
            chunks = shard_chunks(
                item,
                self.spec.num_shards,
                self.partition_by,
                ROWS if columnar else "ByteArray",
                None if columnar else SERIALIZED_COLUMN,
            )
            for (path, shard), (key, records) in chunks:
                # Columnar files: one row per chunk, the chunk's rows as an Arrow IPC stream.
                payload = (
                    pa.array([ipc_bytes(records)], pa.binary()) if columnar else records.cast(pa.binary())
                )
                yield encoded_rows(RECORD, path, shard, key, (partition << 32) + index, payload)
