"""The TFRecord sink and source, and the whole CLI, on S3 — a real S3 API served by moto."""

from __future__ import annotations

import json
import time

import apache_beam as beam
import boto3
import pyarrow as pa
import pytest
from apache_beam.io.filesystems import FileSystems
from apache_beam.options.pipeline_options import PipelineOptions

from beam_tensorize.io import ReadTFRecord, WriteTFRecord
from beam_tensorize.sample import SAMPLE_AVRO
from pipelines.tensorize import main
from tests.conftest import local_server, tensor_lists
from tests.io.test_tfrecord import _collected, _load

BUCKET = "lake"


@pytest.fixture(scope="module")
def s3():
    """A moto S3 server on a free local port, with one bucket; yields the Beam S3 flags."""
    with local_server("moto.server", "-H", "127.0.0.1", "-p", "{port}") as (port, _):
        url = f"http://127.0.0.1:{port}"
        client = boto3.client(
            "s3",
            endpoint_url=url,
            aws_access_key_id="key",
            aws_secret_access_key="secret",
            region_name="us-east-1",
        )
        for _ in range(100):
            try:
                client.create_bucket(Bucket=BUCKET)
                break
            except Exception:  # noqa: BLE001 - not listening yet
                time.sleep(0.1)
        flags = [
            f"--s3_endpoint_url={url}",
            "--s3_access_key_id=key",
            "--s3_secret_access_key=secret",
            "--s3_region_name=us-east-1",
        ]
        FileSystems.set_options(PipelineOptions(flags))
        try:
            yield {"flags": flags, "client": client}
        finally:
            FileSystems.set_options(None)


def _objects(client, prefix):
    listed = client.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
    return {item["Key"][len(prefix) :]: item["Size"] for item in listed}


def _rows(path, flags):
    read = ReadTFRecord(path)
    with beam.Pipeline(options=PipelineOptions(flags)) as p:
        saved = _collected(p | read | beam.FlatMap(lambda b: b.to_pylist()))
    return _load(saved)


def test_partitioned_write_with_empty_files_and_read_back_on_s3(s3):
    flags, client = s3["flags"], s3["client"]
    batch = pa.RecordBatch.from_pydict({"day": [1, 2, 2], "x": [0.5, 1.5, 2.5]})
    with beam.Pipeline(options=PipelineOptions(flags)) as p:
        _ = (
            p
            | beam.Create([batch])
            | WriteTFRecord(f"s3://{BUCKET}/events", partition_by=["day"], num_shards=2)
        )
    objects = _objects(client, "events/")
    assert sorted(objects)[0] == "_SUCCESS" and len(objects) == 4  # one file for day=1, two for day=2
    assert sorted(k for k in objects if k.startswith("day=2/")) == [
        "day=2/part-00000-of-00002.tfrecord",
        "day=2/part-00001-of-00002.tfrecord",
    ]
    assert objects["_SUCCESS"] == 0  # an empty object: one plain PUT
    with beam.Pipeline(options=PipelineOptions(flags)) as p:
        _ = (
            p
            | beam.Create([pa.RecordBatch.from_pydict({"day": [2], "x": [9.5]})])
            | WriteTFRecord(f"s3://{BUCKET}/events", partition_by=["day"], save_mode="overwrite_partitions")
        )
    assert sorted((r["day"], r["x"]) for r in _rows(f"s3://{BUCKET}/events", flags)) == [(1, 0.5), (2, 9.5)]
    # Unpartitioned, every shard exists even when empty (a 0-byte TFRecord file).
    with beam.Pipeline(options=PipelineOptions(flags)) as p:
        _ = p | beam.Create([batch.slice(0, 1)]) | WriteTFRecord(f"s3://{BUCKET}/few", num_shards=3)
    sizes = _objects(client, "few/")
    assert sorted(sizes) == ["_SUCCESS"] + [f"part-0000{i}-of-00003.tfrecord" for i in range(3)]
    assert sorted(sizes.values()).count(0) == 3  # _SUCCESS and two empty shards


def assert_sample_layout(objects: dict[str, int], rows: list[dict]) -> None:
    """The objects of the bundled sample's output partitioned by `numGenres` (paths below the
    output -> sizes) and its records read back."""
    assert objects["_SUCCESS"] == objects["trainingData/_SUCCESS"] == 0
    assert objects["deadLetters/trainingData/part-00000-of-00001.jsonl"] == 0  # no bad rows
    assert {"metadata/tensor_metadata.json", "featureList/genreIds", "featureList/genreVector"} <= set(
        objects
    )
    assert sorted({k.split("/")[1] for k in objects if k.startswith("trainingData/")} - {"_SUCCESS"}) == [
        f"numGenres={n}" for n in range(1, 7)
    ]
    assert len(rows) == 300 and sorted({r["numGenres"] for r in rows}) == [1, 2, 3, 4, 5, 6]


def test_the_cli_writes_its_whole_layout_to_s3(s3, capsys):
    flags, client = s3["flags"], s3["client"]
    out = f"s3://{BUCKET}/tensorized"
    assert main(["--output", out, "--num_shards", "2", "--partition_by", "numGenres", *flags]) == 0
    objects = _objects(client, "tensorized/")
    assert_sample_layout(objects, _rows(f"{out}/trainingData", flags))
    capsys.readouterr()
    assert main(["--output", out, "--input", "x.avro"]) == 2  # --config missing: nothing touched
    assert _objects(client, "tensorized/") == objects


