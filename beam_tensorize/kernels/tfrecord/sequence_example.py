r"""Vectorised RecordBatch -> serialized ``tf.train.SequenceExample`` encoder.

Columns holding lists of lists become feature lists (one ``Feature`` per inner list, a
null inner list an empty ``Feature``); every other column becomes a context feature, encoded
exactly as `encode_examples` does. A null value (a context feature, or a whole feature list)
is left out of the row's message, as Spark-TFRecord does. Wire format (``example.proto``)::

    SequenceExample { Features context = 1; FeatureLists feature_lists = 2; }
    FeatureLists    { map<string, FeatureList> feature_list = 1; }  # entry {key = 1; value = 2}
    FeatureList     { repeated Feature feature = 1; }

Map keys are written in `feature_key_order`, so the bytes are protobuf's deterministic
serialization and do not change between processes.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_tensorize.kernels.arrow_types import is_list_type
from beam_tensorize.kernels.tfrecord.example_encoder import (
    check_not_nullable,
    encode_examples,
    encode_features,
    feature_key_order,
    length_delimited,
)

__all__ = ["encode_sequence_examples", "is_feature_list_type"]

_TAG_1, _TAG_2 = 0x0A, 0x12


def is_feature_list_type(typ: pa.DataType) -> bool:
    """Whether a column of this type is written as a feature list (a list of lists).

    Example:
        >>> is_feature_list_type(pa.list_(pa.list_(pa.int64())))
        True
    """
    return is_list_type(typ) and is_list_type(typ.value_type)


def _feature_list(name: str, column: pa.Array) -> pa.Array:
    """Each row's `FeatureList` message (null rows: an empty one)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    steps = column.flatten()
    framed = length_delimited(_TAG_1, encode_features(name, steps))
    counts = pc.fill_null(pc.list_value_length(column), 0).to_numpy().astype(np.int64, copy=False)
    offsets = np.zeros(len(column) + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    per_row = pa.LargeListArray.from_arrays(pa.array(offsets), framed)
    return pc.binary_join(per_row, pa.scalar(b"", pa.large_binary()))


def encode_sequence_examples(batch: pa.RecordBatch) -> pa.BinaryArray | pa.LargeBinaryArray:
    r"""Serializes every row of a RecordBatch as a ``tf.train.SequenceExample``.

    Args:
        batch: list-of-list columns become feature lists, all others context features
            (types as in `encode_examples`).

    Returns:
        One serialized SequenceExample per row.

    Example:
        >>> batch = pa.RecordBatch.from_pydict({"id": [7], "steps": [[[1, 2], [3]]]})
        >>> encode_sequence_examples(batch).to_pylist()
        [b'\n\r\n\x0b\n\x02id\x12\x05\x1a\x03\n\x01\x07\x12\x1a\n\x18\n\x05steps\x12\x0f\n\x06\x1a\x04\n\x02\x01\x02\n\x05\x1a\x03\n\x01\x03']
    """
    check_not_nullable(batch)
    names = feature_key_order(batch.schema.names)
    sequence = [n for n in names if is_feature_list_type(batch.schema.field(n).type)]
    context = [n for n in names if n not in sequence]
    n = batch.num_rows
    pieces = []
    if context:
        pieces.append(encode_examples(batch.select(context)).cast(pa.large_binary()))
    if sequence:
        entries = []
        for name in sequence:
            key = length_delimited(_TAG_1, pa.array([name.encode("utf-8")] * n, pa.large_binary()))
            value = length_delimited(_TAG_2, _feature_list(name, batch.column(name)))
            entry = length_delimited(
                _TAG_1, pc.binary_join_element_wise(key, value, pa.scalar(b"", pa.large_binary()))
            )
            column = batch.column(name)
            if column.null_count:
                entry = pc.if_else(column.is_valid(), entry, pa.scalar(b"", pa.large_binary()))
            entries.append(entry)
        lists = pc.binary_join_element_wise(*entries, pa.scalar(b"", pa.large_binary()))
        pieces.append(length_delimited(_TAG_2, lists))
    if not pieces:
        return pa.array([b""] * n, pa.binary())
    joined = pieces[0]
    if len(pieces) > 1:
        joined = pc.binary_join_element_wise(*pieces, pa.scalar(b"", pa.large_binary()))
    total = pc.sum(pc.binary_length(joined)).as_py() or 0
    return joined.cast(pa.binary()) if total < 2**31 - 1 else joined
