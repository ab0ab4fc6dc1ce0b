"""TensorFlow loading of tabular training data, as HybridBackend's table measures it.

A file of N rows x 200 columns (60 int64, 60 float, 30 string scalars and 50 variable-length id
lists, as categorical training data) is written as CSV (lists as `|`-joined text), TFRecord and
Parquet (SNAPPY), and read in one process pinned to one CPU, consumed in graph mode
(`Dataset.reduce` inside a `tf.function`) in batches of 1024:

* `csv`: `TextLineDataset + batch + decode_csv`, lists split in TensorFlow (vanilla TF);
* `tfrecord`: `TFRecordDataset + batch + parse_example` of the same rows;
* `from_parquet`: `beam_tensorize.tf.Dataset.from_parquet`; `from_parquet_keep`: the same in
  a process started with `JE_ARROW_MALLOC_CONF=dirty_decay_ms:-1,muzzy_decay_ms:-1`, as the
  jemalloc floor below (every jemalloc arena keeps the pages it frees: `from_parquet` itself
  reaches all but the first, which is the only one of a process on one CPU);
* `pyarrow`: pyarrow alone reading the Parquet file into numpy arrays (the floor), into its
  default memory pool; `pyarrow_jemalloc`: the same into jemalloc's pool, which `from_parquet`
  decodes into, its freed pages kept for reuse (in every arena). Ratios are to
  the faster of the two.

The values are skewed as categorical data is (seeded): ids and string tokens are Zipf
distributed (exponent 1.5, frequent ids scattered over the range) with 100 to 1,000,000
distinct values depending on the column (10,000 at most for strings), floats are counters
rounded to one decimal (exponential, mean 10), lists hold 0-5 ids.

    python benchmarks/bench_tf_loading.py [--rows 200000] [--runs 3] [--workdir DIR] [--autotune off]
    python benchmarks/bench_tf_loading.py --data hybridbackend --rows 1000000
    python benchmarks/bench_tf_loading.py --data hybridbackend --rows 1000000 --scaling   # and the ceiling
    python benchmarks/bench_tf_loading.py --rows 100000 --first-batch   # a new iterator's first batch

`--data hybridbackend` is HybridBackend's own benchmark instead (its docs/data.md table, the
data as its scripts make it): 200 int64 columns, uniform random in [0, 100), SNAPPY, batches of
200,000 rows; it prints from_parquet's ratio to the pyarrow floor and to CSV. Each reader reads
the file 4 times over in its timed run (`--passes`; 20 batches of the 1M-row file), as
HybridBackend's table averages 100 steps: a fresh process's first batches are decoded into
memory touched for the first time, which costs as much as the decoding.

Prints the median time per batch of each reader (wall clock, CPU time of the process and its
user part: the rest is the kernel's, mostly first touches of fresh memory), the
ratios the targets are stated in, and the file sizes. Each reader runs in a fresh process; its
TensorFlow start and the tracing of the `tf.function` are not timed. Readers alternate run by
run, so that a busy moment of a shared machine hits them all.
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BATCH = 1024
INTS, FLOATS, STRINGS, LISTS = 60, 60, 30, 50


#: HybridBackend's own benchmark (its docs/data.md table, as its scripts make the data): 200
#: int64 columns, uniform random in [0, 100), written by pyarrow with SNAPPY, read in batches
#: of 200,000 rows by one thread.
HB_COLUMNS, HB_BATCH = 200, 200_000


def _columns(data: str = "categorical") -> list[tuple[str, str]]:
    if data == "hybridbackend":
        return [(f"c{k}", "uniform") for k in range(HB_COLUMNS)]
    return (
        [(f"i{k}", "int") for k in range(INTS)]
        + [(f"f{k}", "float") for k in range(FLOATS)]
        + [(f"s{k}", "string") for k in range(STRINGS)]
        + [(f"l{k}", "list") for k in range(LISTS)]
    )


def write_files(folder: str, rows: int, data: str = "categorical") -> dict[str, str]:
    """The CSV, Parquet and TFRecord files of `rows` generated rows (seeded)."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.csv as pacsv
    import pyarrow.parquet as pq

    from beam_tensorize.kernels.tfrecord.example_encoder import encode_examples
    from beam_tensorize.kernels.tfrecord.framing import frame_records

    rng = np.random.default_rng(0)

    def ids(n: int, cardinality: int) -> np.ndarray:
        """Zipf-distributed ids (exponent 1.5) below `cardinality`, shuffled by a fixed
        permutation so that frequent ids are not the small numbers."""
        ranks = (rng.zipf(1.5, n) - 1) % cardinality
        return (ranks * 2_654_435_761 % cardinality).astype(np.int64)

    vocabulary = np.array([f"token_{k:05d}" for k in range(10_000)], dtype=object)
    arrays, text = {}, {}
    for k, (name, kind) in enumerate(_columns(data)):
        cardinality = 10 ** (2 + k % 5)  # 100 to 1,000,000 distinct ids, column by column
        if kind == "uniform":
            arrays[name] = pa.array(rng.integers(0, 100, rows, dtype=np.int64))
        elif kind == "int":
            arrays[name] = pa.array(ids(rows, cardinality))
        elif kind == "float":  # counters and ratios: a few thousand distinct values
            arrays[name] = pa.array(np.round(rng.exponential(10.0, rows), 1).astype(np.float32))
        elif kind == "string":
            arrays[name] = pa.array(vocabulary[ids(rows, min(cardinality, len(vocabulary)))].tolist())
        else:
            lengths = rng.integers(0, 6, rows)
            offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int32)
            values = pa.array(ids(int(offsets[-1]), cardinality))
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
chosen = {int(c) for c in sys.argv[6].split(",")}  # the CPUs this process may run on
os.sched_setaffinity(0, chosen)
cpus = len(chosen)
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
reader, path, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
columns = json.loads(sys.argv[4])
passes = int(sys.argv[8])  # the file read this many times, one pass after another
if reader in ("pyarrow_jemalloc", "from_parquet_keep"):  # jemalloc started keeping freed pages in every arena
    os.environ.setdefault("JE_ARROW_MALLOC_CONF", "dirty_decay_ms:-1,muzzy_decay_ms:-1")
