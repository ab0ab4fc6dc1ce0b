"""TensorFlow loading of tabular training data, as HybridBackend's table measures it.

A file of N rows x 200 columns (60 int64, 60 float, 30 string scalars and 50 variable-length id
lists, as categorical training data) is written as CSV (lists as `|`-joined text) and as
Parquet (SNAPPY), and read in one process pinned to one CPU, consumed in graph mode
(`Dataset.reduce` inside a `tf.function`) in batches of 1024:

* `csv`: `TextLineDataset + batch + decode_csv`, lists split in TensorFlow (vanilla TF);
* `tfrecord`: `TFRecordDataset + batch + parse_example` of the same rows;
* `from_parquet`: `beam_tensorize.tf.Dataset.from_parquet`;
* `pyarrow`: pyarrow alone reading the Parquet file into numpy arrays (the floor).

    python benchmarks/bench_tf_loading.py [--rows 200000] [--runs 3]

Prints the median time per batch of each reader, the ratios the targets are stated in, and
the file sizes. Each reader runs in a fresh process (its own TensorFlow start excluded from
the time).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

BATCH = 1024
INTS, FLOATS, STRINGS, LISTS = 60, 60, 30, 50


def _columns() -> list[tuple[str, str]]:
    return (
        [(f"i{k}", "int") for k in range(INTS)]
        + [(f"f{k}", "float") for k in range(FLOATS)]
        + [(f"s{k}", "string") for k in range(STRINGS)]
        + [(f"l{k}", "list") for k in range(LISTS)]
    )


def write_files(folder: str, rows: int) -> dict[str, str]:
    """The CSV, Parquet and TFRecord files of `rows` generated rows (seeded)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    from beam_tensorize.kernels.tfrecord.example_encoder import encode_examples
    from beam_tensorize.kernels.tfrecord.framing import frame_records

    rng = np.random.default_rng(0)
    arrays, text = {}, {}
    for name, kind in _columns():
        if kind == "int":
            arrays[name] = pa.array(rng.integers(0, 100_000, rows))
        elif kind == "float":
            arrays[name] = pa.array(rng.random(rows).astype(np.float32))
        elif kind == "string":
            arrays[name] = pa.array([f"v{v}" for v in rng.integers(0, 1000, rows)])
        else:
            lengths = rng.integers(0, 6, rows)
            offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
            values = pa.array(rng.integers(0, 1_000_000, int(offsets[-1])))
            arrays[name] = pa.ListArray.from_arrays(pa.array(offsets), values)
            text[name] = pa.array(["|".join(map(str, v)) for v in arrays[name].to_pylist()])
    table = pa.table(arrays)
    paths = {name: os.path.join(folder, f"data.{name}") for name in ("csv", "parquet", "tfrecord")}
    pq.write_table(table, paths["parquet"], compression="snappy", row_group_size=64 * 1024)
    csv_table = pa.table({n: text.get(n, arrays[n]) for n in table.column_names})
    pacsv.write_csv(csv_table, paths["csv"], pacsv.WriteOptions(include_header=False))
    with open(paths["tfrecord"], "wb") as f:
        for start in range(0, rows, 8192):
            f.write(frame_records(encode_examples(table.slice(start, 8192).to_batches()[0])))
    return paths


