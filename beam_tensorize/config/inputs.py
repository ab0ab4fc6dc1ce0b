"""An ``inputFeatureInfo`` checked and built: the column it reads (``columnExpr``, or an NTV
``columnConfig`` with its whitelists / blacklists) and its ``transformConfig`` (``hashInfo``,
``tokenization``).
"""

from __future__ import annotations

from typing import Any

from beam_tensorize.config.expr import ExprError, parse_column_expr
from beam_tensorize.config.model import (
    COMBINERS,
    HASH_FUNCTIONS,
    HashInfo,
    InputFeatureInfo,
    NtvSelection,
    Tokenization,
    TransformConfig,
)
from beam_tensorize.config.validation import _MISSING, _child, _Ctx, _get, _optional, _required

_INPUT_KEYS = ("columnExpr", "columnConfig", "transformConfig")
_TRANSFORM_KEYS = ("hashInfo", "tokenization")
_HASH_KEYS = ("hashBucketSize", "numHashFunctions", "combiner", "hashFunction")
_TOKENIZATION_KEYS = ("removeStopWords",)
_NTV_KEYS = ("whitelist", "blacklist")


def _hash_info(ctx: _Ctx, value: Any, path: str) -> HashInfo:
    obj = ctx.object(value, path, "a hashInfo object", _HASH_KEYS)
    size = ctx.positive(
        _required(ctx, obj, path, "hashBucketSize", "a positive integer"),
        _child(path, "hashBucketSize"),
    )
    count = _optional(obj, path, "numHashFunctions", ctx.positive, 1)

    def combiner(v: Any, p: str) -> str:
        return ctx.choice(ctx.string(v, p, f"one of {', '.join(COMBINERS)}").upper(), p, COMBINERS)

    def hash_function(v: Any, p: str) -> str:
        what = f"one of {', '.join(HASH_FUNCTIONS)}"
        return ctx.choice(ctx.string(v, p, what), p, HASH_FUNCTIONS)

    return HashInfo(
        hash_bucket_size=size,
        num_hash_functions=count,
        combiner=_optional(obj, path, "combiner", combiner, "SUM"),
        hash_function=_optional(obj, path, "hashFunction", hash_function, "fingerprint"),
    )


def _tokenization(ctx: _Ctx, value: Any, path: str) -> Tokenization:
    obj = ctx.object(value, path, "a tokenization object", _TOKENIZATION_KEYS)
    return Tokenization(remove_stop_words=_optional(obj, path, "removeStopWords", ctx.boolean, False))


def _transform_config(ctx: _Ctx, value: Any, path: str) -> TransformConfig:
    obj = ctx.object(value, path, "a transformConfig object", _TRANSFORM_KEYS)
    return TransformConfig(
        hash_info=_optional(obj, path, "hashInfo", lambda v, p: _hash_info(ctx, v, p), None),
        tokenization=_optional(obj, path, "tokenization", lambda v, p: _tokenization(ctx, v, p), None),
    )


def _name_list(ctx: _Ctx, value: Any, path: str) -> tuple[str, ...]:
    items = ctx.list(value, path, 'a list of NTV names (or "*")')
    return tuple(
        ctx.string(item, f"{path}[{i}]", 'an NTV name string (or "*")') for i, item in enumerate(items)
    )


def _column_config(ctx: _Ctx, value: Any, path: str) -> tuple[NtvSelection, ...]:
    what = 'a non-empty object mapping NTV column names to {"whitelist": [...]} or {"blacklist": [...]}'
    obj = ctx.object(value, path, what, None)
    if not obj:
        raise ctx.expected(path, what, obj)
    selections = []
    for column, entry in obj.items():
        entry_path = _child(path, column)
        entry = ctx.object(entry, entry_path, '{"whitelist": [...]} or {"blacklist": [...]}', _NTV_KEYS)
        white, black = _get(entry, "whitelist"), _get(entry, "blacklist")
        if white is not _MISSING and black is not _MISSING:
            raise ctx.error(entry_path, "whitelist and blacklist are exclusive; give one")
        if white is _MISSING and black is _MISSING:
            raise ctx.error(entry_path, "expected whitelist or blacklist; give one")
        selections.append(
            NtvSelection(
                column=column,
                whitelist=None
                if white is _MISSING
                else _name_list(ctx, white, _child(entry_path, "whitelist")),
                blacklist=None
                if black is _MISSING
                else _name_list(ctx, black, _child(entry_path, "blacklist")),
            )
        )
    return tuple(selections)


def _column_expr(ctx: _Ctx, value: Any, path: str, note: str = "") -> tuple[str, Any]:
    text = ctx.string(value, path, "a Spark SQL column expression string")
    try:
        return text, parse_column_expr(text)
    except ExprError as err:
        raise ctx.error(path, f"cannot use expression {text!r}: {err}{note}") from None


def _input_feature_info(ctx: _Ctx, value: Any, path: str, name: str) -> InputFeatureInfo:
    if value is _MISSING:
        text, ast = _column_expr(
            ctx,
            name,
            _child(path, "columnExpr"),
            " (inputFeatureInfo is missing, so columnExpr defaults to outputTensorInfo.name)",
        )
        return InputFeatureInfo(column_expr=text, column_expr_ast=ast)
    obj = ctx.object(
        value,
        path,
        "an inputFeatureInfo object with columnExpr or columnConfig",
        _INPUT_KEYS,
    )
    expr, config = _get(obj, "columnExpr"), _get(obj, "columnConfig")
    if expr is not _MISSING and config is not _MISSING:
        raise ctx.error(path, "columnExpr and columnConfig are exclusive; give one")
    if expr is _MISSING and config is _MISSING:
        # Avro2TF: an inputFeatureInfo with only a transformConfig reads the column named like
        # the tensor.
        expr = name
    transform = _optional(
        obj,
        path,
        "transformConfig",
        lambda v, p: _transform_config(ctx, v, p),
        TransformConfig(),
    )
    if expr is not _MISSING:
        note = (
            ""
            if _get(obj, "columnExpr") is not _MISSING
            else " (columnExpr defaults to outputTensorInfo.name)"
        )
        text, ast = _column_expr(ctx, expr, _child(path, "columnExpr"), note)
        return InputFeatureInfo(column_expr=text, column_expr_ast=ast, transform_config=transform)
    return InputFeatureInfo(
        column_config=_column_config(ctx, config, _child(path, "columnConfig")),
        transform_config=transform,
    )
