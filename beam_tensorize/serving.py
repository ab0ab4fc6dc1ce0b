"""The batch job's transformation at serving time: raw records in, the written tensors out.

`Preprocessor.from_output(output_dir)` reads what a run recorded — the config, the feature
lists, the hashing settings and keys, the run's own settings and the input rows' Arrow schema
(the metadata's `transform` entry) — and runs the batch job's own kernels (extraction,
tokenization, hashing, feature-list lookup, conversion) on records given as Python dicts
shaped like the input rows (what `fastavro` or a JSON request gives). For every record the
result is exactly what the job wrote to its TFRecords: `serialize` gives the same
`tf.train.Example` bytes, `transform` the same feature values (dtype, shape, sparse indices
and values, unknown ids, dummy hash ids).

This module imports neither Apache Beam nor TensorFlow, so a light Python serving process can
use it. `keras_layer()`, `keras_model()` and `save(path)` build the same transformation from
TensorFlow ops (`beam_tensorize.tf.serving`), for a SavedModel.

Example:
    >>> import fastavro, tempfile
    >>> import apache_beam as beam
    >>> from beam_tensorize import Tensorize, load_config
    >>> from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
    >>> out = tempfile.mkdtemp()
    >>> with beam.Pipeline() as p:
    ...     _ = p | Tensorize(load_config(SAMPLE_CONFIG), out, inputs=[SAMPLE_AVRO], save_mode="overwrite")
    >>> pre = Preprocessor.from_output(out)
    >>> with open(SAMPLE_AVRO, "rb") as f:
    ...     record = next(iter(fastavro.reader(f)))
    >>> features = pre.transform([record])[0]
    >>> features["movieBucket"].tolist(), features["genreIds"].tolist()
    ([732], [2, 4, 0, 7, 11])
"""

from __future__ import annotations

import dataclasses
import json
import os
import posixpath
from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.fs as pafs

from beam_tensorize.config import load_config, parse_config
from beam_tensorize.config.model import TensorConfig, TensorizeConfig
from beam_tensorize.job.transaction import recover
from beam_tensorize.kernels.arrow_types import list_offsets
from beam_tensorize.kernels.features.conversion import FeatureLayout, layout_of
from beam_tensorize.kernels.features.extract import extract_tensors
from beam_tensorize.kernels.features.hashing import hash_tensors
from beam_tensorize.kernels.features.vocab import FeatureList, FeatureListLookup
from beam_tensorize.kernels.filesystems import filesystem_for
from beam_tensorize.kernels.metadata import METADATA_FILE
from beam_tensorize.kernels.output.dead_letters import convert_rows
from beam_tensorize.kernels.partitions import with_partition_ids
from beam_tensorize.kernels.serving.settings import ServingError, TransformSettings
from beam_tensorize.kernels.tfrecord.example_encoder import encode_examples

__all__ = ["Preprocessor", "ServingError"]


