"""Which tensors train mode counts feature-list entries for, told from the input's schema alone,
so the counting pass decodes only the columns those tensors read.

A tensor gets a feature list when it has no `hashInfo`, a numeric output dtype, and its
extracted column holds strings or name-term-value records (`vocab.uses_feature_list`). The
extracted type follows from the input schema: the tensor's input is evaluated on an empty
batch of that schema.

Example:
    >>> import pyarrow as pa
    >>> from beam_tensorize.config import load_config
    >>> from beam_tensorize.sample import SAMPLE_CONFIG
    >>> config = load_config(SAMPLE_CONFIG)
    >>> schema = pa.schema([("userId", pa.int64()), ("movieId", pa.int64()),
    ...     ("genreFeatures", pa.list_(pa.struct([("name", pa.string()), ("term", pa.string()),
    ...                                           ("value", pa.float32())])))])
    >>> [t.name for t in list_tensors(config.tensors, schema)]
    ['genreIds', 'genreVector']
    >>> feature_list_columns(config.tensors, schema)
    ['genreFeatures']
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from beam_tensorize.config.model import TensorConfig
from beam_tensorize.kernels.features.extract import ExtractError, extract_tensors, input_columns
from beam_tensorize.kernels.features.vocab import may_use_feature_list, uses_feature_list

__all__ = ["ListTensorExtractor", "feature_list_columns", "list_tensors"]


def list_tensors(tensors: Sequence[TensorConfig], schema: pa.Schema) -> tuple[TensorConfig, ...]:
    """Of `tensors`, those that get a feature list when extracted from data of `schema`
    (tensors whose input `schema` lacks are left out)."""
    empty = pa.RecordBatch.from_arrays([pa.array([], f.type) for f in schema], schema=schema)
    chosen = []
    for tensor in tensors:
        if not may_use_feature_list(tensor):
            continue
        try:
            column = extract_tensors(empty, (tensor,)).column(0)
        except (ExtractError, KeyError, pa.ArrowException):
            continue
        if uses_feature_list(tensor, column.type):
            chosen.append(tensor)
    return tuple(chosen)


def feature_list_columns(tensors: Sequence[TensorConfig], schema: pa.Schema) -> list[str]:
    """The input columns (or dotted paths) the feature-list tensors of `schema` read."""
    return input_columns(list_tensors(tensors, schema))


class ListTensorExtractor:
    """Extracts, from each batch, the tensors that get feature lists in its schema (chosen once
    per schema): the counting pass's extraction.

    Example:
        >>> import pyarrow as pa
        >>> from beam_tensorize.config import parse_config
        >>> config = parse_config({"features": [
        ...     {"inputFeatureInfo": {"columnExpr": "g"}, "outputTensorInfo": {"name": "g", "dtype": "long", "shape": []}},
        ...     {"inputFeatureInfo": {"columnExpr": "n"}, "outputTensorInfo": {"name": "n", "dtype": "long", "shape": []}}]})
        >>> extract = ListTensorExtractor(config.tensors)
        >>> extract(pa.RecordBatch.from_pydict({"g": ["a"], "n": [1]})).schema.names
        ['g']
        >>> extract(pa.RecordBatch.from_pydict({"n": [1]})) is None
        True
    """

    def __init__(self, tensors: Sequence[TensorConfig]):
        self._tensors = tuple(tensors)
        self._chosen: dict[pa.Schema, tuple[TensorConfig, ...]] = {}

    def __call__(self, batch: pa.RecordBatch) -> pa.RecordBatch | None:
        """The feature-list tensors of `batch`, or None when it has none."""
        schema = batch.schema.remove_metadata()
        if schema not in self._chosen:
            self._chosen[schema] = list_tensors(self._tensors, schema)
        tensors = self._chosen[schema]
        return extract_tensors(batch, tensors) if tensors else None
