"""What the `tensorize` command prints and logs: the summary after a run (with its drift and
anomaly lines), the progress line, the one-line error of a failed job, and where log records
and worker processes' output go (a log file in the temporary folder, kept only on failure).
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import os
import posixpath
import re
import sys
import tempfile

from apache_beam.metrics.metric import MetricsFilter

from beam_tensorize import metrics
from beam_tensorize.job.metadata import read_metadata
from beam_tensorize.job.report import REPORT_FOLDER, load_report, report_paths
from beam_tensorize.job.spec import TensorizeSpec
from beam_tensorize.progress import format_rate

__all__ = [
    "ProgressLine",
    "anomalies_line",
    "configure_logging",
    "discard_log",
    "drift_line",
    "job_counters",
    "one_line",
    "summary",
    "worker_output_to",
]


def summary(
    spec: TensorizeSpec, result, totals: dict[str, int], elapsed: float, committed: dict | None = None
) -> str:
    """The lines printed after a run; `committed`: the run's own result (`record_result`),
    else the output's metadata tells (another run may have committed since)."""
    output = spec.output
    metadata = read_metadata(output) or {}
    entries = metadata.get("features", []) + metadata.get("labels", [])
    tensors = [t["name"] for t in entries]
    lists = [
        f"{t['featureList']['path']} ({t['featureList']['size']} entries)"
        for t in entries
        if "featureList" in t
    ]
    split = spec.split
    data = metadata.get("data", {}).get(split, {})
    if committed and "numRecords" in committed:
        prefix = posixpath.join(output, split) + "/"
        files = [f[len(prefix) :] if f.startswith(prefix) else f for f in committed.get("files", [])]
        data = {**data, "numRecords": committed["numRecords"], "badRecords": committed.get("badRecords", 0),
                "files": files, "offShape": committed.get("offShape", {})}  # fmt: skip
    counters = job_counters(result)
    rows_read = None if counters is None else counters.get(metrics.ROWS_READ, 0)
    if not rows_read and totals.get(metrics.ROWS_READ):
        rows_read = totals[metrics.ROWS_READ]
    lines = [
        f"Output written to {output}",
        f"  rows read:     {rows_read if rows_read is not None else 'n/a'}",
        f"  rows written:  {data.get('numRecords', 'n/a')}  (bad records: {data.get('badRecords', 'n/a')})",
        f"  tensors:       {', '.join(tensors)}",
        f"  files:         {', '.join(posixpath.join(split, f) for f in data.get('files', []))}"
        + (
            "none (--skip_conversion: the feature lists and the metadata only)"
            if spec.skip_conversion
            else ""
        ),
        f"  feature lists: {', '.join(lists) if lists else 'none'}",
        f"  metadata:      {posixpath.join(output, 'metadata', 'tensor_metadata.json')}",
        f"  time:          {elapsed:.1f} s"
        + (f" ({format_rate(rows_read, elapsed)} read)" if rows_read else ""),
    ]
    if spec.report != "none" and not spec.skip_conversion:
        json_path, html_path = report_paths(output, split)
        lines.append(f"  report:        {html_path if spec.report == 'html' else json_path}")
        drifting = drift_line(spec)
        if drifting:
            lines.append(f"  drift:         {drifting}")
        anomalies = anomalies_line(spec)
        if anomalies:
            lines.append(f"  anomalies:     {anomalies}")
    if data.get("offShape"):
        counted = ", ".join(f"{name} {rows}" for name, rows in data["offShape"].items())
        lines.append(
            f"  off shape:     rows kept whose outer dimension differs from the config's fixed shape: "
            f"{counted} (read back ragged; --check_shapes makes them bad records)"
        )
    if data.get("deduplication"):
        lines.append(
            f"  deduplicated:  {data['numRecords']} rows in {data.get('numBlocks')} blocks{_saved(counters)}"
        )
    if rows_read == 0:
        lines.append("  note:          the input holds no rows: the output is complete and empty")
    return "\n".join(lines)