class Preprocessor:
    """The transformation of one beam_tensorize output, for raw records at serving time.

    Args:
        config: the config (parsed, or a config file's path).
        feature_lists: the feature lists by tensor name (`FeatureList`s or lists of entries).
        settings: the run's settings (`TransformSettings`; its `input_schema` types the
            records; without it, types are inferred from the records, which can differ from
            the batch job's, e.g. for a float column given whole numbers).
        labels: also compute the labels (False: serving requests, which have none).
    """

    def __init__(
        self,
        config: TensorizeConfig | str,
        feature_lists: Mapping[str, FeatureList | Sequence[str]] | None = None,
        settings: TransformSettings | None = None,
        labels: bool = True,
    ):
        config = load_config(config) if isinstance(config, (str, os.PathLike)) else config
        #: The config whose tensors are computed (without its labels when `labels` is False).
        self.config = config if labels else dataclasses.replace(config, labels=())
        self.settings = settings or TransformSettings()
        self.feature_lists = {
            name: fl if isinstance(fl, FeatureList) else FeatureList(tuple(fl))
            for name, fl in (feature_lists or {}).items()
        }
        self._lookup = FeatureListLookup(self.feature_lists)
        folder = set(self.settings.folder_columns)
        #: The tensors written to the records (partition folder columns are not).
        self.layouts: tuple[FeatureLayout, ...] = tuple(
            layout_of(t) for t in self.config.tensors if t.name not in folder
        )

    # --- construction -------------------------------------------------------------------

    @classmethod
    def from_output(cls, output_dir: str, labels: bool = True) -> Preprocessor:
        """The transformation recorded in a beam_tensorize output folder (local, s3://, gs://,
        ... through pyarrow's file systems): `metadata/tensor_metadata.json` and the feature
        lists it names.

        Args:
            output_dir: the output folder.
            labels: also compute the labels (False for serving requests, which have none).

        Raises:
            ServingError: the folder has no metadata, the metadata has no `config` entry, or a
                feature list it names is missing or not the one it records.
        """
        recover(output_dir)  # a commit a killed run left: finished first (its new output is complete)
        metadata = json.loads(_read_text(output_dir, METADATA_FILE, "metadata"))
        if "config" not in metadata:
            raise ServingError(
                f"the metadata at {posixpath.join(output_dir, METADATA_FILE)} has no 'config' entry "
                "(it was not written by beam_tensorize, or by a version before serving); run the job "
                "again into this folder, or build the Preprocessor with Preprocessor.from_config"
            )
        config = parse_config(metadata["config"])
        lists = {}
        for entry in metadata.get("features", []) + metadata.get("labels", []):
            listed = entry.get("featureList")
            if listed:
                text = _read_text(output_dir, listed["path"], f"feature list of {entry['name']!r}")
                feature_list = FeatureList.from_text(text, ntv=listed.get("entries") == "name,term")
                try:
                    feature_list.check_recorded(listed, posixpath.join(output_dir, listed["path"]))
                except ValueError as err:
                    raise ServingError(f"{err}") from None
                lists[entry["name"]] = feature_list
        return cls(config, lists, TransformSettings.from_json(metadata.get("transform")), labels)

    @classmethod
    def from_config(
        cls,
        config: TensorizeConfig | str,
        feature_list_dir: str | None = None,
        input_schema: pa.Schema | None = None,
        labels: bool = True,
        **settings,
    ) -> Preprocessor:
        """A transformation from a config and a folder of feature lists (`<dir>/<tensor>`, one
        entry per line, as `featureList/` or external lists), with the job's settings
        (`extra_columns`, `filter_zeros`, `check_shapes`, `discard_unknown_entries`,
        `partition_field_name`, `num_partitions`, `folder_columns`; see `TransformSettings`).

        Raises:
            ServingError: the folder holds no list.
        """
        parsed = load_config(config) if isinstance(config, (str, os.PathLike)) else config
        lists = {}
        if feature_list_dir is not None:
            fs, root = filesystem_for(feature_list_dir)
            infos = fs.get_file_info(pafs.FileSelector(root, allow_not_found=True))
            names = set(parsed.tensor_names)
            for info in sorted(infos, key=lambda i: i.path):
                name = posixpath.basename(info.path)
                if info.type == pafs.FileType.File and name in names:
                    with fs.open_input_stream(info.path) as f:
                        lists[name] = FeatureList.from_text(f.read().decode("utf-8"))
            if not lists:
                raise ServingError(
                    f"no feature list of the config's tensors in {feature_list_dir}; give the "
                    "output's featureList/ folder (files named after tensors)"
                )
        return cls(parsed, lists, TransformSettings(input_schema=input_schema, **settings), labels)

    # --- transformation -----------------------------------------------------------------

    @property
    def tensors(self) -> tuple[TensorConfig, ...]:
        return self.config.tensors

    def record_batch(self, records: Sequence[Mapping]) -> pa.RecordBatch:
        """Raw records as an Arrow batch of the input schema the batch job read (keys it does
        not name are ignored; a missing key is a null).

        Raises:
            ServingError: a record's value does not fit its column's type (names the record).
        """
        schema = self.settings.input_schema
        if schema is not None:
            _refuse_truncated_numbers(records, schema)
        try:
            if schema is None:
                return pa.RecordBatch.from_pylist(list(records))
            return pa.RecordBatch.from_pylist(list(records), schema=schema)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as err:
            for index, record in enumerate(records):
                try:
                    pa.RecordBatch.from_pylist([record], schema=schema)
                except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, ValueError, OverflowError) as one:
                    raise ServingError(
                        f"record {index} does not fit the input schema: {one}; give values "
                        "of the types in the metadata's transform.inputColumns"
                    ) from None
            raise ServingError(f"the records do not fit the input schema: {err}") from None

    def tensor_batch(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The tensor columns of a batch of input rows, as the job has them before encoding:
        extracted, tokenized, hashed, looked up (one column per tensor and extra column, and
        the partition folder columns, which the records leave out)."""
        settings = self.settings
        tensors = self.config.tensors
        out = hash_tensors(extract_tensors(batch, tensors, settings.extra_columns), tensors)
        if settings.partition_field_name:
            out = with_partition_ids(out, settings.partition_field_name, settings.num_partitions)
        return self._lookup.apply(out, tensors, settings.filter_zeros, settings.discard_unknown_entries)

    def transform_batch(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The Example feature columns of a batch of input rows (one list column per feature
        key, as `featureKeys` in the metadata names them), row for row.

        Raises:
            ServingError: a row the batch job would have made a dead letter (names the row and
                the reason).
        """
        result, _ = convert_rows(
            self.tensor_batch(batch), self.layouts, self.settings.folder_columns, self.settings.check_shapes
        )
        if len(result.bad_rows):
            row, reason = int(result.bad_rows[0]), result.reasons[0]
            raise ServingError(
                f"record {row}: {reason}; the batch job writes such a record to its dead "
                "letters, so the model never saw one like it"
            )
        return result.features

    def transform(self, records: Sequence[Mapping]) -> list[dict[str, np.ndarray]]:
        """Per record, its Example's features: feature key -> 1-D numpy array (int64,
        float32, or bytes objects), exactly what the TFRecords hold for that record.

        Raises:
            ServingError: as `record_batch` and `transform_batch`.
        """
        features = self.transform_batch(self.record_batch(records))
        per_key = {}
        for name, column in zip(features.schema.names, features.columns):
            offsets = list_offsets(column)
            flat = column.flatten()
            if pa.types.is_large_binary(flat.type) or pa.types.is_binary(flat.type):
                values = np.array(flat.to_pylist() + [b""], dtype=object)[:-1]
            else:
                values = flat.to_numpy(zero_copy_only=False)
            per_key[name] = [values[offsets[i] : offsets[i + 1]] for i in range(len(column))]
        return [{name: rows[i] for name, rows in per_key.items()} for i in range(features.num_rows)]

    def serialize(self, records: Sequence[Mapping]) -> list[bytes]:
        """The serialized `tf.train.Example` of each record, byte for byte what the job wrote."""
        features = self.transform_batch(self.record_batch(records))
        return encode_examples(features).to_pylist()

    # --- the TensorFlow model's inputs -----------------------------------------------------

    def raw_batch(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """The inputs of the TensorFlow serving model: each tensor's `columnExpr` /
        `columnConfig` result before tokenization, hashing and lookup (and the extra
        columns)."""
        return extract_tensors(batch, self.config.tensors, self.settings.extra_columns, tokenize_text=False)

    def raw_examples(self, records: Sequence[Mapping]) -> list[bytes]:
        """Serving requests for the SavedModel's `serving_default` signature: one serialized
        `tf.train.Example` of raw columns per record (see docs/serving.md)."""
        from beam_tensorize.kernels.serving.requests import raw_example_columns

        raw = raw_example_columns(self.raw_batch(self.record_batch(records)))
        return encode_examples(raw, omit_nulls=True).to_pylist()

    def keras_layer(self):
        """The transformation as a Keras layer of TensorFlow ops (`beam_tensorize.tf.serving`)."""
        from beam_tensorize.tf.serving import PreprocessingLayer

        return PreprocessingLayer(self)

    def keras_model(self):
        """A Keras model: raw columns in, the model's input tensors out."""
        from beam_tensorize.tf.serving import preprocessing_model

        return preprocessing_model(self)

    def save(self, path: str) -> str:
        """Write a SavedModel whose `serving_default` signature takes serialized Examples of raw
        columns (`raw_examples`) and returns the tensors; returns `path`."""
        from beam_tensorize.tf.serving import save_preprocessor

        return save_preprocessor(self, path)


def _refuse_truncated_numbers(records: Sequence[Mapping], schema: pa.Schema) -> None:
    """Arrow converts 1215.7 into an integer column as 1215 without a word; the batch job makes
    such a value a dead letter, so serving refuses it (top-level values and lists of them)."""
    integers = [
        f.name
        for f in schema
        if pa.types.is_integer(f.type)
        or (
            (pa.types.is_list(f.type) or pa.types.is_large_list(f.type))
            and pa.types.is_integer(f.type.value_type)
        )
    ]
    for index, record in enumerate(records):
        for name in integers:
            value = record.get(name) if isinstance(record, Mapping) else None
            values = value if isinstance(value, (list, tuple)) else [value]
            for item in values:
                if isinstance(item, (float, np.floating)) and not float(item).is_integer():
                    raise ServingError(
                        f"record {index}: {name} = {item!r} is not an integer (column type "
                        f"{schema.field(name).type}); the batch job writes such a record to its dead "
                        "letters, so the model never saw one like it"
                    )


def _read_text(output_dir: str, relative: str, what: str) -> str:
    fs, root = filesystem_for(output_dir)
    path = posixpath.join(root.rstrip("/"), relative)
    try:
        with fs.open_input_stream(path) as f:
            return f.read().decode("utf-8")
    except (FileNotFoundError, OSError) as err:
        raise ServingError(
            f"cannot read the {what} at {posixpath.join(output_dir, relative)} ({err}); give "
            "the folder of a finished beam_tensorize run (train mode writes the feature lists)"
        ) from None
