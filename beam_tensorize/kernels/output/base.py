"""The output-format protocol: how a batch of tensors becomes the rows of a file, and how those
rows are written.

Every output format (TFRecord, Parquet, Avro, or one of your own) is one subclass of
`OutputFormat` registered with `register_output_format`. The writers (`Tensorize`, the Beam
sinks `WriteTFRecord` / `WriteParquet` / `WriteAvro`, `tensorize_spark`, the dead-letter
encoder and the commit) only ask a format for its `compressions`, its file `extension`, the
columns a batch of tensors is written as (`tensor_data`) and a `FileWriter` (`open_writer`),
so a format added here is written by all of them, with partitioning, sharding, save modes and
the atomic commit.

A format is either *record* based (`columnar = False`: each row is one serialized record, a
binary array is handed to its writer, as TFRecord files of `tf.train.Example`s) or *columnar*
(`columnar = True`: record batches of tensor columns, as Parquet and Avro).

Example, a toy format of text files holding one JSON object per row::

    @register_output_format
    class JsonLines(OutputFormat):
        name, compressions = "jsonl", ("none",)

        def open_writer(self, raw, compression):
            return JsonLinesWriter(raw)  # write(batch), close() -> rows, abort()

After that, `TensorizeSpec(config, "out", output_format="jsonl")` writes
`out/trainingData/part-00000-of-00001.jsonl`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import BinaryIO, ClassVar, Protocol

import pyarrow as pa

from beam_tensorize.kernels.features.conversion import FeatureLayout

__all__ = [
    "FileWriter",
    "OutputFormat",
    "check_output_format",
    "get_output_format",
    "output_format_names",
    "register_output_format",
]


class FileWriter(Protocol):
    """One output file being written into a binary file object (which the caller closes)."""

    def write(self, rows: pa.Array | pa.RecordBatch) -> None:
        """Append rows: serialized records (a binary array) or, for a columnar format, a
        record batch."""

    def close(self) -> int:
        """Finish the file; returns the number of rows written."""

    def abort(self) -> None:
        """Give up the file after an error (the caller removes it)."""


class OutputFormat:
    """One output file format. Subclasses set `name` (the `output_format=` value) and
    `compressions` (the default first) and implement `open_writer`."""

    #: The `output_format` value.
    name: ClassVar[str] = ""
    #: The format's name in step names and messages (default: `name`).
    label: ClassVar[str] = ""
    #: Accepted compressions; the first is the default.
    compressions: ClassVar[tuple[str, ...]] = ()
    #: True: files hold rows of tensor columns (writers get record batches); False: one
    #: serialized record per row (`tensor_data` gives one binary column named `serialized`,
    #: writers get a binary array).
    columnar: ClassVar[bool] = True
    #: True: an unpartitioned output without records still gets its (empty) files, so that a
    #: reader of `part-*` finds a whole output.
    empty_files: ClassVar[bool] = False

    def extension(self, compression: str) -> str:
        """The file name extension of files written with `compression` (default `.<name>`:
        columnar formats compress inside the file)."""
        return f".{self.name}"

    def tensor_data(self, features: pa.RecordBatch, layouts: Sequence[FeatureLayout]) -> pa.RecordBatch:
        """The columns a batch of tensors is written as, from its Example feature columns
        (`beam_tensorize.kernels.features.conversion.to_feature_columns`): by default one
        column per tensor, two per sparse tensor (`beam_tensorize.kernels.output.parquet`)."""
        from beam_tensorize.kernels.output.parquet import tensor_columns

        return tensor_columns(features, layouts)

    def open_writer(self, raw: BinaryIO, compression: str) -> FileWriter:
        """A writer of one file into `raw` (not closed by the writer)."""
        raise NotImplementedError

    def write_file(self, raw: BinaryIO, chunks, compression: str) -> int:
        """Write `(key, rows)` chunks, in the given order, as one file into `raw` (not closed);
        returns the number of rows written."""
        writer = self.open_writer(raw, compression)
        try:
            for _, rows in chunks:
                writer.write(rows)
        except BaseException:
            writer.abort()
            raise
        return writer.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"

    def __eq__(self, other) -> bool:
        return type(self) is type(other)

    def __hash__(self) -> int:
        return hash(type(self))


_FORMATS: dict[str, type[OutputFormat]] = {}


def register_output_format(cls: type[OutputFormat]) -> type[OutputFormat]:
    """Class decorator: make `cls` known to `get_output_format` and `output_format_names`."""
    if not cls.name or not cls.compressions:
        raise ValueError(f"{cls.__name__} needs a `name` and `compressions`")
    _FORMATS[cls.name] = cls
    return cls


#: The built-in formats, in the order they are listed (the default first).
_BUILT_IN = ("tfrecord", "parquet", "avro")


def output_format_names() -> tuple[str, ...]:
    """The registered output format names: the built-in ones (TFRecord, the default, first),
    then the others in the order they were registered."""
    rank = {name: i for i, name in enumerate(_BUILT_IN)}
    return tuple(sorted(_FORMATS, key=lambda name: rank.get(name, len(rank))))


def get_output_format(name: str | OutputFormat) -> OutputFormat:
    """An output format by name, or `name` itself when it is already one.

    Raises:
        ValueError: no format has that name (the message lists them).
    """
    if isinstance(name, OutputFormat):
        return name
    if name not in _FORMATS:
        raise ValueError(f"output format {name!r} is not one of {', '.join(output_format_names())}")
    return _FORMATS[name]()


def check_output_format(name: str, compression: str, where: str) -> OutputFormat:
    """The format called `name`; raise ValueError, naming `where`, for an unknown format or a
    compression it lacks."""
    if name not in _FORMATS:
        raise ValueError(f"{where}: output format {name!r} is not one of {', '.join(output_format_names())}")
    fmt = _FORMATS[name]()
    if compression not in fmt.compressions:
        raise ValueError(
            f"{where}: compression {compression!r} is not one of {', '.join(fmt.compressions)} "
            f"(for {name} output)"
        )
    return fmt
