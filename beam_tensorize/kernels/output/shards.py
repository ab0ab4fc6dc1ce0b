"""What a TFRecord sink writes: each row's record bytes, its partition folder and shard, and
the order of the records in a shard file.

The placement depends only on the data, never on the runner: a batch's records (per
partition folder) go round-robin over the shards, starting at a shard fixed by the batch's
source tag (see `beam_tensorize.kernels.provenance.order_key`); in a shard file, the records
of each batch stay in their order and the batches are ordered by their tags. Every runner
that gives the same batches (the Avro reader's batches are fixed by the file and the byte
ranges) therefore writes byte-identical files.

Example:
    >>> import io, pyarrow as pa
    >>> from beam_tensorize.kernels.provenance import with_source
    >>> batch = with_source(pa.RecordBatch.from_pydict({"x": [1, 2, 3]}), "x.avro", 4)
    >>> chunks = dict(shard_chunks(batch, 2, record_type="Example"))
    >>> sorted((place, len(records)) for place, (_, records) in chunks.items())
    [(('', 0), 2), (('', 1), 1)]
    >>> from beam_tensorize.kernels.output import get_output_format
    >>> get_output_format("tfrecord").write_file(io.BytesIO(), order_chunks([chunks[("", 0)]]), "gzip")
    2
"""

from __future__ import annotations

import collections
import hashlib
from collections.abc import Iterable, Iterator, Sequence

import numpy as np
import pyarrow as pa

from beam_tensorize.kernels.partitions import split_by_partition
from beam_tensorize.kernels.provenance import order_key
from beam_tensorize.kernels.tfrecord.example_encoder import encode_examples
from beam_tensorize.kernels.tfrecord.sequence_example import encode_sequence_examples

__all__ = [
    "ROWS",
    "Chunk",
    "order_chunks",
    "serialize_records",
    "shard_chunks",
    "shuffle_rows",
]

#: A run of records of one batch bound for one file: (the batch's order key, the records, or
#: the rows themselves for columnar files).
Chunk = tuple[str, pa.Array | pa.RecordBatch]
#: `record_type` of columnar sinks (Parquet, Avro): the rows stay a record batch.
ROWS = "Rows"


def serialize_records(batch: pa.RecordBatch, record_type: str, record_column: str | None = None) -> pa.Array:
    """The record bytes of each row: a `tf.train.Example` ("Example") or
    `tf.train.SequenceExample` ("SequenceExample") of the columns, or the bytes of one binary
    column as they are ("ByteArray"); for `ROWS` the batch itself.

    Args:
        batch: the rows (partition columns already removed).
        record_type: "Example", "SequenceExample" or "ByteArray".
        record_column: for "ByteArray", the column to write (default: the only column).

    Raises:
        ValueError: "ByteArray" without `record_column` and not exactly one column.
        KeyError: `record_column` is not a column of `batch`.

    Example:
        >>> serialize_records(pa.RecordBatch.from_pydict({"b": [b"x"]}), "ByteArray").to_pylist()
        [b'x']
    """
    if record_type == "Example":
        return encode_examples(batch)
    if record_type == "SequenceExample":
        return encode_sequence_examples(batch)
    if record_type == ROWS:
        return batch
    names = batch.schema.names
    if record_column is None:
        if len(names) != 1:
            raise ValueError(
                f"record_type 'ByteArray' needs one binary column (or record_column), got {names}"
            )
        record_column = names[0]
    if record_column not in names:
        raise KeyError(f"record_column {record_column!r} is not among the columns {names}")
    return batch.column(record_column)


def shard_chunks(
    batch: pa.RecordBatch,
    num_shards: int,
    partition_by: Sequence[str] = (),
    record_type: str = "ByteArray",
    record_column: str | None = None,
) -> Iterator[tuple[tuple[str, int], Chunk]]:
    """((partition path, shard), (order key, records)) for every file that gets records of `batch`.

    The batch is split by its partition columns (`split_by_partition`), each part serialized
    (`serialize_records`) and its records spread round-robin over `num_shards`, starting at a
    shard chosen by the SHA-256 of the batch's order key. An untagged batch gets a key made
    from its first record and length. Unpartitioned, the path is "".

    Example:
        >>> batch = pa.RecordBatch.from_pydict({"serialized": [b"a", b"b", b"c"]})
        >>> [(place, records.to_pylist()) for place, (_, records) in shard_chunks(batch, 2)]
        [(('', 0), [b'b']), (('', 1), [b'a', b'c'])]
    """
    if batch.num_rows == 0:
        return
    for path, part in split_by_partition(batch, partition_by):
        records = serialize_records(part, record_type, record_column)
        key = order_key(batch, fallback=_content_key(records[:1]) + str(len(records)).encode())
        start = int.from_bytes(hashlib.sha256(key.encode()).digest()[:8], "little") % num_shards
        shard_of_row = (start + np.arange(len(records))) % num_shards
        for shard in np.unique(shard_of_row):
            yield (path, int(shard)), (key, records.filter(pa.array(shard_of_row == shard)))


def shuffle_rows(batch: pa.RecordBatch, seed: int) -> pa.RecordBatch:
    """`batch` with its rows in a pseudo-random order drawn from `seed` and the batch's order
    key (`provenance.order_key`): the same input and seed give the same order on every run and
    runner (Avro2TF's `--shuffle`, made deterministic). An untagged batch is keyed by its
    content.

    Example:
        >>> batch = pa.RecordBatch.from_pydict({"x": list(range(6))})
        >>> shuffle_rows(batch, 1).column("x").to_pylist() == shuffle_rows(batch, 1).column("x").to_pylist()
        True
        >>> sorted(shuffle_rows(batch, 1).column("x").to_pylist())
        [0, 1, 2, 3, 4, 5]
    """
    if batch.num_rows < 2:
        return batch
    key = order_key(batch, fallback=_content_key(batch.slice(0, 1)) + str(batch.num_rows).encode())
    digest = hashlib.sha256(f"{seed}\0{key}".encode()).digest()
    order = np.random.default_rng(int.from_bytes(digest[:8], "little")).permutation(batch.num_rows)
    return batch.take(pa.array(order))


def _content_key(records: pa.Array | pa.RecordBatch) -> bytes:
    """Bytes standing for the content of a few records (to order chunks of equal keys)."""
    if isinstance(records, pa.RecordBatch):
        return repr(records.to_pylist()).encode()
    return b"\0".join(bytes(r) for r in records.to_pylist())


def order_chunks(chunks: Iterable[Chunk | None]) -> list[Chunk]:
    """A file's chunks in file order: by order key, then by content (for equal keys).

    `None` entries (placeholders for shards without records) are dropped.

    Example:
        >>> chunks = [("k2", pa.array([b"c"])), None, ("k1", pa.array([b"b"])), ("k1", pa.array([b"a"]))]
        >>> [records.to_pylist() for _, records in order_chunks(chunks)]
        [[b'a'], [b'b'], [b'c']]
    """
    present = [c for c in chunks if c is not None]
    repeated = {key for key, n in collections.Counter(c[0] for c in present).items() if n > 1}
    # Records become Python objects only to break ties between equal keys (rare).
    return sorted(present, key=lambda c: (c[0], _content_key(c[1]) if c[0] in repeated else b""))
