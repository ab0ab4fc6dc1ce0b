"""Parse `columnExpr` strings (Spark SQL column expressions) into a small expression tree.

The tree is plain frozen dataclasses, so a config stays picklable and comparable; the
kernels evaluate it on Arrow batches (`beam_tensorize.kernels.features.expressions`). Parsing uses
sqlglot's Spark dialect, so quoting, precedence and function names follow Spark SQL.
Anything the evaluator cannot run is rejected here, when the config is validated.

Example:
    >>> parse_column_expr("CAST(genreFeatures.term[0] AS STRING)")
    Cast(operand=Index(base=Path(parts=('genreFeatures', 'term')), index=Literal(value=0), \
one_based=False), to='string')
"""

from __future__ import annotations

import dataclasses
from typing import Any, Union

import sqlglot
from sqlglot import exp

from beam_tensorize.config.errors import TensorizeError

__all__ = [
    "BinaryOp",
    "Cast",
    "Expr",
    "ExprError",
    "Func",
    "Index",
    "Literal",
    "Path",
    "SUPPORTED_FUNCTIONS",
    "column_paths",
    "parse_column_expr",
    "root_columns",
]


class ExprError(TensorizeError, ValueError):
    """The expression cannot be parsed or uses something the evaluator does not support."""


@dataclasses.dataclass(frozen=True)
class Path:
    """A column reference: a top-level column, then struct fields.

    A field applied to an array of records projects it over every element
    (`genreFeatures.term` gives one list of terms per row), as Spark does.
    """

    parts: tuple[str, ...]


@dataclasses.dataclass(frozen=True)
class Literal:
    """A constant: int, float, str, bool or None."""

    value: Any


@dataclasses.dataclass(frozen=True)
class Index:
    """`base[index]`: a list element (0-based; `element_at` is 1-based) or a map value."""

    base: Expr
    index: Expr
    one_based: bool = False


@dataclasses.dataclass(frozen=True)
class Cast:
    """`CAST(operand AS to)`; failed conversions give null, as in Spark."""

    operand: Expr
    to: str  # one of CAST_TARGETS' values


@dataclasses.dataclass(frozen=True)
class BinaryOp:
    """Arithmetic (`+ - * /`) or string concatenation (`||`)."""

    op: str
    left: Expr
    right: Expr


@dataclasses.dataclass(frozen=True)
class Func:
    """A call of one of `SUPPORTED_FUNCTIONS`."""

    name: str
    args: tuple[Expr, ...]


Expr = Union[Path, Literal, Index, Cast, BinaryOp, Func]

# Spark SQL type name -> our logical type.
CAST_TARGETS = {
    exp.DataType.Type.TEXT: "string",
    exp.DataType.Type.VARCHAR: "string",
    exp.DataType.Type.CHAR: "string",
    exp.DataType.Type.BIGINT: "long",
    exp.DataType.Type.INT: "int",
    exp.DataType.Type.SMALLINT: "int",
    exp.DataType.Type.TINYINT: "int",
    exp.DataType.Type.FLOAT: "float",
    exp.DataType.Type.DOUBLE: "double",
    exp.DataType.Type.BOOLEAN: "boolean",
    exp.DataType.Type.BINARY: "bytes",
}

# name -> (min args, max args or None for any).
SUPPORTED_FUNCTIONS: dict[str, tuple[int, int | None]] = {
    "lower": (1, 1),
    "upper": (1, 1),
    "trim": (1, 1),
    "ltrim": (1, 1),
    "rtrim": (1, 1),
    "length": (1, 1),
    "concat": (1, None),
    "concat_ws": (2, None),
    "substring": (2, 3),
    "coalesce": (1, None),
    "size": (1, 1),
    "abs": (1, 1),
    "split": (2, 2),
}

# sqlglot node class -> our function name, for functions sqlglot turns into their own nodes.
_FUNCTION_NODES: dict[type, str] = {
    exp.Lower: "lower",
    exp.Upper: "upper",
    exp.Length: "length",
    exp.Concat: "concat",
    exp.ConcatWs: "concat_ws",
    exp.Substring: "substring",
    exp.Coalesce: "coalesce",
    exp.ArraySize: "size",
    exp.Abs: "abs",
    exp.Split: "split",
    exp.RegexpSplit: "split",
}

_BINARY_NODES: dict[type, str] = {
    exp.Add: "+",
    exp.Sub: "-",
    exp.Mul: "*",
    exp.Div: "/",
    exp.DPipe: "||",
}


def parse_column_expr(text: str) -> Expr:
    """Parse one Spark SQL column expression.

    Args:
        text: the `columnExpr` string, e.g. ``"CAST(a.b AS STRING)"``.

    Returns:
        The expression tree.

    Raises:
        ExprError: the text is not one column expression, or uses an unsupported construct.
    """
    if not isinstance(text, str) or not text.strip():
        raise ExprError("expected a non-empty Spark SQL column expression")
    try:
        statements = sqlglot.parse(text, read="spark")
    except sqlglot.errors.SqlglotError as err:
        first_line = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise ExprError(f"not valid Spark SQL: {first_line}") from None
    if len(statements) != 1 or statements[0] is None:
        raise ExprError("expected exactly one column expression")
    return _convert(statements[0])


