"""`PrepRankingData`: a tensorized output's rows grouped by query into ranking records
(Avro2TF's PrepRankingData job; the rules are in `beam_tensorize.kernels.ranking`)."""

from __future__ import annotations

import hashlib
import json
import posixpath
from collections.abc import Iterable, Mapping

import apache_beam as beam
import pyarrow as pa
from apache_beam.transforms.display import DisplayDataItem

from beam_tensorize.io.avro import ReadAvro, WriteAvro
from beam_tensorize.io.tfrecord import ReadTFRecord, WriteTFRecord
from beam_tensorize.job.commit import SUCCESS_FILE, PendingFiles, commit_files
from beam_tensorize.job.files import FileSystems, match_files, read_text
from beam_tensorize.job.metadata import stage_metadata_files
from beam_tensorize.job.reading import file_schema, unify_file_schemas
from beam_tensorize.job.transaction import Transaction
from beam_tensorize.kernels import formats
from beam_tensorize.kernels.metadata import METADATA_FILE, SPLIT_FOLDERS
from beam_tensorize.kernels.provenance import source_of, with_source
from beam_tensorize.kernels.ranking import RECORD_FORMATS, RankingPlan, RankingSettings

__all__ = ["CONTENT_FEATURE_LIST", "INPUT_FORMATS", "PrepRankingData", "read_avro2tf_metadata"]

#: What `PrepRankingData` reads: our tensorized output folder, or Avro2TF's layout (Avro files
#: and a tensor_metadata.json of names, dtypes and shapes).
INPUT_FORMATS = ("tensorized", "avro")
#: The file listing the document tensors, one a line (Avro2TF's `content_feature_list`).
CONTENT_FEATURE_LIST = "content_feature_list"
_METADATA_NAME = posixpath.basename(METADATA_FILE)


