"""`Dataset.from_parquet`: Parquet files into batches of tensors, as HybridBackend's
`hb.data.Dataset.from_parquet` reads them.

The files' rows are one stream (`_rows`): files read one after another with pyarrow (only
the selected fields, see `_files`; with `num_parallel_reads`, several read ahead by threads,
consumed in order), cut into chunks of a whole number of batches across file boundaries
(`_reader`). A chunk crosses into TensorFlow in one Python step, its columns grouped into few
arrays (see `_chunks`), and the batches are cut out of it by ops of the dataset's graph: no
Python per batch, none per row. So batches span files, as HybridBackend's do: only the very last may be smaller. A scalar
column becomes a `tf.Tensor`, a list column a `tf.SparseTensor` (`to_dense` pads it; a field
with a `shape` is dense); `ParquetDataset` keeps lists as `DataFrame.Value`s (flat values and
row splits per level). Paths may be local or `s3://`, `gs://`, `hdfs://` (pyarrow's file
systems, see `beam_tensorize.kernels.filesystems`: S3 takes `AWS_ENDPOINT_URL` and the usual
credentials from the environment, GCS `STORAGE_EMULATOR_HOST` for an emulator).

Example:
    >>> import pyarrow as pa, pyarrow.parquet as pq
    >>> pq.write_table(pa.table({"id": [1, 2, 3], "tags": [[7], [], [8, 9]]}), "example.parquet")
    >>> batch = next(iter(Dataset.from_parquet("example.parquet", batch_size=2, to_dense=True)))
    >>> batch["id"].numpy().tolist(), batch["tags"].numpy().tolist()
    ([1, 2], [[7], [0]])
"""

from __future__ import annotations

import functools
import logging
import posixpath
from collections.abc import Sequence

import tensorflow as tf

from beam_tensorize.tf._compat import single_device
from beam_tensorize.tf._files import _Dedup, _Options
from beam_tensorize.tf._iterators import Batches
from beam_tensorize.tf._reader import _batch_rows, _defaults_for, _Reader, _restored
from beam_tensorize.tf._rows import row_group_range
from beam_tensorize.tf.dataframe import DataFrame
from beam_tensorize.tf.dataset import committed_split

__all__ = [
    "Dataset",
    "ParquetDataset",
    "TabularDataset",
    "deduplicate",
    "parse",
    "populate_defaults",
    "read_parquet",
    "rebatch",
]

_LOGGER = logging.getLogger(__name__)

_Field = DataFrame.Field
_Value = DataFrame.Value


class _ReadDataset(Batches):
    """A `tf.data.Dataset` that is `impl`, read by `reader` (which `batch` / `rebatch` use to
    read at another size)."""

    def __init__(self, reader: _Reader, impl: tf.data.Dataset):
        self._reader = reader
        super().__init__(impl)

    @property
    def all_fields(self) -> list:
        """Every field, those with a `default_value` too."""
        return list(self._reader.fields)


class TabularDataset(_ReadDataset):
    """The rows of Parquet / ORC files (HybridBackend's `hb.data.Dataset.from_parquet(...)`
    without a batch size): a `tf.data.Dataset` of one row per element (lists as rank-1
    `tf.SparseTensor`s), to `map`, `filter` or `shuffle` row by row; `.batch(n)` and
    `.shuffle_batch(n, ...)` read batches directly (no per-row work)."""

    def __init__(self, reader: _Reader):
        super().__init__(reader, reader.batches(256).unbatch())

    @property
    def fields(self) -> list:
        """The fields (completed from the first file)."""
        return self.all_fields

    def batch(self, batch_size: int, drop_remainder: bool = False, *args, **kwargs) -> tf.data.Dataset:
        """Batches of `batch_size` rows cut from all files' rows in order: only the last may be
        smaller, and `drop_remainder` drops just that one."""
        if args or kwargs:
            return super().batch(batch_size, drop_remainder, *args, **kwargs)
        return self._reader.batches(batch_size, drop_remainder)

    def shuffle_batch(
        self,
        batch_size: int,
        drop_remainder: bool = False,
        buffer_size: int | None = None,
        seed: int | None = None,
        reshuffle_each_iteration: bool | None = None,
    ) -> tf.data.Dataset:
        """Batches of `batch_size` rows drawn at random, row by row, from a buffer of
        `buffer_size` rows (default: `batch_size`) filled from the files in order; with a
        `seed`, the same order every run (a new one each iteration unless
        `reshuffle_each_iteration=False`)."""
        buffer = batch_size if buffer_size is None else buffer_size
        if isinstance(buffer, bool) or not isinstance(buffer, int) or buffer < 1:
            raise ValueError(f"buffer_size must be a positive number of rows, got {buffer_size!r}")
        again = True if reshuffle_each_iteration is None else bool(reshuffle_each_iteration)
        return self._reader.batches(batch_size, drop_remainder, shuffle=(buffer, seed, again))


