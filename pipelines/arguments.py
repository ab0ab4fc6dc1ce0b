"""The commands' check of the arguments they hand to Beam: Beam drops what it does not know
(an unknown flag, a stray word) with a warning in a log, so a typo or a shell-expanded glob
would run a different job than the one asked for. Here either is one line instead.

    >>> refuse_unknown_arguments(["--runner", "DirectRunner", "--num_workers=2"], "python -m x")
    >>> refuse_unknown_arguments(["--runer", "DirectRunner"], "python -m x")
    Traceback (most recent call last):
    ...
    ValueError: unknown flag --runer (did you mean --runner?); run 'python -m x --help' for the flags
"""

from __future__ import annotations

import argparse
import difflib
from collections.abc import Sequence

from apache_beam.options import pipeline_options

__all__ = ["OneLineParser", "help_hint", "refuse_unknown_arguments"]


_BASE = getattr(pipeline_options, "_BeamArgumentParser", argparse.ArgumentParser)


class OneLineParser(_BASE):
    """An argument parser whose errors raise `ValueError(message)` (argparse would print its
    usage and exit): the commands print them as one line."""

    def error(self, message):
        raise ValueError(message)


def help_hint(command: str) -> str:
    """The end of every flag error of `command` (`python -m pipelines.tensorize`)."""
    return f"run '{command} --help' for the flags"


def _beam_parser() -> argparse.ArgumentParser:
    """A parser of every flag of every `PipelineOptions` class imported so far (Beam's own set,
    built as `PipelineOptions.get_all_options` builds it)."""
    parser = OneLineParser(allow_abbrev=False, add_help=False)
    classes = {}
    for cls in pipeline_options.PipelineOptions.__subclasses__():
        classes.setdefault(str(cls), cls)  # a class imported twice: its first copy
    for cls in classes.values():
        cls._add_argparse_args(parser)
    return parser


def _long_flags(parser: argparse.ArgumentParser) -> set[str]:
    """The names of `parser`'s `--flags`, without the dashes."""
    return {
        option[2:] for action in parser._actions for option in action.option_strings if option[:2] == "--"
    }


def refuse_unknown_arguments(
    args: Sequence[str], command: str, own: argparse.ArgumentParser | None = None
) -> None:
    """Raise `ValueError` (one line) on an argument of `args` that no Beam option takes.

    Args:
        args: what the command hands to `PipelineOptions` (its own flags may be among them
            when they are a `PipelineOptions` class, or left out).
        command: how the command is run, for the hint (`python -m pipelines.tensorize`).
        own: the command's parser of the flags it takes apart from Beam's (`--input`, ...),
            left out of `args`: its flags are offered as corrections of a misspelt flag too.
    """
    parser = _beam_parser()
    hint = help_hint(command)
    try:
        _, rest = parser.parse_known_args(list(args))
    except ValueError as err:  # e.g. `--runner` with no value
        raise ValueError(f"{err}; {hint}") from None
    flags = [arg for arg in rest if arg.startswith("-") and arg != "-"]
    if flags:
        flag = flags[0].split("=", 1)[0]
        known = _long_flags(parser) | (_long_flags(own) if own is not None else set())
        close = difflib.get_close_matches(flag.lstrip("-"), sorted(known), n=1)
        suggestion = f" (did you mean --{close[0]}?)" if close else ""
        raise ValueError(f"unknown flag {flag}{suggestion}; {hint}")
    if rest:
        more = f" (and {len(rest) - 1} more)" if len(rest) > 1 else ""
        raise ValueError(
            f"unexpected argument {rest[0]!r}{more}: several inputs are one comma-separated "
            f"--input, or a glob in quotes (--input 'data/*.avro'); {hint}"
        )
