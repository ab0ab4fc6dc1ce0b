"""Benchmark: `encode_examples` and `frame_records`, native (C extension) against numpy / pyarrow.

Two sets of seeded synthetic batches, `--batch-rows` rows each:

* **movielens** — the feature batches the MovieLens job (`benchmarks/movielens_config.json`)
  hands the TFRecord writer: every column a `large_list` (`userId`, `movieId`, `numGenres`: one
  int64; `genres`: 1-6 strings of the 18 genres; `movieLatentFactors`: 30 float32; `response`:
  one float32).
* **scalars** — the same values as plain columns (`int64`, `float32`, `string`) with 10 % nulls,
  plus a `float32` list column with null and empty lists.

Each step runs in this process on the same batches, with the C extension and then with
`BEAM_TENSORIZE_TFRECORD_ENCODER=python` (the fallback), alternating, `--repeats` times; the
best CPU time (`time.process_time`) of each is printed as seconds per 1M rows with the ratio
fallback / native. The outputs of the two paths are compared byte for byte (a difference is
printed and makes the exit status 1). Timings are printed, never asserted.

    TF_CPP_MIN_LOG_LEVEL=2 python benchmarks/bench_encode.py --rows 1000000 --repeats 3
    python benchmarks/bench_encode.py --rows 50000 --repeats 1      # quick check
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable, Sequence

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # idle BLAS threads would count as CPU time

import numpy as np
import pyarrow as pa

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from beam_tensorize.kernels.tfrecord import native as tfrecord_native
from beam_tensorize.kernels.tfrecord.example_encoder import encode_examples
from beam_tensorize.kernels.tfrecord.framing import NATIVE_ENV, frame_records

GENRES = [
    g.lower()
    for g in (
        "Action Adventure Animation Children Comedy Crime Documentary Drama Fantasy Film-Noir Horror "
        "IMAX Musical Mystery Romance Sci-Fi Thriller War"
    ).split()
]
_NUM_GENRES_WEIGHTS = np.array([62, 87, 80, 49, 19, 3], np.float64)


def _large_list(values: pa.Array, counts: np.ndarray, valid: np.ndarray | None = None) -> pa.Array:
    offsets = np.zeros(len(counts) + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    mask = None if valid is None else pa.array(~valid)
    return pa.LargeListArray.from_arrays(pa.array(offsets), values, mask=mask)


def movielens_batch(rows: int, rng: np.random.Generator) -> pa.RecordBatch:
    """One batch shaped like the MovieLens job's feature batches."""
    ones = np.ones(rows, np.int64)
    num_genres = rng.choice(np.arange(1, 7), rows, p=_NUM_GENRES_WEIGHTS / _NUM_GENRES_WEIGHTS.sum())
    genres = np.array(GENRES, object)[rng.integers(0, len(GENRES), int(num_genres.sum()))]
    latent = rng.normal(0.0, 0.35, rows * 30).astype(np.float32)
    columns = {
        "userId": _large_list(pa.array(rng.integers(1, 6041, rows)), ones),
        "movieId": _large_list(pa.array(rng.integers(1, 131_263, rows)), ones),
        "genres": _large_list(pa.array(genres.tolist(), pa.large_binary()), num_genres),
        "movieLatentFactors": _large_list(pa.array(latent), np.full(rows, 30)),
        "numGenres": _large_list(pa.array(num_genres.astype(np.int64)), ones),
        "response": _large_list(pa.array(rng.integers(1, 11, rows).astype(np.float32) / 2), ones),
    }
    return pa.RecordBatch.from_pydict(columns)


def scalars_batch(rows: int, rng: np.random.Generator) -> pa.RecordBatch:
    """Plain scalar columns with nulls, and a float list column with null and empty lists."""

    def nulls() -> np.ndarray:
        return rng.random(rows) < 0.1

    counts = rng.integers(0, 9, rows)
    list_valid = rng.random(rows) >= 0.1
    counts[~list_valid] = 0
    columns = {
        "userId": pa.array(rng.integers(1, 6041, rows), mask=nulls()),
        "movieId": pa.array(rng.integers(-(2**40), 2**40, rows), mask=nulls()),
        "genre": pa.array(np.array(GENRES, object)[rng.integers(0, len(GENRES), rows)], mask=nulls()),
        "score": pa.array(rng.random(rows).astype(np.float32), mask=nulls()),
        "weights": _large_list(
            pa.array(rng.random(int(counts.sum())).astype(np.float32)), counts, list_valid
        ),
    }
    return pa.RecordBatch.from_pydict(columns)


