"""`Dataset.from_parquet`: Parquet files into batches of tensors, as HybridBackend's
`hb.data.Dataset.from_parquet` reads them.

The files' rows are one stream (`_rows`): files read one after another with pyarrow (only
the selected fields; with `num_parallel_reads`, several read ahead by threads, consumed in
order), cut into chunks of a whole number of batches across file boundaries. A chunk crosses
into TensorFlow in one Python step, its columns grouped into few arrays (see `_chunks`), and
the batches are cut out of it by ops of the dataset's graph: no Python per batch, none per
row. So batches span files, as HybridBackend's do: only the very last may be smaller. A scalar
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
import itertools
import logging
import os
import posixpath
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.orc as paorc
import tensorflow as tf

from beam_tensorize.kernels.filesystems import filesystem_for
from beam_tensorize.kernels.output.dedup import restore_block
from beam_tensorize.tf._chunks import Layout
from beam_tensorize.tf._compat import decoding_pool, parquet_file
from beam_tensorize.tf._rows import in_order, joined, row_group_range, shuffled
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


#: Where Parquet pages are decoded (see `decoding_pool`).
_POOL = decoding_pool()


def _filesystem(path: str) -> tuple[pafs.FileSystem, str]:
    return filesystem_for(path)


class _TableFile:
    """One Parquet or ORC file: its Arrow schema and its batches of selected columns."""

    def __init__(self, path: str, file_format: str):
        filesystem, inner = _filesystem(path)
        handle = self._handle = filesystem.open_input_file(inner)
        if file_format == "orc":
            self._orc = paorc.ORCFile(handle)
            self.schema_arrow = self._orc.schema
        else:
            self._parquet = parquet_file(handle, pool=_POOL)
            self.schema_arrow = self._parquet.schema_arrow
        self._format = file_format

    def dictionary_encoded(self, columns: Sequence[str]) -> list[str]:
        """Those of `columns` (top-level) that every row group stores with a dictionary
        holding at most half of the column's bytes: read through it, they skip making a
        string per row. A dictionary as large as that is one of mostly distinct values, or
        one that overflowed into plain pages (which pyarrow would then hash back into a
        dictionary, slower than reading them plain)."""
        if self._format != "parquet":
            return []
        metadata = self._parquet.metadata
        paths = {metadata.schema.column(i).path: i for i in range(metadata.num_columns)}

        def small(chunk) -> bool:
            if chunk.physical_type != "BYTE_ARRAY" or not chunk.has_dictionary_page:
                return False
            if chunk.dictionary_page_offset is None:
                return False
            return 2 * (chunk.data_page_offset - chunk.dictionary_page_offset) <= chunk.total_compressed_size

        return [
            name
            for name in columns
            if name in paths
            and all(small(metadata.row_group(g).column(paths[name])) for g in range(metadata.num_row_groups))
        ]

    @property
    def row_groups(self) -> int:
        """Row groups (ORC: stripes) of the file."""
        return self._parquet.metadata.num_row_groups if self._format == "parquet" else self._orc.nstripes

    def iter_batches(
        self,
        batch_size: int,
        columns: list[str],
        dictionaries: Sequence[str] = (),
        row_groups: Sequence[int] | None = None,
    ) -> Iterator[pa.RecordBatch]:
        """Batches of `columns` (of `row_groups` only, if given); those of `dictionaries`
        (string columns stored with a dictionary) come as dictionary arrays: decoding skips
        making each row's string."""
        if self._format == "parquet":
            # pyarrow's decoding threads only help a process that may use more than one CPU
            threads = len(os.sched_getaffinity(0)) > 1 if hasattr(os, "sched_getaffinity") else True
            reader = self._parquet
            if dictionaries:
                reader = parquet_file(self._handle, reader.metadata, list(dictionaries), _POOL)
            if row_groups is not None and not row_groups:
                return
            yield from reader.iter_batches(
                batch_size=batch_size, columns=columns, use_threads=threads, row_groups=row_groups
            )
            return
        for stripe in range(self._orc.nstripes) if row_groups is None else row_groups:
            batch = self._orc.read_stripe(stripe, columns=columns)
            yield from pa.Table.from_batches([batch]).to_batches(max_chunksize=batch_size)