_READER = r"""
import os, sys, time, json
os.sched_setaffinity(0, {0})
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
reader, path, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
columns = json.loads(sys.argv[4])
if reader == "pyarrow":
    import pyarrow as pa, pyarrow.parquet as pq
    start = time.perf_counter()
    batches = 0
    for rb in pq.ParquetFile(path).iter_batches(batch_size=batch):
        for column in rb.columns:
            if pa.types.is_list(column.type):
                column.values.to_numpy(zero_copy_only=False)
                column.offsets.to_numpy()
            else:
                column.to_numpy(zero_copy_only=False)
        batches += 1
    print(json.dumps({"seconds": time.perf_counter() - start, "batches": batches}))
    sys.exit(0)
import tensorflow as tf
tf.config.threading.set_inter_op_parallelism_threads(1)
tf.config.threading.set_intra_op_parallelism_threads(1)
if reader == "csv":
    defaults = [[0] if k == "int" else [0.0] if k == "float" else [""] for _, k in columns]
    lists = [i for i, (_, k) in enumerate(columns) if k == "list"]
    def decode(lines):
        fields = tf.io.decode_csv(lines, defaults)
        out = {name: fields[i] for i, (name, _) in enumerate(columns)}
        for i in lists:
            name = columns[i][0]
            parts = tf.strings.split(fields[i], "|")
            parts = tf.ragged.boolean_mask(parts, tf.strings.length(parts) > 0)  # "" is an empty list
            out[name] = tf.strings.to_number(parts, tf.int64)
        return out
    ds = tf.data.TextLineDataset(path).batch(batch).map(decode)
elif reader == "tfrecord":
    spec = {name: tf.io.FixedLenFeature([], tf.int64 if k == "int" else tf.float32 if k == "float" else tf.string)
            if k != "list" else tf.io.RaggedFeature(tf.int64) for name, k in columns}
    ds = tf.data.TFRecordDataset(path).batch(batch).map(lambda r: tf.io.parse_example(r, spec))
else:
    from beam_tensorize.tf import Dataset
    ds = Dataset.from_parquet(path, batch_size=batch)
@tf.function
def consume(dataset):
    return dataset.reduce(tf.constant(0, tf.int64), lambda n, _: n + 1)
start = time.perf_counter()
batches = int(consume(ds))
print(json.dumps({"seconds": time.perf_counter() - start, "batches": batches}))
"""


def measure(reader: str, path: str, runs: int) -> float:
    """Median seconds per batch of `reader` over `runs` fresh processes."""
    per_batch = []
    for _ in range(runs):
        out = subprocess.run(
            [sys.executable, "-c", _READER, reader, path, str(BATCH), json.dumps(_columns())],
            capture_output=True, text=True,
        )  # fmt: skip
        if out.returncode:
            raise RuntimeError(f"the {reader} reader failed:\n{out.stderr[-3000:]}")
        result = json.loads(out.stdout.strip().splitlines()[-1])
        per_batch.append(result["seconds"] / max(1, result["batches"]))
    return statistics.median(per_batch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        started = time.perf_counter()
        paths = write_files(folder, args.rows)
        print(
            f"{args.rows} rows x {len(_columns())} columns written in {time.perf_counter() - started:.0f} s"
        )
        sizes = {name: os.path.getsize(path) for name, path in paths.items()}
        times = {
            "csv": measure("csv", paths["csv"], args.runs),
            "tfrecord": measure("tfrecord", paths["tfrecord"], args.runs),
            "from_parquet": measure("from_parquet", paths["parquet"], args.runs),
            "pyarrow": measure("pyarrow", paths["parquet"], args.runs),
        }
    print(f"{'reader':14} {'ms / batch of 1024':>20}")
    for name, seconds in times.items():
        print(f"{name:14} {seconds * 1000:20.2f}")
    ours = times["from_parquet"]
    print(f"from_parquet vs pyarrow floor: {ours / times['pyarrow']:.2f}x the floor (target <= 2)")
    print(f"from_parquet vs tfrecord:      {times['tfrecord'] / ours:.2f}x faster (target >= 2)")
    print(f"from_parquet vs csv:           {times['csv'] / ours:.2f}x faster (target >= 5)")
    print(f"sizes: csv {sizes['csv'] / 2**20:.1f} MiB, parquet {sizes['parquet'] / 2**20:.1f} MiB "
          f"({sizes['csv'] / sizes['parquet']:.1f}x smaller, target >= 3.3), tfrecord {sizes['tfrecord'] / 2**20:.1f} MiB")  # fmt: skip


if __name__ == "__main__":
    main()
