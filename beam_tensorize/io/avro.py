"""Avro: `ReadAvro` (files -> record batches, byte ranges decoded straight into Arrow) and
`WriteAvro` (record batches -> sharded, optionally Hive-partitioned Avro container files,
committed atomically; Avro2TF's default output format)."""

from __future__ import annotations

from collections.abc import Sequence

from beam_tensorize.io.sharded import WriteColumnarFiles
from beam_tensorize.io.table import ReadTable
from beam_tensorize.kernels import formats

__all__ = ["ReadAvro", "WriteAvro"]


class ReadAvro(ReadTable):
    """Read Avro files into Arrow record batches (`ReadTable` with `format="avro"`).

    Each file is cut into byte ranges of `split_bytes`; a range reads the Avro blocks that
    start inside it, so a large file is read by many workers. Blocks are decoded one at a
    time and converted to Arrow as they are read, then gathered into batches of about
    `batch_rows` rows, each tagged with its file and starting byte.

    Example:
        >>> import apache_beam as beam
        >>> from beam_tensorize.sample import SAMPLE_AVRO
        >>> with beam.Pipeline() as p:
        ...     rows = (p | ReadAvro(SAMPLE_AVRO, columns=["userId"])
        ...               | beam.Map(lambda b: b.num_rows) | beam.CombineGlobally(sum))
    """

    def __init__(
        self,
        file_patterns: str | Sequence[str],
        columns: Sequence[str] | None = None,
        batch_rows: int = formats.DEFAULT_BATCH_ROWS,
        split_bytes: int = formats.DEFAULT_SPLIT_BYTES,
        validate: bool = False,
    ):
        super().__init__(file_patterns, "avro", columns, batch_rows, split_bytes, validate)


class WriteAvro(WriteColumnarFiles):
    """Write record batches as Avro container files (one per input split, or `num_shards` per
    folder), committed atomically: `WriteParquet`'s placement, partitioning, save modes and
    commit, with the columns as Avro record fields (`beam_tensorize.kernels.output.avro`: every
    field a union with null; struct columns nested records).

    Args:
        directory: target folder (local, gs://, s3://, ...).
        num_shards: None (default): the files of each input split are written where the
            batches are; N: exactly N files per folder, through a shuffle.
        compression: "snappy" (default, as Spark's Avro writer), "deflate", "zstd" or "none".
        save_mode: "error", "overwrite", "overwrite_partitions", "append" or "ignore".
        partition_by: columns naming Hive-style folders `<col>=<value>/`, outermost first.
        write_success_file: write `<directory>/_SUCCESS` after the commit.
        commit_gate: optional PCollection of one element the commit waits for.
        max_records_per_file: with `num_shards=None`, start another file after this many rows.

    Example:
        >>> import apache_beam as beam, pyarrow as pa, fastavro
        >>> with beam.Pipeline() as p:
        ...     batches = p | beam.Create([pa.RecordBatch.from_pydict({"id": [1, 2], "x": [[0.5], []]})])
        ...     _ = batches | WriteAvro("out/avro", save_mode="overwrite")
        >>> with open("out/avro/part-00000-of-00001.avro", "rb") as f:
        ...     list(fastavro.reader(f))
        [{'id': 1, 'x': [0.5]}, {'id': 2, 'x': []}]
    """

    file_format = "avro"
