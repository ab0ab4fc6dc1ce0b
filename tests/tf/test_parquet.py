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

from beam_tensorize.tf import DataFrame, Dataset, ParquetDataset
from tests.conftest import tensor_lists

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
    """One batch of every row, lists as `DataFrame.Value`s (`ParquetDataset`)."""
    batches = list(ParquetDataset(path, batch_size=100, fields=fields, **kwargs))
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
    lists = batch[f"{kind}_list"].to_list()
    assert lists == [_plain(v or [], kind) for v in table.column(f"{kind}_list").to_pylist()]
    nested = batch[f"{kind}_nested"].to_list()
    assert nested == [
        [_plain(inner, kind) for inner in v] for v in table.column(f"{kind}_nested").to_pylist()
    ]
    fixed = batch[f"{kind}_fixed"].to_dense()  # values of shape [rows, 3]
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
    assert [len(b) for b in ids] == [4, 4, 4, 2]  # 14 rows cut across the two files
    reader = Dataset.from_parquet([path, other], fields=["int64_list", "int32_scalar"])

    def shuffled_rows(**kwargs) -> list:
        return [
            (tuple(values), s)
            for b in reader.shuffle_batch(4, buffer_size=8, **kwargs)
            for values, s in zip(tensor_lists(b["int64_list"]), b["int32_scalar"].numpy().tolist())
        ]

    expected = [(tuple(values or []), s if s is not None else 0) for values, s in zip(
        table.column("int64_list").to_pylist(), table.column("int32_scalar").to_pylist())]  # fmt: skip
    first = shuffled_rows(seed=1)
    assert sorted(first) == sorted(expected * 2) and first != expected * 2  # every row, shuffled
    assert shuffled_rows(seed=1) == first  # a seed gives the same order in every run
    assert shuffled_rows(seed=2) != first
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
    other = str(tmp_path / "other.parquet")  # a later file of another schema is checked when read
    pq.write_table(pa.table({"int64_scalar": pa.array([1.5], pa.float64())}), other)
    with pytest.raises(
        tf.errors.InvalidArgumentError,
        match=r"other.parquet: column 'int64_scalar' holds float64 values, which dtype int64 cannot hold",
    ):
        list(Dataset.from_parquet([path, other], fields=["int64_scalar"], batch_size=100))
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


def _wide_table(start: int, n: int) -> pa.Table:
    """Several columns of each kind (read as one group), with nulls and empty lists."""
    rows = range(start, start + n)
    columns = {}
    for j in range(3):
        columns[f"i{j}"] = pa.array([None if (i + j) % 7 == 0 else 10 * i + j for i in rows], pa.int64())
        columns[f"f{j}"] = pa.array([i / 2 + j for i in rows], pa.float32())
        columns[f"s{j}"] = pa.array([None if (i + j) % 5 == 0 else f"s{i}-{j}" * (i % 3) for i in rows])
        columns[f"l{j}"] = pa.array(
            [None if (i + j) % 6 == 0 else list(range(i, i + i % 4)) for i in rows], pa.list_(pa.int32())
        )
        columns[f"t{j}"] = pa.array([[f"t{i}"] * (i % 3) for i in rows], pa.list_(pa.large_string()))
    columns["nested"] = pa.array(
        [[[i], [], [i, i + 1]] if i % 2 else [] for i in rows], pa.list_(pa.list_(pa.int64()))
    )
    return pa.table(columns)


def _plain_rows(table: pa.Table) -> list[dict]:
    def plain(value):
        if value is None:
            return None
        if isinstance(value, str):
            return value.encode()
        if isinstance(value, list):
            return [plain(v) for v in value]
        return value

    out = []
    for row in table.to_pylist():
        out.append({
            k: plain(v) if v is not None else (b"" if k[0] == "s" else [] if k[0] in "lt" else 0)
            for k, v in row.items()
        })  # fmt: skip
    return out


def _batch_rows(batch: dict) -> list[dict]:
    columns = {name: tensor_lists(value) for name, value in batch.items()}
    return [dict(zip(columns, values)) for values in zip(*columns.values())]


