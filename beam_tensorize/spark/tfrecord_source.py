"""TFRecord files as a Spark DataFrame, and DataFrames as TFRecord files: format `tfrecord`.

Thin glue over the kernels and the job layer: reading is planned as `ReadTFRecord` plans it (file
listing, Hive partition folders, schema inference, `read_file_batches` per file), writing is
`WriteTFRecord`'s (`serialize_records` per partition folder, the same temporary folder,
save modes and commit). Files written by either can be read by the other, by Spark-TFRecord
and by TensorFlow.
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import posixpath
import uuid
from collections.abc import Iterator, Sequence

import pyarrow as pa
from pyspark import TaskContext
from pyspark.sql.datasource import (
    DataSource,
    DataSourceArrowWriter,
    DataSourceReader,
    InputPartition,
    WriterCommitMessage,
)
from pyspark.sql.types import StructType

# The commit protocol of the Beam sinks (temporary folder, save modes, moves), used as it is.
from beam_tensorize.job.commit import (
    SAVE_MODES,
    TEMP_FOLDER,
    CommitPlan,
    check_target,
    commit_files,
    delete_temporary,
)
from beam_tensorize.job.files import create_file, open_file
from beam_tensorize.job.tfrecord_read import TFRecordRead
from beam_tensorize.kernels.arrow_types import DEFAULT_BATCH_ROWS
from beam_tensorize.kernels.output.shards import serialize_records
from beam_tensorize.kernels.partitions import parse_partition_path, split_by_partition
from beam_tensorize.kernels.tfrecord.decoding import RECORD_TYPES
from beam_tensorize.kernels.tfrecord.files import FileReading, read_file_batches
from beam_tensorize.kernels.tfrecord.framing import COMPRESSIONS, compressed_writer, write_tfrecords
from beam_tensorize.spark._compat import from_arrow_schema, to_arrow_schema
from beam_tensorize.spark._options import check_known, flag, lowered, positive

__all__ = ["TFRECORD_FORMAT", "TFRecordDataSource"]

_LOGGER = logging.getLogger(__name__)

#: The format name of the TFRecord data source.
TFRECORD_FORMAT = "tfrecord"


class TFRecordDataSource(DataSource):
    """Spark data source `tfrecord`: read and write TFRecord files of Examples,
    SequenceExamples or raw bytes, plain or in Hive partition folders.

    Reading (`spark.read.format("tfrecord").load(path)`): `path` is a file, a glob or a folder
    (read recursively; `_`/`.` names skipped; `col=value` folders become columns). Without
    `.schema(...)`, the schema is inferred from a sample as `ReadTFRecord` infers it. One
    Spark partition per file; a corrupt or unfitting record fails the read, naming the file
    and the record. Options: `recordType` (`Example`, `SequenceExample`, `ByteArray`: one
    binary column `byteArray`), `compression` (`auto` (default), `none`, `gzip`, `zlib`),
    `verifyCrc` (`true`), `inferSampleRecords` (1000, or `all`), `batchRows` (8192).

    Writing (`df.write.format("tfrecord").mode("overwrite").save(path)`): one file per Spark
    partition (per partition folder), `part-0000i-of-0000N.tfrecord[.gz|.zlib]`, written into
    `<path>/_temporary/` and moved into place when every task succeeded, then `_SUCCESS`. A
    null value is left out of its Example / SequenceExample (Spark-TFRecord's rule).
    Options: `recordType` (default `Example`; `ByteArray` writes `recordColumn` or the only
    column), `compression` (`none`, `gzip`, `zlib`) or Spark-TFRecord's `codec` (Hadoop codec
    class names `org.apache.hadoop.io.compress.GzipCodec` / `DefaultCodec` / `DeflateCodec`, or
    `gzip`, `deflate`, `none`; other codecs are refused: TensorFlow reads only GZIP and ZLIB
    files), `partition_by` (comma-separated columns, outermost first; `.partitionBy(...)`
    sets it), `saveMode`. Spark's modes select the save mode of the same name, its default
    `errorifexists` included: Spark itself hands a Python data source only `append` and
    `overwrite`, and no `partitionBy` columns, so `register_data_sources` wraps PySpark's
    `DataFrameWriter` to pass them as these two options (`writer_habits`); `saveMode` (any of
    `WriteTFRecord`'s: `error`, `overwrite`, `overwrite_partitions`, `append`, `ignore`)
    takes precedence. An option the source does not know is an error, not silently ignored.

    Example::

        from beam_tensorize.spark import register_data_sources

        register_data_sources(spark)
        df = spark.createDataFrame([(1, "a", [3]), (2, "b", [])], "day int, user string, clicks array<long>")
        (df.write.format("tfrecord").mode("overwrite").option("partition_by", "day")
           .option("compression", "gzip").save("events"))
        spark.read.format("tfrecord").load("events").show()  # clicks, user, day
    """

    @classmethod
    def name(cls) -> str:
        return TFRECORD_FORMAT

    def __init__(self, options):
        super().__init__(options)
        opts = lowered(options)
        path = opts.get("path")
        if not path:
            raise ValueError(f"{TFRECORD_FORMAT}: give the folder or files as .load(path) / .save(path)")
        self._path = path
        self._opts = opts
        self._record_type = opts.get("recordtype", "Example")
        if self._record_type not in RECORD_TYPES:
            raise ValueError(
                f"{TFRECORD_FORMAT}: option recordType {self._record_type!r} is not one of {', '.join(RECORD_TYPES)}"
            )

    def _reading(self, schema: pa.Schema | None = None) -> tuple[TFRecordRead, FileReading]:
        """The Beam read of the files (checks the options and files, infers the schema) and
        how to read each file into `schema` (default: the inferred one)."""
        opts = self._opts
        check_known(opts, _READ_OPTIONS, TFRECORD_FORMAT, "reading")
        sample = opts.get("infersamplerecords", "1000")
        compression = opts.get("compression", "auto")
        verify_crc = flag(opts, "verifyCrc", True, TFRECORD_FORMAT)
        batch_rows = positive(opts, "batchRows", DEFAULT_BATCH_ROWS, TFRECORD_FORMAT)
        read = TFRecordRead(
            self._path,
            schema=schema,
            record_type=self._record_type,
            compression=compression,
            verify_crc=verify_crc,
            batch_rows=batch_rows,
            infer_sample_records=None
            if sample.lower() == "all"
            else positive(opts, "inferSampleRecords", 1000, TFRECORD_FORMAT),
        )
        schema = read.schema if schema is None else schema
        files = read.files  # listed once, by the read
        folders = {
            name for name, _ in parse_partition_path(posixpath.dirname(files.relative(files.paths[0])))
        }
        reading = FileReading(
            files.base,
            pa.schema([f for f in schema if f.name not in folders]),
            tuple(f for f in schema if f.name in folders),
            self._record_type,
            compression,
            verify_crc,
            False,
            batch_rows,
        )
        return read, reading

    def schema(self) -> StructType:
        read, _ = self._reading()
        # remembered so that the reader knows the schema was inferred (not given by the user)
        self._inferred = from_arrow_schema(read.schema)
        return self._inferred

    def reader(self, schema: StructType) -> DataSourceReader:
        return _TFRecordReader(self, schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceArrowWriter:
        writer = _TFRecordWriter(self, overwrite)
        writer.check_schema(to_arrow_schema(schema, timezone="UTC"))
        return writer


_READ_OPTIONS = {"recordtype", "compression", "verifycrc", "infersamplerecords", "batchrows"}
_WRITE_OPTIONS = {
    "recordtype",
    "compression",
    "codec",
    "partition_by",
    "partitionby",
    "savemode",
    "recordcolumn",
}

#: Spark-TFRecord's `codec` values (Hadoop codec classes, Spark's short names) -> compression.
_CODECS = {
    "org.apache.hadoop.io.compress.gzipcodec": "gzip",
    "gzip": "gzip",
    "org.apache.hadoop.io.compress.defaultcodec": "zlib",
    "org.apache.hadoop.io.compress.deflatecodec": "zlib",
    "deflate": "zlib",
    "none": "none",
    "uncompressed": "none",
}
_OTHER_CODECS = {
    "org.apache.hadoop.io.compress.bzip2codec", "bzip2",
    "org.apache.hadoop.io.compress.snappycodec", "snappy",
    "org.apache.hadoop.io.compress.lz4codec", "lz4",
    "org.apache.hadoop.io.compress.zstandardcodec", "zstd",
}  # fmt: skip


def _write_compression(opts: dict[str, str]) -> str:
    """The compression a write asks for: `compression`, or Spark-TFRecord's `codec`.

    Raises:
        ValueError: an unknown codec, one TensorFlow cannot read, or a codec that disagrees
            with `compression`.
    """
    codec = opts.get("codec")
    compression = opts.get("compression")
    if codec is None:
        return compression or "none"
    key = codec.strip().lower()
    if key in _OTHER_CODECS:
        raise ValueError(
            f"{TFRECORD_FORMAT}: option codec {codec!r} is not supported: TensorFlow reads only GZIP "
            "and ZLIB TFRecord files; use org.apache.hadoop.io.compress.GzipCodec or DefaultCodec"
        )
    if key not in _CODECS:
        raise ValueError(
            f"{TFRECORD_FORMAT}: option codec {codec!r} is not a known codec; use "
            "org.apache.hadoop.io.compress.GzipCodec, DefaultCodec, DeflateCodec, gzip, deflate or none"
        )
    if compression is not None and compression != _CODECS[key]:
        raise ValueError(
            f"{TFRECORD_FORMAT}: options codec {codec!r} and compression {compression!r} disagree; give one"
        )
    return _CODECS[key]


class _TFRecordFile(InputPartition):
    def __init__(self, path: str):
        super().__init__(path)
        self.path = path


class _TFRecordReader(DataSourceReader):
    def __init__(self, source: TFRecordDataSource, schema: StructType):
        self._target = to_arrow_schema(schema, timezone="UTC")
        read, reading = source._reading(self._target)
        # an inferred schema takes records of mixed kinds into its widened fields; a given one
        # only features of its fields' own kinds (Spark-TFRecord's deserializer refuses others)
        self._reading = reading._replace(widened=getattr(source, "_inferred", None) == schema)
        self._paths = read.files.paths

    def partitions(self) -> Sequence[InputPartition]:
        return [_TFRecordFile(path) for path in self._paths]

    def read(self, partition: _TFRecordFile) -> Iterator[pa.RecordBatch]:
        with open_file(partition.path) as raw:
            for batch in read_file_batches(raw, partition.path, self._reading):
                yield batch.select(self._target.names).cast(self._target)


@dataclasses.dataclass
class _Written(WriterCommitMessage):
    """What one task wrote: (partition folder, temporary path, records) per file."""

    task: int
    files: list


class _TFRecordWriter(DataSourceArrowWriter):
    def __init__(self, source: TFRecordDataSource, overwrite: bool):
        opts = source._opts
        check_known(opts, _WRITE_OPTIONS, TFRECORD_FORMAT, "writing")
        directory = source._path.rstrip("/")
        save_mode = opts.get("savemode", "overwrite" if overwrite else "append")
        if save_mode not in SAVE_MODES:
            raise ValueError(
                f"{TFRECORD_FORMAT}: option saveMode {save_mode!r} is not one of {', '.join(SAVE_MODES)}"
            )
        compression = _write_compression(opts)
        if compression not in COMPRESSIONS:
            raise ValueError(
                f"{TFRECORD_FORMAT}: option compression {compression!r} is not one of {', '.join(COMPRESSIONS)}"
            )
        partition_by = opts.get("partition_by", opts.get("partitionby", ""))
        self._partition_by = tuple(c.strip() for c in partition_by.split(",") if c.strip())
        self._record_type = source._record_type
        self._record_column = opts.get("recordcolumn")
        self._skip = check_target(directory, save_mode)["skip"]
        temp_dir = posixpath.join(directory, TEMP_FOLDER, uuid.uuid4().hex)
        self._plan = CommitPlan(
            directory, temp_dir, save_mode, True, compression, 1, partitioned=bool(self._partition_by)
        )

    def check_schema(self, schema: pa.Schema) -> None:
        """Fail before anything is written (even for a DataFrame without rows) when a column's
        type cannot be written as the record type (unless the save mode writes nothing)."""
        if self._skip:
            return
        kept = pa.schema([f for f in schema if f.name not in self._partition_by])
        try:
            serialize_records(
                pa.RecordBatch.from_pylist([], schema=kept), self._record_type, self._record_column
            )
        except (TypeError, ValueError, KeyError) as err:
            raise ValueError(f"{TFRECORD_FORMAT}: cannot write {self._record_type} records: {err}") from None

    def write(self, iterator: Iterator[pa.RecordBatch]) -> _Written:
        task = TaskContext.get().partitionId()
        if self._skip:
            return _Written(task, [])
        opened: dict[str, list] = {}  # partition folder -> [writer, temporary path, records]
        with contextlib.ExitStack() as stack:

            def file_for(folder: str) -> list:
                if folder not in opened:
                    name = f"task-{task:05d}.tfrecord"
                    path = (
                        posixpath.join(self._plan.temp_dir, folder, name)
                        if folder
                        else posixpath.join(self._plan.temp_dir, name)
                    )
                    raw = stack.enter_context(create_file(path))
                    opened[folder] = [
                        stack.enter_context(compressed_writer(raw, self._plan.compression)),
                        path,
                        0,
                    ]
                return opened[folder]

            if not self._partition_by:
                file_for("")  # unpartitioned, every task writes its file, even an empty one
            for batch in iterator:
                for folder, part in split_by_partition(batch, self._partition_by):
                    if part.num_rows:
                        records = serialize_records(part, self._record_type, self._record_column)
                        target = file_for(folder)
                        target[2] += write_tfrecords(target[0], records)
        return _Written(task, [(folder, path, count) for folder, (_, path, count) in sorted(opened.items())])

    def commit(self, messages: list[_Written]) -> None:
        plan = self._plan._replace(num_shards=max(1, len(messages)))
        written = [(folder, m.task, path, count) for m in messages if m for folder, path, count in m.files]
        result = commit_files(written, plan, {"skip": self._skip})
        _LOGGER.info(
            "%s: wrote %d records in %d files", plan.directory, result["numRecords"], len(result["files"])
        )

    def abort(self, messages: list[_Written]) -> None:
        delete_temporary(self._plan)
