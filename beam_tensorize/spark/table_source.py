"""Tables (Avro, Parquet, ORC, TFRecord) as a Spark DataFrame, read by beam_tensorize's own
format layer (`beam_tensorize.kernels.formats`).

The data source `beam_tensorize_table` reads files of any input format (option `format`,
default `auto`: told from each file's first bytes); `beam_tensorize_avro` is the same source
for Avro alone (PySpark ships no Avro reader: spark-avro is a separate jar). Files are cut
into the format's splits (Avro byte ranges, Parquet row groups, ORC stripes, whole TFRecord
files), one Spark partition each, and the batches go to Spark as they are: the values and the
batches are those the Beam `ReadTable` gives for the same files.

With the option `provenance`, every row also carries where its batch came from (the columns
`_source_file`, `_source_offset` and `_source_unit`); `source_batches` turns the Arrow batches
of a `mapInArrow` function back into the reader's batches, tagged as the Beam reader tags them
(`beam_tensorize.kernels.provenance`), so kernels that name bad rows or place records by
their source give the same results as in Beam.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition
from pyspark.sql.types import StructType

from beam_tensorize.job.files import match_files, open_file
from beam_tensorize.kernels import formats
from beam_tensorize.kernels.provenance import source_of, source_unit, with_source
from beam_tensorize.spark._compat import from_arrow_schema, to_arrow_schema
from beam_tensorize.spark._options import flag, lowered, positive

__all__ = [
    "AVRO_FORMAT",
    "SOURCE_FILE_COLUMN",
    "SOURCE_OFFSET_COLUMN",
    "SOURCE_UNIT_COLUMN",
    "TABLE_FORMAT",
    "AvroDataSource",
    "TableDataSource",
    "source_batches",
]

_LOGGER = logging.getLogger(__name__)

#: The format name of the data source for any input format.
TABLE_FORMAT = "beam_tensorize_table"
#: The format name of the Avro data source.
AVRO_FORMAT = "beam_tensorize_avro"
#: With `provenance`: the file a row's batch was read from.
SOURCE_FILE_COLUMN = "_source_file"
#: With `provenance`: where in its file a row's batch starts (see `SOURCE_UNIT_COLUMN`).
SOURCE_OFFSET_COLUMN = "_source_offset"
#: With `provenance`: what the offset counts ("byte", "row" or "stripe", see `provenance`).
SOURCE_UNIT_COLUMN = "_source_unit"
_PROVENANCE_FIELDS = [
    pa.field(SOURCE_FILE_COLUMN, pa.string()),
    pa.field(SOURCE_OFFSET_COLUMN, pa.int64()),
    pa.field(SOURCE_UNIT_COLUMN, pa.string()),
]
_PROVENANCE_NAMES = tuple(f.name for f in _PROVENANCE_FIELDS)


class _TableSplit(InputPartition):
    """One split of one file, with the format that reads it."""

    def __init__(self, fmt: formats.InputFormat, split: formats.Split):
        super().__init__((fmt.name, *split))
        self.format, self.split = fmt, split


class TableDataSource(DataSource):
    """Spark data source `beam_tensorize_table`: table files read with beam_tensorize's readers.

    Options (`spark.read.format("beam_tensorize_table").option(name, value)`):

    * `path` (or several paths through `.load([...])`): files or globs (local, gs://, s3://
      through Beam's file systems). A pattern that matches nothing fails, naming it.
    * `format`: `auto` (default: each file's format told from its first bytes), `avro`,
      `parquet`, `orc` or `tfrecord`.
    * `columns`: comma-separated columns to read, or dotted paths into records
      (`genreFeatures.term`) to read only those nested fields; names match exactly, else
      case-insensitively. Default: all columns.
    * `batchRows` (default 8192) and `splitBytes` (default 64 MiB): rows per Arrow batch and
      size of the splits (one Spark partition each), as in the Beam `ReadTable`.
    * `provenance` (`true` / `false`, default false): add `_source_file`, `_source_offset`
      and `_source_unit`, where each row's batch starts (see `source_batches`).

    The schema is that of the first file (in path order); other files must have the same
    columns, with types that convert to it. Spark has no fixed-size binary or millisecond
    time type: Avro `fixed` is read as binary, times as `time` in nanoseconds; timestamps
    become microseconds.

    Example::

        from beam_tensorize.spark import register_data_sources

        register_data_sources(spark)
        df = (spark.read.format("beam_tensorize_table")
              .option("columns", "userId,genreFeatures.term").load("data/*.parquet"))
    """

    #: The format read when the `format` option is not given.
    default_format = formats.AUTO

    @classmethod
    def name(cls) -> str:
        return TABLE_FORMAT

    def __init__(self, options):
        super().__init__(options)
        opts = lowered(options)
        if "paths" in opts:
            patterns = list(json.loads(opts["paths"]))
        elif "path" in opts:
            patterns = [opts["path"]]
        else:
            patterns = []
        if not patterns or not all(isinstance(p, str) and p.strip() for p in patterns):
            raise ValueError(f"{self.name()}: give the input files as .load(path) or .load([paths])")
        self._patterns = patterns
        columns = opts.get("columns")
        self._columns = None if columns is None else [c.strip() for c in columns.split(",") if c.strip()]
        self._format = None
        name = opts.get("format", self.default_format)
        if name != formats.AUTO:
            try:
                self._format = formats.get_format(name)
            except ValueError as err:
                raise ValueError(f"{self.name()}: {err}") from None
        self._batch_rows = positive(opts, "batchRows", formats.DEFAULT_BATCH_ROWS, self.name())
        self._split_bytes = positive(opts, "splitBytes", formats.DEFAULT_SPLIT_BYTES, self.name())
        self._provenance = flag(opts, "provenance", False, self.name())

    def _files(self) -> list[tuple[str, int]]:
        kind = self._format.kind if self._format is not None else "input"
        return [file for pattern in self._patterns for file in match_files(pattern, kind)]

    def schema(self) -> StructType:
        path = self._files()[0][0]
        arrow_schema = first_file_schema(self._patterns, self._format, self._columns)
        fields = [_spark_field(field, path) for field in arrow_schema]
        if self._provenance:
            fields += _PROVENANCE_FIELDS
        return from_arrow_schema(pa.schema(fields))

    def reader(self, schema: StructType) -> DataSourceReader:
        return _TableReader(self, schema)


class AvroDataSource(TableDataSource):
    """Spark data source `beam_tensorize_avro`: `beam_tensorize_table` for Avro files alone.

    Example::

        from beam_tensorize.spark import register_data_sources
        from beam_tensorize.sample import SAMPLE_AVRO

        register_data_sources(spark)
        df = (spark.read.format("beam_tensorize_avro")
              .option("columns", "userId,genreFeatures.term").load(SAMPLE_AVRO))
        df.count()  # 300
    """

    default_format = "avro"

    @classmethod
    def name(cls) -> str:
        return AVRO_FORMAT


class _TableReader(DataSourceReader):
    def __init__(self, source: TableDataSource, schema: StructType):
        self._source = source
        self._schema = schema

    def partitions(self) -> Sequence[InputPartition]:
        source = self._source
        splits = []
        for path, size in source._files():
            fmt, planned = formats.plan_file(open_file, path, size, source._format, source._split_bytes)
            splits += [_TableSplit(fmt, split) for split in planned]
        return splits

    def read(self, partition: _TableSplit) -> Iterator[pa.RecordBatch]:
        source = self._source
        target = to_arrow_schema(self._schema, timezone="UTC")
        data_schema = pa.schema([f for f in target if f.name not in _PROVENANCE_NAMES])
        split = partition.split
        path = split.path
        with open_file(path) as f:
            for batch in partition.format.read_split(f, split, source._columns, source._batch_rows):
                data = _cast(batch.replace_schema_metadata(None), data_schema, path)
                if source._provenance:
                    _, offset = source_of(batch)
                    n = batch.num_rows
                    columns = [
                        *data.columns,
                        pa.array([path] * n, pa.string()),
                        pa.array(np.full(n, offset, np.int64)),
                        pa.array([source_unit(batch)] * n, pa.string()),
                    ]
                    data = pa.RecordBatch.from_arrays(columns, schema=target)
                yield data


def first_file_schema(
    patterns: Sequence[str], fmt: formats.InputFormat | None = None, columns: Sequence[str] | None = None
) -> pa.Schema:
    """The Arrow schema of the first file the patterns match (the table's schema), as the
    reader gives it for `columns`; `fmt` None tells the format from the file."""
    kind = fmt.kind if fmt is not None else "input"
    path, size = match_files(patterns[0], kind)[0]
    with open_file(path) as f:
        resolved = formats.resolve_format(f.read(formats.HEAD_BYTES), path, size, fmt)
        f.seek(0)
        return resolved.read_schema(f, path, columns)


def _spark_type(t: pa.DataType, where: str) -> pa.DataType:
    """The Arrow type Spark can hold for `t` (what the batches are cast to)."""
    if pa.types.is_fixed_size_binary(t):
        return pa.binary()
    if pa.types.is_time(t):
        return pa.time64("ns")
    if pa.types.is_timestamp(t):
        return pa.timestamp("us", tz="UTC" if t.tz else None)
    if pa.types.is_decimal256(t):
        raise ValueError(f"{where} is {t}: Spark holds decimals of at most 38 digits")
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return pa.list_(_spark_field(t.value_field, where))
    if pa.types.is_map(t):
        return pa.map_(_spark_field(t.key_field, where), _spark_field(t.item_field, where))
    if pa.types.is_struct(t):
        return pa.struct(
            [_spark_field(t.field(i), f"{where}.{t.field(i).name}") for i in range(t.num_fields)]
        )
    return t


def _spark_field(field: pa.Field, where: str) -> pa.Field:
    return pa.field(field.name, _spark_type(field.type, f"{where}: column {field.name}"), field.nullable)


def _cast(batch: pa.RecordBatch, schema: pa.Schema, path: str) -> pa.RecordBatch:
    if batch.schema.equals(schema):
        return batch
    if batch.schema.names != schema.names:
        raise ValueError(
            f"{path}: its columns {batch.schema.names} differ from those of the first file "
            f"{schema.names}; read files of different schemas separately"
        )
    try:
        return batch.cast(schema)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as err:
        raise ValueError(
            f"{path}: its column types do not convert to those of the first file: {err}"
        ) from None


def source_batches(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The Avro reader's batches again, from the Arrow batches of a `mapInArrow` function.

    Spark hands a `mapInArrow` function its rows in batches of its own size. With the
    `provenance` option, the rows of one reader batch are consecutive in a partition and
    share `_source_file`, `_source_offset` and `_source_unit`; this gathers each such run into
    one batch, drops those columns, and tags the batch with its source as the Beam reader does.

    Example::

        def count_batches(batches):
            for batch in source_batches(batches):
                yield pa.RecordBatch.from_pydict({"rows": [batch.num_rows]})

        df.mapInArrow(count_batches, "rows long")
    """
    pending: list[pa.RecordBatch] = []
    tag: tuple[str, int, str] | None = None
    for batch in batches:
        n = batch.num_rows
        if n == 0:
            continue
        files = batch.column(SOURCE_FILE_COLUMN)
        offsets = batch.column(SOURCE_OFFSET_COLUMN).to_numpy(zero_copy_only=False)
        changed = offsets[1:] != offsets[:-1]
        if n > 1:
            changed |= pc.not_equal(files.slice(1), files.slice(0, n - 1)).to_numpy(zero_copy_only=False)
        starts = [0, *(np.flatnonzero(changed) + 1).tolist()]
        for i, start in enumerate(starts):
            stop = starts[i + 1] if i + 1 < len(starts) else n
            run_tag = (
                files[start].as_py(),
                int(offsets[start]),
                batch.column(SOURCE_UNIT_COLUMN)[start].as_py(),
            )
            if run_tag != tag and pending:
                yield _tagged(pending, tag)
                pending = []
            tag = run_tag
            pending.append(batch.slice(start, stop - start))
    if pending:
        yield _tagged(pending, tag)


def _tagged(pieces: list[pa.RecordBatch], tag: tuple[str, int, str]) -> pa.RecordBatch:
    batch = pieces[0] if len(pieces) == 1 else pa.concat_batches(pieces)
    keep = [i for i, name in enumerate(batch.schema.names) if name not in _PROVENANCE_NAMES]
    return with_source(batch.select(keep), *tag)
