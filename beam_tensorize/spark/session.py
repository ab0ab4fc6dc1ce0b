"""A Spark session on this machine that starts in seconds: `local_session(cores)`.

`SparkSession.builder.master("local[2]").getOrCreate()` spends most of a short job starting
the JVM: ~6 s on two cores, most of it loading and JIT-compiling Spark's classes, before the
first task. On one machine the driver JVM only schedules tasks and carries small results
(`tensorize_spark`'s Python tasks read, encode and write the data themselves), so
`local_session` starts it for that:

* the JIT compiles with its quick tier only (`-XX:TieredStopAtLevel=1`): a fraction of the
  CPU at start, and fast enough for scheduling;
* Spark's classes are loaded from a class data archive (Java's AppCDS: the classes already
  parsed and verified, mapped from one file) kept in the user's cache folder: the first
  session records it when its JVM exits (~110 MB), the next ones start from it;
* no web UI and no console progress bar;
* `spark.stop()` returns once the JVM has stopped, without waiting for PySpark's accumulator
  server to notice (its connection handler polls its socket once a second, and `stop()`
  waited for that poll, ~1 s): the server is shut down and closed by a thread of its own.

With both, the session is up in ~2-3 s instead of ~6-9 s on this project's 2-core test
machine (`benchmarks/README.md`, "Scale"). A JVM that cannot use the archive (another Java or
Spark version) starts without it, as usual; the archive's name holds the Spark version and
the Java executable, so an upgrade records a new one. To record it ahead of time (in a
container image, say): `python -m beam_tensorize.spark` (`prepare_class_archive()`).

Example::

    from beam_tensorize.spark import local_session, tensorize_spark

    spark = local_session(2)
    tensorize_spark(spark, "data/*.avro", "config.json", "out")
    spark.stop()
"""

from __future__ import annotations

import glob
import hashlib
import os
import shutil
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Mapping

import pyspark
from pyspark import SparkContext
from pyspark.sql import SparkSession

from beam_tensorize.spark._compat import accumulator_server

__all__ = ["class_archive_path", "default_cache_dir", "local_session", "prepare_class_archive"]

_CACHE_ENV = "BEAM_TENSORIZE_CACHE"
_QUICK_JIT = "-XX:TieredStopAtLevel=1"
_QUIET_CDS = "-Xlog:cds*=off"  # the archive's own notices (classes it cannot hold) are noise
_SETTLED_SECONDS = 10  # an archive not written to for this long was finished by its JVM


def default_cache_dir() -> str:
    """`$BEAM_TENSORIZE_CACHE`, else `$XDG_CACHE_HOME/beam_tensorize`, else
    `~/.cache/beam_tensorize`."""
    if os.environ.get(_CACHE_ENV):
        return os.environ[_CACHE_ENV]
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "beam_tensorize")


def _java() -> str:
    """The Java executable Spark's launcher runs (`$JAVA_HOME/bin/java`, else the PATH's)."""
    home = os.environ.get("JAVA_HOME")
    found = os.path.join(home, "bin", "java") if home else shutil.which("java")
    return os.path.realpath(found) if found else "java"


def class_archive_path(cache_dir: str) -> str:
    """The class data archive of this Spark and Java in `cache_dir` (it may not exist yet).

    Example:
        >>> class_archive_path("/cache").startswith("/cache/spark-" + pyspark.__version__)
        True
    """
    java = _java()
    stamp = f"{java}:{os.path.getmtime(java) if os.path.exists(java) else 0}:{pyspark.__file__}"
    key = hashlib.sha256(stamp.encode()).hexdigest()[:12]
    return os.path.join(cache_dir, f"spark-{pyspark.__version__}-{key}.jsa")


def _archive_options(cache_dir: str) -> list[str]:
    """JVM options that load the archive, or that record it at exit when there is none (into a
    temporary name, adopted by a later session once its JVM has finished writing it)."""
    archive = class_archive_path(cache_dir)
    recording = False
    for part in sorted(glob.glob(archive + ".*.part")):
        try:
            if time.time() - os.path.getmtime(part) < _SETTLED_SECONDS:
                recording = True  # another session's JVM may still be writing it
            elif os.path.exists(archive) or not os.path.getsize(part):
                os.remove(part)  # an extra copy, or left empty by a JVM that was killed
            else:
                os.replace(part, archive)
        except OSError:  # another session adopted or removed it meanwhile
            continue
    if os.path.exists(archive):
        return [f"-XX:SharedArchiveFile={archive}", _QUIET_CDS]
    try:
        os.makedirs(cache_dir, exist_ok=True)
    except OSError:  # a read-only home: start without an archive
        return []
    if recording:
        return []
    return [f"-XX:ArchiveClassesAtExit={archive}.{uuid.uuid4().hex}.part", _QUIET_CDS]


