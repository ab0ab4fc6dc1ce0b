"""The installed commands: each runs its module as `python -m` runs it, as the program
(`__name__ == "__main__"`), so that it sets up its process as the module does when run that
way (imports left out of the garbage collector's sight, the `multi_processing` workers'
zygote; see `beam_tensorize/runners/startup.py`).

    beam-tensorize --input data/ --config config.json --output out/
"""

from __future__ import annotations

import runpy

__all__ = ["tensorize"]


def tensorize() -> None:
    """`beam-tensorize`: `python -m pipelines.tensorize` (exits with its status)."""
    runpy.run_module("pipelines.tensorize", run_name="__main__", alter_sys=True)
