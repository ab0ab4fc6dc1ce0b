"""TFRecord kernels: framing and compression (`framing`), Example and SequenceExample encoding
(`example_encoder`, `sequence_example`, over the byte matrices of `wire`), the optional C
extension both use (`native`), parsing records into raw columns (`raw_decoding`), decoding
with a schema and schema inference (`decoding`), and the reading of one file (`files`). No
TensorFlow, no Beam.

The framing functions are re-exported here:

    >>> from beam_tensorize.kernels.tfrecord import frame_records, iter_tfrecords
    >>> import io
    >>> list(iter_tfrecords(io.BytesIO(frame_records([b"a", b"bc"]))))
    [b'a', b'bc']
"""

from beam_tensorize.kernels.tfrecord.framing import (
    COMPRESSIONS,
    compressed_writer,
    decompressed_reader,
    detect_compression,
    frame_records,
    iter_tfrecords,
    masked_crc32c,
    write_tfrecords,
)

__all__ = [
    "COMPRESSIONS",
    "compressed_writer",
    "decompressed_reader",
    "detect_compression",
    "frame_records",
    "iter_tfrecords",
    "masked_crc32c",
    "write_tfrecords",
]
