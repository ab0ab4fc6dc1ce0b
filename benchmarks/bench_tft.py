"""Benchmark: our `tensorize` job against TensorFlow Transform doing the same vocabulary and
hashing work, on the same Avro input, in the same run.

* **ours** — the CLI in-process (`pipelines.tensorize.main`, DirectRunner in-memory, one
  worker) with `benchmarks/tft_config.json`: the bundled config without its name-term-value
  vector (TF Transform has no counterpart), i.e. userId, movieId, lower-cased genres, 30 latent
  factors, numGenres, genreIds (a feature list), movieBucket (hashed movieId, 1000 buckets),
  response. Train mode: the input is read once, its extracted batches kept on disk while the
  feature lists are counted (the default for a local output).
* **tft** — `tft_beam.AnalyzeAndTransformDataset` with `output_record_batches=True` on the same
  DirectRunner settings: the Avro input is read into Arrow record batches by our reader and
  its raw columns (the same `columnExpr`s, extracted by `ExtractFeatures`) are handed to TF
  Transform (Arrow in); `preprocessing_fn` computes the same tensors with
  `tft.compute_and_apply_vocabulary` and `tft.hash_strings`; the transformed record batches
  (Arrow out) are encoded with tfx_bsl's `RecordBatchToExamplesEncoder` and written with
  `WriteToTFRecord`. Only the transform differs between the two pipelines.

ours also runs with `--report none`: the same work as TF Transform's, without the run report's
statistics and page (which TF Transform does not compute); both ratios are printed.

Both sides' modules are imported before any timing, so each time is the pipeline's own (graph
building and running), not Python's imports.

TF Transform 1.21 installs beside this package's TensorFlow / Beam / tfx-bsl (the `test`
extra holds it), so both run in the project's virtual environment:

    .venv/bin/pip install -e '.[test]'
    TF_CPP_MIN_LOG_LEVEL=2 .venv/bin/python benchmarks/bench_tft.py --rows 200000

Both outputs are read back with `tf.data` and must hold `--rows` records. Timings are printed,
never asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.dirname(HERE))

from bench_tensorize import count_records, generate_movielens_avro  # noqa: E402

TFT_CONFIG = os.path.join(HERE, "tft_config.json")
_RUNNER = ["--runner", "DirectRunner", "--direct_running_mode", "in_memory", "--direct_num_workers", "1"]


def run_ours(avro: str, out: str, report: str = "html") -> None:
    from pipelines.tensorize import main

    code = main(["--input", avro, "--config", TFT_CONFIG, "--output", out, "--save_mode", "overwrite",
                 "--quiet", "--report", report, *_RUNNER])  # fmt: skip
    if code:
        raise SystemExit(f"ours failed with exit code {code}")


def _raw_columns():
    """The raw inputs TF Transform gets: the config's columns before any vocabulary or hashing."""
    from beam_tensorize.config import parse_config

    def feature(name, expr, dtype, shape):
        return {
            "inputFeatureInfo": {"columnExpr": expr},
            "outputTensorInfo": {"name": name, "dtype": dtype, "shape": shape},
        }

    return parse_config({"features": [
        feature("userId", "userId", "long", [-1]),
        feature("movieId", "movieId", "long", []),
        feature("terms", "genreFeatures.term", "string", [-1]),
        feature("latent", "movieLatentFactorFeatures.value", "float", [30]),
        feature("response", "response", "double", []),
    ]})  # fmt: skip


def _as_lists(batch):
    """Scalar columns as lists of one value (TFXIO reads every tensor from a list column)."""
    import pyarrow as pa

    columns = []
    for column in batch.columns:
        if not (pa.types.is_list(column.type) or pa.types.is_large_list(column.type)):
            offsets = pa.array(range(len(column) + 1), pa.int32())
            column = pa.ListArray.from_arrays(offsets, column)
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, names=batch.schema.names)


def _tensor_representations():
    from tensorflow_metadata.proto.v0 import schema_pb2

    def dense(column, *dims):
        rep = schema_pb2.TensorRepresentation()
        rep.dense_tensor.column_name = column
        for d in dims:
            rep.dense_tensor.shape.dim.add().size = d
        return rep

    def varlen(column):
        rep = schema_pb2.TensorRepresentation()
        rep.varlen_sparse_tensor.column_name = column
        return rep

    def ragged(column):
        rep = schema_pb2.TensorRepresentation()
        rep.ragged_tensor.feature_path.step.append(column)
        return rep

    return {
        "userId": varlen("userId"),
        "movieId": dense("movieId"),
        "terms": ragged("terms"),
        "latent": dense("latent", 30),
        "response": dense("response"),
    }


def preprocessing_fn(inputs):
    import tensorflow as tf
    import tensorflow_transform as tft

    terms = inputs["terms"]
    return {
        "userId": inputs["userId"],
        "movieId": inputs["movieId"],
        "genres": tf.strings.lower(terms),
        "movieLatentFactors": inputs["latent"],
        "numGenres": tf.cast(terms.row_lengths(), tf.int64),
        "genreIds": tft.compute_and_apply_vocabulary(terms),
        "movieBucket": tft.hash_strings(tf.strings.as_string(inputs["movieId"]), 1000),
        "response": tf.cast(inputs["response"], tf.float32),  # Examples hold 32-bit floats
    }


