"""Deduplication of repeated user features (HybridBackend's): `DeduplicateFeatures` writes
blocks, `Dataset.from_parquet(key_idx_field_names=..., value_field_names=...)` restores the
original rows exactly, for several block sizes and key distributions."""

from __future__ import annotations

import os

import apache_beam as beam
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

from beam_tensorize.io import WriteParquet
from beam_tensorize.kernels.output.dedup import deduplicate_block, restore_block
from beam_tensorize.tf import Dataset
from beam_tensorize.transforms.dedup import DeduplicateFeatures
from tests.conftest import tensor_lists

pytestmark = pytest.mark.pipeline

GROUPS = [["user", "user-feat-0", "user-feat-1"]]
OTHERS = ["item", "label"]


def _rows(n: int, users: int) -> pa.RecordBatch:
    user = [(i * 7) % users for i in range(n)]
    return pa.RecordBatch.from_pydict({
        "user": user,
        "user-feat-0": [u / 2 for u in user],
        "user-feat-1": [list(range(u % 4)) for u in user],
        "item": list(range(n)),
        "label": [i % 2 for i in range(n)],
    })  # fmt: skip


@pytest.mark.parametrize(("block_size", "users"), [(1, 5), (4, 1), (16, 40), (100, 5)])
def test_dedup_round_trip_gives_the_original_rows(tmp_path, block_size, users):
    rows = _rows(40, users)
    out = str(tmp_path / "dedup")
    with beam.Pipeline() as p:
        _ = (
            p
            | beam.Create([rows.slice(0, 25), rows.slice(25)])
            | DeduplicateFeatures(block_size, GROUPS, OTHERS)
            | WriteParquet(out, num_shards=1, save_mode="overwrite")
        )
    restored = Dataset.from_parquet(
        f"{out}/part-00000-of-00001.parquet", batch_size=7,
        key_idx_field_names=["user-index"], value_field_names=GROUPS,
    )  # fmt: skip
    got = {name: [] for name in [*rows.schema.names, "user-index"]}
    sizes = []
    for batch in restored:  # a batch of 7 stored blocks, as in HybridBackend
        sizes.append(len(tensor_lists(batch["item"])))
        for name, value in batch.items():
            got[name] += tensor_lists(value)
    order = sorted(range(40), key=lambda i: got["item"][i])
    for name in rows.schema.names:
        assert [got[name][i] for i in order] == rows.column(name).to_pylist(), name
    # The index column, also asked for (fields=None): each row's place among its block's users.
    stored = pq.read_table(f"{out}/part-00000-of-00001.parquet")
    assert got["user-index"] == stored.column("user-index").combine_chunks().flatten().to_pylist()
    blocks = [len(index) for index in stored.column("user-index").to_pylist()]
    assert sizes == [sum(blocks[i : i + 7]) for i in range(0, len(blocks), 7)]


def test_dedup_stores_each_user_once_per_block():
    rows = _rows(12, 2)
    block = deduplicate_block(rows, GROUPS, OTHERS)
    assert block.num_rows == 1 and block.column("user").to_pylist() == [[0, 1]]
    assert block.column("user-index").to_pylist() == [[(i * 7) % 2 for i in range(12)]]
    assert restore_block(block, GROUPS, OTHERS).to_pydict() == {
        name: rows.column(name).to_pylist() for name in [*OTHERS, *GROUPS[0]]
    }
    with pytest.raises(ValueError, match=r"columns \['nope'\] are not among"):
        deduplicate_block(rows, [["nope"]], OTHERS)


def test_the_cli_writes_deduplicated_parquet_that_from_output_restores(tmp_path, capsys):
    """--dedup_block_size / --dedup_user_cols: blocks of a Parquet output, the rows restored by
    Dataset.from_output equal to those of the same run without deduplication; the summary says
    how much was saved."""
    from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
    from pipelines.tensorize import main

    args = ["--input", SAMPLE_AVRO, "--config", SAMPLE_CONFIG, "--output_format", "parquet"]
    assert main([*args, "--output", str(tmp_path / "plain"), "--quiet"]) == 0
    capsys.readouterr()
    flags = ["--dedup_block_size", "64", "--dedup_user_cols", "movieId,movieBucket,movieLatentFactors"]
    assert main([*args, "--output", str(tmp_path / "dedup"), *flags]) == 0
    summary = capsys.readouterr().out
    assert "deduplicated:  300 rows in 5 blocks; user columns store" in summary and "saved)" in summary

    def rows(folder) -> list[tuple]:
        found = []
        for batch in Dataset.from_output(str(tmp_path / folder), batch_size=50):
            users = batch["userId"].to_list()
            found += list(zip(batch["movieId"].numpy().tolist(), batch["movieBucket"].numpy().tolist(),
                              batch["movieLatentFactors"].numpy().round(5).tolist(), users))  # fmt: skip
        return found

    assert rows("dedup") == rows("plain") and len(rows("plain")) == 300
    assert main([*args, "--output", str(tmp_path / "x"), *flags, "--output_format", "tfrecord"]) == 2
    assert "deduplication writes Parquet blocks: use --output_format parquet" in capsys.readouterr().err


def test_a_column_the_key_does_not_determine_is_refused_naming_a_key_with_two_values(tmp_path, capsys):
    """`--dedup_user_cols movieId,response`: a movie's rows hold several ratings, so storing one
    per movie would give rows another row's rating (5 of 300 rows used to differ silently)."""
    from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
    from pipelines.tensorize import main

    rows = pa.RecordBatch.from_pydict(
        {"user": [7, 8, 7, 9], "age": [[30], [40], [31], []], "item": [1, 2, 3, 4]}
    )
    with pytest.raises(ValueError) as raised:
        deduplicate_block(rows, [["user", "age"]], ["item"])
    assert str(raised.value) == (
        "deduplication: column 'age' is not a function of the key 'user': the rows of key 7 hold [30] "
        "and [31]; only columns whose value each key determines (user features) can be stored once per "
        "key: leave it out of the group"
    )
    out = tmp_path / "out"
    args = [
        "--input",
        SAMPLE_AVRO,
        "--config",
        SAMPLE_CONFIG,
        "--output",
        str(out),
        "--output_format",
        "parquet",
    ]
    code = main([*args, "--dedup_block_size", "64", "--dedup_user_cols", "movieId,response", "--quiet"])
    err = capsys.readouterr().err
    assert code == 1
    assert (
        "deduplication: column 'response' is not a function of the key 'movieId': the rows of key 440 hold 4.0 and 3.0"
        in err
    )
    assert not (out / "trainingData").exists() and not (out / "_SUCCESS").exists()
