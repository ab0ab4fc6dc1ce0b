"""Where a job's CPU time goes, step by step: the CLI run in this process on `bench_scale.py`'s
inputs (bundled config, train mode, `--report none`), with every DoFn of the package timed.

Each step's time is the CPU time (user and system, from `getrusage`) spent inside its DoFn's
`process` and in each resumption of the generator it returns, so a step's time does not
include the steps after it, which Beam runs between two resumptions. What no DoFn holds
(Beam's own per-bundle and per-element work, the combining of the feature lists' counts, the
graph's construction and the runner's start, the commit) is printed as the rest, and the
imports before the job as their own line. System time is mostly the kernel copying the files
the job writes into the page cache (on a virtual machine, memory the guest has not touched
lately costs several times more).

Timings are printed, never asserted. Run from the repository root (`bench_scale.py` makes the
inputs the first time):

    python benchmarks/bench_stages.py --size 4
"""

from __future__ import annotations

import argparse
import collections
import importlib
import inspect
import os
import pkgutil
import resource
import shutil
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, ROOT)


def _cpu() -> tuple[float, float]:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime, usage.ru_stime


class _Timings:
    """CPU seconds (user, system) and calls per DoFn class."""

    def __init__(self):
        self.user: collections.Counter = collections.Counter()
        self.system: collections.Counter = collections.Counter()
        self.calls: collections.Counter = collections.Counter()

    def timed(self, name: str, step):
        user, system = _cpu()
        try:
            return step()
        finally:
            after = _cpu()
            self.user[name] += after[0] - user
            self.system[name] += after[1] - system

    def each(self, name: str, items):
        """`items`, each resumption of their iterator timed under `name` (the steps the
        runner runs between two of them are not)."""
        items = iter(items)
        while True:
            try:
                item = self.timed(name, lambda: next(items))
            except StopIteration:
                return
            yield item

    def wrap(self, cls: type) -> None:
        """`cls.process` timed, each resumption of the generator it returns on its own."""
        original = cls.process
        name = f"{cls.__module__.removeprefix('beam_tensorize.')}.{cls.__name__}"
        timings = self

        def process(self, *args, **kwargs):
            timings.calls[name] += 1
            result = timings.timed(name, lambda: original(self, *args, **kwargs))
            return None if result is None else timings.each(name, result)

        process.__signature__ = inspect.signature(original)  # Beam reads the side inputs' names
        cls.process = process


def _wrap_every_dofn(timings: _Timings) -> None:
    """Every DoFn of the package timed, and the reading back of kept batches (a `FlatMap`)."""
    import apache_beam as beam

    import beam_tensorize
    from beam_tensorize.transforms import keep

    read_kept = keep._read_kept

    def timed_read_kept(path, delete):
        name = "transforms.keep._read_kept"
        timings.calls[name] += 1
        yield from timings.each(name, read_kept(path, delete))

    # Found under its module and name, Beam's pickler takes it by reference (a copy would
    # count into a copy of `timings`).
    timed_read_kept.__module__, timed_read_kept.__qualname__ = keep.__name__, "_read_kept"
    keep._read_kept = timed_read_kept

    for module in pkgutil.walk_packages(beam_tensorize.__path__, "beam_tensorize."):
        if module.name.startswith(("beam_tensorize.tf", "beam_tensorize.spark")):
            continue  # TensorFlow and Spark: not in a Beam job
        loaded = importlib.import_module(module.name)
        for value in list(vars(loaded).values()):
            if (
                isinstance(value, type)
                and issubclass(value, beam.DoFn)
                and value.__module__ == loaded.__name__
                and "process" in vars(value)
            ):
                timings.wrap(value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4, choices=(1, 2, 3, 4), help="millions of rows (4)")
    parser.add_argument(
        "--workdir",
        default=os.path.join(tempfile.gettempdir(), "beam_tensorize-bench-scale"),
        help="bench_scale.py's folder of inputs",
    )
    args = parser.parse_args(argv)
    start = _cpu()
    from bench_scale import CONFIG, ROWS_PER_FILE, _inputs

    from beam_tensorize.runners.startup import keep_freed_memory
    from pipelines import tensorize

    keep_freed_memory()
    pattern = _inputs(args.workdir, args.size)
    timings = _Timings()
    _wrap_every_dofn(timings)
    imported = _cpu()
    out = tempfile.mkdtemp(prefix="bench_stages-")
    try:
        wall = time.perf_counter()
        flags = ["--input", pattern, "--config", CONFIG, "--output", out, "--save_mode", "overwrite",
                 "--quiet", "--report", "none"]  # fmt: skip
        code = tensorize.main(flags)
        wall = time.perf_counter() - wall
        done = _cpu()  # before the output is removed
    finally:
        shutil.rmtree(out, ignore_errors=True)
    if code != 0:
        raise SystemExit(f"the job failed ({code})")
    job_user, job_system = done[0] - imported[0], done[1] - imported[1]
    rows = args.size * ROWS_PER_FILE
    print(f"{rows:,} rows, {wall:.1f} s wall; CPU s (user + system):\n")
    print("| step | calls | CPU s | of which system | share of the job |")
    print("|---|---|---|---|---|")
    total = job_user + job_system
    for name in sorted(timings.calls, key=lambda n: -(timings.user[n] + timings.system[n])):
        cpu = timings.user[name] + timings.system[name]
        print(
            f"| {name} | {timings.calls[name]} | {cpu:.2f} | {timings.system[name]:.2f} | {cpu / total:.0%} |"
        )
    in_steps = sum(timings.user.values()) + sum(timings.system.values())
    system_in_steps = sum(timings.system.values())
    rest = total - in_steps
    print(f"| the rest (Beam's own work, combining, graph, runner start, commit) | | {rest:.2f} | "
          f"{job_system - system_in_steps:.2f} | {rest / total:.0%} |")  # fmt: skip
    print(f"| **the job** | | **{total:.2f}** | {job_system:.2f} | 100% |")
    print(f"| imports (before the job; this script imports every module of the package) | | "
          f"{sum(imported) - sum(start):.2f} | {imported[1] - start[1]:.2f} | |")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
