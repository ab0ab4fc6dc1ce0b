"""TFRecord output: one `tf.train.Example` per row, framed as TensorFlow's TFRecordWriter
writes them, uncompressed or GZIP / ZLIB compressed.

Example:
    >>> import io
    >>> raw = io.BytesIO()
    >>> TFRecordOutput().write_file(raw, [("k", pa.array([b"a", b"b"]))], "none"), len(raw.getvalue())
    (2, 34)
    >>> TFRecordOutput().extension("gzip")
    '.tfrecord.gz'
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import BinaryIO

import pyarrow as pa

from beam_tensorize.kernels.features.conversion import FeatureLayout
from beam_tensorize.kernels.output.base import OutputFormat, register_output_format
from beam_tensorize.kernels.tfrecord.example_encoder import encode_examples
from beam_tensorize.kernels.tfrecord.framing import COMPRESSIONS as FRAMING_COMPRESSIONS
from beam_tensorize.kernels.tfrecord.framing import compressed_writer, write_tfrecords

__all__ = ["COMPRESSIONS", "SERIALIZED_COLUMN", "TFRecordFileWriter", "TFRecordOutput"]

#: TFRecord compressions and the file name extension each gives.
COMPRESSIONS = {
    c: ".tfrecord" + {"none": "", "gzip": ".gz", "zlib": ".zlib"}[c] for c in FRAMING_COMPRESSIONS
}
#: The column of serialized `tf.train.Example`s in encoded batches.
SERIALIZED_COLUMN = "serialized"


class TFRecordFileWriter:
    """Frames records into one TFRecord file in `raw` (not closed), compressed as asked. GZIP
    output has no time stamp or name in its header, so the same records give the same bytes;
    a file without records is a valid empty file."""

    def __init__(self, raw: BinaryIO, compression: str):
        self._stack = contextlib.ExitStack()
        self._out = self._stack.enter_context(compressed_writer(raw, compression))
        #: Records written so far.
        self.count = 0

    def write(self, records: pa.Array) -> None:
        write_tfrecords(self._out, records)
        self.count += len(records)

    def close(self) -> int:
        self._stack.close()
        return self.count

    def abort(self) -> None:
        with contextlib.suppress(Exception):
            self._stack.close()


@register_output_format
class TFRecordOutput(OutputFormat):
    """`tf.train.Example`s in TFRecord files (`part-*.tfrecord[.gz|.zlib]`)."""

    name = "tfrecord"
    label = "TFRecord"
    compressions = tuple(COMPRESSIONS)
    columnar = False
    empty_files = True

    def extension(self, compression: str) -> str:
        return COMPRESSIONS[compression]

    def tensor_data(self, features: pa.RecordBatch, layouts: Sequence[FeatureLayout]) -> pa.RecordBatch:
        return pa.RecordBatch.from_arrays([encode_examples(features)], names=[SERIALIZED_COLUMN])

    def open_writer(self, raw: BinaryIO, compression: str) -> TFRecordFileWriter:
        return TFRecordFileWriter(raw, compression)
