"""The metadata document of an output folder (`metadata/tensor_metadata.json`, and beside it
the TensorFlow Metadata schema `metadata/schema.pbtxt`): read and write.

Example:
    >>> import tempfile
    >>> from beam_tensorize.config import load_config
    >>> from beam_tensorize.sample import SAMPLE_CONFIG
    >>> path = write_metadata({"trainingData": {"files": [], "numRecords": 0}},
    ...                       load_config(SAMPLE_CONFIG), tempfile.mkdtemp())
    >>> path.endswith("metadata/tensor_metadata.json")
    True
"""

from __future__ import annotations

import json
import logging
import posixpath
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from typing import NamedTuple

from beam_tensorize.config.model import TensorizeConfig
from beam_tensorize.job.feature_lists import FEATURE_LIST_FOLDER, write_feature_lists
from beam_tensorize.job.files import FileSystems, read_text
from beam_tensorize.job.transaction import Transaction
from beam_tensorize.kernels.features.conversion import FeatureLayout
from beam_tensorize.kernels.features.vocab import FeatureList
from beam_tensorize.kernels.metadata import (
    METADATA_FILE,
    build_metadata,
    integer_tensor_names,
    merge_maxima,
    metadata_json,
)
from beam_tensorize.kernels.tfmd_schema import SCHEMA_FILE, schema_text

__all__ = [
    "MetadataInputs",
    "MetadataSettings",
    "read_metadata",
    "stage_metadata_files",
    "write_metadata",
    "write_run_metadata",
]

_LOGGER = logging.getLogger(__name__)


class MetadataSettings(NamedTuple):
    """The job's settings the metadata is written with (a view of a `TensorizeSpec`: `of`)."""

    config: TensorizeConfig
    output_dir: str
    compression: str = "none"
    #: The data is added to what the document describes (appending): the recorded maxima count too.
    add_to_recorded: bool = False
    #: Entries not in their feature list were left out of lists and vectors.
    discard_unknown: bool = False

    @classmethod
    def of(cls, spec) -> MetadataSettings:
        """The metadata settings of a `TensorizeSpec`."""
        return cls(
            spec.config,
            spec.output,
            spec.compression,
            spec.save_mode == "append",
            spec.discard_unknown_entries,
        )


class MetadataInputs(NamedTuple):
    """What a run found out for the metadata besides its files (see `write_metadata`)."""

    lists: dict
    write_lists: bool
    extra: tuple = ()
    maxima: dict | None = None
    transform: dict | None = None
    #: The records were indexed with the output's feature lists (validation / test, or an
    #: append to train data): they must still be the output's at the commit.
    lists_from_output: bool = False


def read_metadata(output_dir: str) -> dict | None:
    """The metadata document of an output folder, or None if it has none."""
    text = read_text(posixpath.join(output_dir.rstrip("/"), METADATA_FILE))
    return None if text is None else json.loads(text)


def _recorded_maxima(document: Mapping, config: TensorizeConfig) -> dict[str, int]:
    """The `numUniqueValues` a document records for the integer tensors of `config`."""
    names = set(integer_tensor_names(config.tensors))
    entries = [*document.get("features", []), *document.get("labels", [])]
    return {
        e["name"]: e["numUniqueValues"]
        for e in entries
        if e.get("name") in names and isinstance(e.get("numUniqueValues"), int)
    }


