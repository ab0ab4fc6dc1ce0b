"""Every fenced code block of README.md and docs/*.md, checked against the package (as doctests
are checked against their docstrings), so that a page cannot drift from the code.

`doc_blocks()` extracts the blocks; `REGISTRY` says, for each block (its page and its first
line), how it is checked:

* run: executed as written in a fresh temporary folder, then its results asserted. `python`
  blocks run with `exec` (a fragment gets a prelude, taken from an earlier block of the page
  where one defines what it uses); the commands of `bash` / `sh` blocks run in-process through
  the commands' `main`. A block that reads `tensorize_output` finds the output of the README
  Quick start's command (run once for the module, `quick_start`).
* checked: a block that cannot run here (it needs a cloud project, a cluster or an install),
  or that is not code (JSON, printed output, a folder layout), checked as far as it can be
  without running: its flags parse as the command parses them, its JSON keys and values are
  those of the real metadata or config, its output is the real output with times masked, the
  paths it shows exist in a real output.
* delegated: another test runs the block as written; the entry names it and it must exist.

A block missing from the registry, or without a language tag, fails `test_doc_block`; an
entry whose block is gone fails `test_every_registry_entry_names_a_block`.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import glob
import inspect
import io
import json
import os
import re
import shlex
import shutil
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG

ROOT = Path(__file__).resolve().parents[2]
PAGES = ["README.md", *sorted(f"docs/{p.name}" for p in (ROOT / "docs").glob("*.md"))]
LANGUAGES = ("bash", "sh", "python", "json", "text")
#: Pages whose untagged blocks count as `text` until they are tagged.
UNTAGGED_AS_TEXT = ("docs/report.md",)
#: The first line of the README Quick start's block (its first command makes `tensorize_output`).
QUICK_START = "# 1. Install, then tensorize the bundled MovieLens sample (no flags needed):"
#: The tensorize command, as its flag errors name it.
TENSORIZE = "python -m pipelines.tensorize"


# --- the blocks ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Block:
    """One fenced block: its page, the line of its opening fence, its language tag ('' when
    untagged), its text, and the page's text after the closing fence."""

    page: str
    line: int
    lang: str
    text: str
    after: str = dataclasses.field(repr=False, default="")

    @property
    def anchor(self) -> str:
        """The block's first non-blank line, stripped: with the page, its key in `REGISTRY`."""
        return next((line.strip() for line in self.text.splitlines() if line.strip()), "")

    @property
    def key(self) -> tuple[str, str]:
        return (self.page, self.anchor)

    @property
    def language(self) -> str:
        return self.lang or ("text" if self.page in UNTAGGED_AS_TEXT else "")

    def __str__(self) -> str:
        return f"{self.page}:{self.line}"


def doc_blocks() -> list[Block]:
    """Every fenced block of README.md and docs/*.md, in page order."""
    found = []
    for page in PAGES:
        lines = (ROOT / page).read_text(encoding="utf-8").splitlines()
        i = 0
        while i < len(lines):
            opening = re.match(r"^(`{3,})\s*(\S*)\s*$", lines[i])
            if opening:
                fence, start = opening.group(1), i
                i += 1
                while i < len(lines) and lines[i].strip() != fence:
                    i += 1
                assert i < len(lines), f"{page}:{start + 1}: the block is not closed"
                text = "\n".join(lines[start + 1 : i]) + "\n"
                after = "\n".join(lines[i + 1 :])
                found.append(Block(page, start + 1, opening.group(2), text, after))
            i += 1
    return found


def find_block(page: str, anchor: str) -> Block:
    (block,) = [b for b in doc_blocks() if b.key == (page, anchor)]
    return block


def earlier_python(block: Block) -> list[Block]:
    """The python blocks of the block's page before it, nearest first."""
    return [
        b
        for b in reversed(doc_blocks())
        if b.page == block.page and b.lang == "python" and b.line < block.line
    ]


def import_lines(block: Block) -> str:
    """The block's top-level import statements."""
    return "".join(line + "\n" for line in block.text.splitlines() if re.match(r"(import|from) \w", line))


# --- running blocks ------------------------------------------------------------------------


@contextlib.contextmanager
def working_folder(folder: Path):
    old = os.getcwd()
    os.chdir(folder)
    try:
        yield folder
    finally:
        os.chdir(old)


def run_python(block: Block, namespace: dict | None = None, code: str | None = None, prelude: str = ""):
    """Execute a python block (or `code`, the block changed as its entry says) in `namespace`,
    after `prelude`; returns the namespace and the value of its last statement when that is an
    expression (what a REPL would show)."""
    namespace = {"__name__": "__doc__"} if namespace is None else namespace
    if prelude:
        exec(compile(prelude, f"{block} (prelude)", "exec"), namespace)
    tree = ast.parse(block.text if code is None else code, str(block))
    ast.increment_lineno(tree, block.line)  # tracebacks name the page's lines
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    exec(compile(tree, block.page, "exec"), namespace)
    value = None
    if last is not None:
        value = eval(compile(ast.Expression(last.value), block.page, "eval"), namespace)
    return namespace, value


_WORD = re.compile(r"""(?:[^\s'"]+|'[^']*'|"[^"]*")+""")


def shell_commands(text: str) -> list[list[str]]:
    """The commands of a shell block as bash runs them: backslash continuations joined,
    comments dropped, `&&` lists split, unquoted globs expanded in the current folder (kept as
    they are when nothing matches, as bash does)."""
    commands = []
    for line in text.replace("\\\n", " ").splitlines():
        words: list[str] = []
        for raw in _WORD.findall(line):
            if raw.startswith("#"):
                break
            if raw == "&&":
                commands.append(words)
                words = []
                continue
            (value,) = shlex.split(raw)
            unquoted = re.sub(r"""'[^']*'|"[^"]*\"""", "", raw)
            if re.search(r"[*?[]", unquoted):
                words.extend(sorted(glob.glob(value)) or [value])
            else:
                words.append(value)
        if words:
            commands.append(words)
    return commands


def python_module(words: list[str]) -> tuple[str, list[str]] | None:
    """(module, arguments) of `python -m <module> ...` (python, python3 or .venv/bin/python)."""
    if len(words) > 2 and re.fullmatch(r"(\.venv/bin/)?python3?", words[0]) and words[1] == "-m":
        return words[2], words[3:]
    return None


def filled(args: list[str], job: list[str]) -> list[str]:
    """`args` with the placeholder `...` (the job's own flags) replaced by `job`."""
    return [word for arg in args for word in (job if arg == "..." else [arg])]


def flag_values(args: list[str]) -> list[tuple[str, str | None]]:
    """(name, value) of each `--name value` / `--name=value` (`--name` alone: None)."""
    pairs = []
    for i, arg in enumerate(args):
        if arg.startswith("--"):
            name, eq, value = arg[2:].partition("=")
            if not eq:
                following = args[i + 1] if i + 1 < len(args) else None
                value = following if following is not None and not following.startswith("--") else None
            pairs.append((name, value))
    return pairs


def parse_tensorize_flags(args: list[str], resolve: bool = True):
    """What `pipelines.tensorize.main` does with `args` before it runs anything: Avro2TF's flag
    names translated, our flags parsed, every other flag one Beam knows (each with the value
    given), and, with `resolve`, the job's settings resolved (the config loaded). Returns the
    settings (or None) and the Beam options."""
    from apache_beam.options.pipeline_options import PipelineOptions

    from pipelines import avro2tf_flags
    from pipelines.arguments import refuse_unknown_arguments
    from pipelines.tensorize import TensorizeOptions, _check_our_flags, _resolve

    argv, _ = avro2tf_flags.translate(list(args))
    ours = vars(_check_our_flags(argv))
    refuse_unknown_arguments(argv, TENSORIZE)
    options = PipelineOptions(argv)
    beams = options.get_all_options(drop_default=False)
    for name, value in flag_values(argv):
        if name not in ours and value is not None:
            assert str(beams[name]) == value, f"--{name} {value}: Beam reads {beams[name]!r}"
    spec = _resolve(options.view_as(TensorizeOptions)) if resolve else None
    return spec, options


