"""`tensorize_spark` on a real Spark standalone cluster: a master and a worker started with
PySpark's own `spark-class` on 127.0.0.1 (separate JVMs, the executor's Python workers started
by the worker in its own folder), driven from a separate driver process as `spark-submit`
would. Every file must be the Beam command line's, byte for byte; relative paths given on the
driver must work although the executors run elsewhere."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
from pipelines.tensorize import main
from tests.e2e.test_scale import _three_inputs, _tree

pyspark = pytest.importorskip("pyspark", reason="the Spark tests need the 'spark' extra")

pytestmark = [pytest.mark.spark, pytest.mark.slow, pytest.mark.xdist_group("spark")]

_SPARK_HOME = Path(pyspark.__file__).parent
_ENV = {**os.environ, "SPARK_HOME": str(_SPARK_HOME), "SPARK_LOCAL_IP": "127.0.0.1"}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _start(log: Path, *args: str) -> subprocess.Popen:
    with open(log, "wb") as out:
        return subprocess.Popen(
            [str(_SPARK_HOME / "bin" / "spark-class"), *args],
            stdout=out,
            stderr=subprocess.STDOUT,
            env=_ENV,
            start_new_session=True,  # its own process group: stopped whole, by PID
        )


def _wait_for(log: Path, text: str, process: subprocess.Popen, seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if text in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            break
        time.sleep(0.5)
    raise AssertionError(
        f"{text!r} not in {log} within {seconds} s:\n{log.read_text(errors='replace')[-3000:]}"
    )


def _stop(process: subprocess.Popen) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """`spark://127.0.0.1:<port>`: a standalone master and one worker (1 core, 1 GiB)."""
    folder = tmp_path_factory.mktemp("cluster")
    port = _free_port()
    url = f"spark://127.0.0.1:{port}"
    master = _start(
        folder / "master.log", "org.apache.spark.deploy.master.Master",
        "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(_free_port()),
    )  # fmt: skip
    worker = None
    try:
        _wait_for(folder / "master.log", "I have been elected leader", master)
        worker = _start(
            folder / "worker.log", "org.apache.spark.deploy.worker.Worker", url,
            "--host", "127.0.0.1", "--cores", "1", "--memory", "1g",
            "--work-dir", str(folder / "work"), "--webui-port", str(_free_port()),
        )  # fmt: skip
        _wait_for(folder / "worker.log", "Successfully registered with master", worker)
        yield url, folder
    finally:
        for process in (worker, master):
            if process is not None:
                _stop(process)


# The driver: a separate process, as spark-submit starts one, in the folder the paths are
# relative to.
_DRIVER = """
import json, sys
from pyspark.sql import SparkSession
from beam_tensorize.spark import tensorize_spark

url, inputs, output, kwargs = sys.argv[1], sys.argv[2], sys.argv[3], json.loads(sys.argv[4])
spark = (
    SparkSession.builder.master(url).appName("beam_tensorize cluster test")
    .config("spark.pyspark.python", sys.executable)
    .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
    .config("spark.executor.memory", "768m").config("spark.driver.host", "127.0.0.1")
    .getOrCreate()
)
spark.sparkContext.setLogLevel("ERROR")
result = tensorize_spark(spark, inputs, output=output, **kwargs)
executors = spark.sparkContext._jsc.sc().getExecutorMemoryStatus().size() - 1
spark.stop()
print(json.dumps({"result": result, "executors": executors}))
"""


def _on_cluster(url: str, cwd: Path, inputs: str, output: str, **kwargs) -> dict:
    run = subprocess.run(
        [sys.executable, "-c", _DRIVER, url, inputs, output, json.dumps({"config": SAMPLE_CONFIG, **kwargs})],
        cwd=cwd,
        env={**_ENV, "PYSPARK_PYTHON": sys.executable, "TF_CPP_MIN_LOG_LEVEL": "2"},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stderr[-4000:]
    return json.loads(run.stdout.strip().splitlines()[-1])


def test_sample_with_relative_paths_gives_the_cli_files(cluster, tmp_path):
    url, _ = cluster
    (tmp_path / "in").mkdir()
    os.symlink(SAMPLE_AVRO, tmp_path / "in" / "sample.avro")
    found = _on_cluster(url, tmp_path, "in/sample.avro", "spark", num_shards=2)
    assert found["executors"] == 1  # the worker's executor, not the driver
    result = found["result"]
    assert result["output"] == str(tmp_path / "spark")  # made absolute on the driver
    assert result["numRecords"] == 300
    assert result["files"] == [
        str(tmp_path / "spark" / "trainingData" / f"part-0000{i}-of-00002.tfrecord") for i in range(2)
    ]
    cli = ["--input", str(tmp_path / "in" / "sample.avro"), "--config", SAMPLE_CONFIG, "--num_shards", "2"]
    cli += [
        "--report",
        "none",
    ]  # as tensorize_spark's default (the schema's string domains come from a report)
    assert main([*cli, "--output", str(tmp_path / "beam"), "--quiet"]) == 0
    assert _tree(tmp_path / "spark") == _tree(tmp_path / "beam")


def test_three_input_splits_in_train_then_validation_give_the_cli_files(cluster, tmp_path):
    url, _ = cluster
    pattern = _three_inputs(tmp_path / "in")
    for mode in ("train", "validation"):
        found = _on_cluster(url, tmp_path, pattern, str(tmp_path / "spark"), mode=mode)
        assert found["result"]["numRecords"] == 300
        cli = ["--input", pattern, "--config", SAMPLE_CONFIG, "--execution_mode", mode, "--report", "none"]
        assert main([*cli, "--output", str(tmp_path / "beam"), "--quiet"]) == 0
    beam = _tree(tmp_path / "beam")
    assert [f for f in beam if f.startswith("validationData/part-")] == [
        f"validationData/part-0000{i}-of-00003.tfrecord" for i in range(3)
    ]
    assert _tree(tmp_path / "spark") == beam
