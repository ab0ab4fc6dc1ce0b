"""Loading the optional C extensions (`setup.py` builds them where a C compiler is found): each
has a pure Python / numpy path that gives the same results, used when its extension is missing
or was built from another version of its source.

Example:
    >>> load_extension("beam_tensorize.kernels.no_such_extension", 1, "example", "Python") is None
    True
"""

from __future__ import annotations

import importlib
import logging
from typing import Any

__all__ = ["load_extension"]

_LOGGER = logging.getLogger(__name__)


def load_extension(module: str, version: int, what: str, fallback: str) -> Any | None:
    """The extension module `module` if it imports and its `VERSION` is `version`, else None;
    says why in the log ("native <what> not built ...; using <fallback>")."""
    try:
        loaded = importlib.import_module(module)
    except ImportError as e:
        _LOGGER.info("native %s not built (%s); using %s", what, e, fallback)
        return None
    if getattr(loaded, "VERSION", None) != version:
        _LOGGER.warning("native %s has an unexpected version; using %s", what, fallback)
        return None
    return loaded
