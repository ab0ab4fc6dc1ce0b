"""Spark-TFRecord's writing habits on the `tfrecord` source: `.partitionBy(...)` and every save
mode, as its users write them.

Spark hands a Python data source neither `partitionBy` columns (it refuses them: "The provided
partitioning or clustering columns do not match") nor the `errorifexists` / `ignore` modes (it
refuses those, the default included). `install()` (called by `register_data_sources`) wraps
PySpark's `DataFrameWriter` so that `format` / `mode` / `option(s)` / `partitionBy` also note
what they set on the writer, and `save` to the `tfrecord` format starts a fresh writer with the
noted options, the columns as the source's `partition_by` option and the mode as its `saveMode`
option (Spark's `errorifexists` and `ignore` run as `error` and `ignore` under Spark's `append`).
Other formats are written exactly as before: the wrappers only take notes for them.

Example::

    register_data_sources(spark)
    df.write.format("tfrecord").partitionBy("day").save("out")  # out/day=.../part-*.tfrecord
"""

from __future__ import annotations

import functools

from pyspark.sql.readwriter import DataFrameWriter

from beam_tensorize.spark._compat import written_frame

__all__ = ["install"]

_NOTES = "_beam_tensorize_notes"  # on each writer
_INSTALLED = "_beam_tensorize_habits"  # on the class
_MODES = {"errorifexists": "error", "error": "error", "default": "error", "ignore": "ignore"}


def _notes(writer: DataFrameWriter) -> dict:
    notes = getattr(writer, _NOTES, None)
    if notes is None:
        notes = {"format": None, "mode": None, "options": {}, "partition_by": ()}
        setattr(writer, _NOTES, notes)
    return notes


def _noting(method, note):
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        note(_notes(self), *args, **kwargs)
        return method(self, *args, **kwargs)

    return wrapper


def _note_format(notes, source):
    notes["format"] = source


def _note_mode(notes, save_mode):
    if save_mode is not None:
        notes["mode"] = save_mode


def _note_option(notes, key, value):
    notes["options"][key] = value


def _note_options(notes, **options):
    notes["options"].update(options)


def _note_partition_by(notes, *cols):
    if len(cols) == 1 and isinstance(cols[0], (list, tuple)):
        cols = tuple(cols[0])
    notes["partition_by"] = tuple(cols)


def _tfrecord_writer(
    df, notes: dict, mode: str | None, partition_by, options: dict
) -> tuple[DataFrameWriter, str | None]:
    """A writer of `df` to the `tfrecord` source with the noted settings as its options, and
    the source's save mode it was given (lower case; None: the source's default)."""
    from beam_tensorize.spark.tfrecord_source import TFRECORD_FORMAT

    options = {**notes["options"], **options}
    keys = {key.lower(): key for key in options}
    columns = tuple(partition_by or notes["partition_by"])
    if columns:
        given = options.get(keys.get("partition_by", "partition_by"))
        joined = ",".join(columns)
        if given is not None and given.replace(" ", "") != joined:
            raise ValueError(
                f"error: {TFRECORD_FORMAT}: partitionBy({', '.join(map(repr, columns))}) and option "
                f"partition_by={given!r} differ; give one of them"
            )
        options[keys.get("partition_by", "partition_by")] = joined
    mode = (mode or notes["mode"] or "errorifexists").lower()
    spark_mode = "overwrite" if mode == "overwrite" else "append"
    if mode in _MODES and "savemode" not in keys:
        options["saveMode"] = _MODES[mode]
    writer = df.write.format(TFRECORD_FORMAT).mode(spark_mode)
    for key, value in options.items():
        writer = writer.option(key, value)
    save_mode = next((str(v).lower() for k, v in options.items() if k.lower() == "savemode"), None)
    return writer, save_mode


def _saving(save):
    @functools.wraps(save)
    def wrapper(self, path=None, format=None, mode=None, partitionBy=None, **options):
        from beam_tensorize.spark.tfrecord_source import TFRECORD_FORMAT

        notes = _notes(self)
        source = format or notes["format"]
        if source is None or source.lower() != TFRECORD_FORMAT:
            return save(self, path, format, mode, partitionBy, **options)
        if isinstance(partitionBy, str):
            partitionBy = (partitionBy,)
        writer, save_mode = _tfrecord_writer(written_frame(self), notes, mode, partitionBy, options)
        if path is not None and save_mode == "error":
            from beam_tensorize.job.commit import check_target

            check_target(path, "error")  # on the driver: one clear line, not a task's traceback
        return save(writer, path)

    return wrapper


def install() -> None:
    """Wrap `DataFrameWriter` once per process (see the module's text)."""
    if getattr(DataFrameWriter, _INSTALLED, False):
        return
    DataFrameWriter.format = _noting(DataFrameWriter.format, _note_format)
    DataFrameWriter.mode = _noting(DataFrameWriter.mode, _note_mode)
    DataFrameWriter.option = _noting(DataFrameWriter.option, _note_option)
    DataFrameWriter.options = _noting(DataFrameWriter.options, _note_options)
    DataFrameWriter.partitionBy = _noting(DataFrameWriter.partitionBy, _note_partition_by)
    DataFrameWriter.save = _saving(DataFrameWriter.save)
    setattr(DataFrameWriter, _INSTALLED, True)
