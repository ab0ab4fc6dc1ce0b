"""The plan of a TFRecord read, free of Beam transforms: which files a path names, their
partition folders, the schema (given or inferred from a sample) and how to read each file.

`beam_tensorize.io.ReadTFRecord` and the Spark `tfrecord` data source both read through it.

Example:
    >>> import apache_beam as beam, pyarrow as pa
    >>> from beam_tensorize.io import WriteTFRecord
    >>> with beam.Pipeline() as p:
    ...     _ = (p | beam.Create([pa.RecordBatch.from_pydict({"day": [1], "x": [0.5]})])
    ...            | WriteTFRecord("planned", partition_by=["day"], save_mode="overwrite"))
    >>> TFRecordRead("planned").schema
    x: float
    day: int64
"""

from __future__ import annotations

import itertools
import logging
import math
import os
import posixpath
import re
from collections.abc import Iterable, Iterator
from typing import NamedTuple

import pyarrow as pa

from beam_tensorize.job.file_systems import local_path
from beam_tensorize.job.files import list_files, open_file
from beam_tensorize.kernels.arrow_types import DEFAULT_BATCH_ROWS
from beam_tensorize.kernels.partitions import infer_partition_column, parse_partition_path
from beam_tensorize.kernels.tfrecord.decoding import RECORD_TYPES, SchemaInference
from beam_tensorize.kernels.tfrecord.files import FileReading, file_records, relative_path
from beam_tensorize.kernels.tfrecord.framing import COMPRESSIONS

__all__ = ["TFRecordFiles", "TFRecordRead", "infer_tfrecord_schema", "visible"]

_LOGGER = logging.getLogger(__name__)
_GLOB = re.compile(r"[*?\[]")


class TFRecordFiles(NamedTuple):
    """The files a path names and the folder partition paths are relative to.

    Names starting with `_` or `.` (`_SUCCESS`, `_temporary/`, checksum files) are skipped,
    as Spark and Hadoop do.
    """

    base: str
    pattern: str
    paths: list[str]

    @classmethod
    def find(cls, path: str) -> TFRecordFiles:
        """Lists a file, a glob or a folder (recursively)."""
        path = local_path(path)
        path = path.rstrip("/") if len(path) > 1 else path
        if "://" not in path:
            path = os.path.abspath(path)  # the file system lists local files by absolute path
        if _GLOB.search(path):
            base = path[: _GLOB.search(path).start()].rsplit("/", 1)[0]
            pattern = path
        else:
            inside = list_files(posixpath.join(path, "**"))
            if inside:
                base, pattern = path, posixpath.join(path, "**")
            else:
                base, pattern = posixpath.dirname(path), path
        paths = [p for p in list_files(pattern) if visible(base, p)]
        return cls(base, pattern, paths)

    def relative(self, path: str) -> str:
        return relative_path(self.base, path)


def visible(base: str, path: str) -> bool:
    """Whether no folder or file name of `path` below `base` starts with `_` or `.`."""
    return not any(part.startswith(("_", ".")) for part in relative_path(base, path).split("/"))


def _partition_values(files: TFRecordFiles) -> dict[str, list[str | None]]:
    """Partition column -> its value in each file; every file must have the same columns."""
    layouts = {}
    for path in files.paths:
        pairs = parse_partition_path(posixpath.dirname(files.relative(path)))
        layouts[path] = pairs
    names = {tuple(name for name, _ in pairs) for pairs in layouts.values()}
    if len(names) > 1:
        shown = "; ".join(f"{p}: {[n for n, _ in pairs] or 'none'}" for p, pairs in list(layouts.items())[:4])
        raise ValueError(f"files under {files.base} have different partition folders ({shown})")
    if not layouts:
        return {}
    columns = next(iter(names))
    return {name: [dict(pairs)[name] for pairs in layouts.values()] for name in columns}


