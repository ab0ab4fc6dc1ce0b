"""Ported from linkedin/Avro2TF avro2tf/src/test/scala/com/linkedin/avro2tf/jobs/FeatureListGenerationTest.scala.

`FeatureListGeneration.run` is the tensorize command in train mode with
`--skip-conversion true` (the feature lists and the metadata, no records), with Avro2TF's
flags. Its exceptions are the command's refusals: a non-zero exit code and one error line.
The per-tensor counts Avro2TF writes to `<working dir>/tmp-feature-list/columnName=<tensor>/`
(`entry,count` lines) are ours in `metadata/featureListCounts/<tensor>.tsv`
(`count<TAB>entry` lines).
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from beam_tensorize.config import load_config
from beam_tensorize.kernels.features.extract import extract_tensors
from beam_tensorize.kernels.features.ntv import is_ntv
from tests.compat.avro2tf.helpers import (
    AVRO2TF_CONFIG_PATH_VALUE_SAMPLE,
    AVRO2TF_CONFIG_PATH_VALUE_SHARE_FEATURE,
    AVRO2TF_CONFIG_PATH_VALUE_VOCAB_SIZE_CAP,
    EXPECTED_FEATURE_LIST_W_COUNTS_PATH,
    EXTERNAL_FEATURE_LIST_FILE_NAME_TEXT,
    FEATURE_LIST_SHARING_EXPECTED_VALUE_PATH_CASE1,
    FEATURE_LIST_SHARING_EXPECTED_VALUE_PATH_CASE2,
    INPUT_SHARE_FEATURE_PATH,
    INPUT_TEXT_FILE_PATHS,
    MIX_NTV_FEATURE_NAME,
    TENSORS_SHARING_FEATURE_LISTS_VALUE_CASE_1,
    TENSORS_SHARING_FEATURE_LISTS_VALUE_CASE_2,
    TENSORS_SHARING_FEATURE_LISTS_VALUE_CASE_3,
    input_batch,
    lines,
    resource,
    tensorize,
    write_external_feature_list,
)

pytestmark = pytest.mark.pipeline


def _generate(working_directory: Path, config_path: str, input_path: str, *flags: str) -> int:
    """Feature-list generation (train mode, no conversion) into `working_directory`."""
    return tensorize(
        [
            "--input-paths", resource(input_path),
            "--working-dir", str(working_directory),
            "--avro2tf-config-path", resource(config_path),
            "--skip-conversion", "true",
            *flags,
        ]
    )  # fmt: skip


def _is_string(t: pa.DataType) -> bool:
    return pa.types.is_string(t) or pa.types.is_large_string(t)


def test_feature_list(tmp_path):
    """Every feature whose transformed column holds strings, lists of strings or NTV records,
    and that is not hashed, has a feature list (the external one included)."""
    working_directory = tmp_path / "feature-list-generation-test-text"
    # Set up external feature list
    external = write_external_feature_list(
        working_directory / "external-feature-list-text", EXTERNAL_FEATURE_LIST_FILE_NAME_TEXT
    )

    assert _generate(working_directory, AVRO2TF_CONFIG_PATH_VALUE_SAMPLE, INPUT_TEXT_FILE_PATHS,
                     "--external-feature-list-path", external) == 0  # fmt: skip

    # Check if columns of String Array type and NTV struct type have feature lists generated
    files = {p.name for p in (working_directory / "featureList").rglob("*") if p.is_file()}
    config = load_config(resource(AVRO2TF_CONFIG_PATH_VALUE_SAMPLE))
    transformed = extract_tensors(input_batch(INPUT_TEXT_FILE_PATHS), config.tensors)

    def needs_feature_list(name: str) -> bool:
        kind = transformed.schema.field(name).type
        if pa.types.is_list(kind) or pa.types.is_large_list(kind):
            return _is_string(kind.value_type) or is_ntv(kind)
        return _is_string(kind)

    cols_need_feature_list = {
        feature.name
        for feature in config.features
        if needs_feature_list(feature.name) and feature.input.transform_config.hash_info is None
    }

    assert cols_need_feature_list == {
        "firstWord",
        "wordSeq",
        "words_term",
        "words_wideFeatures_sparse",
        "words_wideFeatures_dense",
    }
    assert cols_need_feature_list <= files


@pytest.mark.parametrize(
    ("tensors_sharing_feature_lists", "message"),
    [
        # Case a) output tensor has corresponding external feature list
        pytest.param(
            "words_term,wordSeq",
            "tensor 'words_term' has an external feature list and is in a group sharing feature lists",
            id="words_term,wordSeq",
        ),
        # Case b) there are hashing configurations for the output tensor
        pytest.param(
            "wordSeq,wordSeq_hashed",
            "tensors sharing feature lists: tensor 'wordSeq_hashed' is hashed (hashInfo), so it has no feature list",
            id="wordSeq,wordSeq_hashed",
        ),
    ],
)
def test_conflicting_feature_list_sharing_setting(tmp_path, capsys, tensors_sharing_feature_lists, message):
    """IllegalArgumentException "Settings in --tensors-sharing-feature-lists conflict with other
    settings": the command fails, naming the conflict, and commits nothing."""
    working_directory = tmp_path / "feature-list-generation-test-text"
    # Set up external feature list
    external = write_external_feature_list(
        working_directory / "external-feature-list-text", EXTERNAL_FEATURE_LIST_FILE_NAME_TEXT
    )

    code = _generate(
        working_directory, AVRO2TF_CONFIG_PATH_VALUE_SAMPLE, INPUT_TEXT_FILE_PATHS,
        "--external-feature-list-path", external,
        "--tensors-sharing-feature-lists", tensors_sharing_feature_lists,
    )  # fmt: skip

    err = capsys.readouterr().err
    assert code != 0
    assert err.startswith("error: ") and message in err, err
    assert not (working_directory / "featureList").exists()
    assert not (working_directory / "_SUCCESS").exists()


