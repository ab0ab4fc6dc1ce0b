"""The commit protocol without a pipeline: `Transaction` stages, locks, journals and rolls
forward; a death at any point leaves the old output or (once `recover` ran) the new one."""

from __future__ import annotations

import hashlib
import json
import os

import pytest

from beam_tensorize.job import transaction
from beam_tensorize.job.transaction import COMMIT_STEPS, JOURNAL_FILE, LOCK_FILE, Transaction, recover


class _Died(Exception):
    """What the fault hook raises: the process 'dies' at that point (nothing after it runs)."""


def _tree(root) -> dict[str, str]:
    """Relative path -> md5 of every file under `root`."""
    found = {}
    for folder, _, files in os.walk(root):
        for name in files:
            path = os.path.join(folder, name)
            with open(path, "rb") as f:
                found[os.path.relpath(path, root)] = hashlib.md5(f.read()).hexdigest()
    return found


def _write(path, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def _old_output(out) -> None:
    for name in ("part-00000-of-00002.tfrecord", "part-00001-of-00002.tfrecord", "_SUCCESS"):
        _write(os.path.join(out, "trainingData", name), "old " + name if name != "_SUCCESS" else "")
    _write(os.path.join(out, "metadata", "tensor_metadata.json"), '{"old": true}')
    _write(os.path.join(out, "featureList", "genres"), "old list\n")
    _write(os.path.join(out, "_SUCCESS"), "")


def _overwrite(out: str) -> None:
    """A new output: one data file (replacing two), new metadata and list, markers last."""
    data = os.path.join(out, "trainingData")
    temp = os.path.join(data, "_temporary", "w1", "file.tfrecord")
    _write(temp, "new data")
    with Transaction(out) as txn:
        old = [os.path.join(data, n) for n in sorted(os.listdir(data)) if n.startswith("part-")]
        txn.delete(old)
        txn.move(temp, os.path.join(data, "part-00000-of-00001.tfrecord"))
        txn.cleanup(os.path.dirname(temp))
        txn.write_text(os.path.join(out, "metadata", "tensor_metadata.json"), '{"new": true}')
        txn.write_text(os.path.join(out, "featureList", "genres"), "new list\n")
        txn.mark(os.path.join(data, "_SUCCESS"))
        txn.mark(os.path.join(out, "_SUCCESS"))


OLD = {
    "_SUCCESS": "d41d8cd98f00b204e9800998ecf8427e",
    "trainingData/_SUCCESS": "d41d8cd98f00b204e9800998ecf8427e",
    "trainingData/part-00000-of-00002.tfrecord": hashlib.md5(b"old part-00000-of-00002.tfrecord").hexdigest(),
    "trainingData/part-00001-of-00002.tfrecord": hashlib.md5(b"old part-00001-of-00002.tfrecord").hexdigest(),
    "metadata/tensor_metadata.json": hashlib.md5(b'{"old": true}').hexdigest(),
    "featureList/genres": hashlib.md5(b"old list\n").hexdigest(),
}
NEW = {
    "_SUCCESS": "d41d8cd98f00b204e9800998ecf8427e",
    "trainingData/_SUCCESS": "d41d8cd98f00b204e9800998ecf8427e",
    "trainingData/part-00000-of-00001.tfrecord": hashlib.md5(b"new data").hexdigest(),
    "metadata/tensor_metadata.json": hashlib.md5(b'{"new": true}').hexdigest(),
    "featureList/genres": hashlib.md5(b"new list\n").hexdigest(),
}


def test_a_commit_replaces_the_old_output_whole_and_leaves_nothing_behind(tmp_path):
    out = str(tmp_path / "out")
    _old_output(out)
    _overwrite(out)
    assert _tree(out) == NEW


@pytest.mark.parametrize("step", COMMIT_STEPS)
def test_a_death_at_any_step_leaves_the_old_or_after_recover_the_new_output(tmp_path, monkeypatch, step):
    out = str(tmp_path / "out")
    _old_output(out)

    def die(point: str) -> None:
        if point == step:
            raise _Died(point)

    monkeypatch.setattr(transaction, "fault_hook", die)
    with pytest.raises(_Died):
        _overwrite(out)
    monkeypatch.setattr(transaction, "fault_hook", None)
    decided = os.path.exists(os.path.join(out, JOURNAL_FILE))
    assert decided == (COMMIT_STEPS.index(step) >= COMMIT_STEPS.index("journal"))
    if not decided:  # the old output, untouched (only temporary files beside it)
        assert {k: v for k, v in _tree(out).items() if "_temporary" not in k} == OLD
    assert recover(out) == decided
    expected = NEW if decided else OLD
    assert {k: v for k, v in _tree(out).items() if "_temporary" not in k and k != LOCK_FILE} == expected
    assert not os.path.exists(os.path.join(out, JOURNAL_FILE))
    # the next run commits as usual, whatever the last one left
    _overwrite(out)
    assert _tree(out) == NEW


def test_the_roll_forward_may_run_twice(tmp_path, monkeypatch):
    """A reader finishing a commit dies too: the next one finishes it from the same journal."""
    out = str(tmp_path / "out")
    _old_output(out)
    monkeypatch.setattr(
        transaction, "fault_hook", lambda p: (_ for _ in ()).throw(_Died()) if p == "moved-one" else None
    )
    with pytest.raises(_Died):
        _overwrite(out)
    with pytest.raises(_Died):  # the reader dies at the same point: the file moved is not moved twice
        recover(out)
    monkeypatch.setattr(transaction, "fault_hook", None)
    assert recover(out)
    assert _tree(out) == NEW


def test_an_error_inside_the_transaction_changes_nothing(tmp_path):
    out = str(tmp_path / "out")
    _old_output(out)
    with pytest.raises(RuntimeError, match="boom"), Transaction(out) as txn:
        txn.write_text(os.path.join(out, "metadata", "tensor_metadata.json"), "{}")
        txn.delete([os.path.join(out, "featureList", "genres")])
        raise RuntimeError("boom")
    assert _tree(out) == OLD


def test_a_link_inside_the_output_is_never_deleted_through(tmp_path):
    out = str(tmp_path / "out")
    _old_output(out)
    outside = tmp_path / "users_folder"
    outside.mkdir()
    (outside / "precious.txt").write_text("mine")
    os.symlink(outside, os.path.join(out, "featureList", "linked"))
    with pytest.raises(ValueError, match=r"featureList/linked is a symbolic link \(to .*users_folder\)"):
        with Transaction(out) as txn:
            txn.delete([os.path.join(out, "featureList", "linked", "precious.txt")])
    assert (outside / "precious.txt").read_text() == "mine"
    assert {k: v for k, v in _tree(out).items() if not k.startswith("featureList/linked")} == OLD


def test_a_folder_it_may_not_write_stops_the_commit_before_anything_changes(tmp_path, monkeypatch):
    """Checked before the journal (os.access: root may write anywhere, so it is patched here)."""
    out = str(tmp_path / "out")
    _old_output(out)
    metadata = os.path.join(out, "metadata")
    real_access = os.access
    monkeypatch.setattr(os, "access", lambda p, mode: p != metadata and real_access(p, mode))
    with pytest.raises(
        PermissionError,
        match=r"cannot replace files in .*metadata \(no write permission\); nothing of this run was committed",
    ):
        _overwrite(out)
    assert {k: v for k, v in _tree(out).items() if "_temporary" not in k} == OLD


def test_commits_into_one_output_wait_for_each_other(tmp_path):
    """The lock is the kernel's: a second holder waits, then proceeds once it is released."""
    out = str(tmp_path / "out")
    first = transaction._Lock(out, "a")
    first.acquire()
    second = transaction._Lock(out, "b")
    with pytest.raises(transaction.CommitConflict, match="another run has been committing to"):
        second.acquire(wait=0.2)
    first.release()
    second.acquire(wait=1)
    second.release()
    assert not os.path.exists(os.path.join(out, LOCK_FILE))


def test_the_journal_names_paths_inside_the_output(tmp_path, monkeypatch):
    """Relative paths: a reader in another working folder (or on another machine) finishes it."""
    out = str(tmp_path / "out")
    _old_output(out)
    monkeypatch.setattr(
        transaction, "fault_hook", lambda p: (_ for _ in ()).throw(_Died()) if p == "journal" else None
    )
    with pytest.raises(_Died):
        _overwrite(out)
    with open(os.path.join(out, JOURNAL_FILE)) as f:
        journal = json.load(f)
    assert journal["deletes"][:2] == ["_SUCCESS", "trainingData/_SUCCESS"] or journal["deletes"][:2] == [
        "trainingData/_SUCCESS",
        "_SUCCESS",
    ]
    assert [
        "trainingData/_temporary/w1/file.tfrecord",
        "trainingData/part-00000-of-00001.tfrecord",
    ] in journal["moves"]
    assert journal["markers"] == ["trainingData/_SUCCESS", "_SUCCESS"]
