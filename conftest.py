"""Shared pytest fixtures."""

from __future__ import annotations

import os

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


@pytest.fixture(autouse=True)
def _doctests_run_in_a_temporary_folder(request, tmp_path, monkeypatch):
    """Docstring examples write relative paths: keep them out of the source tree."""
    if type(request.node).__name__ == "DoctestItem":
        monkeypatch.chdir(tmp_path)


@pytest.fixture(autouse=True, scope="session")
def _direct_runner_in_process():
    """Pipelines on Beam's DirectRunner run here as the CLIs run them
    (`beam_tensorize.runners.direct`): on its in-process FnApiRunner, without first trying Beam's
    Prism runner, which would start a job server (~0.3 s and an empty `beam-temp*` folder in
    the temporary directory per pipeline) and which Beam downloads when the network allows."""
    from apache_beam.runners.direct import direct_runner

    from beam_tensorize.runners.direct import direct_runner_for

    switching = direct_runner.SwitchingDirectRunner
    run_as_beam_does = switching.run_pipeline

    def run_pipeline(self, pipeline, options):
        in_process = direct_runner_for(options)
        if in_process is None:  # a streaming job: Beam's own choice
            return run_as_beam_does(self, pipeline, options)
        return in_process.run_pipeline(pipeline, options)

    switching.run_pipeline = run_pipeline
    yield
    switching.run_pipeline = run_as_beam_does


#: Test modules that run many whole jobs, a Spark session, other runners or a browser (their
#: paths from the repository's root, as in the tests' node ids).
_SLOW_MODULES = ("tests/e2e/test_commit_protocol.py", "tests/kernels/report/test_page_in_a_browser.py",
                 "tests/e2e/test_scale.py", "tests/spark/test_tensorize.py", "tests/spark/test_session.py",
                 "tests/runners/test_each_runner.py")  # fmt: skip


def pytest_collection_modifyitems(config, items):
    """`slow`: the tests of `_SLOW_MODULES` and those marked `spark` or `runners`, so that
    `pytest -m "not slow"` is a quick run (README)."""
    for item in items:
        if (
            item.nodeid.split("::")[0] in _SLOW_MODULES
            or item.get_closest_marker("spark")
            or item.get_closest_marker("runners")
        ):
            item.add_marker(pytest.mark.slow)
