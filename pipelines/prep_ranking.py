"""Command line of `PrepRankingData`: group a tensorized output's records by query.

    python -m pipelines.prep_ranking --input tensorized --output ranking \\
        --group_id_list qid --group_list_max_size 10 [--record_format elwc] [--runner ...]

    python -m pipelines.prep_ranking --input-data-path avro2tf_out/trainingData \\
        --input-metadata-path avro2tf_out/metadata/tensor_metadata.json \\
        --output-data-path ranking/data --output-metadata-path ranking/metadata \\
        --group-id-list qid --group-list-max-size 10

Avro2TF's spellings (`--input-data-path`, `--input-metadata-path`, `--output-data-path`,
`--output-metadata-path`, `--group-id-list`, `--group-list-max-size`, `--drop-column-list`,
`--label-padding-value`, `--feature-padding-value`, `--skip-padding`, `--num-output-files`,
`--shuffle`, `--execution-mode`) work too. A mistake gives one line (`error: ...`) and exit
code 2.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import posixpath
import sys
from collections.abc import Sequence

from beam_tensorize.runners.startup import command_imports, objects_set_aside

with command_imports(__name__):  # only as the program; see beam_tensorize/runners/startup.py
    import apache_beam as beam

    from beam_tensorize.job.files import list_files, read_text
    from beam_tensorize.job.finish import SPLIT_FOLDERS
    from beam_tensorize.job.metadata import read_metadata
    from beam_tensorize.kernels.ranking import RECORD_FORMATS, RankingSettings
    from beam_tensorize.runners.direct import (
        beam_folder_removed,
        command_setup,
        direct_runner_for,
        job_options,
        start_worker_zygote,
    )
    from beam_tensorize.transforms.ranking import PrepRankingData, read_avro2tf_metadata
    from pipelines.arguments import OneLineParser, refuse_unknown_arguments

__all__ = ["main"]

_MODES = {"train": "train", "training": "train", "validation": "validation", "test": "test"}


def _parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="python -m pipelines.prep_ranking", description=__doc__.split("\n\n")[0])
    parser.add_argument("--input", help="A tensorized output folder (with its metadata).")
    parser.add_argument("--input_data_path",
                        help="Avro2TF's layout: an Avro file or folder of Avro files (e.g. Avro2TF's "
                        "output), with --input_metadata_path.")  # fmt: skip
    parser.add_argument("--input_metadata_path",
                        help="The tensor_metadata.json of --input_data_path (or its folder).")  # fmt: skip
    parser.add_argument("--output", help="Where the ranking records (<output>/<split>/) and metadata go.")
    parser.add_argument("--output_data_path",
                        help="Avro2TF's layout: the folder of the ranking records, with --output_metadata_path.")  # fmt: skip
    parser.add_argument("--output_metadata_path",
                        help="The folder of tensor_metadata.json and content_feature_list (written "
                        "for training data only, as Avro2TF).")  # fmt: skip
    parser.add_argument(
        "--group_id_list", required=True, help="Comma-separated tensors whose values make a group."
    )
    parser.add_argument("--group_list_max_size", type=int, required=True, help="Documents kept per group.")
    parser.add_argument(
        "--drop_column_list", default="", help="Comma-separated tensors left out of records and metadata."
    )
    parser.add_argument(
        "--label_padding_value", type=float, default=-1.0, help="Labels' padding (default -1)."
    )
    parser.add_argument(
        "--feature_padding_value", type=float, default=0.0, help="Other numbers' padding (0)."
    )
    parser.add_argument(
        "--skip_padding", nargs="?", const="true", default="false", help="Do not pad short groups."
    )
    parser.add_argument("--record_format", choices=RECORD_FORMATS, default=None,
                        help="example (one Example of lists per group; the default for --input), elwc "
                        "(TF-Ranking's ExampleListWithContext) or avro (Avro2TF's output; the default "
                        "for --input_data_path).")  # fmt: skip
    parser.add_argument(
        "--execution_mode", choices=tuple(_MODES), default="train", help="The split to group."
    )
    parser.add_argument("--num_output_files", type=int, default=1,
                        help="Files to write (default 1; Avro2TF's -1 also writes 1).")  # fmt: skip
    parser.add_argument("--shuffle", "--enable_shuffle", nargs="?", const="true", default="false",
                        help="Write the groups in a pseudo-random order, the same on every run.")  # fmt: skip
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


def _boolean(flag: str, value: str) -> bool:
    if value.lower() not in ("true", "false"):
        raise ValueError(f"--{flag} must be true or false, got {value!r}")
    return value.lower() == "true"


def _check_pair(
    options: argparse.Namespace, direction: str, ours: str, data_what: str, meta_what: str
) -> None:
    """`--<direction>`, or Avro2TF's `--<direction>_data_path` with `--<direction>_metadata_path`."""
    folder = getattr(options, direction)
    data, meta = getattr(options, f"{direction}_data_path"), getattr(options, f"{direction}_metadata_path")
    ours = f"--{direction} ({ours})"
    theirs = f"--{direction}_data_path with --{direction}_metadata_path (Avro2TF's layout)"
    if folder and (data or meta):
        raise ValueError(f"give {ours} or {theirs}, not both")
    if not (folder or data or meta):
        raise ValueError(f"give {ours} or {theirs}")
    if bool(data) != bool(meta):
        given, missing = (
            (f"--{direction}_data_path", f"--{direction}_metadata_path ({meta_what})")
            if data
            else (f"--{direction}_metadata_path", f"--{direction}_data_path ({data_what})")
        )
        raise ValueError(f"{given} needs {missing}")