def first_batches(make):
    # the median CPU and wall time of make() (a new iterator and its first batch), 7 times after
    # one untimed; what each leaves (an iterator, its threads' work ahead) is let go outside the
    # timing, as a program goes on with the iterator it made
    make()
    walls, cpus = [], []
    for _ in range(7):
        start, cpu = time.perf_counter(), time.process_time()
        kept = make()
        walls.append(time.perf_counter() - start)
        cpus.append(time.process_time() - cpu)
        del kept
        time.sleep(0.3)
    walls.sort(); cpus.sort()
    print(json.dumps({"seconds": walls[3], "cpu": cpus[3], "batches": 1, "user": 0.0}))
    sys.exit(0)
if reader.startswith("pyarrow"):
    import pyarrow as pa, pyarrow.parquet as pq
    if reader == "pyarrow_jemalloc":
        pa.set_memory_pool(pa.jemalloc_memory_pool())
    if sys.argv[7] == "first":  # the file opened (mapped, as from_parquet maps it) and its first batch decoded
        def make():
            reader = pq.ParquetFile(path, memory_map=True).iter_batches(batch_size=batch)
            return reader, [c.to_numpy(zero_copy_only=False) if not pa.types.is_list(c.type) else c.values.to_numpy(zero_copy_only=False) for c in next(reader).columns]
        first_batches(make)
    start, cpu, times = time.perf_counter(), time.process_time(), os.times()
    batches = 0
    for rb in (rb for _ in range(passes) for rb in pq.ParquetFile(path).iter_batches(batch_size=batch)):
        for column in rb.columns:
            if pa.types.is_list(column.type):
                column.values.to_numpy(zero_copy_only=False)
                column.offsets.to_numpy()
            else:
                column.to_numpy(zero_copy_only=False)
        batches += 1
    print(json.dumps({"seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu, "batches": batches,
                      "user": os.times().user - times.user}))
    sys.exit(0)
