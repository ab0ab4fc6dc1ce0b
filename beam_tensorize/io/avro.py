"""`ReadAvro`: Avro files -> `PCollection[pyarrow.RecordBatch]`, split at Avro sync markers."""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.filesystem import CompressionTypes
from apache_beam.io.filesystems import FileSystems
from apache_beam.metrics import Metrics

from beam_tensorize import metrics
from beam_tensorize.io.files import match_files
from beam_tensorize.kernels import avro

__all__ = ["ReadAvro"]

_LOGGER = logging.getLogger(__name__)


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
        batch_rows: int = avro.DEFAULT_BATCH_ROWS,
        split_bytes: int = avro.DEFAULT_SPLIT_BYTES,
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
            | "MatchFiles" >> beam.FlatMap(match_files, "Avro")
            | "SplitIntoRanges" >> beam.FlatMap(_split_ranges, self._split_bytes)
            | "Redistribute" >> beam.Reshuffle()
            | "DecodeBlocks" >> beam.ParDo(_ReadAvroRangeFn(self._columns, self._batch_rows))
        )


def _split_ranges(file: tuple[str, int], split_bytes: int) -> Iterator[tuple[str, int, int]]:
    path, size = file
    for start, end in avro.split_ranges(size, split_bytes):
        yield path, start, end


class _ReadAvroRangeFn(beam.DoFn):
    """Decodes the Avro blocks that start in one byte range of one file."""

    def __init__(self, columns: list[str] | None, batch_rows: int):
        self._columns = columns
        self._batch_rows = batch_rows
        self._rows = Metrics.counter(metrics.NAMESPACE, metrics.ROWS_READ)
        self._batches = Metrics.counter(metrics.NAMESPACE, metrics.BATCHES_READ)

    def process(self, element: tuple[str, int, int]) -> Iterable[pa.RecordBatch]:
        path, start, end = element
        with FileSystems.open(path, compression_type=CompressionTypes.UNCOMPRESSED) as f:
            for batch in avro.read_avro_range(f, path, self._columns, start, end, self._batch_rows):
                self._rows.inc(batch.num_rows)
                self._batches.inc()
                yield batch
