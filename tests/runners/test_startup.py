"""The process set-up of a command (`beam_tensorize.runners.startup`)."""

from __future__ import annotations

import os
import subprocess
import sys

from beam_tensorize.runners.startup import MALLOC_SETTINGS, keep_freed_memory


def test_malloc_settings_go_to_this_process_and_the_ones_it_starts(monkeypatch):
    for name in MALLOC_SETTINGS:
        monkeypatch.delenv(name, raising=False)
    assert sorted(keep_freed_memory()) == sorted(MALLOC_SETTINGS)
    assert {name: os.environ[name] for name in MALLOC_SETTINGS} == {
        "MALLOC_MMAP_THRESHOLD_": str(64 << 20),
        "MALLOC_TRIM_THRESHOLD_": str(256 << 20),
    }
    child = subprocess.run(
        [sys.executable, "-c", "import os; print(os.environ['MALLOC_MMAP_THRESHOLD_'])"],
        capture_output=True,
        text=True,
        check=True,
    )
    assert child.stdout.strip() == str(64 << 20)
    assert keep_freed_memory() == []  # set already: nothing more to do


def test_a_users_malloc_setting_is_left_as_it_is(monkeypatch):
    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "131072")
    monkeypatch.delenv("MALLOC_MMAP_THRESHOLD_", raising=False)
    assert keep_freed_memory() == ["MALLOC_MMAP_THRESHOLD_"]
    assert os.environ["MALLOC_TRIM_THRESHOLD_"] == "131072"
