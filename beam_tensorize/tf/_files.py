"""Tabular files read by `Dataset.from_parquet` / `from_orc`: a Parquet or ORC file's Arrow
schema, the fields resolved against it (a declared dtype that cannot hold the column's values is
an error, never a silent cast), and its rows of the selected columns in record batches (its
share of row groups with `partition_count`; deduplicated files as their stored blocks).

Example:
    >>> import pyarrow as pa, pyarrow.parquet as pq
    >>> pq.write_table(pa.table({"id": [1, 2, 3]}), "files-example.parquet")
    >>> fields = _resolve_fields(_open("files-example.parquet").schema_arrow, None, "files-example.parquet")
    >>> [batch.num_rows for batch in _file_batches("files-example.parquet", fields, _Options(), rows=2)]
    [2, 1]
"""

from __future__ import annotations

import functools
import logging
import os
from collections.abc import Collection, Iterator, Sequence
from typing import NamedTuple

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.orc as paorc
import tensorflow as tf

from beam_tensorize.kernels.filesystems import filesystem_for
from beam_tensorize.kernels.output.dedup import restore_block
from beam_tensorize.tf._compat import decoding_pool, parquet_file
from beam_tensorize.tf._rows import CUT, row_group_range
from beam_tensorize.tf.dataframe import DataFrame

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
        if isinstance(filesystem, pafs.LocalFileSystem) and file_format == "parquet":
            # a local file's pages are decoded where the kernel keeps them: not copied into
            # fresh memory first (a row group is read whole for its first batch; 6-13% of the
            # CPU time of HybridBackend's benchmark). A file cut short while it is read ends
            # the process (SIGBUS), as with any mapped file; replaced by a rename, it is not.
            handle = self._handle = pa.memory_map(inner)
        else:
            handle = self._handle = filesystem.open_input_file(inner)
        if file_format == "orc":
            self._orc = paorc.ORCFile(handle)
            self.schema_arrow = self._orc.schema
        else:
            self._parquet = parquet_file(handle, pool=_POOL)
            self.schema_arrow = self._parquet.schema_arrow
        self._format = file_format
        #: the file opened again to read given string columns through their dictionaries
        self._through: dict[tuple[str, ...], object] = {}

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
                key = tuple(dictionaries)
                if key not in self._through:
                    self._through[key] = parquet_file(self._handle, reader.metadata, list(key), _POOL)
                reader = self._through[key]
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


def _searched_names(schema: pa.Schema, ignore_case: bool) -> Collection[str]:
    """A file's column names as `_column_of` searches them: a set (`schema.names` is a new
    list at each call), or the list itself where a name may match but for case."""
    names = schema.names
    return names if ignore_case else frozenset(names)


def _column_of(names: Collection[str], name: str, ignore_case: bool) -> str | None:
    """The file's column (of its columns' `names`) for field `name` (with `ignore_case`, a
    column named alike but for case when none is named exactly so, as HybridBackend's
    `field_ignore_case`)."""
    if name in names:
        return name
    if ignore_case:
        alike = [c for c in names if c.lower() == name.lower()]
        if alike:
            return alike[0]
    return None


def _resolve_fields(schema: pa.Schema, fields, path: str, ignore_case: bool = False) -> list[_Field]:
    """The fields to read: given ones (names or `Field`s) completed from the file's schema.
    Fields with a `default_value` are not read (HybridBackend's rule): they are kept as given."""
    if fields is None:
        fields = schema.names
    names = _searched_names(schema, ignore_case)
    resolved = []
    for field in fields:
        field = field if isinstance(field, _Field) else _Field(field)
        if field.default_value is not None:
            resolved.append(field)
            continue
        column = _column_of(names, field.name, ignore_case)
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
    path: str,
    fields: Sequence[_Field],
    options: _Options,
    rows: int,
    first: int = 0,
    resolved_on: pa.Schema | None = None,
) -> Iterator[pa.RecordBatch]:
    """One file's rows of `fields` (named as the fields; of its share of row groups with
    `partition_count`), in record batches of about `rows` rows.

    With `first` (a Parquet file's, not deduplicated): its first `first` rows come alone, read
    by a reader of their own, each followed by a `CUT`: a new iterator's first batch costs
    decoding those rows, not a whole chunk (the rows are decoded again by the reader of the
    rest, which starts with its row group). `resolved_on`: the schema `fields` were resolved
    against; a file of that very schema is not checked again."""
    file = _open(path, options.file_format)
    schema = file.schema_arrow
    dedup = options.dedup
    if dedup is not None:
        schema = dedup.restored_schema(schema)
    if resolved_on is None or not schema.equals(resolved_on):
        _check_fields(schema, fields, path, options.ignore_case)
    names = _searched_names(schema, options.ignore_case)
    columns = {f.name: _column_of(names, f.name, options.ignore_case) for f in fields}
    groups = None
    if options.partition_count > 1:
        groups = list(row_group_range(file.row_groups, options.partition_count, options.partition_index))
    if dedup is None:
        strings = [columns[f.name] for f in fields if f.dtype == tf.string and f.ragged_rank == 0]
        batches_of = functools.partial(
            file.iter_batches,
            columns=list(columns.values()),
            dictionaries=file.dictionary_encoded(strings),
            row_groups=groups,
        )
        if first and options.file_format == "parquet":
            batches = _started(batches_of, rows, first)
        else:
            batches = batches_of(rows)
    else:
        stored = file.iter_batches(_BLOCKS_PER_READ, dedup.stored(list(columns.values())), (), groups)
        batches = (
            restore_block(blocks, dedup.groups, dedup.others(list(columns.values())), dedup.indexes)
            for blocks in stored
        )
    read = 0
    try:
        for batch in batches:
            if batch is CUT:
                yield batch
                continue
            read += batch.num_rows
            yield pa.RecordBatch.from_arrays([batch.column(c) for c in columns.values()], names=list(columns))
    except (pa.ArrowException, OSError) as error:
        if not options.skip_corrupted_data:
            raise ValueError(
                f"{path}: the data after row {read} cannot be read ({error}); the file is damaged "
                "(skip_corrupted_data=True reads the other files and skips the rest of this one)"
            ) from None
        _LOGGER.warning("skipping the rest of %s after row %d: %s", path, read, error)


def _started(read, rows: int, first: int) -> Iterator:
    """`read(rows)`'s batches, its first `first` rows (read by `read(first)`) coming before
    them alone, each part followed by a `CUT` when it is a whole number of `first` rows.
    (A reader may cut its batches at row groups: a dictionary-encoded column's do.)"""
    got = 0
    for piece in read(first):
        take = min(piece.num_rows, first - got)
        yield piece if take == piece.num_rows else piece.slice(0, take)
        got += take
        if got == first:
            break
    if got < first:  # the whole file
        return
    yield CUT
    skip, rest = first, iter(read(rows))
    for piece in rest:
        if skip >= piece.num_rows:
            skip -= piece.num_rows
            continue
        piece = piece.slice(skip)
        yield piece
        if piece.num_rows % first == 0:
            yield CUT
        break
    yield from rest


#: Deduplicated blocks read from a file at a time.
_BLOCKS_PER_READ = 16


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