def make_batches(kind: str, rows: int, batch_rows: int, seed: int) -> list[pa.RecordBatch]:
    rng = np.random.default_rng(seed)
    make = movielens_batch if kind == "movielens" else scalars_batch
    return [make(min(batch_rows, rows - start), rng) for start in range(0, rows, batch_rows)]


def _cpu(step: Callable[[], list], native: bool) -> tuple[float, list]:
    if native:
        os.environ.pop(NATIVE_ENV, None)
    else:
        os.environ[NATIVE_ENV] = "python"
    try:
        start = time.process_time()
        out = step()
        return time.process_time() - start, out
    finally:
        os.environ.pop(NATIVE_ENV, None)


def _same(a: list, b: list) -> bool:
    if len(a) != len(b):
        return False
    return all((x.equals(y) if isinstance(x, pa.Array) else x == y) for x, y in zip(a, b))


def _bench_set(kind: str, args: argparse.Namespace) -> tuple[list[tuple[str, float, float]], bool]:
    batches = make_batches(kind, args.rows, args.batch_rows, args.seed)
    encoded = [encode_examples(b) for b in batches]

    def encode() -> list:
        return [encode_examples(b) for b in batches]

    def frame() -> list:
        # The job frames each batch's records and writes them; only the last output is kept
        # here, as the writer does not keep them either.
        return [len(frame_records(records)) for records in encoded]

    best: dict[tuple[str, bool], float] = {}
    identical = True
    for name, step in (("encode_examples", encode), ("frame_records", frame)):
        for _ in range(args.repeats):
            outputs = {}
            for native in (True, False):
                cpu, outputs[native] = _cpu(step, native)
                best[name, native] = min(best.get((name, native), cpu), cpu)
            if not _same(outputs[True], outputs[False]):
                identical = False
    if not all(frame_records(r) == _fallback_frame(r) for r in encoded):
        identical = False
    per_million = 1e6 / args.rows
    table = [
        (name, best[name, True] * per_million, best[name, False] * per_million)
        for name in ("encode_examples", "frame_records")
    ]
    return table, identical


def _fallback_frame(records: pa.Array) -> bytes:
    os.environ[NATIVE_ENV] = "python"
    try:
        return frame_records(records)
    finally:
        os.environ.pop(NATIVE_ENV, None)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1_000_000, help="Rows per batch set (default 1000000).")
    parser.add_argument("--batch-rows", type=int, default=8192, help="Rows per batch (default 8192).")
    parser.add_argument("--repeats", type=int, default=3, help="Runs of each step and path (best kept).")
    parser.add_argument("--seed", type=int, default=0, help="Seed of the batches (default 0).")
    parser.add_argument(
        "--sets", default="movielens,scalars", help="Batch sets to run: movielens, scalars (default both)."
    )
    args = parser.parse_args(argv)
    if tfrecord_native.extension() is None:
        print("the C extension _tfrecordencode is not built: both columns time the fallback")
    status = 0
    print(f"\n{args.rows} rows per set, batches of {args.batch_rows}, best of {args.repeats}; "
          "CPU s per 1M rows; ratio = fallback / native\n")  # fmt: skip
    print("| set | step | native | fallback | ratio |")
    print("|---|---|---|---|---|")
    for kind in args.sets.split(","):
        rows, identical = _bench_set(kind.strip(), args)
        for name, native, fallback in rows:
            print(f"| {kind} | {name} | {native:.3f} | {fallback:.3f} | {fallback / native:.1f} |")
        if not identical:
            print(f"| {kind} | OUTPUTS DIFFER between native and fallback | | | |")
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
