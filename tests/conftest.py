"""Shared fixtures: one local SparkSession for the whole test session (Spark tests only); the
empty folders Beam made for pipelines the tests built but never ran, removed at the end; a
test's own temporary directory."""

from __future__ import annotations

import contextlib
import glob
import os
import socket
import subprocess
import sys
import tempfile

import pytest

_SPARK_ENV = {
    "SPARK_LOCAL_IP": "127.0.0.1",
    # Spark's Python workers must run this interpreter (the one with the project installed).
    "PYSPARK_PYTHON": sys.executable,
    "PYSPARK_DRIVER_PYTHON": sys.executable,
}


@pytest.fixture(scope="session", autouse=True)
def _no_beam_pipeline_folders_left():
    """Beam makes a `beam-pipeline-temp*` folder for each `beam.Pipeline` and removes it in
    `run()` only; tests that build a pipeline to look at its graph, or whose pipeline is
    refused while it is built, never run it. Those this session made, empty at its end, go."""
    pattern = os.path.join(tempfile.gettempdir(), "beam-pipeline-temp*")
    before = set(glob.glob(pattern))
    yield
    for folder in set(glob.glob(pattern)) - before:
        with contextlib.suppress(OSError):  # not empty: left as it is
            os.rmdir(folder)


@pytest.fixture
def own_tempdir(tmp_path, monkeypatch):
    """A fresh, empty folder as the temporary directory (`tempfile`'s) of one test: what the
    code under test leaves there can be listed."""
    folder = tmp_path / "temporary"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture(scope="session")
def spark():
    """A `local[2]` SparkSession without UI, stopped at the end of the test session."""
    pytest.importorskip(
        "pyspark", reason="the Spark tests need the 'spark' extra (pip install -e '.[spark]')"
    )
    from pyspark.sql import SparkSession

    saved = {name: os.environ.get(name) for name in _SPARK_ENV}
    os.environ.update(_SPARK_ENV)
    session = (
        SparkSession.builder.master("local[2]")
        .appName("beam_tensorize tests")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.default.parallelism", "2")
        .config("spark.driver.memory", "1g")
        .config("spark.sql.session.timeZone", "UTC")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


@contextlib.contextmanager
def local_server(*module_and_args: str):
    """A Python server module (`python -m <module> ... --port PORT`) on a free local port:
    yields `(port, process)` and stops it afterwards. `{port}` in the arguments is replaced."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    args = [a.replace("{port}", str(port)) for a in module_and_args]
    server = subprocess.Popen(
        [sys.executable, "-m", *args], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        yield port, server
    finally:
        server.terminate()
        server.wait(timeout=30)


#: What `write_undecodable_avro` writes: 20 records in blocks of 16 and 4; record 3 has a
#: name that is not UTF-8, record 12 a union branch index out of range (so records 13-15 of
#: its block cannot be told apart).
UNDECODABLE_GOOD_IDS = [0, 1, 2, 4, 5, 6, 7, 8, 9, 10, 11, 16, 17, 18, 19]
UNDECODABLE_CONFIG = {
    "features": [
        {"outputTensorInfo": {"name": "id", "dtype": "long", "shape": []}},
        {"outputTensorInfo": {"name": "name", "dtype": "string", "shape": []}},
    ]
}


def write_undecodable_avro(path) -> str:
    """An Avro file of 20 records `{id, name, tag}`, two of them made undecodable (see
    `UNDECODABLE_GOOD_IDS`); gives its path."""
    import fastavro

    schema = {
        "type": "record",
        "name": "r",
        "fields": [
            {"name": "id", "type": "long"},
            {"name": "name", "type": "string"},
            {"name": "tag", "type": ["null", "string"]},
        ],
    }
    rows = [{"id": i, "name": f"n{i:03d}", "tag": f"t{i:03d}"} for i in range(20)]
    rows[3]["name"] = "BADUTF8X"
    rows[12]["tag"] = "SENTINEL"
    with open(path, "wb") as f:
        fastavro.writer(f, schema, rows, sync_interval=200)
    with open(path, "rb") as f:
        data = f.read()
    # Same lengths: "BAD\xff\xfe..." is not UTF-8; union branch 5 (zigzag 0x0a) of 2.
    data = data.replace(b"BADUTF8X", b"BAD\xff\xfeF8X").replace(b"\x02\x10SENTINEL", b"\x0a\x10SENTINEL")
    with open(path, "wb") as f:
        f.write(data)
    return str(path)


def tensor_lists(value) -> list:
    """A batch of one column as Python lists, whatever form `beam_tensorize.tf` gives it in: a
    tensor, a `DataFrame.Value`, or a 2-D `tf.SparseTensor` (one list per row)."""
    import tensorflow as tf

    if isinstance(value, tf.SparseTensor):
        assert value.dense_shape.shape[0] == 2, "a nested list column: compare it as a DataFrame.Value"
        return tf.RaggedTensor.from_sparse(value).to_list()
    if hasattr(value, "to_list"):
        return value.to_list()
    return value.numpy().tolist()