class ParquetDataset(_ReadDataset):
    """HybridBackend's `hb.data.ParquetDataset`: a `tf.data.Dataset` of batches of `batch_size`
    rows in which list columns stay `DataFrame.Value`s (flat values and row splits), for
    `rebatch(n)`, `parse()` or `DataFrame.parse`. Batches are cut from all files' rows in
    order (only the last may be smaller; `drop_remainder` drops it).

    Example:
        >>> import pyarrow as pa, pyarrow.parquet as pq
        >>> pq.write_table(pa.table({"tags": [[7], [], [8, 9]]}), "micro.parquet")
        >>> batch = next(iter(ParquetDataset("micro.parquet", batch_size=2)))
        >>> batch["tags"].to_ragged().to_list()
        [[7], []]
    """

    def __init__(
        self,
        filenames,
        batch_size: int = 1,
        fields=None,
        partition_count: int = 1,
        partition_index: int = 0,
        skip_corrupted_data: bool = False,
        drop_remainder: bool = False,
        num_parallel_reads: int | None = None,
        num_sequential_reads: int = 1,
        num_parallel_parser_calls: int | None = None,
        field_ignore_case: bool = False,
    ):
        del num_sequential_reads, num_parallel_parser_calls  # HybridBackend's thread settings
        row_group_range(1, partition_count, partition_index)
        options = _Options(
            "parquet", None, partition_count, partition_index, field_ignore_case, skip_corrupted_data
        )
        reader = _Reader(filenames, fields, None, num_parallel_reads, options)
        super().__init__(reader, reader.batches(batch_size, drop_remainder, values=True))

    @property
    def fields(self) -> list:
        """The fields read from the files."""
        return [f for f in self._reader.fields if f.default_value is None]


def rebatch(batch_size: int, drop_remainder: bool = False, fields=None):
    """HybridBackend's `hb.data.rebatch`: a dataset of batches (of `ParquetDataset`, or any
    batches of tensors and `DataFrame.Value`s) recut into batches of exactly `batch_size` rows
    (but the last; `drop_remainder` drops it). Use with `dataset.apply(rebatch(n))`."""
    del fields  # the batches say what they hold

    @single_device
    def apply(dataset: tf.data.Dataset) -> tf.data.Dataset:
        if isinstance(dataset, ParquetDataset):  # read again at the size wanted: no per-row work
            return dataset._reader.batches(batch_size, drop_remainder, values=True)
        names = list(dataset.element_spec)
        as_ragged = dataset.map(
            lambda batch: {n: v.to_ragged() if isinstance(v, _Value) else v for n, v in batch.items()}
        )
        cut = as_ragged.unbatch().batch(batch_size, drop_remainder=drop_remainder)
        return cut.map(
            lambda batch: {
                n: _Value(batch[n].flat_values, batch[n].nested_row_splits)
                if isinstance(batch[n], tf.RaggedTensor)
                else batch[n]
                for n in names
            }
        )

    return apply


def read_parquet(
    batch_size: int,
    fields=None,
    partition_count: int = 1,
    partition_index: int = 0,
    drop_remainder: bool = False,
    num_parallel_reads: int | None = None,
    num_sequential_reads: int = 1,
):
    """HybridBackend's `hb.data.read_parquet`: `filenames.apply(read_parquet(n, fields))` reads
    a `tf.data.Dataset` of file names as a `ParquetDataset` (in a graph, `fields` must be
    complete: name, dtype and ragged_rank each)."""

    def apply(filenames):
        return ParquetDataset(
            filenames,
            batch_size=batch_size,
            fields=fields,
            partition_count=partition_count,
            partition_index=partition_index,
            drop_remainder=drop_remainder,
            num_parallel_reads=num_parallel_reads,
            num_sequential_reads=num_sequential_reads,
        )

    return apply


def _dedup_of(key_idx_field_names, value_field_names) -> _Dedup:
    if len(key_idx_field_names or ()) != len(value_field_names or ()):
        raise ValueError("give one index column (key_idx_field_names) per group of value_field_names")
    return _Dedup(tuple(key_idx_field_names), tuple(tuple(g) for g in value_field_names), blocks=True)


