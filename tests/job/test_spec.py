"""`TensorizeSpec`, setting by setting: accepted values (normalised where the spec normalises
them) and refused values with their exact messages. Pure validation: no pipeline, no I/O but
reading the bundled sample config, no TensorFlow."""

from __future__ import annotations

import math
import os
import pathlib

import pytest

from beam_tensorize.config import load_config
from beam_tensorize.job.spec import TensorizeSpec
from beam_tensorize.sample import SAMPLE_CONFIG

#: The bundled sample config. Its tensors: userId (long [-1]), movieId (long []), genres (string
#: [-1]), movieLatentFactors (float [30]), numGenres (int []), genreIds (long [-1]), genreVector
#: (sparse float), movieBucket (hashed long []); label response (double []).
CONFIG = load_config(SAMPLE_CONFIG)
TENSORS = (
    "userId, movieId, genres, movieLatentFactors, numGenres, genreIds, genreVector, movieBucket, response"
)
#: Valid settings of a deduplicated (HybridBackend) Parquet output.
DEDUP = {"output_format": "parquet", "dedup_block_size": 1000, "dedup_user_cols": [["userId", "movieId"]]}


def make_spec(**overrides) -> TensorizeSpec:
    return TensorizeSpec(**{"config": CONFIG, "output": "out", **overrides})


def _short(value) -> str:
    if value is CONFIG:
        return "CONFIG"
    if isinstance(value, (str, pathlib.Path)) and os.path.isabs(value) and os.path.exists(value):
        return f"{type(value).__name__}:{os.path.basename(value)}"
    return repr(value)


def case_ids(table) -> list[str]:
    """Test ids: each case's overrides, shortened."""
    ids = []
    for overrides, _ in table:
        text = ",".join(f"{name}={_short(value)}" for name, value in overrides.items())
        ids.append(text if len(text) <= 70 else text[:67] + "...")
    return ids


def test_defaults():
    spec = make_spec()
    assert spec.config is CONFIG
    assert (spec.output, spec.inputs, spec.input_format, spec.execution_mode) == ("out", (), "auto", "train")
    assert (spec.output_format, spec.compression, spec.num_shards, spec.max_records_per_file) == (
        "tfrecord",
        "none",
        None,
        None,
    )
    assert (spec.save_mode, spec.max_bad_records_ratio, spec.report, spec.drift_threshold) == (
        "error",
        0.0,
        "none",
        0.1,
    )
    assert (spec.batch_rows, spec.split_bytes) == (8192, 64 << 20)
    assert (spec.shared_feature_lists, spec.extra_columns, spec.partition_by, spec.dedup_user_cols) == (
        (),
        (),
        (),
        (),
    )
    assert (spec.partition_field_name, spec.num_partitions, spec.dedup_block_size) == (None, 100, None)
    assert spec.input_passes is None
    assert (spec.external_feature_lists, spec.shuffle_seed) == (None, 0)
    assert not any(
        (
            spec.filter_zeros,
            spec.check_shapes,
            spec.discard_unknown_entries,
            spec.term_only_feature_lists,
            spec.shuffle,
            spec.skip_conversion,
        )
    )
    assert (spec.split, spec.split_dir, spec.extra_names, spec.folder_columns) == (
        "trainingData",
        "out/trainingData",
        (),
        (),
    )


