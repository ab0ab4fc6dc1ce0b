# SDK worker image with beam_tensorize installed, for --environment_type DOCKER
# (Flink, Spark, Dataflow --sdk_container_image). Build from the repository root:
#   docker build -f docker/worker.Dockerfile -t REGISTRY/beam-tensorize-worker:0.1.0 .
# Keep the Beam version equal to the one the job is submitted with.
FROM apache/beam_python3.11_sdk:2.77.0

COPY setup.py pyproject.toml README.md /opt/beam_tensorize/
COPY beam_tensorize /opt/beam_tensorize/beam_tensorize
COPY pipelines /opt/beam_tensorize/pipelines
RUN pip install --no-cache-dir /opt/beam_tensorize
