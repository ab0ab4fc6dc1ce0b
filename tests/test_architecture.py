"""The layers of docs/architecture.md, checked on the source: each imports only the ones below."""

from __future__ import annotations

import ast
import pathlib

import pytest

PACKAGE = pathlib.Path(__file__).resolve().parent.parent / "beam_tensorize"

#: Every top-level package or module of beam_tensorize (`serving` is `serving.py`) -> the
#: project packages it must not import (at all: also inside functions, but for imports only
#: type checkers see), and whether it may import Apache Beam's pipeline API (the job layer uses
#: only Beam's file systems).
_EVERYTHING = {"config", "kernels", "job", "io", "transforms", "spark", "tf", "runners", "report", "serving",
               "progress", "metrics", "sample"}  # fmt: skip
RULES = {
    "config": (_EVERYTHING - {"config"}, False),
    "kernels": (
        {"job", "io", "transforms", "spark", "tf", "runners", "report", "serving", "progress"},
        False,
    ),
    "job": ({"io", "transforms", "spark", "tf", "runners", "report", "serving"}, False),
    "io": ({"transforms", "spark", "tf", "report", "serving"}, True),
    "transforms": ({"spark", "tf", "report", "serving"}, True),
    "spark": ({"io", "transforms", "tf", "report", "serving"}, False),
    # TensorFlow readers and serving ops: no Beam; built from a `serving.Preprocessor` they are
    # handed, which imports them (not the reverse)
    "tf": ({"io", "transforms", "spark", "runners", "report", "serving", "progress"}, False),
    # the Python serving path: kernels and the output's files; its TensorFlow form from `tf`
    "serving": ({"io", "transforms", "spark", "runners", "report", "progress"}, False),
    # the run report's public face: the job's files and the Beam statistics step
    "report": ({"spark", "tf", "serving", "runners", "progress"}, True),
    # runner set-up: Beam's own APIs only
    "runners": (_EVERYTHING - {"runners"}, True),
    # leaves: the progress files, the counter names, the bundled sample
    "progress": (_EVERYTHING - {"progress"}, False),
    "metrics": (_EVERYTHING - {"metrics"}, False),
    "sample": (_EVERYTHING - {"sample"}, False),
}
#: The only parts of Apache Beam a Beam-free layer may use: its file systems.
BEAM_FILE_SYSTEMS = ("apache_beam.io.filesystem", "apache_beam.io.filesystems", "apache_beam.io.aws")


def _type_checking_only(tree: ast.AST) -> set[int]:
    """The ids of the import nodes under `if TYPE_CHECKING:` (no import at run time)."""
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) in ("TYPE_CHECKING", "typing.TYPE_CHECKING"):
            found.update(id(child) for stmt in node.body for child in ast.walk(stmt))
    return found


def _imports(path: pathlib.Path) -> list[str]:
    """The modules `path` imports when it runs (at its top or in its functions)."""
    names = []
    tree = ast.parse(path.read_text())
    skipped = _type_checking_only(tree)
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            names += [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def _modules(layer: str) -> list[pathlib.Path]:
    if (PACKAGE / f"{layer}.py").is_file():
        return [PACKAGE / f"{layer}.py"]
    return sorted((PACKAGE / layer).rglob("*.py"))


def test_every_package_and_module_has_a_rule():
    found = {
        p.stem
        for p in PACKAGE.iterdir()
        if (p.is_dir() and (p / "__init__.py").exists()) or p.suffix == ".py"
    }
    assert found - {"__init__"} == set(RULES) == _EVERYTHING


def test_no_two_packages_import_each_other():
    """At run time (type-checking imports aside): a circle would make the rules above a lie."""
    uses = {layer: set() for layer in RULES}
    for layer in RULES:
        for path in _modules(layer):
            for name in _imports(path):
                parts = name.split(".")
                if (
                    parts[0] == "beam_tensorize"
                    and len(parts) > 1
                    and parts[1] in RULES
                    and parts[1] != layer
                ):
                    uses[layer].add(parts[1])
    assert sorted((a, b) for a in uses for b in uses[a] if a in uses[b]) == []


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


#: Exception classes that are not errors a user sees, and why.
_INTERNAL_SIGNALS = {"TooDeep": "the native Avro decoder's signal to decode that block with fastavro instead"}


def test_every_public_error_derives_from_tensorize_error():
    """`except beam_tensorize.TensorizeError` catches every error the library raises for bad
    input, settings or output (each keeps its built-in base too)."""
    problems = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if (
                not isinstance(node, ast.ClassDef)
                or node.name.startswith("_")
                or node.name in _INTERNAL_SIGNALS
                or node.name == "TensorizeError"  # the base itself
            ):
                continue
            bases = [ast.unparse(b) for b in node.bases]
            if (
                any(b.endswith(("Error", "Exception", "Conflict")) for b in bases)
                and "TensorizeError" not in bases
            ):
                problems.append(f"{path.relative_to(PACKAGE)}: {node.name}({', '.join(bases)})")
    assert problems == []


def test_the_names_the_readme_uses_are_exported_at_the_top():
    import beam_tensorize
    from beam_tensorize.config.errors import TensorizeError
    from beam_tensorize.serving import Preprocessor, ServingError

    assert beam_tensorize.TensorizeError is TensorizeError and issubclass(ServingError, TensorizeError)
    assert beam_tensorize.Preprocessor is Preprocessor
    names = ["WriteAvro", "DeduplicateFeatures", "PrepRankingData", "WriteTFRecord", "Tensorize"]
    assert all(callable(getattr(beam_tensorize, name)) for name in names)
    assert set(names) <= set(beam_tensorize.__all__)
