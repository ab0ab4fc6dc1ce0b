"""Shared fixtures: one local SparkSession for the whole test session (Spark tests only)."""

from __future__ import annotations

import os
import sys

import pytest

_SPARK_ENV = {
    "SPARK_LOCAL_IP": "127.0.0.1",
    # Spark's Python workers must run this interpreter (the one with the project installed).
    "PYSPARK_PYTHON": sys.executable,
    "PYSPARK_DRIVER_PYTHON": sys.executable,
}


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
