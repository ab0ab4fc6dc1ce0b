"""Input formats behind one protocol (`InputFormat`): Avro, Parquet, ORC and TFRecord.

    >>> format_names()
    ('avro', 'orc', 'parquet', 'tfrecord')
    >>> detect_format(b"PAR1\\x15\\x04", "x.parquet").name
    'parquet'

See `beam_tensorize.kernels.formats.base` for the protocol and how to add a format.
"""

from beam_tensorize.kernels.formats.avro import AvroFormat
from beam_tensorize.kernels.formats.base import (
    AUTO,
    DEFAULT_BATCH_ROWS,
    DEFAULT_SPLIT_BYTES,
    HEAD_BYTES,
    InputFormat,
    Split,
    check_format,
    conform_batch,
    detect_format,
    format_names,
    get_format,
    plan_file,
    project_schema,
    register_format,
    resolve_format,
)
from beam_tensorize.kernels.formats.orc import ORCFormat
from beam_tensorize.kernels.formats.parquet import ParquetFormat
from beam_tensorize.kernels.formats.tfrecord import TFRecordFormat

__all__ = [
    "AUTO",
    "DEFAULT_BATCH_ROWS",
    "DEFAULT_SPLIT_BYTES",
    "HEAD_BYTES",
    "AvroFormat",
    "InputFormat",
    "ORCFormat",
    "ParquetFormat",
    "Split",
    "TFRecordFormat",
    "check_format",
    "conform_batch",
    "detect_format",
    "format_names",
    "get_format",
    "plan_file",
    "project_schema",
    "register_format",
    "resolve_format",
]
