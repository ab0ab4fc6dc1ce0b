"""The run report's files: `<output>/report/<split>.json`, `<output>/report/<split>.html` and
`<output>/report/<split>.stats.pb` (`stage_statistics_proto`).

`write_report` runs before the commit: it completes the statistics document (split, execution
mode, drift against the train report of the same output, timings), then writes the page and
the JSON into the run's staging folder (`target`), which the commit moves into place with the
data and the metadata (`beam_tensorize.job.transaction`). A run that fails writes neither, and
leaves the report of an earlier run as it was. See docs/report.md for the document.

The page, plots included (inline SVG), is drawn in `write_report`'s process in milliseconds.

Example:
    >>> import os, tempfile
    >>> out = tempfile.mkdtemp()
    >>> stats = {"version": 1, "rowsRead": 0, "rowsWritten": 0, "badRows": 0, "files": [],
    ...          "deadLetters": [], "tensors": [], "timings": {"statistics": 0.0}}
    >>> written = write_report(stats, out, "trainingData", "train", "json")
    >>> sorted(os.listdir(os.path.join(out, "report")))
    ['trainingData.json']
    >>> load_report(out, "trainingData")["split"]
    'trainingData'
"""

from __future__ import annotations

import json
import posixpath
import time
from collections.abc import Mapping

from beam_tensorize.job.files import read_text, write_text_atomically
from beam_tensorize.kernels.metadata import METADATA_FILE, SPLIT_FOLDERS
from beam_tensorize.kernels.report.anomalies import unexpected_string_values
from beam_tensorize.kernels.report.drift import DEFAULT_DRIFT_THRESHOLD, compare
from beam_tensorize.kernels.report.render import render_html
from beam_tensorize.kernels.report.tfdv_statistics import STATS_SUFFIX, statistics_list
from beam_tensorize.kernels.tfmd_schema import (
    MAX_STRING_DOMAIN,
    SCHEMA_FILE,
    recorded_string_domains,
    string_domains,
)

__all__ = [
    "REPORT_FOLDER",
    "REPORT_FORMATS",
    "TRAIN_SPLIT",
    "load_report",
    "rebuild_page",
    "report_paths",
    "schema_string_domains",
    "stage_statistics_proto",
    "staged_report",
    "stats_path",
    "write_report",
]

REPORT_FOLDER = "report"
#: `--report` values: none, the JSON only, or the JSON and the HTML page.
REPORT_FORMATS = ("none", "json", "html")
#: The split other splits' reports are compared with.
TRAIN_SPLIT = SPLIT_FOLDERS["train"]


def report_paths(out: str, split: str) -> tuple[str, str]:
    """(JSON path, HTML path) of a split's report."""
    folder = posixpath.join(out, REPORT_FOLDER)
    return posixpath.join(folder, f"{split}.json"), posixpath.join(folder, f"{split}.html")


def load_report(out: str, split: str) -> dict | None:
    """A split's report document in an output, or None when it has none."""
    text = read_text(report_paths(out, split)[0])
    return None if text is None else json.loads(text)