def _open(path: str, file_format: str = "parquet") -> _TableFile:
    return _TableFile(path, file_format)


def _leaf(typ: pa.DataType) -> tuple[pa.DataType, int]:
    depth = 0
    while pa.types.is_list(typ) or pa.types.is_large_list(typ) or pa.types.is_fixed_size_list(typ):
        typ, depth = typ.value_type, depth + 1
    return typ, depth


def _tf_dtype(typ: pa.DataType, name: str) -> tf.DType:
    if (
        pa.types.is_string(typ)
        or pa.types.is_large_string(typ)
        or pa.types.is_binary(typ)
        or pa.types.is_large_binary(typ)
    ):
        return tf.string
    try:
        dtype = tf.as_dtype(typ.to_pandas_dtype())
    except (NotImplementedError, TypeError):
        dtype = None
    if dtype is None or dtype.name not in DataFrame.dtypes():
        raise TypeError(f"column {name!r} has type {typ}; fields take {', '.join(DataFrame.dtypes())} values")
    return dtype


def _keeps_every_value(stored: tf.DType, wanted: tf.DType) -> bool:
    """Whether every value of `stored` reads as `wanted` unchanged (HybridBackend refuses other
    dtypes; numpy's cast would turn 2**40 + 5 into 5 as int32, and 1.5 into 1 as int64)."""
    if stored == wanted:
        return True
    if stored == tf.string or wanted == tf.string:
        return False
    if wanted.is_floating:
        if stored.is_floating:
            return stored.size <= wanted.size
        return stored.is_integer and stored.size * 8 <= {2: 11, 4: 24, 8: 53}[wanted.size]
    if stored.is_floating or not wanted.is_integer:
        return False
    if stored.is_unsigned:
        return wanted.size > stored.size or (wanted.is_unsigned and wanted.size >= stored.size)
    return not wanted.is_unsigned and wanted.size >= stored.size


def _column_of(schema: pa.Schema, name: str, ignore_case: bool) -> str | None:
    """The file's column for field `name` (with `ignore_case`, a column named alike but for
    case when none is named exactly so, as HybridBackend's `field_ignore_case`)."""
    if name in schema.names:
        return name
    if ignore_case:
        alike = [c for c in schema.names if c.lower() == name.lower()]
        if alike:
            return alike[0]
    return None


def _resolve_fields(schema: pa.Schema, fields, path: str, ignore_case: bool = False) -> list[_Field]:
    """The fields to read: given ones (names or `Field`s) completed from the file's schema.
    Fields with a `default_value` are not read (HybridBackend's rule): they are kept as given."""
    if fields is None:
        fields = schema.names
    resolved = []
    for field in fields:
        field = field if isinstance(field, _Field) else _Field(field)
        if field.default_value is not None:
            resolved.append(field)
            continue
        column = _column_of(schema, field.name, ignore_case)
        if column is None:
            raise ValueError(f"{path}: no column {field.name!r}; the file has {schema.names}")
        leaf, depth = _leaf(schema.field(column).type)
        stored = _tf_dtype(leaf, field.name)
        dtype = field.dtype or stored
        if not _keeps_every_value(stored, dtype):
            raise TypeError(
                f"{path}: column {field.name!r} holds {stored.name} values, which dtype {dtype.name} "
                f"cannot hold exactly (a {stored.name} would be cut or rounded); give dtype "
                f"{stored.name}, or a wider one, and cast in TensorFlow if you mean to"
            )
        rank = depth if field.ragged_rank is None else field.ragged_rank
        if rank != depth:
            raise ValueError(
                f"{path}: column {field.name!r} is nested {depth} deep; the field says ragged_rank {rank}"
            )
        resolved.append(_Field(field.name, dtype, rank, field.shape))
    return resolved


