"""What the Spark tasks of `tensorize_spark` are given and hand on.

Each task of the reading steps gets one input split (`split_tasks`). The encoding step hands
on `ENCODED` rows: records with their file and place in it, or a side result (dead letters,
layouts, maxima, off-shape counts, statistics); the writing steps hand the driver `WRITTEN`
rows: a file written, or a side result passed through. `kind` tells them apart.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
from pyspark import RDD
from pyspark.sql import SparkSession

__all__ = [
    "DEAD_LETTER",
    "ENCODED",
    "LAYOUTS",
    "MAXIMA",
    "OFF_SHAPE_COUNTS",
    "RECORD",
    "STATISTICS",
    "WRITTEN",
    "encoded_rows",
    "from_ipc",
    "ipc_bytes",
    "split_tasks",
]

# Kinds of rows: a record (or a written file), a dead letter, the extra columns' layouts of a
# batch, the integer tensors' largest values, a split's run-report statistics, or a batch's
# off-shape row counts.
RECORD, DEAD_LETTER, LAYOUTS, MAXIMA, STATISTICS, OFF_SHAPE_COUNTS = 0, 1, 2, 3, 4, 5
ENCODED = pa.schema(
    [
        pa.field("kind", pa.int32()),
        pa.field("path", pa.string()),  # the record's partition folder ("" unpartitioned)
        pa.field("shard", pa.int32()),
        pa.field("key", pa.string()),  # its batch's order key (source tag)
        pa.field("batch", pa.int64()),  # tells apart batches of equal keys (a file read twice)
        pa.field("pos", pa.int64()),  # its position in its chunk
        pa.field("payload", pa.binary()),
    ]
)
WRITTEN = pa.schema(
    [
        pa.field("kind", pa.int32()),
        pa.field("path", pa.string()),
        pa.field("shard", pa.int32()),
        pa.field("key", pa.string()),  # a split file's key (file order in its folder)
        pa.field("payload", pa.binary()),  # a file's temporary path, a dead letter, layouts
        pa.field("count", pa.int64()),
    ]
)


def split_tasks(spark: SparkSession, splits: list) -> RDD:
    """One Spark task per input split (the tasks read their splits themselves)."""
    return spark.sparkContext.parallelize(splits, max(1, len(splits)))


def encoded_rows(kind: int, path: str, shard: int, key: str, batch: int, payload: pa.Array) -> pa.RecordBatch:
    """`ENCODED` rows of one kind, file and batch: one per payload, numbered in order."""
    n = len(payload)
    return pa.RecordBatch.from_arrays(
        [
            pa.array(np.full(n, kind, np.int32)),
            pa.array([path] * n, pa.string()),
            pa.array(np.full(n, shard, np.int32)),
            pa.array([key] * n, pa.string()),
            pa.array(np.full(n, batch, np.int64)),
            pa.array(np.arange(n, dtype=np.int64)),
            payload,
        ],
        schema=ENCODED,
    )


def ipc_bytes(batch: pa.RecordBatch) -> bytes:
    """`batch` as an Arrow IPC stream (a columnar file's chunk in one `payload`)."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def from_ipc(data: bytes) -> pa.RecordBatch:
    """The batch of `ipc_bytes`."""
    return pa.ipc.open_stream(data).read_next_batch()
