"""Benchmark: feature lists of any size, against a list of 20 entries in the same run.

A job should cost about the same per row whatever the size of its feature lists. The input is
a Parquet file (generated once, not timed) of `--rows` rows with two string columns: `user`,
uniform over `--entries` distinct values (its list ends up with ~`--entries` entries), and
`genre`, uniform over 20 values. Two jobs run in turn, in-process (the CLI's `main`, train
mode, DirectRunner, `--report none` unless `--report` is given), each with one feature-list
tensor (dtype long) and a float label:

* `small`: the `genre` column (a list of 20 entries), the baseline;
* `large`: the `user` column.

Printed: each job's wall and CPU seconds (best of `--repeats`) and large / small. Then the
lookup alone, on one batch of 8,192 values of the large list's column: pyarrow's
`index_in` (what each batch paid before `VocabIndex`: a hash table of the whole list per
call) against `VocabIndex.positions` (the list indexed once), with their ratio.

    TF_CPP_MIN_LOG_LEVEL=2 python benchmarks/bench_feature_lists.py --rows 1000000 --entries 1000000
    python benchmarks/bench_feature_lists.py --rows 100000 --entries 100000       # quick check
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from beam_tensorize.kernels.features.vocab_index import VocabIndex  # noqa: E402
from pipelines.tensorize import main as tensorize  # noqa: E402


def _input(path: str, rows: int, entries: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    users = pa.array(np.char.add("user", rng.integers(0, entries, rows).astype(str)))
    genres = pa.array(np.char.add("genre", rng.integers(0, 20, rows).astype(str)))
    labels = pa.array(rng.random(rows))
    pq.write_table(pa.table({"user": users, "genre": genres, "label": labels}), path, row_group_size=131_072)


def _config(path: str, column: str) -> None:
    config = {
        "features": [
            {
                "inputFeatureInfo": {"columnExpr": column},
                "outputTensorInfo": {"name": column, "dtype": "long", "shape": []},
            }
        ],
        "labels": [
            {
                "inputFeatureInfo": {"columnExpr": "label"},
                "outputTensorInfo": {"name": "label", "dtype": "float", "shape": []},
            }
        ],
    }
    with open(path, "w") as f:
        json.dump(config, f)


def _run(input_path: str, config: str, out: str, report: str) -> tuple[float, float]:
    shutil.rmtree(out, ignore_errors=True)
    wall, cpu = time.perf_counter(), time.process_time()
    argv = ["--input", input_path, "--config", config, "--output", out, "--quiet", "--report", report]
    if tensorize(argv) != 0:
        raise RuntimeError(f"tensorize failed: {argv}")
    return time.perf_counter() - wall, time.process_time() - cpu


def _list_size(out: str, column: str) -> int:
    with open(os.path.join(out, "featureList", column), encoding="utf-8") as f:
        return sum(1 for _ in f)


def _lookup(out: str, input_path: str) -> tuple[float, float, int]:
    """Milliseconds per 8,192-value batch: index_in against the whole list, VocabIndex."""
    with open(os.path.join(out, "featureList", "user"), encoding="utf-8") as f:
        entries = pa.array(f.read().splitlines(), pa.string())
    values = pq.read_table(input_path, columns=["user"])["user"].combine_chunks().slice(0, 8192)
    index = VocabIndex(entries)
    expected = index.positions(values)  # (also builds the index, once)
    repeats = 5
    started = time.perf_counter()
    for _ in range(repeats):
        found = np.asarray(pc.index_in(values, entries).fill_null(-1), np.int64)
    plain = (time.perf_counter() - started) / repeats
    started = time.perf_counter()
    for _ in range(repeats):
        positions = index.positions(values)
    indexed = (time.perf_counter() - started) / repeats
    if not (found == expected).all() or not (positions == expected).all():
        raise RuntimeError("VocabIndex and index_in disagree")
    return plain * 1e3, indexed * 1e3, len(entries)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--entries", type=int, default=1_000_000, help="distinct values of the large column")
    parser.add_argument("--repeats", type=int, default=1, help="runs of each job, in turn; the best is kept")
    parser.add_argument("--report", default="none", choices=["none", "json", "html"])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", help="kept if given (the input is reused)")
    args = parser.parse_args(argv)
    workdir = args.workdir or tempfile.mkdtemp(prefix="bench_feature_lists-")
    os.makedirs(workdir, exist_ok=True)
    input_path = os.path.join(workdir, f"input-{args.rows}-{args.entries}-{args.seed}.parquet")
    if not os.path.exists(input_path):
        print(f"generating {args.rows:,} rows ({args.entries:,} possible users) ...", flush=True)
        _input(input_path, args.rows, args.entries, args.seed)
    best: dict[str, tuple[float, float]] = {}
    for repeat in range(args.repeats):
        for case, column in (("small", "genre"), ("large", "user")):
            config = os.path.join(workdir, f"{column}.json")
            _config(config, column)
            wall, cpu = _run(input_path, config, os.path.join(workdir, f"out-{case}"), args.report)
            size = _list_size(os.path.join(workdir, f"out-{case}"), column)
            print(f"{case:5} run {repeat + 1}: {wall:6.2f} s wall, {cpu:6.2f} CPU s, "
                  f"{args.rows / wall:9,.0f} rows/s, list of {size:,} entries", flush=True)  # fmt: skip
            if case not in best or wall < best[case][0]:
                best[case] = (wall, cpu)
    (small_wall, small_cpu), (large_wall, large_cpu) = best["small"], best["large"]
    print(f"job     large list / 20-entry list: {large_wall / small_wall:.2f}x the wall time, "
          f"{large_cpu / small_cpu:.2f}x the CPU time (best of {args.repeats})")  # fmt: skip
    plain, indexed, size = _lookup(os.path.join(workdir, "out-large"), input_path)
    print(f"lookup  one batch of 8,192 values in a list of {size:,} entries: index_in {plain:.2f} ms, "
          f"VocabIndex {indexed:.2f} ms ({plain / indexed:.1f}x faster)")  # fmt: skip
    if not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
