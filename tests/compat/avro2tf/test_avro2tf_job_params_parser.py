"""Ported from linkedin/Avro2TF avro2tf/src/test/scala/com/linkedin/avro2tf/parsers/Avro2TFJobParamsParserTest.scala.

`Avro2TFJobParamsParser.parse(args)` turns Avro2TF's command line into `Avro2TFParams`. Ours
is the tensorize command's flag handling: Avro2TF's flags rewritten to ours
(`pipelines.avro2tf_flags.translate`), parsed (`TensorizeOptions`) and resolved into the job's
settings (`pipelines.tensorize._resolve` -> `TensorizeSpec`), which raises `ValueError` where
Avro2TF's parser throws `IllegalArgumentException`. Where Avro2TF keeps a value we map it:
`inputDateRange` -> the day folders the range reads (created here: our parser looks for them),
`minParts` / `enableCache` -> the notes saying Beam has no such setting,
`numOfOutputFiles` -> `num_shards`, `workingDir` -> `output`.
"""

from __future__ import annotations

import datetime

import pytest

from beam_tensorize.config import ConfigError, HashInfo, InputFeatureInfo, Tokenization, TransformConfig
from tests.compat.avro2tf.helpers import (
    AVRO2TF_CONFIG_PATH_VALUE_2,
    AVRO2TF_CONFIG_PATH_VALUE_3,
    AVRO2TF_CONFIG_PATH_VALUE_4,
    AVRO2TF_CONFIG_PATH_VALUE_5,
    resource,
)

# ConstantsForTest.scala
INPUT_DATE_RANGE_VALUE = "20190101-20190117"
INPUT_DAYS_RANGE_VALUE = "6-3"
NUM_OUTPUT_FILES_VALUE = 3
MIN_PARTS_VALUE = 100
ENABLE_SHUFFLE_VALUE = "false"
WORKING_DIRECTORY_VALUE = "/output/456"
EXTERNAL_FEATURE_LIST_PATH_VALUE = "/tmp/external-feature-list"
AVRO2TF_CONFIG_TEST_VALUE = "test_value"

_SHARED_NAME = (
    "the config names a feature and a label 'test_value': our parse_config refuses the duplicate name, "
    "Avro2TF's parser loads it"
)


@pytest.fixture()
def input_paths_value(tmp_path) -> str:
    """Avro2TF's INPUT_PATHS_VALUE ("/input/123") with the day folders of the date range: our
    parser resolves the range into the folders that exist (Avro2TF's reader does it later)."""
    root = tmp_path / "input" / "123"
    first = datetime.date(2019, 1, 1)
    for day in range(17):
        folder = root / "daily" / f"{first + datetime.timedelta(days=day):%Y/%m/%d}"
        folder.mkdir(parents=True)
        (folder / "part-00000.avro").write_bytes(b"")
    return str(root)


def _parse(arguments: dict[str, object]):
    """(our job settings, the notes) for Avro2TF's `--name value` arguments, as the CLI gets
    them (`TestUtil.convertParamMapToParamList`)."""
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipelines import avro2tf_flags
    from pipelines.tensorize import TensorizeOptions, _check_our_flags, _resolve

    args = [item for name, value in arguments.items() for item in (f"--{name}", str(value))]
    argv, notes = avro2tf_flags.translate(args)
    _check_our_flags(argv)
    return _resolve(PipelineOptions(argv).view_as(TensorizeOptions)), notes


def _command_line_arguments(input_paths: str, config_path: str) -> dict[str, object]:
    """getCommandLineArguments"""
    return {
        "input-paths": input_paths,
        "working-dir": WORKING_DIRECTORY_VALUE,
        "input-date-range": INPUT_DATE_RANGE_VALUE,
        "num-output-files": NUM_OUTPUT_FILES_VALUE,
        "min-parts": MIN_PARTS_VALUE,
        "shuffle": ENABLE_SHUFFLE_VALUE,
        "execution-mode": "test",
        "external-feature-list-path": EXTERNAL_FEATURE_LIST_PATH_VALUE,
        "avro2tf-config-path": config_path,
    }


def _check_params_without_config(spec, notes, input_paths: str) -> None:
    """testParamsEqualsWithoutAvro2TFConfig"""
    first = datetime.date(2019, 1, 1)
    days = [f"{input_paths}/daily/{first + datetime.timedelta(days=d):%Y/%m/%d}/[!_.]*" for d in range(17)]
    assert spec.shuffle is False  # enableShuffle
    assert spec.external_feature_lists == EXTERNAL_FEATURE_LIST_PATH_VALUE  # externalFeaturesListPath
    assert (
        list(spec.inputs) == days
    )  # inputPaths read over inputDateRange 20190101..20190117, no inputDaysRange
    assert spec.execution_mode == "test"  # executionMode
    assert any(note.startswith("--min-parts:") for note in notes)  # minParts: Beam has none
    assert not any(note.startswith("--enable-cache") for note in notes)  # enableCache: not given
    assert spec.num_shards == NUM_OUTPUT_FILES_VALUE  # numOfOutputFiles
    assert spec.skip_conversion is False  # skipConversion
    assert spec.output == WORKING_DIRECTORY_VALUE  # workingDir


def _check_config(spec) -> None:
    """testAvro2TFConfigEquals, against getExpectedFeature: the first feature's input, its
    output dtype, name and whether its shape is empty."""
    first = spec.config.features[0]
    assert first.input == InputFeatureInfo(
        column_expr=AVRO2TF_CONFIG_TEST_VALUE,
        transform_config=TransformConfig(HashInfo(1), Tokenization(True)),
    )
    assert first.output.dtype == "long"
    assert first.output.name == AVRO2TF_CONFIG_TEST_VALUE
    assert first.output.shape == ()


