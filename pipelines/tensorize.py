"""The `tensorize` command line: Avro / Parquet / ORC / TFRecord -> TFRecords + metadata on any
Beam runner.

    python -m pipelines.tensorize                      # the bundled MovieLens sample
    python -m pipelines.tensorize --input 'data/*.avro' --config config.json \\
        --output out/ --runner DirectRunner

Every standard Beam flag (`--runner`, `--direct_running_mode`, `--temp_location`, ...) is
accepted as well.
"""

from __future__ import annotations

import argparse
import contextlib
import logging
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence

import apache_beam as beam
from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, StandardOptions, TestOptions

from beam_tensorize import __version__
from beam_tensorize.config import ConfigError, load_config
from beam_tensorize.job.commit import SAVE_MODES
from beam_tensorize.job.daily import daily_inputs
from beam_tensorize.job.finish import EXECUTION_MODES, ignoring_existing
from beam_tensorize.job.preflight import (
    RunLock,
    check_feature_lists,
    check_inputs_found,
    check_output_place,
    check_output_writable,
    check_same_config,
    remove_stale_temporaries,
)
from beam_tensorize.job.report import REPORT_FORMATS, start_page_renderer
from beam_tensorize.job.spec import TensorizeSpec
from beam_tensorize.kernels import formats
from beam_tensorize.kernels.formats import AUTO, format_names
from beam_tensorize.kernels.output import get_output_format, output_format_names
from beam_tensorize.kernels.report.drift import DEFAULT_DRIFT_THRESHOLD
from beam_tensorize.progress import (
    PROGRESS_ENV,
    ProgressReporter,
    read_progress,
    read_result,
    record_result,
)
from beam_tensorize.runners.direct import cache_dofn_specs, direct_runner_for, job_options
from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
from beam_tensorize.transforms import Tensorize
from pipelines import avro2tf_flags, console
from pipelines.arguments import OneLineParser, help_hint, refuse_unknown_arguments

__all__ = ["DEFAULT_OUTPUT", "TensorizeOptions", "build_pipeline", "main"]


def _command() -> str:
    """How the user ran this command, for hints: the installed script, or the module."""
    return (
        "beam-tensorize"
        if os.path.basename(sys.argv[0] or "") == "beam-tensorize"
        else "python -m pipelines.tensorize"
    )


_LOGGER = logging.getLogger(__name__)

#: Where the sample run writes when no --output is given.
DEFAULT_OUTPUT = "tensorize_output"


