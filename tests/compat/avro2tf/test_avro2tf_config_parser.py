"""Ported from linkedin/Avro2TF avro2tf/src/test/scala/com/linkedin/avro2tf/parsers/Avro2TFConfigParserTest.scala.

`Avro2TFConfigParser.getAvro2TFConfiguration(text)` parses HOCON (JSON is HOCON too); our
`load_config` reads `.json` as JSON and `.conf` as HOCON. The circe decoders of `HashInfo`
and `Tokenization` are exercised here through a whole config, as our parser decodes them.
"""

from __future__ import annotations

import pytest

from beam_tensorize.config import ConfigError, HashInfo, Tokenization, load_config, parse_config
from tests.compat.avro2tf.helpers import (
    AVRO2TF_CONFIG_PATH_VALUE_2,
    AVRO2TF_CONFIG_PATH_VALUE_2_HOCON,
    resource,
)

_SHARED_NAME = pytest.mark.xfail(
    strict=True,
    reason="config_2 names a feature and a label 'test_value': our parse_config refuses the "
    "duplicate name, Avro2TF's parser loads it",
)


@_SHARED_NAME
def test_json_config_loading():
    config = load_config(resource(AVRO2TF_CONFIG_PATH_VALUE_2))

    assert config is not None
    assert [t.name for t in config.features] == ["test_value"]
    assert [t.name for t in config.labels] == ["test_value"]


@_SHARED_NAME
def test_json_and_hocon_equal():
    json_config = load_config(resource(AVRO2TF_CONFIG_PATH_VALUE_2))
    hocon_config = load_config(resource(AVRO2TF_CONFIG_PATH_VALUE_2_HOCON))

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
