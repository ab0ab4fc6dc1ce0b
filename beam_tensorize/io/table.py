"""`ReadTable`: files of any input format -> `PCollection[pyarrow.RecordBatch]`, through the
format layer (`beam_tensorize.kernels.formats`); `ReadAvro`, `ReadParquet`, `ReadOrc` and
`ReadTFRecord` (in the module of their format) are its one-format forms."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Sequence

import apache_beam as beam
import pyarrow as pa
from apache_beam.metrics import Metrics
from apache_beam.transforms.display import DisplayDataItem

from beam_tensorize import metrics
from beam_tensorize.job.file_systems import local_path
from beam_tensorize.job.files import match_files, open_file
from beam_tensorize.job.reading import file_schema, read_split_batches, unify_file_schemas
from beam_tensorize.kernels import formats
from beam_tensorize.kernels.formats import AUTO, InputFormat, Split
from beam_tensorize.kernels.output.dead_letters import DEAD_LETTERS
from beam_tensorize.progress import ProgressCounter

__all__ = ["BATCHES", "ReadTable", "read_splits"]

_LOGGER = logging.getLogger(__name__)


class ReadTable(beam.PTransform):
    """Read files of a table format into Arrow record batches.

    Each file's format is `format`, or with `format="auto"` is told from its first bytes (Avro
    `Obj\\x01`, Parquet `PAR1`, ORC `ORC`, TFRecord framing; see `beam_tensorize.kernels.formats`).
    Files are cut into splits (Avro: byte ranges of `split_bytes`; Parquet: runs of row groups
    of about `split_bytes`; ORC: stripes; TFRecord: whole files) spread over the workers; every
    batch is tagged with its file and where its rows start, so later steps name bad rows
    precisely and order records deterministically.

    Args:
        file_patterns: a glob or a list of globs (local, gs://, s3://, ...). A pattern that
            matches nothing fails the pipeline, naming the pattern.
        format: "auto", a format name ("avro", "parquet", "orc", "tfrecord") or an
            `InputFormat` instance (e.g. `TFRecordFormat(schema=...)`, or a format of your own).
        columns: columns to keep (matched exactly, else case-insensitively), or dotted paths
            into records (`genreFeatures.term`) to keep only those nested fields; None keeps
            all. Or a (picklable) function of a file's full schema giving them, called once
            per file on the worker; a file it gives no columns for is not read.
        batch_rows: rows per output batch (a batch never spans two splits).
        split_bytes: about how many bytes one split reads.
        validate: list the files when the transform is built, failing at once if a pattern
            matches nothing (off by default: building a job needs no access to the data).
        dead_letters: give records that do not decode (Avro: invalid UTF-8, a bad union
            branch, ...) as dead letters instead of failing the job: the transform then gives
            `.batches` and `.dead_letters` (dicts `{"source", "offset", "record", "reason",
            "data"}`). Block- and file-level corruption still fails, naming file and offset.

    Example:
        >>> import apache_beam as beam
        >>> from beam_tensorize.sample import SAMPLE_AVRO
        >>> with beam.Pipeline() as p:
        ...     rows = (p | ReadTable(SAMPLE_AVRO, columns=["userId"])
        ...               | beam.Map(lambda b: b.num_rows) | beam.CombineGlobally(sum)
        ...               | beam.Map(print))
        300
    """

    _fixed_format: str | None = None
    #: The counter of the rows read (`beam_tensorize.metrics`).
    _rows_metric: str = metrics.ROWS_READ

    def __init__(
        self,
        file_patterns: str | Sequence[str],
        format: str | InputFormat = AUTO,
        columns: Sequence[str] | None = None,
        batch_rows: int = formats.DEFAULT_BATCH_ROWS,
        split_bytes: int = formats.DEFAULT_SPLIT_BYTES,
        validate: bool = False,
        dead_letters: bool = False,
    ):
        super().__init__()
        name = type(self).__name__
        patterns = [file_patterns] if isinstance(file_patterns, str) else list(file_patterns)
        if not patterns or not all(isinstance(p, str) and p.strip() for p in patterns):
            raise ValueError(f"{name} needs one or more non-empty file patterns, got {file_patterns!r}")
        if isinstance(columns, str):
            raise TypeError(f"{name}: columns must be a list of column names, not the string {columns!r}")
        for arg, value in (("batch_rows", batch_rows), ("split_bytes", split_bytes)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"{name}: {arg} must be a positive integer, got {value!r}")
        self._format = None if format == AUTO else formats.get_format(format)
        self._patterns = [local_path(p) for p in patterns]
        self._columns = None if columns is None else columns if callable(columns) else list(columns)
        self._batch_rows = batch_rows
        self._split_bytes = split_bytes
        self._dead_letters = dead_letters
        if validate:
            for pattern in patterns:
                match_files(pattern, self._kind(), note=False)  # the read notes what it skips

    def _kind(self) -> str:
        return self._format.kind if self._format is not None else "input"

    def display_data(self) -> dict:
        return {
            "file_patterns": DisplayDataItem(", ".join(self._patterns), label="File patterns"),
            "format": DisplayDataItem(self._format.name if self._format else AUTO, label="Format"),
            "columns": DisplayDataItem(
                "(chosen per file)" if callable(self._columns) else ", ".join(self._columns or ["(all)"]),
                label="Columns",
            ),
            "batch_rows": DisplayDataItem(self._batch_rows, label="Rows per batch"),
            "split_bytes": DisplayDataItem(self._split_bytes, label="Bytes per split"),
        }

    def expand(self, pbegin):
        files = (
            pbegin
            | "Patterns" >> beam.Create(self._patterns)
            | "MatchFiles"
            >> beam.FlatMap(match_files, self._kind(), note=self._rows_metric == metrics.ROWS_READ)
        )
        read = read_splits(
            files,
            self._format,
            self._columns,
            self._batch_rows,
            self._split_bytes,
            self._rows_metric,
            self._dead_letters,
        )
        return read if self._dead_letters else read[BATCHES]


#: Output tags of `read_splits`.
BATCHES = "batches"


def read_splits(
    files: beam.PCollection,
    fmt: InputFormat | None,
    columns: list[str] | Callable[[pa.Schema], list[str]] | None,
    batch_rows: int,
    split_bytes: int,
    rows_metric: str = metrics.ROWS_READ,
    dead_letters: bool = False,
):
    """The shared read steps: `(path, size)` of each file -> its splits, spread over workers ->
    tagged batches (tag `BATCHES`) and, for a format with `dead_letters` (or every format's
    `with_dead_letters()` when `dead_letters`), the dead letters (tag `DEAD_LETTERS`). `fmt`
    None tells each file's format from its first bytes; the rows read are counted in the
    counter `rows_metric`.

    With fixed `columns`, every file's schema (for those columns) is read while planning and
    the schemas are unified (`beam_tensorize.kernels.schemas`: int32 in one file and int64 in
    another read as int64, ...); every batch is cast to that one schema, and files whose types
    clash fail the job, naming the column, both types and both files."""
    planned = files | "PlanSplits" >> beam.ParDo(
        _PlanSplitsFn(fmt, split_bytes, columns, dead_letters)
    ).with_outputs(_SCHEMAS, main="splits")
    side_inputs = ()
    if not callable(columns):
        unified = planned[_SCHEMAS] | "UnifySchemas" >> beam.CombineGlobally(_UnifySchemasFn(columns))
        side_inputs = (beam.pvalue.AsSingleton(unified),)
    return (
        planned["splits"]
        | "Redistribute" >> beam.Reshuffle()
        | "ReadSplits"
        >> beam.ParDo(_ReadSplitFn(columns, batch_rows, rows_metric), *side_inputs)
        .with_output_types(pa.RecordBatch)
        .with_outputs(DEAD_LETTERS, main=BATCHES)
    )


_SCHEMAS = "schemas"


class _UnifySchemasFn(beam.CombineFn):
    """(path, schema) of every file -> their unified schema (None for no file); the distinct
    schemas only travel, each with its first file."""

    def __init__(self, columns=None):
        self._columns = None if columns is None else list(columns)

    def create_accumulator(self) -> dict:
        return {}

    def add_input(self, accumulator: dict, element: tuple[str, pa.Schema]) -> dict:
        path, schema = element
        key = schema.to_string()
        if key not in accumulator or path < accumulator[key][0]:
            accumulator[key] = (path, schema)
        return accumulator

    def merge_accumulators(self, accumulators) -> dict:
        merged: dict = {}
        for accumulator in accumulators:
            for path, schema in accumulator.values():
                self.add_input(merged, (path, schema))
        return merged

    def extract_output(self, accumulator: dict) -> pa.Schema | None:
        if not accumulator:
            return None
        return unify_file_schemas(sorted(accumulator.values(), key=lambda e: e[0]), self._columns)


class _PlanSplitsFn(beam.DoFn):
    """(path, size) -> (format, split) for each split of the file, and (tag `_SCHEMAS`) the
    file's schema for fixed `columns`."""

    def __init__(self, fmt: InputFormat | None, split_bytes: int, columns, dead_letters: bool = False):
        self._format = fmt
        self._split_bytes = split_bytes
        self._columns = columns
        self._dead_letters = dead_letters

    def process(self, file: tuple[str, int]) -> Iterable[tuple[InputFormat, Split]]:
        path, size = file
        fmt, splits = formats.plan_file(open_file, path, size, self._format, self._split_bytes)
        if self._dead_letters:
            fmt = fmt.with_dead_letters()
        if not callable(self._columns) and splits:
            yield beam.pvalue.TaggedOutput(_SCHEMAS, (path, file_schema(fmt, path, self._columns)))
        for split in splits:
            yield fmt, split


class _ReadSplitFn(beam.DoFn):
    """Reads one split of one file into tagged record batches (and dead letters)."""

    def __init__(self, columns: list[str] | None, batch_rows: int, rows_metric: str):
        self._columns = columns
        self._batch_rows = batch_rows
        self._rows_metric = rows_metric
        self._rows = Metrics.counter(metrics.NAMESPACE, rows_metric)
        self._batches = Metrics.counter(metrics.NAMESPACE, metrics.BATCHES_READ)
        self._bad = Metrics.counter(metrics.NAMESPACE, metrics.BAD_RECORDS)

    def setup(self):
        self._chosen: dict[str, list[str]] = {}  # path -> columns, for chosen columns
        self._progress = ProgressCounter(self._rows_metric)

    def finish_bundle(self):
        self._progress.flush()

    def process(
        self, element: tuple[InputFormat, Split], schema: pa.Schema | None = None
    ) -> Iterable[pa.RecordBatch]:
        fmt, split = element
        for item in read_split_batches(fmt, split, self._columns, self._batch_rows, self._chosen, schema):
            if isinstance(item, dict):
                self._bad.inc()
                yield beam.pvalue.TaggedOutput(DEAD_LETTERS, item)
            else:
                self._rows.inc(item.num_rows)
                self._progress.add(item.num_rows)
                self._batches.inc()
                yield item
