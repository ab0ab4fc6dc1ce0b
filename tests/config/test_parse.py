"""Tests for beam_tensorize.config: the model, parsing, validation messages and file loading."""

from __future__ import annotations

import copy
import json
import pathlib
import pickle
from typing import Any

import pytest

from beam_tensorize.config import (
    ConfigError,
    HashInfo,
    InputFeatureInfo,
    NtvSelection,
    OutputTensorInfo,
    TensorConfig,
    TensorizeConfig,
    Tokenization,
    TransformConfig,
    load_config,
    parse_config,
)
from beam_tensorize.config.expr import ExprError, parse_column_expr
from beam_tensorize.sample import AVRO2TF_CONFIG

MOVIELENS = pathlib.Path(AVRO2TF_CONFIG)  # Avro2TF's MovieLens config, bundled with the package
SAMPLE = pathlib.Path(__file__).resolve().parents[2] / "beam_tensorize/sample/avro2tf_config.json"
DTYPES_TEXT = "int, long, float, double, string, boolean, bytes, sparseVector"


def _movielens_path() -> pathlib.Path:
    return MOVIELENS if MOVIELENS.exists() else SAMPLE


def _ok_tensor(name: str = "x", **output: Any) -> dict[str, Any]:
    return {
        "inputFeatureInfo": {"columnExpr": name},
        "outputTensorInfo": {"name": name, "dtype": "long", "shape": [-1], **output},
    }


def _doc(*features: dict[str, Any], labels: list[dict[str, Any]] | None = None) -> dict:
    doc: dict[str, Any] = {"features": list(features) or [_ok_tensor()]}
    if labels is not None:
        doc["labels"] = labels
    return doc


def _with_input(info: Any, name: str = "x") -> dict[str, Any]:
    return {
        "inputFeatureInfo": info,
        "outputTensorInfo": {"name": name, "dtype": "float"},
    }


def _with_output(**output: Any) -> dict[str, Any]:
    return {"inputFeatureInfo": {"columnExpr": "x"}, "outputTensorInfo": output}


def _with_hash(**hash_info: Any) -> dict[str, Any]:
    return _with_input({"columnExpr": "x", "transformConfig": {"hashInfo": hash_info}})


def _with_column_config(column_config: Any) -> dict[str, Any]:
    return _with_input({"columnConfig": column_config})


# A small config using every field, in JSON, YAML and HOCON.
SMALL_JSON = {
    "features": [
        {
            "inputFeatureInfo": {
                "columnExpr": "CAST(a.b AS STRING)",
                "transformConfig": {
                    "hashInfo": {
                        "hashBucketSize": 50,
                        "numHashFunctions": 2,
                        "combiner": "max",
                        "hashFunction": "avro2tf_md5",
                    },
                    "tokenization": {"removeStopWords": True},
                },
            },
            "outputTensorInfo": {
                "name": "ab",
                "dtype": "long",
                "shape": [2, -1],
                "isSparse": True,
                "isDocumentFeature": False,
                "vocabSizeCap": 10,
            },
        },
        {
            "inputFeatureInfo": {"columnConfig": {"ntv": {"blacklist": ["x", "y"]}}},
            "outputTensorInfo": {
                "name": "ntv_vec",
                "dtype": "float",
                "shape": [],
                "isSparse": True,
            },
        },
        {"outputTensorInfo": {"name": "userId", "dtype": "long"}},
    ],
    "labels": [{"outputTensorInfo": {"name": "response", "dtype": "double", "shape": []}}],
}

SMALL_YAML = """\
features:
  - inputFeatureInfo:
      columnExpr: CAST(a.b AS STRING)
      transformConfig:
        hashInfo: {hashBucketSize: 50, numHashFunctions: 2, combiner: max, hashFunction: avro2tf_md5}
        tokenization: {removeStopWords: true}
    outputTensorInfo:
      name: ab
      dtype: long
      shape: [2, -1]
      isSparse: true
      isDocumentFeature: false
      vocabSizeCap: 10
  - inputFeatureInfo:
      columnConfig:
        ntv:
          blacklist: [x, y]
    outputTensorInfo: {name: ntv_vec, dtype: float, shape: [], isSparse: true}
  - outputTensorInfo: {name: userId, dtype: long}
labels:
  - outputTensorInfo: {name: response, dtype: double, shape: []}
"""

SMALL_HOCON = """\
features = [
  {
    inputFeatureInfo {
      columnExpr = "CAST(a.b AS STRING)"
      transformConfig.hashInfo {
        hashBucketSize = 50
        numHashFunctions = 2
        combiner = max
        hashFunction = avro2tf_md5
      }
      transformConfig.tokenization.removeStopWords = true
    }
    outputTensorInfo {
      name = ab, dtype = long, shape = [2, -1]
      isSparse = true, isDocumentFeature = false, vocabSizeCap = 10
    }
  }
  {
    inputFeatureInfo.columnConfig.ntv.blacklist = [x, y]
    outputTensorInfo { name = ntv_vec, dtype = float, shape = [], isSparse = true }
  }
  { outputTensorInfo { name = userId, dtype = long } }
]
labels = [ { outputTensorInfo { name = response, dtype = double, shape = [] } } ]
"""


