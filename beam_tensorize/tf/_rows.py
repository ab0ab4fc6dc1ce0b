"""The stream of rows `from_parquet` reads: files one after another (read ahead by threads,
consumed in order), cut into chunks across file boundaries, optionally shuffled row by row.

Batches are cut from this one stream, so they span files as HybridBackend's do: two 50-row
files read in batches of 32 give 32, 32, 32 and 4 rows, and `drop_remainder` drops only the
last, partial batch.

Example:
    >>> import pyarrow as pa
    >>> files = [lambda: iter([pa.record_batch({"x": [1, 2, 3]})]), lambda: iter([pa.record_batch({"x": [4, 5]})])]
    >>> [b.column("x").to_pylist() for b in joined(in_order(files, ahead=1), rows=2)]
    [[1, 2], [3, 4], [5]]
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Iterator, Sequence

import numpy as np
import pyarrow as pa

__all__ = ["CUT", "in_order", "joined", "row_group_range", "shuffled"]

_DONE = object()

#: In a stream of record batches: the rows so far end a chunk here (`joined`). A source
#: yields it only after a whole number of batches since the last chunk's end.
CUT = object()


def in_order(sources: Sequence[Callable[[], Iterator]], ahead: int) -> Iterator:
    """The items of each source, source after source. With `ahead` > 1, up to `ahead` sources
    are read at once by threads (each a few items ahead of the consumer: Arrow's readers let
    go of the GIL while they decode), the order staying that of `sources`."""
    if ahead <= 1 or len(sources) <= 1:
        for source in sources:
            yield from source()
        return
    stop = threading.Event()

    def put(out: queue.Queue, item) -> bool:
        """Hand `item` over unless the consumer has stopped (then False)."""
        while not stop.is_set():
            try:
                out.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def fill(source, out: queue.Queue) -> None:
        try:
            for item in source():
                if not put(out, item):
                    return
            put(out, _DONE)
        except BaseException as error:  # noqa: BLE001 - handed to the consumer, raised there
            put(out, error)

    started: list[queue.Queue] = []

    def start(index: int) -> None:
        out: queue.Queue = queue.Queue(maxsize=4)
        threading.Thread(target=fill, args=(sources[index], out), daemon=True).start()
        started.append(out)

    try:
        for index in range(min(ahead, len(sources))):
            start(index)
        for index in range(len(sources)):
            out = started[index]
            while True:
                item = out.get()
                if item is _DONE:
                    break
                if isinstance(item, BaseException):
                    raise item
                yield item
            started[index] = None  # type: ignore[call-overload]
            if len(started) < len(sources):
                start(len(started))
    finally:
        stop.set()


def _unified(batches: list[pa.RecordBatch]) -> list[pa.RecordBatch]:
    """Batches of one schema: dictionary columns decoded and types cast to the first batch's
    where files stored a column differently (a dictionary in one, plain in the next)."""
    if all(b.schema == batches[0].schema for b in batches):
        return batches
    plain = [
        pa.RecordBatch.from_arrays(
            [c.dictionary_decode() if pa.types.is_dictionary(c.type) else c for c in b.columns],
            names=b.schema.names,
        )
        for b in batches
    ]
    schema = plain[0].schema
    return [b if b.schema == schema else b.cast(schema) for b in plain]


def joined(batches: Iterator[pa.RecordBatch], rows: int) -> Iterator[pa.RecordBatch]:
    """`batches` cut and joined into record batches of `rows` rows, across files (the last may
    be smaller); batches of that size pass through uncopied. At a `CUT`, the rows pending
    make a batch of their own (`_file_batches` starts a new iterator's stream that way)."""
    pending: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        if batch is CUT:
            if count:
                yield _combined(pending)
            pending, count = [], 0
            continue
        if not pending and batch.num_rows == rows:
            yield batch
            continue
        if batch.num_rows == 0:
            continue
        pending.append(batch)
        count += batch.num_rows
        while count >= rows:
            table = pa.Table.from_batches(_unified(pending))
            yield table.slice(0, rows).combine_chunks().to_batches()[0]
            pending, count = table.slice(rows).to_batches(), count - rows
    if count:
        yield _combined(pending)


def _combined(batches: list[pa.RecordBatch]) -> pa.RecordBatch:
    """`batches` as one record batch (one of them as it is)."""
    if len(batches) == 1:
        return batches[0]
    return pa.Table.from_batches(_unified(batches)).combine_chunks().to_batches()[0]


def shuffled(
    batches: Iterator[pa.RecordBatch], buffer_size: int, rows: int, rng: np.random.Generator
) -> Iterator[pa.RecordBatch]:
    """Row-wise shuffling through a buffer of `buffer_size` rows: each output batch of `rows`
    rows is drawn at random from the rows buffered so far (HybridBackend's `shuffle_batch`);
    the rest of the buffer waits for more input. At the end the buffer is drained, shuffled."""
    buffer: list[pa.RecordBatch] = []
    count = 0
    for batch in batches:
        if batch.num_rows == 0:
            continue
        buffer.append(batch)
        count += batch.num_rows
        if count >= buffer_size + rows:
            table = pa.Table.from_batches(_unified(buffer))
            order = rng.permutation(count)
            draws = (count - buffer_size) // rows * rows
            yield from table.take(order[:draws]).combine_chunks().to_batches(max_chunksize=rows)
            buffer, count = table.take(np.sort(order[draws:])).to_batches(), count - draws
    if count:
        table = pa.Table.from_batches(_unified(buffer))
        yield from table.take(rng.permutation(count)).combine_chunks().to_batches(max_chunksize=rows)


def row_group_range(count: int, partition_count: int, partition_index: int) -> range:
    """The row groups (or ORC stripes) of a file that partition `partition_index` of
    `partition_count` reads: contiguous ranges, their sizes differing by at most one, every
    row group in exactly one partition.

    Example:
        >>> [list(row_group_range(10, 3, i)) for i in range(3)]
        [[0, 1, 2, 3], [4, 5, 6], [7, 8, 9]]
    """
    if not isinstance(partition_count, int) or partition_count < 1:
        raise ValueError(f"partition_count must be 1 or more, got {partition_count!r}")
    if not isinstance(partition_index, int) or not 0 <= partition_index < partition_count:
        raise ValueError(
            f"partition_index must be in [0, partition_count), got {partition_index!r} of {partition_count}"
        )
    size, extra = divmod(count, partition_count)
    start = partition_index * size + min(partition_index, extra)
    return range(start, start + size + (partition_index < extra))
