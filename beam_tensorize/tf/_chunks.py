"""Chunks of rows handed from Arrow to TensorFlow, and the batches cut out of them.

`from_parquet` crosses from Python into TensorFlow once per chunk (a whole number of
batches, some thousands of rows), not once per batch, and with few arrays: the columns of a
chunk are grouped by kind, and each group travels as one array.

* scalars of one dtype: a `[columns, rows]` matrix;
* one-level lists of one dtype: their values one after another in one flat array, and a
  `[columns, rows + 1]` matrix of row splits into that array;
* strings (scalars or list values): one bytes buffer and its offsets; `tf.strings.substr` on
  the buffer makes the string tensors (list values once per chunk, scalars batch by batch, so
  that each string is made once);
* deeper lists: each column alone (its values and the splits of each level).

A batch is then a few slicing ops per group in the dataset's graph (`cut`), plus one slice
per list column, whatever the number of rows.

Example:
    >>> import pyarrow as pa
    >>> fields = [DataFrame.Field("id", tf.int64, 0), DataFrame.Field("tags", tf.string, 1)]
    >>> layout = Layout(fields)
    >>> chunk = layout.encode(pa.record_batch({"id": [1, 2, 3], "tags": [["a"], [], ["b", "c"]]}))
    >>> batches = list(layout.batches(layout.tensors(chunk), batch_size=2))
    >>> batches[1]["id"].numpy().tolist(), batches[0]["tags"].to_ragged().to_list()
    ([3], [[b'a'], []])
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import tensorflow as tf

from beam_tensorize.tf.dataframe import DataFrame

__all__ = ["Layout", "rechunk"]

_Value = DataFrame.Value
_SPLITS = tf.int64


def rechunk(batches: Iterator[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    """`batches` cut and joined into record batches of `rows` rows (the last may be smaller);
    batches of that size pass through uncopied."""
    pending: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        if not pending and batch.num_rows == rows:
            yield batch
            continue
        pending.append(batch)
        count += batch.num_rows
        while count >= rows:
            table = pa.Table.from_batches(pending)
            yield table.slice(0, rows).combine_chunks().to_batches()[0]
            pending, count = table.slice(rows).to_batches(), count - rows
    if count:
        yield pa.Table.from_batches(pending).combine_chunks().to_batches()[0]


def _strings(values: pa.Array) -> tuple[memoryview, np.ndarray]:
    """A string or binary array's bytes (a view of its buffer) and their int64 offsets (from
    0; nulls are empty strings)."""
    if values.null_count:
        values = values.fill_null(b"" if pa.types.is_binary(values.type) else "")
    if pa.types.is_large_string(values.type) or pa.types.is_large_binary(values.type):
        kind = np.int64
    elif pa.types.is_string(values.type) or pa.types.is_binary(values.type):
        kind = np.int32
    else:  # dictionary-encoded, string views, ...
        return _strings(values.cast(pa.large_binary()))
    _, offsets, data = values.buffers()
    offsets = np.frombuffer(offsets, kind)[values.offset : values.offset + len(values) + 1]
    first, last = int(offsets[0]), int(offsets[-1])
    data = memoryview(b"") if data is None else memoryview(data)[first:last]
    return data, offsets.astype(np.int64) - first


def _numbers(values: pa.Array, dtype: tf.DType) -> np.ndarray:
    if values.null_count:
        values = values.fill_null(0)
    return values.to_numpy(zero_copy_only=False).astype(dtype.as_numpy_dtype, copy=False)


def _unnest(column: pa.Array, levels: int) -> tuple[pa.Array, list[np.ndarray]]:
    """A list column's flat values and the row splits (from 0) of each of its `levels`."""
    splits = []
    for _ in range(levels):
        if pa.types.is_fixed_size_list(column.type):
            column = column.cast(pa.list_(column.type.value_type))
        offsets = np.asarray(column.offsets, dtype=np.int64)  # null lists: equal offsets (empty)
        splits.append(offsets - offsets[0])
        column = column.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
    return column, splits


def _join_strings(columns: Sequence[pa.Array]) -> tuple[bytes, np.ndarray]:
    """Several string arrays as one bytes buffer and its offsets, one after another."""
    parts = [_strings(c) for c in columns]
    lengths = np.array([len(data) for data, _ in parts], np.int64)
    bases = np.concatenate([[0], np.cumsum(lengths)])
    offsets = [offs[:-1] + base for (_, offs), base in zip(parts, bases[:-1].tolist())]
    offsets.append(bases[-1:])
    return b"".join(data for data, _ in parts), np.concatenate(offsets)


