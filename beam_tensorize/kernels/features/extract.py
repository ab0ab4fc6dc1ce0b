"""Compute one column per output tensor from input rows (`columnExpr` / `columnConfig`).

Example:
    >>> import pyarrow as pa
    >>> from beam_tensorize.config import parse_config
    >>> config = parse_config({"features": [{"outputTensorInfo": {"name": "userId", "dtype": "long"}}]})
    >>> extract_tensors(pa.RecordBatch.from_pydict({"userId": [7, 8]}), config.tensors).to_pydict()
    {'userId': [7, 8]}
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pyarrow as pa

from beam_tensorize.config.expr import Path, column_paths
from beam_tensorize.config.model import TensorConfig
from beam_tensorize.kernels.features.expressions import ExpressionEvalError, evaluate
from beam_tensorize.kernels.features.ntv import select_ntv
from beam_tensorize.kernels.features.tokenize import tokenize

__all__ = ["ExtractError", "extract_tensors", "input_columns"]


class ExtractError(ValueError):
    """A tensor's expression does not fit the input data; names the tensor and its config path."""


def extract_tensors(
    batch: pa.RecordBatch, tensors: Sequence[TensorConfig], extra_columns: Sequence[str] = ()
) -> pa.RecordBatch:
    """Evaluate every tensor's input on `batch` (and tokenize it where the config says so).

    Args:
        batch: input rows (e.g. decoded Avro records).
        tensors: the tensors to compute, in output order.
        extra_columns: input columns to keep as they are, after the tensors (Avro2TF's
            extra columns to keep).

    Returns:
        A batch with one column per tensor, named by tensor, keeping `batch`'s schema metadata
        (where the rows came from).

    Raises:
        ExtractError: an expression names a missing field or applies to the wrong type.
    """
    columns = []
    for tensor in tensors:
        info = tensor.input
        try:
            if info.column_config is not None:
                columns.append(select_ntv(batch, info.column_config))
            else:
                columns.append(evaluate(info.column_expr_ast, batch))
            tokenization = info.transform_config.tokenization
            if tokenization is not None:
                columns[-1] = tokenize(columns[-1], tokenization.remove_stop_words)
        except (ExpressionEvalError, TypeError) as err:
            what = "columnConfig" if info.column_config is not None else f"columnExpr {info.column_expr!r}"
            raise ExtractError(
                f"{tensor.json_path}.inputFeatureInfo ({tensor.name!r}): {what}: {err}"
            ) from err
    names = [t.name for t in tensors]
    for name in extra_columns:
        try:
            columns.append(evaluate(Path((name,)), batch))
        except ExpressionEvalError as err:
            raise ExtractError(f"extra column {name!r}: {err}") from err
        names.append(name)
    schema = pa.schema([pa.field(n, c.type) for n, c in zip(names, columns)])
    return pa.RecordBatch.from_arrays(columns, schema=schema.with_metadata(batch.schema.metadata))


def input_columns(tensors: Iterable[TensorConfig], extra_columns: Iterable[str] = ()) -> list[str]:
    """The input columns the tensors read, sorted, for column projection when reading.

    A column read only through some of its nested fields appears as dotted paths
    (`genreFeatures.term`), so the reader can leave the other fields out; a column read as a
    whole (NTV `columnConfig`, `size(x)`, an extra column) appears by its name.
    """
    paths: set[tuple[str, ...]] = {(name,) for name in extra_columns}
    for tensor in tensors:
        info = tensor.input
        if info.column_config is not None:
            paths.update((selection.column,) for selection in info.column_config)
        else:
            paths.update(column_paths(info.column_expr_ast))
    kept = [p for p in paths if not any(q != p and p[: len(q)] == q for q in paths)]
    return sorted(".".join(p) for p in kept)
