"""`beam_tensorize.spark.local_session`: a fast-starting local session, and Spark's Python
workers that read and write local files without importing Apache Beam."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pytest

pytest.importorskip("pyspark", reason="the Spark tests need the 'spark' extra (pip install -e '.[spark]')")

from beam_tensorize.spark import session

_ENV = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")


def _old(path: str, data: bytes) -> None:
    """Write `path` with a modification time well before the settling delay."""
    with open(path, "wb") as f:
        f.write(data)
    past = time.time() - 10 * session._SETTLED_SECONDS
    os.utime(path, (past, past))


def test_without_an_archive_the_session_records_one_into_a_temporary_name(tmp_path):
    options = session._archive_options(str(tmp_path / "cache"))
    archive = session.class_archive_path(str(tmp_path / "cache"))
    assert len(options) == 2
    assert options[0].startswith(f"-XX:ArchiveClassesAtExit={archive}.")
    assert options[0].endswith(".part")
    assert options[1] == "-Xlog:cds*=off"
    assert os.path.isdir(tmp_path / "cache")


def test_a_finished_recording_is_adopted_and_loaded(tmp_path):
    archive = session.class_archive_path(str(tmp_path))
    _old(archive + ".abc.part", b"archive bytes")
    assert session._archive_options(str(tmp_path)) == [f"-XX:SharedArchiveFile={archive}", "-Xlog:cds*=off"]
    assert os.listdir(tmp_path) == [os.path.basename(archive)]
    with open(archive, "rb") as f:
        assert f.read() == b"archive bytes"


def test_a_recording_still_being_written_is_left_alone(tmp_path):
    archive = session.class_archive_path(str(tmp_path))
    with open(archive + ".abc.part", "wb") as f:
        f.write(b"half")
    assert session._archive_options(str(tmp_path)) == []  # no second recording meanwhile
    assert os.listdir(tmp_path) == [os.path.basename(archive) + ".abc.part"]


def test_empty_and_extra_recordings_are_removed(tmp_path):
    archive = session.class_archive_path(str(tmp_path))
    _old(archive + ".a.part", b"")  # its JVM was killed before writing
    _old(archive + ".b.part", b"first")
    _old(archive + ".c.part", b"second")
    assert session._archive_options(str(tmp_path))[0] == f"-XX:SharedArchiveFile={archive}"
    assert os.listdir(tmp_path) == [os.path.basename(archive)]
    with open(archive, "rb") as f:
        assert f.read() == b"first"


def test_the_archive_name_holds_the_spark_version():
    import pyspark

    name = os.path.basename(session.class_archive_path("/cache"))
    assert name.startswith(f"spark-{pyspark.__version__}-") and name.endswith(".jsa")


def test_cache_folder_from_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("BEAM_TENSORIZE_CACHE", str(tmp_path / "c"))
    assert session.default_cache_dir() == str(tmp_path / "c")
    monkeypatch.delenv("BEAM_TENSORIZE_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert session.default_cache_dir() == str(tmp_path / "x" / "beam_tensorize")


def _accumulator_server_with_a_connection():
    """PySpark's own accumulator server, patched as `local_session` patches it, with a
    connection as the JVM keeps one (authenticated; one empty update acknowledged)."""
    import socket
    import struct
    import types

    from pyspark.accumulators import _start_update_server

    server = _start_update_server("secret", False)
    client = socket.create_connection(server.server_address, timeout=10)
    client.sendall(b"secret" + struct.pack("!i", 0))
    assert client.recv(1) == b"\x01"  # acknowledged: its handler is polling the connection
    session._close_accumulator_server_in_background(types.SimpleNamespace(_accumulatorServer=server))
    return server, client


def test_stop_hands_the_accumulator_servers_shutdown_to_a_thread(capsys):
    """After the patched `shutdown()` the server still ends (its handler leaves at its next
    poll), closes its socket and the connection, in a thread the caller may join."""
    server, client = _accumulator_server_with_a_connection()
    closing = server.shutdown()
    assert closing is server.closing and closing.name == "accumulator-server-shutdown"
    assert closing.daemon and server.server_shutdown
    closing.join(10)
    assert not closing.is_alive()
    assert server.socket.fileno() == -1
    assert client.recv(1) == b""  # the handler ended: the connection is closed
    client.close()
    assert capsys.readouterr().err == ""


def test_a_jvm_exiting_after_stop_is_no_error(capsys):
    """The JVM closes its connection before the handler's next poll (a script that stops the
    session and ends the JVM at once): the handler reads the end of the connection; PySpark
    would print that as an exception, the patched server says nothing."""
    server, client = _accumulator_server_with_a_connection()
    closing = server.shutdown()
    client.close()
    closing.join(10)
    assert not closing.is_alive() and server.socket.fileno() == -1
    assert capsys.readouterr().err == ""


def test_cores_must_be_positive():
    with pytest.raises(ValueError, match="cores must be at least 1, got 0"):
        session.local_session(0)


_RUN = """
import json, sys
from beam_tensorize.spark import local_session

