"""`tensorize_spark`: the whole tensorize job on PySpark, with the Beam job's output.

The job runs the kernels the Beam transforms run on the Beam reader's record batches: each
Spark task reads its input splits itself (`beam_tensorize.job.reading`), or, with
`num_shards`, `DataFrame.mapInArrow` runs them on the batches the table data source gives
(`beam_tensorize.spark.table_source`):

1. train mode: read only the columns feature lists are made of, extract those tensors and
   count each batch's entries (`partial_counts`); Spark sums the counts per entry, then each
   list's entries meet on one executor, where `build_feature_list` orders the list and cuts
   it to its `vocabSizeCap`. Validation / test mode loads the lists of an earlier train run
   instead; external lists override both.
2. read everything, extract, hash, look up the lists (broadcast), encode Examples (bad rows
   become dead letters); each task writes the records of its input split into files of its
   own under `<split>/_temporary/<id>/` (`SplitFiles`, as the Beam sink does): no shuffle.
   With `num_shards`, records get their folder and shard as the Beam `WriteTFRecord` does
   (`shard_chunks`), Spark shuffles them by (folder, shard) and sorts them in the Beam sink's
   file order, and one task writes each file.
3. the driver finishes with the Beam job's own steps: dead letters and the bad-record check,
   the run report (staged), then one commit (save modes; split files named in split order) of
   the data, metadata, feature lists, report and dead letters, `_SUCCESS` last.

Train mode reads the input twice (counting, then encoding), as a Spark ML estimator's fit
and transform do; neither pass holds the input in memory.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import json
import logging
import operator
import os
import pickle
import posixpath
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
from pyspark import RDD, TaskContext
from pyspark.sql import SparkSession

from beam_tensorize.config.model import TensorConfig, TensorizeConfig

# The Beam sink's commit protocol (temporary folder, save modes, moves), used as it is.
from beam_tensorize.job.commit import (
    TEMP_FOLDER,
    CommitPlan,
    PendingFiles,
    check_target,
    delete_temporary,
)
from beam_tensorize.job.feature_lists import (
    FEATURE_LIST_FOLDER,
    merge_feature_lists,
    read_feature_lists,
)
from beam_tensorize.job.files import create_file

# The Beam job's own finishing steps (dead letters and the ratio check, the `_SUCCESS`
# marker, the split's metadata entry, the summary), called as they are.
from beam_tensorize.job.finish import (
    BAD,
    DEAD_LETTER_FOLDER,
    GOOD,
    OFF_SHAPE,
    MetadataInputs,
    appending_to,
    check_bad_records,
    commit_split,
    dead_letter_json,
    extra_layouts,
    first_layouts,
    ignoring_existing,
)
from beam_tensorize.job.preflight import check_same_config
from beam_tensorize.job.reading import plan_splits, read_split_batches, unified_schema
from beam_tensorize.job.report import draw_page_figures_ahead, start_page_renderer, write_report
from beam_tensorize.job.spec import TensorizeSpec
from beam_tensorize.job.transaction import staging_folder
from beam_tensorize.kernels.features.conversion import layout_of
from beam_tensorize.kernels.features.counting import ListTensorExtractor, feature_list_columns
from beam_tensorize.kernels.features.extract import extract_tensors
from beam_tensorize.kernels.features.hashing import hash_tensors, hash_tensors_with_distinct
from beam_tensorize.kernels.features.vocab import (
    FeatureList,
    FeatureListLookup,
    build_feature_list,
    feature_list_caps,
    lists_per_tensor,
    partial_counts,
)
from beam_tensorize.kernels.formats import AUTO, get_format
from beam_tensorize.kernels.metadata import integer_maxima, integer_tensor_names, merge_maxima
from beam_tensorize.kernels.output import get_output_format
from beam_tensorize.kernels.output.dead_letters import (
    SERIALIZED_COLUMN,
    encode_with_dead_letters,
    off_shape_of,
)
from beam_tensorize.kernels.output.shards import ROWS, shard_chunks, shuffle_rows
from beam_tensorize.kernels.output.split_files import WrittenFile
from beam_tensorize.kernels.partitions import with_partition_ids
from beam_tensorize.kernels.report.statistics import Statistics, list_vocabularies
from beam_tensorize.spark._compat import from_arrow_schema
from beam_tensorize.spark.table_source import TABLE_FORMAT, TableDataSource, source_batches

__all__ = ["tensorize_spark"]

_LOGGER = logging.getLogger(__name__)

# Rows of the encoding step: a record, a dead letter, the extra columns' layouts of a batch, the
# integer tensors' largest values, or a split's run-report statistics.
_RECORD, _DEAD_LETTER, _LAYOUTS, _MAXIMA, _STATISTICS, _OFF_SHAPE = 0, 1, 2, 3, 4, 5
_ENCODED = pa.schema(
    [
        pa.field("kind", pa.int32()),
        pa.field("path", pa.string()),  # the record's partition folder ("" unpartitioned)
        pa.field("shard", pa.int32()),
        pa.field("key", pa.string()),  # its batch's order key (source tag)
        pa.field("batch", pa.int64()),  # tells apart batches of equal keys (a file read twice)
        pa.field("pos", pa.int64()),  # its position in its chunk
        pa.field("payload", pa.binary()),
    ]
)
_WRITTEN = pa.schema(
    [
        pa.field("kind", pa.int32()),
        pa.field("path", pa.string()),
        pa.field("shard", pa.int32()),
        pa.field("key", pa.string()),  # a split file's key (file order in its folder)
        pa.field("payload", pa.binary()),  # a file's temporary path, a dead letter, layouts
        pa.field("count", pa.int64()),
    ]
)


def _absolute_paths(spec: TensorizeSpec) -> TensorizeSpec:
    """The spec with its local paths made absolute on the driver: a cluster's executors would
    resolve a relative path in their own work folders."""

    def absolute(path: str) -> str:
        return path if "://" in path else os.path.abspath(path)

    return dataclasses.replace(
        spec, output=absolute(spec.output), inputs=tuple(absolute(p) for p in spec.inputs)
    )


def tensorize_spark(
    spark: SparkSession,
    input_paths: str | Sequence[str] | TensorizeSpec,
    config: TensorizeConfig | str | os.PathLike | None = None,
    output: str | None = None,
    mode: str | None = None,
    **settings,
) -> dict:
    """Tensorize Avro, Parquet, ORC or TFRecord files on Spark into the output of the Beam
    `Tensorize` job.

    The settings are a `TensorizeSpec`'s (`beam_tensorize.job.spec`), the object the Beam job
    and the CLI are driven by, checked by the same code with the same messages: give the
    spec's fields as keywords (`num_shards=4`, `save_mode="overwrite"`, `report="html"`, ...;
    `mode` is its `execution_mode`), or a spec itself, with keyword overrides of its fields.
    For the same input and settings the output is the Beam job's, byte for byte: the data files
    (each record in the same file, in the same order), `metadata/tensor_metadata.json` (and
    `metadata/schema.pbtxt` for TFRecord output), `featureList/<tensor>`,
    `metadata/featureListCounts/`, `deadLetters/<split>/`, the run report
    `report/<split>.json|html` and `<split>.stats.pb` when asked for (the same statistics,
    `timings` aside) and `_SUCCESS`, written last. Files are written into
    `<split>/_temporary/` and moved into place only when everything else succeeded, so a
    failed run leaves the earlier output as it was.

    On Spark: each task reads one input split (`split_bytes`), and without `num_shards` writes
    its records into files of its own, with no shuffle (`num_shards=N`: exactly N files per
    folder, through a shuffle); with `report`, each task gathers its split's statistics as it
    encodes it and the driver merges them and stages the report. With save mode "ignore" and
    data in the split folder nothing runs or is written. Deduplication and `skip_conversion`
    run on the Beam job only.

    Args:
        spark: the session to run on.
        input_paths: input files: a path or glob, or a list of them (local, gs://, s3://); or a
            `TensorizeSpec` (its `inputs` are read; `config`, `output`, `mode` and `settings`
            given change its fields).
        config: the parsed config, or the path of a config file.
        output: the output folder.
        mode: "train" (None: train, or the spec's), "validation" or "test": the split folder.
        **settings: the other fields of `TensorizeSpec`.

    Returns:
        The Beam job's summary: `{"output", "split", "files", "numRecords", "badRecords",
        "metadata"}` (`{"output", "split", "skipped": True, "files": [], "numRecords": 0}`
        when save mode "ignore" found data).

    Raises:
        TypeError: a setting `TensorizeSpec` has no field for, or both `mode` and
            `execution_mode`.
        ValueError: a bad setting (before anything runs), or too many bad records.
        FileExistsError: save mode "error" and the split folder holds files.
        FileNotFoundError: an input pattern matches nothing.

    Example::

        from pyspark.sql import SparkSession
        from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
        from beam_tensorize.spark import tensorize_spark

        spark = SparkSession.builder.master("local[2]").getOrCreate()
        result = tensorize_spark(spark, SAMPLE_AVRO, SAMPLE_CONFIG, "out", num_shards=2)
        result["numRecords"]  # 300
    """
    spec = _job_spec(spark, input_paths, config, output, mode, settings)
    out, split, split_dir, columns = spec.output, spec.split, spec.split_dir, spec.input_columns
    if ignoring_existing(split_dir, spec.save_mode):
        _LOGGER.info("%s holds data; save mode 'ignore' writes nothing", split_dir)
        return {"output": out, "split": split, "skipped": True, "files": [], "numRecords": 0}

    checked = check_target(split_dir, spec.save_mode)
    if spec.report == "html":  # matplotlib's import and a first plot, beside the job
        start_page_renderer()
    fmt = None if spec.input_format == AUTO else get_format(spec.input_format)
    splits = plan_splits(spec.inputs, fmt, spec.split_bytes, dead_letters=True)
    previous = appending_to(out, split, spec.save_mode)  # appending: the split's entry until now
    lists = _feature_lists(spark, splits, spec, previous)
    lists_broadcast = spark.sparkContext.broadcast(lists)
    plan = _commit_plan(spec)
    try:
        encode = _EncodeBatches(spec, lists_broadcast)
        schema = unified_schema(splits, columns)  # one schema for all files, or a clear error
        transform = dataclasses.replace(spec.transform_settings, input_schema=schema).to_json()
        if spec.num_shards is None:  # each task reads its split and writes its files: no shuffle
            write = _EncodeAndWrite(encode, plan, checked["skip"], columns, schema)
            written = _split_tasks(spark, splits).mapPartitions(write).collect()
        else:
            written = _encode_and_write_shards(spark, spec, columns, encode, plan)
        return _finish(written, spec, plan, checked, lists, previous, transform)
    finally:
        delete_temporary(plan)  # gone already after a commit
        lists_broadcast.destroy()


def _job_spec(
    spark: SparkSession,
    input_paths: str | Sequence[str] | TensorizeSpec,
    config: TensorizeConfig | str | os.PathLike | None,
    output: str | None,
    mode: str | None,
    settings: dict,
) -> TensorizeSpec:
    """The job's spec from `tensorize_spark`'s arguments, checked before anything runs."""
    fields = {f.name for f in dataclasses.fields(TensorizeSpec)}
    unknown = sorted(set(settings) - fields)
    if unknown:
        raise TypeError(
            f"tensorize_spark: no setting {', '.join(map(repr, unknown))}; the settings are "
            f"TensorizeSpec's: {', '.join(sorted(fields))}"
        )
    if mode is not None:
        if "execution_mode" in settings:
            raise TypeError("tensorize_spark: give mode or execution_mode, not both")
        settings["execution_mode"] = mode
    if isinstance(input_paths, TensorizeSpec):
        given = {"config": config, "output": output}
        changes = {**{k: v for k, v in given.items() if v is not None}, **settings}
        spec = input_paths.replace(**changes) if changes else input_paths
    else:
        spec = TensorizeSpec(config, output, inputs=input_paths, **settings)
    if not spec.inputs:
        raise ValueError("tensorize_spark needs input files (the spec's inputs)")
    if not spark.sparkContext.master.startswith("local"):
        spec = _absolute_paths(spec)
    if spec.dedup_block_size or spec.skip_conversion:
        raise ValueError("deduplication and skip_conversion run on the Beam job only; run them with the CLI")
    check_same_config(spec)
    return spec


def _commit_plan(spec: TensorizeSpec) -> CommitPlan:
    """The commit plan of a run: its own temporary folder under the split folder."""
    split_dir = spec.split_dir
    return CommitPlan(
        split_dir, posixpath.join(split_dir, TEMP_FOLDER, uuid.uuid4().hex), spec.save_mode, False,
        spec.compression, spec.num_shards, spec.output_format, bool(spec.folder_columns),
    )  # fmt: skip


def _encode_and_write_shards(
    spark: SparkSession, spec: TensorizeSpec, columns, encode: _EncodeBatches, plan: CommitPlan
) -> list:
    """With `num_shards`: encode the source's batches, shuffle them by file, write a file per task."""
    spark.dataSource.register(TableDataSource)
    rows = (
        spark.read.format(TABLE_FORMAT)
        .option("format", spec.input_format)
        .option("columns", ",".join(columns))
        .option("provenance", "true")
        .option("batchRows", str(spec.batch_rows))
        .option("splitBytes", str(spec.split_bytes))
        .load(list(spec.inputs))
    )
    return (
        rows.mapInArrow(encode, from_arrow_schema(_ENCODED))
        .repartition(spec.num_shards, "path", "shard")
        .sortWithinPartitions("path", "shard", "key", "batch", "pos")
        .mapInArrow(_WriteFiles(plan), from_arrow_schema(_WRITTEN))
        .collect()
    )


def _split_tasks(spark: SparkSession, splits: list) -> RDD:
    """One Spark task per input split (the tasks read their splits themselves)."""
    return spark.sparkContext.parallelize(splits, max(1, len(splits)))


def _feature_lists(
    spark: SparkSession, splits: list, spec: TensorizeSpec, previous: dict | None
) -> dict[str, FeatureList]:
    """The lists the records are indexed with: built (train; appending to train data, its
    lists) or loaded, then external ones."""
    config, out, shared, external = (
        spec.config,
        spec.output,
        spec.shared_feature_lists,
        spec.external_feature_lists,
    )
    names = config.tensor_names
    if spec.execution_mode == "train" and previous is None:
        own = _build_feature_lists(spark, splits, spec)
    else:
        own = read_feature_lists(
            [posixpath.join(out, FEATURE_LIST_FOLDER)], names, required=False, metadata_dir=out
        )
    if external:
        found = read_feature_lists([external], names, strict=True, required=True)
        return merge_feature_lists(own, found, config, shared)
    return own


def _build_feature_lists(spark: SparkSession, splits: list, spec: TensorizeSpec) -> dict[str, FeatureList]:
    """Read only the columns the lists are made of (chosen per file), count entries per batch
    (kernel), sum the counts per entry (Spark), order each list and cut it to its
    `vocabSizeCap` (kernel, on an executor)."""
    config = spec.config
    keys = spec.feature_list_keys
    if not keys:
        return {}
    caps = feature_list_caps(config, keys)
    listed = tuple(t for t in config.tensors if t.name in keys)
    counted = _split_tasks(spark, splits).mapPartitions(
        _CountEntries(listed, keys, spec.batch_rows, spec.term_only_feature_lists)
    )
    # As the Beam job: sum per (list, entry), then one list's distinct entries meet to be ordered
    # and cut to its cap (kernels). Plain RDD steps: the counts never pass through Spark SQL.
    parallelism = max(1, spark.sparkContext.defaultParallelism)
    built = dict(
        counted.map(lambda c: ((c[0], c[1]), c[2]))
        .reduceByKey(operator.add, parallelism)
        .map(lambda kv: (kv[0][0], (kv[0][1], kv[1])))
        .groupByKey(parallelism)
        .map(lambda grouped: (grouped[0], build_feature_list(grouped[1], caps.get(grouped[0]))))
        .collect()
    )
    return lists_per_tensor(built, keys)


def _finish(
    written, spec: TensorizeSpec, plan: CommitPlan, checked: dict, lists, previous, transform
) -> dict:
    """The driver's part once the files are written: the Beam job's last steps, in its order."""
    files: list[tuple[str, int | str, str, int]] = []
    bad_lines: list[str] = []
    layouts: list[tuple] = []
    maxima: list[dict] = []
    off_shape: list[tuple] = []
    statistics: list[Statistics] = []
    for row in written:
        if row["kind"] == _RECORD:
            key = row["shard"] if plan.num_shards else row["key"]
            files.append((row["path"], key, row["payload"].decode(), row["count"]))
        elif row["kind"] == _DEAD_LETTER:
            bad_lines.append(row["payload"].decode())
        elif row["kind"] == _MAXIMA:
            maxima.append(json.loads(row["payload"]))
        elif row["kind"] == _OFF_SHAPE:
            off_shape.append((OFF_SHAPE, json.loads(row["payload"])))
        elif row["kind"] == _STATISTICS:
            statistics.append(pickle.loads(row["payload"]))
        else:
            layouts.append(pickle.loads(row["payload"]))
    document = None
    if spec.report != "none":  # complete now: the page's plots are drawn while the files are committed
        document = _merged(statistics, bad_lines, spec.config).document()
        if spec.report == "html":
            draw_page_figures_ahead(document["tensors"])
    good = sum(count for *_, count in files)
    grouped = (0, [(GOOD, good), *off_shape, *((BAD, line) for line in bad_lines)])
    counts = check_bad_records(
        grouped, posixpath.join(spec.output, DEAD_LETTER_FOLDER, spec.split), spec.max_bad_records_ratio
    )
    run = uuid.uuid4().hex
    if document is not None:  # staged, then committed with the rest (as the Beam job)
        write_report(document, spec.output, spec.split, spec.execution_mode, spec.report, spec.drift_threshold,
                     staging_folder(spec.output, run))  # fmt: skip
    inputs = MetadataInputs(
        lists,
        spec.execution_mode == "train",
        first_layouts(layouts) if spec.extra_names else (),
        merge_maxima(maxima) if spec.execution_mode == "train" else None,
        transform,
        lists_from_output=spec.execution_mode != "train" or previous is not None,
    )
    return commit_split(spec, run, PendingFiles(files, plan, checked), counts, inputs)


def _merged(statistics: Sequence[Statistics], bad_lines: Sequence[str], config) -> Statistics:
    """The splits' statistics as one, with every dead letter (undecodable records too)."""
    merged = Statistics(config)
    for part in statistics:
        merged.merge(part)
    for line in bad_lines:
        merged.add_dead_letter(json.loads(line), line)
    return merged


def _tensor_batches(
    batches: Iterator[pa.RecordBatch],
    tensors,
    extra=(),
    statistics: Statistics | None = None,
    vocabularies: Mapping[str, pa.Array] | None = None,
) -> Iterator[pa.RecordBatch]:
    """ExtractFeatures + HashFeatures on the reader's batches; with `statistics`, also the run
    report's statistics of the extracted batches and of what the hashing saw (as the Beam
    job's `ComputeStatistics` gathers them)."""
    for batch in batches:
        extracted = extract_tensors(batch, tensors, extra)
        if statistics is None:
            yield hash_tensors(extracted, tensors)
            continue
        statistics.add_timed_batch(extracted, vocabularies, hashes=False)
        hashed, seen = hash_tensors_with_distinct(extracted, tensors)
        statistics.add_distinct_hashes(seen)
        yield hashed


class _CountEntries:
    """mapPartitions function over input splits: (feature-list key, entry, count) of every
    batch, reading only the columns the lists are made of."""

    def __init__(
        self, tensors: tuple[TensorConfig, ...], keys: Mapping[str, str], batch_rows: int, term_only: bool
    ):
        self._tensors = tensors
        self._keys = dict(keys)
        self._batch_rows = batch_rows
        self._term_only = term_only

    def __call__(self, splits: Iterator[tuple]) -> Iterator[tuple[str, str | None, int]]:
        extract = ListTensorExtractor(self._tensors)
        columns = functools.partial(feature_list_columns, self._tensors)
        chosen: dict[str, list[str]] = {}
        for fmt, split in splits:
            for batch in read_split_batches(fmt, split, columns, self._batch_rows, chosen):
                extracted = None if isinstance(batch, dict) else extract(batch)
                if extracted is not None:
                    for (key, entry), count in partial_counts(
                        extracted, self._tensors, self._keys, self._term_only
                    ):
                        yield key, entry, count


class _EncodeBatches:
    """mapInArrow function: every record with its file and place in it, the dead letters, and
    the extra columns' layouts of each batch."""

    def __init__(self, spec: TensorizeSpec, lists_broadcast):
        """`spec`: the job's settings; `lists_broadcast`: the run's feature lists, broadcast."""
        #: The job's settings (the plain ones are read from it as they are).
        self.spec = spec
        self._lists = lists_broadcast
        #: The config whose run-report statistics each split gathers (None: no report).
        self._statistics_of = spec.config if spec.report != "none" else None
        #: (field, number of partitions) of Avro2TF's partition ids, or None.
        self._partition_ids = (
            (spec.partition_field_name, spec.num_partitions) if spec.partition_field_name else None
        )
        #: Write each batch's records in a seeded pseudo-random order (None: input order).
        self._shuffle_seed = spec.shuffle_seed if spec.shuffle else None
        #: The integer tensors whose largest values the metadata records (train mode).
        self._maxima_of = (
            tuple(integer_tensor_names(spec.config.tensors)) if spec.execution_mode == "train" else ()
        )
        #: The partition columns (left out of the records).
        self.partition_by = spec.folder_columns
        self._layouts = tuple(layout_of(t) for t in spec.config.tensors if t.name not in self.partition_by)

    def encoded(self, batches: Iterator[pa.RecordBatch]) -> Iterator[tuple[int, object]]:
        """(kind, item) for each of the reader's batches: its extra columns' layouts (pickled),
        its encoded records (a batch), and its dead letters (JSON lines)."""
        lookup = FeatureListLookup(self._lists.value)
        statistics = vocabularies = None
        if self._statistics_of is not None:
            statistics = Statistics(self._statistics_of)
            vocabularies = list_vocabularies(self._lists.value)
        for batch in _tensor_batches(
            batches, self.spec.config.tensors, self.spec.extra_columns, statistics, vocabularies
        ):
            if self._partition_ids is not None:
                batch = with_partition_ids(batch, *self._partition_ids)
            if self.spec.extra_names:
                yield _LAYOUTS, pickle.dumps(extra_layouts(batch, self.spec.extra_names))
            if self._maxima_of:
                yield _MAXIMA, json.dumps(integer_maxima(batch, self._maxima_of)).encode()
            indexed = lookup.apply(
                batch, self.spec.config.tensors, self.spec.filter_zeros, self.spec.discard_unknown_entries
            )
            examples, dead_letters = encode_with_dead_letters(
                indexed, self._layouts, self.partition_by, self.spec.output_format, self.spec.check_shapes
            )
            off_shape = off_shape_of(examples)
            if off_shape:
                yield _OFF_SHAPE, json.dumps(off_shape).encode()
            if self._shuffle_seed is not None:
                examples = shuffle_rows(examples, self._shuffle_seed)
            yield _RECORD, examples
            if dead_letters:
                yield _DEAD_LETTER, [dead_letter_json(d).encode() for d in dead_letters]
        if statistics is not None:
            yield _STATISTICS, pickle.dumps(statistics)

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        partition = TaskContext.get().partitionId()
        columnar = get_output_format(self.spec.output_format).columnar
        index = -1
        for kind, item in self.encoded(source_batches(batches)):
            if kind != _RECORD:
                yield _rows(
                    kind, "", -1, "", 0, pa.array(item if kind == _DEAD_LETTER else [item], pa.binary())
                )
                continue
            index += 1
            chunks = shard_chunks(
                item,
                self.spec.num_shards,
                self.partition_by,
                ROWS if columnar else "ByteArray",
                None if columnar else SERIALIZED_COLUMN,
            )
            for (path, shard), (key, records) in chunks:
                # Columnar files: one row per chunk, the chunk's rows as an Arrow IPC stream.
                payload = pa.array([_ipc(records)], pa.binary()) if columnar else records.cast(pa.binary())
                yield _rows(_RECORD, path, shard, key, (partition << 32) + index, payload)


class _EncodeAndWrite:
    """mapPartitions function over input splits: reads each split, encodes its batches and
    writes the records into the split's own files (`SplitFiles`, as the Beam sink does),
    reporting each file with its key; passes dead letters and layouts on."""

    def __init__(
        self, encode: _EncodeBatches, plan: CommitPlan, skip: bool, columns, schema: pa.Schema | None
    ):
        """`skip`: the save mode writes nothing; `columns`: the input columns read; `schema`:
        the input's unified schema."""
        self._encode = encode
        self._plan = plan
        self._skip = skip
        self._columns = columns
        self._schema = schema

    def __call__(self, splits: Iterator[tuple]) -> Iterator[dict]:
        files = self._plan.split_files(
            self._encode.partition_by, "ByteArray", SERIALIZED_COLUMN, self._encode.spec.max_records_per_file
        )
        written: list[WrittenFile] = []
        try:
            for fmt, split in splits:
                unreadable: list[dict] = []  # the records that did not decode
                batches = read_split_batches(
                    fmt, split, self._columns, self._encode.spec.batch_rows, None, self._schema
                )
                good = _set_aside(batches, unreadable.append)
                for kind, item in self._encode.encoded(good):
                    if kind == _RECORD:
                        if not self._skip:
                            written += files.write(item)
                    else:
                        for payload in item if kind == _DEAD_LETTER else [item]:
                            yield {"kind": kind, "payload": payload}
                for letter in unreadable:
                    yield {"kind": _DEAD_LETTER, "payload": dead_letter_json(letter).encode()}
            written += files.close()
        except BaseException:
            files.abort()
            raise
        for f in written:
            yield {
                "kind": _RECORD,
                "path": f.folder,
                "key": f.key,
                "payload": f.temp_path.encode(),
                "count": f.count,
            }


def _set_aside(
    items: Iterator[pa.RecordBatch | dict], keep: Callable[[dict], None]
) -> Iterator[pa.RecordBatch]:
    """The batches of a reader's output; its dead letters go to `keep`."""
    for item in items:
        if isinstance(item, dict):
            keep(item)
        else:
            yield item


def _ipc(batch: pa.RecordBatch) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def _from_ipc(data: bytes) -> pa.RecordBatch:
    return pa.ipc.open_stream(data).read_next_batch()


def _rows(kind: int, path: str, shard: int, key: str, batch: int, payload: pa.Array) -> pa.RecordBatch:
    n = len(payload)
    return pa.RecordBatch.from_arrays(
        [
            pa.array(np.full(n, kind, np.int32)),
            pa.array([path] * n, pa.string()),
            pa.array(np.full(n, shard, np.int32)),
            pa.array([key] * n, pa.string()),
            pa.array(np.full(n, batch, np.int64)),
            pa.array(np.arange(n, dtype=np.int64)),
            payload,
        ],
        schema=_ENCODED,
    )


class _WriteFiles:
    """mapInArrow function over records sorted by (path, shard, key, batch, pos): writes each
    file of the partition into the temporary folder (unless the save mode skips the write)
    and reports its record count; passes dead letters and layouts through."""

    def __init__(self, plan: CommitPlan):
        self._plan = plan

    def __call__(self, batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
        others: list[pa.RecordBatch] = []

        def runs() -> Iterator[tuple[tuple[str, int], pa.Array]]:
            """((path, shard), records) for each run of one file's records; keeps the others."""
            for batch in batches:
                kinds = batch.column("kind").to_numpy(zero_copy_only=False)
                if (kinds != _RECORD).any():
                    others.append(batch.filter(pa.array(kinds != _RECORD)))
                    batch = batch.filter(pa.array(kinds == _RECORD))
                paths = batch.column("path").to_pylist()
                shards = batch.column("shard").to_pylist()
                places = list(zip(paths, shards))
                starts = [i for i in range(len(places)) if i == 0 or places[i] != places[i - 1]]
                for start, stop in itertools.pairwise([*starts, len(places)]):
                    yield places[start], batch.column("payload").slice(start, stop - start)

        fmt = get_output_format(self._plan.file_format)
        for (path, shard), group in itertools.groupby(runs(), key=lambda run: run[0]):
            temp_path = self._plan.temp_path(path, shard)
            if fmt.columnar:
                chunks = [("", _from_ipc(payload)) for _, records in group for payload in records.to_pylist()]
            else:
                chunks = [("", records) for _, records in group]
            with create_file(temp_path) as raw:
                count = fmt.write_file(raw, chunks, self._plan.compression)
            yield pa.RecordBatch.from_arrays(
                [pa.array([_RECORD], pa.int32()), pa.array([path]), pa.array([shard], pa.int32()),
                 pa.array([""]), pa.array([temp_path.encode()], pa.binary()), pa.array([count], pa.int64())],
                schema=_WRITTEN,
            )  # fmt: skip
        for batch in others:
            yield pa.RecordBatch.from_arrays(
                [batch.column("kind"), batch.column("path"), batch.column("shard"), batch.column("key"),
                 batch.column("payload"), pa.array(np.zeros(batch.num_rows, np.int64))],
                schema=_WRITTEN,
            )  # fmt: skip