import tensorflow as tf
tf.config.threading.set_inter_op_parallelism_threads(cpus)
tf.config.threading.set_intra_op_parallelism_threads(cpus)
if reader == "csv":
    defaults = [[0] if k in ("int", "uniform") else [0.0] if k == "float" else [""] for _, k in columns]
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
    spec = {name: tf.io.FixedLenFeature([], tf.int64 if k in ("int", "uniform") else tf.float32 if k == "float" else tf.string)
            if k != "list" else tf.io.RaggedFeature(tf.int64) for name, k in columns}
    ds = tf.data.TFRecordDataset(path).batch(batch).map(lambda r: tf.io.parse_example(r, spec))
elif reader == "structure":  # one batch of from_parquet's, repeated, handed over as its are: no reading, no function
    from beam_tensorize.tf import Dataset
    from beam_tensorize.tf._iterators import Batches
    ds = Batches(tf.data.Dataset.from_tensors(next(iter(Dataset.from_parquet(path, batch_size=batch)))).repeat())
else:
    from beam_tensorize.tf import Dataset
    ds = Dataset.from_parquet(path, batch_size=batch)
if passes > 1:
    ds = ds.repeat(passes)
if sys.argv[5] == "off":  # the same for the three TensorFlow readers
    options = tf.data.Options()
    options.autotune.enabled = False
    ds = ds.with_options(options)
if sys.argv[7] == "first":  # a new iterator's first batch: iter() and next(), as a loop, Keras's fit
    def make():                 # (each epoch) and TF1's make_one_shot_iterator make iterators
        iterator = iter(ds)
        return iterator, next(iterator)
    first_batches(make)
@tf.function
def consume(dataset):
    return dataset.reduce(tf.constant(0, tf.int64), lambda n, _: n + 1)
consume.get_concrete_function(ds)  # tracing, like TensorFlow's start, is not timed
start, cpu, times = time.perf_counter(), time.process_time(), os.times()
batches = int(consume(ds))
print(json.dumps({"seconds": time.perf_counter() - start, "cpu": time.process_time() - cpu, "batches": batches,
                  "user": os.times().user - times.user}))
