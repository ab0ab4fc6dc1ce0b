"""Beam's SDK harness (`apache_beam.runners.worker.sdk_worker_main`), imported with the garbage
collector paused and then frozen, and Beam set up (`direct.command_setup`), as the commands
do (see `startup`). The in-process runner of `direct.direct_runner_for` starts its
`multi_processing` workers with this module instead of Beam's, and `worker_boot` (the worker
pool's entry point) runs it; the harness reads its settings from the environment it is given,
as Beam's does.

    python -m beam_tensorize.runners.subprocess_worker
"""

from __future__ import annotations

import sys

from beam_tensorize.runners.startup import command_imports

__all__ = ["COMMAND", "main"]

#: The command line the runner starts each worker process with.
COMMAND = f"{sys.executable} -m beam_tensorize.runners.subprocess_worker"


def main(argv: list[str] | None = None) -> None:
    with command_imports():
        from apache_beam.runners.worker import sdk_worker_main

        from beam_tensorize.runners.direct import command_setup
    command_setup()  # as the command that started it: its stages are set up the same way
    sdk_worker_main.main(sys.argv if argv is None else argv)


if __name__ == "__main__":
    main()