@pytest.mark.parametrize("batch_size", [1, 4, 9, 16, 64])
@pytest.mark.parametrize("chunk_rows", [5, 8, 16384])
def test_batches_cross_row_groups_and_chunks_and_give_every_row_in_order(
    tmp_path, monkeypatch, batch_size, chunk_rows
):
    """Row groups of 7 rows, chunks of a few batches (or one chunk per file), batches
    larger than a row group: the files' rows come in order, cut into batches of exactly
    `batch_size` across files (HybridBackend's rule): only the very last may be smaller, and
    `drop_remainder` drops only that one."""
    from beam_tensorize.tf import _reader

    monkeypatch.setattr(_reader, "_CHUNK_ROWS", chunk_rows)
    tables = [_wide_table(0, 30), _wide_table(30, 20)]
    paths = []
    for k, table in enumerate(tables):
        paths.append(str(tmp_path / f"part-{k}.parquet"))
        pq.write_table(table, paths[-1], row_group_size=7)
    # lists as DataFrame.Values (ParquetDataset: the same reader without the conversion to
    # tf.SparseTensor), so that nested lists compare exactly
    batches = [_batch_rows(b) for b in ParquetDataset(paths, batch_size=batch_size, num_parallel_reads=1)]
    rows = [row for t in tables for row in _plain_rows(t)]
    want = [rows[i : i + batch_size] for i in range(0, len(rows), batch_size)]
    assert batches == want
    dropped = [
        _batch_rows(b)
        for b in ParquetDataset(paths, batch_size=batch_size, num_parallel_reads=1, drop_remainder=True)
    ]
    assert dropped == [b for b in want if len(b) == batch_size]
    read_ahead = [_batch_rows(b) for b in ParquetDataset(paths, batch_size=batch_size, num_parallel_reads=2)]
    assert read_ahead == want  # files read at once by threads, rows still in file order
    sizes = [
        len(b["f0"])
        for b in Dataset.from_parquet(paths, fields=["f0"]).batch(batch_size, drop_remainder=True)
    ]
    assert sizes == [batch_size] * (50 // batch_size)


def test_a_new_iterator_s_first_batch_is_read_alone_and_the_chunks_after_it_stay_whole(tmp_path, monkeypatch):
    """A new iterator's first batch crosses into TensorFlow alone, read by a reader of its own
    (not decoded with the rest of a chunk): then the rest of the first chunk, then whole
    chunks passed through uncopied. The rows are the file's, in order, whether the reader
    cuts its batches at row groups (string columns read through their dictionaries) or not;
    a shuffling dataset reads whole chunks from the start."""
    from beam_tensorize.tf import _chunks, _reader

    monkeypatch.setattr(_reader, "_CHUNK_ROWS", 40)
    table = _wide_table(0, 130)
    path = str(tmp_path / "f.parquet")
    pq.write_table(table, path, row_group_size=50)
    chunks = []
    encode = _chunks.Layout.encode

    def recorded(self, batch):
        chunks.append(batch.num_rows)
        return encode(self, batch)

    monkeypatch.setattr(_chunks.Layout, "encode", recorded)
    rows = _plain_rows(table)
    numbers = [f"i{j}" for j in range(3)] + [f"l{j}" for j in range(3)] + ["nested"]
    batches = [_batch_rows(b) for b in ParquetDataset(path, batch_size=8, fields=numbers)]
    assert batches == [[{c: r[c] for c in numbers} for r in rows[i : i + 8]] for i in range(0, 130, 8)]
    assert chunks == [8, 32, 40, 40, 10]
    chunks.clear()
    batches = [_batch_rows(b) for b in ParquetDataset(path, batch_size=8)]  # strings by their dictionaries
    assert batches == [rows[i : i + 8] for i in range(0, 130, 8)]
    assert chunks[0] == 8 and sum(chunks) == 130 and all(n % 8 == 0 for n in chunks[:-1])
    chunks.clear()
    shuffled = list(Dataset.from_parquet(path, fields=["i0"]).shuffle_batch(8, buffer_size=16))
    assert sorted(v for b in shuffled for v in b["i0"].numpy().tolist()) == sorted(
        0 if v is None else v for v in table.column("i0").to_pylist()
    )
    assert chunks[0] == 40


def test_joined_cuts_and_joins_record_batches_across_files():
    from beam_tensorize.tf._rows import joined

    table = pa.table({"x": list(range(23))})
    incoming, start = [], 0
    for size in (5, 3, 8, 7):
        incoming.append(table.slice(start, size).to_batches()[0])
        start += size
    out = list(joined(iter(incoming), 8))
    assert [b.num_rows for b in out] == [8, 8, 7]
    assert [v for b in out for v in b.column("x").to_pylist()] == list(range(23))
    assert out[1] is incoming[2]  # a batch of the right size passes through


def test_string_columns_stored_with_a_dictionary_are_read_through_it(tmp_path, monkeypatch):
    """String scalars stored with a dictionary in every row group are decoded as dictionary
    arrays (the strings found through the indices); nulls, an all-null column, binary and
    large strings, a dictionary that overflowed into plain pages, and columns stored without
    a dictionary all read back as pyarrow gives them."""
    from beam_tensorize.tf import _files, _reader

    monkeypatch.setattr(_reader, "_CHUNK_ROWS", 8)
    n = 45
    words = [None if i % 4 == 1 else f"w{i % 5}" * (i % 3) for i in range(n)]
    table = pa.table({
        "dict": pa.array(words),
        "none": pa.array([None] * n, pa.string()),
        "bytes": pa.array([None if w is None else w.encode() + b"\0" for w in words], pa.binary()),
        "large": pa.array(words, pa.large_string()),
        "many": pa.array([f"unique-{i:04d}" * 3 for i in range(n)]),
        "plain": pa.array(words),
    })  # fmt: skip
    path = str(tmp_path / "strings.parquet")
    pq.write_table(
        table, path, row_group_size=16, dictionary_pagesize_limit=64, data_page_size=64,
        use_dictionary=["dict", "none", "bytes", "large", "many"], write_batch_size=4,
    )  # fmt: skip
    metadata = pq.ParquetFile(path).metadata
    assert not metadata.row_group(0).column(5).has_dictionary_page  # "plain"
    assert _files._open(path).dictionary_encoded(table.column_names) == [
        "dict",
        "none",
        "bytes",
        "large",
        "many",
    ]
    got = [_batch_rows(b) for b in Dataset.from_parquet(path, batch_size=3)]
    rows = [row for batch in got for row in batch]
    assert len(got) == 15 and len(rows) == n
    for name in table.column_names:
        want = [
            b"" if v is None else v if isinstance(v, bytes) else v.encode()
            for v in table.column(name).to_pylist()
        ]
        assert [row[name] for row in rows] == want, name


def test_a_dtype_that_would_change_values_is_refused_naming_file_and_column(tmp_path):
    """As HybridBackend: no silent cast. int64 2**40 + 5 read as int32 used to come back as 5,
    -2.75 read as int64 as -2; a widening dtype reads every value exactly."""
    path = str(tmp_path / "numbers.parquet")
    pq.write_table(
        pa.table({"big": [2**40 + 5, 7], "x": [-2.75, 1.5], "small": pa.array([3, 4], pa.int32())}), path
    )
    with pytest.raises(TypeError) as raised:
        Dataset.from_parquet(path, fields=[DataFrame.Field("big", dtype=tf.int32)], batch_size=2)
    assert str(raised.value) == (
        f"{path}: column 'big' holds int64 values, which dtype int32 cannot hold exactly (a int64 would "
        "be cut or rounded); give dtype int64, or a wider one, and cast in TensorFlow if you mean to"
    )
    with pytest.raises(TypeError, match=f"{path}: column 'x' holds float64 values, which dtype int64 cannot"):
        Dataset.from_parquet(path, fields=[DataFrame.Field("x", dtype=tf.int64)], batch_size=2)
    fields = [DataFrame.Field("small", dtype=tf.int64), DataFrame.Field("x", dtype=tf.float64)]
    batch = next(iter(Dataset.from_parquet(path, fields=fields, batch_size=2)))
    assert batch["small"].dtype == tf.int64 and batch["small"].numpy().tolist() == [3, 4]
    assert batch["x"].numpy().tolist() == [-2.75, 1.5]
    with pytest.raises(ValueError, match="batch_size must be a positive number of rows, got 0"):
        Dataset.from_parquet(path, batch_size=0)


def test_partitions_of_row_groups_defaults_ignore_case_and_corrupted_files(tmp_path):
    """HybridBackend's `partition_count` / `partition_index` (contiguous shares of each file's
    row groups, every row in exactly one), `Field(default_value=)`, `field_ignore_case` and
    `skip_corrupted_data` (a damaged file's rest skipped, the others read)."""
    from tests.e2e.test_bad_inputs import _flip_a_bit_in_a_data_page

    path = str(tmp_path / "groups.parquet")
    pq.write_table(pa.table({"Id": list(range(30))}), path, row_group_size=3)  # 10 row groups
    shares = [
        [
            i
            for b in Dataset.from_parquet(path, partition_count=3, partition_index=k).batch(100)
            for i in b["Id"].numpy()
        ]
        for k in range(3)
    ]
    assert shares == [list(range(0, 12)), list(range(12, 21)), list(range(21, 30))]
    with pytest.raises(ValueError, match=r"partition_index must be in \[0, partition_count\), got 3 of 3"):
        Dataset.from_parquet(path, partition_count=3, partition_index=3)

    fields = [DataFrame.Field("id"), DataFrame.Field("label", tf.float32, default_value=0.5)]
    (batch,) = Dataset.from_parquet(path, fields=fields, field_ignore_case=True).batch(30)
    assert batch["id"].numpy().tolist() == list(range(30))  # column "Id"
    assert batch["label"].numpy().tolist() == [0.5] * 30
    with pytest.raises(ValueError, match="no column 'id'"):
        Dataset.from_parquet(path, fields=["id"])
    lists = str(tmp_path / "lists.parquet")
    pq.write_table(pa.table({"tags": [[1], [], [2, 3]]}), lists)
    fields = [DataFrame.Field("tags"), DataFrame.Field("w", tf.int64, default_value=7)]
    (batch,) = Dataset.from_parquet(lists, fields=fields).batch(10)  # rows counted from a list column
    assert tensor_lists(batch["tags"]) == [[1], [], [2, 3]] and batch["w"].numpy().tolist() == [7, 7, 7]

    good, damaged = str(tmp_path / "good.parquet"), tmp_path / "damaged.parquet"
    pq.write_table(pa.table({"x": list(range(5))}), good)
    pq.write_table(
        pa.table({"x": list(range(100, 400))}), damaged, write_page_checksum=True, compression="none"
    )
    _flip_a_bit_in_a_data_page(damaged)
    with pytest.raises(tf.errors.OpError, match=r"damaged.parquet: the data after row 0 cannot be read"):
        list(Dataset.from_parquet([good, str(damaged)]).batch(1000))
    (batch,) = Dataset.from_parquet([good, str(damaged)], skip_corrupted_data=True).batch(1000)
    assert batch["x"].numpy().tolist() == list(range(5))


def test_deduplicate_and_populate_defaults_on_batches_of_stored_blocks(tmp_path):
    """HybridBackend's transformations: `deduplicate` restores the rows of a `ParquetDataset`'s
    batches of blocks (a batch of 2 blocks: their 5 rows), `populate_defaults` adds a default
    column once per restored row; a column the dataset lacks is named."""
    from beam_tensorize.tf import deduplicate, populate_defaults

    path = str(tmp_path / "blocks.parquet")
    pq.write_table(
        pa.table({
            "user": [[7, 8], [9], [7]],
            "tags": [[[1], [2, 3]], [[4]], [[]]],
            "user-index": [[0, 1, 0], [0, 0], [0]],
            "item": [[10, 11, 12], [13, 14], [15]],
        }),
        path,
    )  # fmt: skip
    fields = [DataFrame.Field("user", tf.int64, 1), DataFrame.Field("tags", tf.int64, 2),
              DataFrame.Field("user-index", tf.int64, 1), DataFrame.Field("item", tf.int64, 1)]  # fmt: skip
    source = ParquetDataset(path, batch_size=2, fields=fields)
    weight = DataFrame.Field("weight", tf.float32, default_value=0.5)
    restored = source.apply(deduplicate(["user-index"], [["user", "tags"]])).apply(
        populate_defaults([*source.all_fields, weight], 2)
    )
    first, second = list(restored)
    assert first["user"].numpy().tolist() == [7, 8, 7, 9, 9]
    assert first["tags"].to_ragged().to_list() == [[1], [2, 3], [1], [4], [4]]
    assert first["item"].numpy().tolist() == [10, 11, 12, 13, 14]
    assert first["user-index"].numpy().tolist() == [0, 1, 0, 0, 0]
    assert first["weight"].numpy().tolist() == [0.5] * 5
    assert second["user"].numpy().tolist() == [7] and second["weight"].numpy().tolist() == [0.5]
    with pytest.raises(ValueError, match=r"deduplicate: \['nope'\] are not columns of the dataset"):
        source.apply(deduplicate(["nope"], [["user"]]))


def test_numeric_scalar_columns_reach_tensorflow_as_arrow_decoded_them():
    """When each chunk is one batch (large batches), a chunk's numeric scalar columns are
    handed over as the numpy views of Arrow's own buffers (TensorFlow takes 64-byte aligned
    arrays without copying); a column of another type is cast, nulls become zeros. Smaller
    batches are packed into one array per group."""
    from beam_tensorize.tf._chunks import Layout

    fields = [
        DataFrame.Field("a", tf.int64, 0),
        DataFrame.Field("b", tf.int64, 0),
        DataFrame.Field("c", tf.float32, 0),
    ]
    table = pa.table({
        "a": np.arange(1000, dtype=np.int64),
        "b": pa.array([1, None, 3] * 10 + [4] * 970, pa.int64()),
        "c": pa.array(np.linspace(0, 1, 1000), pa.float64()),
    })  # fmt: skip
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    (batch,) = pq.read_table(pa.BufferReader(sink.getvalue())).to_batches()  # as Parquet decodes it
    ((packed,),) = Layout(fields[:2], batch_size=256).encode(batch)["groups"]
    assert packed.shape == (4, 2, 256) and packed[3, 1, 231:].tolist() == [4] + [0] * 24
    (group,) = Layout(fields[:2], batch_size=1000, one_per_chunk=True).encode(batch)["groups"]
    a, b = group
    arrow_a = np.frombuffer(batch.column("a").buffers()[1], np.int64)
    assert np.shares_memory(a, arrow_a) and a.ctypes.data % 64 == 0
    assert b[:4].tolist() == [1, 0, 3, 1]
    ((c,),) = Layout(fields[2:], batch_size=1024, one_per_chunk=True).encode(batch)["groups"]
    assert c.dtype == np.float32 and c[-1] == 1.0


def test_parquet_files_are_decoded_into_jemalloc_s_pool(tmp_path):
    """from_parquet decodes into jemalloc's memory pool (pyarrow's ParquetFile takes no pool:
    `_compat.parquet_file` opens its internal reader with one; this fails when that moves)."""
    from beam_tensorize.tf import _files
    from beam_tensorize.tf._compat import parquet_file

    path = str(tmp_path / "x.parquet")
    table = pa.table({"x": np.arange(1 << 20, dtype=np.int64), "s": ["v"] * (1 << 20)})
    pq.write_table(table, path)
    pool = pa.jemalloc_memory_pool()
    assert _files._POOL is not None and _files._POOL.backend_name == "jemalloc"
    before = pool.bytes_allocated()
    with pa.OSFile(path) as handle:
        file = parquet_file(handle, read_dictionary=["s"], pool=pool)
        (batch,) = file.iter_batches(batch_size=1 << 20)
        assert pool.bytes_allocated() - before >= 8 << 20  # the int64 column, at least
        assert pa.types.is_dictionary(batch.column("s").type)
        assert pa.Table.from_batches([batch]).cast(table.schema).equals(table)


def test_a_local_parquet_file_is_decoded_in_place_through_a_memory_map(tmp_path):
    """A local Parquet file is read through a memory map (its pages decoded where the kernel
    keeps them, not copied into fresh memory first); a file replaced by a rename while a
    dataset reads it does not disturb the read (the old file stays mapped)."""
    from beam_tensorize.tf import _files

    path = str(tmp_path / "x.parquet")
    pq.write_table(pa.table({"x": np.arange(5000, dtype=np.int64)}), path, row_group_size=1000)
    assert isinstance(_files._open(path)._handle, pa.MemoryMappedFile)
    iterator = iter(ParquetDataset(path, batch_size=1000, fields=["x"]))
    first = next(iterator)["x"].numpy().tolist()
    pq.write_table(pa.table({"x": np.full(10, -1, np.int64)}), str(tmp_path / "new.parquet"))
    os.replace(tmp_path / "new.parquet", path)
    rest = [v for batch in iterator for v in batch["x"].numpy().tolist()]
    assert first + rest == list(range(5000))


def test_the_decoding_pool_keeps_the_pages_it_frees_unless_the_environment_says_otherwise(monkeypatch):
    """`decoding_pool` sets jemalloc's decay to -1 (freed pages kept for the next batches, not
    given back to the kernel at once, Arrow's 0), and leaves it to `JE_ARROW_MALLOC_CONF`
    where that is set."""
    from beam_tensorize.tf._compat import decoding_pool

    decays = []
    monkeypatch.setattr(pa, "jemalloc_set_decay_ms", decays.append)
    monkeypatch.delenv("JE_ARROW_MALLOC_CONF", raising=False)
    assert decoding_pool().backend_name == "jemalloc" and decays == [-1]
    monkeypatch.setenv("JE_ARROW_MALLOC_CONF", "dirty_decay_ms:1000")
    assert decoding_pool().backend_name == "jemalloc" and decays == [-1]


_DECODE_IN_A_NEW_THREAD = """
import threading, numpy as np, pyarrow as pa
from beam_tensorize.tf._files import _POOL  # made by decoding_pool at import, in this thread
def resident():
    return int(open("/proc/self/statm").read().split()[1]) * 4096
given_back = []
def decode():  # as a decoding thread does: a batch's memory filled, then freed
    batch = pa.allocate_buffer(256 << 20, memory_pool=_POOL)
    np.frombuffer(batch, np.uint8)[:] = 1
    held = resident()
    del batch
    given_back.append(held - resident())
thread = threading.Thread(target=decode)
thread.start()
thread.join()
print(given_back[0] >> 20)
"""


@pytest.mark.skipif(
    len(os.sched_getaffinity(0)) < 2, reason="jemalloc makes one arena only for a process on one CPU"
)
def test_a_decoding_thread_keeps_the_pages_it_frees_in_a_process_started_as_usual():
    """jemalloc's decay setting reaches only the arenas made after it; its first arena, made
    when pyarrow's import started jemalloc, gives freed pages back. A new thread first takes an
    arena no thread is bound to: `decoding_pool` binds the calling thread to it, so a decoding
    thread takes a new arena and keeps what it frees (in a fresh process: this one's arenas are
    taken already)."""
    import subprocess
    import sys

    env = {k: v for k, v in os.environ.items() if k != "JE_ARROW_MALLOC_CONF"}
    done = subprocess.run(
        [sys.executable, "-c", _DECODE_IN_A_NEW_THREAD],
        capture_output=True, text=True, env={**env, "TF_CPP_MIN_LOG_LEVEL": "2"}, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert int(done.stdout) < 32  # MiB of the 256 given back to the kernel (256 without the binding)


def _marked_functions(graph: tf.Graph) -> dict[str, bool]:
    """Each function of `graph`: whether it carries `_compat.SINGLE_DEVICE`'s attribute."""
    return {
        f.signature.name: f.attr["experimental_ints_on_device"].b
        if "experimental_ints_on_device" in f.attr
        else False
        for f in graph.as_graph_def().library.function
    }


def test_the_readers_functions_skip_grappler_and_the_callers_do_not(tmp_path):
    """tf.data instantiates a dataset's functions again for each new iterator, grappler first
    unless a function is marked to run on one device (`_compat.single_device`; ~90 ms of a
    200-column first batch). Ours are marked, a function the caller maps after is not; one
    giving int32 tensors stays unmarked (tf.data's default rewrite refuses it marked) and
    still reads. This fails when TensorFlow's dataset functions stop taking the attribute."""
    path = str(tmp_path / "x.parquet")
    pq.write_table(
        pa.table({"id": [1, 2, 3], "tags": [[1], [], [2, 3]], "name": ["a", "b", "c"],
                  "small": pa.array([4, 5, 6], pa.int32())}),
        path,
    )  # fmt: skip
    graph = tf.Graph()
    with graph.as_default():
        Dataset.from_parquet(path, batch_size=2, fields=["id", "tags", "name"])
    ours = _marked_functions(graph)
    assert len(ours) >= 3 and all(ours.values()), ours
    with graph.as_default():
        Dataset.from_parquet(path, batch_size=2, fields=["id"]).map(
            lambda batch: batch["id"] + 1, name="theirs"
        )
    theirs = [name for name, marked in _marked_functions(graph).items() if name not in ours and not marked]
    assert len(theirs) == 1, _marked_functions(graph)
    batches = list(Dataset.from_parquet(path, batch_size=2, fields=["small", "tags"]))
    assert [b["small"].numpy().tolist() for b in batches] == [[4, 5], [6]]
    assert batches[0]["small"].dtype == tf.int32
    assert tf.sparse.to_dense(batches[1]["tags"]).numpy().tolist() == [[2, 3]]
