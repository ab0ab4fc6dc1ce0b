"""`Tensorize`: the whole job — record batches in, TFRecords (or Parquet) + metadata out."""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from typing import NamedTuple

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from beam_tensorize.config.model import TensorizeConfig
from beam_tensorize.io.files import create_file, list_files, write_text_atomically
from beam_tensorize.io.parquet import WriteParquet
from beam_tensorize.io.tfrecord import WriteTFRecord
from beam_tensorize.job.commit import FILE_FORMATS, SAVE_MODES, SUCCESS_FILE, check_file_format
from beam_tensorize.kernels.extract import input_columns
from beam_tensorize.kernels.features import layout_for_column, layout_of
from beam_tensorize.transforms.encode import SERIALIZED_COLUMN, EncodeExamples, dead_letter_json
from beam_tensorize.transforms.extract import ExtractFeatures
from beam_tensorize.transforms.feature_lists import (
    FEATURE_LIST_FOLDER,
    ApplyFeatureLists,
    BuildFeatureLists,
    LoadFeatureLists,
    feature_list_groups,
    merge_feature_lists,
)
from beam_tensorize.transforms.hashing import HashFeatures
from beam_tensorize.transforms.metadata import EmitMetadata

__all__ = ["EXECUTION_MODES", "SPLIT_FOLDERS", "Tensorize", "TensorizeOutputs"]

#: Execution mode -> folder the records go to.
SPLIT_FOLDERS = {"train": "trainingData", "validation": "validationData", "test": "testData"}
EXECUTION_MODES = tuple(SPLIT_FOLDERS)
DEAD_LETTER_FOLDER = "deadLetters"
DEAD_LETTER_FILE = "part-00000-of-00001.jsonl"
GOOD, BAD = "good", "bad"


class TensorizeOutputs(NamedTuple):
    """What `Tensorize` returns.

    Attributes:
        result: one dict once everything is committed: `output`, `split`, `files`,
            `numRecords`, `badRecords`, `metadata`.
        dead_letters: one dict per bad record (`source`, `reason`, `tensors`).
    """

    result: beam.PCollection
    dead_letters: beam.PCollection


