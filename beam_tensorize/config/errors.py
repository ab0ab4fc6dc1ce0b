"""The base of the library's errors, and the one error type for bad configuration (it always
names the JSON path)."""

from __future__ import annotations

__all__ = ["ConfigError", "TensorizeError"]


class TensorizeError(Exception):
    """The base of the library's own error types (`ConfigError`, `ServingError`, `RecordError`,
    `CommitConflict`, ...); each also derives from the built-in type it always was
    (`ValueError`, `RuntimeError`), so existing handlers keep working. Settings checks and a
    few others still raise the built-in types themselves."""


class ConfigError(TensorizeError, ValueError):
    """A config value is missing, of the wrong kind, or not supported.

    Attributes:
        path: JSON path of the offending value, e.g. ``features[2].outputTensorInfo.dtype``
            (empty for the document as a whole).
        problem: what is wrong and, where possible, what was expected.
        source: the file or other origin of the config, when known.
    """

    def __init__(self, path: str, problem: str, source: str | None = None):
        self.path = path
        self.problem = problem
        self.source = source
        where = f"{source}: " if source else ""
        super().__init__(f"{where}{path}: {problem}" if path else f"{where}{problem}")
