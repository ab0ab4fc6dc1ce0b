"""`PrepRankingData`: a tensorized output's rows grouped by query into ranking records
(Avro2TF's PrepRankingData job; the rules are in `beam_tensorize.kernels.ranking`)."""

from __future__ import annotations

import posixpath
from collections.abc import Iterable, Mapping

import apache_beam as beam
import pyarrow as pa
from apache_beam.transforms.display import DisplayDataItem

from beam_tensorize.io.avro import WriteAvro
from beam_tensorize.io.read_tfrecord import ReadTFRecord
from beam_tensorize.io.tfrecord import WriteTFRecord
from beam_tensorize.job.commit import SUCCESS_FILE, PendingFiles, commit_files
from beam_tensorize.job.transaction import Transaction
from beam_tensorize.kernels.metadata import METADATA_FILE, metadata_json
from beam_tensorize.kernels.provenance import source_of, with_source
from beam_tensorize.kernels.ranking import RECORD_FORMATS, RankingPlan, RankingSettings

__all__ = ["PrepRankingData"]


class PrepRankingData(beam.PTransform):
    """Group the records of a tensorized split by query and write one ranking record per group,
    with the metadata updated for the grouped tensors.

    Applied to a pipeline (`p | PrepRankingData(...)`), it reads `<input_dir>/<split>/` with the
    input's metadata, groups rows by `settings.group_ids` (documents in input order: file, then
    position), and writes `<output_dir>/<split>/part-*.tfrecord` (`num_shards` files; groups in
    the order of their first row) and `<output_dir>/metadata/tensor_metadata.json`. The same
    input gives the same files on every run.

    Args:
        input_dir: a tensorized output folder (with `metadata/tensor_metadata.json`).
        output_dir: where the grouped records go.
        metadata: the input's metadata document (`beam_tensorize.job.metadata.read_metadata`).
        settings: group ids, list size, padding (`RankingSettings`).
        split: the split folder to read and write (`trainingData`, ...).
        record_format: "example" (one Example of lists per group), "elwc" (TF-Ranking's
            ExampleListWithContext: query features as the context, an Example per document)
            or "avro" (Avro2TF's output: one Avro record per group).
        num_shards: files to write.
        save_mode: as `WriteTFRecord`.

    Example::

        metadata = read_metadata("tensorized")
        with beam.Pipeline() as p:
            _ = p | PrepRankingData("tensorized", "ranking", metadata, RankingSettings(("qid",), 10))
    """

    def __init__(
        self,
        input_dir: str,
        output_dir: str,
        metadata: Mapping,
        settings: RankingSettings,
        split: str = "trainingData",
        record_format: str = "example",
        num_shards: int = 1,
        save_mode: str = "error",
    ):
        super().__init__()
        if record_format not in RECORD_FORMATS:
            raise ValueError(f"record_format {record_format!r} is not one of {', '.join(RECORD_FORMATS)}")
        if split not in metadata.get("data", {}):
            raise ValueError(f"{input_dir} has no {split} split; it has {sorted(metadata.get('data', {}))}")
        self._plan = RankingPlan(metadata, settings)
        self._input = posixpath.join(input_dir.rstrip("/"), split)
        self._output = output_dir.rstrip("/")
        self._split = split
        self._format = record_format
        self._num_shards = num_shards
        self._save_mode = save_mode
        self._compression = {"GZIP": "gzip", "ZLIB": "zlib"}.get(metadata.get("compression"), "none")

    def display_data(self) -> dict:
        settings = self._plan.settings
        return {
            "group_ids": DisplayDataItem(", ".join(settings.group_ids), label="Group ids"),
            "max_size": DisplayDataItem(settings.max_size, label="Documents per group"),
            "record_format": DisplayDataItem(self._format, label="Record format"),
        }

    def expand(self, pbegin):
        plan = self._plan
        rows = (
            pbegin
            | "ReadRecords"
            >> ReadTFRecord(self._input, schema=plan.read_schema(), compression=self._compression)
            | "RowsByGroup" >> beam.FlatMap(_rows_by_group, plan)
        )
        records = (
            rows
            | "GroupRows" >> beam.GroupByKey()
            | "RankingRecord" >> beam.Map(_ranking_record, plan, self._format)
        )
        folder = posixpath.join(self._output, self._split)
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
        return pending | "Commit" >> beam.Map(_commit, plan, self._output, self._split, self._format)


def _rows_by_group(batch: pa.RecordBatch, plan: RankingPlan) -> Iterable[tuple]:
    """(group key, ((file, offset, row), row)) for every row of a read batch."""
    path, offset = source_of(batch) or ("", 0)
    for index, row in enumerate(batch.to_pylist()):
        yield plan.group_key(row), ((path, offset, index), row)


def _ranking_record(grouped: tuple, plan: RankingPlan, record_format: str) -> pa.RecordBatch:
    """One group's record, tagged with its first row's place (the files keep input order)."""
    _, placed = grouped
    placed = sorted(placed, key=lambda item: item[0])
    rows = [row for _, row in placed]
    path, offset, index = placed[0][0]
    if record_format == "avro":
        return with_source(plan.avro_batch(rows), path, offset + index, unit="row")
    if record_format == "example":
        record = plan.encode(plan.combine(rows))
    else:
        record = plan.elwc(rows)
    batch = pa.RecordBatch.from_pydict({"record": pa.array([record], pa.binary())})
    return with_source(batch, path, offset + index, unit="row")


def _commit(
    pending: PendingFiles, plan: RankingPlan, output_dir: str, split: str, record_format: str
) -> dict:
    """The records, the metadata and `_SUCCESS` in one transaction (see
    `beam_tensorize.job.transaction`): a killed run leaves the earlier output whole."""
    with Transaction(output_dir) as txn:
        written = commit_files(pending.written, pending.plan, pending.checked, txn=txn)
        if written["skipped"]:
            txn.abort()
            return written
        document = plan.output_metadata(record_format)
        document["data"] = {
            split: {
                "files": written["files"],
                "numRecords": written["numRecords"],
                "format": "avro" if record_format == "avro" else "tfrecord",
            }
        }
        txn.write_text(posixpath.join(output_dir, METADATA_FILE), metadata_json(document))
        txn.write_text(
            posixpath.join(output_dir, "metadata", "content_feature_list"),
            "\n".join(document["contentFeatures"]),
        )
        txn.mark(posixpath.join(output_dir, SUCCESS_FILE))  # last: the output is complete
    return {**written, "metadata": posixpath.join(output_dir, METADATA_FILE)}