class TensorizeOptions(PipelineOptions):
    """Options of the tensorize job (plus every standard Beam option)."""

    # One flat list of flag definitions and no logic: it reads best whole, in --help's order.
    @classmethod
    def _add_argparse_args(cls, parser):
        parser.add_argument(
            "--input",
            default=None,
            help="Input files: a file, glob or comma-separated list of them (local, gs://, "
            "s3://). With neither --input nor --config, the bundled MovieLens sample is used.",
        )
        parser.add_argument(
            "--input_date_range",
            default=None,
            help="Read the day folders <input>/daily/yyyy/MM/dd/ from the first date to the last, "
            "both included: yyyyMMdd-yyyyMMdd (Avro2TF's --input-date-range). Missing days are "
            "skipped with a note.",
        )
        parser.add_argument(
            "--input_days_range",
            default=None,
            help="Read the day folders <input>/daily/yyyy/MM/dd/ from START to END days before "
            "today, both included: START-END, e.g. 3-1 (Avro2TF's --input-days-range).",
        )
        parser.add_argument(
            "--input_format",
            default=AUTO,
            choices=(AUTO, *format_names()),
            help="Format of the input files: auto (default: told from each file's first bytes), "
            "avro, parquet, orc or tfrecord (tf.train.Example records).",
        )
        parser.add_argument(
            "--config",
            default=None,
            help="Avro2TF-style tensor config (.json, .yaml/.yml or .conf/.hocon). With "
            "neither --input nor --config, the bundled sample's config is used.",
        )
        parser.add_argument(
            "--output",
            default=None,
            help=f"Output folder. Default: ./{DEFAULT_OUTPUT} (only for the bundled sample).",
        )
        parser.add_argument(
            "--execution_mode",
            default="train",
            choices=(*EXECUTION_MODES, "training"),
            help="train (or Avro2TF's training) writes trainingData/, validation validationData/, "
            "test testData/.",
        )
        parser.add_argument(
            "--output_format",
            default="tfrecord",
            choices=output_format_names(),
            help="Format of the data files: tfrecord (tf.train.Example records, default), parquet "
            "(the same tensors as columns; sparse tensors as <name>/indices and <name>/values) or "
            "avro (Avro2TF's default: the tensors as record fields; a sparse tensor as a record "
            "{indices, values}).",
        )
        parser.add_argument(
            "--num_shards",
            type=int,
            default=None,
            help="Exactly this many data files (per partition folder), through a shuffle that holds "
            "the records (memory grows with the data on the DirectRunner). Default: one file per "
            "input split, written where the records are encoded, in bounded memory.",
        )
        parser.add_argument(
            "--max_records_per_file",
            type=int,
            default=None,
            help="Without --num_shards: start another data file after this many records "
            "(like Spark's maxRecordsPerFile). Default: no limit.",
        )
        parser.add_argument(
            "--compression",
            default=None,
            choices=tuple(
                dict.fromkeys(
                    c for name in output_format_names() for c in get_output_format(name).compressions
                )
            ),
            help="Compression of the data files. TFRecord: none (default), gzip (.tfrecord.gz) or "
            "zlib (.tfrecord.zlib); Parquet: snappy (default), gzip, zstd or none; Avro: snappy "
            "(default), deflate, zstd or none.",
        )
        parser.add_argument(
            "--save_mode",
            default=None,
            choices=SAVE_MODES,
            help="If the split folder already holds files: error (default), overwrite, "
            "overwrite_partitions (replace only the partitions in the new data), append, or ignore "
            "(write nothing). The bundled-sample run defaults to overwrite.",
        )
        parser.add_argument(
            "--max_bad_records_ratio",
            type=float,
            default=0.0,
            help="Fail (committing nothing) when more than this fraction of records cannot be "
            "converted; bad records are written to <output>/deadLetters/ either way. Default 0.",
        )
        parser.add_argument(
            "--report",
            default="html",
            choices=REPORT_FORMATS,
            help="Run report in <output>/report/<split>.json and .html: statistics of every "
            "tensor, input file and bad-row reason, drift against the train report in the same "
            "output (see docs/report.md). html (default): the JSON and a self-contained page; "
            "json: the JSON only; none: no report.",
        )
        parser.add_argument(
            "--drift_threshold",
            type=float,
            default=DEFAULT_DRIFT_THRESHOLD,
            help="A validation or test run's report flags tensors whose distance to the train "
            f"report exceeds this (0 to 1). Default {DEFAULT_DRIFT_THRESHOLD}.",
        )
        parser.add_argument(
            "--external_feature_lists",
            default=None,
            help="Folder of ready feature lists (one file per tensor, named like the tensor, one "
            "entry per line) used instead of building them; a file named after no tensor is an error.",
        )
        parser.add_argument(
            "--tensors_sharing_feature_lists",
            default=None,
            help="Groups of tensors that share one feature list built from all their entries: "
            "tensor names joined by ',' within a group and ';' between groups, e.g. 'a,b;c,d'.",
        )
        _add_switch(
            parser,
            "--filter_zeros",
            "Drop zero values from name-term-value sparse vectors (--filter_zeros, or "
            "--filter_zeros=true|false).",
        )
        _add_switch(
            parser,
            "--check_shapes",
            "Make a row whose outer dimension differs from its tensor's fixed shape (3 values for "
            "[10]) a bad record. By default it is written as it is, as Avro2TF writes it, counted in "
            "the summary, and the metadata reads that tensor back as ragged.",
        )
        _add_switch(
            parser,
            "--discard_unknown_entries",
            "Leave entries that are not in their feature list out of lists and vectors, "
            "instead of giving them the unknown id (Avro2TF's --discard-unknown-entries); a scalar "
            "keeps the unknown id.",
        )
        _add_switch(
            parser,
            "--term_only_feature_lists",
            "Train mode also writes termOnlyFeatureList/<tensor>: each feature-list tensor's "
            "terms counted alone (name-term-value names left out), as Avro2TF's "
            "--enable-term-only-feature-list.",
        )
        parser.add_argument(
            "--partition_field_name",
            default=None,
            help="A scalar tensor or extra column whose values give Avro2TF's partition ids: "
            "partitionId in the records (MD5 with Avro2TF's salt, modulo --num_partitions) and "
            "partition=<id>/ folders (Avro2TF's --partition-field-name).",
        )
        parser.add_argument(
            "--num_partitions",
            type=int,
            default=100,
            help="How many partition ids --partition_field_name gives (default 100, as Avro2TF).",
        )
        _add_switch(
            parser,
            "--shuffle",
            "Write each batch's records in a pseudo-random order drawn from --shuffle_seed and "
            "the batch's place in the input: the same input gives the same files (Avro2TF's "
            "--shuffle, made deterministic). With --num_shards the records spread over the files too.",
        )
        parser.add_argument(
            "--shuffle_seed",
            type=int,
            default=0,
            help="The seed of --shuffle (default 0).",
        )
        _add_switch(
            parser,
            "--skip_conversion",
            "Train mode: write the feature lists and the metadata only, no records (Avro2TF's "
            "--skip-conversion).",
        )
        parser.add_argument(
            "--dedup_block_size",
            type=int,
            default=None,
            help="With --output_format parquet: write blocks of this many rows with the user columns "
            "(--dedup_user_cols) stored once per distinct key (HybridBackend's deduplication; "
            "Dataset.from_output restores the rows).",
        )
        parser.add_argument(
            "--dedup_user_cols",
            default=None,
            help="Groups of columns deduplicated by their first (the key), ',' within a group and ';' "
            "between groups, e.g. 'user,user_age;item,item_price'.",
        )
        parser.add_argument(
            "--extra_columns_to_keep",
            default=None,
            help="Comma-separated input columns written as they are beside the tensors (numbers, "
            "strings, bytes or lists of them); see the metadata's extraColumns.",
        )
        parser.add_argument(
            "--partition_by",
            default=None,
            help="Comma-separated scalar tensors or extra columns that name Hive-style partition "
            "folders <split>/<col>=<value>/, outermost first (left out of the records).",
        )
        _add_switch(
            parser,
            "--verbose",
            "Show the runner's log and error tracebacks on the console (--verbose, or "
            "--verbose=true|false); without it they go to a log file named in the error line.",
        )
        _add_switch(
            parser,
            "--quiet",
            "Print nothing but errors: no progress lines, no summary.",
        )
        parser.add_argument(
            "--progress_interval",
            type=float,
            default=10.0,
            help="Seconds between progress lines (rows read and written, rows/s, elapsed time) on "
            "the DirectRunner (default 10).",
        )
        parser.add_argument("--version", action="store_true", help="Print beam_tensorize's version and exit.")
        parser.add_argument(
            "--batch_rows",
            type=int,
            default=formats.DEFAULT_BATCH_ROWS,
            help=f"Rows per Arrow record batch read from the input (default {formats.DEFAULT_BATCH_ROWS}).",
        )
        parser.add_argument(
            "--split_bytes",
            type=int,
            default=formats.DEFAULT_SPLIT_BYTES,
            help="About how many bytes of input one split reads (default 64 MiB): smaller splits "
            "give more parallel tasks and, without --num_shards, more output files "
            "(Avro2TF's --min-parts).",
        )