class PrepRankingData(beam.PTransform):
    """Group the rows of a tensorized split by query and write one ranking record per group,
    with the metadata updated for the grouped tensors.

    Applied to a pipeline (`p | PrepRankingData(...)`), it reads the input, groups rows by
    `settings.group_ids` (documents in input order: file, then position; a Beam GroupByKey),
    and writes `num_shards` files, groups in the order of their first row (or, with `shuffle`,
    in a pseudo-random order drawn from their group ids: the same on every run). The same
    input gives the same files on every run.

    Where it reads and writes:

    * `input_format="tensorized"`: `input_path` is a tensorized output folder; `<input>/<split>/`
      is read with the parse entries of `metadata` (`beam_tensorize.job.metadata.read_metadata`).
    * `input_format="avro"` (Avro2TF's layout): `input_path` is an Avro file or a folder of Avro
      files (Avro2TF's output; hidden `_` / `.` files are skipped), `metadata` Avro2TF's
      tensor_metadata.json (`read_avro2tf_metadata`): its tensors are the Avro columns.
    * `metadata_dir` None: `<output_dir>/<split>/part-*` and `<output_dir>/metadata/`
      (`tensor_metadata.json`, `content_feature_list`, and `schema.pbtxt` for Example
      records), committed together with `_SUCCESS` last (`beam_tensorize.job.transaction`).
    * `metadata_dir` a folder (Avro2TF's `--output-data-path` / `--output-metadata-path`):
      the data files and their `_SUCCESS` go into `output_dir` itself, then, for the
      `trainingData` split only (Avro2TF's rule), the metadata files into `metadata_dir`;
      each folder changes in one commit, the data first.

    Args:
        input_path: see above.
        output_dir: see above.
        metadata: the input's metadata document.
        settings: group ids, list size, padding, dropped columns (`RankingSettings`).
        split: the split folder to read (tensorized input) and write (`trainingData`, ...).
        record_format: "example" (one Example of lists per group), "elwc" (TF-Ranking's
            ExampleListWithContext: query features as the context, an Example per document)
            or "avro" (Avro2TF's output: one Avro record per group).
        num_shards: files to write.
        save_mode: as `WriteTFRecord`; with `metadata_dir`, "error" also refuses a metadata
            folder that holds the metadata files already, and "ignore" leaves them.
        input_format: one of `INPUT_FORMATS`.
        metadata_dir: see above.
        shuffle: write the groups in a pseudo-random (but fixed) order.

    Raises:
        ValueError, OSError: a setting does not fit the input (the message says which), the
            Avro input is missing, or (`save_mode="error"`) the metadata files exist.

    Example::

        metadata = read_metadata("tensorized")
        with beam.Pipeline() as p:
            _ = p | PrepRankingData("tensorized", "ranking", metadata, RankingSettings(("qid",), 10))
    """

    def __init__(
        self,
        input_path: str,
        output_dir: str,
        metadata: Mapping,
        settings: RankingSettings,
        split: str = "trainingData",
        record_format: str = "example",
        num_shards: int = 1,
        save_mode: str = "error",
        *,
        input_format: str = "tensorized",
        metadata_dir: str | None = None,
        shuffle: bool = False,
    ):
        super().__init__()
        if record_format not in RECORD_FORMATS:
            raise ValueError(f"record_format {record_format!r} is not one of {', '.join(RECORD_FORMATS)}")
        if input_format not in INPUT_FORMATS:
            raise ValueError(f"input_format {input_format!r} is not one of {', '.join(INPUT_FORMATS)}")
        self._avro_input = input_format == "avro"
        if self._avro_input:
            schema = _avro_schema(input_path)
            self._plan = RankingPlan(metadata, settings, record_format, avro_schema=schema)
            self._input = input_path
            self._compression = "none"
        else:
            if split not in metadata.get("data", {}):
                raise ValueError(
                    f"{input_path} has no {split} split; it has {sorted(metadata.get('data', {}))}"
                )
            self._plan = RankingPlan(metadata, settings, record_format)
            self._input = posixpath.join(input_path.rstrip("/"), split)
            self._compression = {"GZIP": "gzip", "ZLIB": "zlib"}.get(metadata.get("compression"), "none")
        output_dir = output_dir.rstrip("/")
        if metadata_dir is None:
            self._places = _Places(
                posixpath.join(output_dir, split), posixpath.join(output_dir, "metadata"), output_dir
            )
        else:
            metadata_dir = metadata_dir.rstrip("/")
            self._places = _Places(
                output_dir, metadata_dir, None, write_metadata=split == SPLIT_FOLDERS["train"]
            )
            if save_mode == "error" and self._places.write_metadata:
                _refuse_existing_metadata(metadata_dir)
        self._split = split
        self._format = record_format
        self._num_shards = num_shards
        self._save_mode = save_mode
        self._shuffle = shuffle

    def display_data(self) -> dict:
        settings = self._plan.settings
        return {
            "group_ids": DisplayDataItem(", ".join(settings.group_ids), label="Group ids"),
            "max_size": DisplayDataItem(settings.max_size, label="Documents per group"),
            "record_format": DisplayDataItem(self._format, label="Record format"),
        }

    def expand(self, pbegin):
        plan = self._plan
        if self._avro_input:
            read = ReadAvro(self._input, columns=plan.read_columns())
        else:
            read = ReadTFRecord(self._input, schema=plan.read_schema(), compression=self._compression)
        rows = pbegin | "ReadRecords" >> read | "RowsByGroup" >> beam.FlatMap(_rows_by_group, plan)
        records = (
            rows
            | "GroupRows" >> beam.GroupByKey()
            | "RankingRecord" >> beam.Map(_ranking_record, plan, self._shuffle)
        )
        folder = self._places.data
        if self._format == "avro":
            sink = WriteAvro(folder, num_shards=self._num_shards, save_mode=self._save_mode)
        else:
            sink = WriteTFRecord(
                folder,
                num_shards=self._num_shards,
                compression=self._compression,
                save_mode=self._save_mode,
                record_type="ByteArray",
                record_column="record",
            )
        pending = records | "WriteRecords" >> sink.without_commit()
        return pending | "Commit" >> beam.Map(_commit, plan, self._places, self._split)


class _Places:
    """Where the records and the metadata go: `root` the folder of one commit holding both
    (our layout), or None (Avro2TF's: two folders, two commits)."""

    def __init__(self, data: str, metadata: str, root: str | None, write_metadata: bool = True):
        self.data, self.metadata, self.root, self.write_metadata = data, metadata, root, write_metadata