@pytest.mark.xfail(strict=True, raises=ConfigError, reason=_SHARED_NAME)
def test_parse(input_paths_value):
    arguments = _command_line_arguments(input_paths_value, resource(AVRO2TF_CONFIG_PATH_VALUE_2))

    spec, notes = _parse(arguments)

    _check_params_without_config(spec, notes, input_paths_value)
    _check_config(spec)


@pytest.mark.xfail(strict=True, raises=ConfigError, reason=_SHARED_NAME)
def test_parse_with_default_col_expr(input_paths_value):
    """config_3's feature has an inputFeatureInfo without columnExpr: it reads `test_value`."""
    arguments = _command_line_arguments(input_paths_value, resource(AVRO2TF_CONFIG_PATH_VALUE_3))

    spec, notes = _parse(arguments)

    _check_params_without_config(spec, notes, input_paths_value)
    _check_config(spec)


def test_parse_with_both_col_expr_and_col_config(input_paths_value):
    arguments = _command_line_arguments(input_paths_value, resource(AVRO2TF_CONFIG_PATH_VALUE_4))

    with pytest.raises(
        ValueError, match=r"features\[0\]\.inputFeatureInfo: columnExpr and columnConfig are exclusive"
    ):
        _parse(arguments)


@pytest.mark.xfail(strict=True, raises=ConfigError, reason=_SHARED_NAME)
def test_parse_with_default_shape(input_paths_value):
    """config_5's feature has no shape: a scalar."""
    arguments = _command_line_arguments(input_paths_value, resource(AVRO2TF_CONFIG_PATH_VALUE_5))

    spec, notes = _parse(arguments)

    _check_params_without_config(spec, notes, input_paths_value)
    _check_config(spec)


def test_parse_with_both_date_and_days_range(input_paths_value):
    arguments = {
        **_command_line_arguments(input_paths_value, resource(AVRO2TF_CONFIG_PATH_VALUE_2)),
        "input-days-range": INPUT_DAYS_RANGE_VALUE,
    }

    with pytest.raises(ValueError, match="give either --input_date_range or --input_days_range, not both"):
        _parse(arguments)


def test_avro2tf_parsing_failure():
    arguments = {
        "input-paths": "/input/123",
        "working-dir": WORKING_DIRECTORY_VALUE,
        "avro2tf-config-path": resource(AVRO2TF_CONFIG_PATH_VALUE_2),
        "execution-mode": "incorrect",
    }

    with pytest.raises(ValueError, match=r"--execution_mode: invalid choice: 'incorrect'"):
        _parse(arguments)


@pytest.mark.parametrize(
    ("tensors_sharing_feature_lists", "message"),
    [
        # a group of one tensor
        pytest.param("a; b,c", r"group 'a' needs two or more tensor names", id="a; b,c"),
        # the same tensor in two groups
        pytest.param(
            "a,b;b,c,d",
            r"tensor 'b' is in two groups",
            id="a,b;b,c,d",
            marks=pytest.mark.xfail(
                strict=True,
                raises=AssertionError,
                reason="parse_config refuses config_2's shared name 'test_value' first; and we check the "
                "groups against the config's tensors (feature_list_groups), so unknown 'a' before the overlap",
            ),
        ),
        pytest.param(
            "",
            r"tensors_sharing_feature_lists",
            id="empty",
            marks=pytest.mark.xfail(
                strict=True,
                raises=AssertionError,
                reason="we take an empty --tensors-sharing-feature-lists as no groups (pipelines.tensorize._groups)",
            ),
        ),
        pytest.param(
            ";",
            r"tensors_sharing_feature_lists",
            id=";",
            marks=pytest.mark.xfail(
                strict=True,
                raises=AssertionError,
                reason="we take --tensors-sharing-feature-lists ';' as no groups (pipelines.tensorize._groups)",
            ),
        ),
    ],
)
def test_invalid_feature_sharing_settings(tensors_sharing_feature_lists, message):
    arguments = {
        "input-paths": "/input/123",
        "working-dir": WORKING_DIRECTORY_VALUE,
        "avro2tf-config-path": resource(AVRO2TF_CONFIG_PATH_VALUE_2),
        "tensors-sharing-feature-lists": tensors_sharing_feature_lists,
    }

    with pytest.raises(ValueError, match=message):
        _parse(arguments)


@pytest.mark.parametrize(
    ("config_input", "parsed_param"),
    [
        pytest.param("a,b", [["a", "b"]], id="a,b"),
        pytest.param("a,b;", [["a", "b"]], id="a,b;"),
        pytest.param("  a, b ;", [["a", "b"]], id="  a, b ;"),
        pytest.param(" a, b ; c,d,e;", [["a", "b"], ["c", "d", "e"]], id=" a, b ; c,d,e;"),
        pytest.param(" a, b ; c,d,e ", [["a", "b"], ["c", "d", "e"]], id=" a, b ; c,d,e "),
    ],
)
@pytest.mark.xfail(
    strict=True,
    raises=ConfigError,
    reason=f"{_SHARED_NAME}; our spec then also refuses groups of tensors the config lacks "
    "(TensorizeSpec -> feature_list_groups), Avro2TF only when the job runs",
)
def test_parse_sharing_feature_lists(input_paths_value, config_input, parsed_param):
    arguments = {
        **_command_line_arguments(input_paths_value, resource(AVRO2TF_CONFIG_PATH_VALUE_5)),
        "tensors-sharing-feature-lists": config_input,
    }

    spec, notes = _parse(arguments)

    assert [list(group) for group in spec.shared_feature_lists] == parsed_param
    _check_params_without_config(spec, notes, input_paths_value)
    _check_config(spec)
