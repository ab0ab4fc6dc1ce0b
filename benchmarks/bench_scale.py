"""Scale benchmark: rows/s, CPU seconds and peak memory of the whole job at 1M and 4M rows.

For each input size and each path, the job runs as a child process (the CLI, or a small
`tensorize_spark` driver), and a sampler reads `/proc` every 0.2 s: the resident memory of the
child and all its descendants (worker processes, the JVM and its Python workers), summed at
each sample, and their CPU time. Paths:

* **beam-1**: the CLI on the DirectRunner, in-process (the default);
* **beam-mp1** / **beam-mp2**: `--direct_running_mode multi_processing` with 1 / 2 workers;
* **beam-1x2**: two beam-1 commands at once, each on half of the input files (2M and 4M only),
  timed until both end: what two processes that share nothing reach on this machine, the
  ceiling of beam-mp2 (two processors that are threads of one core, or share a memory bus,
  give less than twice one's speed);
* **spark-2**: `tensorize_spark` on `local[2]`, the session from `beam_tensorize.spark.local_session`
  (quick JIT, Spark's classes from the cached class data archive, recorded before timing); a
  driver script starts the session, and the time of the `tensorize_spark` call alone is printed
  too, as a Spark user's session is usually up;
* **spark-2-plain**: the same with `SparkSession.builder.master("local[2]").getOrCreate()`.

All runs use the bundled config (hashing, feature lists, NTV sparse) in train mode and write the
same output: the CLI runs with `--report none`, as the Spark driver's `tensorize_spark` call
writes no run report (its default; the report's cost is `bench_report.py`'s subject). The inputs
are MovieLens-like Avro files (`bench_tensorize.generate_movielens_avro`, 1M rows each, seeds
0..3), generated once and cached in `--workdir`: the 1M input is the first file, the 4M input
all four. Then it prints a table and these ratios:

* memory: peak RSS at 4M / at 1M (target <= 1.2) for every path;
* workers: beam-mp2 rows/s / beam-mp1 rows/s (target >= 1.6), and beam-mp2 / beam-1, against the
  default in-process run (target >= 1.6), beside the machine's ceiling beam-1x2 / beam-1;
* Spark: spark-2 rows/s / beam-mp2 rows/s (target >= 1.0);
* throughput: beam-1 rows/s at 4M per CPU core used (target >= 100,000), and its rows per CPU
  second against three floors measured on the same input before each of its runs: only
  inflating the Avro blocks (target >= 0.35), inflating and decoding the columns the config
  reads, and pyarrow reading those columns from a Parquet copy of the input (SNAPPY, written
  beside each input file the first time) (the median of the runs' ratios; the floors run with
  the command's memory allocator settings).

Timings are printed, never asserted. Run from the repository root:

    python benchmarks/bench_scale.py                       # 1M and 4M rows, all paths
    python benchmarks/bench_scale.py --sizes 1 --paths beam-1 beam-mp2
"""

from __future__ import annotations

import argparse
import concurrent.futures
import glob
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)

from bench_formats import convert  # noqa: E402
from bench_tensorize import generate_movielens_avro  # noqa: E402

ROWS_PER_FILE = 1_000_000
PATHS = ("beam-1", "beam-mp1", "beam-mp2", "beam-1x2", "spark-2", "spark-2-plain")
CONFIG = os.path.join(ROOT, "beam_tensorize", "sample", "config.json")
_CLK = os.sysconf("SC_CLK_TCK")
_PAGE = os.sysconf("SC_PAGE_SIZE")

_SPARK_DRIVER = """
import sys, time
from pyspark.sql import SparkSession
from beam_tensorize.spark import local_session, tensorize_spark
if sys.argv[4] == "plain":
    spark = SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false").getOrCreate()
else:
    spark = local_session(2)
spark.sparkContext.setLogLevel("ERROR")
start = time.perf_counter()
result = tensorize_spark(spark, sys.argv[1], sys.argv[2], sys.argv[3], save_mode="overwrite")
print("job_seconds", time.perf_counter() - start)
spark.stop()
"""