class _Group:
    """Columns of one dtype and nesting carried together (`ragged_rank` 0: a matrix; 1: flat
    values and a matrix of splits; deeper: one column alone)."""

    def __init__(self, fields: Sequence[DataFrame.Field]):
        self.fields = list(fields)
        self.dtype = fields[0].dtype
        self.rank = fields[0].ragged_rank

    def signature(self) -> tuple:
        values = (
            (tf.TensorSpec([], tf.string), tf.TensorSpec([None], tf.int64))
            if self.dtype == tf.string
            else (tf.TensorSpec([None], self.dtype),)
        )
        k = len(self.fields)
        if self.rank == 0:
            splits = ()
        elif self.rank == 1:
            splits = (tf.TensorSpec([k, None], _SPLITS),)
        else:
            splits = tuple(tf.TensorSpec([None], _SPLITS) for _ in range(self.rank))
        return values, splits

    def encode(self, batch: pa.RecordBatch) -> tuple:
        columns = [batch.column(f.name) for f in self.fields]
        if self.rank == 0:
            flat, splits = columns, ()
        elif self.rank == 1:
            flat, offsets = [], []
            base = 0
            for column in columns:
                values, (split,) = _unnest(column, 1)
                flat.append(values)
                offsets.append(split + base)
                base += len(values)
            splits = (np.stack(offsets) if offsets else np.zeros((0, 1), np.int64),)
        else:
            values, levels = _unnest(columns[0], self.rank)
            flat, splits = [values], tuple(levels)
        if self.dtype == tf.string:
            return _join_strings(flat), splits
        numbers = [_numbers(c, self.dtype) for c in flat]
        return (numbers[0] if len(numbers) == 1 else np.concatenate(numbers),), splits

    def tensors(self, encoded: tuple, rows: tf.Tensor) -> tuple:
        """The group's tensors for the whole chunk: scalars as a `[columns, rows]` matrix
        (strings: the buffer and a matrix of their starts and lengths, cut into strings batch
        by batch, so each string is made once)."""
        values, splits = encoded
        k = len(self.fields)
        if self.dtype == tf.string:
            data, offsets = values
            if self.rank == 0:
                bounds = tf.stack([offsets[:-1], offsets[1:] - offsets[:-1]])
                return (data, tf.reshape(bounds, [2, k, rows])), splits
            values = tf.strings.substr(data, offsets[:-1], offsets[1:] - offsets[:-1])
        else:
            (values,) = values
        if self.rank == 0:
            values = tf.reshape(values, [k, rows])
        return values, splits

    def cut(self, tensors: tuple, start: tf.Tensor, end: tf.Tensor) -> dict:
        """Rows `[start, end)` of each of the group's columns."""
        values, splits = tensors
        k = len(self.fields)
        names = [f.name for f in self.fields]
        if self.rank == 0:
            if self.dtype == tf.string:
                data, bounds = values
                piece = bounds[:, :, start:end]
                values = tf.strings.substr(data, piece[0], piece[1])
                return dict(zip(names, tf.unstack(values, num=k)))
            return dict(zip(names, tf.unstack(values[:, start:end], num=k)))
        if self.rank == 1:
            piece = splits[0][:, start : end + 1]
            lows, highs = tf.unstack(piece[:, 0], num=k), tf.unstack(piece[:, -1], num=k)
            rebased = tf.unstack(piece - piece[:, :1], num=k)
            return {
                name: _Value(values[low:high], (s,))
                for name, low, high, s in zip(names, lows, highs, rebased)
            }
        low, high, cut_splits = start, end, []
        for level in splits:
            piece = level[low : high + 1]
            low, high = piece[0], piece[-1]
            cut_splits.append(piece - low)
        return {names[0]: _Value(values[low:high], tuple(cut_splits))}


class Layout:
    """How the fields of a chunk are grouped (see the module docstring)."""

    def __init__(self, fields: Sequence[DataFrame.Field]):
        self.fields = list(fields)
        groups: dict[Any, list[DataFrame.Field]] = {}
        for field in fields:
            key = (field.dtype, field.ragged_rank) if field.ragged_rank <= 1 else field.name
            groups.setdefault(key, []).append(field)
        self._groups = [_Group(g) for g in groups.values()]

    def signature(self) -> dict:
        """The `output_signature` of a generator of `encode`d chunks."""
        return {"rows": tf.TensorSpec([], tf.int64), "groups": tuple(g.signature() for g in self._groups)}

    def encode(self, batch: pa.RecordBatch) -> dict:
        """A record batch (holding the fields' columns) as numpy arrays and bytes."""
        return {"rows": np.int64(batch.num_rows), "groups": tuple(g.encode(batch) for g in self._groups)}

    def tensors(self, chunk: dict) -> dict:
        """An encoded chunk's tensors (strings made, matrices shaped)."""
        chunk = tf.nest.map_structure(tf.convert_to_tensor, chunk)
        rows = chunk["rows"]
        return {
            "rows": rows,
            "groups": tuple(g.tensors(e, rows) for g, e in zip(self._groups, chunk["groups"])),
        }

    def cut(self, chunk: dict, start: tf.Tensor, batch_size: int) -> dict:
        """Rows `[start, start + batch_size)` of a chunk's tensors, as one batch (a dict of
        tensors and `DataFrame.Value`s in the fields' order)."""
        end = tf.minimum(start + batch_size, chunk["rows"])
        batch = {}
        for group, tensors in zip(self._groups, chunk["groups"]):
            batch.update(group.cut(tensors, start, end))
        return {f.name: batch[f.name] for f in self.fields}

    def batches(self, chunk: dict, batch_size: int) -> tf.data.Dataset:
        """The batches of a chunk's tensors."""
        return tf.data.Dataset.range(0, chunk["rows"], batch_size).map(
            lambda start: self.cut(chunk, start, batch_size)
        )
