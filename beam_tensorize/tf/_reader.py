"""The reading side of `Dataset.from_parquet`: `_Reader` turns files into a `tf.data.Dataset`
of batches. The files' rows are one stream (`_rows`), cut into chunks of a whole number of
batches across file boundaries; a chunk crosses into TensorFlow in one Python step and the
batches are cut out of it by one `map` (see `_chunks`), which also finishes them (sparse or
padded lists, defaults, the fields' order).

Example:
    >>> import pyarrow as pa, pyarrow.parquet as pq
    >>> pq.write_table(pa.table({"id": [1, 2, 3]}), "reader-example.parquet")
    >>> [batch["id"].numpy().tolist() for batch in _Reader(["reader-example.parquet"]).batches(2)]
    [[1, 2], [3]]
"""

from __future__ import annotations

import functools
import itertools
import logging
import os
from collections.abc import Iterator, Sequence

import numpy as np
import tensorflow as tf

from beam_tensorize.tf._chunks import Layout
from beam_tensorize.tf._compat import single_device
from beam_tensorize.tf._files import (
    _Dedup,
    _file_batches,
    _open,
    _Options,
    _resolve_fields,
)
from beam_tensorize.tf._iterators import Batches
from beam_tensorize.tf._rows import in_order, joined, shuffled
from beam_tensorize.tf.dataframe import DataFrame

_LOGGER = logging.getLogger(__name__)

_Field = DataFrame.Field
_Value = DataFrame.Value


#: Rows (about; a whole number of batches) read from a file and handed to TensorFlow at a
#: time: one Python step per chunk, not per batch.
_CHUNK_ROWS = 8192


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
        #: the schema the fields were resolved against (files of that schema need no check)
        self._schema = None
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
            self._schema = schema
        self._read_fields = [f for f in self.fields if f.default_value is None]
        self._defaults = [f for f in self.fields if f.default_value is not None]
        if not self._read_fields:
            raise ValueError("fields: every field has a default_value; name at least one column to read")
        #: The fields padded into dense tensors (`to_dense`: True for every list, or names).
        self._padded = frozenset(
            (f.name for f in self._read_fields) if to_dense is True else (to_dense or ())
        )
        if num_parallel_reads is None or num_parallel_reads == tf.data.AUTOTUNE:
            num_parallel_reads = min(len(self._names or ()), os.cpu_count() or 1) or 1
        self._reads = max(1, int(num_parallel_reads))

    @single_device
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

        # a new iterator's first batch comes alone: no waiting for a whole chunk decoded
        alone = batch_size if shuffle is None and chunk > batch_size and dedup is None else 0

        def stream(names) -> Iterator[dict]:
            sources = [
                functools.partial(
                    _file_batches,
                    n.decode() if isinstance(n, bytes) else n,
                    fields,
                    options,
                    chunk,
                    first=alone if index == 0 else 0,
                    resolved_on=self._schema,
                )
                for index, n in enumerate(names)
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
            return Batches(layout.batches(chunks, drop_remainder, finish))
        dataset = layout.batches(chunks, drop_remainder)
        names = [f.name for f in self._read_fields]
        dataset = dataset.map(functools.partial(_restored, dedup=dedup, names=names))
        if finish is not None:
            first = names[0]
            dataset = dataset.map(lambda batch: finish(batch, _batch_rows(batch[first])))
        return Batches(dataset)

    def _sparse_names(self) -> list[str]:
        """The list fields that become `tf.SparseTensor`s (not padded, no fixed shape)."""
        padded = self._padded
        return [f.name for f in self._read_fields if f.ragged_rank and not f.shape and f.name not in padded]

    def _finisher(self, values: bool):
        """What makes a cut batch (and its number of rows) what the dataset gives, or None
        when it is that already: lists as sparse (or padded) tensors, or, with `values`, kept
        as `DataFrame.Value`s (those of a fixed shape with values `[rows, *shape]`); the
        defaults added; the fields in their order."""
        fields, defaults, pad = self._read_fields, self._defaults, sorted(self._padded)
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


def _batch_rows(value) -> tf.Tensor:
    """The number of rows of one column of a batch, whatever its form."""
    if isinstance(value, _Value):
        return tf.shape(value.nested_row_splits[0], out_type=tf.int64)[0] - 1
    if isinstance(value, tf.SparseTensor):
        return value.dense_shape[0]
    if isinstance(value, tf.RaggedTensor):
        return value.nrows()
    return tf.shape(value, out_type=tf.int64)[0]
