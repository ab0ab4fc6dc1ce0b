"""`ReadTFRecord`: TFRecord files (plain or Hive-partitioned folders) -> Arrow RecordBatches."""

from __future__ import annotations

import logging
from typing import NamedTuple

import apache_beam as beam
import pyarrow as pa
from apache_beam.io import fileio
from apache_beam.transforms.display import DisplayDataItem

from beam_tensorize.io.table import BATCHES, read_splits
from beam_tensorize.job.tfrecord_read import TFRecordFiles, TFRecordRead, infer_tfrecord_schema, visible
from beam_tensorize.kernels.arrow_types import DEFAULT_BATCH_ROWS
from beam_tensorize.kernels.formats import TFRecordFormat
from beam_tensorize.kernels.output.dead_letters import DEAD_LETTERS

__all__ = ["ReadTFRecord", "ReadTFRecordOutputs", "TFRecordFiles", "infer_tfrecord_schema"]

_LOGGER = logging.getLogger(__name__)


class ReadTFRecordOutputs(NamedTuple):
    """What `ReadTFRecord(dead_letters=True)` returns.

    Attributes:
        batches: the decoded record batches.
        dead_letters: one dict per bad record: `source` (file), `record` (its position),
            `offset` (byte offset in the uncompressed stream, for a corrupt frame), `reason`.
    """

    batches: beam.PCollection
    dead_letters: beam.PCollection


class ReadTFRecord(beam.PTransform):
    """Read TFRecord files as `pyarrow.RecordBatch`es.

    `path` is a file, a glob or a folder; a folder is read recursively, and `col=value` folder
    names (Hive layout, e.g. written by `WriteTFRecord(partition_by=...)`) become columns,
    typed by inference over all folder names (int64, else float64, else string; null for
    `__HIVE_DEFAULT_PARTITION__`) unless `schema` has a field of that name. Files are spread
    over workers (each file is read by one worker: TFRecord files cannot be split). GZIP and
    ZLIB files are recognised from their first bytes.

    Without `schema`, one is inferred when the transform is built from a sample of
    `infer_sample_records` records (None: all of them) with the rules of
    `beam_tensorize.kernels.tfrecord.decoding`; the features seen are logged and kept in
    `.inference` (`.inference.report()`); the final schema is `.schema`, the files found when
    the transform was built `.files`.

    Every record's checksums are verified (`verify_crc`). A corrupt record, or one that does
    not fit the schema, fails the job with its file and position, or, with
    `dead_letters=True`, is counted (`beam_tensorize/bad_records`) and sent to a dead-letter
    output; a corrupt length header ends the reading of that file (the rest cannot be framed).

    Args:
        path: file, glob or folder (local, gs://, s3://, ...).
        schema: the record columns wanted (plus, optionally, partition column types).
        record_type: "Example", "SequenceExample" or "ByteArray" (one `byteArray` column).
        compression: "auto", "none", "gzip" or "zlib".
        verify_crc: check the checksums of every frame.
        dead_letters: route bad records to a second output instead of failing.
        batch_rows: records per output batch (at most).
        infer_sample_records: records read to infer the schema (None: every record).

    Returns (from `expand`): the batches, or `ReadTFRecordOutputs(batches, dead_letters)`.

    Example:
        >>> import apache_beam as beam, pyarrow as pa
        >>> from beam_tensorize.io import WriteTFRecord
        >>> with beam.Pipeline() as p:
        ...     batch = pa.RecordBatch.from_pydict({"day": [1, 2], "x": [0.5, 1.5]})
        ...     _ = p | beam.Create([batch]) | WriteTFRecord("days", partition_by=["day"], save_mode="overwrite")
        >>> read = ReadTFRecord("days")
        >>> read.schema
        x: float
        day: int64
        >>> with beam.Pipeline() as p:
        ...     rows = p | read | beam.FlatMap(lambda b: b.to_pylist()) | beam.combiners.ToList()
        ...     _ = rows | beam.Map(lambda r: print(sorted(r, key=lambda x: x["day"])))
        [{'x': 0.5, 'day': 1}, {'x': 1.5, 'day': 2}]
    """

    def __init__(
        self,
        path: str,
        schema: pa.Schema | None = None,
        record_type: str = "Example",
        compression: str = "auto",
        verify_crc: bool = True,
        dead_letters: bool = False,
        batch_rows: int = DEFAULT_BATCH_ROWS,
        infer_sample_records: int | None = 1000,
    ):
        super().__init__()
        plan = TFRecordRead(
            path, schema, record_type, compression, verify_crc, dead_letters, batch_rows, infer_sample_records
        )
        self.inference = plan.inference
        self.schema = plan.schema
        self.files = plan.files
        self._reading = plan.reading

    def display_data(self) -> dict:
        reading = self._reading
        return {
            "path": DisplayDataItem(self.files.pattern, label="Files"),
            "record_type": DisplayDataItem(reading.record_type, label="Record type"),
            "compression": DisplayDataItem(reading.compression, label="Compression"),
            "files": DisplayDataItem(len(self.files.paths), label="Files found"),
        }

    def expand(self, pipeline):
        files = self.files
        read = read_splits(
            pipeline
            | "Pattern" >> beam.Create([files.pattern])
            | "MatchFiles" >> fileio.MatchAll()
            | "SkipHidden" >> beam.Filter(lambda m, base: visible(base, m.path), files.base)
            | "PathAndSize" >> beam.Map(lambda m: (m.path, m.size_in_bytes)),
            TFRecordFormat.from_reading(self._reading),
            None,
            self._reading.batch_rows,
            1,
        )
        if self._reading.dead_letters:
            return ReadTFRecordOutputs(read[BATCHES], read[DEAD_LETTERS])
        return read[BATCHES]