@pytest.fixture(scope="module")
def sharing_case_1(tmp_path_factory) -> Path:
    """Feature lists of the share-feature config with TENSORS_SHARING_FEATURE_LISTS_VALUE_CASE_1."""
    working_directory = tmp_path_factory.mktemp("feature-list-generation-case-1")
    assert (
        _generate(
            working_directory,
            AVRO2TF_CONFIG_PATH_VALUE_SHARE_FEATURE,
            INPUT_SHARE_FEATURE_PATH,
            "--tensors-sharing-feature-lists",
            TENSORS_SHARING_FEATURE_LISTS_VALUE_CASE_1,
        )
        == 0
    )
    return working_directory


def test_collect_and_save_feature_list(sharing_case_1):
    """The counts of each tensor's entries (before the lists of a group are merged)."""
    counts_folder = sharing_case_1 / "metadata" / "featureListCounts"
    actual_tmp_feature_list_dirs = {p.name[: -len(".tsv")] for p in counts_folder.iterdir()}

    # expected feature lists with counts, one file per output tensor
    expected_folder = Path(resource(EXPECTED_FEATURE_LIST_W_COUNTS_PATH))
    expected_files = sorted(expected_folder.iterdir())
    assert len(expected_files) == 8
    for expected_file in expected_files:
        expected_feature_items = set(lines(expected_file))
        # make sure the actual feature list with counts exists
        feature_list_name = expected_file.name.split("=", 1)[1]  # columnName=<tensor>
        assert feature_list_name in actual_tmp_feature_list_dirs
        actual_feature_items = set()
        for line in lines(counts_folder / f"{feature_list_name}.tsv"):
            count, entry = line.split("\t", 1)
            actual_feature_items.add(f"{entry},{count}")
        # make sure the counts of the feature list are correct
        assert actual_feature_items == expected_feature_items, feature_list_name


