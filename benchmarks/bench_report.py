"""Benchmark: what the run report costs — the `tensorize` CLI with `--report html` and
`--report json` against the same run with `--report none`, in the same process, on the same
generated input.

The input is a MovieLens-like Avro file (`bench_tensorize.generate_movielens_avro`, seeded, not
timed). The config is the bundled sample's (`beam_tensorize/sample/config.json`: numbers, lists,
strings, two feature lists, a hashed tensor and a name-term-value sparse vector), so every kind
of statistic is computed. The three runs alternate `--repeats` times (none, json, html, none,
...); the best wall-clock time of each gives rows/s and the overhead `(x - none) / none`,
and the median of each repeat's ratio to its `none` run is printed too (steadier on a noisy
machine). `json` is the cost that grows with the data (statistics, in the same pass), `html` adds the
page (its plots inline SVG, drawn in the job's process). The report's own timings (`timings` of the JSON: the statistics step's
seconds summed over workers, rendering and writing the page) and the CPU time of each run are
printed too (child processes counted): on a shared machine they are steadier than the
difference of two wall-clock times. Nothing is asserted.

Run from the repository root:

    python benchmarks/bench_report.py                     # 200,000 rows, best of 3
    python benchmarks/bench_report.py --rows 20000 --repeats 1   # quick check
    python benchmarks/bench_report.py --fresh   # each run a new process, as from the shell
    python benchmarks/bench_report.py --fresh --rows 4000000 \\
        --input '/tmp/beam_tensorize-bench-scale/input-4M/*.avro'   # bench_scale.py's 4M input

Runs in this process share its imports; a new process per run (`--fresh`) pays every import
each time, as `python -m pipelines.tensorize` does.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

__all__ = ["main"]


def _run(avro_path: str, out_dir: str, report: str) -> tuple[float, float]:
    """One CLI run; its wall-clock and CPU seconds (this process, where the DirectRunner runs,
    and its child processes, if any)."""
    from beam_tensorize.sample import SAMPLE_CONFIG
    from pipelines.tensorize import main as tensorize_main

    argv = ["--input", avro_path, "--config", SAMPLE_CONFIG, "--output", out_dir, "--quiet"]
    argv += ["--save_mode", "overwrite", "--report", report]
    start, cpu, children = time.perf_counter(), time.process_time(), _children_cpu()
    with contextlib.redirect_stdout(io.StringIO()):
        code = tensorize_main(argv)
    elapsed = time.perf_counter() - start
    cpu = time.process_time() - cpu + _children_cpu() - children
    if code != 0:
        raise RuntimeError(f"tensorize exited with code {code}: {argv}")
    return elapsed, cpu


def _run_fresh(avro_path: str, out_dir: str, report: str) -> tuple[float, float]:
    """One CLI run in a new process (`python -m pipelines.tensorize`): its wall-clock and CPU
    seconds, imports included (the process and its children)."""
    from beam_tensorize.sample import SAMPLE_CONFIG

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH")) if p)
    argv = [sys.executable, "-m", "pipelines.tensorize", "--input", avro_path, "--config", SAMPLE_CONFIG]
    argv += ["--output", out_dir, "--quiet", "--save_mode", "overwrite", "--report", report]
    start, children = time.perf_counter(), _children_cpu()
    code = subprocess.run(argv, stdout=subprocess.DEVNULL, cwd=root, env=env).returncode
    elapsed, cpu = time.perf_counter() - start, _children_cpu() - children
    if code != 0:
        raise RuntimeError(f"tensorize exited with code {code}: {argv}")
    return elapsed, cpu


def _children_cpu() -> float:
    """CPU seconds of this process's finished child processes."""
    times = os.times()
    return times.children_user + times.children_system