#: (overrides, the values the spec then holds: its fields and properties). Values not listed
#: are the overrides themselves, kept as given.
ACCEPTED = [
    # config: a parsed config, or a config file path (str or os.PathLike), loaded
    ({"config": CONFIG}, {"config": CONFIG}),
    ({"config": SAMPLE_CONFIG}, {"config": CONFIG}),
    ({"config": pathlib.Path(SAMPLE_CONFIG)}, {"config": CONFIG}),
    # output: trailing slashes dropped, the root kept
    ({"output": "out"}, {"output": "out", "split_dir": "out/trainingData"}),
    ({"output": "out/run/"}, {"output": "out/run", "split_dir": "out/run/trainingData"}),
    ({"output": "gs://bucket/out//"}, {"output": "gs://bucket/out"}),
    ({"output": "/"}, {"output": "/", "split_dir": "/trainingData"}),
    ({"output": "///"}, {"output": "/"}),
    # inputs: a tuple; one string is one pattern
    ({"inputs": "data/*.avro"}, {"inputs": ("data/*.avro",)}),
    ({"inputs": ["a.avro", "b/*.parquet"]}, {"inputs": ("a.avro", "b/*.parquet")}),
    ({"inputs": ()}, {"inputs": ()}),
    # input_format
    ({"input_format": "auto"}, None),
    ({"input_format": "avro"}, None),
    ({"input_format": "parquet"}, None),
    ({"input_format": "orc"}, None),
    ({"input_format": "tfrecord"}, None),
    # execution_mode: Avro2TF's "training" is "train"
    ({"execution_mode": "train"}, {"execution_mode": "train", "split": "trainingData"}),
    ({"execution_mode": "training"}, {"execution_mode": "train", "split": "trainingData"}),
    ({"execution_mode": "validation"}, {"execution_mode": "validation", "split": "validationData"}),
    ({"execution_mode": "test"}, {"execution_mode": "test", "split": "testData"}),
    # num_shards / max_records_per_file (one or the other)
    ({"num_shards": 1}, None),
    ({"num_shards": 16}, {"num_shards": 16, "max_records_per_file": None}),
    ({"max_records_per_file": 1}, None),
    ({"max_records_per_file": 50_000}, {"max_records_per_file": 50_000, "num_shards": None}),
    ({"num_shards": None, "max_records_per_file": None}, None),
    # output_format, compression (None: the format's default)
    ({"output_format": "tfrecord"}, {"output_format": "tfrecord", "compression": "none"}),
    ({"output_format": "parquet"}, {"output_format": "parquet", "compression": "snappy"}),
    ({"output_format": "avro"}, {"output_format": "avro", "compression": "snappy"}),
    ({"compression": None}, {"compression": "none"}),
    ({"compression": "none"}, None),
    ({"compression": "gzip"}, None),
    ({"compression": "zlib"}, None),
    ({"output_format": "parquet", "compression": None}, {"compression": "snappy"}),
    ({"output_format": "parquet", "compression": "none"}, None),
    ({"output_format": "parquet", "compression": "snappy"}, None),
    ({"output_format": "parquet", "compression": "gzip"}, None),
    ({"output_format": "parquet", "compression": "zstd"}, None),
    ({"output_format": "avro", "compression": None}, {"compression": "snappy"}),
    ({"output_format": "avro", "compression": "snappy"}, None),
    ({"output_format": "avro", "compression": "deflate"}, None),
    ({"output_format": "avro", "compression": "zstd"}, None),
    ({"output_format": "avro", "compression": "none"}, None),
    # save_mode
    ({"save_mode": "error"}, None),
    ({"save_mode": "overwrite"}, None),
    ({"save_mode": "overwrite_partitions"}, None),
    ({"save_mode": "append"}, None),
    ({"save_mode": "ignore"}, None),
    # max_bad_records_ratio: 0..1, ints too
    ({"max_bad_records_ratio": 0}, None),
    ({"max_bad_records_ratio": 0.0}, None),
    ({"max_bad_records_ratio": 0.25}, None),
    ({"max_bad_records_ratio": 1}, None),
    ({"max_bad_records_ratio": 1.0}, None),
    # shared_feature_lists: tuples of names; a group shares the key of its smallest name
    ({"shared_feature_lists": []}, {"shared_feature_lists": ()}),
    (
        {"shared_feature_lists": [["userId", "genreIds"]]},
        {"shared_feature_lists": (("userId", "genreIds"),)},
    ),
    (
        {"shared_feature_lists": (["movieId", "numGenres"], ("userId", "genreIds"))},
        {"shared_feature_lists": (("movieId", "numGenres"), ("userId", "genreIds"))},
    ),
    # external_feature_lists: kept as given (read when the job runs)
    ({"external_feature_lists": "gs://bucket/lists/"}, None),
    ({"external_feature_lists": None}, None),
    # flags kept as given
    ({"filter_zeros": True}, None),
    ({"check_shapes": True}, None),
    ({"discard_unknown_entries": True}, None),
    ({"term_only_feature_lists": True}, None),
    ({"shuffle": True}, None),
    ({"shuffle": True, "shuffle_seed": 42}, None),
    ({"skip_conversion": True}, None),
    ({"skip_conversion": True, "execution_mode": "training"}, {"execution_mode": "train"}),
    ({"skip_conversion": False, "execution_mode": "test"}, None),
    # extra_columns: a tuple; written under a name (`expression:name`, a field's last name)
    ({"extra_columns": []}, {"extra_columns": (), "extra_names": ()}),
    ({"extra_columns": ["review"]}, {"extra_columns": ("review",), "extra_names": ("review",)}),
    (
        {"extra_columns": ("words.term:terms", "words.term", "uid")},
        {"extra_columns": ("words.term:terms", "words.term", "uid"), "extra_names": ("terms", "term", "uid")},
    ),
    ({"extra_columns": ["lower(title):title"]}, {"extra_names": ("title",)}),
    # partition_by: scalar tensors or extra columns
    ({"partition_by": ["movieId"]}, {"partition_by": ("movieId",), "folder_columns": ("movieId",)}),
    ({"partition_by": ("numGenres", "response")}, {"folder_columns": ("numGenres", "response")}),
    (
        {"extra_columns": ["region"], "partition_by": ["region", "movieId"]},
        {"partition_by": ("region", "movieId"), "folder_columns": ("region", "movieId")},
    ),
    # partition_field_name (+ num_partitions): Avro2TF's partitionId column and partition folders
    (
        {"partition_field_name": "movieId"},
        {"num_partitions": 100, "folder_columns": ("partition",), "extra_names": ("partitionId",)},
    ),
    ({"partition_field_name": "movieId", "num_partitions": 7}, {"num_partitions": 7}),
    ({"partition_field_name": "numGenres", "num_partitions": 1}, None),
    (
        {"extra_columns": ["region"], "partition_field_name": "region"},
        {"extra_names": ("region", "partitionId"), "folder_columns": ("partition",)},
    ),
    # num_partitions is only checked with partition_field_name
    ({"num_partitions": 0}, {"num_partitions": 0, "folder_columns": ()}),
    # dedup_block_size with dedup_user_cols (a tuple of tuples), Parquet only
    (DEDUP, {"dedup_block_size": 1000, "dedup_user_cols": (("userId", "movieId"),)}),
    (
        {**DEDUP, "dedup_block_size": 1, "dedup_user_cols": (["a"], ("b", "c"))},
        {"dedup_block_size": 1, "dedup_user_cols": (("a",), ("b", "c"))},
    ),
    ({**DEDUP, "save_mode": "overwrite"}, {"save_mode": "overwrite"}),
    ({"dedup_block_size": None, "dedup_user_cols": ()}, None),
    # report, drift_threshold (0..1)
    ({"report": "none"}, None),
    ({"report": "json"}, None),
    ({"report": "html"}, None),
    ({"drift_threshold": 0}, None),
    ({"drift_threshold": 0.05}, None),
    ({"drift_threshold": 1.0}, None),
    # batch_rows, split_bytes
    ({"batch_rows": 1}, None),
    ({"batch_rows": 100_000}, None),
    ({"split_bytes": 1}, None),
    ({"split_bytes": 1 << 30}, None),
]