#: Drifting tensors the summary names (then "and N more").
_DRIFT_NAMED = 10


def drift_line(spec: TensorizeSpec) -> str:
    """The tensors of this run's report past the drift threshold, farthest first, with their
    distances and where the report is ('' when none is past it, or there is no comparison)."""
    try:
        report = load_report(spec.output, spec.split) or {}
    except (OSError, ValueError):  # the summary of a finished run does not fail on its report
        return ""
    drift = report.get("drift") or {}
    past = sorted(
        (t for t in drift.get("tensors", []) if t.get("flagged")), key=lambda t: (-t["distance"], t["name"])
    )
    if not past:
        return ""
    threshold = drift["threshold"]
    named = ", ".join(f"{t['name']} {_distance(t['distance'], threshold)}" for t in past[:_DRIFT_NAMED])
    more = f" and {len(past) - _DRIFT_NAMED} more" if len(past) > _DRIFT_NAMED else ""
    page = posixpath.join(REPORT_FOLDER, f"{spec.split}.{'html' if spec.report == 'html' else 'json'}")
    return f"{named}{more} (past {threshold:g}; see {page})"


def anomalies_line(spec: TensorizeSpec) -> str:
    """The string values of this run's report outside the train split's domains (the schema's),
    per tensor ('' when there are none, or nothing to check against)."""
    try:
        report = load_report(spec.output, spec.split) or {}
    except (OSError, ValueError):
        return ""
    features = (report.get("anomalies") or {}).get("features", [])
    if not features:
        return ""
    named = "; ".join(
        f"{f['name']} {f['count']} value(s) not in the train split's ("
        + ", ".join(repr(v) for v in f["values"][:3])
        + (", ..." if len(f["values"]) > 3 else "")
        + ")"
        for f in features
    )
    page = posixpath.join(REPORT_FOLDER, f"{spec.split}.{'html' if spec.report == 'html' else 'json'}")
    return f"{named} (schema: metadata/schema.pbtxt; see {page})"


def _distance(distance: float, threshold: float) -> str:
    """A distance with two decimals, or as many more as it takes to read above the threshold."""
    for digits in range(2, 10):
        text = f"{distance:.{digits}f}"
        if float(text) > threshold:
            return text
    return f"{distance:g}"


def job_counters(result) -> dict[str, int] | None:
    """The job's counters (`beam_tensorize.metrics`), summed over steps by name; None when
    the runner reports no metrics."""
    try:
        counters = result.metrics().query(MetricsFilter().with_namespace(metrics.NAMESPACE))["counters"]
    except Exception:  # noqa: BLE001 - some runners report no metrics
        return None
    found: dict[str, int] = {}
    for counter in counters:
        name = counter.key.metric.name
        found[name] = found.get(name, 0) + (counter.committed or 0)
    return found


def _saved(counters: dict[str, int] | None) -> str:
    """How many user-column values deduplication left out, from the job's counters."""
    values = (counters or {}).get(metrics.DEDUP_VALUES, 0)
    stored = (counters or {}).get(metrics.DEDUP_VALUES_STORED, 0)
    if not values:
        return ""
    return f"; user columns store {stored} of {values} values ({1 - stored / values:.0%} saved)"


class _ConsoleFilter(logging.Filter):
    """Keeps the runner's records (its errors with their tracebacks, its warnings) off the
    console: the CLI says what failed in one line, and the log file holds the rest."""

    def filter(self, record: logging.LogRecord) -> bool:
        # The runner's own warnings (e.g. the worker processes' start-up notes in
        # multi-process mode) are for the log file too: the console is the job's.
        return not (
            record.name.startswith("apache_beam") or (record.levelno >= logging.ERROR and record.exc_info)
        )