class Tensorize(beam.PTransform):
    """Turn input record batches into the output layout of DESIGN §4.

    `<output_dir>/trainingData|validationData|testData/part-*-of-*.tfrecord[.gz]` (or
    `part-*-of-*.parquet` with `output_format="parquet"`),
    `<output_dir>/metadata/tensor_metadata.json`, bad records as JSON lines in
    `<output_dir>/deadLetters/<split>/`, feature lists in `<output_dir>/featureList/` (train
    mode), and `<output_dir>/_SUCCESS` written last. Nothing is moved into place if more than
    `max_bad_records_ratio` of the rows are bad.

    Steps: ExtractFeatures (incl. tokenization) -> HashFeatures -> BuildFeatureLists (train) or
    LoadFeatureLists (validation / test: from `<output_dir>/featureList/` of an earlier train
    run) -> ApplyFeatureLists -> EncodeExamples -> WriteTFRecord -> EmitMetadata.

    Args:
        config: the parsed config.
        output_dir: output folder (local, gs://, s3://, ...).
        execution_mode: "train", "validation" or "test" (selects the split folder).
        num_shards: data files to write (per partition when partitioned).
        compression: TFRecord: "none" (default), "gzip" or "zlib"; Parquet: "snappy"
            (default), "gzip", "zstd" or "none".
        save_mode: what to do when the split folder already holds files (see `WriteTFRecord`):
            "error", "overwrite", "overwrite_partitions", "append" or "ignore" (then the job
            writes nothing at all: no records, dead letters, metadata or feature lists).
        partition_by: tensors or extra columns (scalars) that name Hive-style partition folders
            `<split>/<col>=<value>/`, outermost first; they are left out of the records and
            listed in the metadata's `partitionColumns`.
        max_bad_records_ratio: fail the job, committing nothing, when bad rows / all rows
            exceeds this (0 = any bad record fails the job; bad records are still written to
            the dead-letter folder for inspection).
        shared_feature_lists: groups of tensor names that share one feature list, built from
            all their entries.
        external_feature_lists: a folder of ready feature lists (`<dir>/<tensor name>`, one
            entry per line) used instead of building / loading them; a file named after no
            tensor is an error.
        filter_zeros: drop zero values from NTV sparse vectors.
        extra_columns: input columns written as they are beside the tensors (stored by their
            Arrow type, see `beam_tensorize.kernels.features.layout_for_column`).
        output_format: "tfrecord" (`tf.train.Example`s) or "parquet" (the same tensors as
            columns, see `beam_tensorize.kernels.parquet_output`); the metadata records it.

    Example:
        >>> import apache_beam as beam
        >>> from beam_tensorize.config import load_config
        >>> from beam_tensorize.io import ReadAvro
        >>> from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
        >>> config = load_config(SAMPLE_CONFIG)
        >>> with beam.Pipeline() as p:
        ...     out = (p | ReadAvro(SAMPLE_AVRO, columns=Tensorize.input_columns(config))
        ...              | Tensorize(config, "tensorized", save_mode="overwrite"))
    """

    def __init__(
        self,
        config: TensorizeConfig,
        output_dir: str,
        execution_mode: str = "train",
        num_shards: int = 1,
        compression: str | None = None,
        save_mode: str = "error",
        max_bad_records_ratio: float = 0.0,
        shared_feature_lists: Sequence[Sequence[str]] = (),
        external_feature_lists: str | None = None,
        filter_zeros: bool = False,
        extra_columns: Sequence[str] = (),
        partition_by: Sequence[str] = (),
        output_format: str = "tfrecord",
    ):
        super().__init__()
        if execution_mode not in SPLIT_FOLDERS:
            raise ValueError(f"execution_mode {execution_mode!r} is not one of {', '.join(EXECUTION_MODES)}")
        if not isinstance(num_shards, int) or isinstance(num_shards, bool) or num_shards < 1:
            raise ValueError(f"Tensorize: num_shards must be a positive integer, got {num_shards!r}")
        if output_format not in FILE_FORMATS:
            raise ValueError(f"output_format {output_format!r} is not one of {', '.join(FILE_FORMATS)}")
        if compression is None:
            compression = FILE_FORMATS[output_format][0]
        check_file_format(output_format, compression, "Tensorize")
        if save_mode not in SAVE_MODES:
            raise ValueError(f"save_mode {save_mode!r} is not one of {', '.join(SAVE_MODES)}")
        if not 0.0 <= max_bad_records_ratio <= 1.0:
            raise ValueError(f"max_bad_records_ratio must be between 0 and 1, got {max_bad_records_ratio}")
        self._shared = tuple(tuple(group) for group in shared_feature_lists)
        feature_list_groups(config, self._shared)  # validates the groups now
        self._external = external_feature_lists
        self._filter_zeros = filter_zeros
        self._mode = execution_mode
        self._extra = tuple(extra_columns)
        self._config = config
        self._output_dir = output_dir.rstrip("/")
        self._split = SPLIT_FOLDERS[execution_mode]
        self._num_shards = num_shards
        self._compression = compression
        self._output_format = output_format
        self._save_mode = save_mode
        self._max_bad_ratio = max_bad_records_ratio
        self._partition_by = tuple(partition_by)
        _check_partition_columns(config, self._partition_by, self._extra)

    @staticmethod
    def input_columns(config: TensorizeConfig, extra_columns: Sequence[str] = ()) -> list[str]:
        """Top-level input columns the config reads (pass to `ReadAvro(columns=...)`)."""
        return input_columns(config.tensors, extra_columns)

    def expand(self, batches):
        out, split, config = self._output_dir, self._split, self._config
        pipeline = batches.pipeline
        hashed = (
            batches
            | "ExtractFeatures" >> ExtractFeatures(config, extra_columns=self._extra)
            | "HashFeatures" >> HashFeatures(config)
        )
        extra_stored = None
        if self._extra:
            extra_stored = (
                hashed
                | "ExtraColumnTypes" >> beam.Map(extra_layouts, self._extra)
                | "OneLayoutEach" >> beam.CombineGlobally(first_layouts)
            )
        names = config.tensor_names
        if self._mode == "train":
            own = hashed | "BuildFeatureLists" >> BuildFeatureLists(config, self._shared)
        else:
            own = pipeline | "LoadFeatureLists" >> LoadFeatureLists(
                [posixpath.join(out, FEATURE_LIST_FOLDER)], names, required=False, metadata_dir=out
            )
        if self._external:
            external = pipeline | "LoadExternalLists" >> LoadFeatureLists(
                [self._external], names, strict=True, required=True
            )
            lists = own | "MergeFeatureLists" >> beam.Map(
                merge_feature_lists, beam.pvalue.AsSingleton(external), config, self._shared
            )
        else:
            lists = own
        encoded = (
            hashed
            | "ApplyFeatureLists" >> ApplyFeatureLists(config, lists, self._filter_zeros)
            | "EncodeExamples"
            >> EncodeExamples(config, keep_columns=self._partition_by, output_format=self._output_format)
        )
        split_dir = posixpath.join(out, split)
        ignoring = (
            pipeline
            | "SplitFolder" >> beam.Create([split_dir])
            | "IgnoreExisting?" >> beam.Map(ignoring_existing, self._save_mode)
        )
        # One place sees every batch's row count and every bad record: it writes the dead
        # letters (so they are there to inspect even when the check fails the job), then
        # checks the bad-record ratio.
        good_counts = encoded.examples | "CountGood" >> beam.Map(lambda b: (0, (GOOD, b.num_rows)))
        bad_lines = encoded.dead_letters | "DeadLetterJson" >> beam.Map(
            lambda d: (0, (BAD, dead_letter_json(d)))
        )
        nothing = pipeline | "NoRecordsYet" >> beam.Create([(0, (GOOD, 0))])  # also for empty input
        counts = (
            (good_counts, bad_lines, nothing)
            | "AllCounts" >> beam.Flatten()
            | "GatherCounts" >> beam.GroupByKey()
            | "CheckBadRecords"
            >> beam.Map(
                check_bad_records,
                posixpath.join(out, DEAD_LETTER_FOLDER, split),
                self._max_bad_ratio,
                beam.pvalue.AsSingleton(ignoring),
            )
        )
        gate = counts | "MarkIncomplete" >> beam.Map(
            remove_success_marker, out, beam.pvalue.AsSingleton(ignoring)
        )
        if self._output_format == "parquet":
            writer = "WriteParquet" >> WriteParquet(
                split_dir,
                num_shards=self._num_shards,
                compression=self._compression,
                save_mode=self._save_mode,
                partition_by=self._partition_by,
                write_success_file=False,
                commit_gate=gate,
            )
        else:
            writer = "WriteTFRecord" >> WriteTFRecord(
                split_dir,
                num_shards=self._num_shards,
                compression=self._compression,
                save_mode=self._save_mode,
                record_type="ByteArray",
                record_column=SERIALIZED_COLUMN,
                partition_by=self._partition_by,
                write_success_file=False,
                commit_gate=gate,
            )
        written = encoded.examples | writer
        skipped = written | "Skipped" >> beam.Filter(lambda w: w["skipped"])
        written = written | "Committed" >> beam.Filter(lambda w: not w["skipped"])
        splits = written | "DescribeSplit" >> beam.Map(
            describe_split, split, beam.pvalue.AsSingleton(counts), self._partition_by, self._output_format
        )
        metadata = splits | "EmitMetadata" >> EmitMetadata(
            config,
            out,
            self._compression,
            feature_lists=lists,
            write_feature_lists=self._mode == "train",
            extra_columns=extra_stored,
        )
        done = metadata | "WriteSuccess" >> beam.Map(
            write_success, out, split, beam.pvalue.AsSingleton(splits)
        )
        untouched = skipped | "NothingWritten" >> beam.Map(
            lambda _: {"output": out, "split": split, "skipped": True, "files": [], "numRecords": 0}
        )
        result = (done, untouched) | "Result" >> beam.Flatten()
        return TensorizeOutputs(result=result, dead_letters=encoded.dead_letters)


