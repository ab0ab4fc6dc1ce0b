"""`beam_tensorize.tf.DataFrame` and `Dataset.from_parquet` (HybridBackend's reading API):
every logical x physical type read back equal to pyarrow's values."""

from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf

from beam_tensorize.tf import DataFrame, Dataset

_TYPES = {
    "int64": pa.int64(), "uint64": pa.uint64(), "int32": pa.int32(), "uint32": pa.uint32(),
    "int8": pa.int8(), "uint8": pa.uint8(), "float64": pa.float64(), "float32": pa.float32(),
    "float16": pa.float16(), "string": pa.string(),
}  # fmt: skip


def _values(kind: str, n: int) -> list:
    if kind == "string":
        return [f"s{i}" for i in range(n)]
    if kind.startswith("float"):
        return [np.dtype(kind).type(i / 4) for i in range(n)]
    return list(range(n))


@pytest.fixture(scope="module")
def table_file(tmp_path_factory) -> tuple[str, pa.Table]:
    n = 7
    columns = {}
    for kind, typ in _TYPES.items():
        values = _values(kind, 3 * n)
        scalars = values[:n]
        scalars[2] = None  # a null scalar
        columns[f"{kind}_scalar"] = pa.array(scalars, typ)
        lists = [values[i : i + (i % 3)] for i in range(n)]
        lists[4] = None  # a null list: read as empty
        columns[f"{kind}_list"] = pa.array(lists, pa.list_(typ))
        nested = [[values[i : i + 1], [], values[i + 1 : i + 3]] if i % 2 else [] for i in range(n)]
        columns[f"{kind}_nested"] = pa.array(nested, pa.list_(pa.list_(typ)))
        columns[f"{kind}_fixed"] = pa.array([values[3 * i : 3 * i + 3] for i in range(n)], pa.list_(typ))
    table = pa.table(columns)
    path = str(tmp_path_factory.mktemp("pq") / "types.parquet")
    pq.write_table(table, path, row_group_size=3)
    return path, table


def _plain(values: list, kind: str) -> list:
    """pyarrow's values as the tensors hold them (null scalars: 0 or b"")."""

    def one(v):
        if v is None:
            return b"" if kind == "string" else 0
        return v.encode() if kind == "string" else v

    return [one(v) for v in values]


def _read_all(path, fields, **kwargs) -> dict:
    batches = list(Dataset.from_parquet(path, fields=fields, batch_size=100, **kwargs))
    assert len(batches) == 1
    return batches[0]


@pytest.mark.parametrize("kind", sorted(_TYPES))
def test_every_type_and_nesting_reads_back_as_pyarrow_gives_it(table_file, kind):
    path, table = table_file
    fields = [f"{kind}_scalar", f"{kind}_list", f"{kind}_nested",
              DataFrame.Field(f"{kind}_fixed", shape=[3])]  # fmt: skip
    batch = _read_all(path, fields)
    assert sorted(batch) == sorted(f if isinstance(f, str) else f.name for f in fields)  # only these columns
    scalars = batch[f"{kind}_scalar"].numpy().tolist()
    expected = _plain(table.column(f"{kind}_scalar").to_pylist(), kind)
    assert scalars == pytest.approx(expected) if kind.startswith("float") else scalars == expected
    lists = batch[f"{kind}_list"].to_ragged().to_list()
    assert lists == [_plain(v or [], kind) for v in table.column(f"{kind}_list").to_pylist()]
    nested = batch[f"{kind}_nested"].to_ragged().to_list()
    assert nested == [
        [_plain(inner, kind) for inner in v] for v in table.column(f"{kind}_nested").to_pylist()
    ]
    fixed = batch[f"{kind}_fixed"]
    assert fixed.shape == (7, 3)
    assert fixed.numpy().tolist() == [_plain(v, kind) for v in table.column(f"{kind}_fixed").to_pylist()]
    dense = DataFrame.parse({"x": batch[f"{kind}_list"]}, pad=True)["x"]
    assert dense.shape == (7, 2)
    sparse = DataFrame.to_sparse({"x": batch[f"{kind}_list"]})["x"]
    assert isinstance(sparse, tf.SparseTensor) and sparse.dense_shape.numpy().tolist() == [7, 2]


