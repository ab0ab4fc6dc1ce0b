"""The flex template's metadata and the CLI options never drift apart."""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess

import pytest

from pipelines.tensorize import TensorizeOptions

TEMPLATES = os.path.join(os.path.dirname(__file__), "..", "..", "templates")


@pytest.fixture(scope="module")
def metadata():
    with open(os.path.join(TEMPLATES, "metadata.json")) as f:
        return json.load(f)


@pytest.fixture(scope="module")
def cli_options():
    parser = argparse.ArgumentParser()
    TensorizeOptions._add_argparse_args(parser)
    # --version prints and exits: no job parameter
    return {a.dest: a for a in parser._actions if a.option_strings and a.dest not in ("help", "version")}


def test_every_cli_flag_is_a_parameter_and_back(metadata, cli_options):
    names = [p["name"] for p in metadata["parameters"]]
    assert sorted(names) == sorted(cli_options)
    assert len(names) == len(set(names))


def test_parameters_mean_the_same_as_the_flags(metadata, cli_options):
    for param in metadata["parameters"]:
        action = cli_options[param["name"]]
        assert param["helpText"] == " ".join(action.help.split()), param["name"]
        assert param["label"]
        assert param["isOptional"] == (param["name"] not in ("input", "config", "output"))
        if action.choices:
            assert param["regexes"] == ["^(" + "|".join(map(str, action.choices)) + ")$"], param["name"]


@pytest.mark.parametrize(
    ("name", "good", "bad"),
    [
        ("num_shards", "16", "0"),
        ("max_bad_records_ratio", "0.05", "1.5"),
        ("filter_zeros", "true", "yes please"),
        ("execution_mode", "test", "predict"),
        ("output", "gs://bucket/out", "/local/out"),
    ],
)
def test_validation_regexes(metadata, name, good, bad):
    (param,) = [p for p in metadata["parameters"] if p["name"] == name]
    assert all(re.fullmatch(r, good) for r in param["regexes"])
    assert not all(re.fullmatch(r, bad) for r in param["regexes"])


def test_template_values_parse_as_cli_flags(cli_options):
    from apache_beam.options.pipeline_options import PipelineOptions

    options = PipelineOptions(["--filter_zeros=true", "--num_shards=16", "--execution_mode=test"]).view_as(
        TensorizeOptions
    )
    assert (options.filter_zeros, options.num_shards, options.execution_mode) == (True, 16, "test")
    assert PipelineOptions(["--filter_zeros"]).view_as(TensorizeOptions).filter_zeros is True


def test_build_script_prints_the_gcloud_commands():
    script = os.path.join(TEMPLATES, "flex_template.sh")
    out = subprocess.run(
        ["bash", script, "build", "proj", "us-central1", "bucket", "img:1"],
        env=dict(os.environ, DRY_RUN="1"),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "docker build -f templates/Dockerfile -t img:1 ." in out
    assert (
        "gcloud dataflow flex-template build gs://bucket/templates/beam_tensorize.json --image img:1 --sdk-language PYTHON --metadata-file templates/metadata.json"
        in out
    )
    out = subprocess.run(
        [
            "bash",
            script,
            "run",
            "proj",
            "us-central1",
            "bucket",
            "gs://b/in/*.avro",
            "gs://b/c.json",
            "gs://b/out",
        ],
        env=dict(os.environ, DRY_RUN="1"),
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert (
        "--parameters input=gs://b/in/\\*.avro --parameters config=gs://b/c.json --parameters output=gs://b/out"
        in out
    )


def test_a_failed_install_fails_the_image_build():
    """`pip install . && pip check || true` let a failed install build an image anyway."""
    text = open(os.path.join(os.path.dirname(__file__), "..", "..", "templates", "Dockerfile")).read()
    runs = [line for line in text.splitlines() if line.startswith("RUN ")]
    install = next(line for line in runs if "pip install" in line)
    assert install == "RUN pip install --no-cache-dir ." and "||" not in install
    assert "RUN pip check || echo" in text
