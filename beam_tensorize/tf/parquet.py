"""`Dataset.from_parquet`: Parquet files into batches of tensors, as HybridBackend's
`hb.data.Dataset.from_parquet` reads them.

Each file is read with pyarrow (only the selected fields) in chunks of a whole number of
batches (`_CHUNK_ROWS`, across row groups); a chunk crosses into TensorFlow in one Python step,
its columns grouped into few arrays (see `_chunks`), and the batches are cut out of it by ops
of the dataset's graph: no Python per batch, none per row. A scalar column becomes a
`tf.Tensor`, a list column a `DataFrame.Value` (flat values and row splits per level), which
`DataFrame.parse` or `to_dense` turns into sparse or padded tensors. Batches do not span files:
each file's last batch may be smaller. Several files are read in parallel (interleaved, in a
deterministic order), a single one in the consuming thread; paths may be local or
`s3://`, `gs://`, `hdfs://` (pyarrow's file systems, see `beam_tensorize.kernels.filesystems`:
S3 takes `AWS_ENDPOINT_URL` and the usual credentials from the environment, GCS
`STORAGE_EMULATOR_HOST` for an emulator).

Example:
    >>> import pyarrow as pa, pyarrow.parquet as pq
    >>> pq.write_table(pa.table({"id": [1, 2, 3], "tags": [[7], [], [8, 9]]}), "example.parquet")
    >>> batch = next(iter(Dataset.from_parquet("example.parquet", batch_size=2, to_dense=True)))
    >>> batch["id"].numpy().tolist(), batch["tags"].numpy().tolist()
    ([1, 2], [[7], [0]])
"""

from __future__ import annotations

import functools
import os
import posixpath
from collections.abc import Iterator, Sequence
from typing import NamedTuple

import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.orc as paorc
import pyarrow.parquet as pq
import tensorflow as tf

from beam_tensorize.kernels.dedup import restore_block
from beam_tensorize.kernels.filesystems import filesystem_for
from beam_tensorize.tf._chunks import Layout, rechunk
from beam_tensorize.tf.dataframe import DataFrame
from beam_tensorize.tf.dataset import committed_split

__all__ = ["Dataset", "ParquetDataset"]

_Field = DataFrame.Field
_Value = DataFrame.Value


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
            self._parquet = pq.ParquetFile(handle, page_checksum_verification=True)
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

    def iter_batches(
        self, batch_size: int, columns: list[str], dictionaries: Sequence[str] = ()
    ) -> Iterator[pa.RecordBatch]:
        """Batches of `columns`; those of `dictionaries` (string columns stored with a
        dictionary) come as dictionary arrays: decoding skips making each row's string."""
        if self._format == "parquet":
            # pyarrow's decoding threads only help a process that may use more than one CPU
            threads = len(os.sched_getaffinity(0)) > 1 if hasattr(os, "sched_getaffinity") else True
            reader = self._parquet
            if dictionaries:
                reader = pq.ParquetFile(
                    self._handle,
                    metadata=reader.metadata,
                    read_dictionary=list(dictionaries),
                    page_checksum_verification=True,
                )
            yield from reader.iter_batches(batch_size=batch_size, columns=columns, use_threads=threads)
            return
        for stripe in range(self._orc.nstripes):
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


def _resolve_fields(schema: pa.Schema, fields, path: str) -> list[_Field]:
    """The fields to read: given ones (names or `Field`s) completed from the file's schema."""
    if fields is None:
        fields = schema.names
    resolved = []
    for field in fields:
        field = field if isinstance(field, _Field) else _Field(field)
        if field.name not in schema.names:
            raise ValueError(f"{path}: no column {field.name!r}; the file has {schema.names}")
        leaf, depth = _leaf(schema.field(field.name).type)
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


