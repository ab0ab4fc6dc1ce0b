"""Record batches kept in a file between two steps of a job and read back as they were (no
Beam): what lets train mode decode its input once. The first step writes the batches it
extracted while the feature lists are counted; the second reads them back once the lists exist.

A spill file is a sequence of Arrow IPC streams, each preceded by the byte `S`, ending with the
byte `E`; a new stream starts when a batch's schema (without its metadata) differs from the
previous one's. Each batch's schema metadata (its source tag, see `beam_tensorize.kernels.
provenance`) travels as the batch's own IPC metadata, so it comes back per batch. Nothing is
compressed: writing and reading cost a copy of the bytes; compressing (LZ4) took five times as
long as writing the bytes.

Example:
    >>> import os, tempfile
    >>> import pyarrow as pa
    >>> path = os.path.join(tempfile.mkdtemp(), "kept.spill")
    >>> with SpillWriter(open(path, "wb")) as spill:
    ...     spill.write(pa.RecordBatch.from_pydict({"a": [1, 2]}).replace_schema_metadata({"k": "1"}))
    ...     spill.write(pa.RecordBatch.from_pydict({"a": ["x"]}))
    >>> [(b.to_pydict(), b.schema.metadata) for b in read_spill(open(path, "rb"), path)]
    [({'a': [1, 2]}, {b'k': b'1'}), ({'a': ['x']}, None)]
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import BinaryIO

import pyarrow as pa

__all__ = ["SpillWriter", "read_spill"]

_STREAM = b"S"
_END = b"E"


class SpillWriter:
    """Writes record batches into `sink` (a binary file object, closed by `close`)."""

    def __init__(self, sink: BinaryIO):
        self._sink = sink
        self._writer: pa.ipc.RecordBatchStreamWriter | None = None
        self._schema: pa.Schema | None = None
        #: Rows and bytes (of the batches' buffers) written so far.
        self.rows = 0
        self.nbytes = 0

    def write(self, batch: pa.RecordBatch) -> None:
        """Append `batch` (its schema metadata kept)."""
        schema = batch.schema.remove_metadata()
        if self._schema is None or not schema.equals(self._schema, check_metadata=True):
            self._end_stream()
            self._sink.write(_STREAM)
            self._writer = pa.ipc.new_stream(self._sink, schema)
            self._schema = schema
        self._writer.write_batch(batch, custom_metadata=batch.schema.metadata)
        self.rows += batch.num_rows
        self.nbytes += batch.nbytes

    def _end_stream(self) -> None:
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def close(self) -> None:
        """End the file and close the sink."""
        self._end_stream()
        self._sink.write(_END)
        self._sink.close()

    def __enter__(self) -> SpillWriter:
        return self

    def __exit__(self, kind, error, trace) -> None:
        if kind is None:
            self.close()
        else:
            self._sink.close()


def read_spill(source: BinaryIO, name: str) -> Iterator[pa.RecordBatch]:
    """The batches a `SpillWriter` wrote into `source` (named `name` in errors), in order.

    Raises:
        ValueError: the file is not a whole spill file (truncated or overwritten).
    """
    with source:
        while True:
            marker = source.read(1)
            if marker == _END:
                return
            if marker != _STREAM:
                what = "ends early" if not marker else f"holds {marker!r} where a stream starts"
                raise ValueError(f"{name}: the file of kept batches {what}; rerun the job")
            try:
                reader = pa.ipc.open_stream(source)
                while True:
                    try:
                        batch, metadata = reader.read_next_batch_with_custom_metadata()
                    except StopIteration:
                        break
                    yield batch.replace_schema_metadata(metadata) if metadata else batch
            except (pa.ArrowInvalid, OSError) as err:
                raise ValueError(
                    f"{name}: the file of kept batches is damaged ({err}); rerun the job"
                ) from None
