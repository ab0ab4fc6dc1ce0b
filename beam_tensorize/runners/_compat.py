"""Apache Beam internals this package relies on, in one place (`tests/runners/test_each_runner.py` fails
loudly, naming them, when a Beam release moves them).

* `fn_runner.FnApiRunner(provision_info=...)` and `fn_runner.ExtendedProvisionInfo`: the
  in-process runner, built as Beam's `DirectRunner` builds it, without its Prism attempt
  (`direct.direct_runner_for`);
* `JobServiceHandle.encode_pipeline_options`: the pipeline options its SDK workers get;
* in `multi_processing` mode, its workers' environment: a `python_urns.SUBPROCESS_SDK`
  environment whose payload is the command `python -m apache_beam.runners.worker.sdk_worker_main`
  (replaced by `subprocess_worker.COMMAND` before the run);
* `PipelineOptions.view_as` builds each view over the options' shared `_all_options` dict
  (`CachedViewOptions` keeps one view per class instead of parsing the flags again);
* `userstate.get_dofn_specs`, which every stage's set-up calls for each of its DoFns
  (`cache_dofn_specs` remembers its answer per DoFn class and wrapped function);
* the default `sampling_period_ms` of `statesampler.StateSampler`, the thread each bundle
  starts and joins (`prompt_state_samplers`);
* `typehints.decorators.get_signature`, imported by name into `transforms.core`,
  `transforms.ptransform` and `transforms.util` (`cache_signatures`);
* `FnApiRunner._execute_bundle(context, bundle_context_manager, bundle_input)` and
  `_get_bundle_manager(bundle_context_manager)`, `fn_runner.BundleManager`, and the stage
  inputs' buffers (`execution.ListBuffer._inputs` / `_coder_impl`,
  `execution.GroupingBuffer._table`): a stage whose input cannot be split goes to one worker
  (`_at_most_one_part`);
* `Pipeline.local_tempdir`, the folder a `beam.Pipeline` makes when it is created and removes
  in `run()` (`beam_folder_removed`);
* `statecache.get_deep_size`, called by name in `statecache`, and the `_size_func`,
  `_get_referents_func` and `_filter_func` it hands to objsize (`quick_cache_weights`).
"""

from __future__ import annotations

import contextlib
import functools
import os
import shutil
import sys
import types
import weakref
from collections.abc import Iterator

from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.runner import PipelineRunner

__all__ = [
    "CachedViewOptions",
    "cache_dofn_specs",
    "cache_signatures",
    "fn_api_runner",
    "prompt_state_samplers",
    "quick_cache_weights",
]


class CachedViewOptions(PipelineOptions):
    """`PipelineOptions` whose `view_as` gives one view per options class.

    Beam's `view_as` builds an argument parser of every option of the class and parses the
    flags again on each call; building a job graph calls it hundreds of times (~0.3 s of the
    sample run). A view reads and writes the options' shared `_all_options` dict, so one view
    per class shows the same values as new ones would.

    Example:
        >>> from apache_beam.options.pipeline_options import StandardOptions
        >>> options = CachedViewOptions(["--runner", "DirectRunner"])
        >>> options.view_as(StandardOptions) is options.view_as(StandardOptions)
        True
        >>> options.view_as(StandardOptions).runner = "Other"
        >>> options.view_as(StandardOptions).runner, options.get_all_options()["runner"]
        ('Other', 'Other')
    """

    def view_as(self, cls):
        views = self.__dict__.setdefault("_views", {})  # not through __setattr__: not an option
        view = views.get(cls)
        if view is None:
            view = views[cls] = super().view_as(cls)
        return view