def column_paths(expr: Expr) -> set[tuple[str, ...]]:
    """Every column path an expression reads, e.g. `{("genreFeatures", "term")}`."""
    if isinstance(expr, Path):
        return {expr.parts}
    if isinstance(expr, Literal):
        return set()
    if isinstance(expr, Index):
        return column_paths(expr.base) | column_paths(expr.index)
    if isinstance(expr, Cast):
        return column_paths(expr.operand)
    if isinstance(expr, BinaryOp):
        return column_paths(expr.left) | column_paths(expr.right)
    return set().union(*(column_paths(a) for a in expr.args))


def root_columns(expr: Expr) -> set[str]:
    """The top-level input columns an expression reads."""
    return {path[0] for path in column_paths(expr)}


def _unsupported(node: exp.Expression) -> ExprError:
    supported = ", ".join(sorted(SUPPORTED_FUNCTIONS))
    return ExprError(
        f"unsupported SQL construct {node.sql(dialect='spark')!r} ({type(node).__name__}); "
        "supported: column paths, [index], element_at, CAST, + - * /, ||, literals and "
        f"the functions {supported}"
    )


def _convert(node: exp.Expression) -> Expr:
    if isinstance(node, exp.Paren):
        return _convert(node.this)
    if isinstance(node, exp.Column):
        if isinstance(node.this, exp.Star):
            raise ExprError("'*' selects many columns; name one column")
        return Path(tuple(part.name for part in node.parts))
    if isinstance(node, exp.Dot):
        base = _convert(node.this)
        if not isinstance(base, Path) or not isinstance(node.expression, exp.Identifier):
            raise _unsupported(node)
        return Path(base.parts + (node.expression.name,))
    if isinstance(node, exp.Literal):
        if node.is_string:
            return Literal(node.this)
        number = node.this
        try:
            return Literal(int(number))
        except ValueError:
            return Literal(float(number))
    if isinstance(node, exp.Boolean):
        return Literal(bool(node.this))
    if isinstance(node, exp.Null):
        return Literal(None)
    if isinstance(node, exp.Neg):
        inner = _convert(node.this)
        if isinstance(inner, Literal) and isinstance(inner.value, (int, float)):
            return Literal(-inner.value)
        return BinaryOp("-", Literal(0), inner)
    if isinstance(node, exp.Bracket):
        if len(node.expressions) != 1:
            raise _unsupported(node)
        offset = node.args.get("offset") or 0
        return Index(_convert(node.this), _convert(node.expressions[0]), one_based=offset == 1)
    if isinstance(node, (exp.Cast, exp.TryCast)):
        target = node.to.this
        if target not in CAST_TARGETS:
            names = "STRING, LONG, BIGINT, INT, FLOAT, DOUBLE, BOOLEAN, BINARY"
            raise ExprError(f"cannot CAST to {node.to.sql(dialect='spark')}; supported: {names}")
        return Cast(_convert(node.this), CAST_TARGETS[target])
    for node_type, op in _BINARY_NODES.items():
        if type(node) is node_type:
            return BinaryOp(op, _convert(node.this), _convert(node.expression))
    name = _FUNCTION_NODES.get(type(node))
    if name is not None:
        return _function(name, _function_args(node))
    if isinstance(node, exp.Trim):
        position = (node.args.get("position") or "").upper()
        if node.args.get("expression") is not None:
            raise _unsupported(node)
        return _function({"LEADING": "ltrim", "TRAILING": "rtrim"}.get(position, "trim"), [node.this])
    if isinstance(node, exp.Anonymous):
        return _function(node.name.lower(), list(node.expressions))
    raise _unsupported(node)


def _function_args(node: exp.Expression) -> list[exp.Expression]:
    """Arguments of a sqlglot function node, in call order."""
    if isinstance(node, exp.Substring):
        return [a for a in (node.this, node.args.get("start"), node.args.get("length")) if a]
    if isinstance(node, exp.Coalesce):
        return [node.this, *node.expressions]
    if isinstance(node, (exp.Split, exp.RegexpSplit)):
        return [node.this, node.expression]
    if isinstance(node, (exp.Concat, exp.ConcatWs)):
        return list(node.expressions)
    return [node.this]


def _function(name: str, args: list[exp.Expression]) -> Func:
    if name in SUPPORTED_FUNCTIONS:
        low, high = SUPPORTED_FUNCTIONS[name]
        if len(args) < low or (high is not None and len(args) > high):
            expected = str(low) if low == high else f"{low} or more" if high is None else f"{low} to {high}"
            raise ExprError(f"{name}() takes {expected} arguments, got {len(args)}")
        return Func(name, tuple(_convert(a) for a in args))
    supported = ", ".join(sorted(SUPPORTED_FUNCTIONS))
    raise ExprError(f"unsupported function {name}(); supported: {supported}")
