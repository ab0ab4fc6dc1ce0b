"""Benchmark: our `tensorize` pipeline against the naive Beam pipeline on the same Avro file.

What is compared, on one MovieLens-like Avro file and the same runner settings
(DirectRunner, in-memory, one worker):

* **ours** — the `tensorize` CLI run in-process (`pipelines.tensorize.main`) with the bundled
  config `benchmarks/movielens_config.json` (the same tensors as the naive pipeline): Avro read into Arrow record batches,
  vectorised feature extraction and Example encoding, TFRecord write plus metadata.
* **naive** — what one writes without this project: `beam.io.ReadFromAvro` (one dict per row) ->
  `beam.Map` building one `tf.train.Example` per row with nested constructors ->
  `SerializeToString()` -> `beam.io.WriteToTFRecord`. It produces the same tensors as the
  sample config: userId (int64 list), movieId (int64), genres (lower-cased genre terms, bytes
  list), movieLatentFactors (30 floats), numGenres (int64), response (float).

The input is generated first (deterministic, seeded; not timed) with the schema of the bundled
sample `trainSmall.avro`. Each pipeline then runs `--repeats` times, alternating (ours, naive,
ours, naive, ...); the best wall-clock time of each is reported as rows/s, with the ratio
`ours / naive`. Both outputs are read back with `tf.data` and must hold exactly `--rows`
records. Timings are printed, never asserted: the machine may be noisy.

Run from the repository root:

    python benchmarks/bench_tensorize.py                       # 200,000 rows, one run each
    python benchmarks/bench_tensorize.py --rows 200000 --repeats 2
    python benchmarks/bench_tensorize.py --rows 2000 --workdir /tmp/bench   # quick check

`generate_movielens_avro` can also be imported to make test inputs:

    >>> from benchmarks.bench_tensorize import generate_movielens_avro
    >>> generate_movielens_avro("/tmp/movielens.avro", rows=1000, seed=1)
"""

from __future__ import annotations

import argparse
import array
import contextlib
import glob
import io
import os
import random
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence

import fastavro

__all__ = ["MOVIELENS_GENRES", "MOVIELENS_SCHEMA", "generate_movielens_avro", "main"]

#: The schema of the bundled sample `beam_tensorize/sample/trainSmall.avro`, field for field.
MOVIELENS_SCHEMA = {
    "type": "record",
    "doc": "This schema holds one MovieLens GAME training record.",
    "name": "com.linkedin.photon.ml.tutorial.avro.generated.MovieLensGAMETrainingExampleAvro",
    "fields": [
        {"name": "response", "type": "double"},
        {"name": "userId", "type": "int"},
        {"name": "movieId", "type": "int"},
        {
            "name": "genreFeatures",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "doc": "A tuple of name, term and value. Used as feature or model coefficient",
                    "name": "com.linkedin.photon.ml.tutorial.avro.generated.NameTermValueAvro",
                    "fields": [
                        {"name": "name", "type": "string"},
                        {"name": "term", "type": "string"},
                        {"name": "value", "type": "double"},
                    ],
                },
            },
        },
        {
            "name": "movieLatentFactorFeatures",
            "type": {
                "type": "array",
                "items": "com.linkedin.photon.ml.tutorial.avro.generated.NameTermValueAvro",
            },
        },
        {
            "doc": "optional field specifying strength of observation",
            "default": None,
            "name": "weight",
            "type": ["null", "double"],
        },
        {
            "doc": "optional field. when non-zero, the offset will be added to the inner product "
            "of coefficients and features to generate the score",
            "default": None,
            "name": "offset",
            "type": ["null", "double"],
        },
    ],
}

#: The 18 MovieLens genres.
MOVIELENS_GENRES = (
    "Action",
    "Adventure",
    "Animation",
    "Children",
    "Comedy",
    "Crime",
    "Documentary",
    "Drama",
    "Fantasy",
    "Film-Noir",
    "Horror",
    "Musical",
    "Mystery",
    "Romance",
    "Sci-Fi",
    "Thriller",
    "War",
    "Western",
)

