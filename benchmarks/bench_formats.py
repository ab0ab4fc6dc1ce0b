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

Then (or alone, with `--read-only`) the reading of Parquet and ORC is timed by itself: the
columns the config reads (`input_columns`), each case in a child process, `--read-repeats`
times (best wall kept):

* pyarrow alone, as the library's reader calls it: Parquet `ParquetFile.iter_batches` over the
  same leaf columns, `batch_size` = the library's default batch rows, `use_threads=False`;
  ORC `ORCFile.read_stripe` stripe by stripe, the same top-level columns;
* pyarrow's plain `read_table(columns=...)` with its defaults (threads on for Parquet) and the
  top-level columns (its column references cannot select fields inside lists, so Parquet's
  reads the whole `movieLatentFactorFeatures` records, as ORC always does);
* the library's kernel without Beam (`plan_splits`, `unified_schema`, `read_split_batches`);
* the library's Beam transform (`ReadParquet` / `ReadOrc`, in-process DirectRunner: the
  FnApiRunner of `direct_runner_for`) followed by a step that only counts rows; and the same
  with the command-line jobs' setup (`command_setup`: Beam reads each DoFn's signatures
  once, not ~20 times; bundles end without waiting for their state sampler).

Rows/s and the read's wall and CPU seconds are timed in the child after its imports (the
process's own totals, from `os.wait4`, are printed beside them); the ratio is rows/s of each
case against pyarrow's batches from the same run, beside the target 0.5.

    python benchmarks/bench_formats.py --rows 1000000 --repeats 2
    python benchmarks/bench_formats.py --rows 1000000 --read-only --workdir /tmp/bench_formats
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
#: The read-only cases, the first the baseline of the ratios.
READ_CASES = (
    "pyarrow batches",
    "pyarrow read_table",
    "library kernel",
    "library Beam",
    "library Beam, CLI setup",
)
#: The target: the library's rows/s at least this share of pyarrow's.
READ_TARGET = 0.5


def convert(avro_path: str, parquet_path: str, orc_path: str | None) -> None:
    """Write the Avro file's rows as Parquet (SNAPPY, 128Ki-row groups) and, unless `orc_path`
    is None, ORC, batch by batch."""
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
            orc_writer = orc.ORCWriter(orc_path) if orc_path is not None else None
            for batch in (first, *batches):
                pw.write_batch(batch, row_group_size=131072)
                if orc_writer is not None:
                    orc_writer.write(pa.Table.from_batches([batch]))
            if orc_writer is not None:
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


def config_columns() -> list[str]:
    """The input columns the job reads for the config (as `TensorizeSpec.input_columns`)."""
    from beam_tensorize.config import load_config
    from beam_tensorize.kernels.features.extract import input_columns

    return input_columns(load_config(CONFIG).tensors)


def parquet_leaf_columns(path: str, columns: Sequence[str]) -> list[str]:
    """The Parquet leaf columns (dotted physical paths) the library reads for `columns`."""
    import pyarrow.parquet as pq

    from beam_tensorize.kernels.formats import project_schema
    from beam_tensorize.kernels.formats.parquet import leaf_paths

    parquet = pq.ParquetFile(path)
    full = parquet.schema_arrow
    wanted = project_schema(full, columns, path)
    logical = [(f.name, *p) for f in full for p in leaf_paths(f.type)]
    physical = [parquet.schema.column(i).path for i in range(parquet.metadata.num_columns)]
    keep = {(f.name, *p) for f in wanted for p in leaf_paths(f.type)}
    return [name for name, p in zip(physical, logical) if p in keep]


def _save_count(rows: int, out: str) -> None:
    with open(out, "w") as f:
        f.write(str(rows))


