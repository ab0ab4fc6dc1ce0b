"""Command line of `PrepRankingData`: group a tensorized output's records by query.

    python -m pipelines.prep_ranking --input tensorized --output ranking \\
        --group_id_list qid --group_list_max_size 10 [--record_format elwc] [--runner ...]

Avro2TF's spellings (`--group-id-list`, `--group-list-max-size`, `--label-padding-value`,
`--feature-padding-value`, `--skip-padding`, `--num-output-files`, `--execution-mode`) work too.
A mistake gives one line (`error: ...`) and exit code 2.
"""

from __future__ import annotations

import argparse
import posixpath
import sys
from collections.abc import Sequence

import apache_beam as beam
from apache_beam.options.pipeline_options import PipelineOptions

from beam_tensorize.job.finish import SPLIT_FOLDERS
from beam_tensorize.job.metadata import read_metadata
from beam_tensorize.kernels.ranking import RECORD_FORMATS, RankingSettings
from beam_tensorize.runners.direct import direct_runner_for
from beam_tensorize.transforms.ranking import PrepRankingData
from pipelines.arguments import OneLineParser, refuse_unknown_arguments

__all__ = ["main"]

_MODES = {"train": "train", "training": "train", "validation": "validation", "test": "test"}


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m pipelines.prep_ranking", description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", required=True, help="A tensorized output folder (with its metadata).")
    parser.add_argument("--output", required=True, help="Where the ranking records and metadata go.")
    parser.add_argument(
        "--group_id_list", required=True, help="Comma-separated tensors whose values make a group."
    )
    parser.add_argument("--group_list_max_size", type=int, required=True, help="Documents kept per group.")
    parser.add_argument(
        "--label_padding_value", type=float, default=-1.0, help="Labels' padding (default -1)."
    )
    parser.add_argument(
        "--feature_padding_value", type=float, default=0.0, help="Other numbers' padding (0)."
    )
    parser.add_argument(
        "--skip_padding", nargs="?", const="true", default="false", help="Do not pad short groups."
    )
    parser.add_argument("--record_format", choices=RECORD_FORMATS, default="example",
                        help="example (one Example of lists per group, default), elwc "
                        "(TF-Ranking's ExampleListWithContext) or avro (Avro2TF's output).")  # fmt: skip
    parser.add_argument(
        "--execution_mode", choices=tuple(_MODES), default="train", help="The split to group."
    )
    parser.add_argument("--num_output_files", type=int, default=1, help="Files to write (default 1).")
    parser.add_argument(
        "--save_mode", default="error", help="As the tensorize job's (error, overwrite, ...)."
    )
    parser.add_argument("--quiet", action="store_true", help="Print nothing but errors.")
    return parser


def _our_spelling(arg: str) -> str:
    """`--group-id-list` (Avro2TF's spelling) -> `--group_id_list`; values are left alone."""
    if not arg.startswith("--"):
        return arg
    name, eq, value = arg[2:].partition("=")
    return f"--{name.replace('-', '_')}{eq}{value}"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job; returns the process exit code."""
    argv = [_our_spelling(a) for a in (sys.argv[1:] if argv is None else argv)]
    try:
        parser = _parser()
        options, beam_args = parser.parse_known_args(argv)
        refuse_unknown_arguments(beam_args, "python -m pipelines.prep_ranking", own=parser)
        if options.skip_padding.lower() not in ("true", "false"):
            raise ValueError(f"--skip_padding must be true or false, got {options.skip_padding!r}")
        settings = RankingSettings(
            tuple(g.strip() for g in options.group_id_list.split(",") if g.strip()),
            options.group_list_max_size,
            options.label_padding_value,
            options.feature_padding_value,
            options.skip_padding.lower() == "true",
        )
        metadata = read_metadata(options.input)
        if metadata is None:
            raise ValueError(
                f"{options.input} holds no metadata/tensor_metadata.json: give a tensorized output folder"
            )
        split = SPLIT_FOLDERS[_MODES[options.execution_mode]]
        pipeline_options = PipelineOptions(beam_args)
        pipeline = beam.Pipeline(runner=direct_runner_for(pipeline_options), options=pipeline_options)
        _ = pipeline | PrepRankingData(
            options.input, options.output, metadata, settings, split, options.record_format,
            options.num_output_files, options.save_mode,
        )  # fmt: skip
    except (ValueError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    try:
        pipeline.run().wait_until_finish()
    except Exception as err:  # noqa: BLE001 - any failure of the job ends the command the same way
        print(f"error: the job failed: {str(err).strip().splitlines()[-1]}", file=sys.stderr)
        return 1
    if not options.quiet:
        print(_summary(options.output, split, settings, options.record_format))
    return 0


def _summary(output: str, split: str, settings: RankingSettings, record_format: str) -> str:
    """What the job wrote, as the tensorize command says it."""
    data = (read_metadata(output) or {}).get("data", {}).get(split, {})
    files = ", ".join(posixpath.join(split, f) for f in data.get("files", [])) or "none"
    return "\n".join([
        f"Ranking data written to {output}",
        f"  groups:        {data.get('numRecords', 'n/a')} (by {', '.join(settings.group_ids)}, at most "
        f"{settings.max_size} documents each, {record_format} records)",
        f"  files:         {files}",
        f"  metadata:      {posixpath.join(output, 'metadata', 'tensor_metadata.json')}",
    ])  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
