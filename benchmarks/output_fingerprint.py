"""Fingerprint the job's outputs, to show that a change keeps them byte for byte.

Runs the `tensorize` CLI in-process on fixed inputs with a fixed set of settings (every output
format, compressions, `num_shards`, `max_records_per_file`, partition folders; the bundled
sample, the Avro2TF MovieLens config and, with `--rows`, a generated MovieLens-like input) and
writes the SHA-256 of every output file into `--out` (the HTML page and the run log left out,
the run report's JSON without its `timings` and with the checkout's and the work folder's paths
masked: they hold times and the input's full path). The inputs are read from one fixed folder
(`INPUTS`, in the system's temporary folder), so that two checkouts read the same paths. Run it
before a change and after, then compare:

    python benchmarks/output_fingerprint.py --out /tmp/before.txt
    (change the code)
    python benchmarks/output_fingerprint.py --out /tmp/after.txt --compare /tmp/before.txt

`--compare` prints the files whose bytes differ (or that appear or vanish) and exits 1 if any
does. `--rows 1000000` adds a 1M-row generated input (~1 minute per case on one core).
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, ROOT)

#: (case name, input: "sample" / "movielens" / "generated", CLI flags).
CASES = [
    ("tfrecord", "sample", []),
    ("tfrecord_gzip_3", "sample", ["--compression", "gzip", "--num_shards", "3"]),
    ("tfrecord_max70", "sample", ["--max_records_per_file", "70"]),
    ("parquet", "sample", ["--output_format", "parquet"]),
    (
        "parquet_zstd_2",
        "sample",
        ["--output_format", "parquet", "--num_shards", "2", "--compression", "zstd"],
    ),
    ("avro", "sample", ["--output_format", "avro"]),
    (
        "avro_deflate_2",
        "sample",
        ["--output_format", "avro", "--num_shards", "2", "--compression", "deflate"],
    ),
    (
        "partitions",
        "sample",
        ["--partition_field_name", "movieId", "--num_partitions", "3", "--output_format", "parquet"],
    ),
    ("movielens", "movielens", []),
    ("movielens_parquet", "movielens", ["--output_format", "parquet"]),
    ("movielens_avro", "movielens", ["--output_format", "avro"]),
    ("generated", "generated", []),
    ("generated_parquet", "generated", ["--output_format", "parquet"]),
]
#: Avro2TF's MovieLens config (its input is the bundled sample, byte for byte).
MOVIELENS_CONFIG = os.path.join(
    ROOT, "tests", "compat", "avro2tf", "data", "configs", "avro2tf_config_movielens.json"
)
#: Files whose bytes hold times (left out).
VOLATILE = (".html", ".log")


#: Where the inputs are read from: a fixed folder, so that runs from two checkouts (before and
#: after a change) read the same paths. An input's path is part of its batches' source tags,
#: which choose the first shard of a batch's records (`kernels/output/shards.py`).
INPUTS = os.path.join(tempfile.gettempdir(), "beam_tensorize-fingerprint-inputs")


def _copy_sample() -> tuple[str, str]:
    """The bundled sample's Avro file and config, copied into `INPUTS`."""
    from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG

    copies = tuple(os.path.join(INPUTS, os.path.basename(path)) for path in (SAMPLE_AVRO, SAMPLE_CONFIG))
    for source, copy in zip((SAMPLE_AVRO, SAMPLE_CONFIG), copies):
        shutil.copyfile(source, copy)
    return copies


def _inputs(kind: str, sample: str, config: str, generated: str | None) -> list[str]:
    if kind == "sample":  # the bundled sample run
        return ["--input", sample, "--config", config]
    if kind == "movielens":
        return ["--input", sample, "--config", MOVIELENS_CONFIG]
    return ["--input", generated, "--config", config]


def fingerprints(folder: str, work: str) -> dict[str, str]:
    """`{relative path: sha256}` of every file under `folder` but the volatile ones (`work`: the
    outputs' folder, masked in the report as the checkout and the inputs' folder are)."""
    found = {}
    for root, _, files in os.walk(folder):
        for name in files:
            if name.endswith(VOLATILE):
                continue
            path = os.path.join(root, name)
            relative = os.path.relpath(path, folder)
            with open(path, "rb") as f:
                data = f.read()
            if relative.startswith("report" + os.sep) and name.endswith(".json"):  # its timings vary
                report = json.loads(data)
                report.pop("timings", None)
                data = (
                    json.dumps(report, sort_keys=True)
                    .replace(ROOT, "<checkout>")
                    .replace(work, "<work>")
                    .replace(INPUTS, "<inputs>")
                    .encode()
                )
            found[relative] = hashlib.sha256(data).hexdigest()
    return dict(sorted(found.items()))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="Where to write the fingerprints (one line per file).")
    parser.add_argument("--compare", help="Fingerprints of an earlier run to compare with.")
    parser.add_argument(
        "--rows", type=int, default=0, help="Rows of a generated input (0: no generated cases)."
    )
    parser.add_argument("--workdir", help="Keep the outputs here (default: a temporary folder, removed).")
    args = parser.parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    from benchmarks.bench_tensorize import generate_movielens_avro
    from pipelines.tensorize import main as tensorize

    lines = []
    with contextlib.ExitStack() as stack:
        work = args.workdir or stack.enter_context(tempfile.TemporaryDirectory())
        os.makedirs(work, exist_ok=True)
        os.makedirs(INPUTS, exist_ok=True)
        sample, config = _copy_sample()
        generated = None
        if args.rows:
            generated = os.path.join(INPUTS, f"generated-{args.rows}.avro")
            if not os.path.exists(generated):
                generate_movielens_avro(generated, rows=args.rows, seed=0)
        for name, kind, flags in CASES:
            if kind == "generated" and not generated:
                continue
            output = os.path.join(work, name)
            argv = [*_inputs(kind, sample, config, generated), *flags, "--output", output, "--save_mode", "overwrite",
                    "--report", "json", "--quiet"]  # fmt: skip
            with contextlib.redirect_stdout(io.StringIO()):
                code = tensorize(argv)
            if code:
                print(f"{name}: the run failed (exit {code})", file=sys.stderr)
                return 2
            lines += [f"{digest}  {name}/{path}" for path, digest in fingerprints(output, work).items()]
            print(f"{name}: {sum(1 for line in lines if f'  {name}/' in line)} files", file=sys.stderr)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    if not args.compare:
        return 0
    with open(args.compare) as f:
        before = dict(reversed(line.split("  ", 1)) for line in f.read().splitlines() if line)
    after = dict(reversed(line.split("  ", 1)) for line in lines)
    differ = sorted(p for p in before.keys() | after.keys() if before.get(p) != after.get(p))
    for path in differ:
        state = "new" if path not in before else "gone" if path not in after else "changed"
        print(f"{state}: {path}")
    print(f"{len(after)} files, {len(differ)} differ from {args.compare}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