@contextlib.contextmanager
def beam_folder_removed(pipeline) -> Iterator:
    """The temporary folder Beam made for `pipeline` when it was created
    (`beam-pipeline-temp*`) is gone when the block ends. `run()` removes it itself; a pipeline
    built but never run (a pre-flight check refused the job, or the output's lock was taken)
    left it in the temporary directory, one folder per refused command."""
    try:
        yield pipeline
    finally:
        folder = getattr(pipeline, "local_tempdir", None)
        if folder:
            shutil.rmtree(folder, ignore_errors=True)


def fn_api_runner(options: PipelineOptions) -> PipelineRunner:
    """Beam's FnApiRunner whose SDK workers (worker processes in multi_processing mode) get
    `options`, as Beam's DirectRunner sets it up; its worker processes start as
    `subprocess_worker.COMMAND`."""
    from apache_beam.portability.api import beam_provision_api_pb2
    from apache_beam.runners.portability.fn_api_runner import fn_runner
    from apache_beam.runners.portability.portable_runner import JobServiceHandle

    encoded = JobServiceHandle.encode_pipeline_options(options.get_all_options())
    provision = fn_runner.ExtendedProvisionInfo(
        beam_provision_api_pb2.ProvisionInfo(pipeline_options=encoded)
    )
    return _runner_class(fn_runner.FnApiRunner)(provision_info=provision)


#: The command Beam's FnApiRunner starts its worker processes with (`multi_processing`).
BEAM_WORKER_COMMAND = f"{sys.executable} -m apache_beam.runners.worker.sdk_worker_main"


@functools.cache
def _runner_class(base: type) -> type:
    from apache_beam.portability import python_urns

    from beam_tensorize.runners import worker_zygote
    from beam_tensorize.runners.subprocess_worker import COMMAND

    class FnApiRunner(base):
        """Beam's FnApiRunner, its worker processes started as `subprocess_worker.COMMAND`, or
        forked by this process's `worker_zygote` when it has one."""

        _one_part = False  # the input of the bundle being started cannot be split

        def run_via_runner_api(self, pipeline_proto, options):
            command = worker_zygote.CLIENT if os.environ.get(worker_zygote.ENV) else COMMAND
            for environment in pipeline_proto.components.environments.values():
                if (
                    environment.urn == python_urns.SUBPROCESS_SDK
                    and environment.payload == BEAM_WORKER_COMMAND.encode()
                ):
                    environment.payload = command.encode()
            return super().run_via_runner_api(pipeline_proto, options)

        def _execute_bundle(self, runner_execution_context, bundle_context_manager, bundle_input):
            self._one_part = _at_most_one_part(bundle_input.data.values())
            return super()._execute_bundle(runner_execution_context, bundle_context_manager, bundle_input)

        def _get_bundle_manager(self, bundle_context_manager):
            from apache_beam.runners.portability.fn_api_runner import fn_runner

            manager = super()._get_bundle_manager(bundle_context_manager)
            if type(manager) is not fn_runner.ParallelBundleManager or not self._one_part:
                return manager
            # Beam sends a stage's bundle to each worker, its input split element by element:
            # a stage of one element (an Impulse, a global combine's one key) made the idle
            # workers run an empty bundle each, ~15 ms of round trips and set-up per stage in
            # the job's critical path. It goes to one worker.
            return fn_runner.BundleManager(
                bundle_context_manager,
                self._progress_frequency,
                cache_token_generator=manager._cache_token_generator,
            )

    return FnApiRunner


def _at_most_one_part(buffers) -> bool:
    """Whether a stage's input buffers hold one element (or key) at most in all: no split of
    it gives two workers work. Buffers of other kinds count as splittable."""
    from apache_beam.coders.coder_impl import create_InputStream
    from apache_beam.runners.portability.fn_api_runner import execution

    count = 0
    for buffer in buffers:
        if isinstance(buffer, execution.GroupingBuffer) and not buffer._grouped_output:
            count += len(buffer._table)
        elif isinstance(buffer, execution.ListBuffer) and not buffer.cleared:
            if len(buffer._inputs) > 1:
                return False
            for chunk in buffer._inputs:
                stream = create_InputStream(chunk)
                while stream.size() > 0 and count < 2:
                    buffer._coder_impl.decode_from_stream(stream, True)
                    count += 1
        else:
            return False
        if count > 1:
            return False
    return True


