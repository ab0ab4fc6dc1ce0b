"""Ported from linkedin/Avro2TF avro2tf/src/test/scala/com/linkedin/avro2tf/jobs/FeatureIndicesConversionTest.scala.

The Scala tests run extraction, transformation, feature-list generation and
`FeatureIndicesConversion` on a DataFrame and check its column types; here the tensorize
command runs in train mode with the same output format and `--discard-unknown-entries`, and
the types are read from what it wrote: the Avro schema (Avro output), or the TFRecord
Examples' value lists and the metadata's `featureKeys` (TFRecord output, whose sparse vectors
are `<name>/indices` + `<name>/values`, see docs/metadata.md).

The Scala test's dense/sparse check is a `forall` whose result is dropped (it asserts
nothing); it is asserted here, as its comment intends: the dense vector holds each sparse
entry's value at its index.
"""

from __future__ import annotations

import json

import fastavro
import pytest

from beam_tensorize.config import load_config
from tests.compat.avro2tf.helpers import (
    AVRO2TF_CONFIG_PATH_VALUE_SAMPLE,
    AVRO2TF_CONFIG_PATH_VALUE_TEXT_SEQ,
    EXTRA_COLUMNS_TO_KEEP_VALUE,
    INPUT_TEXT_FILE_PATHS,
    INPUT_TEXT_SEQ_FILE_PATHS,
    avro_field_types,
    is_array_of,
    is_sparse_record,
    read_avro_folder,
    resource,
    tensorize,
)

pytestmark = pytest.mark.pipeline

AVRO_RECORD = "avro"
TF_RECORD = "tfrecord"
FEATURE_FIRST_WORD_COL_NAME = "firstWord"
FEATURE_WORD_SEQ_COL_NAME = "wordSeq"
FEATURE_WORDS_WIDE_FEATURES_DENSE_COL_NAME = "words_wideFeatures_dense"
FEATURE_WORDS_WIDE_FEATURES_SPARSE_COL_NAME = "words_wideFeatures_sparse"

TEST_DATA = [
    pytest.param(AVRO_RECORD, False, id="avro-false"),
    pytest.param(TF_RECORD, True, id="tfrecord-true"),
]


def _run(
    working_directory, config_path: str, input_path: str, output_format: str, discard: bool, *flags
) -> None:
    code = tensorize(
        [
            "--input-paths", resource(input_path),
            "--working-dir", str(working_directory),
            "--avro2tf-config-path", resource(config_path),
            "--output-format", output_format,
            "--discard-unknown-entries", str(discard).lower(),
            *flags,
        ]
    )  # fmt: skip
    assert code == 0


def _examples(folder) -> list[dict]:
    """Every tf.train.Example of a TFRecord folder, as {key: (kind, values)}."""
    import tensorflow as tf

    examples = []
    for path in sorted(folder.glob("part-*.tfrecord")):
        for record in tf.data.TFRecordDataset(str(path)):
            features = tf.train.Example.FromString(record.numpy()).features.feature
            examples.append(
                {
                    key: (f.WhichOneof("kind"), list(getattr(f, f.WhichOneof("kind")).value))
                    for key, f in features.items()
                }
            )
    return examples


def _check_dense_matches_sparse(rows: list[tuple[list[int], list[float], list[float]]]) -> None:
    """Make sure the dense and sparse format have the same value at the same index."""
    assert rows
    for indices, values, dense in rows:
        assert len(indices) == len(values)
        for index, value in zip(indices, values):
            assert dense[index] == value


