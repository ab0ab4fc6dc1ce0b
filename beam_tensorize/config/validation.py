"""The checks config parsing is made of: a value's JSON kind and the JSON path of where it is,
in every :class:`~beam_tensorize.config.errors.ConfigError` (`_Ctx`), and a key's value read as
optional or required (a missing key and an explicit null are the same).
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from beam_tensorize.config.errors import ConfigError

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_MISSING = object()

_T = TypeVar("_T")


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
