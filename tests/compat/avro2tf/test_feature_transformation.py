"""Ported from linkedin/Avro2TF avro2tf/src/test/scala/com/linkedin/avro2tf/jobs/FeatureTransformationTest.scala.

`FeatureTransformation.run` (tokenization, then hashing) is our `extract_tensors` kernel
(which tokenizes) followed by `hash_tensors`; the records the Scala test saves and reads back
are those of one tensorize run with Avro output, shared by the two tests.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from beam_tensorize.config import load_config
from beam_tensorize.kernels.features.extract import extract_tensors
from beam_tensorize.kernels.features.hashing import hash_tensors
from tests.compat.avro2tf.helpers import (
    AVRO2TF_CONFIG_PATH_VALUE_SAMPLE,
    INPUT_TEXT_FILE_PATHS,
    input_batch,
    read_avro_folder,
    resource,
    tensorize,
)

FEATURE_WORD_SEQ_COL_NAME = "wordSeq"
FEATURE_WORD_SEQ_HASHED_COL_NAME = "wordSeq_hashed"
FEATURE_WORDS_WIDE_FEATURES_HASH_COL_NAME = "words_wideFeatures_hash"


@pytest.fixture(scope="module")
def config():
    return load_config(resource(AVRO2TF_CONFIG_PATH_VALUE_SAMPLE))


@pytest.fixture(scope="module")
def transformed(config) -> pa.RecordBatch:
    """FeatureExtraction.run, then FeatureTransformation.run."""
    return hash_tensors(extract_tensors(input_batch(INPUT_TEXT_FILE_PATHS), config.tensors), config.tensors)


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    """The working directory of a run of the sample config on text.avro (Avro output)."""
    working_directory = tmp_path_factory.mktemp("feature-transformation-test") / "text"
    code = tensorize(
        [
            "--input-paths", resource(INPUT_TEXT_FILE_PATHS),
            "--working-dir", str(working_directory),
            "--avro2tf-config-path", resource(AVRO2TF_CONFIG_PATH_VALUE_SAMPLE),
            "--output-format", "avro",
        ]
    )  # fmt: skip
    assert code == 0
    return working_directory


@pytest.mark.pipeline
def test_text_feature_transformation(config, transformed, saved):
    # Check if the actual columns of the result match those specified in Avro2TF parameters
    assert sorted(transformed.schema.names) == sorted(config.tensor_names)
    # Check text feature is successfully transformed to Strings
    word_seq = transformed.schema.field(FEATURE_WORD_SEQ_COL_NAME).type
    assert pa.types.is_list(word_seq) or pa.types.is_large_list(word_seq)
    assert word_seq.value_type in (pa.string(), pa.large_string())
    assert (saved / "trainingData" / "_SUCCESS").exists()


@pytest.mark.pipeline
def test_hash_transformation(config, transformed, saved):
    # Check if the actual columns of the result match those specified in Avro2TF parameters
    assert sorted(transformed.schema.names) == sorted(config.tensor_names)

    _, records = read_avro_folder(saved / "trainingData")
    assert len(records) == 5
    for record in records:
        indices = record[FEATURE_WORDS_WIDE_FEATURES_HASH_COL_NAME]["indices"]
        # Make sure ids are distinct
        assert len(indices) == len(set(indices))
        # Make sure ids are all within the specified bucket size
        assert all(i <= 100 for i in indices)

        hashed_word_seq = record[FEATURE_WORD_SEQ_HASHED_COL_NAME]
        # Make sure the wordSeq_hashed is hashed to 4 Integers
        assert len(hashed_word_seq) == 4
