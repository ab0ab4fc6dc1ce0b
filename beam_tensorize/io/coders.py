"""`RecordBatchCoder`: how Beam encodes Arrow record batches between steps, registered for
`pa.RecordBatch` when `beam_tensorize.io` is imported.

Without a coder of their own, record batches are pickled, and Beam pickles a sample of each
step's outputs only to estimate their size (the first ten of every output, then ~10/N): on the
sample job that is most batches. Here a batch travels as an Arrow IPC stream (its schema
metadata, which holds its source tag, kept) and its size is `nbytes`, with no copy.
(TensorFlow Data Validation registers an IPC coder of its own for `pa.RecordBatch` when it is
imported; the one imported last is used, and either spares the pickles.)

Example:
    >>> import pyarrow as pa
    >>> batch = pa.RecordBatch.from_pydict({"x": [1, 2]}).replace_schema_metadata({"k": "v"})
    >>> coder = RecordBatchCoder()
    >>> back = coder.decode(coder.encode(batch))
    >>> back.equals(batch), back.schema.metadata, coder.estimate_size(batch)
    (True, {b'k': b'v'}, 16)
"""

from __future__ import annotations

import apache_beam as beam
import pyarrow as pa

__all__ = ["RecordBatchCoder"]


class RecordBatchCoder(beam.coders.Coder):
    """Arrow record batches as IPC streams; `estimate_size` is the batch's `nbytes`."""

    def encode(self, value: pa.RecordBatch) -> bytes:
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, value.schema) as writer:
            writer.write_batch(value)
        return sink.getvalue().to_pybytes()

    def decode(self, encoded: bytes) -> pa.RecordBatch:
        with pa.ipc.open_stream(pa.py_buffer(encoded)) as reader:
            return reader.read_next_batch()

    def estimate_size(self, value: pa.RecordBatch) -> int:
        return value.nbytes

    def is_deterministic(self) -> bool:
        return False

    def to_type_hint(self):
        return pa.RecordBatch

    def __eq__(self, other) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))


beam.coders.registry.register_coder(pa.RecordBatch, RecordBatchCoder)
