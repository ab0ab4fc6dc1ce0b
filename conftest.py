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