def accumulated(sc):
    total = sc.accumulator(0)
    sc.parallelize(range(5), 2).foreach(lambda x: total.add(x))
    return total.value

spark = local_session(1, cache_dir=sys.argv[1], app_name="session test",
                      config={"spark.driver.extraJavaOptions": "-Dbeam_tensorize.test=1"})
runtime = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
print(json.dumps({
    "args": list(runtime.getInputArguments()),
    "sum": spark.sparkContext.parallelize(range(10), 2).sum(),
    "master": spark.sparkContext.master, "name": spark.sparkContext.appName,
    "ui": spark.conf.get("spark.ui.enabled"),
    "accumulated": accumulated(spark.sparkContext),
    "worker": spark.sparkContext.parallelize([0], 1).map(lambda _: sys.executable).collect()[0],
}))
server = spark.sparkContext._accumulatorServer
spark.stop()
server.closing.join(10)
print(json.dumps({"closed": server.socket.fileno() == -1 and not server.closing.is_alive()}))
"""


def test_a_recorded_archive_starts_the_next_session(tmp_path):
    """`python -m beam_tensorize.spark` records the archive (its JVM has finished writing it
    when the command returns); the next session loads it, with the quick JIT and the
    caller's own JVM options."""
    cache = str(tmp_path / "cache")
    done = subprocess.run(
        [sys.executable, "-m", "beam_tensorize.spark", "--cache_dir", cache],
        capture_output=True, text=True, env=_ENV, timeout=300,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    archive = session.class_archive_path(cache)
    assert done.stdout.strip() == archive
    assert os.listdir(cache) == [os.path.basename(archive)]
    assert os.path.getsize(archive) > 10 * 2**20  # Spark's classes, parsed and verified

    # No PYSPARK_PYTHON: the Python workers must still run this interpreter (with the project
    # installed), not the `python3` on PATH.
    env = {k: v for k, v in _ENV.items() if k != "PYSPARK_PYTHON"}
    run = subprocess.run(
        [sys.executable, "-c", _RUN, cache], capture_output=True, text=True, env=env, timeout=300
    )
    assert run.returncode == 0, run.stderr[-2000:]
    *_, line, closed = run.stdout.strip().splitlines()
    seen = json.loads(line)
    assert json.loads(closed) == {"closed": True}  # stop() left the accumulator server to a thread
    assert f"-XX:SharedArchiveFile={archive}" in seen["args"]
    assert "-XX:TieredStopAtLevel=1" in seen["args"]
    assert "-Dbeam_tensorize.test=1" in seen["args"]
    assert (seen["sum"], seen["accumulated"], seen["master"], seen["name"], seen["ui"]) == (
        45,
        10,
        "local[1]",
        "session test",
        "false",
    )
    assert seen["worker"] == sys.executable


_WORKER_SIDE = """
import os, sys
from beam_tensorize.job.files import create_file, open_file
import beam_tensorize.spark.tensorize  # what a Spark Python worker unpickles the job's tasks from
path = os.path.join(sys.argv[1], "new", "folder", "part-0.tfrecord.gz")
with create_file(path) as f:
    f.write(b"raw bytes")
with open_file(path) as f:
    data = f.read()
print(data.decode(), "apache_beam" in sys.modules)
"""


def test_local_files_need_no_apache_beam(tmp_path):
    """Spark's Python workers read and write local files with Python's own `open` (folders
    created, no decompression whatever the name), without Apache Beam's ~1 s import."""
    done = subprocess.run([sys.executable, "-c", _WORKER_SIDE, str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["raw", "bytes", "False"]


def test_the_pyspark_internals_the_package_uses_are_there(spark):
    """`beam_tensorize/spark/_compat.py` reaches into PySpark: a PySpark release that moves
    those names fails here, by name."""
    import pyarrow as pa

    from beam_tensorize.spark import _compat

    context = spark.sparkContext
    assert _compat.accumulator_server(context) is not None, "SparkContext._accumulatorServer.server_shutdown"
    assert _compat.driver_jvm(context).poll() is None, "SparkContext._gateway.proc"
    frame = spark.createDataFrame([(1,)], "x long")
    assert _compat.written_frame(frame.write) is frame, "DataFrameWriter._df"
    schema = pa.schema([("x", pa.int64()), ("s", pa.list_(pa.string()))])
    assert _compat.to_arrow_schema(_compat.from_arrow_schema(schema)) == schema
