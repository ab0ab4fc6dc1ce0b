"""Packaging for beam_tensorize."""

from setuptools import Extension, find_packages, setup

INSTALL_REQUIRES = [
    "apache-beam[gcp]>=2.60,<3",
    "tensorflow>=2.16,<3",
    "tfx-bsl>=1.16,<2",
    "fastavro>=1.9",
    "pyarrow>=14",
    "numpy>=1.24",
    "sqlglot>=25",
    "pyfarmhash>=0.3",
    "google-crc32c>=1.5",
    "pyyaml>=6",
    "pyhocon>=0.3.60",
    "cramjam>=2.7",
    "isal>=1.6",
    "deflate>=0.7",
]

EXTRAS_REQUIRE = {
    # build: Beam packages the project with `python -m build` for --setup_file (tested offline).
    # moto + Beam's AWS extra: the S3 tests run against a local moto S3 server.
    "test": [
        "pytest>=8",
        "pytest-xdist>=3",
        "hypothesis>=6",
        "ruff>=0.6",
        "pyspark>=4.0",
        "build>=1.0",
        "moto[server]>=5",
        "gcp-storage-emulator>=2024.8",
        "apache-beam[aws]>=2.60,<3",
        # The report page's browser test drives Debian's chromium over the DevTools protocol.
        "websockets>=12",
        # TF Transform analyses an output with its metadata/schema.pbtxt (tests/kernels/test_tfmd_schema.py).
        "tensorflow-transform>=1.21",
    ],
    "aws": ["apache-beam[aws]>=2.60,<3"],
    "spark": ["pyspark>=4.0"],
}

setup(
    name="beam_tensorize",
    version="0.1.0",
    description=(
        "Apache Beam transforms that turn Avro data into tf.train.Example TFRecords "
        "plus tensor metadata, driven by an Avro2TF-compatible config."
    ),
    long_description=open("README.md", encoding="utf-8").read(),
    long_description_content_type="text/markdown",
    python_requires=">=3.10",
    packages=find_packages(include=["beam_tensorize", "beam_tensorize.*", "pipelines"]),
    package_data={"beam_tensorize": ["py.typed", "sample/*", "kernels/features/stopwords/*"]},
    install_requires=INSTALL_REQUIRES,
    extras_require=EXTRAS_REQUIRE,
    entry_points={
        "console_scripts": [
            "beam-tensorize=pipelines.commands:tensorize",
            "beam-tensorize-worker=beam_tensorize.runners.worker_boot:main",
        ]
    },
    # Optional native Avro decoder: without a C compiler the package still installs and reads
    # Avro with fastavro (see beam_tensorize/kernels/avro/native.py).
    ext_modules=[
        Extension(
            "beam_tensorize.kernels.avro._avrodecode",
            ["beam_tensorize/kernels/avro/_avrodecode.c"],
            optional=True,
        ),
        # Optional native Example encoder and TFRecord framing (fallback: numpy / pyarrow, see
        # beam_tensorize/kernels/tfrecord/framing.py).
        Extension(
            "beam_tensorize.kernels.tfrecord._tfrecordencode",
            ["beam_tensorize/kernels/tfrecord/_tfrecordencode.c"],
            optional=True,
        ),
        # Optional: the sparse indices of list columns for Dataset.from_parquet (fallback: numpy,
        # see beam_tensorize/tf/_chunks.py).
        Extension("beam_tensorize.tf._sparseindex", ["beam_tensorize/tf/_sparseindex.c"], optional=True),
        # Optional: one pass per batch for the run report's numeric sketches (fallback: numpy, see
        # beam_tensorize/kernels/report/sketches.py).
        Extension(
            "beam_tensorize.kernels.report._sketch",
            ["beam_tensorize/kernels/report/_sketch.c"],
            optional=True,
        ),
        # Optional: FarmHash Fingerprint64 and SipHash-2-4 of a batch's values in one loop
        # (fallback: pyfarmhash and numpy, see beam_tensorize/kernels/features/hash_functions.py).
        Extension(
            "beam_tensorize.kernels.features._hashes",
            ["beam_tensorize/kernels/features/_hashes.c"],
            optional=True,
        ),
    ],
)