def _check_fields(schema: pa.Schema, fields: Sequence[_Field], path: str, ignore_case: bool) -> None:
    """Raise naming `path` if a file does not hold `fields` as they were resolved (another file
    of the read may differ from the first one)."""
    found = _resolve_fields(
        schema, [_Field(f.name, f.dtype, f.ragged_rank) for f in fields], path, ignore_case
    )
    for field, there in zip(fields, found, strict=True):
        if there.dtype != field.dtype:
            raise ValueError(
                f"{path}: column {field.name!r} holds {there.dtype.name} values; the field says {field.dtype.name}"
            )


class _Options(NamedTuple):
    """How files are read (`Dataset.from_parquet`'s arguments beside the files and fields)."""

    file_format: str = "parquet"
    dedup: _Dedup | None = None
    partition_count: int = 1
    partition_index: int = 0
    ignore_case: bool = False
    skip_corrupted_data: bool = False


def _file_batches(
    path: str, fields: Sequence[_Field], options: _Options, rows: int
) -> Iterator[pa.RecordBatch]:
    """One file's rows of `fields` (named as the fields; of its share of row groups with
    `partition_count`), in record batches of about `rows` rows."""
    file = _open(path, options.file_format)
    schema = file.schema_arrow
    dedup = options.dedup
    if dedup is not None:
        schema = dedup.restored_schema(schema)
    _check_fields(schema, fields, path, options.ignore_case)
    columns = {f.name: _column_of(schema, f.name, options.ignore_case) for f in fields}
    groups = None
    if options.partition_count > 1:
        groups = list(row_group_range(file.row_groups, options.partition_count, options.partition_index))
    if dedup is None:
        strings = [columns[f.name] for f in fields if f.dtype == tf.string and f.ragged_rank == 0]
        batches = file.iter_batches(rows, list(columns.values()), file.dictionary_encoded(strings), groups)
    else:
        stored = file.iter_batches(_BLOCKS_PER_READ, dedup.stored(list(columns.values())), (), groups)
        batches = (
            restore_block(blocks, dedup.groups, dedup.others(list(columns.values())), dedup.indexes)
            for blocks in stored
        )
    read = 0
    try:
        for batch in batches:
            read += batch.num_rows
            yield pa.RecordBatch.from_arrays([batch.column(c) for c in columns.values()], names=list(columns))
    except (pa.ArrowException, OSError) as error:
        if not options.skip_corrupted_data:
            raise ValueError(
                f"{path}: the data after row {read} cannot be read ({error}); the file is damaged "
                "(skip_corrupted_data=True reads the other files and skips the rest of this one)"
            ) from None
        _LOGGER.warning("skipping the rest of %s after row %d: %s", path, read, error)


#: Deduplicated blocks read from a file at a time.
_BLOCKS_PER_READ = 16

#: Rows (about; a whole number of batches) read from a file and handed to TensorFlow at a
#: time: one Python step per chunk, not per batch.
_CHUNK_ROWS = 8192