@pytest.mark.parametrize(("output_format", "discard_unknown_entries"), TEST_DATA)
def test_conversion(tmp_path, output_format, discard_unknown_entries):
    working_directory = tmp_path / "indices-conversion-test"
    config = load_config(resource(AVRO2TF_CONFIG_PATH_VALUE_SAMPLE))
    extra = ["--extra-columns-to-keep", EXTRA_COLUMNS_TO_KEEP_VALUE] if output_format == AVRO_RECORD else []
    _run(
        working_directory,
        AVRO2TF_CONFIG_PATH_VALUE_SAMPLE,
        INPUT_TEXT_FILE_PATHS,
        output_format,
        discard_unknown_entries,
        *extra,
    )
    # checkOutputColumns: the output tensor names and the extra columns (an alias names its column)
    expected_columns = [*config.tensor_names, *(["review", "terms"] if extra else [])]
    sparse, dense = FEATURE_WORDS_WIDE_FEATURES_SPARSE_COL_NAME, FEATURE_WORDS_WIDE_FEATURES_DENSE_COL_NAME

    if output_format == AVRO_RECORD:
        schema, records = read_avro_folder(working_directory / "trainingData")
        types = avro_field_types(schema)
        assert sorted(types) == sorted(expected_columns)
        # "wordSeq" is the expected Seq[Long]; "firstWord" a Long
        assert is_array_of(types[FEATURE_WORD_SEQ_COL_NAME], "long")
        assert types[FEATURE_FIRST_WORD_COL_NAME] == "long"
        # "words_wideFeatures_sparse" is the expected SparseVector type {indices: Seq[Long], values: Seq[Float]}
        assert is_sparse_record(types[sparse])
        # "words_wideFeatures_dense" is the expected dense vector type
        assert is_array_of(types[dense], "float")
        rows = [(r[sparse]["indices"], r[sparse]["values"], r[dense]) for r in records]
    else:
        metadata = json.loads((working_directory / "metadata" / "tensor_metadata.json").read_text())
        entries = {t["name"]: t for t in metadata["features"] + metadata["labels"]}
        assert sorted(entries) + [c["name"] for c in metadata["extraColumns"]] == sorted(expected_columns)
        assert entries[FEATURE_WORD_SEQ_COL_NAME]["featureKeys"] == {FEATURE_WORD_SEQ_COL_NAME: "int64"}
        assert entries[FEATURE_WORD_SEQ_COL_NAME]["shape"] == [-1]
        assert entries[FEATURE_FIRST_WORD_COL_NAME]["featureKeys"] == {FEATURE_FIRST_WORD_COL_NAME: "int64"}
        assert entries[FEATURE_FIRST_WORD_COL_NAME]["shape"] == []
        assert entries[sparse]["isSparse"] is True
        assert entries[sparse]["featureKeys"] == {f"{sparse}/indices": "int64", f"{sparse}/values": "float32"}
        assert entries[dense]["featureKeys"] == {dense: "float32"}
        examples = _examples(working_directory / "trainingData")
        assert len(examples) == 5
        for example in examples:
            assert example[FEATURE_WORD_SEQ_COL_NAME][0] == "int64_list"
            assert example[FEATURE_FIRST_WORD_COL_NAME][0] == "int64_list"
            assert len(example[FEATURE_FIRST_WORD_COL_NAME][1]) == 1
            assert example[f"{sparse}/indices"][0] == "int64_list"
            assert example[f"{sparse}/values"][0] == "float_list"
            assert example[dense][0] == "float_list"
        rows = [(e[f"{sparse}/indices"][1], e[f"{sparse}/values"][1], e[dense][1]) for e in examples]

    _check_dense_matches_sparse(rows)
    assert (working_directory / "trainingData" / "_SUCCESS").exists()


@pytest.mark.parametrize(("output_format", "discard_unknown_entries"), TEST_DATA)
def test_text_seq_conversion(tmp_path, output_format, discard_unknown_entries):
    """jobSegments (an array of strings) becomes jobSegments_ids, a list of longs with one id
    per string (at most one per string when unknown entries are discarded)."""
    working_directory = tmp_path / "indices-conversion-test"
    _run(
        working_directory,
        AVRO2TF_CONFIG_PATH_VALUE_TEXT_SEQ,
        INPUT_TEXT_SEQ_FILE_PATHS,
        output_format,
        discard_unknown_entries,
    )

    with open(resource(INPUT_TEXT_SEQ_FILE_PATHS), "rb") as f:
        names = [row["jobSegments"] for row in fastavro.reader(f)]
    if output_format == AVRO_RECORD:
        schema, records = read_avro_folder(working_directory / "trainingData")
        assert is_array_of(avro_field_types(schema)["jobSegments_ids"], "long")
        ids = [record["jobSegments_ids"] or [] for record in records]
    else:
        examples = _examples(working_directory / "trainingData")
        assert all(e["jobSegments_ids"][0] == "int64_list" for e in examples if "jobSegments_ids" in e)
        ids = [e.get("jobSegments_ids", ("int64_list", []))[1] for e in examples]

    assert len(names) == len(ids) == 10
    for row_names, row_ids in zip(names, ids):
        if discard_unknown_entries:
            assert len(row_ids) <= len(row_names)
        else:
            assert len(row_ids) == len(row_names)
