"""The same job on several runners gives the same feature lists, metadata and records.

Runners exercised here: DirectRunner (in-process and multi-processing), PortableRunner against
Beam's Python job service with LOOPBACK and with EXTERNAL workers from Beam's worker pool (the
Job API / Fn API path Flink and Spark use), FlinkRunner / SparkRunner flag handling with
`--job_endpoint=embed` (which runs on Beam's Python runner, not on Flink or Spark), and
DataflowRunner with `--dry_run` (graph translation only, offline).
"""

from __future__ import annotations

import filecmp
import json
import os
import socket
import subprocess
import sys
import tarfile
import time

import pytest

from beam_tensorize.runners import worker_zygote
from beam_tensorize.sample import AVRO2TF_CONFIG, SAMPLE_AVRO
from pipelines.tensorize import main

pytestmark = [pytest.mark.pipeline, pytest.mark.runners]

JOB = ["--input", SAMPLE_AVRO, "--config", AVRO2TF_CONFIG]
SETUP_FILE = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "setup.py"
)
SAME_BYTES = [
    "featureList/genreFeatures",
    "featureList/genreFeatures_term",
    "metadata/tensor_metadata.json",
    "metadata/featureListCounts/genreFeatures.tsv",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(args: list[str], port: int):
    """Start a Beam service on 127.0.0.1:port with this interpreter first on PATH; wait for it."""
    env = dict(os.environ, PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    process = subprocess.Popen(
        [sys.executable, "-m", *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return process
        if process.poll() is not None:
            raise RuntimeError(f"{args[0]} exited with code {process.returncode}")
        time.sleep(0.2)
    process.kill()
    raise RuntimeError(f"{args[0]} did not listen on port {port} within 60 s")


@pytest.fixture(scope="module")
def job_service():
    port = _free_port()
    process = _serve(["apache_beam.runners.portability.local_job_service_main", "--port", str(port)], port)
    yield f"127.0.0.1:{port}"
    process.terminate()
    process.wait(timeout=30)


@pytest.fixture(scope="module")
def worker_pool():
    port = _free_port()
    process = _serve(["apache_beam.runners.worker.worker_pool_main", f"--service_port={port}"], port)
    yield f"127.0.0.1:{port}"
    process.terminate()
    process.wait(timeout=30)


@pytest.fixture(scope="module")
def boot_worker_pool():
    """A worker pool whose workers start through our boot entry point (they get the options)."""
    boot = os.path.join(os.path.dirname(sys.executable), "beam-tensorize-worker")
    port = _free_port()
    process = _serve(
        [
            "apache_beam.runners.worker.worker_pool_main",
            f"--service_port={port}",
            f"--container_executable={boot}",
        ],
        port,
    )
    yield f"127.0.0.1:{port}"
    process.terminate()
    process.wait(timeout=30)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    out = tmp_path_factory.mktemp("direct") / "out"
    assert main([*JOB, "--output", str(out)]) == 0
    return out


def _records(folder):
    import tensorflow as tf

    files = sorted(str(p) for p in (folder / "trainingData").iterdir())
    return sorted(tf.data.TFRecordDataset(files).as_numpy_iterator())


def _assert_same_output(baseline, out):
    for rel in SAME_BYTES:
        assert filecmp.cmp(baseline / rel, out / rel, shallow=False), rel
    records = _records(out)
    assert len(records) == 300 and records == _records(baseline)
    assert (out / "_SUCCESS").exists()


def test_direct_multi_processing(baseline, tmp_path):
    out = tmp_path / "out"
    assert (
        main(
            [
                *JOB,
                "--output",
                str(out),
                "--direct_running_mode",
                "multi_processing",
                "--direct_num_workers",
                "2",
            ]
        )
        == 0
    )
    _assert_same_output(baseline, out)


def _worker_facts(_):
    import gc

    from apache_beam.runners.worker import statesampler
    from apache_beam.transforms import core, userstate

    main_module = sys.modules["__main__"]
    return (
        main_module.__spec__.name,
        gc.get_freeze_count() > 0,
        gc.isenabled(),
        os.environ.get("OPENBLAS_NUM_THREADS"),
        getattr(userstate.get_dofn_specs, "_cached", False) and getattr(core.get_signature, "_cached", False),
        statesampler.StateSampler.__init__.__defaults__[-1],
    )


def test_multi_processing_workers_start_as_the_commands_do(tmp_path):
    """The runner's worker processes run Beam's SDK harness through `subprocess_worker`: its
    imports frozen out of the garbage collector's sight, which still runs, and Beam set up as
    the commands set it up (specs and signatures cached, prompt state samplers)."""
    import apache_beam as beam
    from apache_beam.testing.util import assert_that, equal_to

    from beam_tensorize.runners.direct import direct_runner_for, job_options

    options = job_options(["--direct_running_mode", "multi_processing", "--direct_num_workers", "1"])
    with beam.Pipeline(runner=direct_runner_for(options), options=options) as p:
        facts = p | beam.Create([0]) | beam.Map(_worker_facts)
        assert_that(
            facts, equal_to([("beam_tensorize.runners.subprocess_worker", True, True, "1", True, 20)])
        )


def test_portable_runner_loopback(baseline, job_service, tmp_path):
    out = tmp_path / "out"
    args = [
        *JOB,
        "--output",
        str(out),
        "--runner",
        "PortableRunner",
        "--job_endpoint",
        job_service,
        "--environment_type",
        "LOOPBACK",
    ]
    assert main(args) == 0
    _assert_same_output(baseline, out)


def test_portable_runner_external_workers(baseline, job_service, worker_pool, tmp_path):
    out = tmp_path / "out"
    args = [*JOB, "--output", str(out), "--runner", "PortableRunner", "--job_endpoint", job_service,
            "--environment_type", "EXTERNAL", "--environment_config", worker_pool]  # fmt: skip
    assert main(args) == 0
    _assert_same_output(baseline, out)


@pytest.mark.parametrize("runner", ["FlinkRunner", "SparkRunner"])
def test_flink_and_spark_runner_flags_on_the_embedded_python_job_service(baseline, tmp_path, runner):
    out = tmp_path / "out"
    args = [
        *JOB,
        "--output",
        str(out),
        "--runner",
        runner,
        "--job_endpoint",
        "embed",
        "--environment_type",
        "LOOPBACK",
    ]
    assert main(args) == 0
    _assert_same_output(baseline, out)


def test_dataflow_dry_run_translates_offline(capsys, monkeypatch):
    monkeypatch.setenv("NO_GCE_CHECK", "true")
    args = [*JOB, "--output", "gs://bucket/out", "--runner", "DataflowRunner", "--dry_run=True",
            "--project", "demo-project", "--region", "us-central1", "--temp_location", "gs://bucket/tmp",
            "--progress_interval", "0.01"]  # fmt: skip
    assert main(args) == 0
    captured = capsys.readouterr()
    assert "Dry run: the job graph was built and translated for DataflowRunner; nothing ran." in captured.out
    assert "progress:" not in captured.err  # nothing runs, so no progress lines


@pytest.mark.parametrize(
    "extra",
    [
        [],
        ["--sdk_container_image", "gcr.io/demo-project/beam-tensorize:0.1.0"],
        ["--setup_file", SETUP_FILE],
    ],
    ids=["default-image", "own-image", "setup-file"],
)
def test_dataflow_dry_run_job_graph(monkeypatch, extra):
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.portability.api import beam_runner_api_pb2

    from pipelines.tensorize import TensorizeOptions, _resolve, build_pipeline

    monkeypatch.setenv("NO_GCE_CHECK", "true")
    args = ["--input", "gs://demo-bucket/in/*.avro", "--config", AVRO2TF_CONFIG, "--output", "gs://demo-bucket/out",
            "--runner", "DataflowRunner", "--dry_run=True", "--project", "demo-project", "--region", "us-central1",
            "--temp_location", "gs://demo-bucket/tmp", *extra]  # fmt: skip
    options = PipelineOptions(args)
    pipeline = beam.Pipeline(options=options)
    build_pipeline(pipeline, _resolve(options.view_as(TensorizeOptions)))
    pipeline.run()
    graph = pipeline.runner.job.proto_pipeline
    urns = {t.unique_name: t.spec.urn for t in graph.components.transforms.values()}
    for step in [
        "Tensorize/ReadInput/PlanSplits",
        "Tensorize/ReadInput/ReadSplits",
        "Tensorize/ExtractFeatures",
        "Tensorize/HashFeatures",
        "Tensorize/ApplyFeatureLists",
        "Tensorize/EncodeExamples",
        "Tensorize/ReadForFeatureLists/ReadSplits",
        "Tensorize/ExtractListTensors",
        "Tensorize/WriteTFRecord/WriteSplitFiles",
        "Tensorize/CommitOutput/MetadataInputs",
        "Tensorize/CommitOutput/Commit",  # data, metadata, feature lists and _SUCCESS in one transaction
    ]:
        assert step in urns, step
    # An output on an object store: train mode reads the input twice instead of keeping batches.
    assert not [name for name in urns if "KeepForFeatureLists" in name]
    # Records are written where they are encoded: no shuffle of record data.
    assert not [name for name in urns if "GroupByShard" in name or "AssignShards" in name]
    # Feature-list counting is a combiner (partial sums before the shuffle), not group-then-count.
    assert urns["Tensorize/BuildFeatureLists/SumCounts"] == "beam:transform:combine_per_key:v1"
    environments = list(graph.components.environments.values())
    if extra[:1] == ["--sdk_container_image"]:
        assert any(extra[1].encode() in env.payload for env in environments)
    staged = {
        beam_runner_api_pb2.ArtifactStagingToRolePayload.FromString(d.role_payload).staged_name: (
            beam_runner_api_pb2.ArtifactFilePayload.FromString(d.type_payload).path
        )
        for env in environments
        for d in env.dependencies
    }
    if extra[:1] == ["--setup_file"]:
        # Beam built the project's sdist offline (`python -m build --no-isolation --sdist`) and
        # stages it as workflow.tar.gz for the workers to install.
        with tarfile.open(staged["workflow.tar.gz"]) as sdist:
            names = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
        assert {
            "setup.py",
            "beam_tensorize/kernels/avro/reading.py",
            "beam_tensorize/kernels/avro/_avrodecode.c",
            "pipelines/tensorize.py",
        } <= names
    else:
        assert "workflow.tar.gz" not in staged


@pytest.mark.parametrize(("runner", "variable"), [("FlinkRunner", "BEAM_TENSORIZE_FLINK_JOB_ENDPOINT"),
                                                  ("SparkRunner", "BEAM_TENSORIZE_SPARK_JOB_ENDPOINT")])  # fmt: skip
def test_real_cluster(request, tmp_path, runner, variable):
    """Runs on a real Flink / Spark job server when its endpoint is given (HOST:PORT)."""
    endpoint = os.environ.get(variable)
    if not endpoint:
        pytest.skip(f"set {variable}=HOST:PORT of a Beam {runner[:-6]} job server to run on a real cluster")
    baseline = request.getfixturevalue("baseline")
    out = tmp_path / "out"
    args = [*JOB, "--output", str(out), "--runner", runner, "--job_endpoint", endpoint,
            "--environment_type", os.environ.get("BEAM_TENSORIZE_ENVIRONMENT_TYPE", "LOOPBACK")]  # fmt: skip
    assert main(args) == 0
    _assert_same_output(baseline, out)


def _report_worker(_, path):
    """Runs on a worker: write down the interpreter and an option only the job was given."""
    from apache_beam.io.filesystems import FileSystems
    from apache_beam.options.pipeline_options import S3Options

    options = FileSystems._pipeline_options
    endpoint = options.view_as(S3Options).s3_endpoint_url if options is not None else None
    with open(path, "w") as f:
        f.write(f"{sys.executable}\n{endpoint}\n")


def test_boot_entry_point_gives_workers_the_options_and_our_interpreter(
    job_service, boot_worker_pool, tmp_path
):
    import apache_beam as beam
    from apache_beam.options.pipeline_options import PipelineOptions

    report = tmp_path / "worker.txt"
    args = ["--runner=PortableRunner", f"--job_endpoint={job_service}", "--environment_type=EXTERNAL",
            f"--environment_config={boot_worker_pool}", "--s3_endpoint_url=http://127.0.0.1:1"]  # fmt: skip
    options = PipelineOptions(args)
    with beam.Pipeline(options=options) as p:
        _ = p | beam.Create([0]) | beam.Map(_report_worker, str(report))
    interpreter, endpoint = report.read_text().splitlines()
    assert endpoint == "http://127.0.0.1:1"
    assert os.path.dirname(interpreter) == os.path.dirname(sys.executable)


def test_portable_runner_external_workers_through_the_boot_entry_point(
    baseline, job_service, boot_worker_pool, tmp_path
):
    out = tmp_path / "out"
    args = [*JOB, "--output", str(out), "--runner", "PortableRunner", "--job_endpoint", job_service,
            "--environment_type", "EXTERNAL", "--environment_config", boot_worker_pool]  # fmt: skip
    assert main(args) == 0
    _assert_same_output(baseline, out)


def test_the_beam_internals_the_runner_uses_are_there():
    """`beam_tensorize/runners/_compat.py` builds the FnApiRunner from Beam internals: a Beam
    release that moves them fails here, by name."""
    import inspect

    from apache_beam.runners.portability.fn_api_runner import fn_runner
    from apache_beam.runners.portability.portable_runner import JobServiceHandle

    assert hasattr(fn_runner, "ExtendedProvisionInfo"), "fn_runner.ExtendedProvisionInfo moved"
    assert "provision_info" in inspect.signature(fn_runner.FnApiRunner).parameters, (
        "FnApiRunner(provision_info=)"
    )
    assert callable(getattr(JobServiceHandle, "encode_pipeline_options", None)), (
        "encode_pipeline_options moved"
    )
    from apache_beam.options.pipeline_options import PipelineOptions
    from apache_beam.transforms import userstate

    assert list(inspect.signature(userstate.get_dofn_specs).parameters) == ["dofn"], "get_dofn_specs moved"
    from apache_beam.runners.worker import statesampler

    from beam_tensorize.runners._compat import BEAM_WORKER_COMMAND

    assert BEAM_WORKER_COMMAND.split(" -m ")[1] in inspect.getsource(fn_runner.FnApiRunner.run_pipeline), (
        "the FnApiRunner's worker command changed"
    )
    sampling = inspect.signature(statesampler.StateSampler).parameters
    assert list(sampling)[-1] == "sampling_period_ms", "StateSampler(sampling_period_ms=) moved"
    assert "_all_options" in inspect.getsource(PipelineOptions.view_as), (
        "view_as no longer shares _all_options"
    )
    import importlib

    from beam_tensorize.runners._compat import _SIGNATURE_USERS

    for name in _SIGNATURE_USERS:
        assert hasattr(importlib.import_module(name), "get_signature"), f"{name}.get_signature moved"
    from apache_beam.runners.portability.fn_api_runner import execution

    assert list(inspect.signature(fn_runner.FnApiRunner._execute_bundle).parameters)[2:] == [
        "bundle_context_manager",
        "bundle_input",
    ], "FnApiRunner._execute_bundle changed"
    assert list(inspect.signature(fn_runner.FnApiRunner._get_bundle_manager).parameters) == [
        "self",
        "bundle_context_manager",
    ], "FnApiRunner._get_bundle_manager changed"
    listed = execution.ListBuffer(None)
    assert listed._inputs == [] and listed._coder_impl is not None, "ListBuffer's fields moved"
    assert "self._table" in inspect.getsource(execution.GroupingBuffer.__init__), (
        "GroupingBuffer._table moved"
    )
    import apache_beam as beam

    from beam_tensorize.runners._compat import beam_folder_removed

    with beam_folder_removed(beam.Pipeline()) as pipeline:  # built, never run
        made = pipeline.local_tempdir  # Pipeline.local_tempdir moved, if this fails
        assert os.path.isdir(made)
    assert not os.path.exists(made)


def test_quick_cache_weights_are_beam_s_weights():
    """`quick_cache_weights` (the commands' set-up) weighs a cached value as objsize does for
    Beam (loaded modules' globals left out), also for modules loaded after its last look."""
    import sys
    import types

    import objsize
    import pyarrow as pa
    from apache_beam.runners.worker import statecache

    from beam_tensorize.runners._compat import quick_cache_weights

    def beam_s(*objs):  # what statecache.get_deep_size computes
        return objsize.get_deep_size(
            *objs,
            get_size_func=statecache._size_func,
            get_referents_func=statecache._get_referents_func,
            filter_func=statecache._filter_func,
        )

    quick_cache_weights()
    assert statecache.get_deep_size._cached
    values = [
        ["a", "bb", "ccc" * 100],
        {"genres": pa.array(["Drama", "Comedy"]), "ids": list(range(1000))},
        (len, pa.RecordBatch.from_pydict({"x": [1.5, 2.5]}), {"nested": [b"x" * 5000]}),
    ]
    for value in values:
        assert statecache.get_deep_size(value) == beam_s(value) > 0
    late = types.ModuleType("late_module_for_weights")
    late.big = list(range(100_000))
    sys.modules[late.__name__] = late
    try:
        holder = {"module_globals": vars(late), "own": [1, 2, 3]}
        assert statecache.get_deep_size(holder) == beam_s(holder) < objsize.get_deep_size(late.big)
    finally:
        del sys.modules[late.__name__]


def test_cached_signatures_are_read_again_when_a_function_changes():
    """`cache_signatures` (the commands' set-up) answers from its cache only while what a
    signature comes from is unchanged; bound methods share their function's entry; wrappers
    and other callables are read every time, as Beam reads them."""
    import functools

    from apache_beam.transforms import core
    from apache_beam.typehints import decorators

    from beam_tensorize.runners._compat import cache_signatures

    cache_signatures()
    assert core.get_signature is decorators.get_signature

    def f(a, b=1, *, c=2): ...

    first = core.get_signature(f)
    assert core.get_signature(f) is first
    f.__kwdefaults__ = {"c": 3}
    assert str(core.get_signature(f)) == "(a, b=1, *, c=3)"
    f.__annotations__ = {"a": int}
    assert str(core.get_signature(f)) == "(a: int, b=1, *, c=3)"

    class Fn:
        def process(self, element, side=None): ...

    one, two = Fn(), Fn()
    assert core.get_signature(one.process) is core.get_signature(two.process)
    assert str(core.get_signature(one.process)) == "(element, side=None)"
    assert core.get_function_args_defaults(one.process) == (["element", "side"], [None])

    @functools.wraps(f)
    def wrapper(*args, **kwargs): ...

    assert str(core.get_signature(wrapper)) == "(a: int, b=1, *, c=3)"
    f.__defaults__ = (5,)
    assert str(core.get_signature(wrapper)) == "(a: int, b=5, *, c=3)"
    assert str(core.get_signature(functools.partial(f, 0))) == "(b=5, *, c=3)"


def test_the_commands_fork_their_multi_processing_workers_from_a_zygote(baseline, tmp_path):
    """The command forks a zygote after its imports (`worker_zygote`); its multi_processing
    workers are forked from it and give the same output: no worker starts a Python of its own
    (each Python that imports `site` leaves a file here: only the command's). Where no zygote
    answers, the workers start as before."""
    temp, site = tmp_path / "temp", tmp_path / "site"
    temp.mkdir()
    site.mkdir()
    (site / "sitecustomize.py").write_text(
        "import os\nopen(os.path.join(os.environ['TMPDIR'], f'python-{os.getpid()}'), 'w').close()\n"
    )
    out = tmp_path / "out"
    env = {**os.environ, "TMPDIR": str(temp), "TF_CPP_MIN_LOG_LEVEL": "2", "PYTHONPATH": str(site)}
    env.pop(worker_zygote.ENV, None)
    args = [sys.executable, "-m", "pipelines.tensorize", *JOB, "--output", str(out), "--quiet",
            "--direct_running_mode", "multi_processing", "--direct_num_workers", "2"]  # fmt: skip
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    _assert_same_output(baseline, out)
    assert len(list(temp.glob("python-*"))) == 1  # the command's
    env = {**env, worker_zygote.ENV: "@beam_tensorize-no-such-zygote"}  # none answers: as before
    args[args.index(str(out))] = str(tmp_path / "again")
    done = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    _assert_same_output(baseline, tmp_path / "again")
    assert len(list(temp.glob("python-*"))) == 4  # the command's and its two workers'


_ZYGOTE_PROBE = r"""
import json, logging, os, sys
from beam_tensorize.runners import worker_zygote
from beam_tensorize.runners.direct import direct_runner_for, job_options, start_worker_zygote

probe = logging.StreamHandler(sys.stderr)
probe.probe = True
logging.getLogger().addHandler(probe)
options = job_options(["--direct_running_mode", "multi_processing", "--direct_num_workers", "2"])
started = start_worker_zygote(options)
os.environ["ZYGOTE_PROBE"] = "set after the fork"
import apache_beam as beam

def facts(x):
    import logging, os
    from beam_tensorize.runners import worker_zygote
    print(f"worker saw {x}")  # buffered: written when the worker ends
    inherited = [h for h in logging.getLogger().handlers if getattr(h, "probe", False)]
    return (x, worker_zygote.forked_worker(), os.environ.get("ZYGOTE_PROBE"), len(inherited))

folder = sys.argv[1]

def record(f):  # a file per element
    with open(os.path.join(folder, f"{f[0]}.json"), "w") as out:
        json.dump(f, out)

with beam.Pipeline(runner=direct_runner_for(options), options=options) as p:
    seen = p | beam.Create([1, 2, 3]) | beam.Map(facts)
    seen | beam.Map(record)
print(json.dumps({"started": started, "zygote": worker_zygote.zygote_pid()}))
"""


def _probe(env: dict) -> tuple[dict, list]:
    """The probe's summary line, and the facts each element's worker recorded; every line a
    worker printed reached the probe's standard output."""
    import tempfile

    with tempfile.TemporaryDirectory() as folder:
        done = subprocess.run([sys.executable, "-c", _ZYGOTE_PROBE, folder], env=env, capture_output=True,
                              text=True, timeout=300)  # fmt: skip
        assert done.returncode == 0, done.stderr
        printed = sorted(line for line in done.stdout.splitlines() if line.startswith("worker saw"))
        assert printed == ["worker saw 1", "worker saw 2", "worker saw 3"], done.stdout
        facts = []
        for name in sorted(os.listdir(folder)):
            with open(os.path.join(folder, name)) as f:
                facts.append(json.load(f))
    return json.loads(done.stdout.splitlines()[-1]), sorted(facts)


def test_zygote_workers_get_the_runners_environment_not_the_commands_logging():
    """A forked worker runs with the environment the runner gives it (set after the zygote was
    forked), without the command's logging handlers; the zygote dies with the command."""
    env = {k: v for k, v in os.environ.items() if k != worker_zygote.ENV}
    summary, facts = _probe({**env, "OPENBLAS_NUM_THREADS": "1"})  # numpy starts no thread
    assert summary["started"] is True
    assert facts == [[x, True, "set after the fork", 0] for x in (1, 2, 3)]
    for _ in range(50):
        if not os.path.exists(f"/proc/{summary['zygote']}"):
            break
        time.sleep(0.1)
    assert not os.path.exists(f"/proc/{summary['zygote']}")


def test_without_a_zygote_workers_start_as_before():
    """A zygote already named (or none answering) starts none; a worker whose client finds
    no zygote runs as `subprocess_worker.COMMAND` would."""
    summary, facts = _probe({**os.environ, worker_zygote.ENV: "@beam_tensorize-no-such-zygote"})
    assert summary == {"started": False, "zygote": None}
    assert facts == [[x, False, "set after the fork", 0] for x in (1, 2, 3)]


def test_no_zygote_is_forked_while_other_threads_run():
    """Forking a process with running threads could leave their locks held in the child:
    `start` refuses (this test process would otherwise be forked)."""
    import threading

    stop = threading.Event()
    thread = threading.Thread(target=stop.wait)
    thread.start()
    try:
        assert worker_zygote.start() is False
    finally:
        stop.set()
        thread.join()


def test_a_command_imported_as_a_library_leaves_the_process_as_it_was_and_run_as_one_sets_it_up():
    """`import pipelines.tensorize` (a program using `build_pipeline`) neither freezes the
    program's objects out of the collector's sight nor sets its numpy's threads; its `main`
    (and prep_ranking's) sets them aside while a job runs only, then gives them back; the
    installed `beam-tensorize` command (`pipelines.commands.tensorize`) runs the module as the
    program, which does both."""
    code = (
        "import atexit, gc, os, sys\n"
        "import pipelines.tensorize, pipelines.prep_ranking\n"
        "print(gc.get_freeze_count(), os.environ.get('OPENBLAS_NUM_THREADS'), gc.isenabled())\n"
        "for command in (pipelines.tensorize, pipelines.prep_ranking):\n"
        "    command._main = lambda argv: print('during a job', gc.get_freeze_count() > 0) or 0\n"
        "    command.main([])\n"
        "print('after', gc.get_freeze_count())\n"
        "atexit.register(lambda: print(gc.get_freeze_count() > 0, os.environ.get('OPENBLAS_NUM_THREADS')))\n"
        "sys.argv[1:] = ['--version']\n"
        "from pipelines.commands import tensorize\n"
        "tensorize()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    from beam_tensorize import __version__

    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "0 None True",
        "during a job True",
        "during a job True",
        "after 0",
        f"beam_tensorize {__version__}",
        "True 1",
    ]


def test_a_stage_whose_input_cannot_be_split_runs_on_one_worker_and_the_others_on_all():
    """With several `multi_processing` workers, Beam sends each stage's bundle to every worker,
    its input split element by element: our runner sends a stage of one element (an Impulse, a
    global combine's one key) to one worker only, and still splits a shuffle of four keys
    over both (each worker's process id is counted)."""
    import apache_beam as beam
    from apache_beam.runners.portability.fn_api_runner import fn_runner
    from apache_beam.testing.util import assert_that, equal_to

    from beam_tensorize.runners.direct import direct_runner_for, job_options

    split = []
    parallel = fn_runner.ParallelBundleManager.process_bundle

    def recording(self, *args, **kwargs):
        split.append(self.bundle_context_manager.stage.name)
        return parallel(self, *args, **kwargs)

    options = job_options(["--direct_running_mode", "multi_processing", "--direct_num_workers", "2"])
    fn_runner.ParallelBundleManager.process_bundle = recording
    try:
        with beam.Pipeline(runner=direct_runner_for(options), options=options) as p:
            keyed = p | "One" >> beam.Create([0]) | beam.FlatMap(lambda _: [(k, k) for k in range(4)])
            workers = (
                keyed
                | "Four" >> beam.GroupByKey()
                | beam.Map(lambda _: os.getpid())
                | beam.Distinct()
                | beam.combiners.Count.Globally()
            )
            assert_that(workers, equal_to([2]))
            assert_that(keyed | "Total" >> beam.combiners.Count.Globally(), equal_to([4]), label="total")
    finally:
        fn_runner.ParallelBundleManager.process_bundle = parallel
    # split: the four keys' shuffle, the two process ids' (Distinct), assert_that's Flatten of
    # two elements; not the Impulse of `One`, nor the one-key shuffles of the global counts
    assert any("Four/Read" in name for name in split), split
    many = ("Four/Read", "Distinct/Group/Group/Read", "Flatten/Read")
    assert [name for name in split if not any(m in name for m in many)] == [], split


def test_quick_cache_weights_weigh_a_feature_list_without_walking_its_entries():
    """A side input of feature lists weighs about what objsize finds (within 2%: it counts a
    repeated small count once), and its entries are not walked one by one."""
    import objsize
    from apache_beam.runners.worker import statecache

    from beam_tensorize.kernels.features.feature_list import FeatureList
    from beam_tensorize.runners._compat import quick_cache_weights

    def beam_s(*objs):
        return objsize.get_deep_size(
            *objs,
            get_size_func=statecache._size_func,
            get_referents_func=statecache._get_referents_func,
            filter_func=statecache._filter_func,
        )

    quick_cache_weights()
    entries = tuple(f"user{i}" for i in range(50_000))
    lists = {
        "users": FeatureList(entries, tuple(range(50_000, 0, -1))),
        "genres": FeatureList(("drama", "comedy"), (3, 1), ntv=True, names=(("genreVector", "Genre"),)),
    }
    weight = statecache.get_deep_size(lists)
    assert abs(weight - beam_s(lists)) < 0.02 * beam_s(lists)
    walked = []
    original = statecache._get_referents_func
    try:
        statecache._get_referents_func = lambda *objs: walked.extend(objs) or original(*objs)
        assert statecache.get_deep_size(lists) == weight
    finally:
        statecache._get_referents_func = original
    assert not any(isinstance(obj, str) and obj.startswith("user") for obj in walked)
