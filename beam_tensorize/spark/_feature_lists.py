"""The feature lists of a `tensorize_spark` run: counted on Spark (train), or loaded.

Train mode reads only the columns the lists are made of (or, reading its input once, every
column, keeping the extracted batches: `_kept`), and each task counts the entries of its
split's batches (`partial_counts`, the Beam job's kernel); Spark sums the counts per
entry, then each list's entries meet on one executor, where `build_feature_list` orders the
list and cuts it to its `vocabSizeCap`. Validation / test mode (and appending to train data)
loads the lists of the output instead; external lists override both.
"""

from __future__ import annotations

import functools
import operator
import posixpath
from collections.abc import Iterator, Mapping
from typing import NamedTuple

import pyarrow as pa
from pyspark.sql import SparkSession

from beam_tensorize.config.model import TensorConfig
from beam_tensorize.job.feature_lists import (
    FEATURE_LIST_FOLDER,
    merge_feature_lists,
    read_feature_lists,
)
from beam_tensorize.job.reading import read_split_batches
from beam_tensorize.job.spec import TensorizeSpec
from beam_tensorize.kernels.features.counting import ListTensorExtractor, feature_list_columns
from beam_tensorize.kernels.features.vocab import (
    FeatureList,
    build_feature_list,
    feature_list_caps,
    lists_per_tensor,
    partial_counts,
)
from beam_tensorize.spark._kept import read_and_keep
from beam_tensorize.spark._tasks import split_tasks

__all__ = ["CountEntries", "Keep", "feature_lists"]


def feature_lists(
    spark: SparkSession, splits: list, spec: TensorizeSpec, previous: dict | None, keep: Keep | None = None
) -> dict[str, FeatureList]:
    """The lists the records are indexed with: built (train; appending to train data, its
    lists) or loaded, then external ones. `previous`: the split's metadata entry when
    appending to it; `keep`: build them reading the input once, keeping its batches."""
    config, out, shared, external = (
        spec.config,
        spec.output,
        spec.shared_feature_lists,
        spec.external_feature_lists,
    )
    names = config.tensor_names
    if spec.execution_mode == "train" and previous is None:
        own = _build_feature_lists(spark, splits, spec, keep)
    else:
        own = read_feature_lists(
            [posixpath.join(out, FEATURE_LIST_FOLDER)], names, required=False, metadata_dir=out
        )
    if external:
        found = read_feature_lists([external], names, strict=True, required=True)
        return merge_feature_lists(own, found, config, shared)
    return own


def _build_feature_lists(
    spark: SparkSession, splits: list, spec: TensorizeSpec, keep: Keep | None
) -> dict[str, FeatureList]:
    """Read only the columns the lists are made of (chosen per file; with `keep`, every
    column, keeping the extracted batches), count entries per batch (kernel), sum the counts
    per entry (Spark), order each list and cut it to its `vocabSizeCap` (kernel, on an
    executor)."""
    config = spec.config
    keys = spec.feature_list_keys
    if not keys:
        return {}
    caps = feature_list_caps(config, keys)
    listed = tuple(t for t in config.tensors if t.name in keys)
    count = CountEntries(listed, keys, spec.batch_rows, spec.term_only_feature_lists, keep)
    counted = split_tasks(spark, list(enumerate(splits)) if keep else splits).mapPartitions(count)
    # As the Beam job: sum per (list, entry), then one list's distinct entries meet to be ordered
    # and cut to its cap (kernels). Plain RDD steps: the counts never pass through Spark SQL.
    parallelism = max(1, spark.sparkContext.defaultParallelism)
    built = dict(
        counted.map(lambda c: ((c[0], c[1]), c[2]))
        .reduceByKey(operator.add, parallelism)
        .map(lambda kv: (kv[0][0], (kv[0][1], kv[1])))
        .groupByKey(parallelism)
        .map(lambda grouped: (grouped[0], build_feature_list(grouped[1], caps.get(grouped[0]))))
        .collect()
    )
    return lists_per_tensor(built, keys)


class Keep(NamedTuple):
    """Train mode reading its input once: the settings, where the extracted batches are kept
    (`_kept`), and the input's unified schema the batches are cast to."""

    spec: TensorizeSpec
    folder: str
    schema: pa.Schema | None


class CountEntries:
    """mapPartitions function over input splits: (feature-list key, entry, count) of every
    batch, reading only the columns the lists are made of; with `keep`, over (index, split)
    pairs, reading every column and keeping the extracted batches."""

    def __init__(
        self,
        tensors: tuple[TensorConfig, ...],
        keys: Mapping[str, str],
        batch_rows: int,
        term_only: bool,
        keep: Keep | None = None,
    ):
        self._tensors = tensors
        self._keys = dict(keys)
        self._batch_rows = batch_rows
        self._term_only = term_only
        self._keep = keep

    def _counts(self, batch: pa.RecordBatch) -> Iterator[tuple[str, str | None, int]]:
        for (key, entry), count in partial_counts(batch, self._tensors, self._keys, self._term_only):
            yield key, entry, count

    def __call__(self, splits: Iterator[tuple]) -> Iterator[tuple[str, str | None, int]]:
        if self._keep is not None:
            spec, folder, schema = self._keep
            for index, (fmt, split) in splits:
                for extracted in read_and_keep(spec, folder, index, fmt, split, schema):
                    yield from self._counts(extracted)
            return
        extract = ListTensorExtractor(self._tensors)
        columns = functools.partial(feature_list_columns, self._tensors)
        chosen: dict[str, list[str]] = {}
        for fmt, split in splits:
            for batch in read_split_batches(fmt, split, columns, self._batch_rows, chosen):
                extracted = None if isinstance(batch, dict) else extract(batch)
                if extracted is not None:
                    yield from self._counts(extracted)
