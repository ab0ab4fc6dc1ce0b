"""A boot entry point for SDK workers started by Beam's worker pool (`--environment_type EXTERNAL`).

Beam's stock worker pool starts each worker as a bare `python -c ...` with no pipeline
options, so options the workers need (S3 or GCS settings, log levels, experiments) never
arrive, and `python` may not be the interpreter that has this package. Started as the pool's
container executable, this entry point follows the SDK container contract instead: it asks
the runner's provision service for the job's pipeline options and runs the SDK harness with
them, in the interpreter it was installed with (as `subprocess_worker` starts it: its imports
frozen out of the garbage collector's sight).

    python -m apache_beam.runners.worker.worker_pool_main --service_port=50000 \\
        --container_executable="$(command -v beam-tensorize-worker)"
    python -m pipelines.tensorize ... --runner PortableRunner --job_endpoint HOST:8099 \\
        --environment_type EXTERNAL --environment_config localhost:50000

Staged artifacts are not fetched: the package (and whatever the job imports) must be
installed in this interpreter's environment.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Sequence

__all__ = ["main", "worker_environment"]

_LOGGER = logging.getLogger(__name__)


def worker_environment(
    worker_id: str, control_endpoint: str, logging_endpoint: str, provision_endpoint: str
) -> dict[str, str]:
    """Environment variables for `apache_beam.runners.worker.sdk_worker_main`, with the job's
    pipeline options fetched from the provision service."""
    import grpc
    from apache_beam.portability.api import beam_provision_api_pb2, beam_provision_api_pb2_grpc, endpoints_pb2
    from google.protobuf import json_format, text_format

    with grpc.insecure_channel(provision_endpoint) as channel:
        stub = beam_provision_api_pb2_grpc.ProvisionServiceStub(channel)
        info = stub.GetProvisionInfo(
            beam_provision_api_pb2.GetProvisionInfoRequest(), metadata=[("worker_id", worker_id)]
        ).info
    environment = dict(os.environ)
    environment.update(
        {
            "WORKER_ID": worker_id,
            "PIPELINE_OPTIONS": json_format.MessageToJson(info.pipeline_options),
            "CONTROL_API_SERVICE_DESCRIPTOR": text_format.MessageToString(
                endpoints_pb2.ApiServiceDescriptor(url=control_endpoint)
            ),
        }
    )
    if logging_endpoint:
        environment["LOGGING_API_SERVICE_DESCRIPTOR"] = text_format.MessageToString(
            endpoints_pb2.ApiServiceDescriptor(url=logging_endpoint)
        )
    return environment


def main(argv: Sequence[str] | None = None) -> None:
    """Parse the container-contract flags and replace this process by the SDK harness."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--id", required=True)
    parser.add_argument("--control_endpoint", required=True)
    parser.add_argument("--provision_endpoint", required=True)
    parser.add_argument("--logging_endpoint", default="")
    parser.add_argument("--artifact_endpoint", default="")
    parser.add_argument("--semi_persist_dir", default="")
    args, _ = parser.parse_known_args(argv)
    environment = worker_environment(
        args.id, args.control_endpoint, args.logging_endpoint, args.provision_endpoint
    )
    if args.semi_persist_dir:
        environment["SEMI_PERSISTENT_DIRECTORY"] = args.semi_persist_dir
    command = [sys.executable, "-m", "beam_tensorize.runners.subprocess_worker"]  # Beam's SDK harness
    os.execve(sys.executable, command, environment)


if __name__ == "__main__":
    main()