def _chunks(
    path: bytes,
    names: Sequence[str],
    layout: Layout,
    batch_size: int,
    file_format: str = "parquet",
    dedup: _Dedup | None = None,
) -> Iterator[dict]:
    """A file's rows in chunks of a whole number of batches (but the last chunk), encoded
    by `layout`."""
    file = _open(path.decode(), file_format)
    chunk = batch_size * max(1, _CHUNK_ROWS // batch_size)
    if dedup is None:
        strings = [f.name for f in layout.fields if f.dtype == tf.string and f.ragged_rank == 0]
        dictionaries = file.dictionary_encoded(strings)
        batches = file.iter_batches(batch_size=chunk, columns=list(names), dictionaries=dictionaries)
    else:
        batches = (
            restore_block(blocks, dedup.groups, dedup.others(names), dedup.indexes)
            for blocks in file.iter_batches(batch_size=_BLOCKS_PER_READ, columns=dedup.stored(names))
        )
    for batch in rechunk(batches, chunk):
        yield layout.encode(batch)


#: Deduplicated blocks read from a file at a time.
_BLOCKS_PER_READ = 16

#: Rows (about; a whole number of batches) read from a file and handed to TensorFlow at a
#: time: one Python step per chunk, not per batch.
_CHUNK_ROWS = 8192


class _Dedup(NamedTuple):
    """How a file's rows were deduplicated (HybridBackend's `key_idx_field_names` and
    `value_field_names`): each group's index column and its value columns (the key first)."""

    indexes: tuple[str, ...]
    groups: tuple[tuple[str, ...], ...]

    def stored(self, names: Sequence[str]) -> list[str]:
        """The stored columns that restore `names`."""
        grouped = {c for g in self.groups for c in g}
        return (
            [n for n in names if n not in grouped] + [c for g in self.groups for c in g] + list(self.indexes)
        )

    def others(self, names: Sequence[str]) -> list[str]:
        grouped = {c for g in self.groups for c in g}
        return [n for n in names if n not in grouped]

    def restored_schema(self, schema: pa.Schema) -> pa.Schema:
        """The schema of the restored rows: every stored column but the indexes, one list
        level less (the block level)."""
        return pa.schema([pa.field(f.name, f.type.value_type) for f in schema if f.name not in self.indexes])


class ParquetDataset:
    """Parquet files to be read in batches (`Dataset.from_parquet` without `batch_size`):
    `.batch(n)` or `.shuffle_batch(n, buffer_size)` gives the `tf.data.Dataset`."""

    def __init__(
        self,
        filenames,
        fields=None,
        to_dense=None,
        num_parallel_reads=None,
        file_format="parquet",
        dedup=None,
    ):
        self._format = file_format
        self._dedup = dedup
        if isinstance(filenames, tf.data.Dataset):
            self._files = filenames
            first = next(iter(filenames)).numpy().decode()
        else:
            names = [filenames] if isinstance(filenames, str) else list(filenames)
            if not names:
                raise ValueError("from_parquet needs one or more files")
            self._files = tf.data.Dataset.from_tensor_slices(names)
            first = names[0]
            if len(names) == 1 and num_parallel_reads is None:
                num_parallel_reads = 1
        schema = _open(first, file_format).schema_arrow
        if dedup is not None:
            stored = [c for g in dedup.groups for c in g] + list(dedup.indexes)
            missing = [c for c in stored if c not in schema.names]
            if missing:
                raise ValueError(
                    f"{first}: no column(s) {missing} of the deduplicated groups; the file has {schema.names}"
                )
            schema = dedup.restored_schema(schema)
        self.fields = _resolve_fields(schema, fields, first)
        self._to_dense = to_dense
        self._reads = tf.data.AUTOTUNE if num_parallel_reads is None else num_parallel_reads

    def batch(self, batch_size: int, drop_remainder: bool = False) -> tf.data.Dataset:
        """Batches of `batch_size` rows (each file's last batch may be smaller; with
        `drop_remainder` those are left out)."""
        dataset = self._read(batch_size)
        if drop_remainder:
            first = self.fields[0]
            dataset = dataset.filter(lambda batch: _rows(batch[first.name], first) == batch_size)
        return self._finish(dataset)

    def shuffle_batch(self, batch_size: int, buffer_size: int, seed: int | None = None) -> tf.data.Dataset:
        """Batches drawn from a buffer of about `buffer_size` rows: the read batches are
        shuffled (`buffer_size // batch_size` at a time) and so are the rows inside each."""
        dataset = self._read(batch_size).shuffle(max(1, buffer_size // batch_size), seed=seed)
        fields = self.fields

        def permute(batch):
            order = tf.random.shuffle(tf.range(_rows(batch[fields[0].name], fields[0])), seed=seed)
            return {f.name: _take(batch[f.name], order, f) for f in fields}

        return self._finish(dataset.map(permute))

    def _read(self, batch_size: int) -> tf.data.Dataset:
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size must be a positive number of rows, got {batch_size!r}")
        layout = Layout(self.fields, batch_size)
        read = functools.partial(
            _chunks,
            names=[f.name for f in self.fields],
            layout=layout,
            batch_size=batch_size,
            file_format=self._format,
            dedup=self._dedup,
        )

        def chunks(path):
            return tf.data.Dataset.from_generator(read, args=(path,), output_signature=layout.signature())

        if self._reads == 1:  # one file at a time: no reading threads to hand batches over
            return layout.batches(self._files.flat_map(chunks))
        return self._files.interleave(
            lambda path: layout.batches(chunks(path)),
            cycle_length=self._reads,
            num_parallel_calls=self._reads,
            deterministic=True,
        )

    def _finish(self, dataset: tf.data.Dataset) -> tf.data.Dataset:
        if self._to_dense:
            pad = True if self._to_dense is True else list(self._to_dense)
            fields = self.fields
            return dataset.map(lambda batch: DataFrame.parse(batch, pad=pad, fields=fields))
        shaped = [f for f in self.fields if f.shape]
        if shaped:
            return dataset.map(
                lambda batch: {
                    **batch,
                    **DataFrame.parse({f.name: batch[f.name] for f in shaped}, fields=shaped),
                }
            )
        return dataset


def _rows(value, field: _Field) -> tf.Tensor:
    """The number of rows of one column's batch."""
    if field.ragged_rank == 0:
        return tf.shape(value)[0]
    return tf.shape(value.nested_row_splits[0])[0] - 1


def _take(value, order, field: _Field):
    if field.ragged_rank == 0:
        return tf.gather(value, order)
    ragged = tf.gather(value.to_ragged(), order)
    return _Value(ragged.flat_values, ragged.nested_row_splits)


class Dataset:
    """HybridBackend-style constructors of datasets of tabular files."""

    @staticmethod
    def from_parquet(
        filenames,
        fields=None,
        batch_size: int | None = None,
        to_dense=None,
        num_parallel_reads: int | None = None,
        key_idx_field_names: Sequence[str] | None = None,
        value_field_names: Sequence[Sequence[str]] | None = None,
    ):
        """Parquet files as batches of tensors (see the module docstring).

        Args:
            filenames: a path, a list of paths, or a `tf.data.Dataset` of paths.
            fields: `DataFrame.Field`s or column names to read (only those columns are read);
                None reads every column, typed from the first file's schema.
            batch_size: rows per batch: the `tf.data.Dataset` itself; None gives a
                `ParquetDataset` to call `.batch(n)` or `.shuffle_batch(n, buffer_size)` on.
            to_dense: True, or the names of list fields, to pad into dense tensors; otherwise
                lists come as `DataFrame.Value`s (see `DataFrame.parse`); fields with a `shape`
                are dense either way.
            num_parallel_reads: files read at once (None: AUTOTUNE, or 1 for a single file;
                1 reads in the consuming thread).
            key_idx_field_names, value_field_names: files written deduplicated
                (`DeduplicateFeatures`): each group's index column (`user-index`) and its value
                columns (`["user", "user-feat-0"]`); the original rows are restored.

        Raises:
            ValueError: a field names a missing column or the wrong nesting (naming the file).
            TypeError: a column's type is not one `DataFrame.Field` takes.
        """
        dedup = None
        if key_idx_field_names or value_field_names:
            if len(key_idx_field_names or ()) != len(value_field_names or ()):
                raise ValueError("give one index column (key_idx_field_names) per group of value_field_names")
            dedup = _Dedup(tuple(key_idx_field_names), tuple(tuple(g) for g in value_field_names))
        dataset = ParquetDataset(filenames, fields, to_dense, num_parallel_reads, dedup=dedup)
        return dataset if batch_size is None else dataset.batch(batch_size)

    @staticmethod
    def from_orc(
        filenames, fields=None, batch_size: int | None = None, to_dense=None, num_parallel_reads=None
    ):
        """ORC files as `from_parquet` reads Parquet files (stripe by stripe)."""
        dataset = ParquetDataset(filenames, fields, to_dense, num_parallel_reads, file_format="orc")
        return dataset if batch_size is None else dataset.batch(batch_size)

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
        dataset = ParquetDataset(files, fields, None, num_parallel_reads, dedup=dedup).batch(batch_size)

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
