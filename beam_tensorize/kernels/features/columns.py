"""Replace the columns of some tensors in a batch, keeping every other column and the tags.

Example:
    >>> import pyarrow as pa
    >>> from beam_tensorize.config import parse_config
    >>> config = parse_config({"features": [{"outputTensorInfo": {"name": "x", "dtype": "long"}}]})
    >>> batch = pa.RecordBatch.from_pydict({"x": [1, 2], "kept": ["a", "b"]})
    >>> import pyarrow.compute as pc
    >>> def double(tensor, field, column):
    ...     return field, pc.multiply(column, 2)
    >>> replace_tensor_columns(batch, config.tensors, double).to_pydict()
    {'x': [2, 4], 'kept': ['a', 'b']}
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pyarrow as pa

from beam_tensorize.config.model import TensorConfig

__all__ = ["replace_tensor_columns"]

#: Given (tensor, field, column): the new (field, column), or None to keep the column.
Replacement = Callable[[TensorConfig, pa.Field, pa.Array], "tuple[pa.Field, pa.Array] | None"]


def replace_tensor_columns(
    batch: pa.RecordBatch, tensors: Sequence[TensorConfig], replace: Replacement
) -> pa.RecordBatch:
    """`batch` with each tensor's column passed through `replace`; other columns (extra
    columns kept from the input) and the schema metadata stay as they are."""
    by_name = {t.name: t for t in tensors}
    fields, columns = [], []
    for field, column in zip(batch.schema, batch.columns):
        tensor = by_name.get(field.name)
        replaced = None if tensor is None else replace(tensor, field, column)
        if replaced is not None:
            field, column = replaced
        fields.append(field)
        columns.append(column)
    return pa.RecordBatch.from_arrays(columns, schema=pa.schema(fields, metadata=batch.schema.metadata))
