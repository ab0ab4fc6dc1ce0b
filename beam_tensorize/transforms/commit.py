"""`CommitOutput`: the last step of a tensorize job, for jobs composed of the separate transforms."""

from __future__ import annotations

import posixpath
import uuid

import apache_beam as beam
from apache_beam.transforms.display import DisplayDataItem

from beam_tensorize.job.finish import (
    BAD,
    DEAD_LETTER_FOLDER,
    GOOD,
    OFF_SHAPE,
    check_bad_records,
    commit_split,
    dead_letter_json,
    ignoring_existing,
)
from beam_tensorize.job.spec import TensorizeSpec
from beam_tensorize.kernels.metadata import integer_maxima, integer_tensor_names, merge_maxima
from beam_tensorize.kernels.output.dead_letters import off_shape_of
from beam_tensorize.kernels.serving.settings import input_schema_of, one_input_schema
from beam_tensorize.transforms.metadata import EmitMetadata

__all__ = ["CommitOutput"]


class CommitOutput(beam.PTransform):
    """Commit what a job wrote into `spec.output`, in one transaction: the data files a sink left
    uncommitted (`WriteTFRecord(...).without_commit()`, also `WriteParquet` / `WriteAvro`), the
    metadata with its feature lists, the run report staged before it (`after`), the dead
    letters and the `_SUCCESS` markers (see docs/architecture.md, "The commit protocol").
    `Tensorize` ends with it; a job composed of the separate transforms ends with it too and
    gets the same files.

    Input: the sink's PCollection of one `PendingFiles`. Output: a PCollection of one summary
    dict (`output`, `split`, `files`, `numRecords`, `badRecords`, `metadata`).

    Args:
        spec: the job's settings (output, execution mode, save mode, format, ...).
        feature_lists: PCollection of one `{tensor: FeatureList}`, the lists the records were
            indexed with (written in train mode).
        dead_letters: PCollection of bad records (dicts); counted and committed as JSON lines,
            failing the job past `spec.max_bad_records_ratio`.
        examples: the encoded batches (their rows are counted); None counts the files' records.
        input_batches: the batches read (their schema is recorded for serving).
        tensor_batches: the tensor batches (train mode: the largest value of each integer
            tensor is its `numUniqueValues`).
        extra_layouts: PCollection of one tuple of `FeatureLayout`s of the extra columns.
        lists_from_output: the lists are the output's own (validation / test, an append): a
            bool, or a PCollection of one; they must be unchanged at the commit.
        run: the run's id (the report's staging folder); one is made when None.
        after: side inputs the commit waits for (e.g. the staged report).

    Example:
        >>> import apache_beam as beam
        >>> from beam_tensorize import TensorizeSpec, load_config
        >>> from beam_tensorize.io import ReadAvro, WriteTFRecord
        >>> from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
        >>> from beam_tensorize.transforms import (ApplyFeatureLists, BuildFeatureLists,
        ...     EncodeExamples, ExtractFeatures, HashFeatures)
        >>> spec = TensorizeSpec(load_config(SAMPLE_CONFIG), "composed", save_mode="overwrite")
        >>> with beam.Pipeline() as p:
        ...     read = p | ReadAvro(SAMPLE_AVRO, columns=spec.input_columns)
        ...     hashed = read | ExtractFeatures(spec.config) | HashFeatures(spec.config)
        ...     lists = hashed | BuildFeatureLists(spec.config)
        ...     encoded = hashed | ApplyFeatureLists(spec.config, lists) | EncodeExamples(spec.config)
        ...     pending = encoded.examples | WriteTFRecord("composed/trainingData",
        ...         save_mode="overwrite", record_type="ByteArray").without_commit()
        ...     result = pending | CommitOutput(spec, feature_lists=lists,
        ...         dead_letters=encoded.dead_letters, examples=encoded.examples,
        ...         input_batches=read, tensor_batches=hashed)
        ...     _ = result | beam.Map(lambda r: print(r["numRecords"], r["files"]))
        300 ['composed/trainingData/part-00000-of-00001.tfrecord']
    """

    def __init__(
        self,
        spec: TensorizeSpec,
        *,
        feature_lists=None,
        dead_letters=None,
        examples=None,
        input_batches=None,
        tensor_batches=None,
        extra_layouts=None,
        lists_from_output=None,
        run: str | None = None,
        after: tuple = (),
    ):
        super().__init__()
        self._spec = spec
        self._lists = feature_lists
        self._dead_letters = dead_letters
        self._examples = examples
        self._input_batches = input_batches
        self._tensor_batches = tensor_batches
        self._extra = extra_layouts
        self._lists_from_output = (
            spec.execution_mode != "train" if lists_from_output is None else lists_from_output
        )
        self._run = run
        self._after = tuple(after)

    def display_data(self) -> dict:
        return {
            "output": DisplayDataItem(self._spec.output, label="Output folder"),
            "save_mode": DisplayDataItem(self._spec.save_mode, label="Save mode"),
        }

    def expand(self, pending):
        spec = self._spec
        pipeline = pending.pipeline
        return pending | "Commit" >> beam.Map(
            _commit,
            spec,
            self._run or uuid.uuid4().hex,
            beam.pvalue.AsSingleton(self._counts(pipeline, pending)),
            beam.pvalue.AsSingleton(self._metadata_inputs(pipeline)),
            *self._after,
        )

    def _counts(self, pipeline, pending):
        """One place sees every row count and every bad record: it writes the dead letters (so
        they are there to inspect even when the check fails the job), then checks the ratio."""
        spec = self._spec
        if self._examples is not None:
            good = self._examples | "CountGood" >> beam.FlatMap(_good_rows)
        else:
            good = pending | "CountGood" >> beam.Map(lambda p: (0, (GOOD, sum(w[-1] for w in p.written))))
        parts = [good, pipeline | "NoRecordsYet" >> beam.Create([(0, (GOOD, 0))])]  # also for empty input
        if self._dead_letters is not None:
            parts.append(
                self._dead_letters | "DeadLetterJson" >> beam.Map(lambda d: (0, (BAD, dead_letter_json(d))))
            )
        ignoring = (
            pipeline
            | "SplitFolder" >> beam.Create([spec.split_dir])
            | "IgnoreExisting?" >> beam.Map(ignoring_existing, spec.save_mode)
        )
        return (
            parts
            | "AllCounts" >> beam.Flatten()
            | "GatherCounts" >> beam.GroupByKey()
            | "CheckBadRecords"
            >> beam.Map(
                check_bad_records,
                posixpath.join(spec.output, DEAD_LETTER_FOLDER, spec.split),
                spec.max_bad_records_ratio,
                beam.pvalue.AsSingleton(ignoring),
            )
        )

    def _metadata_inputs(self, pipeline):
        spec = self._spec
        input_schema = maxima = None
        if self._input_batches is not None:  # the input rows' schema, recorded for serving
            input_schema = (
                self._input_batches
                | "InputSchemas" >> beam.Map(input_schema_of)
                | "OneInputSchema" >> beam.CombineGlobally(one_input_schema)
            )
        if self._tensor_batches is not None and spec.execution_mode == "train":
            maxima = largest_integers(self._tensor_batches, spec)
        lists = self._lists
        if lists is None:
            lists = pipeline | "NoFeatureLists" >> beam.Create([{}])
        emit = EmitMetadata.of_spec(
            spec, feature_lists=lists, extra_columns=self._extra, maxima=maxima, input_schema=input_schema
        )
        return emit.metadata_inputs(pipeline, self._lists_from_output)


def largest_integers(tensor_batches, spec: TensorizeSpec):
    """A PCollection of one dict: the largest value of each integer tensor in the data (their
    `numUniqueValues`, Avro2TF's rule; train mode)."""
    return (
        tensor_batches
        | "IntegerMaxima" >> beam.Map(integer_maxima, integer_tensor_names(spec.config.tensors))
        | "LargestOfAll" >> beam.CombineGlobally(merge_maxima)
    )


def _good_rows(examples):
    """What an encoded batch adds to the counts: its rows, and its rows off their shape."""
    yield 0, (GOOD, examples.num_rows)
    off_shape = off_shape_of(examples)
    if off_shape:
        yield 0, (OFF_SHAPE, off_shape)


def _commit(pending, spec: TensorizeSpec, run: str, counts: dict, inputs, *_after) -> dict:
    """`commit_split` once everything in `_after` is done (the staged report)."""
    return commit_split(spec, run, pending, counts, inputs)