#: The floors the job is compared with, in a child process set up as the command's (its memory
#: allocator settings): CPU seconds of only inflating the input's Avro blocks (the inflater the
#: job uses), of inflating and decoding the columns the bundled config reads (the job's
#: reader), and of pyarrow reading those columns from a Parquet copy of the input (SNAPPY,
#: 128Ki-row groups; what a job reading Parquet starts from). argv: config, Avro files...,
#: "--", Parquet files...
_FLOORS = """
import sys, time
from beam_tensorize.runners.startup import keep_freed_memory
keep_freed_memory()
import pyarrow.parquet as pq
from beam_tensorize.config import load_config
from beam_tensorize.job.reading import plan_splits, read_split_batches
from beam_tensorize.job.spec import TensorizeSpec
from beam_tensorize.kernels.avro.container import decompress, iter_blocks, read_header
cut = sys.argv.index("--")
files, copies = sys.argv[2:cut], sys.argv[cut + 1:]
start = time.process_time()
for path in files:
    with open(path, "rb") as f:
        header = read_header(f, path)
        for block in iter_blocks(f, header, path):
            decompress(block, header.codec, path)
inflate = time.process_time() - start
columns = TensorizeSpec(load_config(sys.argv[1]), "unused", inputs=tuple(files)).input_columns
start = time.process_time()
rows = sum(b.num_rows for fmt, split in plan_splits(files, dead_letters=True)
           for b in read_split_batches(fmt, split, columns, 8192, {}, None))
decode = time.process_time() - start
start = time.process_time()
copied = sum(b.num_rows for path in copies for b in pq.ParquetFile(path).iter_batches(8192, columns=columns))
parquet = time.process_time() - start
assert copied == rows, (copied, rows)
print("floors", inflate, decode, parquet, rows)
"""


def floors(pattern: str) -> tuple[float, float, float]:
    """CPU seconds of (inflating the input's Avro blocks, inflating and decoding the columns the
    config reads, reading those columns from the input's Parquet copy with pyarrow), measured
    in a child process."""
    files = sorted(glob.glob(pattern))
    copies = [_parquet_copy(path) for path in files]
    out = subprocess.run([sys.executable, "-c", _FLOORS, CONFIG, *files, "--", *copies], cwd=ROOT, check=True,
                         capture_output=True, text=True).stdout  # fmt: skip
    _, inflate, decode, parquet, _ = next(
        line for line in out.splitlines() if line.startswith("floors")
    ).split()
    return float(inflate), float(decode), float(parquet)


def _parquet_copy(avro_path: str) -> str:
    """The Parquet copy of an input file (every column, SNAPPY, 128Ki-row groups, as
    `bench_formats.convert` writes it), written beside it the first time."""
    real = os.path.realpath(avro_path)
    copy = real[: -len(".avro")] + ".parquet"
    if not os.path.exists(copy):
        convert(real, copy + ".part", None)
        os.replace(copy + ".part", copy)
    return copy


def _inputs(workdir: str, files: int) -> str:
    """The glob of the first `files` cached 1M-row inputs (generated in parallel if missing)."""
    folder = os.path.join(workdir, f"input-{files}M")
    os.makedirs(folder, exist_ok=True)
    wanted = [os.path.join(workdir, f"movielens-1M-seed{i}.avro") for i in range(files)]
    missing = [(p, i) for i, p in enumerate(wanted) if not os.path.exists(p)]
    if missing:
        print(f"generating {len(missing)} input file(s) of {ROWS_PER_FILE:,} rows (cached in {workdir}) ...")
        with concurrent.futures.ProcessPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
            jobs = [pool.submit(_generate, path, seed) for path, seed in missing]
            for job in jobs:
                job.result()
    for path in wanted:
        link = os.path.join(folder, os.path.basename(path))
        if not os.path.exists(link):
            os.symlink(path, link)
    return os.path.join(folder, "*.avro")


def _generate(path: str, seed: int) -> None:
    generate_movielens_avro(path + ".part", ROWS_PER_FILE, seed=seed)
    os.replace(path + ".part", path)


def _tree(root: int) -> list[int]:
    """`root` and all its descendants (from /proc)."""
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(entry))
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo += children.get(pid, [])
    return found


class _Sampler:
    """Peak summed RSS, peak summed PSS and total CPU seconds of process trees, from /proc
    (PSS counts a page that n processes share as 1/n in each: forked workers share their
    zygote's pages, which RSS counts in full in every process)."""

    def __init__(self, pids: list[int], interval: float = 0.2):
        self._pids = pids
        self._interval = interval
        self._cpu: dict[int, float] = {}
        self.peak_rss = 0
        self.peak_pss = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.is_set():
            rss = pss = 0
            for pid in (p for root in self._pids for p in _tree(root)):
                try:
                    with open(f"/proc/{pid}/stat") as f:
                        fields = f.read().rsplit(")", 1)[1].split()
                    with open(f"/proc/{pid}/smaps_rollup") as f:
                        pss += next((int(line.split()[1]) * 1024 for line in f if line.startswith("Pss:")), 0)
                except OSError:
                    continue
                self._cpu[pid] = (int(fields[11]) + int(fields[12])) / _CLK
                rss += int(fields[21]) * _PAGE
            self.peak_rss = max(self.peak_rss, rss)
            self.peak_pss = max(self.peak_pss, pss)
            self._stop.wait(self._interval)

    def stop(self) -> float:
        """Stops sampling; returns the CPU seconds seen."""
        self._stop.set()
        self._thread.join()
        return sum(self._cpu.values())