def run_tensorize(args: list[str], capsys) -> tuple[int, str, str]:
    """`python -m pipelines.tensorize <args>` in-process: exit code, stdout, stderr."""
    from pipelines.tensorize import main

    capsys.readouterr()
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def extras() -> dict[str, list[str]]:
    """setup.py's `EXTRAS_REQUIRE`, read without running setup()."""
    tree = ast.parse((ROOT / "setup.py").read_text())
    (node,) = [n for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "EXTRAS_REQUIRE"]
    return ast.literal_eval(node.value)


def check_installable(target: str) -> None:
    """`pip install -e <target>` from the repository root: the project, with extras that exist."""
    found = re.fullmatch(r"\.(?:\[([\w,]+)\])?", target)
    assert found, f"pip install -e {target}: expected . or .[extra]"
    assert (ROOT / "setup.py").exists()
    for extra in (found.group(1) or "").split(","):
        assert not extra or extra in extras(), f"setup.py has no extra {extra!r}"


def delegated(test: str, *shows: str) -> None:
    """`test` (path::function) exists and its source holds each of `shows` (the doc it reads,
    the text it asserts): the block is run there."""
    path, name = test.split("::")
    source = (ROOT / path).read_text(encoding="utf-8")
    functions = [n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.FunctionDef) and n.name == name]
    assert functions, f"{test} is gone: the block it ran is unchecked"
    body = ast.get_source_segment(source, functions[0])
    for text in shows:
        assert text in body, f"{test} no longer holds {text!r}"


def sample_records() -> list[dict]:
    import fastavro

    with open(SAMPLE_AVRO, "rb") as f:
        return list(fastavro.reader(f))


def sample_batches():
    """The sample's input rows as Arrow record batches, read by the package's Avro format."""
    from beam_tensorize.kernels.formats import DEFAULT_SPLIT_BYTES, plan_file

    fmt, splits = plan_file(lambda p: open(p, "rb"), SAMPLE_AVRO, os.path.getsize(SAMPLE_AVRO), None,
                            DEFAULT_SPLIT_BYTES)  # fmt: skip
    with open(SAMPLE_AVRO, "rb") as f:
        return [b for split in splits for b in fmt.read_split(f, split)]


def write_sample_parquet(path: Path) -> None:
    """The sample's rows as one Parquet file."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    batches = sample_batches()
    pq.write_table(pa.Table.from_batches(batches).replace_schema_metadata(None), path)


def records(folder: Path, split: str = "trainingData") -> list[bytes]:
    """The records of a TFRecord output's split, file after file."""
    import tensorflow as tf

    files = sorted(str(p) for p in (folder / split).rglob("part-*"))
    compression = "GZIP" if files and files[0].endswith(".gz") else ""
    return list(tf.data.TFRecordDataset(files, compression_type=compression).as_numpy_iterator())


def metadata(output: Path) -> dict:
    return json.loads((output / "metadata" / "tensor_metadata.json").read_text())


def all_keys(document) -> set[str]:
    """Every key of a JSON document, at any depth."""
    if isinstance(document, dict):
        return set(document).union(*(all_keys(v) for v in document.values()))
    if isinstance(document, list):
        return set().union(*(all_keys(v) for v in document))
    return set()


def values_of(document, key: str) -> list:
    """Every value of `key` in a JSON document, at any depth."""
    found = []
    if isinstance(document, dict):
        found += [document[key]] if key in document else []
        for value in document.values():
            found += values_of(value, key)
    elif isinstance(document, list):
        for value in document:
            found += values_of(value, key)
    return found


def check_json_shown(text: str, real: dict) -> None:
    """Each `"key": value` of a JSON illustration (comments and placeholders allowed): the key
    is one of the real document's, and a literal value (a number, a string that is no
    `<placeholder>`, true, false, null) is the value of that key somewhere in it."""
    keys = all_keys(real)
    text = re.sub(r"//.*", "", text)
    for key in re.findall(r'"(\w+)"\s*:', text):
        assert key in keys, f"{key!r} is not a key of the real document: renamed or gone?"
    for key, literal in re.findall(
        r'"(\w+)"\s*:\s*("[^"<.]*"|-?\d[\d.]*|true|false|null)(?=\s*[,}\n])', text
    ):
        value = json.loads(literal)
        assert value in values_of(real, key), (
            f'"{key}": {literal} is not what the run writes: {values_of(real, key)}'
        )


def arrow_expression(block: Block) -> str:
    """The `tf.io` feature the page gives after a parse entry block (a line `→ <code>`)."""
    found = re.match(r"\s*→ `([^`]+)`", block.after)
    assert found, f"{block}: expected '→ `tf.io....`' after the block"
    return found.group(1)


def tf_feature(parse: dict):
    """The `tf.io` feature `beam_tensorize.tf.parse_spec` makes of a metadata `parse` entry."""
    from beam_tensorize.tf import parse_spec

    return parse_spec({"features": [{"name": "x", "parse": parse}], "labels": []})["x"]


def eval_tf(expression: str):
    """A `tf.io` feature as the page writes it (`RowLengths` for `tf.io.RaggedFeature.RowLengths`)."""
    import tensorflow as tf

    names = {
        "tf": tf,
        "RowLengths": tf.io.RaggedFeature.RowLengths,
        "UniformRowLength": tf.io.RaggedFeature.UniformRowLength,
    }
    return eval(expression, names)


_COLLECTED: dict[str, list] = {}


def collect(value, key: str) -> None:
    """A Beam step's elements, kept here (the in-process runner imports this module by name)."""
    _COLLECTED.setdefault(key, []).append(value)


# --- shared runs ---------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class QuickStart:
    folder: Path
    args: list[str]
    code: int
    out: str

    @property
    def output(self) -> Path:
        return self.folder / "tensorize_output"


@pytest.fixture(scope="module")
def quick_start(tmp_path_factory) -> QuickStart:
    """The README Quick start's first command (`.venv/bin/python -m pipelines.tensorize`, as the
    block gives it), run in-process in a fresh folder, with what it printed."""
    from pipelines.tensorize import main

    folder = tmp_path_factory.mktemp("quick_start")
    with working_folder(folder):
        commands = [python_module(c) for c in shell_commands(find_block("README.md", QUICK_START).text)]
        (args,) = [c[1] for c in commands if c and c[0] == "pipelines.tensorize"]
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            code = main(args)
    return QuickStart(folder, args, code, printed.getvalue())