def write_metadata(
    splits: Mapping[str, Mapping],
    config: TensorizeConfig,
    output_dir: str,
    compression: str = "none",
    write_lists: bool = False,
    lists: Mapping[str, FeatureList] | None = None,
    extra: Sequence[FeatureLayout] = (),
    maxima: Mapping[str, int] | None = None,
    add_to_recorded: bool = False,
    discard_unknown: bool = False,
    transform: Mapping | None = None,
    txn: Transaction | None = None,
    string_domains: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """Write the metadata document with its `schema.pbtxt` (see `stage_metadata_files`) and, if
    asked, the feature lists, now or as part of `txn`; returns the document's path (an example
    in the module's docstring).

    What `EmitMetadata` does when the job runs: entries of other splits in an existing
    document are kept; the files take their places in one atomic commit.

    Args:
        splits: `{split folder: {"files": [...], "numRecords": n, ...}}` of the committed data.
        config: the parsed config.
        output_dir: the output folder.
        compression: the data files' compression, as written ("none", "gzip", ...).
        write_lists: also write `featureList/<tensor>` (train mode).
        lists: the feature lists used, by tensor name.
        extra: how the extra input columns were stored.
        maxima: the largest value of each integer tensor in this run's data (`integer_maxima`,
            train mode); None keeps what the document records (validation / test runs).
        add_to_recorded: the data is added to what the document describes (appending): the
            recorded maxima count too.
        discard_unknown: entries not in their feature list were left out of lists and vectors.
        transform: the run's `transform` entry (`TransformSettings.to_json`); None keeps the
            recorded one.
        txn: the commit the files are part of (`beam_tensorize.job.transaction`); None commits
            them at once, in a transaction of their own.
        string_domains: `{string feature: its values}` for `schema.pbtxt`
            (`beam_tensorize.job.report.schema_string_domains`).
    """
    settings = MetadataSettings(config, output_dir, compression, add_to_recorded, discard_unknown)
    inputs = MetadataInputs(dict(lists or {}), write_lists, tuple(extra), maxima, transform)
    return write_run_metadata(splits, settings, inputs, txn, string_domains)


def write_run_metadata(
    splits: Mapping[str, Mapping],
    settings: MetadataSettings,
    inputs: MetadataInputs,
    txn: Transaction | None = None,
    string_domains: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """`write_metadata` with the job's settings and what its run found out as they travel
    (`MetadataSettings.of(spec)`, `MetadataInputs`); returns the document's path."""
    output_dir = settings.output_dir
    with _transaction(txn, output_dir) as txn:
        lists = dict(inputs.lists or {})
        paths = _feature_list_paths(lists, output_dir, txn if inputs.write_lists else None)
        previous = read_metadata(output_dir) or {}
        document = build_metadata(
            settings.config,
            _merged_data(splits, previous),
            lists,
            paths,
            compression=settings.compression,
            extra_columns=inputs.extra,
            maxima=_run_maxima(inputs.maxima, settings.add_to_recorded, previous, settings.config),
            discard_unknown=settings.discard_unknown,
            transform=inputs.transform if inputs.transform is not None else previous.get("transform"),
        )
        return _stage_document(txn, output_dir, document, string_domains)


def _transaction(txn: Transaction | None, output_dir: str) -> AbstractContextManager[Transaction]:
    """`txn` itself (left open), or else a transaction of its own, committed when it ends."""
    return Transaction(output_dir) if txn is None else nullcontext(txn)


def _feature_list_paths(
    lists: Mapping[str, FeatureList], output_dir: str, txn: Transaction | None
) -> dict[str, str]:
    """Tensor name -> its feature list's path in the output; `txn` given: write the lists too."""
    if txn is not None:
        return write_feature_lists(lists, output_dir, txn)
    return {name: posixpath.join(FEATURE_LIST_FOLDER, name) for name in lists}


def _merged_data(splits: Mapping[str, Mapping], previous: Mapping) -> dict[str, Mapping]:
    """The `data` entry: this run's splits, then the other splits the document records."""
    data = dict(splits)
    for name, info in previous.get("data", {}).items():
        data.setdefault(name, info)
    return data


def _run_maxima(
    maxima: Mapping[str, int] | None, add_to_recorded: bool, previous: Mapping, config: TensorizeConfig
) -> Mapping[str, int]:
    """The integer maxima to record: this run's, the recorded ones (None), or both (appending)."""
    recorded = _recorded_maxima(previous, config) if previous else {}
    if maxima is None:
        return recorded
    return merge_maxima([recorded, maxima]) if add_to_recorded else maxima


def _stage_document(
    txn: Transaction, output_dir: str, document: Mapping, string_domains: Mapping | None
) -> str:
    folder = posixpath.join(output_dir, posixpath.dirname(METADATA_FILE))
    path = stage_metadata_files(txn, folder, document, string_domains)
    _LOGGER.info("Staged %s", path)
    return path


def stage_metadata_files(
    txn: Transaction,
    folder: str,
    document: Mapping,
    string_domains: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """Stage a metadata document in `folder`, and beside it, for `tf.train.Example` records,
    its TensorFlow Metadata schema (`schema.pbtxt`, with these string domains); returns the
    document's path."""
    path = posixpath.join(folder, posixpath.basename(METADATA_FILE))
    txn.write_text(path, metadata_json(document))
    data = document.get("data", {}).values()
    schema = posixpath.join(folder, posixpath.basename(SCHEMA_FILE))
    if document.get("recordType", "Example") == "Example" and any(
        info.get("format", "tfrecord") == "tfrecord" for info in data
    ):
        txn.write_text(schema, schema_text(document, string_domains))
    elif FileSystems.exists(schema):  # an earlier output's, which no longer describes it
        txn.delete([schema])
    return path