_RATINGS = tuple(r / 2 for r in range(1, 11))  # 0.5 .. 5.0
_NUM_GENRES = (1, 2, 3, 4, 5, 6)
_NUM_GENRES_WEIGHTS = (62, 87, 80, 49, 19, 3)  # as in the bundled sample
_NUM_LATENT_FACTORS = 30
_LATENT_NAMES = tuple(str(i) for i in range(_NUM_LATENT_FACTORS))
_OPTIONAL_FILLED = 0.02  # share of rows with a non-null weight / offset

#: Java Avro's (and so Spark's) default block size; fastavro's own default is 16,000 bytes.
DEFAULT_SYNC_INTERVAL = 64_000

_RUNNER_ARGS = (
    "--runner",
    "DirectRunner",
    "--direct_num_workers",
    "1",
    "--direct_running_mode",
    "in_memory",
)


# --------------------------------------------------------------------------------------------
# Input data
# --------------------------------------------------------------------------------------------


def _movielens_records(rows: int, seed: int) -> Iterator[dict]:
    rng = random.Random(seed)
    for _ in range(rows):
        num_genres = rng.choices(_NUM_GENRES, weights=_NUM_GENRES_WEIGHTS)[0]
        genres = sorted(rng.sample(MOVIELENS_GENRES, num_genres))
        # Latent factors are float32 values widened to double, as in the sample.
        latent = array.array("f", [rng.gauss(0.0, 0.35) for _ in _LATENT_NAMES]).tolist()
        yield {
            "response": rng.choice(_RATINGS),
            "userId": rng.randint(1, 6040),
            "movieId": rng.randint(1, 131_262),
            "genreFeatures": [{"name": "Genre", "term": g, "value": 1.0} for g in genres],
            "movieLatentFactorFeatures": [
                {"name": n, "term": "", "value": v} for n, v in zip(_LATENT_NAMES, latent)
            ],
            "weight": rng.random() if rng.random() < _OPTIONAL_FILLED else None,
            "offset": rng.random() if rng.random() < _OPTIONAL_FILLED else None,
        }


def generate_movielens_avro(
    path: str,
    rows: int,
    seed: int = 0,
    codec: str = "deflate",
    *,
    sync_interval: int = DEFAULT_SYNC_INTERVAL,
) -> None:
    """Write `rows` MovieLens-like records to the Avro file `path`.

    The schema is the bundled sample's (`MOVIELENS_SCHEMA`); 1-6 genres per row from the 18
    MovieLens genres, 30 latent factors named "0".."29", weight / offset mostly null. The same
    arguments always give the same file, byte for byte.

    Args:
        path: Local file to (over)write.
        rows: Number of records.
        seed: Seed of the random generator.
        codec: Avro codec (`null`, `deflate`, `snappy`, ...; fastavro's names).
        sync_interval: Approximate uncompressed bytes per Avro block.

    Raises:
        ValueError: If `rows` is negative.
    """
    if rows < 0:
        raise ValueError(f"rows must be >= 0, got {rows}")
    schema = fastavro.parse_schema(MOVIELENS_SCHEMA)
    sync_marker = random.Random(f"sync-{seed}").randbytes(16)  # byte-identical files per seed
    with open(path, "wb") as out:
        fastavro.writer(
            out,
            schema,
            _movielens_records(rows, seed),
            codec=codec,
            sync_interval=sync_interval,
            sync_marker=sync_marker,
        )


#: Our pipeline's config: exactly the tensors the naive pipeline builds (userId, movieId, genres,
#: movieLatentFactors, numGenres; label response), so both do the same work.
BENCH_CONFIG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "movielens_config.json")


# --------------------------------------------------------------------------------------------
# The two pipelines
# --------------------------------------------------------------------------------------------


def run_ours(avro_path: str, out_dir: str) -> None:
    """Run the `tensorize` CLI in-process on `avro_path`, writing to `out_dir`."""
    from pipelines.tensorize import main as tensorize_main

    argv = ["--input", avro_path, "--config", BENCH_CONFIG, "--output", out_dir]
    argv += ["--save_mode", "overwrite", *_RUNNER_ARGS]
    summary = io.StringIO()  # the CLI prints a run summary; keep the benchmark's output readable
    with contextlib.redirect_stdout(summary):
        code = tensorize_main(argv)
    if code != 0:
        raise RuntimeError(f"tensorize exited with code {code}: {argv}\n{summary.getvalue()}")