@dataclasses.dataclass
class Doc:
    """The block being checked, with its fresh working folder (the current directory)."""

    block: Block
    folder: Path
    request: pytest.FixtureRequest
    monkeypatch: pytest.MonkeyPatch

    def fixture(self, name: str):
        return self.request.getfixturevalue(name)

    @property
    def capsys(self):
        return self.fixture("capsys")

    def sample_output(self) -> Path:
        """The Quick start's `tensorize_output`, copied here."""
        quick_start = self.fixture("quick_start")
        assert quick_start.code == 0
        return Path(shutil.copytree(quick_start.output, self.folder / "tensorize_output"))

    def data(self, *names: str) -> None:
        """The sample Avro file, copied to each of `names`."""
        for name in names:
            (self.folder / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(SAMPLE_AVRO, self.folder / name)

    def config(self, name: str = "config.json") -> None:
        """The sample config (the CLI's default), copied to `name`."""
        (self.folder / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(SAMPLE_CONFIG, self.folder / name)

    def absolute(self, code: str, *literals: str) -> str:
        """`code` with the quoted relative paths `literals` made absolute in this folder: Spark's
        Python workers resolve relative paths in the folder Spark was started in."""
        for literal in literals:
            assert f'"{literal}' in code, literal
            code = code.replace(f'"{literal}', f'"{self.folder}/{literal}')
        return code


# --- README.md -----------------------------------------------------------------------------


def readme_quick_start(doc: Doc) -> None:
    quick_start = doc.fixture("quick_start")
    seen = []
    for words in shell_commands(doc.block.text):
        module = python_module(words)
        if module == ("venv", [".venv"]):
            seen.append("venv")  # the environment this suite runs in
        elif words[:3] == [".venv/bin/pip", "install", "-e"] and len(words) == 4:
            check_installable(words[3])
            seen.append(f"install {words[3]}")
        elif module and module[0] == "pipelines.tensorize":
            assert module[1] == quick_start.args and quick_start.code == 0
            seen.append("tensorize")
        elif module == ("pytest", []):
            seen.append("pytest")  # the suite running this test
        else:
            seen.append(f"unexpected: {words}")
    assert seen == ["venv", "install .", "tensorize", "venv", "install .[test]", "pytest"], seen
    assert (quick_start.output / "_SUCCESS").exists()
    assert len(records(quick_start.output)) == 300


def _masked_summary(text: str) -> str:
    return re.sub(r"(time: +)[\d.]+ s \([\d,]+ rows/s read\)", r"\1<seconds> s (<rate> rows/s read)", text)


def readme_summary(doc: Doc) -> None:
    printed = doc.fixture("quick_start").out
    assert _masked_summary(printed) == _masked_summary(doc.block.text)


def readme_dataflow(doc: Doc) -> None:
    (words,) = shell_commands(doc.block.text)
    module, args = python_module(words)
    assert module == "pipelines.tensorize"
    doc.config()  # --config config.json: the sample's
    parse_tensorize_flags(args)
    doc.monkeypatch.setenv("NO_GCE_CHECK", "true")  # no metadata server lookup
    code, out, err = run_tensorize([*args, "--dry_run=True"], doc.capsys)
    assert code == 0, err
    assert "Dry run: the job graph was built and translated for DataflowRunner; nothing ran." in out


def readme_config_entry(doc: Doc) -> None:
    from beam_tensorize.config import parse_config

    entry = json.loads(doc.block.text)
    assert entry in json.loads(Path(SAMPLE_CONFIG).read_text())["features"]  # the sample's `genres`
    (tensor,) = parse_config({"features": [entry]}).tensors
    assert (tensor.name, tensor.output.dtype, tensor.output.shape) == ("genres", "string", (-1,))


def readme_layout(doc: Doc) -> None:
    """Every path of the layout exists in the Quick start's output, but for the one written
    only with a flag (its folder name is checked against the code)."""
    from beam_tensorize.job.feature_lists import TERM_ONLY_FOLDER

    output = doc.fixture("quick_start").output
    lines = doc.block.text.splitlines()
    assert lines[0] == "<output>/"
    checked = 0
    for line in lines[1:]:
        if not re.match(r"  \S", line):
            continue  # a continued comment
        shown = re.split(r"\s{2,}\(", line.strip())[0]
        for path in shown.split(", "):
            pattern = re.sub(r"\[[^]]*\]$", "", path).replace("<tensor>", "*")
            pattern = re.sub(r"part-\d+-of-\d+", "part-*-of-*", pattern)
            if "--term_only_feature_lists" in line:
                assert pattern.split("/")[0] == TERM_ONLY_FOLDER
                continue
            assert glob.glob(str(output / pattern)), f"{path}: not in the output of the sample run"
            checked += 1
    assert checked == 11


def readme_make_dataset(doc: Doc) -> None:
    output = doc.sample_output()
    namespace, _ = run_python(doc.block)
    features, labels = namespace["features"], namespace["labels"]
    written = metadata(output)
    assert sorted(features) == sorted(t["name"] for t in written["features"])
    assert sorted(labels) == [t["name"] for t in written["labels"]] == ["response"]
    assert features["movieId"].shape[0] == 300 % 32  # the last batch: every record was read


def readme_tfx(doc: Doc) -> None:
    import tensorflow as tf

    doc.sample_output()
    namespace, _ = run_python(doc.block)
    batch = namespace["batch"]
    assert isinstance(batch["genres"], tf.RaggedTensor) and isinstance(batch["genreVector"], tf.SparseTensor)
    assert batch["movieId"].shape == [32]


def without_labels(record: bytes, labels: list[str]) -> bytes:
    import tensorflow as tf

    example = tf.train.Example.FromString(record)
    for name in labels:
        del example.features.feature[name]
    return example.SerializeToString(deterministic=True)


def readme_serving(doc: Doc) -> None:
    from beam_tensorize.serving import Preprocessor

    output = doc.sample_output()
    given = sample_records()[:3]
    namespace, _ = run_python(doc.block, {"records": given})  # prelude: `records`, sample rows
    written = records(output)[:3]
    # The commented line: with the labels, the bytes the job wrote.
    assert Preprocessor.from_output("tensorize_output").serialize(given) == written
    assert namespace["pre"].serialize(given) == [without_labels(r, ["response"]) for r in written]
    assert (doc.folder / "preprocessing_model" / "saved_model.pb").exists()


def readme_beam_job(doc: Doc) -> None:
    """`data/*.parquet`: the sample's rows as Parquet; `config.json`: the sample's config."""
    write_sample_parquet(doc.folder / "data" / "part-0.parquet")
    doc.config()
    run_python(doc.block)
    out = doc.folder / "out"
    assert metadata(out)["data"]["trainingData"]["numRecords"] == 300
    # Byte-identical output whatever the input format (README, "Inputs and outputs").
    assert records(out) == records(doc.fixture("quick_start").output)


def tfrecord_batch_prelude() -> str:
    """docs/tfrecord.md's `batch` (with its import), which the README's block writes too."""
    block = find_block("docs/tfrecord.md", "import apache_beam as beam")
    lines = [line for line in block.text.splitlines() if re.match(r"import pyarrow|batch = ", line)]
    assert len(lines) == 2, lines
    return "\n".join(lines) + "\n"


def readme_tfrecord(doc: Doc) -> None:
    from beam_tensorize import ReadTFRecord

    prelude = import_lines(earlier_python(doc.block)[0]) + tfrecord_batch_prelude()
    run_python(doc.block, prelude=prelude)
    assert sorted(p.name for p in (doc.folder / "events").iterdir()) == ["_SUCCESS", "day=1", "day=2"]
    # "columns of the records + `day` from the folders"
    assert ReadTFRecord("events/").schema.names == ["clicks", "user", "day"]


def readme_spark(doc: Doc) -> None:
    doc.fixture("spark")  # the test session's, which `local_session` returns
    doc.monkeypatch.setenv("BEAM_TENSORIZE_CACHE", str(doc.folder / "cache"))
    doc.data("data/trainSmall.avro")
    doc.config()
    code = doc.absolute(doc.block.text, "data/*.avro", "config.json", "out/")
    namespace, _ = run_python(doc.block, code=code)
    result = namespace["result"]
    assert result["numRecords"] == 300 and len(result["files"]) == 4
    # The same records as the Beam job (here in 4 shards).
    assert sorted(records(doc.folder / "out")) == sorted(records(doc.fixture("quick_start").output))


# --- docs/architecture.md ------------------------------------------------------------------


def architecture_data_path(doc: Doc) -> None:
    """Each step is an exported transform or a step of the Tensorize job graph (built, not run),
    and `format=` lists the input formats."""
    import apache_beam as beam

    import beam_tensorize
    from beam_tensorize import Tensorize, TensorizeSpec, load_config
    from beam_tensorize.kernels.formats import AUTO, format_names

    pipeline = beam.Pipeline()
    _ = pipeline | Tensorize(TensorizeSpec(load_config(SAMPLE_CONFIG), "out", inputs=(SAMPLE_AVRO,)))
    labels = {part for t in pipeline.to_runner_api().components.transforms.values()
              for part in t.unique_name.split("/")}  # fmt: skip
    steps = []
    for line in doc.block.text.splitlines():
        found = re.match(r"\s*(?:-> )?([A-Z]\w+)(?:\(format=([\w|]+)\))?(?: \| (\w+))?", line)
        if found:
            steps += [found.group(1), *([found.group(3)] if found.group(3) else [])]
            if found.group(2):
                assert sorted(found.group(2).split("|")) == sorted([AUTO, *format_names()])
    assert len(steps) == 10, steps
    for step in steps:
        assert hasattr(beam_tensorize, step) or step in labels, f"{step}: no such transform or step"


def architecture_input_format(doc: Doc) -> None:
    """The protocol shown is `InputFormat`'s: its attributes, its methods with their parameters
    in order, and the default `matches`."""
    from beam_tensorize.kernels.formats import InputFormat

    # The block lists signatures: give each `def` a body to read it as a class.
    code = re.sub(r"(def [^#\n]*\))(\s*->[^#\n]*?)?\s*(#.*)?$", r"\1\2: ...", doc.block.text, flags=re.M)
    namespace, _ = run_python(doc.block, code="from __future__ import annotations\n" + code)
    shown = namespace["InputFormat"]
    assert list(shown.__annotations__) == ["name", "kind", "magic"]
    for attribute in shown.__annotations__:
        assert attribute in InputFormat.__annotations__, attribute
    methods = [n for n, v in vars(shown).items() if inspect.isfunction(v)]
    assert methods == ["matches", "plan_splits", "read_schema", "read_split"]
    for name in methods:
        real = list(inspect.signature(getattr(InputFormat, name)).parameters)
        assert list(inspect.signature(getattr(shown, name)).parameters) == real, name

    class Magic(InputFormat):
        magic = b"XY"

    assert Magic().matches(b"XYZ") and not Magic().matches(b"YX")  # head.startswith(magic)


def architecture_output_format(doc: Doc) -> None:
    """The protocol shown is `OutputFormat`'s: its attributes in order, its methods with their
    parameters in order; the table's rows are the built-in formats' compressions."""
    from beam_tensorize.kernels.output import OutputFormat, get_output_format, output_format_names

    code = re.sub(r"(def [^#\n]*\))(\s*->[^#\n]*?)?\s*(#.*)?$", r"\1\2: ...", doc.block.text, flags=re.M)
    namespace, _ = run_python(doc.block, code="from __future__ import annotations\n" + code)
    shown = namespace["OutputFormat"]
    assert list(shown.__annotations__) == list(OutputFormat.__annotations__)
    methods = [n for n, v in vars(shown).items() if inspect.isfunction(v)]
    real_methods = [
        n for n, v in vars(OutputFormat).items() if inspect.isfunction(v) and not n.startswith("_")
    ]
    assert methods == [n for n in real_methods if n in methods] == ["extension", "tensor_data", "open_writer"]
    for name in methods:
        real = list(inspect.signature(getattr(OutputFormat, name)).parameters)
        assert list(inspect.signature(getattr(shown, name)).parameters) == real, name
    page = (ROOT / doc.block.page).read_text(encoding="utf-8")
    for name in output_format_names():
        fmt = get_output_format(name)
        row = next(line for line in page.splitlines() if line.startswith(f"| {fmt.label} (`{name}.py`)"))
        assert f"| {', '.join(fmt.compressions)} |" in row, row


# --- docs/errors.md ------------------------------------------------------------------------


def errors_bad_records(doc: Doc) -> None:
    """The run the page describes: `genres` of exactly 2 values, `--check_shapes`, at most half
    the records bad (the sample file as `<file>`); the line printed is the block's, but for the
    output folder's name and the log file's."""
    from tests.e2e.test_bad_inputs import CHECK_SHAPES, two_genres_config

    doc.data("data/trainSmall.avro")
    config = two_genres_config(doc.folder)
    args = ["--input", "data/trainSmall.avro", "--config", str(config), "--output", "tensorized",
            CHECK_SHAPES, "--max_bad_records_ratio", "0.5"]  # fmt: skip
    code, _, err = run_tensorize(args, doc.capsys)
    assert code == 1
    (line,) = [line for line in err.splitlines() if line.startswith("error:")]
    line = line.replace("data/trainSmall.avro", "<file>").replace("tensorized", "<output>")

    def masked(text):
        return re.sub(r"\(details: \S+?beam_tensorize-\S+\.log,", "(details: <log file>,", text)

    assert masked(line) == masked(" ".join(doc.block.text.split()))


# --- docs/hashing.md -----------------------------------------------------------------------


def hashing_config(doc: Doc) -> None:
    """The snippet in the sample's hashed tensor (4 ids per value: shape [4]) loads as written."""
    from beam_tensorize.config import parse_config
    from beam_tensorize.config.model import HashInfo

    snippet = json.loads("{" + doc.block.text + "}")
    feature = {"inputFeatureInfo": {"columnExpr": "movieId", **snippet},
               "outputTensorInfo": {"name": "movieBucket", "dtype": "long", "shape": [4]}}  # fmt: skip
    (tensor,) = parse_config({"features": [feature]}).tensors
    assert tensor.input.transform_config.hash_info == HashInfo(1000, 4, "SUM", "fingerprint")


# --- docs/metadata.md ----------------------------------------------------------------------


def metadata_document(doc: Doc) -> None:
    """The keys and literal values shown are the Quick start's metadata's; `offShape`
    (written only when rows were off their shape) is checked against the code writing it."""
    from beam_tensorize.job import finish

    real = metadata(doc.fixture("quick_start").output)
    off_shape = re.search(r'"offShape": \{"(\w+)": \d+\}', doc.block.text)
    assert off_shape and off_shape.group(1) in [t["name"] for t in real["features"]]
    assert '"offShape"' in inspect.getsource(finish)
    check_json_shown(doc.block.text.replace(off_shape.group(0), ""), real)
    assert list(real) == sorted(real)  # "plain JSON with sorted keys"


def metadata_fixed_len(doc: Doc) -> None:
    parse = json.loads(doc.block.text)
    real = metadata(doc.fixture("quick_start").output)
    assert parse in [t["parse"] for t in real["features"]]
    assert tf_feature(parse) == eval_tf(arrow_expression(doc.block))


def _parse_entry(output_info: dict) -> dict:
    from beam_tensorize.config import parse_config
    from beam_tensorize.kernels.metadata import build_metadata

    (entry,) = build_metadata(parse_config({"features": [{"outputTensorInfo": output_info}]}))["features"]
    return entry["parse"]


def metadata_ragged(doc: Doc) -> None:
    parse = json.loads(doc.block.text)
    assert parse == _parse_entry({"name": "grid", "dtype": "float", "shape": [-1, -1, 3]})
    assert tf_feature(parse) == eval_tf(arrow_expression(doc.block))


def metadata_sparse(doc: Doc) -> None:
    parse = json.loads(doc.block.text)
    assert parse == _parse_entry({"name": "sv", "dtype": "sparseVector", "shape": [100]})
    assert tf_feature(parse) == eval_tf(arrow_expression(doc.block))


def metadata_transform(doc: Doc) -> None:
    """The keys are those of the Quick start's `transform` entry; the values shown are its
    values but for the flags' examples (`extraColumns`, `partitionIds`, in lists or comments)."""
    real = metadata(doc.fixture("quick_start").output)["transform"]
    shown = re.sub(r"//.*", "", doc.block.text)
    assert sorted(re.findall(r'^  "(\w+)":', shown, re.M)) == list(real)
    check_json_shown(shown, {"transform": real})


# --- docs/migrating-from-avro2tf.md --------------------------------------------------------


def _avro2tf_settings(block: Block):
    """The settings of a block's command in the folder the page assumes (`data/*.avro`,
    `config.json`), its input globs expanded."""
    (words,) = shell_commands(block.text)
    module, args = python_module(words)
    assert module == "pipelines.tensorize"
    spec, _ = parse_tensorize_flags(args)
    inputs = sorted(p for pattern in spec.inputs for p in glob.glob(pattern))
    return spec.replace(inputs=tuple(inputs))


def avro2tf_flags(doc: Doc) -> None:
    """Avro2TF's flags give the settings of the page's next command."""
    doc.data("data/trainSmall.avro")
    doc.config()
    ours = find_block(
        doc.block.page,
        "python -m pipelines.tensorize --input 'data/*.avro' --output out --config config.json \\",
    )
    assert _avro2tf_settings(doc.block) == _avro2tf_settings(ours)
    delegated("tests/e2e/test_avro2tf_parity.py::test_avro2tf_flag_names_run_the_same_job", "_tree")


def avro2tf_ours(doc: Doc) -> None:
    doc.data("data/trainSmall.avro")
    doc.config()
    spec = _avro2tf_settings(doc.block)
    assert (spec.execution_mode, spec.filter_zeros, spec.output) == ("train", True, "out")
    delegated("tests/e2e/test_avro2tf_parity.py::test_avro2tf_flag_names_run_the_same_job", "_tree")


# --- docs/migrating-from-spark-tfrecord.md, docs/spark.md ------------------------------------


def spark_df_prelude() -> str:
    """A DataFrame `df` of docs/tfrecord.md's `batch` (`spark` is the test session's)."""
    return (
        tfrecord_batch_prelude()
        + 'df = spark.createDataFrame(batch.to_pylist(), "day bigint, user string, clicks array<bigint>")\n'
    )


def _rows(frame) -> list[tuple]:
    return sorted(tuple(row) for row in frame.select("day", "user", "clicks").collect())


def spark_tfrecord_migration(doc: Doc) -> None:
    spark = doc.fixture("spark")
    code = doc.absolute(doc.block.text, "out")
    namespace = {"spark": spark}
    _, frame = run_python(doc.block, namespace, code=code, prelude=spark_df_prelude())
    assert sorted(p.name for p in (doc.folder / "out").iterdir()) == ["_SUCCESS", "day=1", "day=2"]
    assert glob.glob(str(doc.folder / "out" / "day=1" / "part-*.tfrecord.gz"))  # GzipCodec
    assert _rows(frame) == _rows(namespace["df"])


def spark_install(doc: Doc) -> None:
    (words,) = shell_commands(doc.block.text)
    assert words[:3] == ["pip", "install", "-e"]
    check_installable(words[3])
    assert any(r.startswith("pyspark>=4") for r in extras()["spark"])  # "PySpark 4"


def spark_signature(doc: Doc) -> None:
    """The parameters shown (the `...` leaves some out) are `tensorize_spark`'s, in its order,
    of its kinds and with its defaults; a `TensorizeSpec` alone binds too."""
    pytest.importorskip("pyspark")
    from beam_tensorize.spark import tensorize_spark

    shown_call, other = doc.block.text.split(") -> dict\n")
    assert other.startswith("tensorize_spark(spark, spec, **overrides)")
    # A call with `...` for parameters left out: read it as a `def` without them.
    code = "def " + shown_call.replace("..., ", "") + ") -> dict: ..."
    namespace, _ = run_python(doc.block, code="from __future__ import annotations\n" + code)
    shown = inspect.signature(namespace["tensorize_spark"])
    real = inspect.signature(tensorize_spark)
    assert [n for n in real.parameters if n in shown.parameters] == list(shown.parameters)
    for name, parameter in shown.parameters.items():
        assert parameter.kind == real.parameters[name].kind, name
        if parameter.default is not parameter.empty:  # (`config`, `output` default to None for a spec)
            assert parameter.default == real.parameters[name].default, name
    assert shown.return_annotation == real.return_annotation == "dict"
    real.bind("spark", "spec")


def spark_data_sources(doc: Doc) -> None:
    """`data/*.parquet`: the sample as Parquet; the Avro files: copies of the sample."""
    spark = doc.fixture("spark")
    write_sample_parquet(doc.folder / "data" / "part-0.parquet")
    doc.data("data/part-1.avro", "data/2024/trainSmall.avro")
    prelude = import_lines(earlier_python(doc.block)[-1])  # the page's first block's imports
    code = doc.absolute(doc.block.text, "data/")
    namespace, _ = run_python(doc.block, {"spark": spark}, code=code, prelude=prelude)
    assert namespace["events"].count() == 300
    df = namespace["df"]
    assert df.columns == ["userId", "genreFeatures"] and df.count() == 600
    assert df.schema["genreFeatures"].dataType.simpleString() == "array<struct<term:string>>"


def spark_tfrecord_source(doc: Doc) -> None:
    """`df`: docs/tfrecord.md's `batch`; `sequences`: SequenceExamples written with the same
    data source first (the page reads them, it does not write them)."""
    spark = doc.fixture("spark")
    rows = [(1, [[1, 2], [3]]), (2, [[4], []])]
    sequences = spark.createDataFrame(rows, "id bigint, steps array<array<bigint>>").coalesce(1)
    writer = sequences.write.format("tfrecord").mode("overwrite").option("recordType", "SequenceExample")
    writer.save(str(doc.folder / "sequences"))
    code = doc.absolute(doc.block.text, "events", "sequences")
    namespace = {"spark": spark}
    _, frame = run_python(doc.block, namespace, code=code, prelude=spark_df_prelude())
    events = doc.folder / "events"
    assert sorted(p.name for p in events.iterdir()) == ["_SUCCESS", "day=1", "day=2"]
    assert glob.glob(str(events / "day=2" / "part-*.tfrecord.gz"))  # one per Spark partition
    back = spark.read.format("tfrecord").load(str(events))  # "day from the folders"
    assert back.columns[-1] == "day" and _rows(back) == _rows(namespace["df"])
    assert sorted(tuple(r) for r in frame.collect()) == rows


# --- docs/report.md ------------------------------------------------------------------------


def report_layout(doc: Doc) -> None:
    output = doc.fixture("quick_start").output
    for line in doc.block.text.splitlines():
        path = line.split()[0].replace("<output>/", "").replace("<split>", "trainingData")
        assert (output / path).exists(), path


def report_drift_summary(doc: Doc) -> None:
    report, drift = doc.block.text.splitlines()
    assert report.strip() == "report:        tensorize_output/report/validationData.html"
    delegated(
        "tests/report/test_pipelines.py::test_the_summary_names_the_tensors_past_the_drift_threshold",
        '"  report:        {out}/report/validationData.html"',
        json.dumps(drift),
    )


def report_anomalies_line(doc: Doc) -> None:
    head, tail = doc.block.text.strip().split(" (schema: ")
    assert head.startswith("anomalies:     ")
    delegated(
        "tests/kernels/report/test_tfdv_statistics.py::test_a_validation_run_names_string_values_outside_the_train_schema",
        f'"  {head} "',
        f'"(schema: {tail}"',
    )


def report_statistics_step(doc: Doc) -> None:
    """Prelude: `config` (the sample's) and `batches` (the sample's rows) in a pipeline; its
    `stats` collected. They are the statistics of the Quick start's report, but for those that
    need the feature lists (the CLI's job gives them, the block does not)."""
    from beam_tensorize.job.report import load_report

    prelude = (
        "import apache_beam as beam\n"
        "from beam_tensorize import ExtractFeatures, HashFeatures, ReadTable, Tensorize, load_config\n"
        "from beam_tensorize.report import ComputeStatistics\n"
        "from tests.e2e.test_docs import collect\n"
        f"config = load_config({SAMPLE_CONFIG!r})\n"
        "with beam.Pipeline() as p:\n"
        f"    batches = p | ReadTable({SAMPLE_AVRO!r}, columns=Tensorize.input_columns(config))\n"
    )
    code = prelude + "".join(f"    {line}\n" for line in doc.block.text.splitlines())
    code += "    _ = stats | beam.Map(collect, key='report.md')\n"
    _COLLECTED.pop("report.md", None)
    run_python(doc.block, code=code)
    (stats,) = _COLLECTED.pop("report.md")
    report = load_report(str(doc.fixture("quick_start").output), "trainingData")
    assert [t["name"] for t in stats["tensors"]] == [t["name"] for t in report["tensors"]]
    for computed, written in zip(stats["tensors"], report["tensors"]):
        expected = {k: v for k, v in written.items() if k not in ("featureList", "sparse")}
        assert computed == expected, computed["name"]


def _schema_keys(text: str) -> set[str]:
    """The keys of the report's JSON schema: quoted names after `{` or `,` and before `:`, `,`
    or `}` (values follow a `:`, a `|` or a `[`)."""
    text = re.sub(r"//.*", "", text)
    return set(re.findall(r'(?<=[{,])\s*"(\w+)"(?=\s*[:,}])', text))


def report_schema(doc: Doc) -> None:
    """Every key is one the Quick start's report has, or its drift entry against itself; the
    keys of what the sample has none of (bad rows, a column of structs) must be written by the
    code that makes them."""
    from beam_tensorize.job.report import load_report
    from beam_tensorize.kernels.output import dead_letters
    from beam_tensorize.kernels.report import statistics, summary
    from beam_tensorize.report import compare

    report = load_report(str(doc.fixture("quick_start").output), "trainingData")
    assert report["version"] == 1 and report["split"] == "trainingData" and report["deadLetters"] == []
    real = all_keys(report) | {"drift"} | all_keys(compare(report, report, "trainingData", 0.1))
    from beam_tensorize.job import report as report_files
    from beam_tensorize.kernels.report import anomalies

    written_by = {
        "anomalies": report_files,
        "features": anomalies,
        "reason": statistics,
        "example": statistics,
        "notSummarized": summary,
        "source": dead_letters,
    }
    for key in sorted(_schema_keys(doc.block.text)):
        if key not in real and key in written_by:
            assert f'"{key}"' in inspect.getsource(written_by[key]), key
        else:
            assert key in real, f"{key!r} is in no report: renamed or gone?"


# --- docs/runners.md -----------------------------------------------------------------------

#: The job's flags in docs/runners.md (its Direct example), which `...` stands for.
RUNNERS_JOB = ["--input", "data/*.avro", "--config", "config.json", "--output", "out/"]


def runners_direct(doc: Doc) -> None:
    doc.data("data/trainSmall.avro")
    doc.config()
    first, second = shell_commands(doc.block.text)
    module, args = python_module(first)
    assert module == "pipelines.tensorize" and args == RUNNERS_JOB
    code, _, err = run_tensorize(args, doc.capsys)
    assert code == 0, err
    assert records(doc.folder / "out") == records(doc.fixture("quick_start").output)
    _, options = parse_tensorize_flags(filled(python_module(second)[1], RUNNERS_JOB))
    assert options.get_all_options()["direct_num_workers"] == 4
    delegated("tests/runners/test_each_runner.py::test_direct_multi_processing", "multi_processing")


def runners_dataflow(doc: Doc) -> None:
    (words,) = shell_commands(doc.block.text)
    module, args = python_module(words)
    assert module == "pipelines.tensorize"
    _, options = parse_tensorize_flags(args, resolve=False)  # the config is on gs://
    assert (ROOT / options.get_all_options()["setup_file"]).samefile(ROOT / "setup.py")
    delegated("tests/runners/test_each_runner.py::test_dataflow_dry_run_job_graph", "--dry_run=True")


def runners_portable(doc: Doc) -> None:
    doc.config()
    runners = []
    for words in shell_commands(doc.block.text):
        module, args = python_module(words)
        assert module == "pipelines.tensorize"
        _, options = parse_tensorize_flags(filled(args, RUNNERS_JOB))
        runners.append(options.get_all_options()["runner"])
    assert runners == ["FlinkRunner", "SparkRunner", "PortableRunner"]
    delegated(
        "tests/runners/test_each_runner.py::test_flink_and_spark_runner_flags_on_the_embedded_python_job_service",
        "embed",
    )
    delegated("tests/runners/test_each_runner.py::test_portable_runner_loopback", "PortableRunner")


class _Started(Exception):
    pass


def runners_worker_pool(doc: Doc) -> None:
    """The pool's flags as its `main` reads them (stopped before it serves), the entry point
    installed; the job's flags as the CLI reads them."""
    from apache_beam.runners.worker import worker_pool_main

    executable = shutil.which("beam-tensorize-worker", path=os.path.dirname(sys.executable))
    assert executable, "the beam-tensorize-worker entry point is not installed"
    text = doc.block.text.replace('"$(command -v beam-tensorize-worker)"', executable)
    pool, job = shell_commands(text)
    started = {}

    def start(**kwargs):
        started.update(kwargs)
        raise _Started

    doc.monkeypatch.setattr(worker_pool_main.BeamFnExternalWorkerPoolServicer, "start", start)
    module, args = python_module(pool)
    with pytest.raises(_Started):
        __import__(module, fromlist=["main"]).main(args)
    assert started == {"use_process": True, "port": 50000, "container_executable": executable}
    doc.config()
    _, options = parse_tensorize_flags(filled(python_module(job)[1], RUNNERS_JOB))
    assert options.get_all_options()["environment_config"] == "WORKER_HOST:50000"
    delegated(
        "tests/runners/test_each_runner.py::test_portable_runner_external_workers_through_the_boot_entry_point"
    )


def runners_own_job(doc: Doc) -> None:
    """`gs://bucket/` is a local folder `bucket/` (the sample config and data); `my_options`
    the default options."""
    doc.data("bucket/data/trainSmall.avro")
    doc.config("bucket/config.json")
    code = doc.block.text.replace("gs://bucket/", "bucket/")
    prelude = (
        "from apache_beam.options.pipeline_options import PipelineOptions\nmy_options = PipelineOptions()\n"
    )
    run_python(doc.block, code=code, prelude=prelude)
    out = doc.folder / "bucket" / "tensorized"
    assert len(list((out / "trainingData").glob("part-*-of-00064.tfrecord"))) == 64
    assert sorted(records(out)) == sorted(records(doc.fixture("quick_start").output))


# --- docs/serving.md -----------------------------------------------------------------------


def _served_record(block: Block) -> tuple[str, dict]:
    """The block's `records = [...]` line (a record with placeholders) and the sample record
    with the values it shows."""
    (line,) = re.findall(r"^records = \[.*\]$", block.text, re.M)
    shown = {k: int(v) for k, v in re.findall(r'"(\w+)": (\d+)', line)}
    record = next(r for r in sample_records() if all(r[k] == v for k, v in shown.items()))
    return line, record


def serving_python(doc: Doc) -> None:
    """The placeholder record is the sample's record with those ids; `batch` the sample's input
    rows as the job reads them. The results are those the comments show."""
    output = doc.sample_output()
    line, record = _served_record(doc.block)
    code = doc.block.text.replace(line, "records = [record]")
    namespace = {"record": record, "batch": sample_batches()[0]}
    tree = ast.parse(code)
    results = {}
    for statement in tree.body:  # each expression's value, for the comments
        namespace, value = run_python(doc.block, namespace, code=ast.unparse(statement))
        results[ast.unparse(statement).split("(")[0]] = value
    comments = dict(re.findall(r"^(pre\.\w+)\(.*?#\s*(.*)$", doc.block.text, re.M))
    for name, values in re.findall(r'"(\w+)": array\(\[([\d, ]+)\]\)', comments["pre.transform"]):
        assert results["pre.transform"][0][name].tolist() == json.loads(f"[{values}]"), name
    prefix = ast.literal_eval(re.match(r'\[(b".*?)\.\.\."\]', comments["pre.serialize"]).group(1) + '"')
    (serialized,) = results["pre.serialize"]
    assert serialized.startswith(prefix), serialized[:8]
    index = sample_records().index(record)
    assert serialized == without_labels(records(output)[index], ["response"])  # "the bytes the job writes"
    keys = [k for t in metadata(output)["features"] for k in t["featureKeys"]]
    assert results["pre.transform_batch"].schema.names == keys  # "one list column per feature key"


def serving_tensorflow(doc: Doc) -> None:
    """Prelude: the page's previous block's imports and record, and `raw_tensors` (from where
    the comment says)."""
    doc.sample_output()
    previous = earlier_python(doc.block)[0]
    _, record = _served_record(previous)
    prelude = import_lines(previous) + "from beam_tensorize.tf.serving import raw_tensors\n"
    namespace, _ = run_python(doc.block, {"records": [record]}, prelude=prelude)
    assert (doc.folder / "preprocessing_model" / "saved_model.pb").exists()
    tensors = namespace["tensors"]
    expected = namespace["pre"].transform([record])[0]
    assert tensors["movieBucket"].numpy().tolist() == expected["movieBucket"].tolist()
    assert tensors["genreIds"].to_list() == [expected["genreIds"].tolist()]


# --- docs/tfrecord.md ----------------------------------------------------------------------


def tfrecord_round_trip(doc: Doc) -> None:
    capsys = doc.capsys
    capsys.readouterr()
    namespace, _ = run_python(doc.block)
    printed = capsys.readouterr().out.splitlines()
    comment = re.search(r"print\(read\.schema\)\s*# (.*) \(from the folders\)", doc.block.text).group(1)
    # pyarrow prints a list type with its item field (list<item: int64>, then a line for it)
    fields = [re.sub(r"list<item: ", "list<", line) for line in printed if not line.startswith(" ")]
    assert fields == comment.split(", ")
    assert (doc.folder / "events" / "day=1" / "part-00000-of-00002.tfrecord.gz").exists()
    assert [f.name for f in namespace["read"].schema] == ["clicks", "user", "day"]


# --- the registry --------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Entry:
    """How a block is checked: `run` (executed as written, then its results asserted),
    `checked` (not run, for the reason given; checked as far as it can be), `delegated`
    (another test runs it as written). `check` does it; `spark`: it needs the Spark session."""

    how: str
    why: str
    check: Callable[[Doc], None]
    spark: bool = False


def run(why: str, check: Callable[[Doc], None], spark: bool = False) -> Entry:
    return Entry("run", why, check, spark)


def checked(why: str, check: Callable[[Doc], None]) -> Entry:
    return Entry("checked", why, check)


def delegate(why: str, check: Callable[[Doc], None]) -> Entry:
    return Entry("delegated", why, check)


REGISTRY: dict[tuple[str, str], Entry] = {
    # README.md
    ("README.md", QUICK_START): run(
        "the tensorize command in-process (the module's Quick-start run); venv, pip install and the "
        "suite itself are not run: the installs are checked against setup.py", readme_quick_start),
    ("README.md", "Output written to tensorize_output"): run(
        "the Quick start's summary, compared line for line (time and rate masked)", readme_summary),
    ("README.md", ".venv/bin/python -m pipelines.tensorize \\"): checked(
        "needs a GCP project: flags parsed, then the job graph translated with --dry_run=True", readme_dataflow),
    ("README.md", '{ "inputFeatureInfo":  { "columnExpr": "lower(genreFeatures.term)" },'): checked(
        "JSON: the sample config's entry, loaded by the config parser", readme_config_entry),
    ("README.md", "<output>/"): checked("a layout: its paths exist in the Quick start's output", readme_layout),
    ("README.md", 'from beam_tensorize.tf import make_dataset'): run(
        "reads the Quick start's output", readme_make_dataset),
    ("README.md", "from google.protobuf import text_format"): run(
        "reads the Quick start's output with tfx-bsl", readme_tfx),
    ("README.md", "from beam_tensorize.serving import Preprocessor"): run(
        "prelude: `records`, sample rows; the bytes compared with the job's", readme_serving),
    ("README.md", "# after the Quick start's first command: group its records by movie"): delegate(
        "tests/e2e/test_prep_ranking.py extracts it from README.md and runs it after the Quick start",
        lambda doc: delegated(
            "tests/e2e/test_prep_ranking.py::test_the_readme_example_runs_on_the_bundled_sample_and_prints_a_summary",
            "README.md", "# after the Quick start's first command")),
    ("README.md", "from beam_tensorize.spark import local_session, tensorize_spark"): run(
        "on the test session's Spark, its relative paths made absolute", readme_spark, spark=True),
    ("README.md", "import apache_beam as beam"): run(
        "data/*.parquet: the sample as Parquet; config.json: the sample's", readme_beam_job),
    ("README.md", "from beam_tensorize import ReadTFRecord, WriteTFRecord"): run(
        "prelude: the page's previous block's imports and docs/tfrecord.md's `batch`", readme_tfrecord),
    # docs/architecture.md
    ("docs/architecture.md", "ReadTable(format=auto|avro|parquet|orc|tfrecord)      one split of one file -> Arrow RecordBatches"): checked(
        "a diagram: its steps are transforms or steps of the Tensorize job graph", architecture_data_path),
    ("docs/architecture.md", "class InputFormat:"): checked(
        "signatures without bodies: compared with InputFormat's", architecture_input_format),
    ("docs/architecture.md", "class OutputFormat:"): checked(
        "signatures without bodies: compared with OutputFormat's", architecture_output_format),
    # docs/errors.md
    ("docs/errors.md", "error: the job failed; <output> holds no new complete output: 213 of 300 records could not be"): run(
        "the line the run it describes prints, its output folder and log file masked", errors_bad_records),
    # docs/hashing.md
    ("docs/hashing.md", '"transformConfig": {"hashInfo": {"hashBucketSize": 1000, "numHashFunctions": 4,'): checked(
        "a config fragment: loaded in a feature by the config parser", hashing_config),
    # docs/metadata.md
    ("docs/metadata.md", "{"): checked(
        "JSON with comments and placeholders: keys and values are the sample metadata's", metadata_document),
    ("docs/metadata.md", '{"type": "FixedLenFeature", "key": "movieLatentFactors", "dtype": "float32", "shape": [30]}'): checked(
        "JSON: the sample metadata's entry, and the tf.io feature the page gives", metadata_fixed_len),
    ("docs/metadata.md", '{"type": "RaggedFeature", "valueKey": "grid", "dtype": "float32",'): checked(
        "JSON: the entry the metadata builder writes, and the tf.io feature the page gives", metadata_ragged),
    ("docs/metadata.md", '{"type": "SparseFeature", "indexKey": "sv/indices", "valueKey": "sv/values", "dtype": "float32", "size": 100}'): checked(
        "JSON: the entry the metadata builder writes, and the tf.io feature the page gives", metadata_sparse),
    ("docs/metadata.md", '"transform": {'): checked(
        "JSON with comments and placeholders: the sample metadata's keys and values", metadata_transform),
    # docs/migrating-from-avro2tf.md
    ("docs/migrating-from-avro2tf.md", "python -m pipelines.tensorize --input-paths data/*.avro --working-dir out \\"): delegate(
        "resolves to the next block's settings; tests/e2e/test_avro2tf_parity.py runs both", avro2tf_flags),
    ("docs/migrating-from-avro2tf.md", "python -m pipelines.tensorize --input 'data/*.avro' --output out --config config.json \\"): delegate(
        "flags resolved; tests/e2e/test_avro2tf_parity.py runs it beside Avro2TF's", avro2tf_ours),
    # docs/migrating-from-spark-tfrecord.md
    ("docs/migrating-from-spark-tfrecord.md", "from beam_tensorize.spark import register_data_sources"): run(
        "prelude: `spark`, `df` of docs/tfrecord.md's `batch`", spark_tfrecord_migration, spark=True),
    # docs/report.md (its blocks are untagged: text)
    ("docs/report.md", "<output>/report/<split>.json    the statistics (schema below)"): checked(
        "a layout: the files exist in the Quick start's output", report_layout),
    ("docs/report.md", "report:        tensorize_output/report/validationData.html"): delegate(
        "tests/report/test_pipelines.py prints and asserts these lines (a validation run that drifts)",
        report_drift_summary),
    ("docs/report.md", "extracted = batches | ExtractFeatures(config)"): run(
        "prelude: the sample's `config` and `batches` in a pipeline; equals the Quick start's statistics",
        report_statistics_step),
    ("docs/report.md", "anomalies:     genres 14 value(s) not in the train split's ('zombie', 'space-opera') (schema: metadata/schema.pbtxt; see report/validationData.html)"): delegate(
        "tests/kernels/report/test_tfdv_statistics.py prints and asserts this line (a validation run with new genres)",
        report_anomalies_line),
    ("docs/report.md", "{"): checked(
        "a schema: its keys are the Quick start's report's (and drift's)", report_schema),
    # docs/runners.md
    ("docs/runners.md", "python -m pipelines.tensorize --input 'data/*.avro' --config config.json --output out/"): run(
        "the first command on the sample; the multi-process one's flags parsed (tests/runners/test_each_runner.py runs it)",
        runners_direct),
    ("docs/runners.md", "python -m pipelines.tensorize --input 'gs://bucket/data/*.avro' --config gs://bucket/config.json \\"): checked(
        "needs GCS and a GCP project: flags parsed; tests/runners/test_each_runner.py dry-runs it with --setup_file",
        runners_dataflow),
    ("docs/runners.md", "# Flink cluster with a Beam Flink job server listening on JOB_HOST:8099"): checked(
        "needs Flink / Spark job servers: flags parsed; tests/runners/test_each_runner.py runs them on Beam's job service",
        runners_portable),
    ("docs/runners.md", "python -m apache_beam.runners.worker.worker_pool_main --service_port=50000 \\"): checked(
        "starts a server and needs a job server: flags parsed; tests/runners/test_each_runner.py runs such a pool",
        runners_worker_pool),
    ("docs/runners.md", "import apache_beam as beam"): run(
        "gs://bucket/ as a local folder (no GCS here); `my_options`: the default options", runners_own_job),
    # docs/serving.md
    ("docs/serving.md", "import fastavro"): run(
        "the placeholder record is the sample's; `batch`: the sample's rows; comments checked", serving_python),
    ("docs/serving.md", 'pre = Preprocessor.from_output("tensorize_output", labels=False)'): run(
        "prelude: the previous block's imports and record, `raw_tensors`", serving_tensorflow),
    # docs/spark.md
    ("docs/spark.md", "pip install -e '.[spark]'     # PySpark 4; Spark needs Java 17"): checked(
        "an install: the extra is in setup.py", spark_install),
    ("docs/spark.md", "from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG"): delegate(
        "tests/spark/test_tensorize.py extracts it from docs/spark.md and runs it",
        lambda doc: delegated("tests/spark/test_tensorize.py::test_the_example_of_docs_spark_md_runs", "spark.md")),
    ("docs/spark.md", "tensorize_spark(spark, input_paths, config, output, mode=None, **settings) -> dict"): checked(
        "a signature: compared with tensorize_spark's", spark_signature),
    ("docs/spark.md", "register_data_sources(spark)  # or spark.dataSource.register(TableDataSource)"): run(
        "prelude: the page's imports; the files it names: the sample", spark_data_sources, spark=True),
    ("docs/spark.md", 'writer = df.write.format("tfrecord").mode("overwrite").option("partition_by", "day")'): run(
        "prelude: `df` of docs/tfrecord.md's `batch`, SequenceExamples to read", spark_tfrecord_source, spark=True),
    # docs/tfrecord.md
    ("docs/tfrecord.md", "import apache_beam as beam"): run(
        "as written; the printed schema is the comment's", tfrecord_round_trip),
}  # fmt: skip


# --- the tests -----------------------------------------------------------------------------


def _params():
    params = []
    for block in doc_blocks():
        entry = REGISTRY.get(block.key)
        # With -n, the blocks share one worker (and the Quick start's run); Spark's, the session's.
        spark = entry is not None and entry.spark
        marks = (
            [pytest.mark.spark, pytest.mark.xdist_group("spark")]
            if spark
            else [pytest.mark.xdist_group("docs")]
        )
        params.append(pytest.param(block, marks=marks, id=f"{block}-{block.language or 'untagged'}"))
    return params


@pytest.mark.parametrize("block", _params())
def test_doc_block(block, request, tmp_path, monkeypatch):
    assert block.language in LANGUAGES, (
        f"{block}: tag the block with its language: text (output, layouts), json, python or bash"
    )
    entry = REGISTRY.get(block.key)
    assert entry is not None, (
        f"new doc block {block} ({block.anchor!r}): add it to the registry of tests/e2e/test_docs.py, "
        "saying how it is checked"
    )
    monkeypatch.chdir(tmp_path)
    entry.check(Doc(block, tmp_path, request, monkeypatch))


def test_every_registry_entry_names_a_block():
    keys = [b.key for b in doc_blocks()]
    assert len(keys) == len(set(keys)), (
        "two blocks of a page start alike: the registry cannot tell them apart"
    )
    gone = [key for key in REGISTRY if key not in keys]
    assert not gone, f"registry entries whose block is gone or changed its first line: {gone}"
    assert {e.how for e in REGISTRY.values()} == {"run", "checked", "delegated"}