@pytest.mark.parametrize("overrides, expected", ACCEPTED, ids=case_ids(ACCEPTED))
def test_accepted(overrides, expected):
    spec = make_spec(**overrides)
    for name, value in (overrides if expected is None else expected).items():
        assert getattr(spec, name) == value, name


#: (overrides, the ValueError's message).
REFUSED = [
    # inputs
    ({"inputs": [""]}, "inputs must be non-empty file patterns, got ['']"),
    ({"inputs": " "}, "inputs must be non-empty file patterns, got [' ']"),
    ({"inputs": ["a.avro", 3]}, "inputs must be non-empty file patterns, got ['a.avro', 3]"),
    ({"inputs": ["a.avro", None]}, "inputs must be non-empty file patterns, got ['a.avro', None]"),
    # input_format
    ({"input_format": "csv"}, "input format 'csv' is not one of auto, avro, orc, parquet, tfrecord"),
    ({"input_format": "AVRO"}, "input format 'AVRO' is not one of auto, avro, orc, parquet, tfrecord"),
    # execution_mode
    ({"execution_mode": "eval"}, "execution_mode 'eval' is not one of train, validation, test"),
    (
        {"execution_mode": "trainingData"},
        "execution_mode 'trainingData' is not one of train, validation, test",
    ),
    ({"execution_mode": ""}, "execution_mode '' is not one of train, validation, test"),
    # num_shards
    ({"num_shards": 0}, "num_shards must be a positive integer, got 0"),
    ({"num_shards": -3}, "num_shards must be a positive integer, got -3"),
    ({"num_shards": True}, "num_shards must be a positive integer, got True"),
    ({"num_shards": 2.0}, "num_shards must be a positive integer, got 2.0"),
    ({"num_shards": "2"}, "num_shards must be a positive integer, got '2'"),
    # max_records_per_file
    ({"max_records_per_file": 0}, "max_records_per_file must be a positive integer, got 0"),
    ({"max_records_per_file": False}, "max_records_per_file must be a positive integer, got False"),
    ({"max_records_per_file": 1.5}, "max_records_per_file must be a positive integer, got 1.5"),
    ({"num_shards": 4, "max_records_per_file": 1000}, "give num_shards or max_records_per_file, not both"),
    # output_format
    ({"output_format": "csv"}, "output_format 'csv' is not one of tfrecord, parquet, avro"),
    ({"output_format": "Parquet"}, "output_format 'Parquet' is not one of tfrecord, parquet, avro"),
    # compression, per output format
    (
        {"compression": "snappy"},
        "compression 'snappy' does not apply to output_format 'tfrecord'; use one of none, gzip, zlib",
    ),
    (
        {"compression": "GZIP"},
        "compression 'GZIP' does not apply to output_format 'tfrecord'; use one of none, gzip, zlib",
    ),
    (
        {"output_format": "parquet", "compression": "zlib"},
        "compression 'zlib' does not apply to output_format 'parquet'; use one of snappy, none, gzip, zstd",
    ),
    (
        {"output_format": "avro", "compression": "gzip"},
        "compression 'gzip' does not apply to output_format 'avro'; use one of snappy, deflate, zstd, none",
    ),
    # save_mode
    (
        {"save_mode": "replace"},
        "save_mode 'replace' is not one of error, overwrite, overwrite_partitions, append, ignore",
    ),
    (
        {"save_mode": "Overwrite"},
        "save_mode 'Overwrite' is not one of error, overwrite, overwrite_partitions, append, ignore",
    ),
    # max_bad_records_ratio
    ({"max_bad_records_ratio": -0.1}, "max_bad_records_ratio must be between 0 and 1, got -0.1"),
    ({"max_bad_records_ratio": 1.5}, "max_bad_records_ratio must be between 0 and 1, got 1.5"),
    ({"max_bad_records_ratio": 2}, "max_bad_records_ratio must be between 0 and 1, got 2"),
    ({"max_bad_records_ratio": True}, "max_bad_records_ratio must be between 0 and 1, got True"),
    ({"max_bad_records_ratio": "0.1"}, "max_bad_records_ratio must be between 0 and 1, got '0.1'"),
    ({"max_bad_records_ratio": None}, "max_bad_records_ratio must be between 0 and 1, got None"),
    ({"max_bad_records_ratio": math.nan}, "max_bad_records_ratio must be between 0 and 1, got nan"),
    # shared_feature_lists
    (
        {"shared_feature_lists": [["userId", ""]]},
        "shared_feature_lists group must hold non-empty names, got ['userId', '']",
    ),
    ({"shared_feature_lists": [[1]]}, "shared_feature_lists group must hold non-empty names, got [1]"),
    (
        {"shared_feature_lists": [["nope"]]},
        f"tensors sharing feature lists: unknown tensor 'nope'; known: {TENSORS}",
    ),
    (
        {"shared_feature_lists": [["movieBucket"]]},
        "tensors sharing feature lists: tensor 'movieBucket' is hashed (hashInfo), so it has no feature list",
    ),
    (
        {"shared_feature_lists": [["genres", "userId"]]},
        "tensors sharing feature lists: tensor 'genres' (dtype string) cannot use a feature list",
    ),
    (
        {"shared_feature_lists": [["userId", "genreIds"], ["movieId", "userId"]]},
        "tensors sharing feature lists: tensor 'userId' is in two groups",
    ),
    # extra_columns
    ({"extra_columns": [""]}, "extra_columns must hold non-empty names, got ['']"),
    ({"extra_columns": ["review", None]}, "extra_columns must hold non-empty names, got ['review', None]"),
    ({"extra_columns": ["userId"]}, "extra columns ['userId'] have the names of tensors"),
    (
        {"extra_columns": ["words.term:movieId", "response"]},
        "extra columns ['movieId', 'response'] have the names of tensors",
    ),
    ({"extra_columns": ["term", "words.term"]}, "extra columns ['term', 'term']: a name is used twice"),
    ({"extra_columns": ["a:b:c"]}, "extra column 'a:b:c': give a column, or 'expression:name' with one ':'"),
    (
        {"extra_columns": ["words.term:"]},
        "extra column 'words.term:': give a column, or 'expression:name' with one ':'",
    ),
    (
        {"extra_columns": ["lower(x)"]},
        "extra column 'lower(x)' is an expression: name it, e.g. 'lower(x):name'",
    ),
    (
        {"extra_columns": ["a(:b"]},
        "extra column 'a(:b': not valid Spark SQL: Expecting ). Line 1, Col: 2.",
    ),
    # partition_by
    ({"partition_by": [""]}, "partition_by must hold non-empty names, got ['']"),
    (
        {"partition_by": ["userId"]},
        "partition_by: tensor 'userId' is not a scalar (shape [-1], ragged); only one value per record can name a folder",
    ),
    (
        {"partition_by": ["movieLatentFactors"]},
        "partition_by: tensor 'movieLatentFactors' is not a scalar (shape [30], fixed_len); only one value per "
        "record can name a folder",
    ),
    (
        {"partition_by": ["genreVector"]},
        "partition_by: tensor 'genreVector' is not a scalar (shape [], sparse); only one value per record can "
        "name a folder",
    ),
    (
        {"partition_by": ["region"]},
        f"partition_by: 'region' is neither a tensor ({TENSORS}) nor an extra column",
    ),
    ({"partition_by": ["movieId", "movieId"]}, "partition_by: ['movieId', 'movieId'] names a column twice"),
    # partition_field_name, num_partitions
    ({"partition_field_name": ""}, "partition_field_name must name a column, got ''"),
    ({"partition_field_name": "  "}, "partition_field_name must name a column, got '  '"),
    ({"partition_field_name": 3}, "partition_field_name must name a column, got 3"),
    (
        {"partition_field_name": "movieId", "partition_by": ["numGenres"]},
        "give partition_field_name (partition=<id>/ folders) or partition_by, not both",
    ),
    (
        {"partition_field_name": "movieId", "num_partitions": 0},
        "num_partitions must be a positive integer, got 0",
    ),
    (
        {"partition_field_name": "movieId", "num_partitions": 2.5},
        "num_partitions must be a positive integer, got 2.5",
    ),
    (
        {"partition_field_name": "genres"},
        "partition_field_name: tensor 'genres' is not a scalar (shape [-1], ragged); only one value per record "
        "can name a folder",
    ),
    (
        {"partition_field_name": "region"},
        f"partition_field_name: 'region' is neither a tensor ({TENSORS}) nor an extra column",
    ),
    (
        {"extra_columns": ["partitionId"], "partition_field_name": "movieId"},
        "['partitionId'] name the partition id columns; rename the tensor or extra column",
    ),
    (
        {"extra_columns": ["x:partition", "partitionId"], "partition_field_name": "partitionId"},
        "['partition', 'partitionId'] name the partition id columns; rename the tensor or extra column",
    ),
    # skip_conversion
    (
        {"skip_conversion": True, "execution_mode": "validation"},
        "skip_conversion writes the feature lists and metadata of train mode; use execution_mode train",
    ),
    (
        {"skip_conversion": True, "execution_mode": "test"},
        "skip_conversion writes the feature lists and metadata of train mode; use execution_mode train",
    ),
    # dedup_block_size, dedup_user_cols
    ({"dedup_block_size": 1000}, "give dedup_block_size and dedup_user_cols together"),
    ({"dedup_user_cols": [["userId"]]}, "give dedup_block_size and dedup_user_cols together"),
    ({**DEDUP, "dedup_user_cols": []}, "give dedup_block_size and dedup_user_cols together"),
    ({**DEDUP, "dedup_block_size": 0}, "dedup_block_size must be a positive integer, got 0"),
    ({**DEDUP, "dedup_block_size": True}, "dedup_block_size must be a positive integer, got True"),
    (
        {**DEDUP, "output_format": "tfrecord"},
        "deduplication writes Parquet blocks: use output_format parquet",
    ),
    ({**DEDUP, "output_format": "avro"}, "deduplication writes Parquet blocks: use output_format parquet"),
    ({**DEDUP, "partition_by": ["movieId"]}, "deduplication and partition folders exclude each other"),
    ({**DEDUP, "partition_field_name": "movieId"}, "deduplication and partition folders exclude each other"),
    (
        {**DEDUP, "save_mode": "append"},
        "deduplicated output cannot be appended to; write it anew (save_mode overwrite)",
    ),
    ({**DEDUP, "dedup_user_cols": [[]]}, "dedup_user_cols must be groups of column names, got [()]"),
    (
        {**DEDUP, "dedup_user_cols": [["userId", ""]]},
        "dedup_user_cols must be groups of column names, got [('userId', '')]",
    ),
    (
        {**DEDUP, "dedup_user_cols": [["userId"], ["movieId", 1]]},
        "dedup_user_cols must be groups of column names, got [('userId',), ('movieId', 1)]",
    ),
    # report, drift_threshold
    ({"report": "pdf"}, "report 'pdf' is not one of none, json, html"),
    ({"report": None}, "report None is not one of none, json, html"),
    ({"drift_threshold": -0.5}, "drift_threshold must be between 0 and 1, got -0.5"),
    ({"drift_threshold": 1.01}, "drift_threshold must be between 0 and 1, got 1.01"),
    ({"drift_threshold": False}, "drift_threshold must be between 0 and 1, got False"),
    ({"drift_threshold": "0.1"}, "drift_threshold must be between 0 and 1, got '0.1'"),
    # batch_rows, split_bytes
    ({"batch_rows": 0}, "batch_rows must be a positive integer, got 0"),
    ({"batch_rows": -1}, "batch_rows must be a positive integer, got -1"),
    ({"batch_rows": 1024.0}, "batch_rows must be a positive integer, got 1024.0"),
    ({"batch_rows": None}, "batch_rows must be a positive integer, got None"),
    ({"split_bytes": 0}, "split_bytes must be a positive integer, got 0"),
    ({"split_bytes": True}, "split_bytes must be a positive integer, got True"),
    ({"split_bytes": "64MB"}, "split_bytes must be a positive integer, got '64MB'"),
    # several bad settings: the first checked is named (config, output, inputs, input_format,
    # execution_mode, num_shards, max_records_per_file, output_format, compression, save_mode,
    # max_bad_records_ratio, shared_feature_lists, extra_columns, partition_by,
    # partition_field_name, num_partitions, skip_conversion, dedup, report, drift_threshold,
    # batch_rows, split_bytes)
    ({"inputs": [""], "input_format": "csv"}, "inputs must be non-empty file patterns, got ['']"),
    (
        {"input_format": "csv", "execution_mode": "eval"},
        "input format 'csv' is not one of auto, avro, orc, parquet, tfrecord",
    ),
    (
        {"execution_mode": "eval", "num_shards": 0},
        "execution_mode 'eval' is not one of train, validation, test",
    ),
    ({"num_shards": 0, "max_records_per_file": 0}, "num_shards must be a positive integer, got 0"),
    ({"num_shards": 2, "max_records_per_file": 0}, "max_records_per_file must be a positive integer, got 0"),
    (
        {"max_records_per_file": 0, "output_format": "csv"},
        "max_records_per_file must be a positive integer, got 0",
    ),
    (
        {"output_format": "csv", "compression": "bad"},
        "output_format 'csv' is not one of tfrecord, parquet, avro",
    ),
    (
        {"compression": "bad", "save_mode": "bad"},
        "compression 'bad' does not apply to output_format 'tfrecord'; use one of none, gzip, zlib",
    ),
    (
        {"save_mode": "bad", "max_bad_records_ratio": 2},
        "save_mode 'bad' is not one of error, overwrite, overwrite_partitions, append, ignore",
    ),
    (
        {"max_bad_records_ratio": 2, "shared_feature_lists": [["nope"]]},
        "max_bad_records_ratio must be between 0 and 1, got 2",
    ),
    (
        {"shared_feature_lists": [["nope"]], "extra_columns": ["userId"]},
        f"tensors sharing feature lists: unknown tensor 'nope'; known: {TENSORS}",
    ),
    (
        {"extra_columns": ["userId"], "partition_by": ["nope"]},
        "extra columns ['userId'] have the names of tensors",
    ),
    (
        {"partition_by": ["userId"], "partition_field_name": ""},
        "partition_by: tensor 'userId' is not a scalar (shape [-1], ragged); only one value per record can name a folder",
    ),
    (
        {
            "partition_field_name": "movieId",
            "num_partitions": 0,
            "skip_conversion": True,
            "execution_mode": "test",
        },
        "num_partitions must be a positive integer, got 0",
    ),
    (
        {"skip_conversion": True, "execution_mode": "test", "dedup_block_size": 1},
        "skip_conversion writes the feature lists and metadata of train mode; use execution_mode train",
    ),
    ({"dedup_block_size": 1, "report": "pdf"}, "give dedup_block_size and dedup_user_cols together"),
    (
        {**DEDUP, "partition_by": ["movieId"], "save_mode": "append"},
        "deduplication and partition folders exclude each other",
    ),
    ({"report": "pdf", "drift_threshold": 2}, "report 'pdf' is not one of none, json, html"),
    ({"drift_threshold": 2, "batch_rows": 0}, "drift_threshold must be between 0 and 1, got 2"),
    ({"batch_rows": 0, "split_bytes": 0}, "batch_rows must be a positive integer, got 0"),
    ({"split_bytes": 0, "input_passes": 3}, "split_bytes must be a positive integer, got 0"),
    ({"input_passes": 3}, "input_passes must be 1 or 2, got 3"),
    ({"input_passes": True}, "input_passes must be 1 or 2, got True"),
    ({"input_passes": "1"}, "input_passes must be 1 or 2, got '1'"),
]