"""


def measure(
    reader: str,
    path: str,
    autotune: str = "on",
    data: str = "categorical",
    cpus: int = 1,
    what: str = "all",
    passes: int = 1,
) -> dict[str, float]:
    """Seconds per batch of `reader` in a fresh process on the first `cpus` CPUs: wall clock,
    CPU time, and the user part of the CPU time (the rest is the kernel's: mostly first touches
    of fresh memory)."""
    return measure_at_once(reader, path, autotune, data, [list(range(cpus))], what, passes)[0]


def measure_at_once(
    reader: str,
    path: str,
    autotune: str,
    data: str,
    cpu_sets: list[list[int]],
    what: str = "all",
    passes: int = 1,
) -> list[dict[str, float]]:
    """`measure` in one process per CPU set, all running at the same time."""
    batch = HB_BATCH if data == "hybridbackend" else BATCH
    children = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                _READER,
                reader,
                os.path.abspath(path),
                str(batch),
                json.dumps(_columns(data)),
                autotune,
                ",".join(map(str, cpus)),
                what,
                str(passes),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            # this checkout's beam_tensorize, whatever the working directory and the installed one
            cwd=ROOT,
            env={
                **os.environ,
                "PYTHONPATH": os.pathsep.join(filter(None, [ROOT, os.environ.get("PYTHONPATH")])),
            },
        )
        for cpus in cpu_sets
    ]
    results = []
    for child in children:
        stdout, stderr = child.communicate()
        if child.returncode:
            raise RuntimeError(f"the {reader} reader failed:\n{stderr[-3000:]}")
        result = json.loads(stdout.strip().splitlines()[-1])
        batches = max(1, result["batches"])
        results.append(
            {
                "wall": result["seconds"] / batches,
                "CPU": result["cpu"] / batches,
                "user": result["user"] / batches,
            }
        )
    return results


READERS = {
    "csv": "csv",
    "tfrecord": "tfrecord",
    "from_parquet": "parquet",
    "from_parquet_keep": "parquet",
    "pyarrow": "parquet",
    "pyarrow_jemalloc": "parquet",
}


def _first_batch(paths: dict[str, str], args) -> None:
    """A new iterator's first batch (median of 7 in each process, then of the runs): `iter()`
    and `next()` as a program makes an iterator, for the TensorFlow readers, `structure` (a
    dataset of one batch of the same element structure, made before and handed to Python as
    from_parquet's batches are: the cost of an iterator giving such elements) and `pyarrow` (the file opened and its first batch
    decoded: what any reader of this file pays first, page decompression included)."""
    readers = {
        "csv": "csv",
        "tfrecord": "tfrecord",
        "from_parquet": "parquet",
        "structure": "parquet",
        "pyarrow": "parquet",
    }
    runs: dict[str, list[dict[str, float]]] = {name: [] for name in readers}
    for _ in range(args.runs):
        for name, kind in readers.items():
            runs[name].append(measure(name, paths[kind], args.autotune, args.data, what="first"))
    print(
        f"{'reader':14} {'wall ms':>10} {'CPU ms':>10}   (a new iterator's first batch, median of {args.runs})"
    )
    cpu = {}
    for name in readers:
        wall, cpu[name] = (statistics.median(r[k] for r in runs[name]) * 1000 for k in ("wall", "CPU"))
        print(f"{name:14} {wall:10.1f} {cpu[name]:10.1f}")
    ours = cpu["from_parquet"] - cpu["structure"] - cpu["pyarrow"]
    print(
        f"from_parquet: {cpu['from_parquet']:.0f} ms CPU to its first batch (target <= 50): pyarrow's own first "
        f"read {cpu['pyarrow']:.0f}, an iterator of this element structure "
        f"{cpu['structure']:.0f}, the rest {ours:.0f}; csv {cpu['csv']:.0f} ms, tfrecord {cpu['tfrecord']:.0f} ms"
    )


def _scaling(path: str, args) -> None:
    """from_parquet (started as usual, and as from_parquet_keep) and the jemalloc floor on one
    CPU and on two, alternating run by run; and the
    machine's ceiling: two one-CPU from_parquet processes at once, on CPUs 0 and 1 (two
    processors that are threads of one core, or share other tenants' time, give less than
    twice one's rows/s whatever the reader does)."""
    names = ("from_parquet", "from_parquet_keep", "pyarrow_jemalloc")
    cases = [(name, cpus) for name in names for cpus in (1, 2)]
    runs: dict[tuple[str, int], list[float]] = {case: [] for case in cases}
    ceiling: list[float] = []
    for _ in range(args.runs):
        for name, cpus in cases:
            runs[name, cpus].append(
                measure(name, path, args.autotune, args.data, cpus, passes=args.passes)["wall"]
            )
        both = measure_at_once("from_parquet", path, args.autotune, args.data, [[0], [1]], passes=args.passes)
        ceiling.append(2 * runs["from_parquet", 1][-1] / max(r["wall"] for r in both))
    for name in names:
        one, two = (statistics.median(runs[name, cpus]) for cpus in (1, 2))
        print(
            f"{name:17} wall ms / batch: one CPU {one * 1000:.1f}, two CPUs {two * 1000:.1f}: "
            f"{one / two:.2f}x (target for from_parquet >= 1.8x; median of {args.runs})"
        )
    print(
        f"ceiling          two one-CPU from_parquet processes at once: {statistics.median(ceiling):.2f}x the "
        f"rows/s of one alone (runs {min(ceiling):.2f}-{max(ceiling):.2f}): what two CPUs give here"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--workdir", help="where the files go (kept, and reused if there)")
    parser.add_argument(
        "--autotune", choices=["on", "off"], default="on",
        help="tf.data autotuning of the TensorFlow readers (off: options.autotune.enabled = False)",
    )  # fmt: skip
    parser.add_argument(
        "--data", choices=["categorical", "hybridbackend"], default="categorical",
        help="categorical: the mixed columns above, batches of 1024; hybridbackend: HybridBackend's own "
        "benchmark data (200 uniform int64 columns in [0, 100), batches of 200,000 rows)",
    )  # fmt: skip
    parser.add_argument(
        "--scaling", action="store_true",
        help="instead: from_parquet, from_parquet_keep and the floor on one CPU and on two (both CPUs, TensorFlow's pools "
        "at 2, pyarrow decoding in threads), alternating; prints the two-CPU / one-CPU rates",
    )  # fmt: skip
    parser.add_argument(
        "--first-batch", action="store_true",
        help="instead: the CPU and wall time of a new iterator's first batch, iter() and next() (csv, tfrecord, "
        "from_parquet; a dataset of one ready batch of the same structure: TensorFlow's own cost of such an "
        "iterator; pyarrow opening the file and decoding its first batch: any reader's first cost)",
    )  # fmt: skip
    parser.add_argument(
        "--readers", default=",".join(READERS),
        help="the readers to run, comma-separated (ratios need from_parquet and a floor)",
    )  # fmt: skip
    parser.add_argument(
        "--passes", type=int,
        help="the file read this many times in one timed run, pass after pass (default: 4 with "
        "--data hybridbackend, 20 batches, as HybridBackend's table averages many steps; else 1)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.passes is None:
        args.passes = 4 if args.data == "hybridbackend" else 1
    readers = {name: READERS[name] for name in args.readers.split(",")}
    batch = HB_BATCH if args.data == "hybridbackend" else BATCH
    with tempfile.TemporaryDirectory() as scratch:
        folder = args.workdir or scratch
        os.makedirs(folder, exist_ok=True)
        started = time.perf_counter()
        paths = {name: os.path.join(folder, f"data.{name}") for name in ("csv", "parquet", "tfrecord")}
        if not all(os.path.exists(p) for p in paths.values()):
            paths = write_files(folder, args.rows, args.data)
            print(
                f"{args.rows} rows x {len(_columns(args.data))} columns written in "
                f"{time.perf_counter() - started:.0f} s"
            )
        sizes = {name: os.path.getsize(path) for name, path in paths.items()}
        if args.first_batch:
            _first_batch(paths, args)
            return
        if args.scaling:
            _scaling(paths["parquet"], args)
            return
        runs: dict[str, list[dict[str, float]]] = {name: [] for name in readers}
        for _ in range(args.runs):  # readers alternate, so a busy moment of the machine hits them all
            for name, kind in readers.items():
                runs[name].append(measure(name, paths[kind], args.autotune, args.data, passes=args.passes))
    kinds = ("wall", "CPU", "user")
    median = {k: {name: statistics.median(r[k] for r in runs[name]) for name in readers} for k in kinds}
    print(
        f"{'reader':14} {'wall ms / batch':>16} {'CPU ms / batch':>16} {'user ms / batch':>16}"
        f"   (batches of {batch}, median of {args.runs})"
    )
    for name in readers:
        print(f"{name:14} " + " ".join(f"{median[k][name] * 1000:16.2f}" for k in kinds))
    if not {"from_parquet", "pyarrow", "pyarrow_jemalloc", "csv", "tfrecord"} <= set(readers):
        return
    if args.data == "hybridbackend":
        for label in kinds:
            times = median[label]
            floor = min(times["pyarrow"], times["pyarrow_jemalloc"])
            for name in ("from_parquet", "from_parquet_keep"):
                ours = times.get(name)
                if ours is not None:
                    print(f"{label}: {name} is {ours / floor:.2f}x the faster pyarrow floor (target <= 1.25; "
                          f"{ours / times['pyarrow']:.2f}x the default pool's), "
                          f"{times['csv'] / ours:.1f}x faster than csv (HybridBackend reports 21.5x)")  # fmt: skip
        return
    for label in kinds:
        times = median[label]
        ours, floor = times["from_parquet"], min(times["pyarrow"], times["pyarrow_jemalloc"])
        print(f"{label}: from_parquet is {ours / floor:.2f}x the faster pyarrow floor (target <= 2), "
              f"{times['tfrecord'] / ours:.2f}x faster than tfrecord (target >= 2), "
              f"{times['csv'] / ours:.2f}x faster than csv (target >= 5)")  # fmt: skip
    print(f"sizes: csv {sizes['csv'] / 2**20:.1f} MiB, parquet {sizes['parquet'] / 2**20:.1f} MiB "
          f"({sizes['csv'] / sizes['parquet']:.1f}x smaller, target >= 3.3), tfrecord {sizes['tfrecord'] / 2**20:.1f} MiB")  # fmt: skip


if __name__ == "__main__":
    main()
