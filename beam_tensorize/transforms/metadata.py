"""`EmitMetadata`: write `metadata/tensor_metadata.json` once the data is committed."""

from __future__ import annotations

import json
import logging
import posixpath
import uuid
from collections.abc import Mapping

import apache_beam as beam
from apache_beam.io.filesystems import FileSystems

from beam_tensorize.config.model import TensorizeConfig
from beam_tensorize.kernels.metadata import METADATA_FILE, build_metadata, metadata_json

__all__ = ["EmitMetadata", "read_metadata"]

_LOGGER = logging.getLogger(__name__)


class EmitMetadata(beam.PTransform):
    """Write the tensor metadata of `config` into `<output_dir>/metadata/`.

    Input: a PCollection of one dict `{split folder: {"files": [...], "numRecords": n, ...}}`
    (the committed data). Entries for other split folders already in an existing metadata
    file are kept, so a test-mode run adds `testData` beside an earlier `trainingData`. The
    file is written under a temporary name and renamed into place.

    Args:
        config: the parsed config.
        output_dir: the output folder.
        compression: "none" or "gzip", as written.
        num_unique_values: per tensor, its number of distinct ids when known.

    Returns (from `expand`): a PCollection of one element, the metadata file's path.

    Example:
        >>> import apache_beam as beam
        >>> from beam_tensorize.config import load_config
        >>> from beam_tensorize.sample import SAMPLE_CONFIG
        >>> with beam.Pipeline() as p:
        ...     splits = p | beam.Create([{"trainingData": {"files": [], "numRecords": 0}}])
        ...     path = splits | EmitMetadata(load_config(SAMPLE_CONFIG), "out")
    """

    def __init__(
        self,
        config: TensorizeConfig,
        output_dir: str,
        compression: str = "none",
        num_unique_values: Mapping[str, int] | None = None,
    ):
        super().__init__()
        self._config = config
        self._output_dir = output_dir.rstrip("/")
        self._compression = compression
        self._num_unique_values = dict(num_unique_values or {})

    def expand(self, splits):
        return splits | "WriteMetadata" >> beam.Map(
            _write_metadata, self._config, self._output_dir, self._compression, self._num_unique_values
        )


def read_metadata(output_dir: str) -> dict | None:
    """The metadata document of an output folder, or None if it has none."""
    path = posixpath.join(output_dir.rstrip("/"), METADATA_FILE)
    if not FileSystems.exists(path):
        return None
    with FileSystems.open(path) as f:
        return json.loads(f.read().decode("utf-8"))


def _write_metadata(splits, config, output_dir, compression, num_unique_values) -> str:
    data = dict(splits)
    previous = read_metadata(output_dir)
    if previous:
        for name, info in previous.get("data", {}).items():
            data.setdefault(name, info)
    document = build_metadata(config, data, num_unique_values, compression=compression)
    path = posixpath.join(output_dir, METADATA_FILE)
    temp = f"{path}.tmp-{uuid.uuid4().hex}"
    with FileSystems.create(temp) as f:
        f.write(metadata_json(document).encode("utf-8"))
    if FileSystems.exists(path):
        FileSystems.delete([path])
    FileSystems.rename([temp], [path])
    _LOGGER.info("Wrote %s", path)
    return path
