"""Reading the options of the data sources (case-insensitive names, checked values)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping

from beam_tensorize.job.file_systems import local_path


def lowered(options: Mapping) -> dict[str, str]:
    """The options with lower-case names (Spark matches option names case-insensitively), and
    the paths of `.load` / `.save` with `file:` URIs as the local paths they name.

    Example:
        >>> lowered({"recordType": "Example", "path": "file:///data/out"})
        {'recordtype': 'Example', 'path': '/data/out'}
    """
    opts = {str(name).lower(): value for name, value in dict(options).items()}
    if isinstance(opts.get("path"), str):
        opts["path"] = local_path(opts["path"])
    if isinstance(opts.get("paths"), str):  # a JSON list, as Spark passes several
        opts["paths"] = json.dumps(
            [local_path(p) if isinstance(p, str) else p for p in json.loads(opts["paths"])]
        )
    return opts


def check_known(opts: Mapping[str, str], known: Iterable[str], source: str, doing: str) -> None:
    """Refuse options that are not in `known` (lower case), naming them and the known ones.

    Raises:
        ValueError: an unknown option (a misspelling would otherwise be ignored silently).
    """
    known = set(known) | _SPARK_OPTIONS
    unknown = sorted(name for name in opts if name not in known)
    if unknown:
        raise ValueError(
            f"{source}: unknown option(s) {', '.join(unknown)} when {doing}; the options are: "
            f"{', '.join(sorted(known - _SPARK_OPTIONS))}"
        )


#: Options Spark itself passes to a data source.
_SPARK_OPTIONS = {"path", "paths"}


def positive(opts: Mapping[str, str], name: str, default: int, source: str) -> int:
    """Option `name` (lower case) as a positive integer, else `default`.

    Raises:
        ValueError: the value is not a positive integer (the message names the source and option).
    """
    text = opts.get(name.lower())
    if text is None:
        return default
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise ValueError(f"{source}: option {name} must be a positive integer, got {text!r}")
    return value


def flag(opts: Mapping[str, str], name: str, default: bool, source: str) -> bool:
    """Option `name` as a boolean (`true` / `false`), else `default`.

    Raises:
        ValueError: another value (the message names the source and option).
    """
    text = opts.get(name.lower())
    if text is None:
        return default
    if text.strip().lower() not in ("true", "false"):
        raise ValueError(f"{source}: option {name} must be true or false, got {text!r}")
    return text.strip().lower() == "true"
