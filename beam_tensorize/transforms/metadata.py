"""`EmitMetadata`: write `metadata/tensor_metadata.json` (and, for TFRecord output,
`metadata/schema.pbtxt`) once the data is committed."""

from __future__ import annotations

import dataclasses
import logging

import apache_beam as beam
import pyarrow as pa
from apache_beam.transforms.display import DisplayDataItem

from beam_tensorize.config.model import TensorizeConfig
from beam_tensorize.job.metadata import MetadataInputs, MetadataSettings, write_run_metadata
from beam_tensorize.kernels.serving.settings import TransformSettings

__all__ = ["EmitMetadata"]

_LOGGER = logging.getLogger(__name__)


class EmitMetadata(beam.PTransform):
    """Write the tensor metadata of `config` (and the feature lists) into `output_dir`.

    Input: a PCollection of one dict `{split folder: {"files": [...], "numRecords": n, ...}}`
    (the committed data). Entries for other split folders already in an existing metadata
    file are kept, so a test-mode run adds `testData` beside an earlier `trainingData`. The
    files take their places in one atomic commit (`beam_tensorize.job.transaction`).

    Args:
        config: the parsed config.
        output_dir: the output folder.
        compression: the data files' compression, as written ("none", "gzip", ...).
        feature_lists: optional PCollection of one dict `{tensor name: FeatureList}` used by
            the data; recorded in the metadata.
        write_feature_lists: also write them to `featureList/<tensor>` (train mode); a bool,
            or a PCollection of one bool decided when the job runs.
        extra_columns: optional PCollection of one tuple of `FeatureLayout`s, how the extra
            input columns were stored.
        maxima: optional PCollection of one dict, the largest value of each integer tensor in
            the data (train mode; see `beam_tensorize.kernels.metadata.integer_maxima`); without
            it the values the metadata records are kept.
        add_to_recorded: the data is appended to what the metadata describes: the recorded
            maxima count too.
        discard_unknown: entries not in their feature list were left out (no unknown id in
            lists and vectors).
        settings: the run's `TransformSettings` (recorded as the `transform` entry that
            `beam_tensorize.serving.Preprocessor` reads); None keeps the recorded entry.
        input_schema: optional PCollection of one serialized Arrow schema, of the input rows
            (`beam_tensorize.kernels.serving.settings.one_input_schema`), added to `settings`.

    Returns (from `expand`): a PCollection of one element, the metadata file's path.

    Example:
        >>> import apache_beam as beam
        >>> from beam_tensorize.config import load_config
        >>> from beam_tensorize.sample import SAMPLE_CONFIG
        >>> with beam.Pipeline() as p:
        ...     splits = p | beam.Create([{"trainingData": {"files": [], "numRecords": 0}}])
        ...     path = splits | EmitMetadata(load_config(SAMPLE_CONFIG), "out")
    """

    def __init__(
        self,
        config: TensorizeConfig,
        output_dir: str,
        compression: str = "none",
        feature_lists=None,
        write_feature_lists: bool = False,
        extra_columns=None,
        maxima=None,
        add_to_recorded: bool = False,
        discard_unknown: bool = False,
        settings: TransformSettings | None = None,
        input_schema=None,
    ):
        super().__init__()
        self._settings_view = MetadataSettings(
            config, output_dir.rstrip("/"), compression, add_to_recorded, discard_unknown
        )
        self._feature_lists = feature_lists
        self._write_lists = write_feature_lists
        self._extra = extra_columns
        self._maxima = maxima
        self._settings = settings
        self._input_schema = input_schema

    @classmethod
    def of_spec(
        cls, spec, feature_lists=None, extra_columns=None, maxima=None, input_schema=None
    ) -> EmitMetadata:
        """The metadata of a job with the settings `spec` (a `TensorizeSpec`): its config, output,
        compression, feature-list and transform settings; the PCollections as in the class.

        Example:
            >>> from beam_tensorize.config import load_config
            >>> from beam_tensorize.job.spec import TensorizeSpec
            >>> from beam_tensorize.sample import SAMPLE_CONFIG
            >>> emit = EmitMetadata.of_spec(TensorizeSpec(load_config(SAMPLE_CONFIG), "out", compression="gzip"))
            >>> emit.display_data()["output"].value
            'out'
        """
        return cls(
            spec.config,
            spec.output,
            spec.compression,
            feature_lists=feature_lists,
            write_feature_lists=spec.execution_mode == "train",
            extra_columns=extra_columns,
            maxima=maxima,
            discard_unknown=spec.discard_unknown_entries,
            settings=spec.transform_settings,
            input_schema=input_schema,
        )

    def display_data(self) -> dict:
        return {
            "output": DisplayDataItem(self._settings_view.output_dir, label="Output folder"),
            "write_feature_lists": DisplayDataItem(
                self._write_lists if isinstance(self._write_lists, bool) else "when the job runs",
                label="Writes feature lists",
            ),
        }

    def metadata_inputs(self, pipeline, lists_from_output=False) -> beam.PCollection:
        """A PCollection of one `MetadataInputs`: what the metadata takes besides the data's
        entry, gathered when the job runs (`Tensorize` commits it with the data).
        `lists_from_output`: a bool, or a PCollection of one."""
        side_inputs = {}
        if self._feature_lists is not None:
            side_inputs["lists"] = beam.pvalue.AsSingleton(self._feature_lists)
        if self._extra is not None:
            side_inputs["extra"] = beam.pvalue.AsSingleton(self._extra)
        if self._maxima is not None:
            side_inputs["maxima"] = beam.pvalue.AsSingleton(self._maxima)
        if self._settings is not None:
            if self._input_schema is not None:
                entry = self._input_schema | "TransformEntry" >> beam.Map(_transform_entry, self._settings)
            else:
                entry = pipeline | "TransformEntry" >> beam.Create([self._settings.to_json()])
            side_inputs["transform"] = beam.pvalue.AsSingleton(entry)
        for name, value in (("write_lists", self._write_lists), ("lists_from_output", lists_from_output)):
            side_inputs[name] = (
                beam.pvalue.AsSingleton(value) if isinstance(value, beam.PCollection) else value
            )
        return (
            pipeline
            | "MetadataStep" >> beam.Create([None])
            | "MetadataInputs" >> beam.Map(_metadata_inputs, **side_inputs)
        )

    def expand(self, splits):
        return splits | "WriteMetadata" >> beam.Map(
            _write_metadata,
            beam.pvalue.AsSingleton(self.metadata_inputs(splits.pipeline)),
            self._settings_view,
        )


def _metadata_inputs(_, lists=None, write_lists=False, extra=(), maxima=None, transform=None,
                     lists_from_output=False) -> MetadataInputs:  # fmt: skip
    return MetadataInputs(
        dict(lists or {}), bool(write_lists), tuple(extra), maxima, transform, lists_from_output
    )


def _write_metadata(splits, inputs: MetadataInputs, settings: MetadataSettings) -> str:
    return write_run_metadata(splits, settings, inputs)


def _transform_entry(schema: bytes | None, settings: TransformSettings) -> dict:
    """The `transform` entry: the settings with the input schema found when the job ran."""
    if schema is None:
        return settings.to_json()
    read = pa.ipc.read_schema(pa.py_buffer(schema))
    return dataclasses.replace(settings, input_schema=read).to_json()