def _make_row_to_example() -> Callable[[dict], bytes]:
    """The naive per-row converter: nested constructors, then serialise."""
    import tensorflow as tf

    def row_to_example(row: dict) -> bytes:
        genres = row["genreFeatures"]
        example = tf.train.Example(
            features=tf.train.Features(
                feature={
                    "userId": tf.train.Feature(int64_list=tf.train.Int64List(value=[row["userId"]])),
                    "movieId": tf.train.Feature(int64_list=tf.train.Int64List(value=[row["movieId"]])),
                    "genres": tf.train.Feature(
                        bytes_list=tf.train.BytesList(value=[g["term"].lower().encode() for g in genres])
                    ),
                    "movieLatentFactors": tf.train.Feature(
                        float_list=tf.train.FloatList(
                            value=[f["value"] for f in row["movieLatentFactorFeatures"]]
                        )
                    ),
                    "numGenres": tf.train.Feature(int64_list=tf.train.Int64List(value=[len(genres)])),
                    "response": tf.train.Feature(float_list=tf.train.FloatList(value=[row["response"]])),
                }
            )
        )
        return example.SerializeToString()

    return row_to_example


def run_naive(avro_path: str, out_dir: str) -> None:
    """Run the naive Beam pipeline on `avro_path`, writing `out_dir/part-00000-of-00001.tfrecord`."""
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    from beam_tensorize.runners.direct import direct_runner_for

    row_to_example = _make_row_to_example()
    options = PipelineOptions(list(_RUNNER_ARGS))  # on the CLI's runner: in-process, no Prism
    with beam.Pipeline(runner=direct_runner_for(options), options=options) as pipeline:
        _ = (
            pipeline
            | "ReadFromAvro" >> beam.io.ReadFromAvro(avro_path)
            | "ToExample" >> beam.Map(row_to_example)
            | "WriteToTFRecord"
            >> beam.io.WriteToTFRecord(
                os.path.join(out_dir, "part"), file_name_suffix=".tfrecord", num_shards=1
            )
        )


# --------------------------------------------------------------------------------------------
# Checking and reporting
# --------------------------------------------------------------------------------------------


def _tfrecord_files(folder: str) -> list[str]:
    files = glob.glob(os.path.join(folder, "**", "*.tfrecord*"), recursive=True)
    return sorted(f for f in files if os.path.isfile(f))


def count_records(folder: str) -> int:
    """Number of records in the TFRecord files under `folder` (read with `tf.data`)."""
    import tensorflow as tf

    total = 0
    for path in _tfrecord_files(folder):
        compression = "GZIP" if path.endswith(".gz") else ""
        dataset = tf.data.TFRecordDataset(path, compression_type=compression)
        total += int(dataset.reduce(tf.constant(0, tf.int64), lambda n, _: n + 1))
    return total


def _feature_kinds(folder: str) -> dict[str, str]:
    """{feature name: 'int64_list' | 'float_list' | 'bytes_list'} of the first record."""
    import tensorflow as tf

    for path in _tfrecord_files(folder):
        compression = "GZIP" if path.endswith(".gz") else ""
        for raw in tf.data.TFRecordDataset(path, compression_type=compression).take(1):
            example = tf.train.Example.FromString(raw.numpy())
            return {k: v.WhichOneof("kind") for k, v in example.features.feature.items()}
    return {}


def _clear(folder: str) -> None:
    shutil.rmtree(folder, ignore_errors=True)
    os.makedirs(folder)


def _parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description="Time our tensorize pipeline against the naive Beam pipeline (rows/s).",
    )
    parser.add_argument("--rows", type=int, default=200_000, help="Rows to generate (default 200000).")
    parser.add_argument(
        "--repeats", type=int, default=1, help="Runs of each pipeline, alternating; best is kept."
    )
    parser.add_argument("--codec", default="deflate", help="Avro codec of the input (default deflate).")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the data generator (default 0).")
    parser.add_argument(
        "--sync_interval",
        type=int,
        default=DEFAULT_SYNC_INTERVAL,
        help=f"Approximate bytes per Avro block (default {DEFAULT_SYNC_INTERVAL}, as Java Avro).",
    )
    parser.add_argument(
        "--workdir",
        default=None,
        help="Folder for the input and the outputs (kept). Default: a temporary folder, removed.",
    )
    args = parser.parse_args(argv)
    if args.rows < 1:
        parser.error("--rows must be at least 1")
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    return args