@pytest.mark.parametrize("overrides, message", REFUSED, ids=case_ids(REFUSED))
def test_refused(overrides, message):
    with pytest.raises(ValueError) as raised:
        make_spec(**overrides)
    assert str(raised.value) == message


#: (overrides, the TypeError's message): a setting of the wrong kind.
REFUSED_TYPES = [
    ({"config": 42}, "config must be a TensorizeConfig or a config file path, got int"),
    ({"config": {"features": []}}, "config must be a TensorizeConfig or a config file path, got dict"),
    ({"config": None}, "config must be a TensorizeConfig or a config file path, got NoneType"),
    ({"output": ""}, "output must be a non-empty folder path, got ''"),
    ({"output": "   "}, "output must be a non-empty folder path, got '   '"),
    ({"output": None}, "output must be a non-empty folder path, got None"),
    ({"output": pathlib.Path("out")}, "output must be a non-empty folder path, got PosixPath('out')"),
    (
        {"shared_feature_lists": ["userId"]},
        "shared_feature_lists group must be a list of names, not the string 'userId'",
    ),
    ({"extra_columns": "review"}, "extra_columns must be a list of names, not the string 'review'"),
    ({"partition_by": "movieId"}, "partition_by must be a list of names, not the string 'movieId'"),
    # the first bad setting is named
    ({"config": 42, "output": ""}, "config must be a TensorizeConfig or a config file path, got int"),
    ({"output": "", "inputs": [""]}, "output must be a non-empty folder path, got ''"),
    (
        {"extra_columns": "review", "partition_by": "movieId"},
        "extra_columns must be a list of names, not the string 'review'",
    ),
]


