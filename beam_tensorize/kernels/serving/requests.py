"""Raw columns as `tf.train.Example` features: the request format of the serving SavedModel.

The TensorFlow serving model (`beam_tensorize.tf.serving`) takes each tensor's extracted
column (its `columnExpr` / `columnConfig` result, before tokenization, hashing and lookup).
In a serialized Example request a column is stored as an extra column is in the records:

* strings and bytes as a bytes list, integers and booleans as an int64 list, floating-point
  numbers as a float list (32 bits: the only float an Example holds);
* a scalar as a list of one value (none for a null), a list as its values, a list of lists as
  its flattened values plus `<name>/row_lengths_<i>` (the lengths at depth `i`);
* a name-term-value column as three lists `<name>/name`, `<name>/term` (strings; a null is
  `null`, numbers written as Spark casts them) and `<name>/value` (a null is 0).

Example:
    >>> ntv = pa.array([[{"name": "g", "term": "a", "value": 2.0}]])
    >>> raw_example_columns(pa.RecordBatch.from_pydict({"id": [7], "v": ntv})).to_pydict()
    {'id': [[7]], 'v/name': [[b'g']], 'v/term': [[b'a']], 'v/value': [[2.0]]}
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from beam_tensorize.kernels.features.conversion import FeatureLayout, layout_for_column, to_feature_columns
from beam_tensorize.kernels.features.ntv import is_ntv, ntv_parts

__all__ = ["NTV_PARTS", "raw_column_layouts", "raw_example_columns", "raw_example_parts"]

#: The features of a name-term-value column, by suffix, with their Example list types.
NTV_PARTS = (("name", "string"), ("term", "string"), ("value", "float"))


def _split_ntv(name: str, column: pa.Array) -> dict[str, pa.Array]:
    row_of, names, terms, values = ntv_parts(column)
    offsets = pa.array(
        np.concatenate([[0], np.cumsum(np.bincount(row_of, minlength=len(column)))]), pa.int64()
    )
    parts = {"name": names.cast(pa.large_string()), "term": terms.cast(pa.large_string())}
    parts["value"] = pa.array(values, pa.float64())
    return {f"{name}/{part}": pa.LargeListArray.from_arrays(offsets, parts[part]) for part, _ in NTV_PARTS}


def raw_example_parts(raw: pa.RecordBatch) -> dict[str, pa.Array]:
    """The raw columns by request feature name, a name-term-value column as its three parts
    (each a list per row); a scalar column stays a scalar column."""
    columns: dict[str, pa.Array] = {}
    for field, column in zip(raw.schema, raw.columns):
        if is_ntv(field.type):
            columns.update(_split_ntv(field.name, column))
        else:
            columns[field.name] = column
    return columns


def raw_column_layouts(schema: pa.Schema) -> dict[str, FeatureLayout]:
    """How each raw column (or NTV part) is stored in a request, by column name."""
    layouts = {}
    for field in schema:
        if is_ntv(field.type):
            for part, dtype in NTV_PARTS:
                layouts[f"{field.name}/{part}"] = FeatureLayout.for_tensor(
                    f"{field.name}/{part}", dtype, (-1,), False
                )
        else:
            layouts[field.name] = layout_for_column(field.name, field.type)
    return layouts


def raw_example_columns(raw: pa.RecordBatch) -> pa.RecordBatch:
    """The Example feature columns of a batch of raw columns (`Preprocessor.raw_batch`).

    Raises:
        ValueError: a raw value an Example cannot hold (a null inside a list), naming the row.
    """
    columns = raw_example_parts(raw)
    batch = pa.RecordBatch.from_pydict(columns)
    layouts = raw_column_layouts(raw.schema)
    result = to_feature_columns(batch, [layouts[name] for name in columns])
    if len(result.bad_rows):
        raise ValueError(f"record {int(result.bad_rows[0])}: {result.reasons[0]}")
    return result.features
