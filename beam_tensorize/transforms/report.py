"""`ComputeStatistics`: the run report's statistics of record batches, in one combine."""

from __future__ import annotations

from collections.abc import Iterable

import apache_beam as beam
import pyarrow as pa
from apache_beam.transforms.display import DisplayDataItem
from apache_beam.transforms.window import GlobalWindows

from beam_tensorize.config.model import TensorizeConfig
from beam_tensorize.job.finish import dead_letter_json
from beam_tensorize.kernels.features.vocab_index import VocabIndex
from beam_tensorize.kernels.report.statistics import Statistics, list_vocabularies

__all__ = ["ComputeStatistics"]


class ComputeStatistics(beam.PTransform):
    """Statistics of every tensor of `config` over record batches, as one report dict.

    Each bundle fills one `beam_tensorize.kernels.report.statistics.Statistics` from whole
    batches (numpy / Arrow compute, no per-row Python); a `CombineGlobally` merges them. The
    memory it takes does not grow with the data (see `beam_tensorize.kernels.report.sketches`
    for each statistic's error bound). The output is one dict: the report document of
    docs/report.md without `split` and `drift`; its `timings` hold `statistics`, the seconds
    spent here (summed over workers), `readAndExtract`, the seconds from the first batch to the
    last one seen here, and `lastBatchAt` (epoch seconds).

    Args:
        config: the job's config; the batches hold its tensors as `ExtractFeatures` gives them
            (before hashing and feature lists), tagged with their source file.
        feature_lists: optional PCollection of one dict `{tensor: FeatureList}`: entries not in
            their tensor's list are counted (`featureList.unknownShare`).
        dead_letters: optional PCollection of dead-letter dicts (`{"source", "reason", ...}`),
            counted per file and grouped by reason.
        hashes: optional PCollection of what `HashFeatures(config, distinct_hashes=True)` hashed
            of the same batches: the hashed tensors' bucket statistics are taken from it instead
            of hashing the values again.

    Example:
        >>> import apache_beam as beam
        >>> from beam_tensorize.config import load_config
        >>> from beam_tensorize.io import ReadAvro
        >>> from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
        >>> from beam_tensorize.transforms import ExtractFeatures
        >>> config = load_config(SAMPLE_CONFIG)
        >>> with beam.Pipeline() as p:
        ...     stats = p | ReadAvro(SAMPLE_AVRO) | ExtractFeatures(config) | ComputeStatistics(config)
        ...     _ = stats | beam.Map(lambda s: print(s["rowsRead"], s["tensors"][0]["numeric"]["max"]))
        300 251.0
    """

    def __init__(self, config: TensorizeConfig, feature_lists=None, dead_letters=None, hashes=None):
        super().__init__()
        self._config = config
        self._lists = feature_lists
        self._dead_letters = dead_letters
        self._hashes = hashes

    def display_data(self) -> dict:
        return {
            "tensors": DisplayDataItem(", ".join(self._config.tensor_names), label="Tensors"),
            "feature_lists": DisplayDataItem(self._lists is not None, label="Counts entries not in lists"),
        }

    def expand(self, batches):
        lists = () if self._lists is None else (beam.pvalue.AsSingleton(self._lists),)
        parts = [
            batches
            | "BatchStatistics"
            >> beam.ParDo(_BatchStatisticsFn(self._config, hashes=self._hashes is None), *lists)
        ]
        if self._hashes is not None:
            parts.append(self._hashes | "HashStatistics" >> beam.ParDo(_HashStatisticsFn(self._config)))
        if self._dead_letters is not None:
            parts.append(
                self._dead_letters
                | "DeadLetterStatistics" >> beam.ParDo(_DeadLetterStatisticsFn(self._config))
            )
        return (
            tuple(parts)
            | "AllStatistics" >> beam.Flatten()
            | "MergeStatistics" >> beam.CombineGlobally(_MergeStatisticsFn(self._config))
        )


class _BundleStatisticsFn(beam.DoFn):
    """Fills one `Statistics` per bundle, emitted when the bundle ends."""

    def __init__(self, config: TensorizeConfig):
        self._config = config
        self._stats: Statistics | None = None

    def start_bundle(self):
        self._stats = None

    def _current(self) -> Statistics:
        if self._stats is None:
            self._stats = Statistics(self._config)
        return self._stats

    def finish_bundle(self):
        if self._stats is not None:
            yield GlobalWindows.windowed_value(self._stats)
            self._stats = None


class _BatchStatisticsFn(_BundleStatisticsFn):
    def __init__(self, config: TensorizeConfig, hashes: bool = True):
        super().__init__(config)
        self._hashes = hashes

    def setup(self):
        self._seen = None
        self._vocabularies: dict[str, VocabIndex] = {}

    def process(self, batch: pa.RecordBatch, lists=None) -> Iterable:
        if lists is not None and lists is not self._seen:  # the same side input in later bundles
            self._vocabularies = list_vocabularies(lists)
            self._seen = lists
        self._current().add_timed_batch(batch, self._vocabularies, hashes=self._hashes)
        return ()


class _HashStatisticsFn(_BundleStatisticsFn):
    def process(self, seen: dict) -> Iterable:
        self._current().add_distinct_hashes(seen)
        return ()


class _DeadLetterStatisticsFn(_BundleStatisticsFn):
    def process(self, letter: dict) -> Iterable:
        self._current().add_dead_letter(letter, dead_letter_json(letter))
        return ()


class _MergeStatisticsFn(beam.CombineFn):
    def __init__(self, config: TensorizeConfig):
        self._config = config

    def create_accumulator(self):
        return None

    def add_input(self, accumulator, stats):
        return stats if accumulator is None else accumulator.merge(stats)

    def merge_accumulators(self, accumulators):
        merged = None
        for accumulator in accumulators:
            if accumulator is not None:
                merged = accumulator if merged is None else merged.merge(accumulator)
        return merged

    def extract_output(self, accumulator) -> dict:
        stats = accumulator if accumulator is not None else Statistics(self._config)
        return stats.document()