@pytest.mark.parametrize("overrides, message", REFUSED_TYPES, ids=case_ids(REFUSED_TYPES))
def test_refused_types(overrides, message):
    with pytest.raises(TypeError) as raised:
        make_spec(**overrides)
    assert str(raised.value) == message


def test_file_uris_are_the_local_paths_they_name():
    spec = make_spec(output="file:///tmp/out/", inputs=["file:/data/*.avro", "gs://b/x.avro"],
                     external_feature_lists="file://localhost/lists")  # fmt: skip
    assert (spec.output, spec.inputs, spec.external_feature_lists) == (
        "/tmp/out",
        ("/data/*.avro", "gs://b/x.avro"),
        "/lists",
    )
    with pytest.raises(ValueError, match=r"^file://host/out: a file URI of another host \(host\)"):
        make_spec(output="file://host/out")


@pytest.mark.parametrize(
    "overrides, reads, keeps",
    [
        ({}, 1, True),  # train mode, output on a local disk: read once
        ({"output": "file:///tmp/out"}, 1, True),
        ({"output": "gs://bucket/out"}, 2, False),  # object store: read twice
        ({"output": "s3://bucket/out", "input_passes": 1}, 1, True),
        ({"input_passes": 2}, 2, False),
        ({"input_passes": 2, "execution_mode": "validation"}, 1, False),  # no lists to count
        ({"input_passes": 2, "skip_conversion": True}, 1, False),  # counted from its only read
    ],
)
def test_train_mode_keeps_its_batches_on_local_disks(overrides, reads, keeps):
    spec = make_spec(**overrides)
    assert (spec.input_reads, spec.keeps_batches) == (reads, keeps)


