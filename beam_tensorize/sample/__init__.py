"""The bundled MovieLens sample: a real Avro2TF test input and configs, usable offline.

`trainSmall.avro` and `avro2tf_config.json` come from LinkedIn's Avro2TF project (BSD 2-clause,
see `LICENSE.avro2tf` beside them). `config.json` is the default config of the `tensorize` CLI.

Example:
    >>> from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
    >>> SAMPLE_AVRO.endswith("trainSmall.avro")
    True
"""

from __future__ import annotations

import os

__all__ = ["AVRO2TF_CONFIG", "SAMPLE_AVRO", "SAMPLE_CONFIG", "SAMPLE_DIR"]

#: Folder holding the sample files.
SAMPLE_DIR = os.path.dirname(os.path.abspath(__file__))
#: 300 MovieLens training records (Avro, null codec).
SAMPLE_AVRO = os.path.join(SAMPLE_DIR, "trainSmall.avro")
#: The CLI's default config for the sample.
SAMPLE_CONFIG = os.path.join(SAMPLE_DIR, "config.json")
#: Avro2TF's own config for the sample (uses hashing and feature lists).
AVRO2TF_CONFIG = os.path.join(SAMPLE_DIR, "avro2tf_config.json")
