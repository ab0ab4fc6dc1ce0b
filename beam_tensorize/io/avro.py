"""`WriteAvro`: record batches -> sharded (optionally Hive-partitioned) Avro container files,
committed atomically (Avro2TF's default output format)."""

from __future__ import annotations

from beam_tensorize.io.parquet import WriteColumnarFiles

__all__ = ["WriteAvro"]


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
