"""TensorFlow and pyarrow internals this package relies on, in one place (tests/tf/test_dataset.py
and tests/tf/test_parquet.py fail loudly when they move).

* `deprecation.silence`: parsing a `tf.io.SparseFeature` calls TF's own deprecated
  `sparse_merge`, which logs a deprecation warning on every `make_dataset` that users can do
  nothing about.
* `pyarrow._parquet.ParquetReader(memory_pool=)`: `pq.ParquetFile` decodes into the default
  memory pool only; `from_parquet` decodes into jemalloc's (see `decoding_pool`).
"""

from __future__ import annotations

import pyarrow as pa
import pyarrow._parquet as pq_internal
import pyarrow.parquet as pq
import tensorflow as tf
from tensorflow.python.util import deprecation

__all__ = ["decoding_pool", "parquet_file", "parse_example"]


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
    TensorFlow process here; jemalloc's pool, in 4 KiB pages, took a quarter of that."""
    try:
        return pa.jemalloc_memory_pool()
    except NotImplementedError:
        return None


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