def _open_records(path: str, compression: str, verify_crc: bool, on_corrupt=None) -> Iterator[bytes]:
    with open_file(path) as raw:
        yield from file_records(raw, path, compression, verify_crc, on_corrupt)


def infer_tfrecord_schema(
    files: Iterable[str],
    record_type: str = "Example",
    sample_records: int | None = 1000,
    compression: str = "auto",
    verify_crc: bool = True,
) -> SchemaInference:
    """Reads a sample of records and infers their schema (see `SchemaInference.schema()`).

    The sample is every record of the first file (Spark-TFRecord infers from every record;
    a feature that first appears late in a file is still seen), then up to
    `ceil(sample_records / number of files)` records of each later file (so mixed files all
    contribute); None reads every record of every file.

    Example:
        >>> import apache_beam as beam, pyarrow as pa
        >>> from beam_tensorize.io import WriteTFRecord
        >>> with beam.Pipeline() as p:
        ...     _ = (p | beam.Create([pa.RecordBatch.from_pydict({"a": [1], "b": [["x", "y"]]})])
        ...            | WriteTFRecord("sampled", save_mode="overwrite"))
        >>> infer_tfrecord_schema(["sampled/part-00000-of-00001.tfrecord"]).schema()
        a: int64
        b: list<item: string>
          child 0, item: string
    """
    files = list(files)
    inference = SchemaInference(record_type)
    per_file = None if sample_records is None else max(1, math.ceil(sample_records / max(1, len(files))))
    for index, path in enumerate(files):
        records = _open_records(path, compression, verify_crc)
        if per_file is not None and index > 0:
            records = itertools.islice(records, per_file)
        chunk = []
        for record in records:
            chunk.append(record)
            if len(chunk) >= 4096:
                inference.observe(chunk, path)
                chunk = []
        inference.observe(chunk, path)
    return inference


class TFRecordRead:
    """What a read of TFRecord files needs, checked and listed once (see `ReadTFRecord` for the
    arguments): `.files` (the files found), `.schema` (record columns, then partition columns),
    `.inference` (the sample's report when the schema was inferred, else None) and `.reading`
    (how each file is read)."""

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
        if record_type not in RECORD_TYPES:
            raise ValueError(
                f"ReadTFRecord: record_type {record_type!r} is not one of {', '.join(RECORD_TYPES)}"
            )
        if compression != "auto" and compression not in COMPRESSIONS:
            raise ValueError(
                f"ReadTFRecord: compression {compression!r} is not one of auto, {', '.join(COMPRESSIONS)}"
            )
        if not isinstance(batch_rows, int) or batch_rows < 1:
            raise ValueError(f"ReadTFRecord: batch_rows must be a positive integer, got {batch_rows!r}")
        files = TFRecordFiles.find(path)
        if not files.paths:
            raise FileNotFoundError(f"ReadTFRecord: no TFRecord files at {path}")
        given = {} if schema is None else {f.name: f for f in schema}
        partitions = _partition_values(files)
        partition_fields = [
            given.get(name) or pa.field(name, infer_partition_column(values).type)
            for name, values in partitions.items()
        ]
        self.inference = None
        if schema is None:
            self.inference = infer_tfrecord_schema(
                files.paths, record_type, infer_sample_records, compression, verify_crc
            )
            record_schema = self.inference.schema()
            _LOGGER.info("ReadTFRecord(%s): inferred schema from %s", path, self.inference.report())
        else:
            record_schema = pa.schema([f for f in schema if f.name not in partitions])
        clash = [f.name for f in partition_fields if f.name in record_schema.names]
        if clash:
            raise ValueError(
                f"ReadTFRecord: {clash} are both record features and partition folders under {path}"
            )
        self.schema = pa.schema(list(record_schema) + partition_fields)
        self.files = files
        self.reading = FileReading(
            files.base,
            record_schema,
            tuple(partition_fields),
            record_type,
            compression,
            verify_crc,
            dead_letters,
            batch_rows,
            widened=schema is None,
        )