class _Dedup(NamedTuple):
    """How a file's rows were deduplicated (HybridBackend's `key_idx_field_names` and
    `value_field_names`): each group's index column and its value columns (the key first).

    Every stored row is a block of rows: each column holds the block's values as a list (a
    group's value columns the distinct ones, its index column each row's place among them).
    With `blocks` (HybridBackend's semantics), a batch of n is n stored blocks, whose rows the
    dataset's graph restores (`_restored`); else n rows, restored as they are read."""

    indexes: tuple[str, ...]
    groups: tuple[tuple[str, ...], ...]
    blocks: bool = False

    def stored(self, names: Sequence[str]) -> list[str]:
        """The stored columns that restore `names`."""
        needed = [c for g in self.groups for c in g] + list(self.indexes)
        return [n for n in names if n not in needed] + needed

    def others(self, names: Sequence[str]) -> list[str]:
        grouped = {c for g in self.groups for c in g}
        return [n for n in names if n not in grouped]

    def restored_schema(self, schema: pa.Schema) -> pa.Schema:
        """The schema of the restored rows: every stored column one list level less (the
        block level); an index column is each row's place among its group's values."""
        return pa.schema([pa.field(f.name, f.type.value_type) for f in schema])

    def stored_fields(self, fields: Sequence[_Field]) -> list[_Field]:
        """The fields that read the stored blocks of (restored) `fields`, and the index
        columns that restore them: one list level more."""
        stored = [_Field(f.name, f.dtype, f.ragged_rank + 1) for f in fields]
        named = {f.name for f in fields}
        return stored + [_Field(i, tf.int64, 1) for i in self.indexes if i not in named]


def _restored(batch: dict, dedup: _Dedup, names: Sequence[str]) -> dict:
    """The rows of a batch of stored blocks (HybridBackend's restoring `parse`), in order: a
    group's value at each row's index in its block; other columns' lists of rows unlisted.
    `names`: the columns to give."""
    index_of = {c: index for index, group in zip(dedup.indexes, dedup.groups) for c in group}
    out = {}
    for name in names:
        stored = batch[name]
        if not isinstance(stored, _Value):
            raise ValueError(
                f"deduplicate: column {name!r} is not a list of a block's values: read deduplicated "
                "files with ParquetDataset (lists as DataFrame.Value), then apply deduplicate"
            )
        index_name = index_of.get(name)
        if index_name is None:
            splits = stored.nested_row_splits
            out[name] = stored.values if len(splits) == 1 else _Value(stored.values, splits[1:])
            continue
        index = batch[index_name]
        block = tf.ragged.row_splits_to_segment_ids(index.nested_row_splits[0])
        splits = stored.nested_row_splits
        positions = tf.gather(splits[0], block) + tf.cast(index.values, splits[0].dtype)
        if len(splits) == 1:
            out[name] = tf.gather(stored.values, positions)
        else:
            entries = tf.RaggedTensor.from_nested_row_splits(stored.values, splits[1:], validate=False)
            rows = tf.gather(entries, positions)
            out[name] = _Value(rows.flat_values, rows.nested_row_splits)
    return out


def _complete(fields) -> bool:
    """Whether `fields` say what a read needs without opening a file (a dtype for each field
    read; a missing ragged_rank means a scalar), as a `Dataset` of file names inside a graph
    requires."""
    return fields is not None and all(
        isinstance(f, _Field) and (f.default_value is not None or f.dtype is not None) for f in fields
    )


