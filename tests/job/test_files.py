"""`beam_tensorize.job.files.FileSystems`: local paths are served without Apache Beam, with
Beam's results (checked here against Beam's own `FileSystems` on the same folder)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from apache_beam.io.filesystems import FileSystems as BeamFileSystems

from beam_tensorize.job.files import FileSystems, list_files

PATTERNS = [
    "{d}/a.avro",  # one file, no wildcard
    "{d}/sub",  # a folder, no wildcard
    "{d}/missing.avro",
    "{d}/*",
    "{d}/*.avro",
    "{d}/**",
    "{d}/**.avro",
    "{d}/sub/*",
    "{d}/sub/",  # a trailing slash: everything in it
    "{d}/?.avro",
    "{d}/[ab].avro",
    "{d}/[!a].avro",
    "{d}/[^a].avro",
    "{d}/[.avro",  # an unclosed class: a literal [
    "{d}/part-*.tfrecord.gz",
    "{d}/.*",  # hidden files are matched (no special case, unlike glob)
    "{d}/nope/*.avro",
    "{d}/sub/deep/**",
    "{d}/*/*.avro",
    "{d}/+(x).avro",  # regular-expression characters are literal
]


@pytest.fixture
def tree(tmp_path):
    files = {
        "a.avro": b"a",
        "b.avro": b"bb",
        "c.avro": b"ccc",
        "[.avro": b"x",
        "+(x).avro": b"y",
        ".hidden": b"h",
        "part-00000.tfrecord.gz": b"gz",
        "sub/d.avro": b"dddd",
        "sub/deep/e.avro": b"eeeee",
        "sub/deep/f.txt": b"f",
    }
    for name, data in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return str(tmp_path)


def _listing(results):
    return [(r.pattern, sorted((m.path, m.size_in_bytes) for m in r.metadata_list)) for r in results]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_match_gives_what_beam_gives(tree, pattern):
    patterns = [pattern.format(d=tree)]
    assert _listing(FileSystems.match(patterns)) == _listing(BeamFileSystems.match(patterns))


def test_relative_patterns_match_as_beam_does(tree, monkeypatch):
    monkeypatch.chdir(tree)
    for pattern in ["sub/*.avro", "*.avro", "sub/**", "a.avro", "./sub/d.avro"]:
        assert _listing(FileSystems.match([pattern])) == _listing(BeamFileSystems.match([pattern])), pattern


def test_delete_rename_mkdirs_and_open_behave_as_beam(tree):
    # delete: files, folders (recursively) and globs; nothing there is an error naming it.
    FileSystems.delete([os.path.join(tree, "a.avro"), os.path.join(tree, "sub")])
    assert not os.path.exists(os.path.join(tree, "a.avro")) and not os.path.exists(os.path.join(tree, "sub"))
    FileSystems.delete([os.path.join(tree, "[bc].avro")])
    assert sorted(os.listdir(tree)) == ["+(x).avro", ".hidden", "[.avro", "part-00000.tfrecord.gz"]
    for fs in (FileSystems, BeamFileSystems):
        with pytest.raises(OSError, match=r"No files found to delete under: .*missing"):
            fs.delete([os.path.join(tree, "missing")])
    # rename: several at once; a missing source fails (the others are moved).
    with pytest.raises(OSError, match=r"Rename operation failed: .*nothing"):
        FileSystems.rename([os.path.join(tree, ".hidden"), os.path.join(tree, "nothing")],
                           [os.path.join(tree, "shown"), os.path.join(tree, "other")])  # fmt: skip
    assert os.path.exists(os.path.join(tree, "shown")) and not os.path.exists(os.path.join(tree, ".hidden"))
    # mkdirs: parents made; an existing folder is an error, as in Beam.
    FileSystems.mkdirs(os.path.join(tree, "x", "y"))
    assert os.path.isdir(os.path.join(tree, "x", "y"))
    for fs in (FileSystems, BeamFileSystems):
        with pytest.raises(OSError):
            fs.mkdirs(os.path.join(tree, "x", "y"))
    # open: raw bytes; a compressed name is decompressed, as Beam's `open` does by default.
    with FileSystems.open(os.path.join(tree, "shown")) as f:
        assert f.read() == b"h"
    gz = os.path.join(tree, "t.json.gz")
    with BeamFileSystems.create(gz) as f:
        f.write(b'{"features": []}')
    with FileSystems.open(gz) as f:
        assert f.read() == b'{"features": []}'
    with pytest.raises(FileNotFoundError):
        FileSystems.open(os.path.join(tree, "missing"))


_DRIVER_SIDE = """
import os, sys
from beam_tensorize.config import load_config
from beam_tensorize.job.files import FileSystems, list_files, read_text, write_text_atomically
from beam_tensorize.job.reading import plan_splits
from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
load_config(SAMPLE_CONFIG)
plan_splits([SAMPLE_AVRO])
folder = os.path.join(sys.argv[1], "out")
FileSystems.mkdirs(folder)
write_text_atomically(os.path.join(folder, "a.json"), "{}")
assert read_text(os.path.join(folder, "a.json")) == "{}" and FileSystems.exists(folder)
FileSystems.rename([os.path.join(folder, "a.json")], [os.path.join(folder, "b.json")])
assert list_files(folder + "/*") == [os.path.join(folder, "b.json")]
FileSystems.delete([folder])
print("apache_beam" in sys.modules)
"""


def test_a_local_job_driver_needs_no_apache_beam(tmp_path):
    """A Spark driver reading its config, planning splits and committing local files never
    imports Apache Beam (~1.7 s)."""
    done = subprocess.run([sys.executable, "-c", _DRIVER_SIDE, str(tmp_path)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["False"]


def test_list_files_is_empty_only_when_nothing_is_there(tmp_path, monkeypatch):
    """A missing folder lists nothing; a file system that cannot be listed (no permission, no
    network) is an error naming the pattern, not an empty output."""
    from apache_beam.io.filesystem import BeamIOError

    from beam_tensorize.job import files

    assert list_files(str(tmp_path / "missing" / "*")) == []

    def failing(error):
        def match(patterns, *args, **kwargs):
            raise BeamIOError("Match operation failed", {patterns[0]: error})

        return match

    monkeypatch.setattr(files.FileSystems, "match", failing(PermissionError(13, "Permission denied")))
    with pytest.raises(
        OSError, match=r"^cannot list gs://b/out/\*: PermissionError: \[Errno 13\] Permission denied; check"
    ):
        list_files("gs://b/out/*")
    monkeypatch.setattr(files.FileSystems, "match", failing(FileNotFoundError("no such object")))
    assert list_files("gs://b/out/*") == []


def test_list_files_raises_for_a_local_folder_it_cannot_read(tmp_path, monkeypatch):
    """A local folder without read permission is an error naming the pattern (Beam's local match
    and `os.walk` would list nothing); a missing folder or file still lists nothing."""
    out = tmp_path / "out"
    (out / "part").mkdir(parents=True)
    (out / "part" / "a.avro").write_bytes(b"a")
    (tmp_path / "file.avro").write_bytes(b"f")
    real_scandir = os.scandir

    def scandir(path="."):  # as for a folder without read permission (tests may run as root)
        if os.fspath(path) == str(out / "part"):
            raise PermissionError(13, "Permission denied", os.fspath(path))
        return real_scandir(path)

    assert list_files(str(out / "**")) == [str(out / "part" / "a.avro")]
    with monkeypatch.context() as patch:
        patch.setattr(os, "scandir", scandir)
        with pytest.raises(
            OSError, match=r"^cannot list .*/out/\*\*: PermissionError: \[Errno 13\] Permission denied"
        ):
            list_files(str(out / "**"))
        assert FileSystems.match([str(out / "**")])[0].metadata_list == []  # Beam's results, unchanged
    for missing in ("missing/**", "missing/*.avro", "missing.avro", "file.avro/*", "missing/sub/"):
        assert list_files(str(tmp_path / missing)) == [], missing


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="root reads any folder")
def test_list_files_raises_for_a_folder_without_read_permission(tmp_path):
    folder = tmp_path / "locked"
    folder.mkdir()
    (folder / "a.avro").write_bytes(b"a")
    folder.chmod(0)
    try:
        with pytest.raises(OSError, match=r"^cannot list .*/locked/\*: PermissionError"):
            list_files(str(folder / "*"))
    finally:
        folder.chmod(0o755)