def cache_dofn_specs() -> None:
    """Have Beam remember the state and timer specs of each DoFn class (and, for `Map` /
    `FlatMap` / `Filter`, each wrapped function) instead of reading every method's signature
    again: Beam asks ~20 times per DoFn while it builds and runs a job (~0.5 s of the sample
    run). A DoFn's specs are the defaults of its methods' parameters, fixed by its class and,
    for a wrapped callable, by that callable. Called by the command-line jobs only; a process
    that never calls it keeps Beam's behaviour.

    Example:
        >>> import apache_beam as beam
        >>> from apache_beam.transforms import userstate
        >>> cache_dofn_specs()
        >>> class Counting(beam.DoFn):
        ...     def process(self, x, count=beam.DoFn.StateParam(userstate.CombiningValueStateSpec("n", sum))):
        ...         yield x
        >>> userstate.is_stateful_dofn(Counting()), userstate.is_stateful_dofn(beam.Map(len).dofn)
        (True, False)
    """
    from apache_beam.transforms import userstate

    if getattr(userstate.get_dofn_specs, "_cached", False):
        return
    uncached = userstate.get_dofn_specs
    known: dict = {}

    def get_dofn_specs(dofn):
        try:
            key = (type(dofn), vars(dofn).get("_fn"))
            hash(key)
        except TypeError:  # no instance dict, or an unhashable callable: not cached
            return uncached(dofn)
        if key not in known:
            known[key] = uncached(dofn)
        states, timers = known[key]
        return set(states), set(timers)

    get_dofn_specs._cached = True
    userstate.get_dofn_specs = get_dofn_specs


#: The longest sleep of a bundle's state sampler thread, in ms (Beam's default: 200).
STATE_SAMPLING_MS = 20


def prompt_state_samplers() -> None:
    """Have the thread that samples each bundle's state sleep at most `STATE_SAMPLING_MS`
    between samples. A bundle ends by joining that thread, which wakes only when its sleep is
    over; Beam's sleeps grow to 200 ms, so each long bundle ended up to 200 ms late (~0.15 s
    of wall time in a 1M-row run of `benchmarks/tft_config.json`, measured). Called by the
    command-line jobs only.

    Example:
        >>> from apache_beam.runners.worker import statesampler
        >>> prompt_state_samplers()
        >>> statesampler.StateSampler("stage", None).sampling_period_ms
        20
    """
    from apache_beam.runners.worker import statesampler

    init = statesampler.StateSampler.__init__
    init.__defaults__ = (*init.__defaults__[:-1], STATE_SAMPLING_MS)


#: The Beam modules that call `get_signature` by the name they imported.
_SIGNATURE_USERS = (
    "apache_beam.typehints.decorators",
    "apache_beam.transforms.core",
    "apache_beam.transforms.ptransform",
    "apache_beam.transforms.util",
)


