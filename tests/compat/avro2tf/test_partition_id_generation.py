"""Ported from linkedin/Avro2TF avro2tf/src/test/scala/com/linkedin/avro2tf/jobs/PartitionIdGenerationTest.scala.

`PartitionIdGeneration.run` is the tensorize command with Avro2TF's `--partition-field-name`
(default 100 partitions), Avro output: a `partitionId` column after the tensors, an entry for
it in the metadata, and the records in `partition=<id>/` folders.
"""

from __future__ import annotations

import re

import pytest

from beam_tensorize.config import load_config
from tests.compat.avro2tf.helpers import (
    AVRO2TF_CONFIG_PATH_VALUE_SHARE_FEATURE,
    EXPECTED_TENSOR_METADATA_WITH_PARTITION_ID,
    INPUT_SHARE_FEATURE_PATH,
    avro2tf_metadata,
    expected_metadata,
    read_avro_folder,
    resource,
    tensorize,
)

pytestmark = pytest.mark.pipeline

PARTITION_ID_FIELD_NAME = "partitionId"
PARTITION_COLUMN_NAME = "partition"


def test_conversion(tmp_path):
    working_directory = tmp_path / "partition-test"
    code = tensorize(
        [
            "--input-paths", resource(INPUT_SHARE_FEATURE_PATH),
            "--working-dir", str(working_directory),
            "--avro2tf-config-path", resource(AVRO2TF_CONFIG_PATH_VALUE_SHARE_FEATURE),
            "--output-format", "avro",
            "--partition-field-name", "send_platform",
        ]
    )  # fmt: skip
    assert code == 0
    converted_columns = list(load_config(resource(AVRO2TF_CONFIG_PATH_VALUE_SHARE_FEATURE)).tensor_names)

    # Check if the partition id is in the final data
    schema, records = read_avro_folder(working_directory / "trainingData")
    columns = [f["name"] for f in schema["fields"]]
    assert [c for c in columns if c not in converted_columns] == [PARTITION_ID_FIELD_NAME]
    assert len(records) == 5

    partition_dirs = [p.name for p in (working_directory / "trainingData").iterdir() if p.is_dir()]
    # Check if the outputs are divided into sub dirs
    assert partition_dirs
    assert all(re.fullmatch(f"{PARTITION_COLUMN_NAME}=[0-9]+", d) for d in partition_dirs)

    # Check the appended partition id is in the metadata (last here: it is the known difference)
    assert avro2tf_metadata(working_directory / "metadata" / "tensor_metadata.json") == expected_metadata(
        EXPECTED_TENSOR_METADATA_WITH_PARTITION_ID
    )
