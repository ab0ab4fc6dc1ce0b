"""`Tensorize`: the whole job — record batches in, TFRecords (or Parquet) + metadata out."""

from __future__ import annotations

import posixpath
import uuid
from collections.abc import Sequence
from typing import NamedTuple

import apache_beam as beam
import pyarrow as pa
from apache_beam.transforms.display import DisplayDataItem

from beam_tensorize import metrics
from beam_tensorize.config.model import TensorizeConfig
from beam_tensorize.io.sharded import WriteShardedFiles
from beam_tensorize.io.table import BATCHES, ReadTable
from beam_tensorize.job.feature_lists import FEATURE_LIST_FOLDER, merge_feature_lists
from beam_tensorize.job.finish import (
    appending_to,
    commit_split,
    extra_layouts,
    first_layouts,
)
from beam_tensorize.job.report import write_report
from beam_tensorize.job.spec import TensorizeSpec
from beam_tensorize.job.transaction import kept_folder, staging_folder
from beam_tensorize.kernels.features.extract import input_columns
from beam_tensorize.kernels.output import get_output_format
from beam_tensorize.kernels.output.shards import ROWS, shuffle_rows
from beam_tensorize.kernels.partitions import with_partition_ids
from beam_tensorize.kernels.serving.settings import input_schema_of, one_input_schema
from beam_tensorize.transforms.commit import CommitOutput, largest_integers
from beam_tensorize.transforms.dedup import DeduplicateFeatures
from beam_tensorize.transforms.encode import DEAD_LETTERS, SERIALIZED_COLUMN, EncodeExamples
from beam_tensorize.transforms.extract import ExtractFeatures
from beam_tensorize.transforms.feature_lists import (
    ApplyFeatureLists,
    BuildFeatureLists,
    ExtractListTensors,
    LoadFeatureLists,
)
from beam_tensorize.transforms.hashing import HashFeatures
from beam_tensorize.transforms.keep import KeepBatches
from beam_tensorize.transforms.metadata import EmitMetadata
from beam_tensorize.transforms.report import ComputeStatistics

__all__ = ["Tensorize", "TensorizeOutputs"]


class TensorizeOutputs(NamedTuple):
    """What `Tensorize` returns.

    Attributes:
        result: one dict once everything is committed: `output`, `split`, `files`,
            `numRecords`, `badRecords`, `metadata` (and `offShape` when rows were kept off
            their fixed shape).
        dead_letters: one dict per bad record: records that did not convert (`source`,
            `reason`, `tensors`) and input records that did not decode (`source`, `offset`,
            `record`, `reason`, `data`).
    """

    result: beam.PCollection
    dead_letters: beam.PCollection


