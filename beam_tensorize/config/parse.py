"""Reading and validating a tensorize config (Avro2TF JSON, or the same document as YAML / HOCON).

Every problem is reported as a :class:`~beam_tensorize.config.errors.ConfigError` naming the JSON
path of the offending value and what was expected, e.g.::

    features[3].outputTensorInfo.dtype: 'lng' is not one of int, long, float, double, string,
    boolean, bytes, sparseVector

This module checks the document's top and each tensor's ``outputTensorInfo``; its parts are
`validation` (JSON kinds and paths in errors), `inputs` (``inputFeatureInfo``) and `documents`
(reading and decoding JSON, YAML, HOCON), whose names it re-exports.

Example::

    config = load_config("gs://bucket/avro2tf_config.json")
    [t.name for t in config.features]
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any

from beam_tensorize.config.documents import (  # noqa: F401 - private names re-exported as before
    _decode,
    _json_object,
    _JsonObject,
    _read,
    _shortened,
)
from beam_tensorize.config.errors import ConfigError  # noqa: F401 - re-exported as before
from beam_tensorize.config.expr import ExprError, parse_column_expr  # noqa: F401 - re-exported as before
from beam_tensorize.config.inputs import (  # noqa: F401 - private names re-exported as before
    _HASH_KEYS,
    _INPUT_KEYS,
    _NTV_KEYS,
    _TOKENIZATION_KEYS,
    _TRANSFORM_KEYS,
    _column_config,
    _column_expr,
    _hash_info,
    _input_feature_info,
    _name_list,
    _tokenization,
    _transform_config,
)
from beam_tensorize.config.model import (  # noqa: F401 - model names re-exported as before
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
from beam_tensorize.config.validation import (  # noqa: F401 - private names re-exported as before
    _IDENTIFIER,
    _MISSING,
    _T,
    _child,
    _Ctx,
    _describe,
    _get,
    _optional,
    _required,
    _unknown_key_problem,
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
_OUTPUT_KEYS = (
    "name",
    "dtype",
    "shape",
    "isSparse",
    "isDocumentFeature",
    "vocabSizeCap",
)


# --------------------------------------------------------------------------- sections


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