def cache_signatures() -> None:
    """Have Beam read each Python function's signature once instead of every time it looks
    (`inspect.signature`, ~35 us each): building a job and setting up each of its stages asks
    ~5,400 times for the bundled sample (~0.15 s of a 2.3 s run). A function's signature is
    remembered with what it comes from (its code, defaults, keyword defaults, annotations and
    a `__signature__` set on it), and read again when any of those changed; a bound method's
    by its function. Wrappers (`__wrapped__`) and other callables are not cached. Called by
    the command-line jobs and their worker processes only.

    Example:
        >>> from apache_beam.typehints import decorators
        >>> cache_signatures()
        >>> def f(a, b=1): ...
        >>> decorators.get_signature(f) is decorators.get_signature(f), str(decorators.get_signature(f))
        (True, '(a, b=1)')
        >>> f.__defaults__ = (2,)
        >>> str(decorators.get_signature(f))
        '(a, b=2)'
    """
    from apache_beam.typehints import decorators

    if getattr(decorators.get_signature, "_cached", False):
        return
    uncached = decorators.get_signature
    plain: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # function -> (source, signature)
    bound: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # a method's function -> the same

    def source(function: types.FunctionType) -> tuple:
        return (
            function.__code__,
            function.__defaults__,
            function.__kwdefaults__,
            function.__annotations__,
            function.__dict__.get("__signature__"),
        )

    def get_signature(func):
        if type(func) is types.FunctionType:
            known, function = plain, func
        elif type(func) is types.MethodType and type(func.__func__) is types.FunctionType:
            known, function = bound, func.__func__
        else:
            return uncached(func)
        if "__wrapped__" in function.__dict__:  # its signature is another function's
            return uncached(func)
        now = source(function)
        entry = known.get(function)
        if entry is not None and all(a is b for a, b in zip(entry[0], now)):
            return entry[1]
        signature = uncached(func)
        known[function] = (now, signature)
        return signature

    get_signature._cached = True
    for name in _SIGNATURE_USERS:
        module = sys.modules.get(name) or __import__(name, fromlist=["get_signature"])
        if getattr(module, "get_signature", None) is not uncached:  # pragma: no cover - Beam moved
            raise ImportError(f"{name} no longer calls apache_beam's get_signature by that name")
        module.get_signature = get_signature


def quick_cache_weights() -> None:
    """Have Beam weigh the values its state cache keeps (side inputs, loaded by each bundle
    that reads one) without listing every loaded module's globals again for each value.
    objsize leaves those globals out of a weight and collects their ids on every call: ~1 ms
    with ~2,600 modules loaded, twice that with TensorFlow imported, 16 calls in a run of the
    bundled config. The ids are now collected again only when the number of loaded modules
    changed; the weights are the ones Beam's own function gives. A value whose class has a
    `deep_size_in_bytes()` method (a `FeatureList`, the side input of every lookup) weighs what
    that method says, without a walk over what it holds (1 s for a list of 632,221 entries,
    several times a run). Called by the command-line jobs and their worker processes only.

    Example:
        >>> from apache_beam.runners.worker import statecache
        >>> quick_cache_weights()
        >>> statecache.get_deep_size(["a", "b"]) == statecache.get_deep_size(["c", "d"]) > 0
        True
    """
    from apache_beam.runners.worker import statecache
    from objsize.traverse import ObjSizeSettings, TraversalContext

    if getattr(statecache.get_deep_size, "_cached", False):
        return

    def size(obj) -> int:
        weigh = getattr(type(obj), "deep_size_in_bytes", None)
        if weigh is not None:  # it and what it holds, as `referents` does not walk into it
            return weigh(obj)
        return statecache._size_func(obj)

    def referents(*objs) -> list:
        return statecache._get_referents_func(
            *(obj for obj in objs if getattr(type(obj), "deep_size_in_bytes", None) is None)
        )

    settings = ObjSizeSettings(
        get_size_func=size,
        get_referents_func=referents,
        filter_func=statecache._filter_func,
        exclude_modules_globals=False,  # excluded below, from the ids collected last
    )
    known: dict = {"modules": -1, "globals": frozenset()}

    def get_deep_size(*objs) -> int:
        if len(sys.modules) != known["modules"]:
            ids = set()
            for module in list(sys.modules.values()):
                try:
                    ids.add(id(vars(module)))
                except TypeError:  # (objsize skips those too)
                    pass
            known.update(modules=len(sys.modules), globals=frozenset(ids))
        context = TraversalContext(settings)
        context.exclude_set.update(known["globals"])
        return context.get_deep_size(*objs)

    get_deep_size._cached = True
    statecache.get_deep_size = get_deep_size
