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

from beam_tensorize.config.errors import TensorizeError
from beam_tensorize.config.expr import Expr, ExprError, Path, column_paths, parse_column_expr
from beam_tensorize.config.model import TensorConfig
from beam_tensorize.kernels.features.expressions import ExpressionEvalError, evaluate
from beam_tensorize.kernels.features.ntv import select_ntv
from beam_tensorize.kernels.features.tokenize import tokenize

__all__ = ["ExtractError", "extra_column", "extra_column_names", "extract_tensors", "input_columns"]


class ExtractError(TensorizeError, ValueError):
    """A tensor's expression does not fit the input data; names the tensor and its config path."""


def extract_tensors(
    batch: pa.RecordBatch,
    tensors: Sequence[TensorConfig],
    extra_columns: Sequence[str] = (),
    tokenize_text: bool = True,
) -> pa.RecordBatch:
    """Evaluate every tensor's input on `batch` (and tokenize it where the config says so).

    Args:
        batch: input rows (e.g. decoded Avro records).
        tensors: the tensors to compute, in output order.
        extra_columns: input columns to keep as they are, after the tensors (Avro2TF's
            extra columns to keep): column names, or Spark SQL expressions with a name
            (`words.term:terms`, see `extra_column`).
        tokenize_text: tokenize where the config says so (False: the text before it, what the
            TensorFlow serving model takes as input).

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
            if tokenization is not None and tokenize_text:
                columns[-1] = tokenize(columns[-1], tokenization.remove_stop_words)
        except (ExpressionEvalError, TypeError) as err:
            what = "columnConfig" if info.column_config is not None else f"columnExpr {info.column_expr!r}"
            raise ExtractError(
                f"{tensor.json_path}.inputFeatureInfo ({tensor.name!r}): {what}: {err}"
            ) from err
    names = [t.name for t in tensors]
    for spec in extra_columns:
        name, expr = extra_column(spec)
        try:
            columns.append(evaluate(expr, batch))
        except ExpressionEvalError as err:
            raise ExtractError(f"extra column {spec!r}: {err}") from err
        names.append(name)
    schema = pa.schema([pa.field(n, c.type) for n, c in zip(names, columns)])
    return pa.RecordBatch.from_arrays(columns, schema=schema.with_metadata(batch.schema.metadata))


def extra_column(spec: str) -> tuple[str, Expr]:
    """The name and the expression of an extra column to keep, given as Avro2TF does: a column
    name (`review`), or `expression:name` (`words.term:terms`); an unnamed field access is
    named by its last field, as Spark names it (`words.term` -> `term`).

    Raises:
        ValueError: more than one `:`, an empty side, an expression that does not parse, or an
            unnamed expression that is not a column or field.

    Example:
        >>> extra_column("words.term:terms")
        ('terms', Path(parts=('words', 'term')))
        >>> extra_column("review")
        ('review', Path(parts=('review',)))
    """
    text, colon, alias = spec.partition(":")
    text, alias = text.strip(), alias.strip()
    if colon and (not text or not alias or ":" in alias):
        raise ValueError(f"extra column {spec!r}: give a column, or 'expression:name' with one ':'")
    if not colon and not any(c in text for c in ".()[]` "):
        return text, Path((text,))  # a plain column name, whatever characters it holds
    try:
        expr = parse_column_expr(text)
    except ExprError as err:
        raise ValueError(f"extra column {spec!r}: {err}") from None
    if colon:
        return alias, expr
    if isinstance(expr, Path):
        return expr.parts[-1], expr
    raise ValueError(f"extra column {spec!r} is an expression: name it, e.g. '{text}:name'")


def extra_column_names(extra_columns: Iterable[str]) -> tuple[str, ...]:
    """The names the extra columns are written under (see `extra_column`)."""
    return tuple(extra_column(spec)[0] for spec in extra_columns)


def input_columns(tensors: Iterable[TensorConfig], extra_columns: Iterable[str] = ()) -> list[str]:
    """The input columns the tensors read, sorted, for column projection when reading.

    A column read only through some of its nested fields appears as dotted paths
    (`genreFeatures.term`), so the reader can leave the other fields out; a column read as a
    whole (NTV `columnConfig`, `size(x)`, an extra column) appears by its name. An NTV column
    none of whose entries can be selected (`"blacklist": ["*"]`) is read only as far as its
    entries' names (`movieLatentFactorFeatures.name`): enough to check that it is there and
    holds NTV records, without decoding the rest.
    """
    paths: set[tuple[str, ...]] = set()
    for spec in extra_columns:
        paths.update(column_paths(extra_column(spec)[1]))
    for tensor in tensors:
        info = tensor.input
        if info.column_config is not None:
            for selection in info.column_config:
                paths.add((selection.column, "name") if selection.selects_nothing else (selection.column,))
        else:
            paths.update(column_paths(info.column_expr_ast))
    kept = [p for p in paths if not any(q != p and p[: len(q)] == q for q in paths)]
    return sorted(".".join(p) for p in kept)