# The steps below are shared with the Spark path (`beam_tensorize.spark`), which runs them in
# the same order on its driver, so both give the same files.


def extra_layouts(batch, names: tuple[str, ...]) -> tuple:
    """How the extra columns of a batch are stored (`layout_for_column` of each)."""
    return tuple(layout_for_column(n, batch.schema.field(n).type) for n in names)


def first_layouts(candidates) -> tuple:
    """The extra columns' layouts, the same on every runner whatever batch came first."""
    found = [c for c in candidates if c]
    return min(found, key=repr) if found else ()


def _check_partition_columns(config: TensorizeConfig, names: tuple[str, ...], extra: tuple[str, ...]) -> None:
    """Partition columns must be scalar tensors or extra columns (checked when built)."""
    tensors = {t.name: t for t in config.tensors}
    for name in names:
        if name in tensors:
            layout = layout_of(tensors[name])
            if layout.kind != "fixed_len" or layout.shape != ():
                raise ValueError(
                    f"partition_by: tensor {name!r} is not a scalar (shape {list(layout.shape)}, "
                    f"{layout.kind}); only one value per record can name a folder"
                )
        elif name not in extra:
            raise ValueError(
                f"partition_by: {name!r} is neither a tensor ({', '.join(tensors)}) nor an extra column"
            )
    if len(set(names)) != len(names):
        raise ValueError(f"partition_by: {list(names)} names a column twice")


