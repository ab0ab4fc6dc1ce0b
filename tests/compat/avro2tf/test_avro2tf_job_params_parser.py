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
import os

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

#: Configs 2, 3 and 5 name a feature and a label `test_value`. Avro2TF's parser loads them and
#: its job refuses them when it starts (`tensorsNameCheck`); ours refuses them when the config
#: is loaded, naming both JSON paths (docs/migrating-from-avro2tf.md, "Deliberate
#: differences"). The rest of each test runs on a copy whose label is renamed.
_SHARED_NAME_ERROR = (
    r"labels\[0\]\.outputTensorInfo\.name: duplicate tensor name 'test_value' \(also at features\[0\]\)"
)


def _label_renamed(config_path: str, tmp_path) -> str:
    """A copy of an Avro2TF test config whose label is named `test_label`."""
    import json

    document = json.loads(open(config_path).read())
    for label in document.get("labels", []):
        label["outputTensorInfo"]["name"] = "test_label"
    copy = tmp_path / f"renamed-{os.path.basename(config_path)}"
    copy.write_text(json.dumps(document))
    return str(copy)


def _parse_shared_name_config(config_path: str, input_paths: str, tmp_path):
    """Our refusal of a config as Avro2TF's tests give it, then (spec, notes) of its copy."""
    with pytest.raises(ConfigError, match=_SHARED_NAME_ERROR):
        _parse(_command_line_arguments(input_paths, config_path))
    return _parse(_command_line_arguments(input_paths, _label_renamed(config_path, tmp_path)))


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
    # enableCache false (not given): the default decides how often train mode reads the input
    assert spec.input_passes is None and not any(note.startswith("--enable-cache") for note in notes)
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


def test_parse(input_paths_value, tmp_path):
    spec, notes = _parse_shared_name_config(
        resource(AVRO2TF_CONFIG_PATH_VALUE_2), input_paths_value, tmp_path
    )

    _check_params_without_config(spec, notes, input_paths_value)
    _check_config(spec)


def test_parse_with_default_col_expr(input_paths_value, tmp_path):
    """config_3's feature has an inputFeatureInfo without columnExpr: it reads `test_value`."""
    spec, notes = _parse_shared_name_config(
        resource(AVRO2TF_CONFIG_PATH_VALUE_3), input_paths_value, tmp_path
    )

    _check_params_without_config(spec, notes, input_paths_value)
    _check_config(spec)


def test_parse_with_both_col_expr_and_col_config(input_paths_value):
    arguments = _command_line_arguments(input_paths_value, resource(AVRO2TF_CONFIG_PATH_VALUE_4))

    with pytest.raises(
        ValueError, match=r"features\[0\]\.inputFeatureInfo: columnExpr and columnConfig are exclusive"
    ):
        _parse(arguments)


def test_parse_with_default_shape(input_paths_value, tmp_path):
    """config_5's feature has no shape: a scalar."""
    spec, notes = _parse_shared_name_config(
        resource(AVRO2TF_CONFIG_PATH_VALUE_5), input_paths_value, tmp_path
    )

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
        pytest.param("a,b;b,c,d", r"tensor 'b' is in two groups", id="a,b;b,c,d"),
        pytest.param("", r"--tensors_sharing_feature_lists: '' names no group", id="empty"),
        pytest.param(";", r"--tensors_sharing_feature_lists: ';' names no group", id=";"),
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
def test_parse_sharing_feature_lists(config_input, parsed_param):
    """The flag's groups as Avro2TF's parser reads them (`pipelines.tensorize.shared_groups`;
    our job then checks them against the config's tensors before reading any data, as
    Avro2TF's FeatureListGeneration does when it runs)."""
    from pipelines.tensorize import shared_groups

    assert shared_groups(config_input) == parsed_param