class Tensorize(beam.PTransform):
    """Turn input record batches into the output layout of the README ("Output layout").

    `<output_dir>/trainingData|validationData|testData/part-*-of-*.tfrecord[.gz|.zlib]` (or
    `part-*-of-*.parquet` / `.avro` with `output_format="parquet"` / `"avro"`),
    `<output_dir>/metadata/tensor_metadata.json` (and `metadata/schema.pbtxt` for TFRecord
    output), bad records as JSON lines in `<output_dir>/deadLetters/<split>/`, feature lists
    in `<output_dir>/featureList/` (train mode), the run report in `<output_dir>/report/` when
    asked for, and `<output_dir>/_SUCCESS` written last, all in one commit. Nothing is moved
    into place if more than `max_bad_records_ratio` of the rows are bad.

    Steps: ExtractFeatures (incl. tokenization) -> HashFeatures -> BuildFeatureLists (train) or
    LoadFeatureLists (validation / test: from `<output_dir>/featureList/` of an earlier train
    run) -> ApplyFeatureLists -> EncodeExamples -> WriteTFRecord (or WriteParquet /
    WriteAvro) -> CommitOutput.

    Apply it to the pipeline with the spec's `inputs` (`p | Tensorize(config, out,
    inputs=["data/*.avro"])`) and it reads them itself, in bounded memory; the records are
    written by the step that encodes them, one file per input split. Train mode needs the
    feature lists before it converts a row, and the runner never holds the input meanwhile:
    with an output on a local disk (`input_passes` 1) it reads the input once, counts the
    lists from the extracted batches and keeps those in files under the output's
    `_temporary/<run>/kept/` until the lists exist; on object stores (`input_passes` 2) it
    reads the input twice, first only the columns the lists are counted from. Applied to a
    `PCollection` of record batches, train mode keeps them the same way, or, with
    `input_passes=2`, the runner keeps them all until the lists are built.

    Args:
        config: the parsed config (or a config file's path), or a `TensorizeSpec` holding every
            setting (then give nothing else).
        output_dir: output folder (local, gs://, s3://, ...).
        **settings: the other fields of `beam_tensorize.job.spec.TensorizeSpec`, validated
            there:

        inputs, input_format, batch_rows, split_bytes: what to read when applied to the
            pipeline (see `ReadTable`).
        input_passes: train mode: 1 (read once, keep the extracted batches in files), 2 (read
            twice) or None (default: 1 when the output is on a local disk).
        execution_mode: "train", "validation" or "test" (selects the split folder).
        num_shards: None (default): one data file per input split, written with no shuffle
            (see `WriteTFRecord`); N: exactly N files (per partition when partitioned).
        max_records_per_file: with `num_shards` None, start another file after this many.
        compression: TFRecord: "none" (default), "gzip" or "zlib"; Parquet: "snappy"
            (default), "gzip", "zstd" or "none"; Avro: "snappy" (default), "deflate", "zstd"
            or "none".
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
        discard_unknown_entries: leave entries not in their feature list out of lists and
            vectors (Avro2TF's --discard-unknown-entries; scalars keep the unknown id).
        extra_columns: input columns written as they are beside the tensors (stored by their
            Arrow type, see `beam_tensorize.kernels.features.conversion.layout_for_column`).
        output_format: "tfrecord" (`tf.train.Example`s), "parquet" (the same tensors as
            columns, see `beam_tensorize.kernels.output.parquet`) or "avro" (the tensors as
            record fields, see `beam_tensorize.kernels.output.avro`); the metadata records it.
        report, drift_threshold: the run report, `<output_dir>/report/<split>.json|html` and
            `<split>.stats.pb` ("none" by default here; see docs/report.md): statistics of the
            extracted batches (`beam_tensorize.report.ComputeStatistics`), staged before the
            commit, which moves them into place with the data, the metadata and `_SUCCESS`,
            with the drift against the train report of the same output.

    Example:
        >>> import apache_beam as beam
        >>> from beam_tensorize.config import load_config
        >>> from beam_tensorize.io import ReadAvro
        >>> from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
        >>> config = load_config(SAMPLE_CONFIG)
        >>> with beam.Pipeline() as p:
        ...     out = p | Tensorize(config, "tensorized", inputs=[SAMPLE_AVRO], save_mode="overwrite")
        >>> with beam.Pipeline() as p:  # batches from a reader of your own
        ...     out = (p | ReadAvro(SAMPLE_AVRO, columns=Tensorize.input_columns(config))
        ...              | Tensorize(config, "tensorized", save_mode="overwrite"))
    """

    def __init__(
        self, config: TensorizeConfig | TensorizeSpec | str, output_dir: str | None = None, **settings
    ):
        super().__init__()
        spec = TensorizeSpec.of(config, output_dir, **settings)
        #: The job's settings, validated.
        self.spec = spec

    def _read_inputs(self, pbegin):
        """The spec's inputs read for the job, and (train mode reading twice) read again, only
        the columns feature lists are counted from, into those tensors: the counting pass; the
        runner never holds the input between the two."""
        spec = self.spec
        if not spec.inputs:
            raise ValueError(
                "Tensorize applied to a pipeline needs the spec's inputs (or apply it to a "
                "PCollection of record batches)"
            )

        def read(columns: list[str], reader=ReadTable):
            return reader(
                list(spec.inputs),
                spec.input_format,
                columns,
                spec.batch_rows,
                spec.split_bytes,
                dead_letters=True,
            )

        read_input = pbegin | "ReadInput" >> read(spec.input_columns)
        batches, unreadable = read_input[BATCHES], read_input[DEAD_LETTERS]
        if spec.input_reads == 1 or not spec.feature_list_keys:
            return batches, None, unreadable
        # The records the main read gives as dead letters are counted there; here they are
        # only left out.
        counted = (
            pbegin
            | "ReadForFeatureLists" >> read(ExtractListTensors.list_columns(spec.config), _CountingRead)
        )[BATCHES] | "ExtractListTensors" >> ExtractListTensors(spec.config)
        return batches, counted, unreadable

    def _lists_and_metadata_only(self, pipeline, batches, hashed, lists, extra_stored) -> TensorizeOutputs:
        """Avro2TF's --skip-conversion: the feature lists and the metadata, no records."""
        spec = self.spec
        input_schema = (  # the input rows' schema, recorded for serving (`beam_tensorize.serving`)
            batches
            | "InputSchemas" >> beam.Map(input_schema_of)
            | "OneInputSchema" >> beam.CombineGlobally(one_input_schema)
        )
        emit = EmitMetadata.of_spec(
            spec,
            feature_lists=lists,
            extra_columns=extra_stored,
            maxima=largest_integers(hashed, spec),
            input_schema=input_schema,
        )
        result = emit.metadata_inputs(pipeline) | "Commit" >> beam.Map(
            lambda metadata_inputs: commit_split(spec, uuid.uuid4().hex, None, None, metadata_inputs)
        )
        nothing = pipeline | "NoDeadLetters" >> beam.Create([])
        return TensorizeOutputs(result=result, dead_letters=nothing)

    def display_data(self) -> dict:
        spec = self.spec
        return {
            "output": DisplayDataItem(spec.output, label="Output folder"),
            "execution_mode": DisplayDataItem(spec.execution_mode, label="Execution mode"),
            "output_format": DisplayDataItem(spec.output_format, label="Output format"),
            "tensors": DisplayDataItem(", ".join(spec.config.tensor_names), label="Tensors"),
            "num_shards": DisplayDataItem(spec.num_shards or "one per input split", label="Files per folder"),
            "save_mode": DisplayDataItem(spec.save_mode, label="Save mode"),
            "input_passes": DisplayDataItem(spec.input_reads, label="Input reads"),
        }

    @staticmethod
    def input_columns(config: TensorizeConfig, extra_columns: Sequence[str] = ()) -> list[str]:
        """Top-level input columns the config reads (pass to `ReadAvro(columns=...)`)."""
        return input_columns(config.tensors, extra_columns)

    def expand(self, pvalue):
        """Read (when applied to the pipeline), extract and hash, feature lists, encode and
        write, stage the report, commit: each a method below."""
        spec = self.spec
        pipeline = pvalue.pipeline
        run = uuid.uuid4().hex  # names the run's temporary folders (see CommitOutput)
        counted = None  # the batches feature lists are counted from, when not the hashed ones
        unreadable = None  # the input records that did not decode
        if isinstance(pvalue, beam.pvalue.PBegin):
            batches, counted, unreadable = self._read_inputs(pvalue)
        else:
            batches = pvalue
        extracted, hashed, hashes, counted = self._extract_and_hash(batches, counted, run)
        extra_stored = None
        if spec.extra_names:
            extra_stored = (
                hashed
                | "ExtraColumnTypes" >> beam.Map(extra_layouts, spec.extra_names)
                | "OneLayoutEach" >> beam.CombineGlobally(first_layouts)
            )
        lists, lists_from_output = self._feature_lists(pipeline, hashed if counted is None else counted)
        if spec.skip_conversion:
            return self._lists_and_metadata_only(pipeline, batches, hashed, lists, extra_stored)
        encoded = (
            hashed
            | "ApplyFeatureLists"
            >> ApplyFeatureLists(spec.config, lists, spec.filter_zeros, spec.discard_unknown_entries)
            | "EncodeExamples"
            >> EncodeExamples(
                spec.config,
                keep_columns=spec.folder_columns,
                output_format=spec.output_format,
                check_shapes=spec.check_shapes,
            )
        )
        dead_letters = encoded.dead_letters
        if unreadable is not None:
            dead_letters = (unreadable, dead_letters) | "AllDeadLetters" >> beam.Flatten()
        pending = self._write(encoded.examples)
        after = ()
        if spec.report != "none":
            after = (self._stage_report(extracted, lists, dead_letters, hashes, run),)
        result = pending | "CommitOutput" >> CommitOutput(
            spec,
            feature_lists=lists,
            dead_letters=dead_letters,
            examples=encoded.examples,
            input_batches=batches,
            tensor_batches=hashed,
            extra_layouts=extra_stored,
            lists_from_output=lists_from_output,
            run=run,
            after=after,
        )
        return TensorizeOutputs(result=result, dead_letters=dead_letters)

    def _extract_and_hash(self, batches, counted, run: str):
        """The extracted batches, the hashed ones (with the partition ids Avro2TF's
        partitioning adds), with a report the distinct hashes it takes (else None), and the
        batches the feature lists are counted from (None: the hashed ones).

        Train mode reading its input once counts the lists from the extracted batches and
        keeps them in files (`KeepBatches`): every step after the extraction runs in the stage
        that waits for the lists (the statistics too: they count the entries not in them), on
        the batches read back."""
        spec = self.spec
        extracted = batches | "ExtractFeatures" >> ExtractFeatures(
            spec.config, extra_columns=spec.extra_columns
        )
        if spec.execution_mode == "train" and not spec.feature_list_keys:  # no tensor gets a list
            empty = beam.Create([]).with_output_types(pa.RecordBatch)
            counted = batches.pipeline | "NothingToCount" >> empty
        elif spec.keeps_batches:  # (then nothing was read for counting)
            counted = extracted  # hashing does not change the tensors that get lists
            extracted = extracted | "KeepForFeatureLists" >> KeepBatches(kept_folder(spec.output, run))
        # With a report, its statistics take what the hashing step hashed (each value hashed once).
        hashed = extracted | "HashFeatures" >> HashFeatures(
            spec.config, distinct_hashes=spec.report != "none"
        )
        hashes = None
        if spec.report != "none":
            hashed, hashes = hashed
        if spec.partition_field_name:
            hashed = hashed | "PartitionIds" >> beam.Map(
                with_partition_ids, spec.partition_field_name, spec.num_partitions
            ).with_output_types(pa.RecordBatch)
        return extracted, hashed, hashes, counted

    def _feature_lists(self, pipeline, counted):
        """The run's feature lists (one dict), and whether they are the output's own (a
        PCollection of one bool, or a bool): then they must still be there at the commit.

        Train mode builds them from `counted` (appending to train data: keeps the lists of the
        data appended to, so that old and new records mean the same ids); validation and test
        load the train run's; external lists are merged in."""
        spec = self.spec
        out, config, names = spec.output, spec.config, spec.config.tensor_names
        lists_from_output = False
        if spec.execution_mode == "train":
            own = counted | "BuildFeatureLists" >> BuildFeatureLists(
                config, spec.shared_feature_lists, term_only=spec.term_only_feature_lists
            )
            if spec.save_mode == "append":
                # the split's metadata entry before this run (its files stay listed)
                previous = (
                    pipeline
                    | "OutputFolder" >> beam.Create([out])
                    | "AppendingTo?" >> beam.Map(appending_to, spec.split, spec.save_mode)
                )
                earlier = pipeline | "LoadEarlierLists" >> LoadFeatureLists(
                    [posixpath.join(out, FEATURE_LIST_FOLDER)], names, required=False, metadata_dir=out
                )
                own = own | "KeepEarlierLists" >> beam.Map(
                    _earlier_if_appending, beam.pvalue.AsSingleton(earlier), beam.pvalue.AsSingleton(previous)
                )
                lists_from_output = previous | "EarlierLists?" >> beam.Map(lambda entry: entry is not None)
        else:
            lists_from_output = True
            own = pipeline | "LoadFeatureLists" >> LoadFeatureLists(
                [posixpath.join(out, FEATURE_LIST_FOLDER)], names, required=False, metadata_dir=out
            )
        if not spec.external_feature_lists:
            return own, lists_from_output
        external = pipeline | "LoadExternalLists" >> LoadFeatureLists(
            [spec.external_feature_lists], names, strict=True, required=True
        )
        lists = own | "MergeFeatureLists" >> beam.Map(
            merge_feature_lists, beam.pvalue.AsSingleton(external), config, spec.shared_feature_lists
        )
        return lists, lists_from_output

    def _write(self, examples):
        """The encoded rows (shuffled, deduplicated when asked) written into the split's
        folder, uncommitted: the written files' entries."""
        spec = self.spec
        split_dir = posixpath.join(spec.output, spec.split)
        writer_options = dict(
            num_shards=spec.num_shards,
            max_records_per_file=spec.max_records_per_file,
            compression=spec.compression,
            save_mode=spec.save_mode,
            partition_by=spec.folder_columns,
        )
        fmt = get_output_format(spec.output_format)
        writer = (
            f"Write{fmt.label or fmt.name}"
            >> WriteShardedFiles(
                split_dir,
                fmt.name,
                record_type=ROWS if fmt.columnar else "ByteArray",
                record_column=None if fmt.columnar else SERIALIZED_COLUMN,
                write_success_file=True,
                commit_gate=None,
                **writer_options,
            ).without_commit()
        )
        if spec.shuffle:
            examples = examples | "ShuffleRows" >> beam.Map(
                shuffle_rows, spec.shuffle_seed
            ).with_output_types(pa.RecordBatch)
        if spec.dedup_block_size:
            examples = examples | "DeduplicateUsers" >> DeduplicateFeatures(
                spec.dedup_block_size, spec.dedup_user_cols
            )
        return examples | writer

    def _stage_report(self, extracted, lists, dead_letters, hashes, run):
        """The statistics of the extracted batches (before hashing and feature lists) written
        as the report into the run's staging folder, which the commit moves into place with
        the rest: a side input the commit waits for."""
        spec = self.spec
        statistics = extracted | "ComputeStatistics" >> ComputeStatistics(
            spec.config, lists, dead_letters, hashes=hashes
        )
        written_report = statistics | "WriteReport" >> beam.Map(
            write_report,
            spec.output,
            spec.split,
            spec.execution_mode,
            spec.report,
            spec.drift_threshold,
            staging_folder(spec.output, run),
        )
        return beam.pvalue.AsList(written_report)


class _CountingRead(ReadTable):
    """The counting pass's reader: its rows are counted apart from the rows read for output."""

    _rows_metric = metrics.ROWS_COUNTED


def _earlier_if_appending(built: dict, earlier: dict, previous: dict | None) -> dict:
    """The lists of the train data being appended to, when there is some; else those built."""
    return earlier if previous is not None else built