def run_tft(avro: str, out: str, temp: str) -> None:
    import apache_beam as beam
    import pyarrow as pa
    import tensorflow_transform.beam as tft_beam
    from apache_beam.options.pipeline_options import PipelineOptions
    from tfx_bsl.coders.example_coder import RecordBatchToExamplesEncoder
    from tfx_bsl.tfxio import tensor_adapter

    from beam_tensorize.io import ReadAvro
    from beam_tensorize.transforms import ExtractFeatures

    raw = _raw_columns()
    schema = pa.schema([
        ("userId", pa.list_(pa.int64())), ("movieId", pa.list_(pa.int64())), ("terms", pa.list_(pa.string())),
        ("latent", pa.list_(pa.float32())), ("response", pa.list_(pa.float64())),
    ])  # fmt: skip
    config = tensor_adapter.TensorAdapterConfig(schema, _tensor_representations())

    class Encode(beam.DoFn):
        def setup(self):
            self._encoder = None

        def process(self, element):
            batch = element[0] if isinstance(element, tuple) else element
            if self._encoder is None:
                self._encoder = RecordBatchToExamplesEncoder()
            yield from self._encoder.encode(batch)

    from beam_tensorize.runners.direct import direct_runner_for

    options = PipelineOptions(_RUNNER)  # on the CLI's runner: in-process, no Prism
    with (
        beam.Pipeline(runner=direct_runner_for(options), options=options) as p,
        tft_beam.Context(temp_dir=temp),
    ):
        batches = (
            p
            | ReadAvro(
                avro, columns=["userId", "movieId", "genreFeatures", "movieLatentFactorFeatures", "response"]
            )
            | ExtractFeatures(raw)
            | beam.Map(_as_lists)
            | beam.Map(lambda b: b.cast(schema))
        )
        (transformed, _), _ = (batches, config) | tft_beam.AnalyzeAndTransformDataset(
            preprocessing_fn, output_record_batches=True
        )
        _ = (
            transformed
            | beam.ParDo(Encode())
            | beam.io.WriteToTFRecord(os.path.join(out, "part"), file_name_suffix=".tfrecord", num_shards=1)
        )


def _import_both() -> None:
    """Import what each side needs before any timing: Beam and this package for ours,
    TensorFlow, TF Transform and tfx_bsl for TF Transform."""
    import tensorflow_transform.beam  # noqa: F401
    from tfx_bsl.coders import example_coder  # noqa: F401

    import pipelines.tensorize  # noqa: F401


#: ours as a user runs it (with its run report), ours doing only what TF Transform does (no
#: statistics, no page), and TF Transform.
_SIDES = ("ours", "ours --report none", "tft")


def _cpu_seconds() -> float:
    """User and system time of this process (all its threads) and of its waited-for children."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--workdir", default=None)
    args = parser.parse_args(argv)
    workdir = args.workdir or tempfile.mkdtemp(prefix="bench_tft-")
    os.makedirs(workdir, exist_ok=True)
    avro = os.path.join(workdir, f"movielens-{args.rows}.avro")
    if not os.path.exists(avro):
        generate_movielens_avro(avro, args.rows)
    _import_both()  # the times below are after the imports, for both sides alike
    best: dict[str, float] = {}
    best_cpu: dict[str, float] = {}
    for _ in range(args.repeats):
        for name in _SIDES:
            out = os.path.join(workdir, "out-" + name.split()[0])
            shutil.rmtree(out, ignore_errors=True)
            start, cpu_start = time.perf_counter(), _cpu_seconds()
            if name == "tft":
                run_tft(avro, out, os.path.join(workdir, "tft-temp"))
            else:
                run_ours(avro, out, "none" if name.endswith("none") else "html")
            took, cpu = time.perf_counter() - start, _cpu_seconds() - cpu_start
            records = count_records(out if name == "tft" else os.path.join(out, "trainingData"))
            if records != args.rows:
                raise SystemExit(f"{name} wrote {records} records, not {args.rows}")
            best[name] = min(best.get(name, took), took)
            best_cpu[name] = min(best_cpu.get(name, cpu), cpu)
            print(
                f"{name:24} {took:7.1f} s  {args.rows / took:10,.0f} rows/s   CPU {cpu:6.1f} s"
                f"  {args.rows / cpu:10,.0f} rows per CPU s",
                flush=True,
            )
    print(
        f"\nbest of {args.repeats}: tft {args.rows / best['tft']:,.0f} rows/s, {args.rows / best_cpu['tft']:,.0f} per CPU s"
    )
    for name in _SIDES[:2]:
        print(
            f"  {name:24} {args.rows / best[name]:10,.0f} rows/s; / tft = {best['tft'] / best[name]:.1f}x wall, "
            f"{best_cpu['tft'] / best_cpu[name]:.1f}x CPU"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