def deduplicate(key_idx_field_names: Sequence[str], value_field_names: Sequence[Sequence[str]], fields=None):
    """HybridBackend's `hb.data.deduplicate`: `dataset.apply(deduplicate(["user-index"],
    [["user", "user-age"]]))` restores the rows of batches of deduplicated blocks (a
    `ParquetDataset` of files written deduplicated, each stored row a block): a batch of n
    blocks becomes their rows, in order, each group's values taken at each row's index, the
    other columns' lists of rows unlisted. (`Dataset.from_parquet(key_idx_field_names=...,
    value_field_names=...)` does it for you.)

    Raises:
        ValueError: the two lists differ in length, or name a column the dataset lacks.
    """
    del fields  # the batches say what they hold
    dedup = _dedup_of(key_idx_field_names, value_field_names)

    @single_device
    def apply(dataset: tf.data.Dataset) -> tf.data.Dataset:
        names = list(dataset.element_spec)
        missing = [c for c in (*dedup.indexes, *(c for g in dedup.groups for c in g)) if c not in names]
        if missing:
            raise ValueError(f"deduplicate: {missing} are not columns of the dataset, which has {names}")
        return dataset.map(functools.partial(_restored, dedup=dedup, names=names))

    return apply


def populate_defaults(all_fields, batch_size: int | None = None, num_parallel_calls=None):
    """HybridBackend's `hb.data.populate_defaults`: `dataset.apply(populate_defaults(
    ds.all_fields, n))` adds each field with a `default_value` that a batch lacks, once per row
    of the batch (HybridBackend tiles it `batch_size` times, which differs only for a batch of
    another size: a last, smaller one, or restored rows).
    """
    del batch_size  # each batch's own number of rows
    defaults = [f for f in all_fields if f.default_value is not None]

    def add(batch):
        missing = [f for f in defaults if f.name not in batch]
        if not missing:
            return batch
        return {**batch, **_defaults_for(missing, _batch_rows(next(iter(batch.values()))))}

    return single_device(lambda dataset: dataset.map(add, num_parallel_calls=num_parallel_calls))


def parse(pad=False):
    """HybridBackend's `hb.data.parse`: `dataset.apply(parse())` turns each batch's
    `DataFrame.Value`s into `tf.SparseTensor`s (padded dense tensors with `pad`)."""
    return single_device(lambda dataset: dataset.map(lambda batch: DataFrame.parse(batch, pad=pad)))


def _tabular(filenames, fields, field_map_fn, to_dense, reads, options: _Options, batch_size, drop_remainder):
    """`from_parquet` / `from_orc`: the rows, or their batches with `batch_size`."""
    if field_map_fn is not None:
        fields = field_map_fn(fields)
    row_group_range(1, options.partition_count, options.partition_index)  # checks the two
    reader = _Reader(filenames, fields, to_dense, reads, options)
    if batch_size is not None:  # the batches only (no row-level dataset to build)
        return reader.batches(batch_size, drop_remainder)
    return TabularDataset(reader)