def test_feature_list_keys_of_shared_groups():
    spec = make_spec(shared_feature_lists=[["userId", "genreIds"]])
    assert spec.feature_list_keys == {
        "userId": "genreIds",
        "genreIds": "genreIds",
        "movieId": "movieId",
        "movieLatentFactors": "movieLatentFactors",
        "numGenres": "numGenres",
        "genreVector": "genreVector",
        "response": "response",
    }


def test_transform_settings_repeat_the_spec():
    spec = make_spec(
        extra_columns=["region"],
        filter_zeros=True,
        check_shapes=True,
        discard_unknown_entries=True,
        partition_field_name="region",
        num_partitions=8,
    )
    settings = spec.transform_settings
    assert (settings.extra_columns, settings.partition_field_name, settings.num_partitions) == (
        ("region",),
        "region",
        8,
    )
    assert (settings.filter_zeros, settings.check_shapes, settings.discard_unknown_entries) == (
        True,
        True,
        True,
    )
    assert settings.folder_columns == ("partition",)


def test_replace_validates_again():
    spec = make_spec(output_format="parquet")
    assert spec.replace(output_format="avro", compression=None).compression == "snappy"
    assert spec.replace(output="elsewhere/").output == "elsewhere"
    with pytest.raises(ValueError) as raised:
        spec.replace(num_shards=0)
    assert str(raised.value) == "num_shards must be a positive integer, got 0"


def test_of():
    spec = make_spec()
    assert TensorizeSpec.of(spec) is spec
    assert TensorizeSpec.of(CONFIG, "out/", report="json") == make_spec(report="json")
    with pytest.raises(TypeError) as raised:
        TensorizeSpec.of(spec, "out")
    assert str(raised.value) == "give either a TensorizeSpec or a config with settings, not both"
    with pytest.raises(TypeError) as raised:
        TensorizeSpec.of(spec, report="json")
    assert str(raised.value) == "give either a TensorizeSpec or a config with settings, not both"
    with pytest.raises(TypeError) as raised:
        TensorizeSpec.of(CONFIG)
    assert str(raised.value) == "output is required with a config (or give a TensorizeSpec)"