def _versions() -> str:
    import apache_beam
    import pyarrow
    import tensorflow

    python = ".".join(str(v) for v in sys.version_info[:3])
    return (
        f"Python {python}, Beam {apache_beam.__version__}, pyarrow {pyarrow.__version__}, "
        f"fastavro {fastavro.__version__}, TensorFlow {tensorflow.__version__}, {os.cpu_count()} CPUs"
    )


def _bench(args: argparse.Namespace, workdir: str) -> int:
    avro_path = os.path.join(workdir, "movielens.avro")
    print(f"generating {args.rows} rows ({args.codec}) -> {avro_path}", flush=True)
    start = time.perf_counter()
    generate_movielens_avro(
        avro_path, args.rows, seed=args.seed, codec=args.codec, sync_interval=args.sync_interval
    )
    size_mb = os.path.getsize(avro_path) / 1e6
    print(f"  {size_mb:.1f} MB in {time.perf_counter() - start:.1f} s (not timed)", flush=True)

    # Import both stacks before timing, so neither run pays the other's import cost.
    import apache_beam  # noqa: F401
    import tensorflow  # noqa: F401

    import pipelines.tensorize  # noqa: F401

    print(_versions(), flush=True)

    paths = {
        "ours": (run_ours, os.path.join(workdir, "ours")),
        "naive": (run_naive, os.path.join(workdir, "naive")),
    }
    times: dict[str, list[float]] = {name: [] for name in paths}
    cpu_times: dict[str, list[float]] = {name: [] for name in paths}
    for repeat in range(args.repeats):
        for name, (run, out_dir) in paths.items():
            _clear(out_dir)
            start, cpu_start = time.perf_counter(), time.process_time()
            run(avro_path, out_dir)
            elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu_start
            times[name].append(elapsed)
            cpu_times[name].append(cpu)
            print(
                f"  run {repeat + 1}/{args.repeats} {name:<5} {elapsed:8.2f} s  (cpu {cpu:.2f} s)", flush=True
            )

    failed = False
    counts = {}
    for name, (_, out_dir) in paths.items():
        counts[name] = count_records(out_dir)
        if counts[name] != args.rows:
            failed = True
    kinds = {name: _feature_kinds(out_dir) for name, (_, out_dir) in paths.items()}

    best = {name: min(t) for name, t in times.items()}
    rate = {name: args.rows / best[name] for name in paths}
    print()
    print(f"{args.rows} rows, best of {args.repeats}, DirectRunner in_memory, 1 worker")
    print(f"{'path':<8}{'seconds':>10}{'rows/s':>12}{'records':>10}")
    for name in paths:
        print(f"{name:<8}{best[name]:>10.2f}{rate[name]:>12,.0f}{counts[name]:>10}")
    print(f"ratio (ours / naive rows/s): {rate['ours'] / rate['naive']:.2f}")
    best_cpu = {name: min(t) for name, t in cpu_times.items()}
    print(
        f"ratio by CPU time (steadier on a shared machine): "
        f"{best_cpu['naive'] / best_cpu['ours']:.2f}  (ours {best_cpu['ours']:.2f} s, naive {best_cpu['naive']:.2f} s)"
    )

    if kinds["ours"] != kinds["naive"]:
        print(
            f"note: features differ: ours {sorted(kinds['ours'].items())}, "
            f"naive {sorted(kinds['naive'].items())}"
        )
    if failed:
        print(f"error: record counts {counts} differ from --rows {args.rows}", file=sys.stderr)
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Generate the input, time both pipelines and print the table; returns the exit code."""
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    args = _parse_args(argv)
    if args.workdir:
        os.makedirs(args.workdir, exist_ok=True)
        return _bench(args, args.workdir)
    with tempfile.TemporaryDirectory(prefix="bench_tensorize_") as workdir:
        return _bench(args, workdir)


if __name__ == "__main__":
    # Run as a script: make the repository root importable (for `pipelines`, `beam_tensorize`).
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.exit(main())
