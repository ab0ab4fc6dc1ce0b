"""Ported from linkedin/Avro2TF avro2tf/src/test/scala/com/linkedin/avro2tf/jobs/FeatureExtractionTest.scala.

`FeatureExtraction.run` is our `extract_tensors` kernel without tokenization (Avro2TF
tokenizes in its next step, FeatureTransformation); `Avro2TFJobHelper.saveDataToHDFS` is the
tensorize command's write, run with the same flags.
"""

from __future__ import annotations

import pyarrow as pa
import pytest

from beam_tensorize.config import load_config
from beam_tensorize.kernels.features.extract import extract_tensors
from tests.compat.avro2tf.helpers import (
    AVRO2TF_CONFIG_PATH_VALUE_SAMPLE,
    EXTRA_COLUMNS_TO_KEEP_VALUE,
    INPUT_TEXT_FILE_PATHS,
    input_batch,
    read_avro_folder,
    resource,
    tensorize,
)

FEATURE_WORD_SEQ_COL_NAME = "wordSeq"


@pytest.mark.pipeline
def test_feature_extraction(tmp_path):
    config = load_config(resource(AVRO2TF_CONFIG_PATH_VALUE_SAMPLE))
    extra_columns = EXTRA_COLUMNS_TO_KEEP_VALUE.split(",")
    # checkOutputColumns: the output tensor names, then the extra columns (an alias names its column)
    expected_columns = [*config.tensor_names, "review", "terms"]

    result = extract_tensors(
        input_batch(INPUT_TEXT_FILE_PATHS), config.tensors, extra_columns, tokenize_text=False
    )

    # Check if the actual columns of the result match those specified in Avro2TF parameters
    assert sorted(result.schema.names) == sorted(expected_columns)
    # Check a sample feature is successfully extracted to an output column
    assert result.schema.field(FEATURE_WORD_SEQ_COL_NAME).type in (pa.string(), pa.large_string())

    working_directory = tmp_path / "feature-extraction-test" / "text"
    code = tensorize(
        [
            "--input-paths", resource(INPUT_TEXT_FILE_PATHS),
            "--working-dir", str(working_directory),
            "--avro2tf-config-path", resource(AVRO2TF_CONFIG_PATH_VALUE_SAMPLE),
            "--extra-columns-to-keep", EXTRA_COLUMNS_TO_KEEP_VALUE,
            "--output-format", "avro",
        ]
    )  # fmt: skip
    assert code == 0
    assert (working_directory / "trainingData" / "_SUCCESS").exists()
    schema, records = read_avro_folder(working_directory / "trainingData")
    assert sorted(f["name"] for f in schema["fields"]) == sorted(expected_columns)
    assert len(records) == result.num_rows == 5