# --------------------------------------------------------------------------- the real config


@pytest.fixture(scope="module")
def movielens() -> TensorizeConfig:
    return load_config(_movielens_path())


def test_movielens_names_roles_and_paths(movielens: TensorizeConfig) -> None:
    assert [t.name for t in movielens.features] == [
        "userId",
        "movieId_hashed",
        "genreFeatures",
        "genreFeatures_term",
        "genreFeatures_movieLatentFactorFeatures",
    ]
    assert [t.name for t in movielens.labels] == [
        "response",
        "movieId_hashed_response",
        "genreFeatures_movieLatentFactorFeatures_response",
    ]
    assert movielens.tensors == movielens.features + movielens.labels
    assert [t.role for t in movielens.tensors] == ["feature"] * 5 + ["label"] * 3
    assert [t.json_path for t in movielens.labels] == [
        "labels[0]",
        "labels[1]",
        "labels[2]",
    ]
    assert movielens.features[3].json_path == "features[3]"


def test_movielens_outputs(movielens: TensorizeConfig) -> None:
    got = [
        (
            t.output.dtype,
            t.output.shape,
            t.output.is_sparse,
            t.output.is_document_feature,
        )
        for t in movielens.tensors
    ]
    assert got == [
        ("long", (-1,), False, True),
        ("long", (4,), False, True),
        ("float", (), True, True),
        ("long", (-1,), False, True),
        ("float", (), True, True),
        ("double", (), False, True),
        ("long", (4,), False, True),
        ("float", (), True, True),
    ]
    assert all(t.output.vocab_size_cap is None for t in movielens.tensors)


def test_movielens_inputs(movielens: TensorizeConfig) -> None:
    exprs = [t.input.column_expr for t in movielens.tensors]
    assert exprs == [
        "userId",
        "movieId",
        "genreFeatures",
        "genreFeatures.term",
        None,
        "response",
        "movieId",
        None,
    ]
    assert movielens.tensor("userId").input.column_expr_ast == parse_column_expr("userId")
    assert movielens.tensor("genreFeatures_term").input.column_expr_ast == parse_column_expr(
        "genreFeatures.term"
    )
    assert movielens.tensor("userId").input.transform_config == TransformConfig()


def test_movielens_hashing(movielens: TensorizeConfig) -> None:
    hashed = movielens.tensor("movieId_hashed").input.transform_config
    assert hashed.hash_info == HashInfo(
        hash_bucket_size=1000,
        num_hash_functions=4,
        combiner="SUM",
        hash_function="fingerprint",
    )
    assert hashed.tokenization is None
    assert movielens.tensor("movieId_hashed_response").input == movielens.tensor("movieId_hashed").input

    ntv = movielens.tensor("genreFeatures_movieLatentFactorFeatures")
    assert ntv.input.column_expr is None
    assert ntv.input.column_expr_ast is None
    assert ntv.input.transform_config.hash_info == HashInfo(100, 1, "AVG", "fingerprint")
    assert ntv.input.column_config == (
        NtvSelection("genreFeatures", whitelist=("Genre",)),
        NtvSelection("movieLatentFactorFeatures", blacklist=("*",)),
    )
    genre, latent = ntv.input.column_config
    assert genre.selects("Genre") and not genre.selects("Year")
    assert not latent.selects("f0") and not latent.selects("Genre")


def test_movielens_to_json_dict_round_trips(movielens: TensorizeConfig) -> None:
    doc = movielens.to_json_dict()
    assert json.loads(json.dumps(doc)) == doc
    assert parse_config(doc) == movielens
    assert parse_config(doc).to_json_dict() == doc
    assert doc["features"][1] == {
        "inputFeatureInfo": {
            "columnExpr": "movieId",
            "transformConfig": {
                "hashInfo": {
                    "hashBucketSize": 1000,
                    "numHashFunctions": 4,
                    "combiner": "SUM",
                    "hashFunction": "fingerprint",
                }
            },
        },
        "outputTensorInfo": {
            "name": "movieId_hashed",
            "dtype": "long",
            "shape": [4],
            "isSparse": False,
            "isDocumentFeature": True,
        },
    }
    assert doc["labels"][2]["inputFeatureInfo"]["columnConfig"] == {
        "genreFeatures": {"whitelist": ["Genre"]},
        "movieLatentFactorFeatures": {"blacklist": ["*"]},
    }