def _bench(args: argparse.Namespace, workdir: str) -> int:
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from bench_tensorize import generate_movielens_avro

    if args.input:  # given inputs of `--rows` rows in all (checked against every report)
        avro_path = args.input
    else:
        avro_path = os.path.join(workdir, "movielens.avro")
        print(f"generating {args.rows} rows -> {avro_path} (not timed)", flush=True)
        generate_movielens_avro(avro_path, args.rows, seed=args.seed)
    import pipelines.tensorize  # noqa: F401 - imports before timing

    variants = ("none", "json", "html")
    times: dict[str, list[float]] = {name: [] for name in variants}
    cpu_times: dict[str, list[float]] = {name: [] for name in variants}
    report_seconds: list[dict] = []
    for repeat in range(args.repeats):
        for report in variants:
            out_dir = os.path.join(workdir, report)
            shutil.rmtree(out_dir, ignore_errors=True)
            elapsed, cpu = (_run_fresh if args.fresh else _run)(avro_path, out_dir, report)
            times[report].append(elapsed)
            cpu_times[report].append(cpu)
            print(
                f"  run {repeat + 1}/{args.repeats} --report {report:<4} {elapsed:8.2f} s  (cpu {cpu:.2f} s)",
                flush=True,
            )
            if report != "none":
                with open(os.path.join(out_dir, "report", "trainingData.json")) as f:
                    document = json.load(f)
                if document["rowsRead"] != args.rows:
                    print(f"error: the report counts {document['rowsRead']} rows", file=sys.stderr)
                    return 1
                if report == "html":
                    report_seconds.append(document["timings"])
    best = {name: min(values) for name, values in times.items()}
    best_cpu = {name: min(values) for name, values in cpu_times.items()}
    rate = {name: args.rows / best[name] for name in best}
    print()
    how = "a new process per run" if args.fresh else "runs in this process"
    print(f"{args.rows} rows, best of {args.repeats}, {how}, DirectRunner in_memory, 1 worker, sample config")
    print(f"{'--report':<10}{'seconds':>10}{'rows/s':>12}{'cpu s':>10}")
    for name in variants:
        print(f"{name:<10}{best[name]:>10.2f}{rate[name]:>12,.0f}{best_cpu[name]:>10.2f}")
    for name in ("json", "html"):
        print(
            f"--report {name}: rows/s ratio to none {rate[name] / rate['none']:.3f}, overhead by wall "
            f"clock {100 * (best[name] - best['none']) / best['none']:+.1f}%, by CPU time "
            f"{100 * (best_cpu[name] - best_cpu['none']) / best_cpu['none']:+.1f}%"
        )
    # Each repeat runs none, json and html back to back: the median of their per-repeat ratios
    # is steadier on a noisy machine than the ratio of two best times.
    for name in ("json", "html"):
        median = statistics.median(x / n for x, n in zip(times[name], times["none"]))
        print(
            f"--report {name}: median of the repeats' wall-clock ratios to none {median:.3f} ({100 * (median - 1):+.1f}%)"
        )
    own = min(report_seconds, key=lambda t: sum(t.values()))
    spent = own["statistics"] + own.get("writeReport", 0.0)
    print(
        f"the report's own time: statistics {own['statistics']:.2f} s, page {own.get('renderPage', 0.0):.2f} s, "
        f"writing {own.get('writeReport', 0.0):.2f} s in all = {100 * spent / best['none']:.1f}% of the run without it"
    )
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Generate the input, time both runs and print the table; returns the exit code."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    parser = argparse.ArgumentParser(description="Time the tensorize CLI with and without the run report.")
    parser.add_argument("--rows", type=int, default=200_000, help="Rows to generate (default 200000).")
    parser.add_argument("--repeats", type=int, default=3, help="Runs of each, alternating; best is kept.")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the data generator (default 0).")
    parser.add_argument("--workdir", default=None, help="Folder for input and outputs (kept).")
    parser.add_argument(
        "--input",
        default=None,
        help="Existing MovieLens-like Avro input (a path or glob, e.g. bench_scale.py's 4M input) "
        "instead of a generated one; --rows must give its row count.",
    )
    parser.add_argument(
        "--fresh",
        action="store_true",
        help="Run each CLI run in a new process (imports included, as on the command line).",
    )
    args = parser.parse_args(argv)
    if args.rows < 1 or args.repeats < 1:
        parser.error("--rows and --repeats must be at least 1")
    if args.workdir:
        os.makedirs(args.workdir, exist_ok=True)
        return _bench(args, args.workdir)
    with tempfile.TemporaryDirectory(prefix="bench_report_") as workdir:
        return _bench(args, workdir)


if __name__ == "__main__":
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.exit(main())
