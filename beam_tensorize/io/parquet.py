"""Parquet: `ReadParquet` (files -> record batches) and `WriteParquet` (record batches ->
sharded, optionally Hive-partitioned Parquet files, committed atomically)."""

from __future__ import annotations

from collections.abc import Sequence

from beam_tensorize.io.sharded import WriteColumnarFiles
from beam_tensorize.io.table import ReadTable
from beam_tensorize.kernels import formats

__all__ = ["ReadParquet", "WriteParquet"]


class ReadParquet(ReadTable):
    """Read Parquet files into Arrow record batches (`ReadTable` with `format="parquet"`).

    Splits are runs of row groups of about `split_bytes`; only the leaf columns under
    `columns` are read.

    Example:
        >>> import apache_beam as beam, pyarrow as pa, pyarrow.parquet as pq
        >>> pq.write_table(pa.table({"id": [1, 2], "tags": [["a"], ["b", "c"]]}), "t.parquet")
        >>> with beam.Pipeline() as p:
        ...     _ = (p | ReadParquet("t.parquet", columns=["tags"])
        ...            | beam.Map(lambda b: print(b.to_pydict())))
        {'tags': [['a'], ['b', 'c']]}
    """

    def __init__(
        self,
        file_patterns: str | Sequence[str],
        columns: Sequence[str] | None = None,
        batch_rows: int = formats.DEFAULT_BATCH_ROWS,
        split_bytes: int = formats.DEFAULT_SPLIT_BYTES,
        validate: bool = False,
    ):
        super().__init__(file_patterns, "parquet", columns, batch_rows, split_bytes, validate)


class WriteParquet(WriteColumnarFiles):
    """Write record batches as Parquet files (one per input split, or `num_shards` per folder),
    committed atomically.

    The columns are written as they are (with `partition_by`, the partition columns name the
    folders and are left out of the files), in row groups of 128Ki rows
    (`beam_tensorize.kernels.output.parquet.ROW_GROUP_ROWS`). Partitioning, save modes, the
    atomic commit (`_temporary/` then moves, `_SUCCESS` last) and the deterministic placement
    and order of rows are those of `WriteTFRecord`; a shard that gets no rows has no file.

    Args:
        directory: target folder (local, gs://, s3://, ...).
        num_shards: None (default): the files of each input split are written where the
            batches are, with no shuffle; N: exactly N files per folder, through a shuffle.
        compression: "snappy" (default), "gzip", "zstd" or "none" (of the column chunks).
        save_mode: "error", "overwrite", "overwrite_partitions", "append" or "ignore".
        partition_by: columns naming Hive-style folders `<col>=<value>/`, outermost first.
        write_success_file: write `<directory>/_SUCCESS` after the commit.
        commit_gate: optional PCollection of one element the commit waits for.
        max_records_per_file: with `num_shards=None`, start another file after this many rows.

    Returns (from `expand`): a PCollection of one dict `{"directory", "files", "numRecords",
    "partitions", "skipped"}` produced after the commit.

    Example:
        >>> import apache_beam as beam, pyarrow as pa, pyarrow.parquet as pq
        >>> with beam.Pipeline() as p:
        ...     batches = p | beam.Create([pa.RecordBatch.from_pydict({"day": [1, 2], "x": [[0.5], []]})])
        ...     info = batches | WriteParquet("out/pq", partition_by=["day"], save_mode="overwrite")
        ...     _ = info | beam.Map(lambda i: print(i["files"]))
        ['day=1/part-00000-of-00001.parquet', 'day=2/part-00000-of-00001.parquet']
        >>> pq.read_table("out/pq/day=2/part-00000-of-00001.parquet").to_pydict()
        {'x': [[]]}
    """

    file_format = "parquet"
