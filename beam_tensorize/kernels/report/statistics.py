"""The run report's statistics: a mergeable accumulator updated with whole record batches.

`Statistics` holds, in memory that does not grow with the data (see `sketches`):

* per input file: rows decoded, records that did not decode, rows that did not convert;
* per tensor: rows, null rows, empty rows (lists with no value), the list-length distribution,
  numbers (`NumericSketch`), text / feature-list entries (`TopK`), entries not in the tensor's
  feature list, and for hashed tensors the load of every bucket (occurrences of each id, the
  dummy id too) and, per bucket, the smallest and largest 62-bit hash of the distinct values in
  it (two differ: the bucket holds colliding values), plus a distinct count of the input values
  (`DistinctSketch`);
* dead letters by reason, with their count and the smallest example (as JSON text).

It is filled from the batches *before* hashing and feature-list lookup (what `ExtractFeatures`
gives): the statistics describe the values people recognise (strings, NTV `name,term`
entries), which a feature list maps one to one to the ids the records hold. Hashing does not:
a hashed tensor (other than name-term-value vectors, whose values stay the input's) is described
as the ids its records hold, `0 .. hashBucketSize - 1` and the dummy id `hashBucketSize`: its
numbers and entries are the bucket loads, its lengths the ids per row (`numHashFunctions` per
value, and per row without a value); of its input only the distinct count is given, under
`hashing`. Hashed tensors' buckets come from what the hashing step saw of the same batch
(`add_distinct_hashes` with `hashing.hash_tensors_with_distinct`'s results, each distinct value
hashed once for both), or, for batches no hashing step saw, from hashing their distinct values
with the job's hash functions (`add_batch`). `describe` turns it into the report's JSON
document (see docs/report.md).

This module holds the whole run's part (files, dead letters, the document); each tensor's
statistics are a `TensorStatistics` (`tensor_statistics`), and `summary` makes the report's
entries of them (distributions, a tensor's entry).

Example:
    >>> import pyarrow as pa
    >>> from beam_tensorize.config import parse_config
    >>> config = parse_config({"features": [
    ...     {"outputTensorInfo": {"name": "x", "dtype": "float", "shape": []}},
    ...     {"outputTensorInfo": {"name": "g", "dtype": "long", "shape": [-1]}}]})
    >>> stats = Statistics(config)
    >>> stats.add_batch(pa.RecordBatch.from_pydict({"x": [1.0, 2.0, None], "g": [["a", "b"], ["a"], []]}),
    ...                 vocabularies={"g": pa.array(["a"])})
    >>> report = stats.describe()
    >>> x, g = report["tensors"]
    >>> x["numeric"]["mean"], x["nullRate"]
    (1.5, 0.3333333333)
    >>> g["categorical"]["top"][0], g["featureList"]["unknownShare"], g["emptyRate"]
    ({'value': 'a', 'count': 2}, 0.3333333333, 0.3333333333)
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping

import pyarrow as pa

from beam_tensorize.config.model import TensorizeConfig
from beam_tensorize.kernels.features.hashing import DistinctHashes
from beam_tensorize.kernels.features.vocab import split_term_only, uses_feature_list
from beam_tensorize.kernels.features.vocab_index import VocabIndex, as_index
from beam_tensorize.kernels.provenance import source_of
from beam_tensorize.kernels.report.summary import COVERAGE_KS, QUANTILES, TOP_SHOWN
from beam_tensorize.kernels.report.tensor_statistics import MAX_TRACKED_BUCKETS, TensorStatistics

__all__ = [
    "COVERAGE_KS",
    "MAX_DEAD_LETTER_REASONS",
    "MAX_TRACKED_BUCKETS",
    "QUANTILES",
    "REPORT_VERSION",
    "TOP_SHOWN",
    "Statistics",
    "TensorStatistics",
    "list_vocabularies",
]

#: Version of the report's JSON document.
REPORT_VERSION = 1
#: Dead-letter reasons kept apart; further reasons are counted under `OTHER_REASONS`.
MAX_DEAD_LETTER_REASONS = 100
OTHER_REASONS = "(other reasons)"
#: Longest example kept per dead-letter reason (characters of JSON).
EXAMPLE_CHARS = 1000
_ROW_SOURCE = re.compile(r"^(.*): (?:record|stripe) ")


def list_vocabularies(lists: Mapping) -> dict[str, VocabIndex]:
    """The entries of each tensor's feature list (`{tensor: FeatureList}`), as `add_batch`
    takes them (`vocabularies`): indexed once for all the batches (see `VocabIndex`)."""
    return {name: as_index(fl) for name, fl in split_term_only(lists)[0].items()}


class Statistics:
    """The whole run's statistics: files, tensors and dead letters (see the module docstring).

    Args:
        config: the job's config; every tensor gets an entry.
    """

    def __init__(self, config: TensorizeConfig):
        self.tensors = {t.name: TensorStatistics(t) for t in config.tensors}
        #: file -> [rows decoded, records that did not decode, rows that did not convert]
        self.files: dict[str, list[int]] = {}
        #: reason -> [count, smallest example]
        self.reasons: dict[str, list] = {}
        #: Seconds spent filling these statistics, and when (epoch seconds) the first and the
        #: last batch came: the caller keeps them (see `ComputeStatistics`).
        self.seconds = 0.0
        self.first_batch: float | None = None
        self.last_batch: float | None = None

    def add_batch(
        self,
        batch: pa.RecordBatch,
        vocabularies: Mapping[str, pa.Array | VocabIndex] | None = None,
        hashes: bool = True,
    ) -> None:
        """Add one extracted batch; `vocabularies`: the feature lists' entries by tensor
        (`list_vocabularies`);
        `hashes=False`: the hashed tensors' buckets come from the hashing step instead
        (`add_distinct_hashes`)."""
        vocabularies = vocabularies or {}
        source = source_of(batch)
        path = source[0] if source else ""
        self.files.setdefault(path, [0, 0, 0])[0] += batch.num_rows
        names = set(batch.schema.names)
        for name, stats in self.tensors.items():
            if name not in names:
                continue
            column = batch.column(name)
            vocabulary = vocabularies.get(name)
            if vocabulary is not None and not uses_feature_list(stats.tensor, column.type):
                vocabulary = None
            stats.add(column, vocabulary, hashes)

    def add_distinct_hashes(self, seen: Mapping[str, DistinctHashes]) -> None:
        """Add what the hashing step saw of one batch (`hash_tensors_with_distinct`), by tensor
        (its time counts in `seconds`)."""
        started = time.perf_counter()
        for name, distinct in seen.items():
            self.tensors[name].add_distinct_hashes(distinct)
        self.seconds += time.perf_counter() - started

    def add_dead_letter(self, letter: dict, text: str) -> None:
        """Add one dead letter (`text`: its JSON line)."""
        source = str(letter.get("source", ""))
        if "tensors" in letter:  # a row that did not convert; its source names the row
            match = _ROW_SOURCE.match(source)
            self.files.setdefault(match.group(1) if match else source, [0, 0, 0])[2] += 1
        else:  # a record that did not decode
            self.files.setdefault(source, [0, 0, 0])[1] += 1
        reason = str(letter.get("reason", "?"))
        self._add_reason(reason, 1, text[:EXAMPLE_CHARS])

    def _add_reason(self, reason: str, count: int, example: str) -> None:
        if reason not in self.reasons and len(self.reasons) >= MAX_DEAD_LETTER_REASONS:
            reason = OTHER_REASONS
        entry = self.reasons.setdefault(reason, [0, example])
        entry[0] += count
        entry[1] = min(entry[1], example)

    def merge(self, other: Statistics) -> Statistics:
        for name, stats in other.tensors.items():
            self.tensors[name].merge(stats)
        for path, counts in other.files.items():
            mine = self.files.setdefault(path, [0, 0, 0])
            for i, value in enumerate(counts):
                mine[i] += value
        for reason, (count, example) in sorted(other.reasons.items()):
            self._add_reason(reason, count, example)
        self.seconds += other.seconds
        for attr, pick in (("first_batch", min), ("last_batch", max)):
            mine, theirs = getattr(self, attr), getattr(other, attr)
            setattr(self, attr, theirs if mine is None else mine if theirs is None else pick(mine, theirs))
        return self

    def describe(self) -> dict:
        """The report's JSON document, without the split, drift and timings (see docs/report.md)."""
        files = []
        for path, (decoded, undecodable, unconvertible) in sorted(self.files.items()):
            if not (decoded or undecodable or unconvertible):
                continue
            files.append(
                {
                    "file": path,
                    "rowsRead": decoded + undecodable,
                    "rowsWritten": decoded - unconvertible,
                    "badRows": undecodable + unconvertible,
                }
            )
        letters = [
            {
                "reason": reason,
                "count": count,
                "example": json.loads(example) if _is_json(example) else example,
            }
            for reason, (count, example) in sorted(self.reasons.items(), key=lambda r: (-r[1][0], r[0]))
        ]
        return {
            "version": REPORT_VERSION,
            "rowsRead": sum(f["rowsRead"] for f in files),
            "rowsWritten": sum(f["rowsWritten"] for f in files),
            "badRows": sum(f["badRows"] for f in files),
            "files": files,
            "deadLetters": letters,
            "tensors": [stats.describe() for stats in self.tensors.values()],
        }

    def document(self) -> dict:
        """`describe()` with the `timings` the statistics can tell: `statistics` (the seconds
        spent filling them, summed), `readAndExtract` (first to last batch) and `lastBatchAt`
        (epoch seconds, for the report step to time the stages after it)."""
        document = self.describe()
        document["timings"] = {"statistics": self.seconds}
        if self.first_batch is not None:
            document["timings"]["readAndExtract"] = self.last_batch - self.first_batch
            document["timings"]["lastBatchAt"] = self.last_batch
        return document

    def add_timed_batch(
        self,
        batch: pa.RecordBatch,
        vocabularies: Mapping[str, pa.Array | VocabIndex] | None = None,
        hashes: bool = True,
    ) -> None:
        """`add_batch`, keeping the seconds it took and when it came (`document()`'s timings)."""
        started = time.perf_counter()
        self.add_batch(batch, vocabularies, hashes)
        self.seconds += time.perf_counter() - started
        now = time.time()
        self.first_batch = now if self.first_batch is None else min(self.first_batch, now)
        self.last_batch = now if self.last_batch is None else max(self.last_batch, now)


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True
