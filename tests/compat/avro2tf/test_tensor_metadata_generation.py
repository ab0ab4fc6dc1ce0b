"""Ported from linkedin/Avro2TF avro2tf/src/test/scala/com/linkedin/avro2tf/jobs/TensorMetadataGenerationTest.scala.

`TensorMetadataGeneration.run` (after extraction, transformation and feature-list
generation) is the tensorize command in train mode with `--skip-conversion true`. Avro2TF's
`tensor_metadata.json` is compared with ours cut to Avro2TF's keys (name, dtype, shape,
numUniqueValues, isSparse, isDocumentFeature; ours adds parse, featureKeys, ... beside
them, see docs/metadata.md), in the same order.
"""

from __future__ import annotations

import pytest

from tests.compat.avro2tf.helpers import (
    AVRO2TF_CONFIG_PATH_VALUE_SAMPLE,
    AVRO2TF_CONFIG_PATH_VALUE_SAMPLE_WITHOUT_INT_FEATURES,
    EXPECTED_TENSOR_METADATA_GENERATED_JSON_PATH_TEXT,
    EXPECTED_TENSOR_METADATA_WITHOUT_INT_FEATURES_GENERATED_JSON_PATH_TEXT,
    EXTERNAL_FEATURE_LIST_FILE_NAME_TEXT,
    INPUT_TEXT_FILE_PATHS,
    avro2tf_metadata,
    expected_metadata,
    resource,
    tensorize,
    write_external_feature_list,
)

pytestmark = pytest.mark.pipeline


@pytest.mark.parametrize(
    ("avro2tf_config_path", "expected_tensor_metadata_path", "ours_differ"),
    [
        pytest.param(
            AVRO2TF_CONFIG_PATH_VALUE_SAMPLE,
            EXPECTED_TENSOR_METADATA_GENERATED_JSON_PATH_TEXT,
            # Two deliberate differences (docs/migrating-from-avro2tf.md): a hashed tensor's
            # numUniqueValues counts the dummy id n that null / empty input gets (Avro2TF gives
            # it too but says n, too small an embedding table); and Avro2TF's tokenizer rebuilds
            # every tokenized column from the input, so only the last one (wordSeq) keeps its
            # tokens and wordSeq_response lists 5 whole reviews (6), ours its 401 tokens (402).
            {"wordSeq_hashed": 1001, "wordSeq_response": 402},
            id="sample",
        ),
        pytest.param(
            AVRO2TF_CONFIG_PATH_VALUE_SAMPLE_WITHOUT_INT_FEATURES,
            EXPECTED_TENSOR_METADATA_WITHOUT_INT_FEATURES_GENERATED_JSON_PATH_TEXT,
            {},
            id="without-int-features",
        ),
    ],
)
def test_tensor_metadata_generation(
    tmp_path, avro2tf_config_path, expected_tensor_metadata_path, ours_differ
):
    working_directory = tmp_path / "tensor-metadata-generation-test-text"
    # Set up external feature list
    external = write_external_feature_list(
        working_directory / "external-feature-list-text", EXTERNAL_FEATURE_LIST_FILE_NAME_TEXT
    )

    code = tensorize(
        [
            "--input-paths", resource(INPUT_TEXT_FILE_PATHS),
            "--working-dir", str(working_directory),
            "--avro2tf-config-path", resource(avro2tf_config_path),
            "--external-feature-list-path", external,
            "--skip-conversion", "true",
        ]
    )  # fmt: skip
    assert code == 0

    # Check if tensor metadata JSON file is correctly generated
    actual = avro2tf_metadata(working_directory / "metadata" / "tensor_metadata.json")
    expected = expected_metadata(expected_tensor_metadata_path)
    for entry in expected["features"] + expected["labels"]:
        entry["numUniqueValues"] = ours_differ.get(entry["name"], entry["numUniqueValues"])
    assert actual == expected