def test_config_is_hashable_and_picklable(movielens: TensorizeConfig) -> None:
    clone = pickle.loads(pickle.dumps(movielens))
    assert clone == movielens
    assert hash(clone) == hash(movielens)
    assert clone.tensor("genreFeatures_term").input.column_expr_ast == parse_column_expr("genreFeatures.term")
    with pytest.raises(AttributeError):
        movielens.features[0].output.name = "other"  # type: ignore[misc]


def test_tensor_lookup_unknown_name(movielens: TensorizeConfig) -> None:
    assert movielens.tensor("response").role == "label"
    with pytest.raises(KeyError) as info:
        movielens.tensor("nope")
    message = info.value.args[0]
    assert message.startswith("no tensor named 'nope'; known tensors: userId, movieId_hashed, ")
    assert message.endswith("genreFeatures_movieLatentFactorFeatures_response")


# --------------------------------------------------------------------------- a small full config


def test_small_config_values() -> None:
    config = parse_config(SMALL_JSON)
    ab = config.tensor("ab")
    assert ab.input == InputFeatureInfo(
        column_expr="CAST(a.b AS STRING)",
        transform_config=TransformConfig(
            hash_info=HashInfo(50, 2, "MAX", "avro2tf_md5"),
            tokenization=Tokenization(remove_stop_words=True),
        ),
    )
    assert ab.input.column_expr_ast == parse_column_expr("CAST(a.b AS STRING)")
    assert ab.output == OutputTensorInfo("ab", "long", (2, -1), True, False, 10)
    assert config.tensor("ntv_vec").input.column_config == (NtvSelection("ntv", blacklist=("x", "y")),)
    assert config.tensor("ntv_vec").output.shape == ()
    # A missing inputFeatureInfo means columnExpr = outputTensorInfo.name.
    assert config.tensor("userId").input == InputFeatureInfo(column_expr="userId")
    assert config.tensor("userId").output.shape == ()
    assert config.tensor("response").input.column_expr == "response"


def test_small_config_round_trip_makes_input_explicit() -> None:
    config = parse_config(SMALL_JSON)
    doc = config.to_json_dict()
    assert parse_config(doc) == config
    assert doc["features"][2] == {
        "inputFeatureInfo": {"columnExpr": "userId", "transformConfig": {}},
        "outputTensorInfo": {
            "name": "userId",
            "dtype": "long",
            "shape": [],
            "isSparse": False,
            "isDocumentFeature": True,
        },
    }
    assert doc["features"][0]["inputFeatureInfo"]["transformConfig"] == {
        "hashInfo": {
            "hashBucketSize": 50,
            "numHashFunctions": 2,
            "combiner": "MAX",
            "hashFunction": "avro2tf_md5",
        },
        "tokenization": {"removeStopWords": True},
    }
    assert doc["features"][0]["outputTensorInfo"]["vocabSizeCap"] == 10


def test_null_optional_values_mean_absent() -> None:
    doc = _doc(
        {
            "inputFeatureInfo": None,
            "outputTensorInfo": {"name": "x", "dtype": "int", "vocabSizeCap": None},
        },
        labels=None,
    )
    config = parse_config(doc)
    assert config.features[0].input == InputFeatureInfo(column_expr="x")
    assert config.features[0].output.vocab_size_cap is None


@pytest.mark.parametrize(
    ("file_name", "text", "fmt"),
    [
        ("config.json", json.dumps(SMALL_JSON), None),
        ("config.yaml", SMALL_YAML, None),
        ("config.yml", SMALL_YAML, None),
        ("config.conf", SMALL_HOCON, None),
        ("config.hocon", SMALL_HOCON, None),
        ("config.txt", SMALL_YAML, "yaml"),
        ("config.cfg", SMALL_HOCON, "HOCON"),
        ("config", json.dumps(SMALL_JSON), None),
    ],
)
def test_load_config_formats_agree(
    tmp_path: pathlib.Path, file_name: str, text: str, fmt: str | None
) -> None:
    path = tmp_path / file_name
    path.write_text(text, encoding="utf-8")
    expected = parse_config(SMALL_JSON)
    assert load_config(path, format=fmt) == expected
    assert load_config(str(path), format=fmt) == expected


def test_load_config_inline_json_text() -> None:
    text = json.dumps(SMALL_JSON, indent=2)
    assert load_config(text) == parse_config(SMALL_JSON)
    assert load_config("  " + text) == parse_config(SMALL_JSON)


def test_load_config_bad_format_argument() -> None:
    with pytest.raises(ValueError, match="format must be one of json, yaml, hocon; got 'toml'"):
        load_config("{}", format="toml")


# --------------------------------------------------------------------------- validation messages

