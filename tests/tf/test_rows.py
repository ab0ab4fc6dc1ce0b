"""The row stream of `Dataset.from_parquet` (`beam_tensorize.tf._rows`): files in order even
when read ahead by threads, chunks joined across files that store a column differently, rows
shuffled through a buffer, row groups shared out among workers."""

from __future__ import annotations

import time

import numpy as np
import pyarrow as pa
import pytest

from beam_tensorize.tf._rows import CUT, in_order, joined, row_group_range, shuffled


def _source(values, delay=0.0, fail_after=None):
    def read():
        for i, v in enumerate(values):
            if fail_after is not None and i == fail_after:
                raise OSError(f"damaged after {v}")
            time.sleep(delay)
            yield v

    return read


def test_sources_read_ahead_by_threads_come_in_order_and_errors_reach_the_consumer():
    sources = [_source(range(k * 10, k * 10 + 10), delay=0.001 * (3 - k)) for k in range(3)]
    assert list(in_order(sources, ahead=3)) == list(range(30))
    assert list(in_order(sources, ahead=1)) == list(range(30))
    with pytest.raises(OSError, match="damaged after 14"):
        list(in_order([_source(range(10)), _source(range(10, 20), fail_after=4)], ahead=2))
    stream = in_order([_source(range(1000)) for _ in range(4)], ahead=4)
    assert next(stream) == 0
    stream.close()  # the reading threads stop


def test_joined_cuts_across_files_that_store_a_column_differently():
    plain = pa.record_batch({"s": ["a", "b", "c"]})
    dictionary = pa.record_batch({"s": pa.array(["d", "e"]).dictionary_encode()})
    out = list(joined(iter([plain, dictionary, plain]), rows=4))
    assert [b.column("s").to_pylist() for b in out] == [["a", "b", "c", "d"], ["e", "a", "b", "c"]]
    assert all(b.schema.field("s").type == pa.string() for b in out)


def test_a_cut_ends_a_chunk_where_it_stands():
    pieces = [pa.record_batch({"x": list(range(a, b))}) for a, b in [(0, 2), (2, 8), (8, 16), (16, 19)]]
    out = list(joined(iter([pieces[0], CUT, pieces[1], CUT, CUT, pieces[2], pieces[3], CUT]), rows=8))
    assert [b.column("x").to_pylist() for b in out] == [
        [0, 1],
        list(range(2, 8)),
        list(range(8, 16)),
        [16, 17, 18],
    ]
    assert out[0] is pieces[0] and out[1] is pieces[1] and out[2] is pieces[2]  # none copied


def test_shuffled_draws_every_row_once_from_the_buffer_reproducibly():
    batches = [pa.record_batch({"x": list(range(i, i + 10))}) for i in range(0, 100, 10)]

    def run(seed):
        out = list(shuffled(iter(batches), buffer_size=30, rows=8, rng=np.random.default_rng(seed)))
        return [b.column("x").to_pylist() for b in out]

    first = run(1)
    assert sorted(x for b in first for x in b) == list(range(100))
    assert [len(b) for b in first[:-1]] == [8] * (len(first) - 1)
    assert first != [list(range(i, i + 8)) for i in range(0, 96, 8)]
    assert run(1) == first and run(2) != first
    # the first batch comes only from the first buffer_size + rows rows read
    assert max(first[0]) < 40


def test_row_groups_are_shared_out_contiguously_and_completely():
    for count in (0, 1, 7, 10, 31):
        for parts in (1, 2, 3, 8):
            shares = [list(row_group_range(count, parts, i)) for i in range(parts)]
            assert [g for share in shares for g in share] == list(range(count))
            assert max(map(len, shares)) - min(map(len, shares)) <= 1
    with pytest.raises(ValueError, match="partition_count must be 1 or more"):
        row_group_range(5, 0, 0)


def test_large_chunk_arrays_reuse_memory_nothing_else_holds():
    """A chunk's large arrays come from buffers handed out before once nothing (no array, no
    tensor sharing its memory) holds them: fresh memory costs more to touch than to fill."""
    import numpy as np
    import tensorflow as tf

    from beam_tensorize.tf._chunks import _SPARE_BYTES, _empty

    count = _SPARE_BYTES // 8
    first = _empty((count,), np.int64)
    address = first.__array_interface__["data"][0]
    tensor = tf.experimental.dlpack.from_dlpack(first.__dlpack__())  # shares the memory
    del first
    second = _empty((count,), np.int64)
    assert second.__array_interface__["data"][0] != address  # the tensor still uses it
    del tensor, second
    third = _empty((count,), np.int64)
    assert third.__array_interface__["data"][0] == address
