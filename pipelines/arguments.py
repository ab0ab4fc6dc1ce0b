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
from collections.abc import Iterable, Sequence

from apache_beam.options import pipeline_options

__all__ = ["refuse_unknown_arguments"]


_BASE = getattr(pipeline_options, "_BeamArgumentParser", argparse.ArgumentParser)


class _OneLineParser(_BASE):
    def error(self, message):  # argparse would print its usage and exit
        raise ValueError(message)


def _beam_parser() -> argparse.ArgumentParser:
    """A parser of every flag of every `PipelineOptions` class imported so far (Beam's own set,
    built as `PipelineOptions.get_all_options` builds it)."""
    parser = _OneLineParser(allow_abbrev=False, add_help=False)
    classes = {}
    for cls in pipeline_options.PipelineOptions.__subclasses__():
        classes.setdefault(str(cls), cls)  # a class imported twice: its first copy
    for cls in classes.values():
        cls._add_argparse_args(parser)
    return parser


def refuse_unknown_arguments(args: Sequence[str], command: str, own_flags: Iterable[str] = ()) -> None:
    """Raise `ValueError` (one line) on an argument of `args` that no Beam option takes.

    Args:
        args: what the command hands to `PipelineOptions` (its own flags may be among them
            when they are a `PipelineOptions` class, or left out).
        command: how the command is run, for the hint (`python -m pipelines.tensorize`).
        own_flags: the command's flags parsed apart from Beam's (`--input`, ...), left out of
            `args`: offered as corrections of a misspelt flag too.
    """
    parser = _beam_parser()
    known = {
        option[2:]
        for action in parser._actions
        for option in action.option_strings
        if option.startswith("--")
    }
    known |= {flag.lstrip("-") for flag in own_flags}
    hint = f"run '{command} --help' for the flags"
    try:
        _, rest = parser.parse_known_args(list(args))
    except ValueError as err:  # e.g. `--runner` with no value
        raise ValueError(f"{err}; {hint}") from None
    strays = [arg for arg in rest if not arg.startswith("-") or arg == "-"]
    for arg in rest:
        if arg not in strays:
            flag = arg.split("=", 1)[0]
            close = difflib.get_close_matches(flag.lstrip("-"), sorted(known), n=1)
            suggestion = f" (did you mean --{close[0]}?)" if close else ""
            raise ValueError(f"unknown flag {flag}{suggestion}; {hint}")
    if strays:
        more = f" (and {len(strays) - 1} more)" if len(strays) > 1 else ""
        raise ValueError(
            f"unexpected argument {strays[0]!r}{more}: several inputs are one comma-separated "
            f"--input, or a glob in quotes (--input 'data/*.avro'); {hint}"
        )
