"""Live progress of a job on one machine (the DirectRunner, in-process or multi-process).

Beam's metrics reach the caller only when the job ends, so the steps also keep running totals
in small files: a `ProgressCounter` (one per step instance and process) rewrites its file at
most once a second under the folder named by the environment variable `PROGRESS_ENV`;
`read_progress` sums them. Without that variable counters do nothing. The CLI sets it and runs
a `ProgressReporter` thread that prints a line at a steady interval.

Example:
    >>> import os, tempfile
    >>> os.environ[PROGRESS_ENV] = tempfile.mkdtemp()
    >>> counter = ProgressCounter("rows_read")
    >>> counter.add(5); counter.add(7); counter.flush()
    >>> read_progress(os.environ.pop(PROGRESS_ENV))
    {'rows_read': 12}
"""

from __future__ import annotations

import logging
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable

__all__ = [
    "PROGRESS_ENV",
    "ProgressCounter",
    "ProgressReporter",
    "format_rate",
    "read_progress",
    "read_result",
    "record_result",
]

_LOGGER = logging.getLogger(__name__)

#: The folder the counters write to (unset: no progress is kept).
PROGRESS_ENV = "BEAM_TENSORIZE_PROGRESS_DIR"
_FLUSH_SECONDS = 1.0


class ProgressCounter:
    """A running total of `name`, visible to `read_progress` within about a second. Create it
    where the step runs (a DoFn's `setup`): its file is named after the process."""

    def __init__(self, name: str):
        self._name = name
        self._total = 0
        self._flushed_at = 0.0
        self._path: str | None = None
        folder = os.environ.get(PROGRESS_ENV)
        if folder and os.path.isdir(folder):
            self._path = os.path.join(folder, f"{name}.{os.getpid()}.{uuid.uuid4().hex[:8]}")

    def add(self, n: int) -> None:
        if self._path is None:
            return
        self._total += n
        now = time.monotonic()
        if now - self._flushed_at >= _FLUSH_SECONDS:
            self._flushed_at = now
            self.flush()

    def flush(self) -> None:
        """Write the total now."""
        if self._path is None:
            return
        temp = self._path + ".tmp"
        try:
            with open(temp, "w") as f:
                f.write(str(self._total))
            os.replace(temp, self._path)
        except OSError:  # progress is best effort: the folder may be gone at the end
            self._path = None


def read_progress(folder: str) -> dict[str, int]:
    """The totals of every counter under `folder`, summed by name."""
    totals: dict[str, int] = {}
    try:
        names = os.listdir(folder)
    except OSError:
        return totals
    for entry in names:
        if entry.endswith(".tmp"):
            continue
        try:
            with open(os.path.join(folder, entry)) as f:
                value = int(f.read() or 0)
        except (OSError, ValueError):
            continue
        name = entry.split(".", 1)[0]
        totals[name] = totals.get(name, 0) + value
    return totals


_RESULT_FILE = "result.json"


def record_result(result: dict) -> dict:
    """Keep the job's own result (what its commit wrote) in the progress folder, for the
    command's summary: the output's metadata may already be another run's. Returns `result`."""
    folder = os.environ.get(PROGRESS_ENV)
    if folder and os.path.isdir(folder):
        import json

        with open(os.path.join(folder, _RESULT_FILE), "w") as f:
            json.dump(result, f)
    return result


def read_result(folder: str) -> dict | None:
    """What `record_result` kept in `folder` (None: nothing, e.g. a remote runner ran the job)."""
    import json

    try:
        with open(os.path.join(folder, _RESULT_FILE)) as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def format_rate(rows: int, seconds: float) -> str:
    """`1,234 rows/s`."""
    return f"{rows / seconds:,.0f} rows/s" if seconds > 0 else "n/a rows/s"


class ProgressReporter:
    """Prints a progress line every `interval` seconds while a job runs (a daemon thread).

    Args:
        folder: the counters' folder (`PROGRESS_ENV`).
        describe: totals, elapsed seconds -> the line to print.
        interval: seconds between lines.
        out: where to print (standard error by default).
    """

    def __init__(
        self,
        folder: str,
        describe: Callable[[dict[str, int], float], str],
        interval: float = 10.0,
        out=None,
    ):
        self._folder = folder
        self._describe = describe
        self._interval = interval
        self._out = out
        self._stop = threading.Event()
        self._started = time.monotonic()
        self._thread = threading.Thread(target=self._run, name="beam_tensorize-progress", daemon=True)

    def __enter__(self) -> ProgressReporter:
        self._started = time.monotonic()
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    @property
    def elapsed(self) -> float:
        return time.monotonic() - self._started

    def _run(self) -> None:
        while not self._stop.wait(self._interval):
            line = self._describe(read_progress(self._folder), self.elapsed)
            _LOGGER.info(line)
            print(line, file=self._out or sys.stderr, flush=True)
