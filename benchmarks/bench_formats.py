"""Benchmark: the same rows read from Avro, Parquet and ORC, written as TFRecord and as Parquet.

The MovieLens-like input of `bench_tensorize.generate_movielens_avro` is generated once as Avro
(deflate), then converted with pyarrow to Parquet (SNAPPY, 128Ki-row groups) and ORC (ZLIB,
pyarrow's default) — not timed. Each case runs the `tensorize` CLI with
`benchmarks/movielens_config.json` in a child process (DirectRunner, one worker), so its
wall time, CPU time and peak RSS are its own (`os.wait4`):

* avro -> tfrecord (the baseline), parquet -> tfrecord, orc -> tfrecord,
* avro -> parquet (`--output_format parquet`).

Cases run in turn, `--repeats` times; the best wall time of each is reported as rows/s with
the ratio to the baseline measured in the same run. Every output must hold `--rows` records.

    python benchmarks/bench_formats.py --rows 1000000 --repeats 2
    python benchmarks/bench_formats.py --rows 20000            # quick check
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.bench_tensorize import generate_movielens_avro

CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "movielens_config.json")
#: (case name, input format, output format)
CASES = [
    ("avro -> tfrecord", "avro", "tfrecord"),
    ("parquet -> tfrecord", "parquet", "tfrecord"),
    ("orc -> tfrecord", "orc", "tfrecord"),
    ("avro -> parquet", "avro", "parquet"),
]


def convert(avro_path: str, parquet_path: str, orc_path: str) -> None:
    """Write the Avro file's rows as Parquet and ORC, batch by batch."""
    import pyarrow as pa
    import pyarrow.orc as orc
    import pyarrow.parquet as pq

    from beam_tensorize.kernels import avro

    with open(avro_path, "rb") as f:
        batches = (
            b.replace_schema_metadata(None) for b in avro.read_avro_range(f, avro_path, batch_rows=131072)
        )
        first = next(batches)
        with pq.ParquetWriter(parquet_path, first.schema, compression="SNAPPY") as pw:
            orc_writer = orc.ORCWriter(orc_path)
            for batch in (first, *batches):
                pw.write_batch(batch, row_group_size=131072)
                orc_writer.write(pa.Table.from_batches([batch]))
            orc_writer.close()


def run_case(path: str, input_format: str, output_format: str, out: str) -> dict:
    """One CLI run in a child process: wall seconds, CPU seconds, peak RSS (MiB)."""
    shutil.rmtree(out, ignore_errors=True)
    cmd = [sys.executable, "-m", "pipelines.tensorize", "--input", path, "--config", CONFIG,
           "--output", out, "--input_format", input_format, "--output_format", output_format]  # fmt: skip
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    start = time.perf_counter()
    child = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    if status != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{child.stderr.read().decode()}")
    with open(os.path.join(out, "metadata", "tensor_metadata.json")) as f:
        records = json.load(f)["data"]["trainingData"]["numRecords"]
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "rss": usage.ru_maxrss / 1024,
        "records": records,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="Rows of the input (default 1000000).")
    parser.add_argument("--repeats", type=int, default=1, help="Runs of each case (best kept).")
    parser.add_argument("--workdir", default=None, help="Where inputs and outputs go (kept if given).")
    args = parser.parse_args(argv)
    workdir = args.workdir or tempfile.mkdtemp(prefix="bench_formats_")
    os.makedirs(workdir, exist_ok=True)
    paths = {fmt: os.path.join(workdir, f"input-{args.rows}.{fmt}") for fmt in ("avro", "parquet", "orc")}
    if not all(os.path.exists(p) for p in paths.values()):
        print(f"generating {args.rows} rows ...", flush=True)
        generate_movielens_avro(paths["avro"], rows=args.rows, seed=0)
        convert(paths["avro"], paths["parquet"], paths["orc"])
    sizes = {fmt: os.path.getsize(p) / 2**20 for fmt, p in paths.items()}
    print("input sizes (MiB): " + ", ".join(f"{fmt} {size:.1f}" for fmt, size in sizes.items()))
    best: dict[str, dict] = {}
    for _ in range(args.repeats):
        for name, input_format, output_format in CASES:
            out = os.path.join(workdir, "out-" + name.replace(" -> ", "-"))
            got = run_case(paths[input_format], input_format, output_format, out)
            if got["records"] != args.rows:
                raise SystemExit(f"{name}: {got['records']} records written, expected {args.rows}")
            if name not in best or got["wall"] < best[name]["wall"]:
                best[name] = got
    base = best[CASES[0][0]]
    print(f"\n{args.rows} rows, best of {args.repeats}; ratio = rows/s against avro -> tfrecord\n")
    print("| case | wall s | rows/s | CPU s | peak RSS MiB | ratio |")
    print("|---|---|---|---|---|---|")
    for name, *_ in CASES:
        got = best[name]
        print(f"| {name} | {got['wall']:.1f} | {args.rows / got['wall']:,.0f} | {got['cpu']:.1f} | "
              f"{got['rss']:,.0f} | {base['wall'] / got['wall']:.2f} |")  # fmt: skip
    if not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