def _check_pairs(options: argparse.Namespace) -> None:
    """One input and one output, each as ours or as Avro2TF's pair of paths."""
    _check_pair(options, "input", "a tensorized output folder", "the Avro data it describes",
                "its tensor_metadata.json")  # fmt: skip
    _check_pair(options, "output", "one folder for records and metadata", "where the records go",
                "where tensor_metadata.json goes")  # fmt: skip


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job; returns the process exit code. The caller's objects stay out of the
    garbage collector's passes while the job runs (`objects_set_aside`)."""
    with objects_set_aside():
        return _main(argv)


def _main(argv: Sequence[str] | None) -> int:
    argv = [_our_spelling(a) for a in (sys.argv[1:] if argv is None else argv)]
    with contextlib.ExitStack() as run_owns:  # Beam's folder, from the pipeline's making on
        try:
            options, pipeline, summary = _built(argv, run_owns)
        except (ValueError, OSError) as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        try:
            pipeline.run().wait_until_finish()
        except Exception as err:  # noqa: BLE001 - any failure of the job ends the command the same way
            print(f"error: the job failed: {str(err).strip().splitlines()[-1]}", file=sys.stderr)
            return 1
    if not options.quiet:
        print(summary())
    return 0


def _built(argv: list[str], run_owns: contextlib.ExitStack):
    """The options, the job's pipeline (built, not run) and what prints its summary; a
    refused command raises ValueError or OSError. `run_owns` removes Beam's folder when the
    command ends, whether the job ran or was refused."""
    parser = _parser()
    options, beam_args = parser.parse_known_args(argv)
    refuse_unknown_arguments(beam_args, "python -m pipelines.prep_ranking", own=parser)
    _check_pairs(options)
    settings = RankingSettings(
        tuple(g.strip() for g in options.group_id_list.split(",") if g.strip()),
        options.group_list_max_size,
        options.label_padding_value,
        options.feature_padding_value,
        _boolean("skip_padding", options.skip_padding),
        tuple(c.strip() for c in options.drop_column_list.split(",") if c.strip()),
    )
    shuffle = _boolean("shuffle", options.shuffle)
    split = SPLIT_FOLDERS[_MODES[options.execution_mode]]
    if options.input:
        metadata = read_metadata(options.input)
        if metadata is None:
            raise ValueError(
                f"{options.input} holds no metadata/tensor_metadata.json: give a tensorized output folder"
            )
        source, input_format, record_format = (
            options.input,
            "tensorized",
            options.record_format or "example",
        )
    else:
        metadata = read_avro2tf_metadata(options.input_metadata_path)
        source, input_format, record_format = (
            options.input_data_path,
            "avro",
            options.record_format or "avro",
        )
    num_files = 1 if options.num_output_files == -1 else options.num_output_files
    if num_files < 1:
        raise ValueError(
            f"--num_output_files must be a positive number (or -1), got {options.num_output_files}"
        )
    output = options.output or options.output_data_path
    command_setup()
    pipeline_options = job_options(beam_args)
    if __name__ == "__main__":  # the command owns the process: its workers' zygote
        start_worker_zygote(pipeline_options)
    pipeline = beam.Pipeline(runner=direct_runner_for(pipeline_options), options=pipeline_options)
    run_owns.enter_context(beam_folder_removed(pipeline))
    _ = pipeline | PrepRankingData(
        source, output, metadata, settings, split, record_format, num_files, options.save_mode,
        input_format=input_format, metadata_dir=options.output_metadata_path, shuffle=shuffle,
    )  # fmt: skip
    return options, pipeline, functools.partial(_summary, options, split, settings, record_format)


def _summary(options: argparse.Namespace, split: str, settings: RankingSettings, record_format: str) -> str:
    """What the job wrote, as the tensorize command says it."""
    if options.output:
        root, data_dir = options.output, posixpath.join(options.output, split)
        metadata_file = posixpath.join(options.output, "metadata", "tensor_metadata.json")
    else:
        root = data_dir = options.output_data_path
        metadata_file = posixpath.join(options.output_metadata_path, "tensor_metadata.json")
    text = read_text(metadata_file)
    if text is None:  # Avro2TF's layout writes it for training data only
        names = [posixpath.basename(p) for p in list_files(posixpath.join(data_dir, "*"))]
        data = {"files": [n for n in names if not n.startswith(("_", "."))]}
        metadata_line = "none (written for training data only, as Avro2TF)"
    else:
        data, metadata_line = json.loads(text).get("data", {}).get(split, {}), metadata_file
    files = ", ".join(posixpath.relpath(posixpath.join(data_dir, f), root) for f in data.get("files", []))
    return "\n".join([
        f"Ranking data written to {root}",
        f"  groups:        {data.get('numRecords', 'n/a')} (by {', '.join(settings.group_ids)}, at most "
        f"{settings.max_size} documents each, {record_format} records)",
        f"  files:         {files or 'n/a'}",
        f"  metadata:      {metadata_line}",
    ])  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