def configure_logging(verbose: bool) -> str:
    """Console: warnings (and, with `verbose`, everything the runner logs as an error); a log
    file in the temporary folder: everything from INFO. Returns the log file's path."""
    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, "_beam_tensorize", False)]:
        root.removeHandler(handler)  # main() may run more than once in a process (tests)
        handler.close()
    formatter = logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s")
    log_path = os.path.join(tempfile.gettempdir(), f"beam_tensorize-{os.getpid()}.log")
    to_file = logging.FileHandler(log_path, mode="w", delay=True)
    to_file.setLevel(logging.INFO)
    to_file.setFormatter(formatter)
    console = logging.StreamHandler(sys.stderr)
    console.setLevel(logging.WARNING)
    console.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    if not verbose:
        console.addFilter(_ConsoleFilter())
    for handler in (to_file, console):
        handler._beam_tensorize = True
        root.addHandler(handler)
    root.setLevel(min(root.level or logging.WARNING, logging.INFO))
    return log_path


_EXCEPTION_LINE = re.compile(r"^(?:[\w.]+\.)?\w*(?:Error|Exception|Exit)\w*: (.+)$")


#: The step name Beam appends to a failed step's message (the log keeps it).
_BEAM_STEP = re.compile(r"(?: \[while running '[^']*'\])+$")


def one_line(err: BaseException) -> str:
    """The message of a failed job in one line: a runner may wrap the worker's traceback into
    the exception's text (multi-process DirectRunner, portable runners); keep its last
    exception line, without the step name Beam appends (`[while running '...']`)."""
    lines = [line.strip() for line in str(err).strip().splitlines() if line.strip()]
    if len(lines) <= 1:
        return _BEAM_STEP.sub("", lines[0]) if lines else type(err).__name__
    for line in reversed(lines):
        found = _EXCEPTION_LINE.match(line)
        if found:
            return _BEAM_STEP.sub("", found.group(1))
    return _BEAM_STEP.sub("", lines[-1])


def discard_log() -> None:
    root = logging.getLogger()
    for handler in [h for h in root.handlers if getattr(h, "_beam_tensorize", False)]:
        if isinstance(handler, logging.FileHandler):
            root.removeHandler(handler)
            handler.close()
            with contextlib.suppress(FileNotFoundError):
                os.remove(handler.baseFilename)


@contextlib.contextmanager
def worker_output_to(log_path: str, enabled: bool):
    """While the job runs, send what worker processes write to standard error (their own log
    lines and tracebacks: they inherit the descriptor) to the log file; yields the console's
    standard error for this process's own lines (None: unchanged)."""
    if not enabled:
        yield None
        return
    sys.stderr.flush()
    saved = os.dup(2)
    log = os.open(log_path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    console = os.fdopen(os.dup(saved), "w", buffering=1)
    try:
        os.dup2(log, 2)
        yield console
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        for fd in (saved, log):
            os.close(fd)
        console.close()


class ProgressLine:
    """The reporter's line: rows read and written so far, the pass's rate, the time. Train mode
    reading its input twice (`--input_passes 2`) reads the feature-list columns first, then
    everything."""

    def __init__(self):
        self._writing_since: tuple[float, int] | None = None  # (elapsed, rows read) then

    def __call__(self, totals: dict[str, int], elapsed: float) -> str:
        read, written = totals.get(metrics.ROWS_READ, 0), totals.get(metrics.EXAMPLES_WRITTEN, 0)
        written = min(written, read)  # the counters' files are written at different moments
        counted = totals.get(metrics.ROWS_COUNTED, 0)
        clock = datetime.timedelta(seconds=round(elapsed))
        if not read:
            rate = format_rate(counted, elapsed)
            return f"progress: counting feature-list entries: {counted:,} rows read ({rate}), {clock} elapsed"
        if not counted:  # one pass
            rate = format_rate(read, elapsed)
        else:  # the second pass: its rate since the first line that saw it
            if self._writing_since is None:
                self._writing_since = (elapsed, read)
            since, rows_then = self._writing_since
            # the first line of the second pass: the rate of the whole job so far
            rate = (
                format_rate(read - rows_then, elapsed - since)
                if elapsed > since
                else format_rate(read, elapsed)
            )
        return f"progress: {read:,} rows read, {written:,} written ({rate}), {clock} elapsed"
