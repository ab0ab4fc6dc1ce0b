"""What the job writes: output formats behind one protocol (`OutputFormat`: TFRecord, Parquet,
Avro), the placement of rows into files (`shards`, `split_files`), the encoding of tensors with
dead letters (`dead_letters`) and deduplicated blocks (`dedup`).

    >>> output_format_names()
    ('tfrecord', 'parquet', 'avro')
    >>> get_output_format("tfrecord").extension("gzip"), get_output_format("avro").compressions[0]
    ('.tfrecord.gz', 'snappy')

See `beam_tensorize.kernels.output.base` for the protocol and how to add a format.
"""

from beam_tensorize.kernels.output.avro import AvroOutput
from beam_tensorize.kernels.output.base import (
    FileWriter,
    OutputFormat,
    check_output_format,
    get_output_format,
    output_format_names,
    register_output_format,
)
from beam_tensorize.kernels.output.parquet import ParquetOutput
from beam_tensorize.kernels.output.tfrecord import TFRecordOutput

__all__ = [
    "AvroOutput",
    "FileWriter",
    "OutputFormat",
    "ParquetOutput",
    "TFRecordOutput",
    "check_output_format",
    "get_output_format",
    "output_format_names",
    "register_output_format",
]
