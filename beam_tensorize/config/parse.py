"""Reading and validating a tensorize config (Avro2TF JSON, or the same document as YAML / HOCON).

Every problem is reported as a :class:`~beam_tensorize.config.errors.ConfigError` naming the JSON
path of the offending value and what was expected, e.g.::

    features[3].outputTensorInfo.dtype: 'lng' is not one of int, long, float, double, string,
    boolean, bytes, sparseVector

Example::

    config = load_config("gs://bucket/avro2tf_config.json")
    [t.name for t in config.features]
"""

from __future__ import annotations

import difflib
import json
import logging
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from beam_tensorize.config.errors import ConfigError
from beam_tensorize.config.expr import ExprError, parse_column_expr
from beam_tensorize.config.model import (
    COMBINERS,
    DTYPES,
    HASH_FUNCTIONS,
    TENSOR_NAME_PATTERN,
    HashInfo,
    InputFeatureInfo,
    NtvSelection,
    OutputTensorInfo,
    TensorConfig,
    TensorizeConfig,
    Tokenization,
    TransformConfig,
)

__all__ = ["FORMATS", "load_config", "parse_config"]

_LOGGER = logging.getLogger(__name__)

#: Document formats :func:`load_config` reads.
FORMATS: tuple[str, ...] = ("json", "yaml", "hocon")

_EXTENSIONS: dict[str, str] = {
    ".json": "json",
    ".yaml": "yaml",
    ".yml": "yaml",
    ".conf": "hocon",
    ".hocon": "hocon",
}
_COMPRESSION_EXTENSIONS = (".gz", ".bz2", ".deflate", ".zst", ".lzma", ".xz", ".snappy")

_TOP_KEYS = ("features", "labels")
_TENSOR_KEYS = ("inputFeatureInfo", "outputTensorInfo")
_INPUT_KEYS = ("columnExpr", "columnConfig", "transformConfig")
_TRANSFORM_KEYS = ("hashInfo", "tokenization")
_HASH_KEYS = ("hashBucketSize", "numHashFunctions", "combiner", "hashFunction")
_TOKENIZATION_KEYS = ("removeStopWords",)
_OUTPUT_KEYS = (
    "name",
    "dtype",
    "shape",
    "isSparse",
    "isDocumentFeature",
    "vocabSizeCap",
)
_NTV_KEYS = ("whitelist", "blacklist")

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MISSING = object()

_T = TypeVar("_T")


class _JsonObject(dict):
    """A JSON object that remembers keys given more than once (json keeps only the last)."""

    duplicates: tuple[str, ...] = ()


def _json_object(pairs: list[tuple[str, Any]]) -> _JsonObject:
    obj = _JsonObject(pairs)
    if len(obj) != len(pairs):
        seen: set[str] = set()
        duplicates = []
        for key, _ in pairs:
            if key in seen:
                duplicates.append(key)
            seen.add(key)
        obj.duplicates = tuple(duplicates)
    return obj


# --------------------------------------------------------------------------- paths and kinds


def _child(path: str, key: str) -> str:
    """The JSON path of ``key`` inside the object at ``path``."""
    if not _IDENTIFIER.match(key):
        return f"{path}[{json.dumps(key)}]"
    return f"{path}.{key}" if path else key


