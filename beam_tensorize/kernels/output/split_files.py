"""Streaming output files: the records of each input split go straight into files of their own,
with no shuffle and at most one open file per partition folder.

The Beam sinks and the Spark path write with `SplitFiles` by default: each encoded batch is
split by its partition folders, serialized, and appended to the open file of (its input split,
its folder); a file is closed when a batch of another split arrives (the reader hands over a
split's batches one after the other) or when it holds `max_records_per_file` records. Memory
is one batch plus one file writer per folder, whatever the input size.

Each file is known by a key: the split's key (`beam_tensorize.kernels.provenance.split_key`)
and a sequence number. The commit names the files of a folder `part-<i>-of-<n>` in key order,
so the same input gives the same files on every runner and with any number of workers.

Example:
    >>> import io, pyarrow as pa
    >>> from beam_tensorize.kernels.provenance import with_source
    >>> opened = {}
    >>> def open_file(path):
    ...     opened[path] = io.BytesIO(); opened[path].close = lambda: None
    ...     return opened[path]
    >>> files = SplitFiles("tmp", "tfrecord", "none", open_file, max_records_per_file=2)
    >>> batch = pa.RecordBatch.from_pydict({"serialized": [b"a", b"b", b"c"]})
    >>> written = files.write(with_source(batch, "x.avro", 4)) + files.close()
    >>> [(f.key.split("\\0"), f.count) for f in written]
    [(['x.avro', '00000000000000000004', '00000000'], 2), (['x.avro', '00000000000000000004', '00000001'], 1)]
"""

from __future__ import annotations

import contextlib
import hashlib
import posixpath
import uuid
from collections.abc import Callable, Hashable, Sequence
from typing import BinaryIO, NamedTuple

import pyarrow as pa

from beam_tensorize.kernels.output.base import FileWriter, OutputFormat, get_output_format
from beam_tensorize.kernels.output.shards import ROWS, serialize_records
from beam_tensorize.kernels.partitions import split_by_partition
from beam_tensorize.kernels.provenance import order_key, split_key

__all__ = ["RecordFileWriter", "SplitFiles", "WrittenFile", "batch_file_key"]

#: How an opened output file is asked for: a path -> a binary file object (closed by the caller
#: through its `close`).
OpenFile = Callable[[str], BinaryIO]


class WrittenFile(NamedTuple):
    """A file written into the temporary folder: its partition folder ("" unpartitioned), its
    key (file order within the folder), where it is, and how many records it holds."""

    folder: str
    key: str
    temp_path: str
    count: int


def batch_file_key(batch: pa.RecordBatch) -> str:
    """The key of the files that start with `batch`: its source tag (file and where its rows
    start), else a digest of its content (an untagged batch)."""
    return order_key(
        batch, fallback=repr(batch.slice(0, 1).to_pylist()).encode() + str(batch.num_rows).encode()
    )


class RecordFileWriter:
    """One output file being written: the output format's `FileWriter` over a file this
    object closes."""

    def __init__(self, raw: BinaryIO, file_format: str | OutputFormat, compression: str):
        self._raw = raw
        self._writer: FileWriter = get_output_format(file_format).open_writer(raw, compression)
        #: Records written so far.
        self.count = 0

    def write(self, records: pa.Array | pa.RecordBatch) -> None:
        self._writer.write(records)
        self.count += len(records)

    def close(self) -> int:
        """Finish and close the file; returns its record count."""
        try:
            self._writer.close()
        finally:
            self._raw.close()
        return self.count

    def abort(self) -> None:
        with contextlib.suppress(Exception):
            self._writer.abort()
        with contextlib.suppress(Exception):
            self._raw.close()


class SplitFiles:
    """Writes batches into one file per (input split, partition folder), rolled over every
    `max_records_per_file` records (None: no limit).

    Args:
        temp_dir: the folder the files are written into (then committed elsewhere).
        file_format: an output format or its name (`beam_tensorize.kernels.output`).
        compression: the file format's compression.
        open_file: path -> a new binary file to write (closed through its `close`).
        partition_by: columns that name `<col>=<value>/` folders (left out of the records).
        record_type: how rows become TFRecord records (`serialize_records`); columnar formats
            write rows.
        record_column: the binary column for record type "ByteArray".
        max_records_per_file: start another file of the same split after this many records.
    """

    def __init__(
        self,
        temp_dir: str,
        file_format: str | OutputFormat,
        compression: str,
        open_file: OpenFile,
        partition_by: Sequence[str] = (),
        record_type: str = "ByteArray",
        record_column: str | None = None,
        max_records_per_file: int | None = None,
    ):
        self._temp_dir = temp_dir
        self._format = get_output_format(file_format)
        self._compression = compression
        self._open = open_file
        self._partition_by = tuple(partition_by)
        self._record_type = ROWS if self._format.columnar else record_type
        self._record_column = None if self._format.columnar else record_column
        self._max = max_records_per_file
        self._token = uuid.uuid4().hex[:12]  # this writer's files only (a retried bundle writes anew)
        self._extension = self._format.extension(compression)
        self._split: Hashable = None
        self._key = ""
        self._open_files: dict[str, tuple[str, str, RecordFileWriter]] = {}  # folder -> (key, path, writer)
        self._next_sequence: dict[tuple[str, str], int] = {}

    def write(self, batch: pa.RecordBatch, split: Hashable = None) -> list[WrittenFile]:
        """Append `batch` (its rows, per partition folder) to the files of its input split;
        returns the files this closed (those of an earlier split, and full ones).

        The split is `split`, else the batch's split tag (`split_key`), else the batch alone.
        The files of a split are keyed by the source tag of its first batch (`batch_file_key`).
        """
        if batch.num_rows == 0:
            return []
        if split is None:
            split = split_key(batch) or batch_file_key(batch)
        done = []
        if split != self._split:
            done = self._close_all()
            self._split = split
            self._key = batch_file_key(batch)
        key = self._key
        for folder, part in split_by_partition(batch, self._partition_by):
            records = serialize_records(part, self._record_type, self._record_column)
            while len(records):
                writer = self._writer(folder, key)
                room = len(records) if self._max is None else self._max - writer.count
                writer.write(records.slice(0, room) if room < len(records) else records)
                records = records.slice(room) if room < len(records) else records.slice(len(records))
                if self._max is not None and writer.count >= self._max:
                    done.append(self._close(folder))
        return done

    def close(self) -> list[WrittenFile]:
        """Close every open file; returns them."""
        self._split = None
        return self._close_all()

    def abort(self) -> None:
        """Give up the open files (after an error)."""
        for _, _, writer in self._open_files.values():
            writer.abort()
        self._open_files.clear()

    def _writer(self, folder: str, key: str) -> RecordFileWriter:
        if folder not in self._open_files:
            sequence = self._next_sequence.get((folder, key), 0)
            self._next_sequence[folder, key] = sequence + 1
            file_key = f"{key}\0{sequence:08d}"
            digest = hashlib.sha256(file_key.encode()).hexdigest()[:20]
            name = f"{digest}-{self._token}{self._extension}"
            path = (
                posixpath.join(self._temp_dir, folder, name)
                if folder
                else posixpath.join(self._temp_dir, name)
            )
            self._open_files[folder] = (
                file_key,
                path,
                RecordFileWriter(self._open(path), self._format, self._compression),
            )
        return self._open_files[folder][2]

    def _close(self, folder: str) -> WrittenFile:
        file_key, path, writer = self._open_files.pop(folder)
        return WrittenFile(folder, file_key, path, writer.close())

    def _close_all(self) -> list[WrittenFile]:
        return [self._close(folder) for folder in sorted(self._open_files)]
