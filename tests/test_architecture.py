"""The layers of docs/architecture.md, checked on the source: each imports only the ones below."""

from __future__ import annotations

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "beam_tensorize"

#: Layer -> project packages it must not import (and whether it may import Apache Beam's
#: pipeline API; the job layer uses only Beam's file systems).
RULES = {
    "config": ({"kernels", "job", "io", "transforms", "spark", "tf", "runners"}, False),
    "kernels": ({"job", "io", "transforms", "spark", "tf", "runners"}, False),
    "job": ({"io", "transforms", "spark", "tf", "runners"}, False),
    "io": ({"transforms", "spark", "tf"}, True),
    "transforms": ({"spark", "tf"}, True),
    "spark": ({"io", "transforms", "tf"}, False),
}
#: The only parts of Apache Beam a Beam-free layer may use: its file systems.
BEAM_FILE_SYSTEMS = ("apache_beam.io.filesystem", "apache_beam.io.filesystems", "apache_beam.io.aws")


def _imports(path: pathlib.Path) -> list[str]:
    names = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def _modules(layer: str) -> list[pathlib.Path]:
    return sorted((PACKAGE / layer).rglob("*.py"))


@pytest.mark.parametrize("layer", sorted(RULES))
def test_each_layer_imports_only_the_layers_below(layer):
    forbidden, beam_allowed = RULES[layer]
    problems = []
    for path in _modules(layer):
        for name in _imports(path):
            parts = name.split(".")
            if parts[0] == "beam_tensorize" and len(parts) > 1 and parts[1] in forbidden:
                problems.append(f"{path.relative_to(PACKAGE)} imports {name}")
            if parts[0] == "apache_beam" and not beam_allowed and not name.startswith(BEAM_FILE_SYSTEMS):
                problems.append(f"{path.relative_to(PACKAGE)} imports {name}")
    assert problems == []


def test_every_kernel_and_job_module_declares_its_public_names():
    missing = [
        str(path.relative_to(PACKAGE))
        for layer in ("kernels", "job")
        for path in _modules(layer)
        if path.name != "__init__.py" and "__all__" not in path.read_text()
    ]
    assert missing == []
