"""Benchmark: `WriteTFRecord` / `ReadTFRecord` against the naive Beam way, in the same run.

* **write, ours** — `beam.Create(record batches) | WriteTFRecord(dir)` (vectorised Example
  encoding and framing); also with `partition_by=["day"]` (Hive folders, one shuffle).
* **write, naive** — `beam.Create(row dicts) | beam.Map(one tf.train.Example per row with
  nested constructors, SerializeToString) | beam.io.WriteToTFRecord`.
* **read, ours** — `ReadTFRecord(dir)` (schema inferred from a sample, then tfx_bsl's C++
  decoder into Arrow batches), counting rows.
* **read, naive** — `beam.io.ReadFromTFRecord | beam.Map(tf.train.Example.FromString, then a
  dict of Python values per row)`, counting rows.

Rows: `day` (int, 30 values), `user` (int64), `score` (float), `tags` (0-3 strings),
`embedding` (8 floats). Every pipeline runs on DirectRunner in memory with one worker,
`--repeats` times alternating; the best wall-clock time of each is printed as rows/s with the
ratio ours / naive. Timings are printed, never asserted.

    TF_CPP_MIN_LOG_LEVEL=2 python benchmarks/bench_tfrecord_io.py --rows 200000 --repeats 2
    python benchmarks/bench_tfrecord_io.py --rows 5000          # quick check
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import time

import apache_beam as beam
import pyarrow as pa
from apache_beam.options.pipeline_options import PipelineOptions

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from beam_tensorize.io import ReadTFRecord, WriteTFRecord
from beam_tensorize.runners.direct import direct_runner_for

_TAGS = ["news", "sport", "music", "film", "travel", "food"]


def make_rows(rows: int, seed: int) -> list[dict]:
    """Seeded rows (same arguments, same rows)."""
    rng = random.Random(seed)
    return [
        {
            "day": rng.randrange(30),
            "user": rng.randrange(1 << 40),
            "score": rng.random(),
            "tags": rng.sample(_TAGS, rng.randrange(4)),
            "embedding": [rng.random() for _ in range(8)],
        }
        for _ in range(rows)
    ]


def _batches(rows: list[dict], size: int = 8192) -> list[pa.RecordBatch]:
    schema = pa.schema(
        [
            ("day", pa.int64()),
            ("user", pa.int64()),
            ("score", pa.float32()),
            ("tags", pa.list_(pa.string())),
            ("embedding", pa.list_(pa.float32())),
        ]
    )
    return [pa.RecordBatch.from_pylist(rows[i : i + size], schema=schema) for i in range(0, len(rows), size)]


def _pipeline() -> beam.Pipeline:
    """A pipeline on the CLI's runner: the DirectRunner in-process (no Prism), one worker."""
    options = PipelineOptions(["--direct_running_mode=in_memory", "--direct_num_workers=1"])
    return beam.Pipeline(runner=direct_runner_for(options), options=options)


def _naive_example(row: dict) -> bytes:
    import tensorflow as tf

    feature = {
        "day": tf.train.Feature(int64_list=tf.train.Int64List(value=[row["day"]])),
        "user": tf.train.Feature(int64_list=tf.train.Int64List(value=[row["user"]])),
        "score": tf.train.Feature(float_list=tf.train.FloatList(value=[row["score"]])),
        "tags": tf.train.Feature(bytes_list=tf.train.BytesList(value=[t.encode() for t in row["tags"]])),
        "embedding": tf.train.Feature(float_list=tf.train.FloatList(value=row["embedding"])),
    }
    return tf.train.Example(features=tf.train.Features(feature=feature)).SerializeToString()


def _naive_parse(record: bytes) -> dict:
    import tensorflow as tf

    example = tf.train.Example.FromString(record)
    out = {}
    for name, feature in example.features.feature.items():
        kind = feature.WhichOneof("kind")
        out[name] = list(getattr(feature, kind).value) if kind else None
    return out


def _save_total(counts, path: str) -> None:
    """Sum a PCollection of row counts into a file (read back to check nothing was lost)."""

    def save(n: int) -> None:
        with open(path, "w") as f:
            f.write(str(n))

    _ = counts | beam.CombineGlobally(sum) | beam.Map(save)


def _timed(run) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    work = tempfile.mkdtemp(prefix="bench_tfrecord_")
    rows = make_rows(args.rows, args.seed)
    batches = _batches(rows)
    counted = os.path.join(work, "count")

    def write_ours(partitioned: bool) -> None:
        out = os.path.join(work, "ours_partitioned" if partitioned else "ours")
        with _pipeline() as p:
            _ = (
                p
                | beam.Create(batches)
                | WriteTFRecord(out, save_mode="overwrite", partition_by=["day"] if partitioned else ())
            )

    def write_naive() -> None:
        shutil.rmtree(os.path.join(work, "naive"), ignore_errors=True)
        with _pipeline() as p:
            _ = (
                p
                | beam.Create(rows)
                | beam.Map(_naive_example)
                | beam.io.WriteToTFRecord(os.path.join(work, "naive", "part"), num_shards=1)
            )

    def read_ours() -> None:
        with _pipeline() as p:
            _save_total(
                p | ReadTFRecord(os.path.join(work, "ours")) | beam.Map(lambda b: b.num_rows), counted
            )

    def read_naive() -> None:
        with _pipeline() as p:
            records = p | beam.io.ReadFromTFRecord(os.path.join(work, "naive", "part*"))
            _save_total(records | beam.Map(lambda r: len(_naive_parse(r)) and 1), counted)

    best = {name: float("inf") for name in ("write ours", "write ours partitioned", "write naive")}
    best.update({"read ours": float("inf"), "read naive": float("inf")})
    for _ in range(args.repeats):
        best["write ours"] = min(best["write ours"], _timed(lambda: write_ours(False)))
        best["write ours partitioned"] = min(best["write ours partitioned"], _timed(lambda: write_ours(True)))
        best["write naive"] = min(best["write naive"], _timed(write_naive))
        for name, read in (("read ours", read_ours), ("read naive", read_naive)):
            best[name] = min(best[name], _timed(read))
            with open(counted) as f:
                assert int(f.read()) == args.rows, f"{name} did not see every row"
    print(f"{args.rows} rows, best of {args.repeats}")
    for name, seconds in best.items():
        print(f"  {name:24s} {args.rows / seconds:>12,.0f} rows/s  ({seconds:.2f} s)")
    print(f"  write ratio ours / naive: {best['write naive'] / best['write ours']:.2f}x")
    print(
        f"  write ratio partitioned / naive (unpartitioned): {best['write naive'] / best['write ours partitioned']:.2f}x"
    )
    print(f"  read ratio ours / naive: {best['read naive'] / best['read ours']:.2f}x")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