def _describe(value: Any) -> str:
    """Names the JSON kind of ``value`` (and the value, when short) for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"boolean {'true' if value else 'false'}"
    if isinstance(value, int):
        return f"integer {value}"
    if isinstance(value, float):
        return f"number {value!r}"
    if isinstance(value, str):
        return f"string {value!r}" if len(value) <= 60 else f"a string of {len(value)} characters"
    if isinstance(value, Mapping):
        return "an empty object" if not value else "an object"
    if isinstance(value, (list, tuple)):
        return "an empty list" if not value else "a list"
    return f"a {type(value).__name__}"


class _Ctx:
    """What every validation step needs: where the document came from."""

    def __init__(self, source: str | None):
        self.source = source

    def error(self, path: str, problem: str) -> ConfigError:
        return ConfigError(path, problem, self.source)

    def expected(self, path: str, what: str, value: Any) -> ConfigError:
        return self.error(path, f"expected {what}, got {_describe(value)}")

    # ------------------------------------------------------------------ containers

    def object(self, value: Any, path: str, what: str, allowed: Sequence[str] | None) -> Mapping[str, Any]:
        """Checks ``value`` is an object whose keys are all in ``allowed`` (any key if None)."""
        if not isinstance(value, Mapping):
            raise self.expected(path, what, value)
        for key in value:
            if not isinstance(key, str):
                raise self.error(path, f"key {key!r} is not a string; object keys must be strings")
            if allowed is not None and key not in allowed:
                raise self.error(_child(path, key), _unknown_key_problem(key, allowed))
        duplicates = getattr(value, "duplicates", ())
        if duplicates:
            raise self.error(_child(path, duplicates[0]), "key given more than once")
        return value

    def list(self, value: Any, path: str, what: str) -> Sequence[Any]:
        if not isinstance(value, (list, tuple)):
            raise self.expected(path, what, value)
        return value

    # ------------------------------------------------------------------ scalars

    def string(self, value: Any, path: str, what: str = "a string") -> str:
        if not isinstance(value, str):
            raise self.expected(path, what, value)
        return value

    def boolean(self, value: Any, path: str) -> bool:
        if not isinstance(value, bool):
            raise self.expected(path, "true or false", value)
        return value

    def integer(self, value: Any, path: str, minimum: int, what: str) -> int:
        if isinstance(value, float) and value.is_integer():
            raise self.error(
                path,
                f"expected {what}, got {_describe(value)} (write integers without a decimal point)",
            )
        if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
            raise self.expected(path, what, value)
        return value

    def positive(self, value: Any, path: str) -> int:
        return self.integer(value, path, 1, "a positive integer")

    def choice(self, value: str, path: str, choices: Sequence[str]) -> str:
        if value not in choices:
            raise self.error(path, f"{value!r} is not one of {', '.join(choices)}")
        return value


def _unknown_key_problem(key: str, allowed: Sequence[str]) -> str:
    by_lower = {a.lower(): a for a in allowed}
    matches = [by_lower[key.lower()]] if key.lower() in by_lower else []
    matches = matches or difflib.get_close_matches(key, allowed, n=1)
    if matches:
        return f"unknown key; did you mean {matches[0]!r}?"
    return f"unknown key; expected one of {', '.join(allowed)}"


def _get(obj: Mapping[str, Any], key: str) -> Any:
    """The value at ``key``; a missing key and an explicit null both give ``_MISSING``."""
    value = obj.get(key)
    return _MISSING if value is None else value


def _optional(
    obj: Mapping[str, Any],
    path: str,
    key: str,
    convert: Callable[[Any, str], _T],
    default: _T,
) -> _T:
    value = _get(obj, key)
    return default if value is _MISSING else convert(value, _child(path, key))


def _required(ctx: _Ctx, obj: Mapping[str, Any], path: str, key: str, what: str) -> Any:
    if key not in obj:
        raise ctx.error(_child(path, key), f"required key is missing; expected {what}")
    if obj[key] is None:
        raise ctx.expected(_child(path, key), what, None)
    return obj[key]


# --------------------------------------------------------------------------- sections


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


def _output_tensor_info(ctx: _Ctx, value: Any, path: str) -> OutputTensorInfo:
    obj = ctx.object(value, path, "an outputTensorInfo object", _OUTPUT_KEYS)
    name_path = _child(path, "name")
    name = ctx.string(
        _required(ctx, obj, path, "name", "a tensor name string"),
        name_path,
        "a tensor name string",
    )
    if not TENSOR_NAME_PATTERN.match(name):
        raise ctx.error(
            name_path,
            f"{name!r} is not a valid tensor name; use one or more letters, digits, '_', '.' "
            "or '-' (tensor names become feature keys and file names)",
        )
    dtypes = f"one of {', '.join(DTYPES)}"
    dtype_path = _child(path, "dtype")
    dtype = ctx.choice(
        ctx.string(_required(ctx, obj, path, "dtype", dtypes), dtype_path, dtypes),
        dtype_path,
        DTYPES,
    )

    def shape(v: Any, p: str) -> tuple[int, ...]:
        dims = ctx.list(v, p, "a list of integers >= -1")
        return tuple(
            ctx.integer(d, f"{p}[{i}]", -1, "an integer >= -1 (-1 = unknown size)")
            for i, d in enumerate(dims)
        )

    return OutputTensorInfo(
        name=name,
        dtype=dtype,
        shape=_optional(obj, path, "shape", shape, ()),
        is_sparse=_optional(obj, path, "isSparse", ctx.boolean, False),
        is_document_feature=_optional(obj, path, "isDocumentFeature", ctx.boolean, True),
        vocab_size_cap=_optional(obj, path, "vocabSizeCap", ctx.positive, None),
    )


def _tensor(ctx: _Ctx, value: Any, path: str, role: str) -> TensorConfig:
    obj = ctx.object(value, path, "a tensor config object with outputTensorInfo", _TENSOR_KEYS)
    output = _output_tensor_info(
        ctx,
        _required(ctx, obj, path, "outputTensorInfo", "an outputTensorInfo object"),
        _child(path, "outputTensorInfo"),
    )
    info = _input_feature_info(
        ctx,
        _get(obj, "inputFeatureInfo"),
        _child(path, "inputFeatureInfo"),
        output.name,
    )
    return TensorConfig(input=info, output=output, role=role, json_path=path)


# --------------------------------------------------------------------------- public API


def parse_config(document: Mapping[str, Any], source: str | None = None) -> TensorizeConfig:
    """Validates a config document and builds the model.

    Args:
        document: the decoded JSON (or YAML / HOCON) document, Avro2TF's config format.
        source: where the document came from (a file name), quoted in error messages.

    Returns:
        The validated config.

    Raises:
        ConfigError: the document is not a valid config; the error names the JSON path of the
            first problem found and what was expected there.
    """
    ctx = _Ctx(source)
    top = ctx.object(
        document,
        "",
        "a config object with 'features' (and optionally 'labels')",
        _TOP_KEYS,
    )
    features_value = _required(ctx, top, "", "features", "a non-empty list of tensor configs")
    features_list = ctx.list(features_value, "features", "a non-empty list of tensor configs")
    if not features_list:
        raise ctx.expected("features", "a non-empty list of tensor configs", features_list)
    labels_list = _optional(top, "", "labels", lambda v, p: ctx.list(v, p, "a list of tensor configs"), ())
    tensors: dict[str, list[TensorConfig]] = {"features": [], "labels": []}
    seen: dict[str, str] = {}
    for key, role, items in (
        ("features", "feature", features_list),
        ("labels", "label", labels_list),
    ):
        for i, item in enumerate(items):
            tensor = _tensor(ctx, item, f"{key}[{i}]", role)
            if tensor.name in seen:
                raise ctx.error(
                    f"{tensor.json_path}.outputTensorInfo.name",
                    f"duplicate tensor name {tensor.name!r} (also at {seen[tensor.name]})",
                )
            seen[tensor.name] = tensor.json_path
            tensors[key].append(tensor)
    return TensorizeConfig(features=tuple(tensors["features"]), labels=tuple(tensors["labels"]))


def load_config(path_or_text: str | os.PathLike[str], *, format: str | None = None) -> TensorizeConfig:
    """Reads and validates a config file, or inline JSON text.

    The file is read through Beam's ``FileSystems``, so local paths and ``gs://``, ``s3://``,
    ``hdfs://`` paths all work. The format comes from ``format`` or else from the extension:
    ``.json``; ``.yaml`` / ``.yml``; ``.conf`` / ``.hocon`` (a compression suffix such as ``.gz``
    is skipped); any other name is read as JSON. An argument that is not an existing local
    path and starts with ``{`` is parsed as config text itself (JSON unless ``format`` says
    otherwise).

    Args:
        path_or_text: a config path or URL, or the config as JSON text.
        format: ``"json"``, ``"yaml"`` or ``"hocon"``, to override the extension.

    Returns:
        The validated config.

    Raises:
        ConfigError: the file cannot be read or decoded (the message names the file and, for
            JSON, the line and column), or the document is not a valid config.
        ValueError: ``format`` is not one of the supported formats.
    """
    if format is not None:
        if not isinstance(format, str) or format.lower() not in FORMATS:
            raise ValueError(f"format must be one of {', '.join(FORMATS)}; got {format!r}")
        format = format.lower()
    location = os.fspath(path_or_text)
    if location.lstrip().startswith("{") and not os.path.exists(location):
        return parse_config(_decode(location, format or "json", None), None)
    text = _read(location)
    if format is None:
        format = _format_from_name(location)
    return parse_config(_decode(text, format, location), location)


def _format_from_name(location: str) -> str:
    name = location.lower()
    for suffix in _COMPRESSION_EXTENSIONS:
        if name.endswith(suffix):
            name = name[: -len(suffix)]
            break
    for extension, fmt in _EXTENSIONS.items():
        if name.endswith(extension):
            return fmt
    _LOGGER.debug("Reading config %s as JSON: its name has no known extension.", location)
    return "json"


def _read(location: str) -> str:
    try:
        if "://" not in location:  # a local file, as it is (without Beam's ~1.7 s import)
            with open(location, "rb") as handle:
                data = handle.read()
        else:
            from apache_beam.io.filesystems import FileSystems

            with FileSystems.open(location) as handle:
                data = handle.read()
    except Exception as err:  # each file system raises its own error types
        raise ConfigError("", f"cannot read config file: {err}", location) from err
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise ConfigError("", f"config file is not UTF-8 text: {err}", location) from None


def _decode(text: str, format: str, source: str | None) -> Any:
    """Turns config text into plain Python objects."""
    if format == "json":
        try:
            return json.loads(text, object_pairs_hook=_json_object)
        except json.JSONDecodeError as err:
            raise ConfigError(
                "",
                f"invalid JSON at line {err.lineno}, column {err.colno}: {err.msg}",
                source,
            ) from None
    if format == "yaml":
        import yaml

        try:
            return yaml.safe_load(text)
        except yaml.YAMLError as err:
            mark = getattr(err, "problem_mark", None)
            where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
            problem = getattr(err, "problem", None) or str(err)
            raise ConfigError("", f"invalid YAML{where}: {problem}", source) from None
    from pyhocon import ConfigFactory
    from pyhocon.exceptions import ConfigException
    from pyparsing import ParseBaseException

    try:
        tree = ConfigFactory.parse_string(text, resolve=True)
    except ParseBaseException as err:
        raise ConfigError(
            "",
            f"invalid HOCON at line {err.lineno}, column {err.col}: {_shortened(err.msg)}",
            source,
        ) from None
    except ConfigException as err:
        raise ConfigError("", f"invalid HOCON: {_shortened(str(err))}", source) from None
    return tree.as_plain_ordered_dict()


def _shortened(message: str, limit: int = 160) -> str:
    """A parser's message on one line, cut to `limit` characters (pyparsing's may spell out
    its whole grammar, kilobytes long)."""
    message = " ".join(message.split())
    return message if len(message) <= limit else message[: limit - 3] + "..."