ERROR_CASES = [
    # top level
    pytest.param(
        [_ok_tensor()],
        "",
        "expected a config object with 'features' (and optionally 'labels'), got a list",
        id="top-not-object",
    ),
    pytest.param(
        {"labels": []},
        "features",
        "required key is missing; expected a non-empty list of tensor configs",
        id="features-missing",
    ),
    pytest.param(
        {"features": []},
        "features",
        "expected a non-empty list of tensor configs, got an empty list",
        id="features-empty",
    ),
    pytest.param(
        {"features": {"x": 1}},
        "features",
        "expected a non-empty list of tensor configs, got an object",
        id="features-object",
    ),
    pytest.param(
        {"features": None},
        "features",
        "expected a non-empty list of tensor configs, got null",
        id="features-null",
    ),
    pytest.param(
        {"features": [_ok_tensor()], "labels": "y"},
        "labels",
        "expected a list of tensor configs, got string 'y'",
        id="labels-not-list",
    ),
    pytest.param(
        {"features": [_ok_tensor()], "label": []},
        "label",
        "unknown key; did you mean 'labels'?",
        id="top-unknown-key-hint",
    ),
    pytest.param(
        {"features": [_ok_tensor()], "zzz": 1},
        "zzz",
        "unknown key; expected one of features, labels",
        id="top-unknown-key",
    ),
    # tensor entries
    pytest.param(
        _doc("x"),
        "features[0]",
        "expected a tensor config object with outputTensorInfo, got string 'x'",
        id="tensor-not-object",
    ),
    pytest.param(
        _doc({"inputFeatureInfo": {"columnExpr": "x"}}),
        "features[0].outputTensorInfo",
        "required key is missing; expected an outputTensorInfo object",
        id="output-missing",
    ),
    pytest.param(
        _doc({"outputTensorInfo": {"name": "x", "dtype": "int"}, "InputFeatureInfo": {}}),
        "features[0].InputFeatureInfo",
        "unknown key; did you mean 'inputFeatureInfo'?",
        id="tensor-unknown-key-case",
    ),
    # outputTensorInfo
    pytest.param(
        _doc(_ok_tensor(), _with_output(name="y", dtyp="long")),
        "features[1].outputTensorInfo.dtyp",
        "unknown key; did you mean 'dtype'?",
        id="output-unknown-key",
    ),
    pytest.param(
        _doc(
            _ok_tensor("a"),
            _ok_tensor("b"),
            _ok_tensor("c"),
            _with_output(name="x", dtype="lng"),
        ),
        "features[3].outputTensorInfo.dtype",
        f"'lng' is not one of {DTYPES_TEXT}",
        id="dtype-bad",
    ),
    pytest.param(
        _doc(_with_output(name="x")),
        "features[0].outputTensorInfo.dtype",
        f"required key is missing; expected one of {DTYPES_TEXT}",
        id="dtype-missing",
    ),
    pytest.param(
        _doc(_with_output(name="x", dtype=3)),
        "features[0].outputTensorInfo.dtype",
        f"expected one of {DTYPES_TEXT}, got integer 3",
        id="dtype-not-string",
    ),
    pytest.param(
        _doc(_with_output(dtype="long")),
        "features[0].outputTensorInfo.name",
        "required key is missing; expected a tensor name string",
        id="name-missing",
    ),
    pytest.param(
        _doc(_with_output(name=None, dtype="long")),
        "features[0].outputTensorInfo.name",
        "expected a tensor name string, got null",
        id="name-null",
    ),
    pytest.param(
        _doc(_with_output(name=7, dtype="long")),
        "features[0].outputTensorInfo.name",
        "expected a tensor name string, got integer 7",
        id="name-int",
    ),
    pytest.param(
        _doc(_with_output(name="a/b", dtype="long")),
        "features[0].outputTensorInfo.name",
        "'a/b' is not a valid tensor name; use one or more letters, digits, '_', '.' or '-' "
        "(tensor names become feature keys and file names)",
        id="name-slash",
    ),
    pytest.param(
        _doc(_with_output(name="", dtype="long")),
        "features[0].outputTensorInfo.name",
        "'' is not a valid tensor name; use one or more letters, digits, '_', '.' or '-' "
        "(tensor names become feature keys and file names)",
        id="name-empty",
    ),
    pytest.param(
        _doc(_with_output(name="x", dtype="long", shape="[-1]")),
        "features[0].outputTensorInfo.shape",
        "expected a list of integers >= -1, got string '[-1]'",
        id="shape-string",
    ),
    pytest.param(
        _doc(_with_output(name="x", dtype="long", shape=[3, -2])),
        "features[0].outputTensorInfo.shape[1]",
        "expected an integer >= -1 (-1 = unknown size), got integer -2",
        id="shape-below-minus-one",
    ),
    pytest.param(
        _doc(_with_output(name="x", dtype="long", shape=[True])),
        "features[0].outputTensorInfo.shape[0]",
        "expected an integer >= -1 (-1 = unknown size), got boolean true",
        id="shape-bool",
    ),
    pytest.param(
        _doc(_with_output(name="x", dtype="long", shape=["4"])),
        "features[0].outputTensorInfo.shape[0]",
        "expected an integer >= -1 (-1 = unknown size), got string '4'",
        id="shape-string-entry",
    ),
    pytest.param(
        _doc(_with_output(name="x", dtype="long", isSparse="yes")),
        "features[0].outputTensorInfo.isSparse",
        "expected true or false, got string 'yes'",
        id="is-sparse-string",
    ),
    pytest.param(
        _doc(_with_output(name="x", dtype="long", isDocumentFeature=1)),
        "features[0].outputTensorInfo.isDocumentFeature",
        "expected true or false, got integer 1",
        id="is-document-feature-int",
    ),
    pytest.param(
        _doc(_with_output(name="x", dtype="string", vocabSizeCap=0)),
        "features[0].outputTensorInfo.vocabSizeCap",
        "expected a positive integer, got integer 0",
        id="vocab-cap-zero",
    ),
    pytest.param(
        _doc(_with_output(name="x", dtype="string", vocabSizeCap=True)),
        "features[0].outputTensorInfo.vocabSizeCap",
        "expected a positive integer, got boolean true",
        id="vocab-cap-bool",
    ),
    pytest.param(
        _doc(_with_output(name="x", dtype="string", vocabSizeCap=1000.0)),
        "features[0].outputTensorInfo.vocabSizeCap",
        "expected a positive integer, got number 1000.0 (write integers without a decimal point)",
        id="vocab-cap-float",
    ),
    # inputFeatureInfo
    pytest.param(
        _doc(_ok_tensor("a"), _with_input({"columnExpr": "x", "columnConfig": {"n": {}}})),
        "features[1].inputFeatureInfo",
        "columnExpr and columnConfig are exclusive; give one",
        id="input-both",
    ),
    pytest.param(
        _doc(_with_input(["x"])),
        "features[0].inputFeatureInfo",
        "expected an inputFeatureInfo object with columnExpr or columnConfig, got a list",
        id="input-not-object",
    ),
    pytest.param(
        _doc(_with_input({"columnExpression": "x"})),
        "features[0].inputFeatureInfo.columnExpression",
        "unknown key; did you mean 'columnExpr'?",
        id="input-unknown-key",
    ),
    pytest.param(
        _doc(_with_input({"columnExpr": 5})),
        "features[0].inputFeatureInfo.columnExpr",
        "expected a Spark SQL column expression string, got integer 5",
        id="column-expr-int",
    ),
    # columnConfig
    pytest.param(
        _doc(_with_column_config({})),
        "features[0].inputFeatureInfo.columnConfig",
        'expected a non-empty object mapping NTV column names to {"whitelist": [...]} or '
        '{"blacklist": [...]}, got an empty object',
        id="column-config-empty",
    ),
    pytest.param(
        _doc(_with_column_config(["genreFeatures"])),
        "features[0].inputFeatureInfo.columnConfig",
        'expected a non-empty object mapping NTV column names to {"whitelist": [...]} or '
        '{"blacklist": [...]}, got a list',
        id="column-config-list",
    ),
    pytest.param(
        _doc(_with_column_config({"g": {"whitelist": ["a"], "blacklist": ["b"]}})),
        "features[0].inputFeatureInfo.columnConfig.g",
        "whitelist and blacklist are exclusive; give one",
        id="ntv-both",
    ),
    pytest.param(
        _doc(_with_column_config({"g": {}})),
        "features[0].inputFeatureInfo.columnConfig.g",
        "expected whitelist or blacklist; give one",
        id="ntv-neither",
    ),
    pytest.param(
        _doc(_with_column_config({"g": ["a"]})),
        "features[0].inputFeatureInfo.columnConfig.g",
        'expected {"whitelist": [...]} or {"blacklist": [...]}, got a list',
        id="ntv-not-object",
    ),
    pytest.param(
        _doc(_with_column_config({"g": {"whiteList": ["a"]}})),
        "features[0].inputFeatureInfo.columnConfig.g.whiteList",
        "unknown key; did you mean 'whitelist'?",
        id="ntv-unknown-key",
    ),
    pytest.param(
        _doc(_with_column_config({"g": {"whitelist": "Genre"}})),
        "features[0].inputFeatureInfo.columnConfig.g.whitelist",
        "expected a list of NTV names (or \"*\"), got string 'Genre'",
        id="ntv-list-string",
    ),
    pytest.param(
        _doc(_with_column_config({"my col": {"blacklist": ["a", 3]}})),
        'features[0].inputFeatureInfo.columnConfig["my col"].blacklist[1]',
        'expected an NTV name string (or "*"), got integer 3',
        id="ntv-entry-int",
    ),
    # transformConfig
    pytest.param(
        _doc(_with_input({"columnExpr": "x", "transformConfig": {"hashinfo": {}}})),
        "features[0].inputFeatureInfo.transformConfig.hashinfo",
        "unknown key; did you mean 'hashInfo'?",
        id="transform-unknown-key",
    ),
    pytest.param(
        _doc(_with_input({"columnExpr": "x", "transformConfig": {"vocab": {}}})),
        "features[0].inputFeatureInfo.transformConfig.vocab",
        "unknown key; expected one of hashInfo, tokenization",
        id="transform-unknown-key-no-hint",
    ),
    pytest.param(
        _doc(_with_input({"columnExpr": "x", "transformConfig": []})),
        "features[0].inputFeatureInfo.transformConfig",
        "expected a transformConfig object, got an empty list",
        id="transform-not-object",
    ),
    pytest.param(
        _doc(_with_hash(numHashFunctions=2)),
        "features[0].inputFeatureInfo.transformConfig.hashInfo.hashBucketSize",
        "required key is missing; expected a positive integer",
        id="hash-size-missing",
    ),
    pytest.param(
        _doc(_with_hash(hashBucketSize="1000")),
        "features[0].inputFeatureInfo.transformConfig.hashInfo.hashBucketSize",
        "expected a positive integer, got string '1000'",
        id="hash-size-string",
    ),
    pytest.param(
        _doc(_with_hash(hashBucketSize=True)),
        "features[0].inputFeatureInfo.transformConfig.hashInfo.hashBucketSize",
        "expected a positive integer, got boolean true",
        id="hash-size-bool",
    ),
    pytest.param(
        _doc(_with_hash(hashBucketSize=0)),
        "features[0].inputFeatureInfo.transformConfig.hashInfo.hashBucketSize",
        "expected a positive integer, got integer 0",
        id="hash-size-zero",
    ),
    pytest.param(
        _doc(_with_hash(hashBucketSize=1000.0)),
        "features[0].inputFeatureInfo.transformConfig.hashInfo.hashBucketSize",
        "expected a positive integer, got number 1000.0 (write integers without a decimal point)",
        id="hash-size-integral-float",
    ),
    pytest.param(
        _doc(_with_hash(hashBucketSize=10.5)),
        "features[0].inputFeatureInfo.transformConfig.hashInfo.hashBucketSize",
        "expected a positive integer, got number 10.5",
        id="hash-size-float",
    ),
    pytest.param(
        _doc(_with_hash(hashBucketSize=10, numHashFunctions=-1)),
        "features[0].inputFeatureInfo.transformConfig.hashInfo.numHashFunctions",
        "expected a positive integer, got integer -1",
        id="hash-count-negative",
    ),
    pytest.param(
        _doc(_with_hash(hashBucketSize=10, combiner="median")),
        "features[0].inputFeatureInfo.transformConfig.hashInfo.combiner",
        "'MEDIAN' is not one of SUM, AVG, MAX",
        id="combiner-bad",
    ),
    pytest.param(
        _doc(_with_hash(hashBucketSize=10, combiner=1)),
        "features[0].inputFeatureInfo.transformConfig.hashInfo.combiner",
        "expected one of SUM, AVG, MAX, got integer 1",
        id="combiner-int",
    ),
    pytest.param(
        _doc(_with_hash(hashBucketSize=10, hashFunction="md5")),
        "features[0].inputFeatureInfo.transformConfig.hashInfo.hashFunction",
        "'md5' is not one of fingerprint, avro2tf_md5",
        id="hash-function-bad",
    ),
    pytest.param(
        _doc(_with_hash(hashBucketSize=10, numHashFunction=2)),
        "features[0].inputFeatureInfo.transformConfig.hashInfo.numHashFunction",
        "unknown key; did you mean 'numHashFunctions'?",
        id="hash-unknown-key",
    ),
    pytest.param(
        _doc(
            _with_input(
                {
                    "columnExpr": "x",
                    "transformConfig": {"tokenization": {"removeStopWords": "no"}},
                }
            )
        ),
        "features[0].inputFeatureInfo.transformConfig.tokenization.removeStopWords",
        "expected true or false, got string 'no'",
        id="tokenization-string",
    ),
    pytest.param(
        _doc(_with_input({"columnExpr": "x", "transformConfig": {"tokenization": {"stop": 1}}})),
        "features[0].inputFeatureInfo.transformConfig.tokenization.stop",
        "unknown key; expected one of removeStopWords",
        id="tokenization-unknown-key",
    ),
    # duplicate names
    pytest.param(
        _doc(_ok_tensor("x"), labels=[_ok_tensor("y"), _ok_tensor("x")]),
        "labels[1].outputTensorInfo.name",
        "duplicate tensor name 'x' (also at features[0])",
        id="duplicate-feature-label",
    ),
    pytest.param(
        _doc(_ok_tensor("a"), _ok_tensor("b"), _ok_tensor("a")),
        "features[2].outputTensorInfo.name",
        "duplicate tensor name 'a' (also at features[0])",
        id="duplicate-features",
    ),
]