def _boolean(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _resolve(options: TensorizeOptions) -> TensorizeSpec:
    """Turn options into the job's settings; raise ValueError on bad flags or combinations."""
    if (options.input is None) != (options.config is None):
        raise ValueError("--input and --config go together: give both, or neither for the bundled sample")
    sample = options.input is None
    if not sample and not (options.output or "").strip():
        raise ValueError("--output is required with --input and --config: give the folder to write to")
    for flag in ("num_shards", "max_records_per_file"):
        value = getattr(options, flag)
        if value is not None and value < 1:
            raise ValueError(f"--{flag} must be at least 1, got {value}")
    if options.num_shards is not None and options.max_records_per_file is not None:
        raise ValueError("--num_shards and --max_records_per_file exclude each other: give one")
    if not 0.0 <= options.max_bad_records_ratio <= 1.0:
        raise ValueError(
            f"--max_bad_records_ratio must be between 0 and 1, got {options.max_bad_records_ratio}"
        )
    if not 0.0 <= options.drift_threshold <= 1.0:
        raise ValueError(f"--drift_threshold must be between 0 and 1, got {options.drift_threshold}")
    formats_compressions = get_output_format(options.output_format).compressions
    if options.compression is not None and options.compression not in formats_compressions:
        raise ValueError(
            f"--compression {options.compression} does not apply to --output_format "
            f"{options.output_format}; use one of {', '.join(formats_compressions)}"
        )
    if options.batch_rows < 1:
        raise ValueError(f"--batch_rows must be at least 1, got {options.batch_rows}")
    if options.split_bytes < 1:
        raise ValueError(f"--split_bytes must be at least 1, got {options.split_bytes}")
    patterns = [SAMPLE_AVRO] if sample else _names(options.input)
    if not patterns:
        raise ValueError("--input names no file")
    if options.input_date_range or options.input_days_range:
        patterns, missing = daily_inputs(patterns, options.input_date_range, options.input_days_range)
        if missing and not options.quiet:
            shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
            print(
                f"note: {len(missing)} day folder(s) of the range hold no files (missing or empty) and are "
                f"skipped: {shown}",
                file=sys.stderr,
            )
    groups = shared_groups(options.tensors_sharing_feature_lists)
    extra = _names(options.extra_columns_to_keep)
    partition_by = _names(options.partition_by)
    return TensorizeSpec(
        load_config(SAMPLE_CONFIG if sample else options.config),
        (options.output or DEFAULT_OUTPUT) if sample else options.output,
        inputs=tuple(patterns),
        input_format=options.input_format,
        execution_mode=options.execution_mode,
        output_format=options.output_format,
        num_shards=options.num_shards,
        max_records_per_file=options.max_records_per_file,
        compression=options.compression,
        save_mode=options.save_mode or ("overwrite" if sample else "error"),
        max_bad_records_ratio=options.max_bad_records_ratio,
        shared_feature_lists=tuple(tuple(g) for g in groups),
        external_feature_lists=options.external_feature_lists,
        filter_zeros=options.filter_zeros,
        check_shapes=options.check_shapes,
        discard_unknown_entries=options.discard_unknown_entries,
        term_only_feature_lists=options.term_only_feature_lists,
        partition_field_name=options.partition_field_name,
        num_partitions=options.num_partitions,
        shuffle=options.shuffle,
        shuffle_seed=options.shuffle_seed,
        skip_conversion=options.skip_conversion,
        dedup_block_size=options.dedup_block_size,
        dedup_user_cols=tuple(tuple(names) for _, names in _groups(options.dedup_user_cols)),
        extra_columns=tuple(extra),
        partition_by=tuple(partition_by),
        batch_rows=options.batch_rows,
        split_bytes=options.split_bytes,
        report=options.report,
        drift_threshold=options.drift_threshold,
    )


def _names(text: str | None) -> list[str]:
    """The names of a comma-separated flag value, blanks dropped."""
    return [name.strip() for name in (text or "").split(",") if name.strip()]


def shared_groups(text: str | None) -> list[list[str]]:
    """The groups of `--tensors_sharing_feature_lists` (`a,b;c,d,e`, blanks and a trailing `;`
    allowed), checked as Avro2TF's parser checks them: at least one group, each of two or more
    names, no name in two groups. None (the flag not given): no groups.

    Example:
        >>> shared_groups(" a, b ; c,d,e;")
        [['a', 'b'], ['c', 'd', 'e']]
    """
    if text is None:
        return []
    flag = "--tensors_sharing_feature_lists"
    groups = _groups(text)
    if not groups:
        raise ValueError(f"{flag}: {text!r} names no group; give groups like a,b;c,d (or leave the flag out)")
    seen: set[str] = set()
    for group, names in groups:
        if len(names) < 2:
            raise ValueError(f"{flag}: group {group!r} needs two or more tensor names")
        twice = sorted(seen.intersection(names))
        if twice or len(set(names)) < len(names):
            name = twice[0] if twice else next(n for n in names if names.count(n) > 1)
            raise ValueError(f"{flag}: tensor {name!r} is in two groups")
        seen.update(names)
    return [names for _, names in groups]


def _groups(text: str | None) -> list[tuple[str, list[str]]]:
    """(text, names) of each `;`-separated group of a flag value (`a,b;c,d`); an empty group (a
    trailing `;`, as Avro2TF allows) is dropped."""
    return [(group, _names(group)) for group in (text or "").split(";") if group.strip()]


def build_pipeline(pipeline: beam.Pipeline, spec: TensorizeSpec):
    """Add the read + tensorize steps of `spec` to `pipeline`; returns `TensorizeOutputs`."""
    outputs = pipeline | "Tensorize" >> Tensorize(spec)
    _ = outputs.result | "KeepResult" >> beam.Map(record_result)  # the summary's own numbers
    return outputs


def _print_help() -> None:
    parser = argparse.ArgumentParser(
        prog=_command(),
        description="Turn Avro, Parquet, ORC or TFRecord data into tf.train.Example TFRecords "
        "plus tensor metadata, "
        "driven by an Avro2TF-compatible config.",
        epilog="All standard Apache Beam pipeline flags are accepted too, e.g. --runner "
        "DirectRunner|DataflowRunner|FlinkRunner|SparkRunner|PortableRunner, "
        "--direct_running_mode multi_processing --direct_num_workers 2, --temp_location. "
        "Avro2TF's flags (--input-paths, --working-dir, --avro2tf-config-path, --execution-mode, "
        "...) are accepted as aliases: see docs/migrating-from-avro2tf.md.",
    )
    TensorizeOptions._add_argparse_args(parser)
    parser.print_help()


def _add_switch(parser: argparse.ArgumentParser, name: str, help: str) -> None:
    """An on/off flag: `--name` alone, or `--name=true|false` (also `--name true`)."""
    parser.add_argument(name, type=_boolean, nargs="?", const=True, default=False, help=help)


def _check_our_flags(argv: list[str]) -> argparse.Namespace:
    """Parse this job's flags alone first, so a bad value is one line, not Beam's usage text."""
    parser = OneLineParser(add_help=False)
    TensorizeOptions._add_argparse_args(parser)
    try:
        return parser.parse_known_args(argv)[0]
    except ValueError as err:
        raise ValueError(f"{err}; {help_hint(_command())}") from None


def _remove_own_temporaries(output: str) -> None:
    """After a failed run (its lock released): what it left in the temporary folders goes,
    unless another job is running into the output."""
    try:
        remove_stale_temporaries(output)
    except Exception:
        _LOGGER.warning("could not remove the temporary files of the failed run", exc_info=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the job; returns the process exit code. The log file (in the temporary folder) is
    kept only when the command fails."""
    code = _main(argv)
    if code == 0:
        console.discard_log()
    return code


def _main(argv: Sequence[str] | None) -> int:
    """The command: flags, the pre-flight checks, then the run; returns the exit code."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if "-h" in argv or "--help" in argv:
        _print_help()
        return 0
    if "--version" in argv:
        print(f"beam_tensorize {__version__}")
        return 0
    try:
        argv, notes = avro2tf_flags.translate(argv)
        ours = _check_our_flags(argv)
    except ValueError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    verbose = ours.verbose
    if not ours.quiet:
        for note in notes:
            print(f"note: {note}", file=sys.stderr)
    log_path = console.configure_logging(verbose)
    cache_dofn_specs()
    pipeline_options = job_options(argv)
    options = pipeline_options.view_as(TensorizeOptions)
    try:
        spec, pipeline, dry_run = _preflight(argv, pipeline_options, options)
    except (ConfigError, ValueError, TypeError, OSError) as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    held_data = ignoring_existing(spec.split_dir, spec.save_mode)
    if options.progress_interval <= 0:
        print("error: --progress_interval must be a positive number of seconds", file=sys.stderr)
        return 2
    return _run(pipeline, pipeline_options, options, spec, log_path, verbose, dry_run, held_data)


def _preflight(
    argv: list[str], pipeline_options: PipelineOptions, options: TensorizeOptions
) -> tuple[TensorizeSpec, beam.Pipeline, bool]:
    """Build the spec, runner, page renderer and job graph, then check; (spec, pipeline, dry run?)."""
    refuse_unknown_arguments(argv, _command())
    spec = _resolve(options)
    dry_run = pipeline_options.view_as(TestOptions).dry_run
    # (also sets up the file systems) The DirectRunner runs in-process, not on Prism.
    runner = direct_runner_for(pipeline_options)
    in_process = (
        runner is not None and pipeline_options.view_as(DirectOptions).direct_running_mode == "in_memory"
    )
    if spec.report == "html" and in_process and not dry_run:
        start_page_renderer()  # its child imports matplotlib while the job graph is built
    pipeline = beam.Pipeline(runner=runner, options=pipeline_options)
    build_pipeline(pipeline, spec)
    if not dry_run:
        _check_before_run(spec, options.quiet)
    return spec, pipeline, dry_run


def _check_before_run(spec: TensorizeSpec, quiet: bool) -> None:
    """The checks of inputs, output and feature lists before a run; removes stale temporaries."""
    check_inputs_found(spec.inputs)
    check_output_writable(spec.output)
    check_output_place(spec)
    check_same_config(spec)
    check_feature_lists(spec)
    removed, size = remove_stale_temporaries(spec.output)
    if removed and not quiet:
        print(
            f"note: removed {removed} temporary file(s) ({size / 2**20:.1f} MiB) that runs which "
            f"did not finish had left in {spec.output}",
            file=sys.stderr,
        )


def _run(
    pipeline: beam.Pipeline,
    pipeline_options: PipelineOptions,
    options: TensorizeOptions,
    spec: TensorizeSpec,
    log_path: str,
    verbose: bool,
    dry_run: bool,
    held_data: bool,
) -> int:
    """Run the job under the output's lock, with progress lines; prints the outcome, returns the exit code."""
    progress_dir = tempfile.mkdtemp(prefix="beam_tensorize-progress-")
    os.environ[PROGRESS_ENV] = progress_dir  # worker processes inherit it
    started = time.monotonic()
    worker_processes = pipeline_options.view_as(DirectOptions).direct_running_mode == "multi_processing"
    try:
        lock = contextlib.nullcontext() if dry_run else RunLock(spec.output)
        with lock, console.worker_output_to(log_path, worker_processes and not verbose) as stream:
            reporter = ProgressReporter(
                progress_dir, console.ProgressLine(), options.progress_interval, stream
            )
            with reporter if not (options.quiet or dry_run) else contextlib.nullcontext():
                result = pipeline.run()
                if pipeline_options.view_as(TestOptions).dry_run:
                    runner = _runner_name(pipeline_options)
                    print(f"Dry run: the job graph was built and translated for {runner}; nothing ran.")
                    return 0
                result.wait_until_finish()
    except Exception as err:  # any failure of the job ends the command the same way
        _LOGGER.error("The job failed", exc_info=True)
        return _job_failed(err, spec.output, dry_run, verbose, log_path)
    finally:
        os.environ.pop(PROGRESS_ENV, None)
        totals = read_progress(progress_dir)
        committed = read_result(progress_dir)
        shutil.rmtree(progress_dir, ignore_errors=True)
    if options.quiet:
        return 0
    if held_data:
        print(f"{spec.split_dir} already held data; with --save_mode ignore nothing was written.")
        return 0
    print(console.summary(spec, result, totals, time.monotonic() - started, committed))
    return 0


def _job_failed(err: Exception, output: str, dry_run: bool, verbose: bool, log_path: str) -> int:
    """After the job failed (logged): remove what it left and say so; returns the exit code (1)."""
    if not dry_run:
        _remove_own_temporaries(output)
    details = "" if verbose else f" (details: {log_path}, or rerun with --verbose)"
    print(
        f"error: the job failed; {output} holds no new complete output: {console.one_line(err)}{details}",
        file=sys.stderr,
    )
    return 1


def _runner_name(options: PipelineOptions) -> str:
    runner = options.view_as(StandardOptions).runner
    return runner if isinstance(runner, str) else type(runner).__name__


if __name__ == "__main__":
    sys.exit(main())
