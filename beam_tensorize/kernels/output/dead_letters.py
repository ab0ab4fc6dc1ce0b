"""Encoding tensor batches as the output format's rows (Examples for TFRecord) with a dead-letter output for the rows that fail.

A row that cannot be stored under its tensor config is not dropped silently: it becomes a
dead letter `{"source", "reason", "tensors"}` naming its file and position (see
`beam_tensorize.kernels.provenance.describe_row`); the job decides how many it tolerates.

Example:
    >>> import pyarrow as pa
    >>> from beam_tensorize.kernels.features.conversion import FeatureLayout
    >>> layouts = [FeatureLayout.for_tensor("x", "long", (2,), False)]
    >>> batch = pa.RecordBatch.from_pydict({"x": [[1, 2], [3]], "day": [1, 2]})
    >>> out = encode_with_dead_letters(batch, layouts, keep_columns=["day"], check_shapes=True)
    >>> out.examples.schema.names, out.examples.column("day").to_pylist()
    (['serialized', 'day'], [1])
    >>> out.dead_letters[0]["reason"]
    "tensor 'x': expected 2 values at dimension 0, got 1"
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pyarrow as pa

from beam_tensorize.kernels.features.conversion import (
    ConversionResult,
    FeatureLayout,
    layout_for_column,
    to_feature_columns,
)
from beam_tensorize.kernels.output.base import OutputFormat, get_output_format
from beam_tensorize.kernels.output.tfrecord import SERIALIZED_COLUMN
from beam_tensorize.kernels.provenance import describe_row

__all__ = [
    "DEAD_LETTERS",
    "OFF_SHAPE_KEY",
    "SERIALIZED_COLUMN",
    "EncodedBatch",
    "convert_rows",
    "encode_with_dead_letters",
    "off_shape_of",
]

#: Output tag of the bad records of every step that has a dead-letter output.
DEAD_LETTERS = "dead_letters"
#: Schema metadata of an encoded batch: JSON `{tensor: rows}` of the rows kept whose outer
#: dimension differs from their tensor's fixed shape (`ConversionResult.off_shape`); the commit
#: counts them (the metadata reads such a tensor back as ragged).
OFF_SHAPE_KEY = b"beam_tensorize.off_shape"


class EncodedBatch(NamedTuple):
    """What `encode_with_dead_letters` gives.

    Attributes:
        examples: the good rows: a binary column `serialized` (their Examples; for Parquet
            and Avro output, the tensor columns instead) and the kept
            columns, in row order, with the input batch's schema metadata (its source tag)
            and, when some rows are off their fixed shape, `OFF_SHAPE_KEY`.
        dead_letters: one dict `{"source", "reason", "tensors"}` per bad row.
    """

    examples: pa.RecordBatch
    dead_letters: list[dict]


def off_shape_of(examples: pa.RecordBatch) -> dict[str, int]:
    """The `OFF_SHAPE_KEY` counts of an encoded batch (`{}` when every row fits its shape).

    Example:
        >>> layouts = [FeatureLayout.for_tensor("x", "long", (2,), False)]
        >>> off_shape_of(encode_with_dead_letters(pa.RecordBatch.from_pydict({"x": [[1]]}), layouts).examples)
        {'x': 1}
    """
    found = (examples.schema.metadata or {}).get(OFF_SHAPE_KEY)
    return json.loads(found) if found else {}


def convert_rows(
    batch: pa.RecordBatch,
    layouts: Sequence[FeatureLayout],
    keep_columns: Sequence[str] = (),
    check_shapes: bool = False,
) -> tuple[ConversionResult, tuple[FeatureLayout, ...]]:
    """The Example feature columns of a tensor batch (`to_feature_columns`) and every layout
    used: the tensors' (a dense NTV vector's with its run-time dimension), then those of the
    columns without one (extra columns, stored by their Arrow type, `layout_for_column`);
    `keep_columns` are left out. `check_shapes`: as `to_feature_columns`.

    Raises:
        FeatureDataError: a column's type does not fit its tensor at all.
    """
    known = {layout.name for layout in layouts} | set(keep_columns)
    extra = [layout_for_column(f.name, f.type) for f in batch.schema if f.name not in known]
    encoded = batch.drop_columns(list(keep_columns)) if keep_columns else batch
    result = to_feature_columns(encoded, tuple(layouts) + tuple(extra), check_shapes)
    return result, result.layouts  # a dense vector's with its run-time dimension


def encode_with_dead_letters(
    batch: pa.RecordBatch,
    layouts: Sequence[FeatureLayout],
    keep_columns: Sequence[str] = (),
    output_format: str | OutputFormat = "tfrecord",
    check_shapes: bool = False,
) -> EncodedBatch:
    """Serialize the rows of a tensor batch as `tf.train.Example`s (or, for Parquet and Avro
    output, as tensor columns: `beam_tensorize.kernels.output.parquet.tensor_columns`); bad rows
    become dead letters.

    Columns without a layout (extra columns kept from the input) are stored by their Arrow
    type (see `layout_for_column`). `keep_columns` are left out of the Examples and passed
    through beside `serialized` (e.g. partition columns).

    Args:
        batch: one column per tensor (and extra column), as the feature steps produce.
        layouts: how each tensor is stored.
        keep_columns: columns to pass through instead of encoding.
        output_format: an output format or its name (`beam_tensorize.kernels.output`):
            "tfrecord" (a `serialized` column of Examples), "parquet" (a column per tensor, two
            per sparse tensor) or "avro" (a column per tensor).
        check_shapes: a row whose outer dimension differs from its tensor's fixed shape is a
            dead letter; by default it is kept as it is (Avro2TF's rule) and counted
            (`off_shape_of`).

    Raises:
        KeyError: a column to keep is missing.
        FeatureDataError: a column's type does not fit its tensor at all.

    Example:
        >>> layouts = [FeatureLayout.for_tensor("x", "long", (), False)]
        >>> out = encode_with_dead_letters(pa.RecordBatch.from_pydict({"x": [7, None]}), layouts)
        >>> out.examples.num_rows, out.dead_letters[0]["source"]
        (1, 'row 1 of an untagged batch')
    """
    keep = list(keep_columns)
    missing = [name for name in keep if name not in batch.schema.names]
    if missing:
        raise KeyError(f"EncodeExamples: columns to keep {missing} are not among {batch.schema.names}")
    result, every_layout = convert_rows(batch, layouts, keep, check_shapes)
    data = get_output_format(output_format).tensor_data(result.features, every_layout)
    kept = batch.select(keep)
    if len(result.bad_rows):
        good = np.ones(batch.num_rows, bool)
        good[result.bad_rows] = False
        kept = kept.filter(pa.array(good))
    tags = dict(batch.schema.metadata or {})
    if result.off_shape:
        tags[OFF_SHAPE_KEY] = json.dumps(result.off_shape, sort_keys=True).encode()
    schema = pa.schema([*data.schema, *kept.schema], metadata=tags or None)
    examples = pa.RecordBatch.from_arrays([*data.columns, *kept.columns], schema=schema)
    dead_letters = []
    if len(result.bad_rows):
        rows = batch.take(pa.array(result.bad_rows)).to_pylist()
        for row_index, reason, values in zip(result.bad_rows, result.reasons, rows):
            dead_letters.append(
                {"source": describe_row(batch, int(row_index)), "reason": reason, "tensors": values}
            )
    return EncodedBatch(examples, dead_letters)
