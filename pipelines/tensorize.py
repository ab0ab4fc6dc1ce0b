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

from beam_tensorize.runners.startup import command_imports, objects_set_aside

with command_imports(__name__):  # only as the program; see beam_tensorize/runners/startup.py
    import apache_beam as beam
    from apache_beam.options.pipeline_options import (
        DirectOptions,
        PipelineOptions,
        StandardOptions,
        TestOptions,
    )

    from beam_tensorize import __version__
    from beam_tensorize.config import ConfigError, load_config
    from beam_tensorize.job.daily import daily_inputs
    from beam_tensorize.job.finish import ignoring_existing
    from beam_tensorize.job.preflight import (
        RunLock,
        check_feature_lists,
        check_inputs_found,
        check_output_place,
        check_output_writable,
        check_same_config,
        remove_stale_temporaries,
    )
    from beam_tensorize.job.spec import SettingError, TensorizeSpec
    from beam_tensorize.progress import (
        PROGRESS_ENV,
        ProgressReporter,
        read_progress,
        read_result,
        record_result,
    )
    from beam_tensorize.runners.direct import (
        beam_folder_removed,
        command_setup,
        direct_runner_for,
        job_options,
        start_worker_zygote,
    )
    from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
    from beam_tensorize.transforms import Tensorize
    from pipelines import avro2tf_flags, console, flags
    from pipelines.arguments import OneLineParser, help_hint, refuse_unknown_arguments

__all__ = ["DEFAULT_OUTPUT", "TensorizeOptions", "build_pipeline", "main"]

shared_groups = flags.shared_groups  # where Avro2TF users' tests found it


def _command() -> str:
    """How the user ran this command, for hints: the installed script, or the module."""
    return (
        "beam-tensorize"
        if os.path.basename(sys.argv[0] or "") == "beam-tensorize"
        else "python -m pipelines.tensorize"
    )


_LOGGER = logging.getLogger(__name__)

DEFAULT_OUTPUT = flags.DEFAULT_OUTPUT


class TensorizeOptions(PipelineOptions):
    """Options of the tensorize job (plus every standard Beam option)."""

    @classmethod
    def _add_argparse_args(cls, parser):
        flags.add_flags(parser)


def _resolve(options: TensorizeOptions) -> TensorizeSpec:
    """Turn options into the job's settings; raise ValueError on bad flags or combinations (the
    settings' own checks are `TensorizeSpec`'s, their messages naming the flags)."""
    if (options.input is None) != (options.config is None):
        raise ValueError("--input and --config go together: give both, or neither for the bundled sample")
    sample = options.input is None
    if not sample and not (options.output or "").strip():
        raise ValueError("--output is required with --input and --config: give the folder to write to")
    patterns = [SAMPLE_AVRO] if sample else flags.split_names(options.input)
    if not patterns:
        raise ValueError("--input names no file")
    if options.input_date_range or options.input_days_range:
        patterns = _daily_patterns(patterns, options)
    lists = _list_values(options)  # checked before the config, as Avro2TF's parser does
    config = load_config(SAMPLE_CONFIG if sample else options.config)
    try:
        return TensorizeSpec(
            config,
            (options.output or flags.DEFAULT_OUTPUT) if sample else options.output,
            inputs=tuple(patterns),
            save_mode=options.save_mode or ("overwrite" if sample else "error"),
            **lists,
            **{name: getattr(options, name) for name in _SAME_NAMED},
        )
    except SettingError as err:
        raise ValueError(err.naming(flags.flag_of)) from None


def _daily_patterns(patterns: list[str], options: TensorizeOptions) -> list[str]:
    """The day folders of `--input_date_range` / `--input_days_range`; a note names missing days."""
    patterns, missing = daily_inputs(patterns, options.input_date_range, options.input_days_range)
    if missing and not options.quiet:
        shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
        print(
            f"note: {len(missing)} day folder(s) of the range hold no files (missing or empty) and are "
            f"skipped: {shown}",
            file=sys.stderr,
        )
    return patterns


#: The settings given by a flag of the same name, as they are.
_SAME_NAMED = (
    "input_format",
    "execution_mode",
    "output_format",
    "num_shards",
    "max_records_per_file",
    "compression",
    "max_bad_records_ratio",
    "external_feature_lists",
    "filter_zeros",
    "check_shapes",
    "discard_unknown_entries",
    "term_only_feature_lists",
    "partition_field_name",
    "num_partitions",
    "shuffle",
    "shuffle_seed",
    "skip_conversion",
    "dedup_block_size",
    "batch_rows",
    "split_bytes",
    "input_passes",
    "report",
    "drift_threshold",
)


def _list_values(options: TensorizeOptions) -> dict[str, tuple]:
    """The settings given by list flags (`a,b` or `a,b;c,d`), parsed."""
    return {
        "shared_feature_lists": tuple(map(tuple, flags.shared_groups(options.tensors_sharing_feature_lists))),
        "dedup_user_cols": tuple(map(tuple, flags.split_groups(options.dedup_user_cols))),
        "extra_columns": tuple(flags.split_names(options.extra_columns_to_keep)),
        "partition_by": tuple(flags.split_names(options.partition_by)),
    }


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
    kept only when the command fails. The caller's objects stay out of the garbage
    collector's passes while the job runs (`objects_set_aside`)."""
    with objects_set_aside():
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
    command_setup()
    pipeline_options = job_options(argv)
    options = pipeline_options.view_as(TensorizeOptions)
    with contextlib.ExitStack() as run_owns:  # the pipeline's temporary folder
        try:
            spec, pipeline, dry_run = _preflight(argv, pipeline_options, options, run_owns)
        except (ConfigError, ValueError, TypeError, OSError) as err:
            print(f"error: {err}", file=sys.stderr)
            return 2
        held_data = ignoring_existing(spec.split_dir, spec.save_mode)
        if options.progress_interval <= 0:
            print("error: --progress_interval must be a positive number of seconds", file=sys.stderr)
            return 2
        return _run(pipeline, pipeline_options, options, spec, log_path, verbose, dry_run, held_data)


def _preflight(
    argv: list[str],
    pipeline_options: PipelineOptions,
    options: TensorizeOptions,
    run_owns: contextlib.ExitStack,
) -> tuple[TensorizeSpec, beam.Pipeline, bool]:
    """Build the spec, runner and job graph (its temporary folder owned by `run_owns`), then check;
    (spec, pipeline, dry run?)."""
    refuse_unknown_arguments(argv, _command())
    spec = _resolve(options)
    dry_run = pipeline_options.view_as(TestOptions).dry_run
    if __name__ == "__main__" and not dry_run:  # the command owns the process: before any
        start_worker_zygote(pipeline_options)  # thread or channel, its workers' zygote
    # (also sets up the file systems) The DirectRunner runs in-process, not on Prism.
    runner = direct_runner_for(pipeline_options)
    # the pipeline's temporary folder goes with the run, or when the job is refused
    pipeline = run_owns.enter_context(
        beam_folder_removed(beam.Pipeline(runner=runner, options=pipeline_options))
    )
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
