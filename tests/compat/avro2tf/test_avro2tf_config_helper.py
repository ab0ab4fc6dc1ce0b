"""Ported from linkedin/Avro2TF avro2tf/src/test/scala/com/linkedin/avro2tf/helpers/Avro2TFConfigHelperTest.scala.

`Avro2TFConfigHelper.getColsWithHashInfo(params)`: the output tensors (features and labels)
whose `inputFeatureInfo.transformConfig` has a `hashInfo`. The Scala test gets the config by
parsing a whole command line; the other flags play no part in the answer, so the config is
loaded here as the CLI loads it.
"""

from __future__ import annotations

from beam_tensorize.config import load_config
from tests.compat.avro2tf.helpers import AVRO2TF_CONFIG_PATH_VALUE_MOVIELENS, resource


def test_get_cols_with_hash_info():
    config = load_config(resource(AVRO2TF_CONFIG_PATH_VALUE_MOVIELENS))

    cols_with_hash_info = [t.name for t in config.tensors if t.input.transform_config.hash_info is not None]

    assert "userId" not in cols_with_hash_info
    assert "genreFeatures_movieLatentFactorFeatures_response" in cols_with_hash_info
