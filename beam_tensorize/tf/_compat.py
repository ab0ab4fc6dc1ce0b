"""TensorFlow and pyarrow internals this package relies on, in one place (tests/tf/test_dataset.py
and tests/tf/test_parquet.py fail loudly when they move).

* `deprecation.silence`: parsing a `tf.io.SparseFeature` calls TF's own deprecated
  `sparse_merge`, which logs a deprecation warning on every `make_dataset` that users can do
  nothing about.
* `pyarrow._parquet.ParquetReader(memory_pool=)`: `pq.ParquetFile` decodes into the default
  memory pool only; `from_parquet` decodes into jemalloc's (see `decoding_pool`).
* `structured_function.StructuredFunctionWrapper(defun_kwargs=)`: the attributes of a
  dataset function, which `single_device` sets (see there).
"""

from __future__ import annotations

import functools
import inspect
import os
import threading

import pyarrow as pa
import pyarrow._parquet as pq_internal
import pyarrow.parquet as pq
import tensorflow as tf
from tensorflow.python.data.ops import structured_function
from tensorflow.python.data.util import structure
from tensorflow.python.util import deprecation

__all__ = ["decoding_pool", "parquet_file", "parse_example", "single_device"]

#: The attribute that makes TensorFlow instantiate a dataset function on the iterator's own
#: device without optimizing it (TensorFlow's own `copy_to_device` sets it on its functions).
SINGLE_DEVICE = {"experimental_ints_on_device": True}

_BUILDING = threading.local()


def single_device(build):
    """`build` (a function that makes datasets) with every dataset function it traces marked
    to run on the iterator's device without grappler.

    tf.data instantiates each function of a dataset again for every new iterator. A function
    it may place on several devices (the default) is first optimized by grappler, which took
    ~110 ms for a `map` giving 200 columns (150 tensors, 50 sparse tensors) even when it did
    nothing; marked, the same `map` is instantiated in a few ms (a new iterator's first batch
    of 200 columns: 230 -> 140 ms CPU). Our functions hold only CPU ops and run on the CPU,
    where tf.data runs them. A function giving int32 tensors stays unmarked (tf.data's default
    rewrite refuses it marked). Functions the caller passes to the dataset afterwards (`map`,
    `reduce`, ...) are not marked."""

    @functools.wraps(build)
    def marked(*args, **kwargs):
        depth = getattr(_BUILDING, "depth", 0)
        _BUILDING.depth = depth + 1
        try:
            return build(*args, **kwargs)
        finally:
            _BUILDING.depth = depth

    return marked


def _mark_functions_while_building() -> None:
    """Wrap `StructuredFunctionWrapper.__init__` (once) to add `SINGLE_DEVICE` to the
    attributes of the functions traced inside `single_device`."""
    wrapper = structured_function.StructuredFunctionWrapper
    init = wrapper.__init__
    if getattr(init, "_single_device", False):
        return
    if "defun_kwargs" not in inspect.signature(init).parameters:  # pragma: no cover - TF moved
        raise ImportError("tf.data's StructuredFunctionWrapper has no defun_kwargs parameter any more")

    @functools.wraps(init)
    def __init__(self, *args, defun_kwargs=None, use_legacy_function=False, **kwargs):
        if getattr(_BUILDING, "depth", 0) and not use_legacy_function:
            init(self, *args, defun_kwargs={**(defun_kwargs or {}), **SINGLE_DEVICE}, **kwargs)
            # tf.data's default rewrite fails on a marked function giving int32 tensors ("Expected
            # only one fetch node"): such a function is traced again, unmarked
            if tf.int32 not in structure.get_flat_tensor_types(self.output_structure):
                return
        init(self, *args, defun_kwargs=defun_kwargs, use_legacy_function=use_legacy_function, **kwargs)

    __init__._single_device = True
    wrapper.__init__ = __init__


_mark_functions_while_building()


def parse_example(records, spec):
    """`tf.io.parse_example` without the deprecation warning TF logs for its own use of
    `sparse_merge` when `spec` holds a `tf.io.SparseFeature`."""
    with deprecation.silence():
        return tf.io.parse_example(records, spec)


def decoding_pool() -> pa.MemoryPool | None:
    """The memory pool `from_parquet` decodes into: jemalloc's where pyarrow has it (its Linux
    and macOS builds), else None (the default pool).

    pyarrow's default pool, mimalloc, asks the kernel for transparent huge pages; a batch of
    200,000 rows x 200 columns decoded into fresh huge pages, batch after batch, spent 3-4x the
    decoding's own CPU time in the kernel (compacting memory to make huge pages) in a
    TensorFlow process here; jemalloc's pool, in 4 KiB pages, took a quarter of that.

    The pool keeps the pages it frees for the next batches (`jemalloc_set_decay_ms(-1)`)
    instead of giving them back to the kernel at once, Arrow's setting: each batch was decoded
    into fresh pages, every page a fault and a zeroing, and each page given back a flush of the
    address translations of every CPU running the process. The setting reaches only the arenas
    jemalloc makes after it (each thread allocates from one arena), not its first one, made
    when pyarrow's import started it; and a thread first takes an arena no thread is bound to,
    so the first decoding thread took that one. Bound to the thread that calls this (one
    allocation), it is left to that thread, and the decoding threads take new arenas.
    HybridBackend's benchmark (batches of 200,000 rows, one CPU, 40 batches): ~230 ms a batch
    with the decoding in the first arena, ~145 with new ones, the pyarrow floor ~115. The
    pool's memory then stays at its peak (the batches in flight) until the process ends or
    `pool.release_unused()` is called (giving it back at the end of each pass cost ~0.3 s a
    pass there). Where `JE_ARROW_MALLOC_CONF` is set, its settings stand."""
    try:
        pool = pa.jemalloc_memory_pool()
    except NotImplementedError:
        return None
    if "JE_ARROW_MALLOC_CONF" not in os.environ:
        pa.jemalloc_set_decay_ms(-1)
        pa.allocate_buffer(1, memory_pool=pool)  # binds this thread to the first free arena
    return pool


def parquet_file(
    handle, metadata=None, read_dictionary=None, pool: pa.MemoryPool | None = None
) -> pq.ParquetFile:
    """`pq.ParquetFile(handle, ...)` (page checksums verified) whose reads decode into `pool`
    (None: the default pool)."""
    file = pq.ParquetFile(
        handle, metadata=metadata, read_dictionary=read_dictionary, page_checksum_verification=True
    )
    if pool is not None:
        reader = pq_internal.ParquetReader(memory_pool=pool)
        reader.open(
            handle,
            metadata=file.metadata,
            read_dictionary=read_dictionary,
            pre_buffer=True,
            page_checksum_verification=True,
            arrow_extensions_enabled=True,
        )
        file.reader = reader
    return file