def _command(path: str, pattern: str, out: str) -> list[str]:
    if path.startswith("spark-2"):
        return [
            sys.executable,
            "-c",
            _SPARK_DRIVER,
            pattern,
            CONFIG,
            out,
            path.removeprefix("spark-2-") or "fast",
        ]
    cli = [sys.executable, "-m", "pipelines.tensorize", "--input", pattern, "--config", CONFIG,
           "--output", out, "--save_mode", "overwrite", "--quiet", "--report", "none"]  # fmt: skip
    workers = {"beam-1": [], "beam-mp1": ["1"], "beam-mp2": ["2"]}[path]
    if workers:
        cli += ["--direct_running_mode", "multi_processing", "--direct_num_workers", workers[0]]
    return cli


def run(path: str, pattern: str, out: str) -> dict:
    """One timed run of `path` as a child process (beam-1x2: two, on half the files each)."""
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2", PYSPARK_PYTHON=sys.executable)
    if path == "beam-1x2":
        files = sorted(glob.glob(pattern))
        commands = [_command("beam-1", ",".join(half), f"{out}-{i}")
                    for i, half in enumerate((files[: len(files) // 2], files[len(files) // 2 :]))]  # fmt: skip
    else:
        commands = [_command(path, pattern, out)]
    start = time.perf_counter()
    children = [subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 text=True) for command in commands]  # fmt: skip
    sampler = _Sampler([child.pid for child in children])
    with concurrent.futures.ThreadPoolExecutor(len(children)) as pool:
        outputs = list(pool.map(lambda child: child.communicate(), children))
    wall = time.perf_counter() - start
    cpu = sampler.stop()
    for child, (_, stderr) in zip(children, outputs):
        if child.returncode != 0:
            raise SystemExit(f"{path} failed (exit {child.returncode}):\n{stderr[-3000:]}")
    stdout = outputs[0][0]
    job = [float(line.split()[1]) for line in stdout.splitlines() if line.startswith("job_seconds ")]
    # Spark: the `tensorize_spark` call alone too (the session is the caller's, started before).
    return {
        "wall": wall,
        "cpu": cpu,
        "rss": sampler.peak_rss,
        "pss": sampler.peak_pss,
        "job": job[0] if job else wall,
    }


def _parse(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 4], help="millions of rows (1-4)")
    parser.add_argument("--paths", nargs="+", default=list(PATHS), choices=PATHS)
    parser.add_argument("--repeats", type=int, default=1,
                        help="runs of each path per size, the paths alternating; medians are printed")  # fmt: skip
    parser.add_argument("--workdir", default=os.path.join(tempfile.gettempdir(), "beam_tensorize-bench-scale"),
                        help="where inputs are cached and outputs written")  # fmt: skip
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = _parse(argv)
    os.makedirs(args.workdir, exist_ok=True)
    if "spark-2" in args.paths:  # local_session's class archive, recorded once, before timing
        subprocess.run(
            [sys.executable, "-m", "beam_tensorize.spark"], cwd=ROOT, check=True, capture_output=True
        )
    runs: dict[tuple[str, int], list[dict]] = {}
    floor: dict[int, list[tuple[float, float, float]]] = {}  # per repeat, measured just before its runs
    for size in args.sizes:
        pattern = _inputs(args.workdir, size)
        for repeat in range(args.repeats):
            if "beam-1" in args.paths:
                floor.setdefault(size, []).append(floors(pattern))
                rows = size * ROWS_PER_FILE
                inflate, decode, parquet = floor[size][-1]
                print(f"floors        {size}M rows, run {repeat + 1}: inflate only {rows / inflate:,.0f} rows "
                      f"per CPU s, inflate + decode the config's columns {rows / decode:,.0f}, pyarrow "
                      f"reading them from a Parquet copy {rows / parquet:,.0f}", flush=True)  # fmt: skip
            for path in args.paths:
                if path == "beam-1x2" and size < 2:
                    continue  # one file: no halves
                out = os.path.join(args.workdir, f"out-{path}-{size}M")
                r = run(path, pattern, out)
                for folder in (out, f"{out}-0", f"{out}-1"):
                    shutil.rmtree(folder, ignore_errors=True)
                runs.setdefault((path, size), []).append(r)
                rows = size * ROWS_PER_FILE
                job = f" (tensorize_spark call: {r['job']:.1f} s)" if r["job"] != r["wall"] else ""
                print(f"{path:13} {size}M rows, run {repeat + 1}: {r['wall']:6.1f} s wall{job}, "
                      f"{rows / r['wall']:9,.0f} rows/s, {r['cpu']:6.1f} CPU s, "
                      f"peak RSS {r['rss'] / 2**20:7,.0f} MiB, PSS {r['pss'] / 2**20:7,.0f} MiB", flush=True)  # fmt: skip
    # The median of each figure over the repeats.
    results = {key: {k: statistics.median(r[k] for r in rs) for k in rs[0]} for key, rs in runs.items()}
    print()
    what = f"median of {args.repeats} runs" if args.repeats > 1 else "one run"
    print(f"| path | rows | wall s ({what}) | rows/s | CPU s | rows per CPU s | peak RSS (all processes) "
          "| peak PSS (all processes) |")  # fmt: skip
    print("|---|---|---|---|---|---|---|---|")
    for (path, size), r in results.items():
        rows = size * ROWS_PER_FILE
        walls = [x["wall"] for x in runs[path, size]]
        spread = f" ({min(walls):.1f}-{max(walls):.1f})" if len(walls) > 1 else ""
        print(f"| {path} | {size}M | {r['wall']:.1f}{spread} | {rows / r['wall']:,.0f} | {r['cpu']:.1f} | "
              f"{rows / r['cpu']:,.0f} | {r['rss'] / 2**20:,.0f} MiB | {r['pss'] / 2**20:,.0f} MiB |")  # fmt: skip
    print()

    def speedup(a: str, b: str, size: int, key: str = "wall") -> str | None:
        """`a`'s rows/s over `b`'s: the median of the run-by-run ratios (runs alternate), with their range."""
        if (a, size) not in runs or (b, size) not in runs:
            return None
        ratios = [rb["wall"] / ra[key] for ra, rb in zip(runs[a, size], runs[b, size])]
        spread = f" (runs {min(ratios):.2f}-{max(ratios):.2f})" if len(ratios) > 1 else ""
        return f"{statistics.median(ratios):.2f}{spread}"

    big = max(args.sizes)
    for path in args.paths:
        if (path, 1) in results and (path, 4) in results:
            ratio = results[path, 4]["rss"] / results[path, 1]["rss"]
            print(f"memory  {path:13} peak RSS 4M / 1M = {ratio:.2f}  (target <= 1.2)")
    for label, a, b, target in (
        ("workers beam-mp2 / beam-mp1", "beam-mp2", "beam-mp1", 1.6),
        ("workers beam-mp2 / beam-1  ", "beam-mp2", "beam-1", 1.6),
        ("ceiling beam-1x2 / beam-1  ", "beam-1x2", "beam-1", None),
        ("spark   spark-2 / beam-mp2 ", "spark-2", "beam-mp2", 1.0),
    ):
        ratio = speedup(a, b, big)
        if ratio:
            goal = f"  (target >= {target})" if target else ""
            print(f"{label} rows/s at {big}M = {ratio}{goal}")
    ratio = speedup("spark-2", "beam-mp2", big, key="job")
    if ratio:
        print(f"spark   tensorize_spark call (session already up) / beam-mp2 at {big}M = {ratio}")
    if ("beam-1", big) in results:
        r = results["beam-1", big]
        rows = big * ROWS_PER_FILE
        print(f"throughput beam-1 at {big}M: {rows / r['wall']:,.0f} rows/s on one core "
              f"({rows / r['cpu']:,.0f} rows per CPU second)  (target >= 100,000)")  # fmt: skip
        # Each run against the floors measured just before it; the median of those ratios.
        pairs = list(zip(floor[big], runs["beam-1", big]))
        to_inflate = [inflate / job["cpu"] for (inflate, _, _), job in pairs]
        to_decode = [decode / job["cpu"] for (_, decode, _), job in pairs]
        to_parquet = [parquet / job["cpu"] for (_, _, parquet), job in pairs]

        def median(ratios: list[float]) -> str:
            spread = f" (runs {min(ratios):.3f}-{max(ratios):.3f})" if len(ratios) > 1 else ""
            return f"{statistics.median(ratios):.3f}{spread}"

        print(f"floor   beam-1 rows per CPU s at {big}M / inflating the Avro blocks only = "
              f"{median(to_inflate)}  (target >= 0.35); / inflate + decode the config's columns = "
              f"{median(to_decode)}; / pyarrow reading them from a Parquet copy = {median(to_parquet)}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