def ignoring_existing(split_dir: str, save_mode: str) -> bool:
    """Save mode `ignore` and the split folder holds files: the job writes nothing."""
    return save_mode == "ignore" and bool(list_files(posixpath.join(split_dir, "**")))


def check_bad_records(grouped, folder: str, max_ratio: float, ignoring: bool = False) -> dict:
    """Write every bad record as sorted JSON lines (replacing an older file), then fail the job
    if too many rows were bad; else the counts. (Nothing is written when ignoring.)"""
    good, lines = 0, []
    for kind, value in grouped[1]:
        if kind == GOOD:
            good += value
        else:
            lines.append(value)
    lines.sort()
    if ignoring:
        return {"numRecords": good, "badRecords": len(lines)}
    write_text_atomically(posixpath.join(folder, DEAD_LETTER_FILE), "".join(f"{line}\n" for line in lines))
    bad, total = len(lines), good + len(lines)
    if bad and bad / total > max_ratio:
        raise ValueError(
            f"{bad} of {total} records could not be converted ({bad / total:.2%} > the allowed "
            f"{max_ratio:.2%}); nothing was committed. See the reasons in {folder}/"
        )
    return {"numRecords": good, "badRecords": bad}


def remove_success_marker(counts: dict, out: str, ignoring: bool = False) -> dict:
    """Delete `<out>/_SUCCESS` before the commit (readers see the output as incomplete)."""
    marker = posixpath.join(out, SUCCESS_FILE)
    if not ignoring and FileSystems.exists(marker):
        FileSystems.delete([marker])
    return counts


def describe_split(
    written: dict,
    split: str,
    counts: dict,
    partition_by: tuple[str, ...] = (),
    output_format: str = "tfrecord",
) -> dict:
    """The metadata's `data` entry of the committed split."""
    info = {
        "format": output_format,
        "files": written["files"],
        "numRecords": written["numRecords"],
        "badRecords": counts["badRecords"],
    }
    if partition_by:  # the files sit in <col>=<value>/ folders; the values are not in the records
        info["partitionColumns"] = list(partition_by)
    return {split: info}


def write_success(metadata_path: str, out: str, split: str, splits: dict) -> dict:
    """Write `<out>/_SUCCESS` last; returns the job's summary dict."""
    with create_file(posixpath.join(out, SUCCESS_FILE)):
        pass
    info = splits[split]
    return {
        "output": out,
        "split": split,
        "files": [posixpath.join(out, split, name) for name in info["files"]],
        "numRecords": info["numRecords"],
        "badRecords": info["badRecords"],
        "metadata": metadata_path,
    }