def read_rows(case: str, input_format: str, path: str, columns: list[str]) -> int:
    """Read the file for one read-only case; the rows read."""
    from beam_tensorize.kernels import formats

    batch_rows = formats.DEFAULT_BATCH_ROWS
    if case == "pyarrow batches" and input_format == "parquet":
        import pyarrow.parquet as pq

        leaves = parquet_leaf_columns(path, columns)
        batches = pq.ParquetFile(path).iter_batches(batch_size=batch_rows, columns=leaves, use_threads=False)
        return sum(b.num_rows for b in batches)
    if case == "pyarrow batches":
        import pyarrow.orc as orc

        reader = orc.ORCFile(path)
        top = list(dict.fromkeys(c.split(".")[0] for c in columns))
        return sum(reader.read_stripe(i, columns=top).num_rows for i in range(reader.nstripes))
    if case == "pyarrow read_table":  # top-level columns: its column refs cannot go into lists
        import pyarrow.orc as orc
        import pyarrow.parquet as pq

        top = list(dict.fromkeys(c.split(".")[0] for c in columns))
        return (pq if input_format == "parquet" else orc).read_table(path, columns=top).num_rows
    if case == "library kernel":
        from beam_tensorize.job.reading import plan_splits, read_split_batches, unified_schema

        splits = plan_splits([path], formats.get_format(input_format))
        schema = unified_schema(splits, columns)
        return sum(
            b.num_rows
            for fmt, split in splits
            for b in read_split_batches(fmt, split, columns, batch_rows, schema=schema)
        )
    import apache_beam as beam

    from beam_tensorize.io import ReadOrc, ReadParquet
    from beam_tensorize.runners.direct import command_setup, direct_runner_for, job_options

    if case == "library Beam, CLI setup":
        command_setup()  # as the command-line jobs do
    reader = ReadParquet if input_format == "parquet" else ReadOrc
    options = job_options([])
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "rows")
        with beam.Pipeline(runner=direct_runner_for(options), options=options) as p:
            _ = (
                p
                | reader(path, columns=columns, batch_rows=batch_rows)
                | beam.Map(lambda b: b.num_rows)
                | beam.CombineGlobally(sum)
                | beam.Map(_save_count, out)
            )
        with open(out) as f:
            return int(f.read())


def _read_child(case: str, input_format: str, path: str) -> int:
    """The child of `run_read_case`: import, then time the read; prints its JSON result."""
    import apache_beam  # noqa: F401  (every case imports the same before the clock starts)
    import pyarrow.orc
    import pyarrow.parquet  # noqa: F401

    import beam_tensorize.io
    import beam_tensorize.job.reading  # noqa: F401

    columns = config_columns()
    start, cpu = time.perf_counter(), time.process_time()
    rows = read_rows(case, input_format, path, columns)
    wall, cpu = time.perf_counter() - start, time.process_time() - cpu
    print(json.dumps({"rows": rows, "wall": wall, "cpu": cpu}))
    return 0


def run_read_case(case: str, input_format: str, path: str) -> dict:
    """One read-only case in a child process: the read's rows, wall and CPU seconds, and the
    process's own wall and CPU seconds (`os.wait4`)."""
    cmd = [sys.executable, os.path.abspath(__file__), "--read-child", case, input_format, path]
    env = dict(os.environ, TF_CPP_MIN_LOG_LEVEL="2")
    with tempfile.TemporaryFile() as stderr:
        start = time.perf_counter()
        child = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=stderr)
        stdout = child.stdout.read()
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        if status != 0:
            stderr.seek(0)
            raise SystemExit(f"{case} ({input_format}) failed:\n{stderr.read().decode()}")
    got = json.loads(stdout.decode().strip().splitlines()[-1])
    got.update(process_wall=wall, process_cpu=usage.ru_utime + usage.ru_stime)
    return got