def local_session(
    cores: int = 2,
    *,
    class_cache: bool = True,
    cache_dir: str | None = None,
    app_name: str = "beam_tensorize",
    config: Mapping[str, str] | None = None,
) -> SparkSession:
    """A SparkSession on `local[cores]` set up to start fast (see the module's text).

    Args:
        cores: worker threads (and Python workers) of the local master.
        class_cache: load Spark's classes from the cached class data archive (recording it
            the first time); False starts the JVM as usual, with only the quick JIT.
        cache_dir: where the archive is kept (default: `default_cache_dir()`).
        app_name: the application's name.
        config: more Spark settings (`spark.driver.extraJavaOptions` given here is kept,
            after the options above). The Python workers run this process's interpreter
            (`spark.pyspark.python`) unless `PYSPARK_PYTHON` or the setting says otherwise.

    Returns:
        The session. As with `getOrCreate`, a session already running in this process is
        returned as it is (its JVM has started already).

    Example::

        spark = local_session(2, config={"spark.driver.memory": "4g"})
    """
    if cores < 1:
        raise ValueError(f"local_session: cores must be at least 1, got {cores}")
    settings = dict(config or {})
    options = [_QUICK_JIT]
    running = SparkContext._active_spark_context is not None  # its JVM options are set already
    if class_cache and not running:
        options += _archive_options(cache_dir or default_cache_dir())
    given = settings.pop("spark.driver.extraJavaOptions", "")
    builder = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", " ".join([*options, given]).strip())
    )
    if not os.environ.get("PYSPARK_PYTHON"):  # local workers run this interpreter (its packages),
        settings.setdefault("spark.pyspark.python", sys.executable)  # not `python3` from PATH
    for name, value in settings.items():
        builder = builder.config(name, value)
    spark = builder.getOrCreate()
    if not running:
        _close_accumulator_server_in_background(spark.sparkContext)
        if not os.environ.get("PYSPARK_PYTHON"):  # what PySpark starts its workers with
            spark.sparkContext.pythonExec = sys.executable
    return spark


def _close_accumulator_server_in_background(context: SparkContext) -> None:
    """Make `context.stop()` hand its accumulator server's shutdown to a thread.

    PySpark's `AccumulatorTCPServer.shutdown()` sets `server_shutdown`, then waits until the
    server's thread has left its connection handler, which polls the socket with a 1-second
    timeout before it looks at the flag again. After `stop()` nothing sends updates any more
    (the JVM has stopped first), so the caller need not wait for that: a daemon thread runs
    the same shutdown (and closes the socket) while the caller goes on; `server.closing` is
    that thread, for whoever wants to wait for it. Should the JVM exit meanwhile, the handler
    reads the closed connection's end, quietly (PySpark would print that as an error).
    """
    server = accumulator_server(context)
    if server is None:
        return  # another PySpark: its own shutdown, as it is
    close, report = type(server).shutdown, type(server).handle_error

    def handle_error(request, client_address) -> None:
        # The JVM may exit (closing the connection) before the handler's next poll: the
        # handler then reads an end of file, which is no error once the server is shut down.
        if not server.server_shutdown:
            report(server, request, client_address)

    def shutdown_in_background() -> threading.Thread:
        server.server_shutdown = True
        server.closing = threading.Thread(
            target=close, args=(server,), name="accumulator-server-shutdown", daemon=True
        )
        server.closing.start()
        return server.closing

    server.shutdown = shutdown_in_background
    server.handle_error = handle_error


# A session that records the archive, and whose JVM has finished writing it when this exits:
# the JVM writes the archive as it exits, which it does when its standard input closes.
_RECORD = """
import sys
from beam_tensorize.spark.session import local_session
spark = local_session(1, cache_dir=sys.argv[1])
spark.sparkContext.parallelize([0], 1).count()
from beam_tensorize.spark._compat import driver_jvm
jvm = driver_jvm(spark.sparkContext)
spark.stop()
jvm.stdin.close()
jvm.wait()
"""


def prepare_class_archive(cache_dir: str | None = None) -> str:
    """Record Spark's class data archive now, if it is not there yet, and return its path:
    the next `local_session` starts fast from the first one.

    Raises:
        RuntimeError: the recording session failed (its error output is in the message).
    """
    cache_dir = cache_dir or default_cache_dir()
    archive = class_archive_path(cache_dir)
    _archive_options(cache_dir)  # adopts an archive another session has finished
    if not os.path.exists(archive):
        done = subprocess.run([sys.executable, "-c", _RECORD, cache_dir], capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"recording Spark's class archive failed:\n{done.stderr[-2000:]}")
        parts = sorted(glob.glob(archive + ".*.part"), key=os.path.getmtime)
        if parts and not os.path.exists(archive):
            os.replace(parts[-1], archive)  # complete: its JVM has exited
    return archive
