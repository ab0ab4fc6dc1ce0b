"""The local runner of the command-line jobs: Beam's in-process FnApiRunner, never Prism.

Beam's `DirectRunner` first tries its Prism runner, a Go binary it downloads from GitHub on
first use, and falls back to its in-process FnApiRunner when Prism cannot start. Which one runs
a job then depends on the network. This project's results, tests and benchmarks are the
FnApiRunner's, and `--direct_running_mode` / `--direct_num_workers` are its settings. Where
Prism cannot be fetched, every run also paid ~0.3 s for the attempt and left an empty
`beam-temp*` folder in the temporary directory.

`direct_runner_for(options)` gives the FnApiRunner, set up as Beam's `DirectRunner` sets it up
(the pipeline options handed to its SDK workers), when `options` name the DirectRunner (the
default) for a batch job; otherwise None, and Beam picks the runner from the options as usual.

Example:
    >>> from apache_beam.options.pipeline_options import PipelineOptions
    >>> type(direct_runner_for(PipelineOptions([]))).__name__
    'FnApiRunner'
    >>> direct_runner_for(PipelineOptions(["--runner", "DataflowRunner"])) is None
    True
"""

from __future__ import annotations

from apache_beam.options.pipeline_options import DirectOptions, PipelineOptions, StandardOptions
from apache_beam.runners.runner import PipelineRunner

from beam_tensorize.runners import worker_zygote
from beam_tensorize.runners._compat import (
    CachedViewOptions,
    beam_folder_removed,
    cache_dofn_specs,
    cache_signatures,
    fn_api_runner,
    prompt_state_samplers,
    quick_cache_weights,
)

__all__ = [
    "beam_folder_removed",
    "command_setup",
    "direct_runner_for",
    "job_options",
    "runs_each_bundle_once",
    "start_worker_zygote",
]

#: `--runner` values (lower case, as Beam compares them) that mean Beam's DirectRunner.
_DIRECT_NAMES = {"direct", "directrunner", "switchingdirectrunner"}


def job_options(argv: list[str]) -> PipelineOptions:
    """The pipeline options of a command-line job, from its flags: `PipelineOptions` whose
    `view_as` keeps one view per options class (Beam parses the flags again on every call,
    hundreds of times while a job graph is built)."""
    return CachedViewOptions(argv)


def command_setup() -> None:
    """What the command-line jobs change in Beam before they build a job: DoFn specs read once
    per DoFn class (`cache_dofn_specs`), functions' signatures read once (`cache_signatures`),
    bundles' state samplers that wake within 20 ms (`prompt_state_samplers`) and cached side
    inputs weighed without listing every module's globals each time (`quick_cache_weights`). A process
    that never calls it keeps Beam's behaviour."""
    cache_dofn_specs()
    cache_signatures()
    prompt_state_samplers()
    quick_cache_weights()


def direct_runner_for(options: PipelineOptions) -> PipelineRunner | None:
    """Beam's FnApiRunner for a batch job whose options name the DirectRunner (or no runner);
    None for any other runner or a streaming job."""
    if not _runs_directly(options):
        return None
    return fn_api_runner(options)


def runs_each_bundle_once(runner) -> bool:
    """Whether `runner` (a pipeline's `runner`) processes each bundle at most once: Beam's
    FnApiRunner (what `direct_runner_for` gives) fails the job when a bundle fails, where
    Dataflow, Flink, Spark and Beam's bundle-based DirectRunner may run it again. A step may
    then delete what only that bundle reads once it has read it.

    Example:
        >>> runs_each_bundle_once(direct_runner_for(PipelineOptions([])))
        True
        >>> from apache_beam.runners.direct.direct_runner import DirectRunner
        >>> runs_each_bundle_once(DirectRunner())  # it picks the runner when the job runs
        False
    """
    from apache_beam.runners.portability.fn_api_runner.fn_runner import FnApiRunner

    return isinstance(runner, FnApiRunner)


def start_worker_zygote(options: PipelineOptions) -> bool:
    """For a job `direct_runner_for` runs with `multi_processing` workers: fork the process
    they will be forked from (`worker_zygote.start`; False where none started). The
    command-line jobs call it before building the job when they run as the program (not when
    a program calls their `main`: its process is not theirs to fork)."""
    if (
        not _runs_directly(options)
        or options.view_as(DirectOptions).direct_running_mode != "multi_processing"
    ):
        return False
    return worker_zygote.start()


def _runs_directly(options: PipelineOptions) -> bool:
    standard = options.view_as(StandardOptions)
    runner = standard.runner
    if runner is not None and (not isinstance(runner, str) or runner.lower() not in _DIRECT_NAMES):
        return False
    return not standard.streaming