def run_reads(paths: dict[str, str], rows: int, repeats: int) -> None:
    """Time the read-only cases for Parquet and ORC, `repeats` times each, and print a table."""
    print(f"\nreading the config's columns: {', '.join(config_columns())}", flush=True)
    best: dict[tuple[str, str], dict] = {}
    for _ in range(repeats):
        for input_format in ("parquet", "orc"):
            for case in READ_CASES:
                got = run_read_case(case, input_format, paths[input_format])
                if got["rows"] != rows:
                    raise SystemExit(f"{case} ({input_format}): {got['rows']} rows read, expected {rows}")
                key = (input_format, case)
                if key not in best or got["wall"] < best[key]["wall"]:
                    best[key] = got
    print(f"\n{rows} rows read, best of {repeats}; ratio = rows/s against pyarrow batches (same run)\n")
    print("| format | case | rows/s | wall s | CPU s | process wall s | process CPU s | ratio | target |")
    print("|---|---|---|---|---|---|---|---|---|")
    for input_format in ("parquet", "orc"):
        base = best[(input_format, READ_CASES[0])]
        for case in READ_CASES:
            got = best[(input_format, case)]
            print(f"| {input_format} | {case} | {rows / got['wall']:,.0f} | {got['wall']:.2f} | {got['cpu']:.2f} | "
                  f"{got['process_wall']:.1f} | {got['process_cpu']:.1f} | {base['wall'] / got['wall']:.2f} | "
                  f"{READ_TARGET if case.startswith('library') else ''} |")  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="Rows of the input (default 1000000).")
    parser.add_argument("--repeats", type=int, default=1, help="Runs of each case (best kept).")
    parser.add_argument("--workdir", default=None, help="Where inputs and outputs go (kept if given).")
    parser.add_argument("--read-only", action="store_true", help="Only the Parquet and ORC read cases.")
    parser.add_argument("--read-repeats", type=int, default=3, help="Runs of each read case (default 3).")
    parser.add_argument("--read-child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.read_child:
        return _read_child(*args.read_child)
    workdir = args.workdir or tempfile.mkdtemp(prefix="bench_formats_")
    os.makedirs(workdir, exist_ok=True)
    paths = {fmt: os.path.join(workdir, f"input-{args.rows}.{fmt}") for fmt in ("avro", "parquet", "orc")}
    if not all(os.path.exists(p) for p in paths.values()):
        print(f"generating {args.rows} rows ...", flush=True)
        generate_movielens_avro(paths["avro"], rows=args.rows, seed=0)
        convert(paths["avro"], paths["parquet"], paths["orc"])
    sizes = {fmt: os.path.getsize(p) / 2**20 for fmt, p in paths.items()}
    print("input sizes (MiB): " + ", ".join(f"{fmt} {size:.1f}" for fmt, size in sizes.items()))
    if not args.read_only:
        run_cases(paths, args.rows, args.repeats)
    run_reads(paths, args.rows, args.read_repeats)
    if not args.workdir:
        shutil.rmtree(workdir, ignore_errors=True)
    return 0


def run_cases(paths: dict[str, str], rows: int, repeats: int) -> None:
    """Time the CLI cases, `repeats` times each, and print a table."""
    workdir = os.path.dirname(paths["avro"])
    best: dict[str, dict] = {}
    for _ in range(repeats):
        for name, input_format, output_format in CASES:
            out = os.path.join(workdir, "out-" + name.replace(" -> ", "-"))
            got = run_case(paths[input_format], input_format, output_format, out)
            if got["records"] != rows:
                raise SystemExit(f"{name}: {got['records']} records written, expected {rows}")
            if name not in best or got["wall"] < best[name]["wall"]:
                best[name] = got
    base = best[CASES[0][0]]
    print(f"\n{rows} rows, best of {repeats}; ratio = rows/s against avro -> tfrecord\n")
    print("| case | wall s | rows/s | CPU s | peak RSS MiB | ratio |")
    print("|---|---|---|---|---|---|")
    for name, *_ in CASES:
        got = best[name]
        print(f"| {name} | {got['wall']:.1f} | {rows / got['wall']:,.0f} | {got['cpu']:.1f} | "
              f"{got['rss']:,.0f} | {base['wall'] / got['wall']:.2f} |")  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
