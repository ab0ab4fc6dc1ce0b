"""The fuzz tests of the package's native code, run for longer than the test suite runs them.

In the suite each fuzz test tries 150 random examples. This script runs the same tests in
rounds, each with a fresh Hypothesis seed and ``--examples`` examples per test, until
``--minutes`` have passed, and stops at the first failure with the command that replays it:

* the Avro decoder (C) against the fastavro path: random schemas (nested records, unions,
  maps, arrays of records, enums, fixed, dates and timestamps) and random projections, and the
  same files' first block overwritten or cut short (an error naming the block, or a valid
  batch equal to the reference's);
* the Example encoder (C) against protobuf's deterministic serialization;
* TFRecord files written and read back, every supported Arrow type;
* FarmHash and SipHash (C) against pyfarmhash and the numpy path.

Run from the repository root::

    python benchmarks/fuzz_native.py --minutes 10
    python benchmarks/fuzz_native.py --minutes 2 --only avro   # tests whose id contains "avro"

Exit status: 0 when every round passed, 1 at the first failing round.
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from collections.abc import Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from tests.fuzzing import FUZZ_EXAMPLES_ENV  # noqa: E402 - after the path is set

FUZZ_TESTS = (
    "tests/kernels/avro/test_native.py::test_random_schemas_decode_identically",
    "tests/kernels/avro/test_native.py::test_corrupt_blocks_of_random_schemas_never_crash",
    "tests/kernels/tfrecord/test_example_encoder.py::test_random_batches_match_deterministic_protobuf",
    "tests/io/test_tfrecord.py::test_round_trip_write_then_read_gives_the_same_table",
    "tests/kernels/features/test_native_hashes.py::test_random_arrays_hash_as_the_reference_paths_do",
)


def _command(tests: Sequence[str], seed: int) -> list[str]:
    return [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        f"--hypothesis-seed={seed}",
        *tests,
    ]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Run the native code's fuzz tests for a while.")
    parser.add_argument("--minutes", type=float, default=10.0, help="time to keep starting rounds (10)")
    parser.add_argument("--examples", type=int, default=2000, help="examples per test and round (2000)")
    parser.add_argument("--only", default="", help="run only the tests whose id contains this text")
    parser.add_argument("--seed", type=int, default=None, help="the first round's seed (random)")
    args = parser.parse_args(argv)
    if args.minutes <= 0 or args.examples < 1:
        parser.error("--minutes must be positive and --examples at least 1")
    tests = [t for t in FUZZ_TESTS if args.only in t]
    if not tests:
        parser.error(f"--only {args.only!r} matches none of: {', '.join(FUZZ_TESTS)}")
    env = dict(os.environ, **{FUZZ_EXAMPLES_ENV: str(args.examples), "TF_CPP_MIN_LOG_LEVEL": "2"})
    seed = random.randrange(2**32) if args.seed is None else args.seed
    deadline = time.monotonic() + 60 * args.minutes
    rounds = 0
    print(f"{len(tests)} fuzz tests, {args.examples} examples each per round, for {args.minutes:g} min")
    while rounds == 0 or time.monotonic() < deadline:
        started = time.monotonic()
        command = _command(tests, seed)
        done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
        rounds += 1
        took = time.monotonic() - started
        if done.returncode != 0:
            print(done.stdout[-20000:] + done.stderr[-5000:])
            replay = " ".join(command[1:])
            how = f"killed by signal {-done.returncode}" if done.returncode < 0 else "FAILED"
            print(f"round {rounds} (seed {seed}) {how} after {took:.0f} s; replay it with:")
            print(f"  {FUZZ_EXAMPLES_ENV}={args.examples} python {replay}")
            return 1
        print(f"round {rounds}: seed {seed}, {len(tests) * args.examples} examples passed in {took:.0f} s")
        seed = (seed + 1) % 2**32
    print(f"all {rounds} rounds passed: {rounds * len(tests) * args.examples} examples")
    return 0


if __name__ == "__main__":
    sys.exit(main())
