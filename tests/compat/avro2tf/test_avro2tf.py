"""Ported from linkedin/Avro2TF avro2tf/src/test/scala/com/linkedin/avro2tf/jobs/Avro2TFTest.scala.

`Avro2TF.run(session, params)` is our tensorize command run in-process with Avro2TF's flags.
Avro2TF's default output format is Avro; where the Scala test reads the records back, the
run here asks for `--output-format avro` and reads them with fastavro.
"""

from __future__ import annotations

import pytest

from tests.compat.avro2tf.helpers import (
    AVRO2TF_CONFIG_PATH_VALUE_MOVIELENS,
    AVRO2TF_CONFIG_PATH_VALUE_SAMPLE,
    EXTERNAL_FEATURE_LIST_FILE_NAME_MOVIELENS,
    EXTERNAL_FEATURE_LIST_FILE_NAME_TEXT,
    INPUT_MOVIELENS_FILE_PATHS,
    INPUT_TEXT_FILE_PATHS,
    avro_field_types,
    is_sparse_record,
    read_avro_folder,
    resource,
    tensorize,
    write_external_feature_list,
)

pytestmark = pytest.mark.pipeline


@pytest.mark.parametrize(
    ("avro2tf_config_path", "input_path", "external_feature_list_file_name"),
    [
        pytest.param(
            AVRO2TF_CONFIG_PATH_VALUE_SAMPLE,
            INPUT_TEXT_FILE_PATHS,
            EXTERNAL_FEATURE_LIST_FILE_NAME_TEXT,
            id="sample",
        ),
        pytest.param(
            AVRO2TF_CONFIG_PATH_VALUE_MOVIELENS,
            INPUT_MOVIELENS_FILE_PATHS,
            EXTERNAL_FEATURE_LIST_FILE_NAME_MOVIELENS,
            id="movielens",
        ),
    ],
)
def test_avro2tf(tmp_path, avro2tf_config_path, input_path, external_feature_list_file_name):
    working_directory = tmp_path / "avro2tf-test"
    config = resource(avro2tf_config_path)
    # Set up external feature list
    external = write_external_feature_list(
        working_directory / "external-feature-list-text", external_feature_list_file_name
    )
    common = [
        "--input-paths",
        resource(input_path),
        "--working-dir",
        str(working_directory),
        "--avro2tf-config-path",
        config,
    ]

    assert tensorize([*common, "--external-feature-list-path", external]) == 0
    assert (working_directory / "trainingData" / "_SUCCESS").exists()
    assert (working_directory / "metadata" / "tensor_metadata.json").exists()
    assert (working_directory / "featureList").is_dir()
    # the external list is the tensor's feature list
    assert (working_directory / "featureList" / external_feature_list_file_name).read_text().splitlines() == [
        "a",
        "b",
        "c",
    ]

    assert tensorize([*common, "--execution-mode", "validation"]) == 0
    assert (working_directory / "validationData" / "_SUCCESS").exists()

    assert tensorize([*common, "--execution-mode", "test"]) == 0
    assert (working_directory / "testData" / "_SUCCESS").exists()


@pytest.mark.parametrize(
    ("avro2tf_config_path", "input_path", "tensors_sharing_feature_lists"),
    [
        pytest.param(
            AVRO2TF_CONFIG_PATH_VALUE_SAMPLE, INPUT_TEXT_FILE_PATHS, "firstWord,dummyName", id="sample"
        ),
        pytest.param(
            AVRO2TF_CONFIG_PATH_VALUE_MOVIELENS,
            INPUT_MOVIELENS_FILE_PATHS,
            "userId,dummyName",
            id="movielens",
        ),
    ],
)
def test_fail_on_invalid_feature_list_sharing_setting(
    tmp_path, capsys, avro2tf_config_path, input_path, tensors_sharing_feature_lists
):
    """IllegalArgumentException "Invalid output tensor name in --tensors-sharing-feature-lists":
    the command refuses the flag (exit code 2, one error line naming the unknown tensor) and
    writes nothing."""
    working_directory = tmp_path / "avro2tf-test"

    code = tensorize(
        [
            "--input-paths", resource(input_path),
            "--working-dir", str(working_directory),
            "--avro2tf-config-path", resource(avro2tf_config_path),
            "--tensors-sharing-feature-lists", tensors_sharing_feature_lists,
        ]
    )  # fmt: skip

    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("error: tensors sharing feature lists: unknown tensor 'dummyName'"), err
    assert not working_directory.exists()


def test_enable_filter_zero(tmp_path):
    """Zeros stay in every sparse vector of the last record without --enable-filter-zero and
    leave them all with it; both outputs have the same schema."""
    working_directory = tmp_path / "avro2tf-test"
    config = resource(AVRO2TF_CONFIG_PATH_VALUE_SAMPLE)
    # Set up external feature list
    external = write_external_feature_list(
        working_directory / "external-feature-list-text", EXTERNAL_FEATURE_LIST_FILE_NAME_TEXT
    )
    working_directory_filter_zero = tmp_path / "avro2tf-test-filterZero"

    def run(output, *flags) -> None:
        code = tensorize(
            ["--input-paths", resource(INPUT_TEXT_FILE_PATHS), "--working-dir", str(output),
             "--avro2tf-config-path", config, "--external-feature-list-path", external,
             "--output-format", "avro", *flags]
        )  # fmt: skip
        assert code == 0
        assert (output / "trainingData" / "_SUCCESS").exists()
        assert (output / "metadata" / "tensor_metadata.json").exists()
        assert (output / "featureList").is_dir()

    run(working_directory)
    schema, records = read_avro_folder(working_directory / "trainingData")
    last = records[-1]

    run(working_directory_filter_zero, "--enable-filter-zero", "true")
    schema_filter_zero, records_filter_zero = read_avro_folder(working_directory_filter_zero / "trainingData")
    last_filter_zero = records_filter_zero[-1]

    assert schema == schema_filter_zero

    sparse_vector_names = [name for name, kind in avro_field_types(schema).items() if is_sparse_record(kind)]
    assert sparse_vector_names == [
        "words_wideFeatures_sparse",
        "words_wideFeatures_hash",
        "words_wideFeatures_response",
    ]
    for name in sparse_vector_names:
        assert [v for v in last[name]["values"] if v == 0.0] != []
        assert [v for v in last_filter_zero[name]["values"] if v == 0.0] == []