def write_report(
    statistics: dict,
    out: str,
    split: str,
    execution_mode: str,
    report_format: str,
    drift_threshold: float = DEFAULT_DRIFT_THRESHOLD,
    target: str | None = None,
) -> dict:
    """Write the split's report (`report_format` "json" or "html"; "none" writes nothing).

    Args:
        statistics: what `beam_tensorize.report.ComputeStatistics` gave.
        out, split, execution_mode: the job's output folder, split folder and mode.
        report_format: "none", "json" or "html".
        drift_threshold: distances above it flag a tensor (validation / test runs that find a
            train report in `out`).
        target: the folder to write into instead of `out` (a run's staging folder, see
            `beam_tensorize.job.transaction`); the train report is still read from `out`.

    Returns:
        `{"json": path, "html": path}`: where the files are (or will be, once committed) in `out`
        (an empty dict for "none").
    """
    if report_format not in REPORT_FORMATS:
        raise ValueError(f"report must be one of {', '.join(REPORT_FORMATS)}, got {report_format!r}")
    if report_format == "none":
        return {}
    started = time.perf_counter()
    document = {"version": statistics.get("version"), "split": split, "executionMode": execution_mode}
    document.update({k: v for k, v in statistics.items() if k not in ("version", "timings")})
    if split != TRAIN_SPLIT:
        train = load_report(out, TRAIN_SPLIT)
        if train is not None:
            document["drift"] = compare(train, document, TRAIN_SPLIT, drift_threshold)
        domains = recorded_string_domains(read_text(posixpath.join(out, SCHEMA_FILE)))
        if domains:  # the train split's values of its string features
            document["anomalies"] = unexpected_string_values(document, domains)
    timings = dict(statistics.get("timings") or {})
    last_batch = timings.pop("lastBatchAt", None)
    if last_batch is not None:  # the records' commit, the metadata: after the last batch
        timings["commitAndMetadata"] = max(time.time() - last_batch, 0.0)
    json_path, html_path = report_paths(target or out, split)
    written = {"json": report_paths(out, split)[0]}
    if report_format == "html":
        page_started = time.perf_counter()
        page = render_html({**document, "timings": timings})
        timings["renderPage"] = time.perf_counter() - page_started
        write_text_atomically(html_path, page)
        written["html"] = report_paths(out, split)[1]
    timings["writeReport"] = time.perf_counter() - started
    document["timings"] = timings
    write_text_atomically(json_path, json.dumps(document, indent=1, sort_keys=False, allow_nan=False) + "\n")
    return written


def staged_report(txn, out: str, split: str) -> dict | None:
    """The split's report `write_report(target=...)` staged in `txn` (a
    `beam_tensorize.job.transaction.Transaction`); None when none was."""
    text = read_text(txn.staged_path(report_paths(out, split)[0]))
    return None if text is None else json.loads(text)


def stage_statistics_proto(
    txn, out: str, split: str, report: dict | None, lists: Mapping | None
) -> str | None:
    """Beside the split's report staged in `txn` (`staged_report`), stage the same statistics as
    TFDV's `DatasetFeatureStatisticsList` (`report/<split>.stats.pb`, see
    `beam_tensorize.kernels.report.tfdv_statistics`), from that report, the staged metadata and
    the run's feature lists; returns its path in `out` (None: no report was staged)."""
    metadata = read_text(txn.staged_path(posixpath.join(out, METADATA_FILE)))
    if report is None or metadata is None:
        return None
    proto = statistics_list(report, json.loads(metadata), lists)
    path = stats_path(out, split)
    txn.write_bytes(path, proto.SerializeToString(deterministic=True))
    return path


def schema_string_domains(out: str, split: str, report: dict | None, appending: bool) -> dict[str, list[str]]:
    """The string domains `schema.pbtxt` gets at this commit: a train run's from its staged
    report (`staged_report`; an appending run's added to those recorded, while both sides had
    one and they stay within `MAX_STRING_DOMAIN`); other splits keep the recorded ones (the
    train split's)."""
    recorded = recorded_string_domains(read_text(posixpath.join(out, SCHEMA_FILE)))
    if split != TRAIN_SPLIT:
        return recorded
    found = string_domains(report) if report is not None else {}
    if not appending:
        return found
    merged = {
        name: sorted(set(recorded[name]) | set(values)) for name, values in found.items() if name in recorded
    }
    return {name: values for name, values in merged.items() if len(values) <= MAX_STRING_DOMAIN}


def stats_path(out: str, split: str) -> str:
    """`<out>/report/<split>.stats.pb`."""
    return posixpath.join(out, REPORT_FOLDER, split + STATS_SUFFIX)


def rebuild_page(out: str, split: str) -> str:
    """Render `<out>/report/<split>.html` again from its JSON; returns the page's path.

    Raises:
        FileNotFoundError: the output has no JSON report of that split.
    """
    document = load_report(out, split)
    json_path, html_path = report_paths(out, split)
    if document is None:
        raise FileNotFoundError(json_path)
    write_text_atomically(html_path, render_html(document))
    return html_path