@pytest.mark.parametrize(("document", "path", "problem"), ERROR_CASES)
def test_parse_config_errors(document: Any, path: str, problem: str) -> None:
    original = copy.deepcopy(document)
    with pytest.raises(ConfigError) as info:
        parse_config(document, source="cfg.json")
    assert (info.value.path, info.value.problem) == (path, problem)
    assert info.value.source == "cfg.json"
    where = f"{path}: " if path else ""
    assert str(info.value) == f"cfg.json: {where}{problem}"
    assert document == original  # validation never mutates its input


def test_error_without_source_starts_with_path() -> None:
    with pytest.raises(ConfigError) as info:
        parse_config(_doc(_with_output(name="x", dtype="lng")))
    assert str(info.value) == f"features[0].outputTensorInfo.dtype: 'lng' is not one of {DTYPES_TEXT}"


@pytest.mark.parametrize("text", ["SELECT a FROM t", "", "a +"])
def test_unusable_column_expr(text: str) -> None:
    with pytest.raises(ExprError) as expr_info:
        parse_column_expr(text)
    with pytest.raises(ConfigError) as info:
        parse_config(_doc(_ok_tensor("a"), _with_input({"columnExpr": text})))
    assert info.value.path == "features[1].inputFeatureInfo.columnExpr"
    assert info.value.problem == f"cannot use expression {text!r}: {expr_info.value}"


