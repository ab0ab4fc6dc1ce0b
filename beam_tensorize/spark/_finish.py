"""The driver's part of `tensorize_spark` once the files are written: the Beam job's own last
steps, in its order.

The rows the tasks reported are sorted out (files, dead letters, layouts, maxima, off-shape
counts, statistics); the splits' statistics make the run report (staged), dead letters go
through the bad-record check, and one commit (save modes; split files named in split order)
moves the data, metadata, feature lists, report and dead letters into place, `_SUCCESS` last.
"""

from __future__ import annotations

import json
import pickle
import posixpath
import uuid
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from beam_tensorize.config.model import TensorizeConfig
from beam_tensorize.job.commit import CommitPlan, PendingFiles

# The Beam job's own finishing steps (dead letters and the ratio check, the `_SUCCESS`
# marker, the split's metadata entry, the summary), called as they are.
from beam_tensorize.job.finish import (
    BAD,
    DEAD_LETTER_FOLDER,
    GOOD,
    OFF_SHAPE,
    MetadataInputs,
    check_bad_records,
    commit_split,
    first_layouts,
)
from beam_tensorize.job.report import write_report
from beam_tensorize.job.spec import TensorizeSpec
from beam_tensorize.job.transaction import staging_folder
from beam_tensorize.kernels.features.vocab import FeatureList
from beam_tensorize.kernels.metadata import merge_maxima
from beam_tensorize.kernels.report.statistics import Statistics
from beam_tensorize.spark._tasks import DEAD_LETTER, MAXIMA, OFF_SHAPE_COUNTS, RECORD, STATISTICS

__all__ = ["finish"]


class _Reported(NamedTuple):
    """The rows the tasks reported, by kind."""

    files: list[tuple[str, int | str, str, int]]  # (folder, shard or key, temporary path, count)
    bad_lines: list[str]
    layouts: list[tuple]
    maxima: list[dict]
    off_shape: list[tuple]
    statistics: list[Statistics]


def finish(
    written: Iterable,
    spec: TensorizeSpec,
    plan: CommitPlan,
    checked: dict,
    *,
    lists: dict[str, FeatureList],
    previous: dict | None,
    transform: dict,
) -> dict:
    """Report, check the bad records and commit; returns the Beam job's summary.

    `written`: the rows the writing step collected; `checked`: `check_target`'s answer;
    `lists`: the run's feature lists; `previous`: the split's metadata entry when appending
    to it; `transform`: the metadata's `transform` entry.
    """
    reported = _sorted_out(written, plan)
    document = None
    if spec.report != "none":
        document = _merged(reported.statistics, reported.bad_lines, spec.config).document()
    good = sum(count for *_, count in reported.files)
    grouped = (0, [(GOOD, good), *reported.off_shape, *((BAD, line) for line in reported.bad_lines)])
    counts = check_bad_records(
        grouped, posixpath.join(spec.output, DEAD_LETTER_FOLDER, spec.split), spec.max_bad_records_ratio
    )
    run = uuid.uuid4().hex
    if document is not None:  # staged, then committed with the rest (as the Beam job)
        write_report(document, spec.output, spec.split, spec.execution_mode, spec.report, spec.drift_threshold,
                     staging_folder(spec.output, run))  # fmt: skip
    inputs = MetadataInputs(
        lists,
        spec.execution_mode == "train",
        first_layouts(reported.layouts) if spec.extra_names else (),
        merge_maxima(reported.maxima) if spec.execution_mode == "train" else None,
        transform,
        lists_from_output=spec.execution_mode != "train" or previous is not None,
    )
    return commit_split(spec, run, PendingFiles(reported.files, plan, checked), counts, inputs)


def _sorted_out(written: Iterable, plan: CommitPlan) -> _Reported:
    """The collected rows by kind, each kind in the order collected."""
    reported = _Reported([], [], [], [], [], [])
    for row in written:
        if row["kind"] == RECORD:
            key = row["shard"] if plan.num_shards else row["key"]
            reported.files.append((row["path"], key, row["payload"].decode(), row["count"]))
        elif row["kind"] == DEAD_LETTER:
            reported.bad_lines.append(row["payload"].decode())
        elif row["kind"] == MAXIMA:
            reported.maxima.append(json.loads(row["payload"]))
        elif row["kind"] == OFF_SHAPE_COUNTS:
            reported.off_shape.append((OFF_SHAPE, json.loads(row["payload"])))
        elif row["kind"] == STATISTICS:
            reported.statistics.append(pickle.loads(row["payload"]))
        else:
            reported.layouts.append(pickle.loads(row["payload"]))
    return reported


def _merged(
    statistics: Sequence[Statistics], bad_lines: Sequence[str], config: TensorizeConfig
) -> Statistics:
    """The splits' statistics as one, with every dead letter (undecodable records too)."""
    merged = Statistics(config)
    for part in statistics:
        merged.merge(part)
    for line in bad_lines:
        merged.add_dead_letter(json.loads(line), line)
    return merged
