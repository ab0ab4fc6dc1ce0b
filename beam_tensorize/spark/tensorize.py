"""`tensorize_spark`: the whole tensorize job on PySpark, with the Beam job's output.

The job runs the kernels the Beam transforms run on the Beam reader's record batches: each
Spark task reads its input splits itself (`beam_tensorize.job.reading`), or, with
`num_shards`, `DataFrame.mapInArrow` runs them on the batches the table data source gives
(`beam_tensorize.spark.table_source`):

1. train mode: read only the columns feature lists are made of, extract those tensors and
   count each batch's entries (`partial_counts`); reading the input once (`input_passes`,
   by default on a local disk, without `num_shards`), read every column, extract the
   tensors, count, and keep each split's extracted batches in a file (`_kept`). Spark sums
   the counts per entry, then each list's entries meet on one executor, where
   `build_feature_list` orders the list and cuts it to its `vocabSizeCap`. Validation / test
   mode loads the lists of an earlier train run instead; external lists override both
   (`_feature_lists`).
2. read everything (or a split's kept batches), extract, hash, look up the lists (broadcast),
   encode Examples (bad rows become dead letters); each task writes the records of its input
   split into files of its own under `<split>/_temporary/<id>/` (`SplitFiles`, as the Beam
   sink does): no shuffle. With `num_shards`, records get their folder and shard as the Beam
   `WriteTFRecord` does (`shard_chunks`), Spark shuffles them by (folder, shard) and sorts
   them in the Beam sink's file order, and one task writes each file (`_encode`, `_write`;
   the rows the tasks hand on: `_tasks`).
3. the driver finishes with the Beam job's own steps: dead letters and the bad-record check,
   the run report (staged), then one commit (save modes; split files named in split order) of
   the data, metadata, feature lists, report and dead letters, `_SUCCESS` last (`_finish`).

Train mode reads the input once as Avro2TF with `--enable-cache` does (its extracted rows
kept on disk, not in memory), or twice (counting, then encoding), as a Spark ML estimator's
fit and transform do; neither holds the input in memory.
"""

from __future__ import annotations

import dataclasses
import logging
import os
import uuid
from collections.abc import Sequence

from pyspark.sql import SparkSession

from beam_tensorize.config.model import TensorizeConfig
from beam_tensorize.job.commit import check_target, delete_temporary
from beam_tensorize.job.finish import appending_to, ignoring_existing
from beam_tensorize.job.preflight import check_same_config
from beam_tensorize.job.reading import plan_splits, unified_schema
from beam_tensorize.job.spec import TensorizeSpec
from beam_tensorize.job.transaction import kept_folder
from beam_tensorize.kernels.formats import AUTO, get_format
from beam_tensorize.spark._encode import EncodeBatches
from beam_tensorize.spark._feature_lists import Keep, feature_lists
from beam_tensorize.spark._finish import finish
from beam_tensorize.spark._kept import delete_kept, runs_each_task_once
from beam_tensorize.spark._write import EncodeAndWrite, commit_plan, write_shards, write_split_files

__all__ = ["tensorize_spark"]

_LOGGER = logging.getLogger(__name__)


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
    split_dir = spec.split_dir
    if ignoring_existing(split_dir, spec.save_mode):
        _LOGGER.info("%s holds data; save mode 'ignore' writes nothing", split_dir)
        return {"output": spec.output, "split": spec.split, "skipped": True, "files": [], "numRecords": 0}

    checked = check_target(split_dir, spec.save_mode)
    return _run(spark, spec, checked)


def _run(spark: SparkSession, spec: TensorizeSpec, checked: dict) -> dict:
    """Count or load the feature lists, encode and write on Spark, then commit on the driver."""
    fmt = None if spec.input_format == AUTO else get_format(spec.input_format)
    splits = plan_splits(spec.inputs, fmt, spec.split_bytes, dead_letters=True)
    previous = appending_to(spec.output, spec.split, spec.save_mode)  # appending: the split's entry until now
    schema = unified_schema(splits, spec.input_columns)  # one schema for all files, or a clear error
    keep = None
    if spec.keeps_batches and spec.num_shards is None and previous is None and spec.feature_list_keys:
        keep = Keep(spec, kept_folder(spec.output, uuid.uuid4().hex), schema)  # one read of the input
    try:
        lists = feature_lists(spark, splits, spec, previous, keep)
        lists_broadcast = spark.sparkContext.broadcast(lists)
        plan = commit_plan(spec)
        try:
            encode = EncodeBatches(spec, lists_broadcast)
            transform = dataclasses.replace(spec.transform_settings, input_schema=schema).to_json()
            if spec.num_shards is None:  # each task reads its split and writes its files: no shuffle
                once = runs_each_task_once(
                    spark.sparkContext.master, dict(spark.sparkContext.getConf().getAll())
                )
                write = EncodeAndWrite(encode, plan, checked["skip"], schema, keep and keep.folder, once)
                written = write_split_files(spark, splits, write)
            else:
                written = write_shards(spark, encode, plan)
            return finish(written, spec, plan, checked, lists=lists, previous=previous, transform=transform)
        finally:
            delete_temporary(plan)  # gone already after a commit
            lists_broadcast.destroy()
    finally:
        if keep is not None:
            delete_kept(keep.folder, spec.output)


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