def read_avro2tf_metadata(path: str) -> dict:
    """Avro2TF's tensor_metadata.json (`path` the file, or the folder holding it).

    Raises:
        ValueError: it is missing, not JSON, or lacks `features` / `labels` (Avro2TF requires
            both); the message names the file.

    Example::

        metadata = read_avro2tf_metadata("avro2tf_out/metadata/tensor_metadata.json")
    """
    path = path.rstrip("/")
    if FileSystems.exists(posixpath.join(path, _METADATA_NAME)):
        path = posixpath.join(path, _METADATA_NAME)
    text = read_text(path)
    if text is None:
        raise ValueError(f"{path} does not exist: give Avro2TF's tensor_metadata.json (or its folder)")
    try:
        document = json.loads(text)
    except ValueError as err:
        raise ValueError(f"{path} is not a JSON tensor metadata document: {err}") from None
    if not isinstance(document, dict):
        raise ValueError(f"{path} is not a tensor metadata document (a JSON object with features and labels)")
    for section in ("features", "labels"):
        entries = document.get(section)
        if not isinstance(entries, list) or not all(isinstance(e, dict) and "name" in e for e in entries):
            raise ValueError(
                f"{path} has no {section!r} section of named tensors, which Avro2TF's metadata has"
            )
    return document


def _avro_schema(path: str) -> pa.Schema:
    """The unified Arrow schema of the Avro files of a file, folder or glob (hidden files
    skipped; the read notes them)."""
    fmt = formats.get_format("avro")
    files = match_files(path, "Avro", note=False)
    return unify_file_schemas([(p, file_schema(fmt, p, None)) for p, _ in files], None)


def _refuse_existing_metadata(folder: str) -> None:
    for name in (_METADATA_NAME, CONTENT_FEATURE_LIST):
        path = posixpath.join(folder, name)
        if FileSystems.exists(path):
            raise FileExistsError(
                f"{path} already exists; choose another metadata folder or another save mode "
                "(overwrite, append, ignore)"
            )


def _rows_by_group(batch: pa.RecordBatch, plan: RankingPlan) -> Iterable[tuple]:
    """(group key, ((file, offset, row), row's values)) for every row of a read batch."""
    path, offset = source_of(batch) or ("", 0)
    for index, row in enumerate(batch.to_pylist()):
        values = plan.values(row)
        yield plan.group_key(values), ((path, offset, index), values)


def _ranking_record(grouped: tuple, plan: RankingPlan, shuffle: bool) -> pa.RecordBatch:
    """One group's record, tagged with its first row's place (the files keep input order), or
    with a digest of its group ids when shuffled."""
    key, placed = grouped
    placed = sorted(placed, key=lambda item: item[0])
    record = plan.record([values for _, values in placed])
    batch = (
        record
        if isinstance(record, pa.RecordBatch)
        else pa.RecordBatch.from_pydict({"record": pa.array([record], pa.binary())})
    )
    if shuffle:
        digest = hashlib.sha256(repr(key).encode()).digest()
        return with_source(batch, "shuffled", int.from_bytes(digest[:8], "little"), unit="row")
    path, offset, index = placed[0][0]
    return with_source(batch, path, offset + index, unit="row")


def _commit(pending: PendingFiles, plan: RankingPlan, places: _Places, split: str) -> dict:
    """The records, then the metadata and `_SUCCESS`: in one transaction when one folder holds
    both (see `beam_tensorize.job.transaction`), else the data folder's commit, then the
    metadata folder's. A killed run leaves the earlier output whole."""
    if places.root is not None:
        with Transaction(places.root) as txn:
            written = commit_files(pending.written, pending.plan, pending.checked, txn=txn)
            if written["skipped"]:
                txn.abort()
                return written
            _stage_metadata(txn, plan, places, split, written)
            txn.mark(posixpath.join(places.root, SUCCESS_FILE))  # last: the output is complete
        return {**written, "metadata": posixpath.join(places.metadata, _METADATA_NAME)}
    written = commit_files(pending.written, pending.plan, pending.checked)  # data, _SUCCESS last
    if written["skipped"] or not places.write_metadata:
        return written
    with Transaction(places.metadata) as txn:
        if pending.plan.save_mode == "ignore" and FileSystems.exists(
            posixpath.join(places.metadata, _METADATA_NAME)
        ):
            txn.abort()
            return written
        _stage_metadata(txn, plan, places, split, written)
    return {**written, "metadata": posixpath.join(places.metadata, _METADATA_NAME)}


def _stage_metadata(txn: Transaction, plan: RankingPlan, places: _Places, split: str, written: dict) -> None:
    document = plan.output_metadata()
    document["data"] = {
        split: {
            "files": written["files"],
            "numRecords": written["numRecords"],
            "format": "avro" if plan.record_format == "avro" else "tfrecord",
        }
    }
    stage_metadata_files(txn, places.metadata, document)
    txn.write_text(
        posixpath.join(places.metadata, CONTENT_FEATURE_LIST), "\n".join(document["contentFeatures"])
    )
