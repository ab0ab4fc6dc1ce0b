"""`ReadAvro`: Avro files -> `PCollection[pyarrow.RecordBatch]`, split at Avro sync markers."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator, Sequence

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from beam_tensorize import metrics
from beam_tensorize.kernels import avro
from beam_tensorize.kernels.provenance import with_source

__all__ = ["ReadAvro"]

_LOGGER = logging.getLogger(__name__)

_DEFAULT_SPLIT_BYTES = 64 << 20
_DEFAULT_BATCH_ROWS = 8192


class ReadAvro(beam.PTransform):
    """Read Avro files into Arrow record batches.

    Each file is cut into byte ranges of `split_bytes`; a range reads the Avro blocks that
    start inside it, so a large file is read by many workers. Blocks are decoded one at a
    time and converted to Arrow as they are read, then gathered into batches of about
    `batch_rows` rows. Every batch is tagged with its file and starting byte (see
    `beam_tensorize.kernels.provenance`).

    Args:
        file_patterns: a glob or a list of globs (local, gs://, s3://, ...). A pattern that
            matches nothing fails the pipeline, naming the pattern.
        columns: columns to keep (matched exactly, else case-insensitively), or dotted paths
            into records (`genreFeatures.term`) to keep only those nested fields; None keeps
            all.
        batch_rows: rows per output batch (a batch never spans two ranges).
        split_bytes: size of the byte ranges files are cut into.

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
        batch_rows: int = _DEFAULT_BATCH_ROWS,
        split_bytes: int = _DEFAULT_SPLIT_BYTES,
    ):
        super().__init__()
        patterns = [file_patterns] if isinstance(file_patterns, str) else list(file_patterns)
        if not patterns or not all(isinstance(p, str) and p.strip() for p in patterns):
            raise ValueError(f"ReadAvro needs one or more non-empty file patterns, got {file_patterns!r}")
        if batch_rows < 1 or split_bytes < 1:
            raise ValueError("ReadAvro: batch_rows and split_bytes must be positive")
        self._patterns = patterns
        self._columns = None if columns is None else list(columns)
        self._batch_rows = batch_rows
        self._split_bytes = split_bytes

    def expand(self, pbegin):
        return (
            pbegin
            | "Patterns" >> beam.Create(self._patterns)
            | "MatchFiles" >> beam.FlatMap(_match_files)
            | "SplitIntoRanges" >> beam.FlatMap(_split_ranges, self._split_bytes)
            | "Redistribute" >> beam.Reshuffle()
            | "DecodeBlocks" >> beam.ParDo(_ReadAvroRangeFn(self._columns, self._batch_rows))
        )


def _match_files(pattern: str) -> list[tuple[str, int]]:
    matched = FileSystems.match([pattern])[0].metadata_list
    if not matched:
        raise FileNotFoundError(f"no Avro file matches the input pattern {pattern!r}")
    return sorted((m.path, m.size_in_bytes) for m in matched)


def _split_ranges(file: tuple[str, int], split_bytes: int) -> Iterator[tuple[str, int, int]]:
    path, size = file
    start = 0
    while True:
        end = min(start + split_bytes, size)
        yield path, start, end
        if end >= size:
            return
        start = end


class _ReadAvroRangeFn(beam.DoFn):
    """Decodes the Avro blocks that start in one byte range of one file."""

    def __init__(self, columns: list[str] | None, batch_rows: int):
        self._columns = columns
        self._batch_rows = batch_rows
        self._rows = Metrics.counter(metrics.NAMESPACE, metrics.ROWS_READ)
        self._batches = Metrics.counter(metrics.NAMESPACE, metrics.BATCHES_READ)

    def setup(self):
        self._schemas: dict[str, pa.Schema] = {}

    def _arrow_schema(self, header: avro.AvroHeader, path: str) -> pa.Schema:
        key = json.dumps(header.schema, sort_keys=True)
        if key not in self._schemas:
            schema = avro.avro_schema_to_arrow(header.schema)
            columns = None
            if self._columns is not None:
                columns = [_resolve_column(name, schema.names, path) for name in self._columns]
            try:
                self._schemas[key] = avro.project_arrow_schema(schema, columns)
            except ValueError as err:
                raise ValueError(f"{path}: {err}") from None
        return self._schemas[key]

    def process(self, element: tuple[str, int, int]) -> Iterable[pa.RecordBatch]:
        path, start, end = element
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            header = avro.read_header(f, path)
            schema = self._arrow_schema(header, path)
            pending: list[pa.RecordBatch] = []
            pending_rows, first_offset = 0, None
            for block in avro.iter_blocks(f, header, path, start, end):
                batch = avro.decode_block(block, header, schema, path)
                if first_offset is None:
                    first_offset = block.offset
                pending.append(batch)
                pending_rows += batch.num_rows
                if pending_rows >= self._batch_rows:
                    yield self._emit(pending, path, first_offset)
                    pending, pending_rows, first_offset = [], 0, None
            if pending_rows:
                yield self._emit(pending, path, first_offset)

    def _emit(self, pending: list[pa.RecordBatch], path: str, offset: int) -> pa.RecordBatch:
        batch = pending[0] if len(pending) == 1 else pa.concat_batches(pending)
        self._rows.inc(batch.num_rows)
        self._batches.inc()
        return with_source(batch, path, offset)


def _resolve_column(column: str, available: list[str], path: str) -> str:
    name, dot, nested = column.partition(".")
    return _resolve_name(name, available, path) + dot + nested


def _resolve_name(name: str, available: list[str], path: str) -> str:
    if name in available:
        return name
    folded = [n for n in available if n.lower() == name.lower()]
    if len(folded) == 1:
        return folded[0]
    raise ValueError(
        f"{path}: the config reads column {name!r}, which this file does not have; "
        f"its columns are: {', '.join(available)}"
    )