@pytest.mark.parametrize(
    ("tensors_sharing_feature_lists", "expected_feat_lists_dir"),
    [
        # case 1) all output tensors have some feature list sharing setting, 2 or 3 tensors share
        # the same feature list
        pytest.param(
            TENSORS_SHARING_FEATURE_LISTS_VALUE_CASE_1,
            FEATURE_LIST_SHARING_EXPECTED_VALUE_PATH_CASE1,
            id="case-1",
        ),
        # case 2) some output tensors have feature list sharing settings, some not
        pytest.param(
            TENSORS_SHARING_FEATURE_LISTS_VALUE_CASE_2,
            FEATURE_LIST_SHARING_EXPECTED_VALUE_PATH_CASE2,
            id="case-2",
        ),
    ],
)
def test_feature_list_with_feature_list_sharing(
    request, tmp_path, tensors_sharing_feature_lists, expected_feat_lists_dir
):
    if tensors_sharing_feature_lists == TENSORS_SHARING_FEATURE_LISTS_VALUE_CASE_1:
        working_directory = request.getfixturevalue(
            "sharing_case_1"
        )  # the run testCollectAndSaveFeatureList reads
    else:
        working_directory = tmp_path / "feature-list-generation-test-text"
        assert _generate(working_directory, AVRO2TF_CONFIG_PATH_VALUE_SHARE_FEATURE, INPUT_SHARE_FEATURE_PATH,
                         "--tensors-sharing-feature-lists", tensors_sharing_feature_lists) == 0  # fmt: skip

    # get actual generated feature lists
    actual_feature_list_files = {
        p.name: p for p in (working_directory / "featureList").rglob("*") if p.is_file()
    }
    # get expected feature lists, one file for one output tensor
    expected_files = sorted(Path(resource(expected_feat_lists_dir)).iterdir())
    assert len(expected_files) == 8
    for expected_file in expected_files:
        expected_feature_items = lines(expected_file)
        actual_feature_items = lines(actual_feature_list_files[expected_file.name])
        # make sure contents of feature list is correct
        assert len(actual_feature_items) == len(expected_feature_items), expected_file.name
        for actual, expected in zip(actual_feature_items, expected_feature_items):
            assert actual == expected


def test_exception_non_unique_name_for_ntv_sharing_feature_list(tmp_path, capsys):
    """IllegalArgumentException "Output tensors of NTV type with feature sharing settings can
    only have 1 value for 'name' across the data set": fruits_day4 holds three names."""
    working_directory = tmp_path / "feature-list-generation-test-text"

    code = _generate(
        working_directory,
        AVRO2TF_CONFIG_PATH_VALUE_SHARE_FEATURE,
        INPUT_SHARE_FEATURE_PATH,
        "--tensors-sharing-feature-lists",
        TENSORS_SHARING_FEATURE_LISTS_VALUE_CASE_3,
    )

    err = capsys.readouterr().err
    assert code != 0
    assert (
        "tensor 'fruits_day4' shares a feature list (--tensors_sharing_feature_lists) but its name-term-value "
        "records have several names ('david_fruits', 'lily_fruits', 'lucy_fruits')"
    ) in err, err
    assert not (working_directory / "featureList").exists()


def test_term_only_feature_list(tmp_path):
    working_directory = tmp_path / "feature-list-generation-test-text"
    assert _generate(working_directory, AVRO2TF_CONFIG_PATH_VALUE_SHARE_FEATURE, INPUT_SHARE_FEATURE_PATH,
                     "--enable-term-only-feature-list", "true") == 0  # fmt: skip

    feature_lists = set(os.listdir(working_directory / "featureList"))
    term_only_feature_lists = set(os.listdir(working_directory / "termOnlyFeatureList"))
    assert feature_lists == term_only_feature_lists
    assert len(feature_lists) == 8

    terms = lines(working_directory / "termOnlyFeatureList" / MIX_NTV_FEATURE_NAME)
    name_terms = lines(working_directory / "featureList" / MIX_NTV_FEATURE_NAME)
    term_counts = Counter(line.split(",")[-1] for line in name_terms)
    expected_terms = [k for k, _ in sorted(term_counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    assert terms == expected_terms
    assert terms == ["apple", "banana", "pear"]


def test_feature_list_capping(tmp_path):
    working_directory = tmp_path / "feature-list-generation-test-text"
    cap_size = 1
    assert _generate(working_directory, AVRO2TF_CONFIG_PATH_VALUE_VOCAB_SIZE_CAP, INPUT_SHARE_FEATURE_PATH,
                     "--enable-term-only-feature-list", "true") == 0  # fmt: skip

    assert len(lines(working_directory / "featureList" / MIX_NTV_FEATURE_NAME)) == cap_size
    assert len(lines(working_directory / "termOnlyFeatureList" / MIX_NTV_FEATURE_NAME)) == cap_size
