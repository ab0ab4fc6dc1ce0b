"""Ported from linkedin/Avro2TF avro2tf/src/test/scala/com/linkedin/avro2tf/parsers/Avro2TFConfigParserTest.scala.

`Avro2TFConfigParser.getAvro2TFConfiguration(text)` parses HOCON (JSON is HOCON too); our
`load_config` reads `.json` as JSON and `.conf` as HOCON. The circe decoders of `HashInfo`
and `Tokenization` are exercised here through a whole config, as our parser decodes them.
"""

from __future__ import annotations

import os

import pytest

from beam_tensorize.config import ConfigError, HashInfo, Tokenization, load_config, parse_config
from tests.compat.avro2tf.helpers import (
    AVRO2TF_CONFIG_PATH_VALUE_2,
    AVRO2TF_CONFIG_PATH_VALUE_2_HOCON,
    resource,
)

#: Config 2 names a feature and a label `test_value`. Avro2TF's parser loads it and its job
#: refuses it when it starts (`tensorsNameCheck`); ours refuses it when loading, naming both
#: JSON paths (docs/migrating-from-avro2tf.md, "Deliberate differences"). The rest of each
#: test runs on a copy whose label is renamed `test_label`.
_SHARED_NAME_ERROR = (
    r"labels\[0\]\.outputTensorInfo\.name: duplicate tensor name 'test_value' \(also at features\[0\]\)"
)


def _renamed(path: str, tmp_path) -> str:
    """A copy of config 2 (JSON or HOCON) with its label renamed `test_label`."""
    text = open(path).read()
    head, _, tail = text.rpartition("test_value")  # the label's name is the last occurrence
    copy = tmp_path / os.path.basename(path)
    copy.write_text(head + "test_label" + tail)
    return str(copy)


def test_json_config_loading(tmp_path):
    with pytest.raises(ConfigError, match=_SHARED_NAME_ERROR):
        load_config(resource(AVRO2TF_CONFIG_PATH_VALUE_2))
    config = load_config(_renamed(resource(AVRO2TF_CONFIG_PATH_VALUE_2), tmp_path))

    assert config is not None
    assert [t.name for t in config.features] == ["test_value"]
    assert [t.name for t in config.labels] == ["test_label"]


def test_json_and_hocon_equal(tmp_path):
    with pytest.raises(ConfigError, match=_SHARED_NAME_ERROR):
        load_config(resource(AVRO2TF_CONFIG_PATH_VALUE_2_HOCON))
    json_config = load_config(_renamed(resource(AVRO2TF_CONFIG_PATH_VALUE_2), tmp_path))
    hocon_config = load_config(_renamed(resource(AVRO2TF_CONFIG_PATH_VALUE_2_HOCON), tmp_path))

    assert json_config == hocon_config
    # the hash codes are equal too
    assert hash(json_config.features[0].output) == hash(hocon_config.features[0].output)


def test_bad_configuration(tmp_path):
    """ConfigException.Parse on the text "bad string": a ConfigError naming the HOCON problem."""
    path = tmp_path / "bad.conf"
    path.write_text("bad string")

    with pytest.raises(ConfigError, match=r"invalid HOCON at line 1"):
        load_config(str(path))


def _tensor_with_transform(transform: dict):
    document = {
        "features": [
            {
                "inputFeatureInfo": {"columnExpr": "x", "transformConfig": transform},
                "outputTensorInfo": {"name": "x", "dtype": "long", "shape": []},
            }
        ]
    }
    return parse_config(document).features[0].input.transform_config


def test_hash_info_config():
    expected = HashInfo(1000, 4, "SUM")

    result = _tensor_with_transform({"hashInfo": {"hashBucketSize": 1000, "numHashFunctions": 4}}).hash_info

    assert result == expected


def test_empty_tokenization():
    # this is valid input for the tokenization field, as goofy as it looks
    expected = Tokenization()

    result = _tensor_with_transform({"tokenization": {}}).tokenization

    assert result == expected
    assert result.remove_stop_words is False