class Dataset:
    """HybridBackend-style constructors of datasets of tabular files."""

    @staticmethod
    def from_parquet(
        filenames,
        fields=None,
        partition_count: int = 1,
        partition_index: int = 0,
        skip_corrupted_data: bool = False,
        field_ignore_case: bool = False,
        to_dense=False,
        num_parallel_reads: int | None = None,
        num_parallel_parser_calls: int | None = None,
        field_map_fn=None,
        key_idx_field_names: Sequence[str] | None = None,
        value_field_names: Sequence[Sequence[str]] | None = None,
        batch_size: int | None = None,
        drop_remainder: bool = False,
    ):
        """Parquet files as a `TabularDataset` (rows; `.batch(n)` / `.shuffle_batch(n, ...)`
        for batches), with HybridBackend's arguments (see the module docstring).

        Args:
            filenames: a path, a list of paths, or a `tf.data.Dataset` of paths (in a graph,
                `fields` must then be complete: name, dtype and ragged_rank each).
            fields: `DataFrame.Field`s or column names to read (only those columns are read);
                None reads every column, typed from the first file's schema. A field with a
                `default_value` is not read: it is that value in every row.
            partition_count, partition_index: read only partition `partition_index` of each
                file's row groups split into `partition_count` contiguous parts (one worker of
                several).
            skip_corrupted_data: a file that cannot be read past some row is skipped from there
                (with a warning) instead of failing the read.
            field_ignore_case: a field not found by its name takes the column named alike but
                for case.
            to_dense: True, or the names of list fields, to pad into dense tensors; other
                variable-length lists are `tf.SparseTensor`s; fields with a `shape` are dense.
            num_parallel_reads: files read at once (None / AUTOTUNE: one per CPU; rows still
                come file after file, in order).
            num_parallel_parser_calls: accepted for HybridBackend's code (columns are converted
                by the dataset's graph).
            field_map_fn: a function given the fields and returning the fields to read.
            key_idx_field_names, value_field_names: files written deduplicated
                (`DeduplicateFeatures`): each group's index column (`user-index`) and its value
                columns (`["user", "user-feat-0"]`); the original rows are restored, and, as in
                HybridBackend, a batch of n holds the rows of n stored blocks.
            batch_size: give it to get the batches at once (`.batch(batch_size, drop_remainder)`).

        Raises:
            ValueError: a field names a missing column or the wrong nesting (naming the file).
            TypeError: a column's type is not one `DataFrame.Field` takes.
        """
        del num_parallel_parser_calls  # HybridBackend's column-parsing threads: none here
        dedup = None
        if key_idx_field_names or value_field_names:
            dedup = _dedup_of(key_idx_field_names, value_field_names)
        options = _Options(
            "parquet", dedup, partition_count, partition_index, field_ignore_case, skip_corrupted_data
        )
        return _tabular(
            filenames, fields, field_map_fn, to_dense, num_parallel_reads, options, batch_size, drop_remainder
        )

    @staticmethod
    def from_orc(
        filenames,
        fields=None,
        partition_count: int = 1,
        partition_index: int = 0,
        skip_corrupted_data: bool = False,
        field_ignore_case: bool = False,
        to_dense=False,
        num_parallel_reads: int | None = None,
        num_parallel_parser_calls: int | None = None,
        field_map_fn=None,
        batch_size: int | None = None,
        drop_remainder: bool = False,
    ):
        """ORC files as `from_parquet` reads Parquet files (stripes as row groups)."""
        del num_parallel_parser_calls
        options = _Options(
            "orc", None, partition_count, partition_index, field_ignore_case, skip_corrupted_data
        )
        return _tabular(
            filenames, fields, field_map_fn, to_dense, num_parallel_reads, options, batch_size, drop_remainder
        )

    @staticmethod
    @single_device
    def from_output(output_dir: str, split: str = "train", batch_size: int = 128, num_parallel_reads=None):
        """A Parquet output of ours (`--output_format parquet`) as the tensors its metadata
        describes, the same as `make_dataset` gives for a TFRecord output: fixed shapes dense,
        variable lists ragged, sparse tensors `tf.SparseTensor`s of the recorded size.

        Raises:
            ValueError: no `_SUCCESS`, no such split, or not a Parquet output.
        """
        root, folder, metadata, data = committed_split(output_dir, split)
        if data.get("format") != "parquet":
            raise ValueError(f"{root} has no Parquet {folder} split; read TFRecord outputs with make_dataset")
        if data.get("partitionColumns"):
            raise ValueError(f"{root}/{folder} is partitioned; from_output reads unpartitioned outputs")
        files = [posixpath.join(root, folder, f) for f in data["files"]]
        entries = [*metadata["features"], *metadata["labels"], *metadata.get("extraColumns", [])]
        fields, sparse = [], {}
        for entry in entries:
            parse = entry["parse"]
            if parse["type"] == "SparseFeature":
                fields += [_Field(parse["indexKey"]), _Field(parse["valueKey"])]
                sparse[entry["name"]] = (parse["indexKey"], parse["valueKey"], parse.get("size"))
            elif parse["type"] == "FixedLenFeature" and parse["shape"]:
                fields.append(_Field(entry["name"], ragged_rank=len(parse["shape"])))
            else:
                fields.append(_Field(entry["name"]))
        shapes = {e["name"]: e["parse"]["shape"] for e in entries if e["parse"]["type"] == "FixedLenFeature"}
        dedup = None
        if data.get("deduplication"):
            info = data["deduplication"]
            dedup = _Dedup(tuple(info["indexes"]), tuple(tuple(g) for g in info["groups"]))
        options = _Options("parquet", dedup)
        dataset = _Reader(files, fields, None, num_parallel_reads, options).batches(batch_size, values=True)

        def to_tensors(batch):
            out = {}
            for name, value in batch.items():
                if isinstance(value, _Value):
                    ragged = value.to_ragged()
                    out[name] = (
                        tf.reshape(ragged.flat_values, [-1, *shapes[name]]) if shapes.get(name) else ragged
                    )
                else:
                    out[name] = value
            for name, (indices, values, size) in sparse.items():
                ids, vals = out.pop(indices), out.pop(values)
                rows = tf.cast(ids.value_rowids(), tf.int64)
                dense = [
                    ids.nrows(),
                    size if size is not None else tf.reduce_max(ids.flat_values, initial=-1) + 1,
                ]
                out[name] = tf.sparse.reorder(
                    tf.SparseTensor(tf.stack([rows, ids.flat_values], axis=1), vals.flat_values, dense)
                )
            return out

        return Batches(dataset.map(to_tensors, num_parallel_calls=tf.data.AUTOTUNE))
