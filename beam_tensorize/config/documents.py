"""Config text read (a local file, or any file system Beam's ``FileSystems`` serves) and decoded
from JSON, YAML or HOCON into plain Python objects, with the line and column of a syntax error.
"""

from __future__ import annotations

import json
from typing import Any

from beam_tensorize.config.errors import ConfigError


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