def test_from_parquet_reads_s3_through_pyarrow(s3, monkeypatch):
    """`Dataset.from_parquet` on s3:// (the endpoint and credentials from the environment)."""
    import io

    import pyarrow.parquet as pq

    from beam_tensorize.tf import Dataset

    data = io.BytesIO()
    pq.write_table(pa.table({"id": [1, 2, 3], "tags": [["a"], [], ["b", "c"]]}), data)
    s3["client"].put_object(Bucket=BUCKET, Key="tables/t.parquet", Body=data.getvalue())
    endpoint = s3["flags"][0].split("=", 1)[1]
    for name, value in [("AWS_ENDPOINT_URL", endpoint), ("AWS_ACCESS_KEY_ID", "key"),
                        ("AWS_SECRET_ACCESS_KEY", "secret"), ("AWS_DEFAULT_REGION", "us-east-1")]:  # fmt: skip
        monkeypatch.setenv(name, value)
    (batch,) = list(Dataset.from_parquet(f"s3://{BUCKET}/tables/t.parquet", batch_size=10))
    assert batch["id"].numpy().tolist() == [1, 2, 3]
    assert tensor_lists(batch["tags"]) == [[b"a"], [], [b"b", b"c"]]  # a tf.SparseTensor


def test_the_serving_preprocessor_reads_an_output_on_s3(s3, monkeypatch):
    import fastavro

    from beam_tensorize.kernels.tfrecord.framing import iter_tfrecords
    from beam_tensorize.serving import Preprocessor

    out = f"s3://{BUCKET}/served"
    assert main(["--output", out, "--quiet", *s3["flags"]]) == 0
    with FileSystems.open(f"{out}/trainingData/part-00000-of-00001.tfrecord") as f:
        written = list(iter_tfrecords(f, "part-00000-of-00001.tfrecord"))
    endpoint = s3["flags"][0].split("=", 1)[1]
    for name, value in [("AWS_ENDPOINT_URL", endpoint), ("AWS_ACCESS_KEY_ID", "key"),
                        ("AWS_SECRET_ACCESS_KEY", "secret"), ("AWS_DEFAULT_REGION", "us-east-1")]:  # fmt: skip
        monkeypatch.setenv(name, value)
    with open(SAMPLE_AVRO, "rb") as f:
        records = list(fastavro.reader(f))
    assert Preprocessor.from_output(out).serialize(records) == written


def test_the_commit_lock_on_s3_is_a_conditional_put(s3):
    """Two runs committing into one S3 output: the lock object is created only if absent
    (`If-None-Match: *`, Beam's S3 client as configured by the job's flags), so the second
    waits until the first is done; a dead run's lock is taken over by one run only (`If-Match`)."""

    def lock_run() -> str | None:
        try:
            body = s3["client"].get_object(Bucket=BUCKET, Key="locked/_commit.lock")["Body"].read()
        except s3["client"].exceptions.NoSuchKey:
            return None
        return json.loads(body)["run"]

    assert_commit_lock_is_exclusive(f"s3://{BUCKET}/locked", lock_run)


def assert_commit_lock_is_exclusive(out: str, lock_run) -> None:
    """The commit lock of object-store output `out` (`lock_run()`: the run its lock object
    names, None when absent): exclusive create, waiting, and a stale lock taken over once."""
    from beam_tensorize.job import transaction
    from beam_tensorize.job.files import create_if_absent, read_versioned, replace_if_unchanged

    assert create_if_absent(f"{out}/probe", b"1") is True
    assert create_if_absent(f"{out}/probe", b"2") is False
    body, version = read_versioned(f"{out}/probe")
    assert body == b"1"
    assert replace_if_unchanged(f"{out}/probe", b"3", version) is True
    assert replace_if_unchanged(f"{out}/probe", b"4", version) is False  # changed since
    assert read_versioned(f"{out}/probe")[0] == b"3"
    assert read_versioned(f"{out}/absent") is None

    first, second = transaction._Lock(out, "first"), transaction._Lock(out, "second")
    first.acquire()
    assert lock_run() == "first"
    with pytest.raises(transaction.CommitConflict, match=f"another run has been committing to {out}"):
        second.acquire(wait=0.3)
    first.release()
    assert lock_run() is None
    second.acquire(wait=5)
    second.release()

    stale = json.dumps({"run": "dead", "started": 0}).encode()  # a run that died holding it
    assert create_if_absent(f"{out}/{transaction.LOCK_FILE}", stale) is True
    third, fourth = transaction._Lock(out, "third"), transaction._Lock(out, "fourth")
    found = read_versioned(f"{out}/{transaction.LOCK_FILE}")
    third.acquire(wait=5)
    assert lock_run() == "third"
    # a second run that found the same dead lock a moment earlier loses the take-over
    assert replace_if_unchanged(f"{out}/{transaction.LOCK_FILE}", b"{}", found[1]) is False
    with pytest.raises(transaction.CommitConflict):
        fourth.acquire(wait=0.3)
    assert lock_run() == "third"
    third.release()
    assert lock_run() is None