def test_files_in_parallel_batch_shuffle_batch_and_to_dense(table_file, tmp_path):
    path, table = table_file
    other = str(tmp_path / "again.parquet")
    pq.write_table(table, other)
    files = tf.data.Dataset.from_tensor_slices([path, other])
    ids = [b["int64_fixed"].numpy()[:, 0].tolist() for b in Dataset.from_parquet(files, fields=[
        DataFrame.Field("int64_fixed", shape=[3])]).batch(4)]  # fmt: skip
    assert sorted(i for batch in ids for i in batch) == sorted(2 * [3 * i for i in range(7)])
    assert all(len(b) <= 4 for b in ids)
    shuffled = Dataset.from_parquet([path, other], fields=["int64_list", "int32_scalar"]).shuffle_batch(
        4, 8, seed=1
    )
    rows = [
        (tuple(values), s)
        for b in shuffled
        for values, s in zip(b["int64_list"].to_ragged().to_list(), b["int32_scalar"].numpy().tolist())
    ]
    expected = [(tuple(values or []), s if s is not None else 0) for values, s in zip(
        table.column("int64_list").to_pylist(), table.column("int32_scalar").to_pylist())]  # fmt: skip
    assert sorted(rows) == sorted(expected * 2)
    dense = next(iter(Dataset.from_parquet(path, fields=["int64_nested"], batch_size=7, to_dense=True)))
    assert dense["int64_nested"].shape == (7, 3, 2)


def test_bad_fields_name_the_file_and_column(table_file, tmp_path):
    path, _ = table_file
    with pytest.raises(ValueError, match=r"types.parquet: no column 'nope'"):
        Dataset.from_parquet(path, fields=["nope"])
    with pytest.raises(
        ValueError, match="column 'int64_list' is nested 1 deep; the field says ragged_rank 2"
    ):
        Dataset.from_parquet(path, fields=[DataFrame.Field("int64_list", ragged_rank=2)])
    with pytest.raises(ValueError, match="dtype 'complex' is not one of"):
        DataFrame.Field("x", dtype="complex")
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"field .{1,2}int64_list.{1,2} has shape \[3\], but a row holds another number of values",
    ):
        list(Dataset.from_parquet(path, fields=[DataFrame.Field("int64_list", shape=[3])], batch_size=7))


def test_from_output_gives_make_dataset_s_tensors_for_a_parquet_output(tmp_path):
    from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
    from beam_tensorize.tf import make_dataset
    from pipelines.tensorize import main

    args = ["--input", SAMPLE_AVRO, "--config", SAMPLE_CONFIG, "--quiet"]
    assert main([*args, "--output", str(tmp_path / "tfr")]) == 0
    assert main([*args, "--output", str(tmp_path / "pq"), "--output_format", "parquet"]) == 0
    expected = next(iter(make_dataset(str(tmp_path / "tfr"), batch_size=300, labels=False)))
    got = next(iter(Dataset.from_output(str(tmp_path / "pq"), batch_size=300)))
    assert sorted(got) == sorted(expected)
    for name, want in expected.items():
        have = got[name]
        if isinstance(want, tf.SparseTensor):
            assert tf.sparse.to_dense(have).numpy().tolist() == tf.sparse.to_dense(want).numpy().tolist(), (
                name
            )
        elif isinstance(want, tf.RaggedTensor):
            assert have.to_list() == want.to_list(), name
        else:
            assert have.numpy().tolist() == want.numpy().tolist(), name
    with pytest.raises(
        ValueError, match="has no Parquet trainingData split; read TFRecord outputs with make_dataset"
    ):
        Dataset.from_output(str(tmp_path / "tfr"))


def test_from_orc_reads_as_from_parquet(table_file, tmp_path):
    import pyarrow.orc as orc

    path, table = table_file
    columns = ["int64_scalar", "string_list", "float32_nested"]
    orc_path = str(tmp_path / "t.orc")
    orc.write_table(table.select(columns), orc_path, stripe_size=64)
    from_parquet = next(iter(Dataset.from_parquet(path, fields=columns, batch_size=7, to_dense=True)))
    from_orc = next(iter(Dataset.from_orc(orc_path, fields=columns, batch_size=7, to_dense=True)))
    for name in columns:
        assert from_orc[name].numpy().tolist() == from_parquet[name].numpy().tolist()
