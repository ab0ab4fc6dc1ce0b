"""The TFRecord sink and source, and the whole CLI, on Google Cloud Storage — a real GCS JSON
API served by `gcp-storage-emulator` (with GCS's upload preconditions: tests/gcs_emulator.py) on 127.0.0.1 (Beam's GCS file system connects to it
anonymously through `STORAGE_EMULATOR_HOST`)."""

from __future__ import annotations

import json
import time
import urllib.request

import apache_beam as beam
import pyarrow as pa
import pytest
from apache_beam.io.filesystems import FileSystems

from beam_tensorize.io import ReadTFRecord, WriteTFRecord
from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
from pipelines.tensorize import main
from tests.conftest import local_server, tensor_lists
from tests.e2e.test_s3 import assert_commit_lock_is_exclusive, assert_sample_layout
from tests.io.test_tfrecord import _collected, _load

BUCKET = "lake"


@pytest.fixture(scope="module")
def gcs():
    """A GCS emulator on a free local port with one bucket; yields a function listing objects."""
    from apache_beam.internal.gcp import auth

    emulator = ("tests.gcs_emulator", "start", "--host=127.0.0.1", "--port={port}", "--in-memory",
                f"--default-bucket={BUCKET}")  # fmt: skip
    with local_server(*emulator) as (port, _), pytest.MonkeyPatch.context() as patch:
        url = f"http://127.0.0.1:{port}"
        patch.setenv("STORAGE_EMULATOR_HOST", url)
        # Beam looks for credentials once per process, retrying for ~25 s on a machine that has
        # none; the emulator needs none, so the client is anonymous from the start.
        patch.setattr(auth._Credentials, "_credentials_init", True)
        patch.setattr(auth._Credentials, "_credentials", None)
        for _ in range(100):
            try:
                urllib.request.urlopen(f"{url}/storage/v1/b/{BUCKET}", timeout=1).read()
                break
            except Exception:  # noqa: BLE001 - not listening yet
                time.sleep(0.1)

        def objects(prefix: str) -> dict[str, int]:
            found = FileSystems.match([f"gs://{BUCKET}/{prefix}**"])[0].metadata_list
            return {m.path[len(f"gs://{BUCKET}/{prefix}") :]: m.size_in_bytes for m in found}

        yield objects


def _rows(path: str) -> list[dict]:
    with beam.Pipeline() as p:
        saved = _collected(p | ReadTFRecord(path) | beam.FlatMap(lambda b: b.to_pylist()))
    return _load(saved)


def test_partitioned_write_overwrite_partitions_and_read_back_on_gcs(gcs):
    batch = pa.RecordBatch.from_pydict({"day": [1, 2, 2], "x": [0.5, 1.5, 2.5]})
    with beam.Pipeline() as p:
        _ = (
            p
            | beam.Create([batch])
            | WriteTFRecord(f"gs://{BUCKET}/events", partition_by=["day"], num_shards=2)
        )
    objects = gcs("events/")
    assert objects["_SUCCESS"] == 0
    folders = [k.split("/")[0] for k in objects if k != "_SUCCESS"]
    assert {f: folders.count(f) for f in folders} == {"day=1": 1, "day=2": 2}  # shards holding records
    assert all(k.endswith("-of-00002.tfrecord") for k in objects if k != "_SUCCESS")
    with beam.Pipeline() as p:
        _ = (
            p
            | beam.Create([pa.RecordBatch.from_pydict({"day": [2], "x": [9.5]})])
            | WriteTFRecord(f"gs://{BUCKET}/events", partition_by=["day"], save_mode="overwrite_partitions")
        )
    assert sorted((r["day"], r["x"]) for r in _rows(f"gs://{BUCKET}/events")) == [(1, 0.5), (2, 9.5)]
    assert not [k for k in gcs("events/") if "_temporary" in k]


def test_the_cli_writes_its_whole_layout_to_gcs_and_refuses_a_second_run(gcs, capsys):
    out = f"gs://{BUCKET}/tensorized"
    assert main(["--output", out, "--partition_by", "numGenres", "--quiet"]) == 0
    objects = gcs("tensorized/")
    assert_sample_layout(objects, _rows(f"{out}/trainingData"))
    assert not [k for k in objects if "_temporary" in k]  # the run's lock and temporary files are gone
    capsys.readouterr()
    args = ["--input", SAMPLE_AVRO, "--config", SAMPLE_CONFIG, "--output", out]
    assert main(args) == 2  # save mode error: the split folder holds data (before reading)
    assert "already holds" in capsys.readouterr().err
    assert gcs("tensorized/") == objects


def test_from_parquet_and_the_serving_preprocessor_read_gcs_through_pyarrow(gcs):
    """`Dataset.from_parquet` and `Preprocessor.from_output` on gs:// (the emulator from
    `STORAGE_EMULATOR_HOST`, as the Google Cloud clients take it)."""
    import fastavro
    import pyarrow.parquet as pq

    from beam_tensorize.kernels.tfrecord.framing import iter_tfrecords
    from beam_tensorize.serving import Preprocessor
    from beam_tensorize.tf import Dataset

    with FileSystems.create(f"gs://{BUCKET}/tables/t.parquet") as f:
        pq.write_table(pa.table({"id": [1, 2, 3], "tags": [["a"], [], ["b", "c"]]}), f)
    (batch,) = list(Dataset.from_parquet(f"gs://{BUCKET}/tables/t.parquet", batch_size=10))
    assert batch["id"].numpy().tolist() == [1, 2, 3]
    assert tensor_lists(batch["tags"]) == [[b"a"], [], [b"b", b"c"]]  # a tf.SparseTensor

    out = f"gs://{BUCKET}/served"
    assert main(["--output", out, "--quiet"]) == 0
    with FileSystems.open(f"{out}/trainingData/part-00000-of-00001.tfrecord") as f:
        written = list(iter_tfrecords(f, "part-00000-of-00001.tfrecord"))
    with open(SAMPLE_AVRO, "rb") as f:
        records = list(fastavro.reader(f))
    assert Preprocessor.from_output(out).serialize(records) == written


def test_the_commit_lock_on_gcs_is_a_generation_precondition(gcs):
    """Two runs committing into one GCS output: the lock object is created only if absent
    (`ifGenerationMatch=0` through Beam's GCS client), so the second waits until the first is
    done; a dead run's lock is taken over by one run only (`ifGenerationMatch=<its generation>`).
    (The emulator runs with GCS's precondition check added: tests/gcs_emulator.py.)"""
    from beam_tensorize.job.files import read_versioned

    def lock_run() -> str | None:
        found = read_versioned(f"gs://{BUCKET}/locked/_commit.lock")
        return None if found is None else json.loads(found[0])["run"]

    assert_commit_lock_is_exclusive(f"gs://{BUCKET}/locked", lock_run)