def test_unusable_default_column_expr_says_where_it_came_from() -> None:
    with pytest.raises(ExprError) as expr_info:
        parse_column_expr("a..b")
    with pytest.raises(ConfigError) as info:
        parse_config(_doc({"outputTensorInfo": {"name": "a..b", "dtype": "long"}}))
    assert info.value.path == "features[0].inputFeatureInfo.columnExpr"
    assert info.value.problem == (
        f"cannot use expression 'a..b': {expr_info.value} (inputFeatureInfo is missing, "
        "so columnExpr defaults to outputTensorInfo.name)"
    )


def test_sparse_multi_dimensional_shape_is_allowed() -> None:
    config = parse_config(_doc(_ok_tensor("x", isSparse=True, shape=[3, -1, 5])))
    assert config.features[0].output.shape == (3, -1, 5)
    assert config.features[0].output.is_sparse


def test_combiner_any_case_is_stored_upper() -> None:
    config = parse_config(_doc(_with_hash(hashBucketSize=8, combiner="aVg")))
    assert config.features[0].input.transform_config.hash_info == HashInfo(8, combiner="AVG")


# --------------------------------------------------------------------------- loading errors


def test_load_missing_file(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "absent.json"
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.source == str(path)
    assert info.value.problem.startswith("cannot read config file: ")
    assert str(info.value).startswith(f"{path}: cannot read config file: ")


def test_load_bad_json_names_line_and_column(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('{\n  "features": [\n    {"outputTensorInfo": }\n  ]\n}\n', encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == f"{path}: invalid JSON at line 3, column 26: Expecting value"


def test_load_bad_inline_json() -> None:
    with pytest.raises(ConfigError) as info:
        load_config('{"features": [}')
    assert str(info.value) == "invalid JSON at line 1, column 15: Expecting value"


def test_load_json_duplicate_key(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "dup.json"
    path.write_text(
        '{"features": [{"outputTensorInfo": {"name": "x", "dtype": "long", "dtype": "int"}}]}',
        encoding="utf-8",
    )
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == (f"{path}: features[0].outputTensorInfo.dtype: key given more than once")


def test_load_bad_yaml_names_file_and_line(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("features:\n  - outputTensorInfo: {name: x\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.source == str(path)
    assert info.value.problem.startswith("invalid YAML at line 3, column 1: ")


def test_load_bad_hocon_names_file_and_line(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "bad.conf"
    path.write_text("features = [\n  { outputTensorInfo { name = x }\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert info.value.source == str(path)
    assert info.value.problem.startswith("invalid HOCON at line ")


def test_load_yaml_that_is_not_an_object(tmp_path: pathlib.Path) -> None:
    path = tmp_path / "list.yml"
    path.write_text("- a\n- b\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_config(path)
    assert str(info.value) == (
        f"{path}: expected a config object with 'features' (and optionally 'labels'), got a list"
    )


# --------------------------------------------------------------------------- model invariants


@pytest.mark.parametrize(
    ("names", "whitelist", "blacklist", "expected"),
    [
        (["a", "b", "c"], ("a", "c"), None, [True, False, True]),
        (["a", "b"], ("*",), None, [True, True]),
        (["a", "b"], (), None, [False, False]),
        (["a", "b", "c"], None, ("b",), [True, False, True]),
        (["a", "b"], None, ("*",), [False, False]),
        (["a", "b"], None, (), [True, True]),
    ],
)
def test_ntv_selection_selects(
    names: list[str],
    whitelist: tuple[str, ...] | None,
    blacklist: tuple[str, ...] | None,
    expected: list[bool],
) -> None:
    selection = NtvSelection("ntv", whitelist=whitelist, blacklist=blacklist)
    assert [selection.selects(n) for n in names] == expected


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: NtvSelection("n"), "give exactly one of whitelist and blacklist"),
        (
            lambda: NtvSelection("n", ("a",), ("b",)),
            "give exactly one of whitelist and blacklist",
        ),
        (lambda: HashInfo(0), "hash_bucket_size must be a positive integer"),
        (
            lambda: HashInfo(10, combiner="MIN"),
            "combiner 'MIN' is not one of SUM, AVG, MAX",
        ),
        (
            lambda: HashInfo(10, hash_function="md5"),
            "hash_function 'md5' is not one of",
        ),
        (lambda: OutputTensorInfo("x", "lng"), "dtype 'lng' is not one of"),
        (lambda: OutputTensorInfo("a/b", "long"), "tensor name 'a/b' must match"),
        (lambda: OutputTensorInfo("x", "long", (-2,)), "must hold integers >= -1"),
        (
            lambda: OutputTensorInfo("x", "long", vocab_size_cap=0),
            "vocab_size_cap must be",
        ),
        (
            lambda: InputFeatureInfo(),
            "give exactly one of column_expr and column_config",
        ),
        (lambda: TensorizeConfig(features=()), "a config needs at least one feature"),
    ],
)
def test_model_rejects_bad_values(build: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        build()


def test_input_feature_info_parses_expression_when_not_given() -> None:
    info = InputFeatureInfo(column_expr="genreFeatures.term[0]")
    assert info.column_expr_ast == parse_column_expr("genreFeatures.term[0]")
    assert InputFeatureInfo(column_config=(NtvSelection("n", ("*",)),)).column_expr_ast is None
    with pytest.raises(ExprError):
        InputFeatureInfo(column_expr="SELECT a FROM t")


def test_model_normalizes_sequences() -> None:
    output = OutputTensorInfo("x", "long", [2, 3])  # type: ignore[arg-type]
    assert output.shape == (2, 3)
    selection = NtvSelection("n", whitelist=["a"])  # type: ignore[arg-type]
    assert selection.whitelist == ("a",)
    assert HashInfo(5, combiner="max").combiner == "MAX"
    tensor = TensorConfig(InputFeatureInfo("x"), output, "feature", "features[0]")
    with pytest.raises(ValueError, match="duplicate tensor name 'x'"):
        TensorizeConfig(features=[tensor], labels=[tensor])  # type: ignore[arg-type]
    assert TensorizeConfig(features=[tensor]).features == (tensor,)  # type: ignore[arg-type]


def test_an_input_feature_info_with_only_a_transform_config_reads_the_tensor_named_column():
    """Avro2TF's default: no columnExpr / columnConfig means the column named like the tensor."""
    config = parse_config(
        {
            "features": [
                {
                    "inputFeatureInfo": {"transformConfig": {"hashInfo": {"hashBucketSize": 10}}},
                    "outputTensorInfo": {"name": "movieId", "dtype": "long", "shape": []},
                },
                {
                    "inputFeatureInfo": {},
                    "outputTensorInfo": {"name": "userId", "dtype": "long", "shape": []},
                },
            ]
        }
    )
    movie, user = config.tensors
    assert (movie.input.column_expr, movie.input.transform_config.hash_info.hash_bucket_size) == (
        "movieId",
        10,
    )
    assert user.input.column_expr == "userId"


def test_a_hocon_parse_error_is_one_short_line(tmp_path, monkeypatch):
    """pyparsing's messages may spell out its grammar (kilobytes on several lines): the error
    keeps the place and the start of the message, on one line."""
    import pyhocon
    from pyparsing import ParseException

    def fail(text, resolve=True):
        raise ParseException(text, 3, "Expected {" + "ws | value\n" * 400 + "}")

    monkeypatch.setattr(pyhocon.ConfigFactory, "parse_string", fail)
    path = tmp_path / "bad.conf"
    path.write_text("features: [\n")
    with pytest.raises(ConfigError) as caught:
        load_config(str(path))
    message = str(caught.value)
    assert "\n" not in message and len(message) - len(str(path)) < 220
    assert message.startswith(f"{path}: invalid HOCON at line 1, column 4: Expected")
    assert "ws | value ws | value" in message and message.endswith("...")