class _Reader:
    """Files to be read in batches: `batches(n, ...)` gives the `tf.data.Dataset`."""

    def __init__(self, filenames, fields=None, to_dense=None, num_parallel_reads=None, options=None):
        self._options = options = options or _Options()
        if isinstance(filenames, tf.data.Dataset):
            self._names = None
            self._files = filenames
            if tf.executing_eagerly() and not _complete(fields):
                first = next(iter(filenames)).numpy().decode()
            elif _complete(fields):
                first = None
            else:
                raise ValueError(
                    "fields: a tf.data.Dataset of file names in a graph needs a DataFrame.Field with a "
                    "dtype (and ragged_rank, if not 0) for each column to read: no file can be opened "
                    "to look while the graph is built"
                )
        else:
            names = [filenames] if isinstance(filenames, (str, bytes)) else list(filenames)
            names = [n.decode() if isinstance(n, bytes) else str(n) for n in names]
            if not names:
                raise ValueError("from_parquet needs one or more files")
            self._names = names
            first = names[0]
        if first is None:  # checked against each file when it is read
            self.fields = [
                f
                if f.default_value is not None or f.ragged_rank is not None
                else _Field(f.name, f.dtype, 0, f.shape)
                for f in fields
            ]
        else:
            schema = _open(first, options.file_format).schema_arrow
            dedup = options.dedup
            if dedup is not None:
                stored = [c for g in dedup.groups for c in g] + list(dedup.indexes)
                missing = [c for c in stored if c not in schema.names]
                if missing:
                    raise ValueError(
                        f"{first}: no column(s) {missing} of the deduplicated groups; the file has {schema.names}"
                    )
                schema = dedup.restored_schema(schema)
            self.fields = _resolve_fields(schema, fields, first, options.ignore_case)
        self._read_fields = [f for f in self.fields if f.default_value is None]
        self._defaults = [f for f in self.fields if f.default_value is not None]
        if not self._read_fields:
            raise ValueError("fields: every field has a default_value; name at least one column to read")
        self._to_dense = to_dense
        if num_parallel_reads is None or num_parallel_reads == tf.data.AUTOTUNE:
            num_parallel_reads = min(len(self._names or ()), os.cpu_count() or 1) or 1
        self._reads = max(1, int(num_parallel_reads))

    def batches(
        self,
        batch_size: int,
        drop_remainder: bool = False,
        shuffle: tuple[int, int | None, bool] | None = None,
        values: bool = False,
    ) -> tf.data.Dataset:
        """Batches of `batch_size` rows cut from all files' rows (only the last may be
        smaller; `drop_remainder` leaves it out). `shuffle`: (buffer rows, seed, reshuffle
        each iteration) shuffles rows first. `values`: lists stay `DataFrame.Value`s."""
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive number of rows, got {batch_size!r}")
        fields = self._read_fields
        options, reads = self._options, self._reads
        dedup = options.dedup if options.dedup is not None and options.dedup.blocks else None
        if dedup is not None:  # read the stored blocks as they are; restored below
            fields, options = dedup.stored_fields(fields), options._replace(dedup=None)
        chunk = batch_size * max(1, _CHUNK_ROWS // batch_size)
        # lists that end as sparse tensors get their indices with the chunk (see Layout)
        sparse = () if values or dedup is not None else self._sparse_names()
        layout = Layout(fields, batch_size, one_per_chunk=chunk == batch_size, sparse=sparse)
        iterations = itertools.count()

        def stream(names) -> Iterator[dict]:
            sources = [
                functools.partial(
                    _file_batches, n.decode() if isinstance(n, bytes) else n, fields, options, chunk
                )
                for n in names
            ]
            rows = in_order(sources, reads)
            if shuffle is not None:
                buffer_rows, seed, again = shuffle
                iteration = next(iterations)
                if seed is None:
                    rng = np.random.default_rng()
                else:
                    rng = np.random.default_rng([seed, iteration] if again else seed)
                rows = shuffled(rows, buffer_rows, batch_size, rng)
            for part in joined(rows, chunk):
                yield layout.encode(part)

        signature = layout.signature()
        if self._names is not None:
            chunks = tf.data.Dataset.from_generator(lambda: stream(self._names), output_signature=signature)
        else:
            chunks = self._files.batch(2**31 - 1).flat_map(
                lambda names: tf.data.Dataset.from_generator(
                    stream, args=(names,), output_signature=signature
                )
            )
        finish = self._finisher(values)
        if dedup is None:  # one map: every op in it is paid again by each new iterator
            return layout.batches(chunks, drop_remainder, finish)
        dataset = layout.batches(chunks, drop_remainder)
        names = [f.name for f in self._read_fields]
        dataset = dataset.map(functools.partial(_restored, dedup=dedup, names=names))
        if finish is None:
            return dataset
        first = names[0]
        return dataset.map(lambda batch: finish(batch, _batch_rows(batch[first])))

    def _sparse_names(self) -> list[str]:
        """The list fields that become `tf.SparseTensor`s (not padded, no fixed shape)."""
        padded = {f.name for f in self._read_fields} if self._to_dense is True else set(self._to_dense or ())
        return [f.name for f in self._read_fields if f.ragged_rank and not f.shape and f.name not in padded]

    def _finisher(self, values: bool):
        """What makes a cut batch (and its number of rows) what the dataset gives, or None
        when it is that already: lists as sparse (or padded) tensors, or, with `values`, kept
        as `DataFrame.Value`s (those of a fixed shape with values `[rows, *shape]`); the
        defaults added; the fields in their order."""
        fields, defaults = self._read_fields, self._defaults
        pad = True if self._to_dense is True else list(self._to_dense or ())
        shaped = [f for f in fields if f.shape]
        if values and not shaped and not defaults:
            return None
        names = [f.name for f in self.fields]

        def finish(batch, rows):
            if not values:
                batch = DataFrame.parse(batch, pad=pad, fields=fields)
            elif shaped:
                dense = DataFrame.parse({f.name: batch[f.name] for f in shaped}, fields=shaped)
                batch = {
                    **batch,
                    **{f.name: _Value(dense[f.name], batch[f.name].nested_row_splits) for f in shaped},
                }
            if defaults:
                batch = {**batch, **_defaults_for(defaults, rows)}
            return {name: batch[name] for name in names}

        return finish


def _defaults_for(fields: Sequence[_Field], rows: tf.Tensor) -> dict:
    """Each field's `default_value` for `rows` rows (HybridBackend's `populate_defaults`): a
    value tiled along a new first dimension, a `tf.SparseTensor` once per row."""
    out = {}
    for field in fields:
        default = field.default_value
        if isinstance(default, tf.SparseTensor):
            count = tf.shape(default.indices, out_type=tf.int64)[0]
            rows64 = tf.cast(rows, tf.int64)
            row_ids = tf.reshape(tf.repeat(tf.range(rows64), count), [-1, 1])
            indices = tf.concat([row_ids, tf.tile(default.indices, [rows64, 1])], axis=1)
            shape = tf.concat([[rows64], default.dense_shape], axis=0)
            out[field.name] = tf.SparseTensor(indices, tf.tile(default.values, [rows64]), shape)
        else:
            value = tf.convert_to_tensor(default, dtype=field.dtype)
            out[field.name] = tf.tile(
                value[tf.newaxis], tf.concat([[rows], tf.ones_like(tf.shape(value))], 0)
            )
    return out


class _ReadDataset(tf.data.Dataset):
    """A `tf.data.Dataset` that is `impl`, read by `reader` (which `batch` / `rebatch` use to
    read at another size)."""

    def __init__(self, reader: _Reader, impl: tf.data.Dataset):
        self._reader = reader
        self._impl = impl
        super().__init__(impl._variant_tensor)

    def _inputs(self):
        return self._impl._inputs()

    @property
    def element_spec(self):
        return self._impl.element_spec

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

    return lambda dataset: dataset.map(add, num_parallel_calls=num_parallel_calls)


def _batch_rows(value) -> tf.Tensor:
    """The number of rows of one column of a batch, whatever its form."""
    if isinstance(value, _Value):
        return tf.shape(value.nested_row_splits[0], out_type=tf.int64)[0] - 1
    if isinstance(value, tf.SparseTensor):
        return value.dense_shape[0]
    if isinstance(value, tf.RaggedTensor):
        return value.nrows()
    return tf.shape(value, out_type=tf.int64)[0]


def parse(pad=False):
    """HybridBackend's `hb.data.parse`: `dataset.apply(parse())` turns each batch's
    `DataFrame.Value`s into `tf.SparseTensor`s (padded dense tensors with `pad`)."""
    return lambda dataset: dataset.map(lambda batch: DataFrame.parse(batch, pad=pad))


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

        return dataset.map(to_tensors, num_parallel_calls=tf.data.AUTOTUNE)
