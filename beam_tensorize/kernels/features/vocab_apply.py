"""Applying feature lists to batches: text tensors become indices, name-term-value tensors
sparse (or dense) vectors of their records' values."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pyarrow as pa

from beam_tensorize.config.model import TensorConfig
from beam_tensorize.kernels.features.columns import replace_tensor_columns
from beam_tensorize.kernels.features.feature_list import FeatureList, uses_feature_list
from beam_tensorize.kernels.features.layouts import DENSE_VECTOR_KEY, is_hashed_ntv
from beam_tensorize.kernels.features.ntv import is_ntv
from beam_tensorize.kernels.features.sparse import combine_sparse, drop_zeros, sparse_to_dense
from beam_tensorize.kernels.features.vocab_build import split_term_only
from beam_tensorize.kernels.features.vocab_entries import lookup_ids, lookup_ntv
from beam_tensorize.kernels.features.vocab_index import VocabIndex, as_index

__all__ = ["FeatureListLookup", "apply_feature_lists"]


def apply_feature_lists(
    batch: pa.RecordBatch,
    tensors: Sequence[TensorConfig],
    lists: Mapping[str, FeatureList | Sequence[str] | pa.Array | VocabIndex],
    filter_zeros: bool = False,
    discard_unknown: bool = False,
) -> pa.RecordBatch:
    """Replace text and NTV tensor columns by feature-list indices.

    Text becomes int64 indices (same nesting). NTV becomes a sparse vector
    `struct<indices, values>` (repeated entries in a row summed, indices ascending; the records
    of a row not in the list become one entry, the unknown id `len(list)` with the value 1, as
    in Avro2TF; zero values dropped with `filter_zeros`), or with `isSparse: false` a dense
    vector of `len(list) + 1` values. With `discard_unknown` (Avro2TF's
    `--discard-unknown-entries`), entries not in the list are left out of lists and vectors
    (dense vectors then have `len(list)` values); scalars keep the unknown id. With `filter_zeros`, the sparse vectors of hashed NTV tensors lose
    their zero entries too (as Avro2TF filters every sparse vector). Other columns pass through.

    Raises:
        KeyError: a tensor needs a list that `lists` does not have.
    """

    def replace(tensor: TensorConfig, field: pa.Field, column: pa.Array):
        if filter_zeros and is_hashed_ntv(tensor) and pa.types.is_struct(column.type):
            sparse = pa.StructArray.from_arrays(list(drop_zeros(*column.flatten())), ["indices", "values"])
            return pa.field(tensor.name, sparse.type), sparse
        if not uses_feature_list(tensor, column.type):
            return None
        if tensor.name not in lists:
            raise KeyError(f"no feature list for tensor {tensor.name!r}")
        vocab = as_index(lists[tensor.name])
        if is_ntv(column.type):
            return _apply_ntv(tensor, column, vocab, filter_zeros, discard_unknown)
        ids = lookup_ids(column, vocab, discard_unknown)
        return pa.field(tensor.name, ids.type), ids

    return replace_tensor_columns(batch, tensors, replace)


def _apply_ntv(tensor, column, vocab, filter_zeros, discard_unknown) -> tuple[pa.Field, pa.Array]:
    row_of, ids, values = _known_or_one_unknown(*lookup_ntv(column, vocab), len(vocab), discard_unknown)
    indices, merged = combine_sparse(row_of, ids, values, len(column))
    if filter_zeros:
        indices, merged = drop_zeros(indices, merged)
    if tensor.output.is_sparse or tensor.output.dtype == "sparseVector":
        sparse = pa.StructArray.from_arrays([indices, merged], ["indices", "values"])
        return pa.field(tensor.name, sparse.type), sparse
    dense = sparse_to_dense(indices, merged, len(vocab) + (0 if discard_unknown else 1))
    return pa.field(tensor.name, dense.type, metadata={DENSE_VECTOR_KEY: b"1"}), dense


def _known_or_one_unknown(
    row_of: np.ndarray, ids: np.ndarray, values: np.ndarray, unknown_id: int, discard: bool
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """NTV records not in the list, as Avro2TF's FeatureIndicesConversion treats them: left
    out (`discard`), else one entry per row with the unknown id and the value 1."""
    unknown = ids == unknown_id
    if not unknown.any():
        return row_of, ids, values
    keep = ~unknown
    if not discard:
        positions = np.flatnonzero(unknown)
        first = positions[np.unique(row_of[positions], return_index=True)[1]]
        keep[first] = True
        values = values.copy()
        values[first] = 1.0
    return row_of[keep], ids[keep], values[keep]


class FeatureListLookup:
    """Feature lists turned into lookup arrays once, then applied to any number of batches.

    Args:
        lists: the feature lists by tensor name.

    Example:
        >>> import pyarrow as pa
        >>> from beam_tensorize.config import parse_config
        >>> config = parse_config({"features": [{"outputTensorInfo": {"name": "g", "dtype": "long", "shape": [-1]}}]})
        >>> lookup = FeatureListLookup({"g": FeatureList(("b", "a"))})
        >>> lookup.apply(pa.RecordBatch.from_pydict({"g": [["a", "zz"]]}), config.tensors).to_pydict()
        {'g': [[1, 2]]}
    """

    def __init__(self, lists: Mapping[str, FeatureList | Sequence[str] | pa.Array]):
        self._vocab = {  # indexed once, for every batch
            name: as_index(feature_list) for name, feature_list in split_term_only(lists)[0].items()
        }

    def apply(
        self,
        batch: pa.RecordBatch,
        tensors: Sequence[TensorConfig],
        filter_zeros: bool = False,
        discard_unknown: bool = False,
    ) -> pa.RecordBatch:
        """`apply_feature_lists` with these lists.

        Raises:
            ValueError: a tensor needs a list that is missing (the message says how to get it).
        """
        try:
            return apply_feature_lists(batch, tensors, self._vocab, filter_zeros, discard_unknown)
        except KeyError as err:
            raise ValueError(
                f"{err.args[0]}: build it in train mode first, or give it as an external feature list"
            ) from None
