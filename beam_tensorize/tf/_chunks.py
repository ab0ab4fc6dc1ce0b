"""Chunks of rows handed from Arrow to TensorFlow, and the batches cut out of them.

`from_parquet` crosses from Python into TensorFlow once per chunk (a whole number of
batches, some thousands of rows), not once per batch, and with few arrays: the columns of a
chunk are grouped by kind, each group travels as one array, laid out batch by batch so that
a batch is one contiguous piece of it.

* scalars of one dtype: a `[batches, columns, batch_size]` array (the last batch padded);
  a batch is one slice of it, which TensorFlow takes without copying, unstacked into columns.
  When each chunk is one batch (batches of `_CHUNK_ROWS` rows or more), numbers skip that
  copy: each column goes as Arrow decoded it (its buffer, 64-byte aligned, which TensorFlow
  also takes without copying), and no op cuts it;
* one-level lists of one dtype: their values in one flat array, batch after batch and, inside
  a batch, column after column; and a `[batches, columns, batch_size + 1]` array of row splits
  (from 0 in each batch and column). A batch is one slice of the values split into columns
  (`tf.split`, one op) and one slice of the splits. Lists that end as `tf.SparseTensor`s
  (`sparse`) travel instead with their indices (`[row, position]` of each value, made in C by
  `_sparseindex`, or numpy) and each batch's dense shapes: a batch is one split of the values
  and one of the indices, no op per column;
* strings (scalars or list values): one bytes buffer and the start and length of each string
  in it, laid out as numbers are; `tf.strings.substr` on the buffer makes the string tensors
  (list values once per chunk, scalars batch by batch, so that each string is made once);
* deeper lists: each column alone (its values and the splits of each level).

The arrays are allocated from Arrow's memory pool, 64-byte aligned as TensorFlow's tensors
are, and the large ones are reused from chunk to chunk once nothing holds them (`_Spare`):
touching fresh pages of memory costs more than filling them.
A batch is then a few ops per group in the dataset's graph (`cut`), whatever the number of
rows and of columns (but deeper lists: a few per column).

Example:
    >>> import pyarrow as pa
    >>> fields = [DataFrame.Field("id", tf.int64, 0), DataFrame.Field("tags", tf.string, 1)]
    >>> layout = Layout(fields, batch_size=2)
    >>> chunk = layout.encode(pa.record_batch({"id": [1, 2, 3], "tags": [["a"], [], ["b", "c"]]}))
    >>> batches = list(layout.batches(tf.data.Dataset.from_tensors(chunk)))
    >>> batches[1]["id"].numpy().tolist(), batches[0]["tags"].to_ragged().to_list()
    ([3], [[b'a'], []])
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import tensorflow as tf

from beam_tensorize.tf.dataframe import DataFrame

__all__ = ["Layout"]

_Value = DataFrame.Value
_SPLITS = tf.int64

try:  # the sparse indices of list columns in C (setup.py builds it where a compiler is)
    from beam_tensorize.tf import _sparseindex as _NATIVE
except ImportError:  # pragma: no cover - numpy does the same
    _NATIVE = None


def _empty(shape: Sequence[int], dtype) -> np.ndarray:
    """An uninitialised array in Arrow's memory pool (64-byte aligned); a large one reuses a
    buffer that nothing holds any more (see `_Spare`)."""
    dtype = np.dtype(dtype)
    count = int(np.prod(shape))
    nbytes = max(1, count * dtype.itemsize)
    buffer = _SPARE.take(nbytes) if nbytes >= _SPARE_BYTES else None
    if buffer is None:
        buffer = pa.allocate_buffer(nbytes)
        if nbytes >= _SPARE_BYTES:
            _SPARE.keep(buffer)
    return np.frombuffer(buffer, dtype, count=count).reshape(shape)


#: Buffers this large are kept for reuse: fresh memory from the system costs more to touch
#: the first time (page faults, zeroing) than filling it, and large blocks go back to it.
_SPARE_BYTES = 16 << 20


class _Spare:
    """Large buffers handed out before, taken again once no array uses them (their reference
    count back to this list's alone): chunk after chunk reuses the same memory."""

    def __init__(self, limit: int = 8):
        self._buffers: list[pa.Buffer] = []
        self._limit = limit
        self._lock = threading.Lock()

    def take(self, nbytes: int) -> pa.Buffer | None:
        with self._lock:
            for buffer in self._buffers:
                # this list, the loop variable and getrefcount's own argument: nothing else
                if buffer.size == nbytes and sys.getrefcount(buffer) <= 3:
                    return buffer
        return None

    def keep(self, buffer: pa.Buffer) -> None:
        with self._lock:
            if len(self._buffers) >= self._limit:
                self._buffers.pop(0)
            self._buffers.append(buffer)


_SPARE = _Spare()


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


def _string_pieces(column: pa.Array) -> tuple[memoryview, np.ndarray, np.ndarray]:
    """A string column's bytes and where each of its strings starts in them and how long it
    is (nulls: empty). A dictionary-encoded column gives its dictionary's bytes, the strings
    found through its indices: no string is copied."""
    if not pa.types.is_dictionary(column.type):
        data, offsets = _strings(column)
        return data, offsets[:-1], np.diff(offsets)
    data, offsets = _strings(column.dictionary)
    entries = len(offsets) - 1
    lengths = np.zeros(entries + 1, np.int64)  # the last one, empty, for nulls
    np.subtract(offsets[1:], offsets[:-1], out=lengths[:entries])
    indices = column.indices
    if column.null_count:
        indices = pc.if_else(column.is_valid(), indices, pa.scalar(entries, indices.type))
    indices = indices.to_numpy(zero_copy_only=False)
    return data, offsets[indices], lengths[indices]


def _numbers(values: pa.Array) -> np.ndarray:
    if values.null_count:
        values = values.fill_null(0)
    return values.to_numpy(zero_copy_only=False)


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


def _join_strings(columns: Sequence[pa.Array]) -> tuple[bytes, list[np.ndarray]]:
    """Several string arrays as one bytes buffer, and the offsets of each array's strings in
    it (`len + 1` each)."""
    parts = [_strings(c) for c in columns]
    base, offsets = 0, []
    for data, offs in parts:
        offsets.append(offs + base)
        base += len(data)
    return b"".join(data for data, _ in parts), offsets


def _into_batches(out: np.ndarray, values: np.ndarray, batch_size: int) -> None:
    """`values` (one column of a chunk) written into `out`, `[batches, batch_size]`, batch by
    batch; the rows after the last are zeros."""
    full, rest = divmod(len(values), batch_size)
    out[:full] = values[: full * batch_size].reshape(full, batch_size)
    if full < len(out):
        out[full, :rest] = values[full * batch_size :]
        out[full, rest:] = 0


def _sparse_layout(splits: np.ndarray, rows: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For one-level lists laid out as `_Group._lists` lays them out (`splits`: `[batches,
    columns, batch_size + 1]`, from 0 in each batch and column): each value's `[row, position]`
    in its batch (a `tf.SparseTensor`'s indices, in the values' order), the number of values of
    each batch and column, and each one's dense shape `[rows of the batch, longest list]`."""
    batches, k, width = splits.shape
    size = width - 1
    counts = np.ascontiguousarray(splits[:, :, -1])
    indices = _empty((int(counts.sum()), 2), np.int64)
    shapes = np.empty((batches, k, 2), np.int64)
    shapes[:, :, 0] = np.minimum(size, rows - size * np.arange(batches))[:, None]
    if _NATIVE is not None:
        widths = np.empty((batches, k), np.int64)
        _NATIVE.fill_indices(np.ascontiguousarray(splits), indices, size, widths)
        shapes[:, :, 1] = widths
    else:
        lengths = np.diff(splits, axis=2)  # [batches, k, size]; rows past the chunk's end: 0
        shapes[:, :, 1] = lengths.max(axis=2)
        flat = lengths.reshape(-1)
        indices[:, 0] = np.repeat(np.tile(np.arange(size, dtype=np.int64), batches * k), flat)
        starts = np.zeros(len(flat), np.int64)
        np.cumsum(flat[:-1], out=starts[1:])
        np.subtract(np.arange(len(indices), dtype=np.int64), np.repeat(starts, flat), out=indices[:, 1])
    return indices, counts, shapes


class _Group:
    """Columns of one dtype and nesting carried together (`ragged_rank` 0: a
    `[batches, columns, batch_size]` array; 1: values batch by batch and their row splits;
    deeper: one column alone)."""

    def __init__(
        self,
        fields: Sequence[DataFrame.Field],
        batch_size: int,
        one_per_chunk: bool = False,
        sparse: bool = False,
    ):
        self.fields = list(fields)
        self.dtype = fields[0].dtype
        self.rank = fields[0].ragged_rank
        self.batch_size = batch_size
        #: numbers column by column, as Arrow decoded them (each chunk is one batch)
        self.direct = one_per_chunk and self.rank == 0 and self.dtype != tf.string
        #: one-level lists cut as `tf.SparseTensor`s, their indices made with the chunk
        self.sparse = sparse and self.rank == 1

    def signature(self) -> tuple:
        k, size = len(self.fields), self.batch_size
        strings = self.dtype == tf.string
        if self.rank == 0:
            if strings:  # the buffer; the starts and lengths of the strings
                return (tf.TensorSpec([], tf.string), tf.TensorSpec([None, 2, k, size], tf.int64))
            if self.direct:
                return tuple(tf.TensorSpec([None], self.dtype) for _ in range(k))
            return (tf.TensorSpec([None, k, size], self.dtype),)
        values = (
            (tf.TensorSpec([], tf.string), tf.TensorSpec([2, None], tf.int64))
            if strings
            else (tf.TensorSpec([None], self.dtype),)
        )
        if self.sparse:  # the values; their sparse indices; values and dense shape per batch and column
            return (
                values,
                tf.TensorSpec([None, 2], tf.int64),
                tf.TensorSpec([None, k], tf.int64),
                tf.TensorSpec([None, k, 2], tf.int64),
                tf.TensorSpec([None], tf.int64),
            )
        if self.rank == 1:  # the values; the splits of each batch; where each batch's values start
            return values, tf.TensorSpec([None, k, size + 1], _SPLITS), tf.TensorSpec([None], tf.int64)
        return values, tuple(tf.TensorSpec([None], _SPLITS) for _ in range(self.rank))

    def encode(self, batch: pa.RecordBatch) -> tuple:
        columns = [batch.column(f.name) for f in self.fields]
        size, rows = self.batch_size, batch.num_rows
        batches = -(-rows // size)
        if self.rank == 0:
            return self._scalars(columns, batches)
        if self.rank == 1:
            return self._lists(columns, rows, batches)
        values, levels = _unnest(columns[0], self.rank)
        if self.dtype == tf.string:
            data, (offsets,) = _join_strings([values])
            flat = (data, np.stack([offsets[:-1], np.diff(offsets)]))
        else:
            flat = (_numbers(values).astype(self.dtype.as_numpy_dtype, copy=False),)
        return flat, tuple(levels)

    def _scalars(self, columns: Sequence[pa.Array], batches: int) -> tuple:
        k, size = len(columns), self.batch_size
        if self.direct:  # no copy
            return tuple(_numbers(c).astype(self.dtype.as_numpy_dtype, copy=False) for c in columns)
        if self.dtype != tf.string:
            out = _empty((batches, k, size), self.dtype.as_numpy_dtype)
            for j, column in enumerate(columns):
                _into_batches(out[:, j], _numbers(column), size)
            return (out,)
        bounds = _empty((batches, 2, k, size), np.int64)
        parts, base = [], 0
        for j, column in enumerate(columns):
            data, starts, lengths = _string_pieces(column)
            _into_batches(bounds[:, 0, j], starts + base, size)
            _into_batches(bounds[:, 1, j], lengths, size)
            parts.append(data)
            base += len(data)
        return b"".join(parts), bounds

    def _lists(self, columns: Sequence[pa.Array], rows: int, batches: int) -> tuple:
        k, size = len(columns), self.batch_size
        flat, offsets = [], np.empty((k, batches * size + 1), np.int64)
        for j, column in enumerate(columns):
            values, (split,) = _unnest(column, 1)
            flat.append(values)
            offsets[j, : rows + 1] = split
            offsets[j, rows + 1 :] = split[-1]  # the rows after the last: empty lists
        splits = _empty((batches, k, size + 1), np.int64)
        for b in range(batches):
            window = offsets[:, b * size : (b + 1) * size + 1]
            np.subtract(window, window[:, :1], out=splits[b])
        # the values of batch b, column j: offsets[j, b * size] up to offsets[j, (b + 1) * size]
        starts = offsets[:, : batches * size + 1 : size].T.tolist()  # [batches + 1][k]
        bounds = np.zeros(batches + 1, np.int64)  # where each batch's values start
        np.cumsum(splits[:, :, size].sum(axis=1), out=bounds[1:])
        if self.dtype == tf.string:  # the start and length of each string value
            data, string_offsets = _join_strings(flat)
            sources = [[o[:-1] for o in string_offsets], [np.diff(o) for o in string_offsets]]
            values = _empty((2, int(bounds[-1])), np.int64)
            targets = [values[0], values[1]]
        else:
            sources = [[_numbers(v) for v in flat]]
            values = _empty((int(bounds[-1]),), self.dtype.as_numpy_dtype)
            targets = [values]
        for b in range(batches):  # one copy per batch: its columns' values one after another
            low, high = starts[b], starts[b + 1]
            for target, source in zip(targets, sources):
                pieces = [column[lo:hi] for column, lo, hi in zip(source, low, high)]
                np.concatenate(pieces, out=target[bounds[b] : bounds[b + 1]], casting="unsafe")
        values = (data, values) if self.dtype == tf.string else (values,)
        if self.sparse:
            return (values, *_sparse_layout(splits, rows), bounds)
        return values, splits, bounds

    def tensors(self, encoded: tuple) -> tuple:
        """The group's tensors for the whole chunk (list strings made)."""
        if self.rank == 0:
            return encoded
        values, *rest = encoded
        if self.dtype == tf.string:
            data, bounds = values
            return (tf.strings.substr(data, bounds[0], bounds[1]), *rest)
        return (values[0], *rest)

    def cut(self, tensors: tuple, index: tf.Tensor, rows: tf.Tensor) -> dict:
        """Batch `index` (of `rows` rows) of each of the group's columns.

        Pieces are taken with `tf.gather` / `tf.slice` rather than Python's slicing, which
        packs constant begins and strides into small subgraphs that TensorFlow folds (runs)
        again in each new iterator's copy of the function."""
        k = len(self.fields)
        names = [f.name for f in self.fields]
        if self.direct:
            return dict(zip(names, tensors))
        if self.rank == 0:
            if self.dtype == tf.string:
                data, bounds = tensors
                piece = _head(tf.gather(bounds, index), rows, 3)  # one op for all the columns' strings
                return dict(zip(names, tf.unstack(tf.strings.substr(data, piece[0], piece[1]), num=k)))
            values = _head(tf.gather(tensors[0], index), rows, 2)  # no copy but for a last, shorter batch
            return dict(zip(names, tf.unstack(values, num=k)))
        if self.sparse:
            values, indices, counts, shapes, bounds = tensors
            low, high = tf.gather(bounds, index), tf.gather(bounds, index + 1)
            parts = tf.split(_span(values, low, high), tf.gather(counts, index), num=k)
            places = tf.split(_span(indices, low, high), tf.gather(counts, index), num=k)
            return {
                name: tf.SparseTensor(place, part, shape)
                for name, part, place, shape in zip(
                    names, parts, places, tf.unstack(tf.gather(shapes, index), num=k)
                )
            }
        if self.rank == 1:
            values, splits, bounds = tensors
            piece = _head(tf.gather(splits, index), rows + 1, 2)
            low, high = tf.gather(bounds, index), tf.gather(bounds, index + 1)
            parts = tf.split(_span(values, low, high), tf.gather(piece, rows, axis=1), num=k)
            return {name: _Value(part, (s,)) for name, part, s in zip(names, parts, tf.unstack(piece, num=k))}
        values, splits = tensors
        low = index * self.batch_size
        high, cut_splits = low + rows, []
        for level in splits:
            piece = _span(level, low, high + 1)
            low, high = piece[0], piece[-1]
            cut_splits.append(piece - low)
        return {names[0]: _Value(_span(values, low, high), tuple(cut_splits))}


def _head(tensor: tf.Tensor, length: tf.Tensor, rank: int) -> tf.Tensor:
    """The first `length` entries of the last axis of a tensor of rank `rank`."""
    return tf.slice(tensor, [0] * rank, [-1] * (rank - 1) + [length])


def _span(tensor: tf.Tensor, low: tf.Tensor, high: tf.Tensor) -> tf.Tensor:
    """Entries `low` to `high` (excluded) of the first axis."""
    rest = tensor.shape.rank - 1
    return tf.slice(tensor, tf.stack([low] + [0] * rest), tf.stack([high - low] + [-1] * rest))


class Layout:
    """How the fields of a chunk are grouped (see the module docstring), for batches of
    `batch_size` rows; `one_per_chunk`: no chunk will hold more than one batch."""

    def __init__(
        self,
        fields: Sequence[DataFrame.Field],
        batch_size: int,
        one_per_chunk: bool = False,
        sparse: Sequence[str] = (),
    ):
        self.fields = list(fields)
        self.batch_size = batch_size
        self.one_per_chunk = one_per_chunk
        sparse = {f.name for f in fields if f.name in set(sparse) and f.ragged_rank == 1 and not f.shape}
        groups: dict[Any, list[DataFrame.Field]] = {}
        for field in fields:
            key = (
                (field.dtype, field.ragged_rank, field.name in sparse)
                if field.ragged_rank <= 1
                else field.name
            )
            groups.setdefault(key, []).append(field)
        self._groups = [_Group(g, batch_size, one_per_chunk, g[0].name in sparse) for g in groups.values()]

    def signature(self) -> dict:
        """The `output_signature` of a generator of `encode`d chunks."""
        return {"rows": tf.TensorSpec([], tf.int64), "groups": tuple(g.signature() for g in self._groups)}

    def encode(self, batch: pa.RecordBatch) -> dict:
        """A record batch (holding the fields' columns) as numpy arrays and bytes."""
        return {"rows": np.int64(batch.num_rows), "groups": tuple(g.encode(batch) for g in self._groups)}

    def tensors(self, chunk: dict) -> dict:
        """An encoded chunk's tensors (list strings made)."""
        chunk = tf.nest.map_structure(tf.convert_to_tensor, chunk)
        return {
            "rows": chunk["rows"],
            "groups": tuple(g.tensors(e) for g, e in zip(self._groups, chunk["groups"])),
        }

    def rows(self, chunk: dict, index: tf.Tensor) -> tf.Tensor:
        """The number of rows of batch `index` of a chunk."""
        return tf.minimum(chunk["rows"] - index * self.batch_size, self.batch_size)

    def cut(self, chunk: dict, index: tf.Tensor, rows: tf.Tensor | None = None) -> dict:
        """Batch `index` (of `rows` rows, see `rows`) of a chunk's tensors (a dict of tensors
        and `DataFrame.Value`s in the fields' order)."""
        rows = self.rows(chunk, index) if rows is None else rows
        batch = {}
        for group, tensors in zip(self._groups, chunk["groups"]):
            batch.update(group.cut(tensors, index, rows))
        return {f.name: batch[f.name] for f in self.fields}

    def batches(self, chunks: tf.data.Dataset, drop_remainder: bool = False, then=None) -> tf.data.Dataset:
        """The batches of a dataset of `encode`d chunks; `drop_remainder`: without a last batch
        shorter than `batch_size`; `then(batch, rows)`: applied to each batch in the same `map`.

        With `one_per_chunk`, each chunk is a batch as it is (one `map`). Otherwise each
        chunk is paired with the index of each of its batches by a small function, and the
        batches are cut by one `map` of the pipeline itself: a function that `flat_map`
        nested (cutting inside the per-chunk dataset) is instantiated and optimized again
        with each function enclosing it, each time an iterator is made (~0.2 s for 200
        columns). Every op of that `map` is paid again by each new iterator, which is why a
        batch is a few ops per group and `then` runs in the same function."""
        size = self.batch_size

        def indexed(chunk):
            count = (chunk["rows"] + size - 1) // size
            return tf.data.Dataset.zip(
                tf.data.Dataset.from_tensors(chunk).repeat(), tf.data.Dataset.range(count)
            )

        def batch(chunk, index):
            rows = self.rows(chunk, index)
            cut = self.cut(chunk, index, rows)
            return cut if then is None else then(cut, rows)

        if self.one_per_chunk:
            if drop_remainder:
                chunks = chunks.filter(lambda chunk: chunk["rows"] >= size)
            return chunks.map(lambda chunk: batch(self.tensors(chunk), tf.constant(0, tf.int64)))
        pairs = chunks.map(self.tensors).flat_map(indexed)
        if drop_remainder:
            pairs = pairs.filter(lambda chunk, index: chunk["rows"] - index * size >= size)
        return pairs.map(batch)
