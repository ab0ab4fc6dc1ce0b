"""`WriteParquet`: record batches -> sharded (optionally Hive-partitioned) Parquet files,
committed atomically."""

from __future__ import annotations

from collections.abc import Sequence

import apache_beam as beam

from beam_tensorize.io.sharded import WriteShardedFiles
from beam_tensorize.kernels.output.shards import ROWS

__all__ = ["WriteColumnarFiles", "WriteParquet"]


class WriteColumnarFiles(WriteShardedFiles):
    """The sink of files holding rows of columns (`file_format` of a subclass): the columns of
    each batch written as they are, no record type. See `WriteParquet` for the arguments."""

    #: "parquet" or "avro".
    file_format = ""

    def __init__(
        self,
        directory: str,
        num_shards: int | None = None,
        compression: str = "snappy",
        save_mode: str = "error",
        partition_by: Sequence[str] = (),
        write_success_file: bool = True,
        commit_gate: beam.PCollection | None = None,
        max_records_per_file: int | None = None,
    ):
        super().__init__(
            directory,
            self.file_format,
            num_shards,
            compression,
            save_mode,
            ROWS,
            None,
            partition_by,
            write_success_file,
            commit_gate,
            max_records_per_file,
        )


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
