"""One atomic switch from an output's old contents to its new ones: stage, lock, journal, roll
forward.

A run never changes a committed output piece by piece. Everything it will put into the output
(metadata, feature lists, report, dead letters) is first written under
`<output>/_temporary/<run>/stage/` (its data files under their own temporary folders); then
`Transaction` does, in this order:

1. takes the output's commit lock (`_commit.lock`; one commit at a time, so two runs appending
   at once are both listed);
2. reads the output as it is now and decides what changes (which old files go, where each new
   file lands, which `_SUCCESS` markers come back), checking that it may delete and create them;
3. writes that decision as one journal file, `<output>/_commit.json`: the commit point;
4. rolls forward: deletes `_SUCCESS` first, then the replaced files, moves the new ones into
   place, writes the markers, removes its temporary folders, and deletes the journal last.

Until the journal exists the old output is untouched, and a run that dies leaves only
temporary files (removed by the next run). Once it exists, the new output is complete in its
staged files and the journal says how to finish: `recover` rolls it forward, and every reader
(`make_dataset`, `Dataset.from_output`, `Preprocessor.from_output`) and every writer calls it
first. Every step of the roll forward may run again: a staged file is moved only while it is
there, so a reader sees the whole old output or the whole new one, never a mix.

On local folders the lock is `flock`, released by the kernel when its process dies; on object
stores it is a lock object created only if absent (S3: a conditional put, `If-None-Match: *`;
GCS: a generation precondition, `ifGenerationMatch=0`), taken over when older than
`STALE_LOCK_SECONDS` by a write conditional on the dead lock's own version (ETag / generation),
so of two runs taking it over one wins (those stores offer no lock that dies with its process).

Example:
    >>> import os, tempfile
    >>> out = tempfile.mkdtemp()
    >>> with Transaction(out) as txn:
    ...     txn.write_text(os.path.join(out, "metadata", "m.json"), "{}")
    ...     txn.mark(os.path.join(out, "_SUCCESS"))
    >>> sorted(os.listdir(out)), os.listdir(os.path.join(out, "metadata"))
    (['_SUCCESS', 'metadata'], ['m.json'])
"""

from __future__ import annotations

import errno
import json
import logging
import os
import posixpath
import signal
import time
import uuid
from collections.abc import Callable, Iterable

from beam_tensorize.config.errors import TensorizeError
from beam_tensorize.job.file_systems import _is_local
from beam_tensorize.job.files import (
    FileSystems,
    create_file,
    create_if_absent,
    list_files,
    read_text,
    read_versioned,
    replace_if_unchanged,
    write_text_atomically,
)

__all__ = [
    "COMMIT_STEPS",
    "JOURNAL_FILE",
    "LOCK_FILE",
    "CommitConflict",
    "Transaction",
    "kept_folder",
    "recover",
    "refuse_link",
    "staging_folder",
]

_LOGGER = logging.getLogger(__name__)

#: The journal of a commit under way, in the output folder (present = the switch is decided).
JOURNAL_FILE = "_commit.json"
#: The commit lock, in the output folder (present while a commit runs).
LOCK_FILE = "_commit.lock"
#: A lock object on an object store older than this is a dead run's.
STALE_LOCK_SECONDS = 300.0
#: How long a commit (or a reader finishing one) waits for the lock before giving up.
LOCK_WAIT_SECONDS = 600.0
#: The points between the steps of a commit, in order (see `fault_hook`).
COMMIT_STEPS = ("staged", "locked", "journal", "deleted", "moved-one", "moved", "marked", "cleaned")
#: Environment variable naming a point of `COMMIT_STEPS` at which the process kills itself
#: (SIGKILL): how tests show what a reader sees when a job dies there.
FAULT_VARIABLE = "BEAM_TENSORIZE_KILL_AT_COMMIT_STEP"

#: Tests set this to a callable taking the name of the point reached (see `COMMIT_STEPS`).
fault_hook: Callable[[str], None] | None = None


class CommitConflict(TensorizeError, RuntimeError):
    """The output changed in a way this run cannot be added to (another run committed)."""


def _reached(point: str) -> None:
    if os.environ.get(FAULT_VARIABLE) == point:
        os.kill(os.getpid(), signal.SIGKILL)
    if fault_hook is not None:
        fault_hook(point)


def staging_folder(output: str, run: str) -> str:
    """Where run `run` stages the files it will put into `output` (same relative layout)."""
    return posixpath.join(output.rstrip("/"), "_temporary", run, "stage")


def kept_folder(output: str, run: str) -> str:
    """Where run `run` keeps batches between two of its steps (never moved into the output;
    removed with the run's other temporary files)."""
    return posixpath.join(output.rstrip("/"), "_temporary", run, "kept")


class _Lock:
    """The output's commit lock (see the module's docstring)."""

    def __init__(self, output: str, run: str):
        self.path = posixpath.join(output, LOCK_FILE)
        self.run = run
        self._fd: int | None = None

    def acquire(self, wait: float = LOCK_WAIT_SECONDS) -> None:
        deadline = time.monotonic() + wait
        while not self._try():
            if time.monotonic() > deadline:
                raise CommitConflict(
                    f"another run has been committing to {posixpath.dirname(self.path)} for over "
                    f"{wait:g} s (its lock: {self.path}); try again when it has finished"
                )
            time.sleep(0.05)

    def _try(self) -> bool:
        if _is_local(self.path):
            import fcntl

            os.makedirs(os.path.dirname(self.path) or ".", exist_ok=True)
            fd = os.open(self.path, os.O_CREAT | os.O_RDWR, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                return False
            try:  # the holder before us may have unlinked the file it locked
                same = os.fstat(fd).st_ino == os.stat(self.path).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                return False
            self._fd = fd
            return True
        mine = json.dumps({"run": self.run, "started": time.time()}).encode()
        created = create_if_absent(self.path, mine)
        if created is not None:
            return created or self._take_over_stale(mine)
        # a store without conditional writes (HDFS): write, then read back; two runs writing at
        # the same moment both find their own lock only in a narrow window
        body = read_text(self.path)
        if body is not None and not _stale(body.encode()):
            return False
        write_text_atomically(self.path, mine.decode())
        body = read_text(self.path)
        return body is not None and json.loads(body).get("run") == self.run

    def _take_over_stale(self, mine: bytes) -> bool:
        """Replace a dead run's lock object, only if it is still the one found stale (two runs
        taking it over at once: one wins)."""
        found = read_versioned(self.path)
        if found is None or not _stale(found[0]):
            return False
        _LOGGER.warning("Taking over the commit lock %s of a run that stopped", self.path)
        return bool(replace_if_unchanged(self.path, mine, found[1]))

    def release(self) -> None:
        if self._fd is not None:
            try:
                os.unlink(self.path)  # before unlocking: a waiter then finds a new file
            except FileNotFoundError:
                pass
            os.close(self._fd)
            self._fd = None
        elif not _is_local(self.path):
            _delete_quietly([self.path])


def _stale(lock_body: bytes) -> bool:
    """Whether a lock object was written by a run that stopped (older than `STALE_LOCK_SECONDS`)."""
    try:
        started = float(json.loads(lock_body).get("started", 0))
    except (ValueError, AttributeError):
        started = 0.0
    return time.time() - started >= STALE_LOCK_SECONDS


class Transaction:
    """A commit of new contents into `output` (see the module's docstring).

    Use it as a context manager: entering takes the lock (and finishes a commit a dead run left),
    the body reads the output as it is and says what changes (`write_text`, `move`, `delete`,
    `mark`, `cleanup`), leaving takes effect all at once. An exception in the body changes
    nothing (its staged files are removed).

    Args:
        output: the output folder (lock and journal live there).
        run: the run's id: its staged files are under `staging_folder(output, run)` (files
            staged there before the transaction are moved into place too).
    """

    def __init__(self, output: str, run: str | None = None):
        self.output = output.rstrip("/")
        self.run = run or uuid.uuid4().hex
        self.stage = staging_folder(self.output, self.run)
        self._lock = _Lock(self.output, self.run)
        self._deletes: list[str] = []
        self._moves: dict[str, str] = {}  # destination -> source
        self._markers: list[str] = []
        self._cleanup: list[str] = [posixpath.dirname(self.stage)]
        self._aborted = False

    # -- what the body says ------------------------------------------------------------------

    def staged_path(self, path: str) -> str:
        """Where `path` (inside the output) is staged."""
        return posixpath.join(self.stage, self._relative(path))

    def write_text(self, path: str, text: str) -> None:
        """`path` (inside the output) gets `text` at the commit."""
        self.write_bytes(path, text.encode("utf-8"))

    def write_bytes(self, path: str, data: bytes) -> None:
        """`path` (inside the output) gets `data` at the commit."""
        staged = self.staged_path(path)
        with create_file(staged) as f:
            f.write(data)
        self._moves[path] = staged

    def move(self, source: str, destination: str) -> None:
        """`source` (a file written by this run) becomes `destination` at the commit."""
        self._moves[destination] = source

    def delete(self, paths: Iterable[str]) -> None:
        """These files of the output go at the commit (a file also a destination is replaced)."""
        self._deletes += list(paths)

    def mark(self, path: str) -> None:
        """An empty `path` (a `_SUCCESS` marker) is written after everything else; an existing
        one is deleted first, so readers see the output as incomplete while it changes."""
        self._markers.append(path)

    def cleanup(self, path: str) -> None:
        """A temporary folder (or file) of this run, removed after the commit."""
        self._cleanup.append(path)

    def abort(self) -> None:
        """Commit nothing: leaving the transaction only removes this run's temporary files."""
        self._aborted = True

    # -- taking effect -------------------------------------------------------------------------

    def __enter__(self) -> Transaction:
        _reached("staged")
        self._lock.acquire()
        try:
            _roll_forward_left_over(self.output)
            _reached("locked")
        except BaseException:
            self._lock.release()
            raise
        return self

    def __exit__(self, kind, error, trace) -> None:
        if kind is not None or self._aborted:
            self._discard()
            return
        try:
            journal = self._journal()
            _check_places(self.output, _absolute(self.output, journal))
            write_text_atomically(posixpath.join(self.output, JOURNAL_FILE), json.dumps(journal, indent=1))
        except BaseException:
            self._discard()
            raise
        try:
            _reached("journal")
            _roll_forward(self.output, journal)
        finally:  # after the commit point a failure is finished by the next reader or run
            self._lock.release()

    def _discard(self) -> None:
        """Before the commit point: remove this run's temporary files; the output is as it was."""
        _delete_quietly(self._cleanup)
        for folder in _temporary_folders(self._cleanup):
            _remove_empty(folder)
        self._lock.release()

    def _relative(self, path: str) -> str:
        prefix = self.output + "/"
        if not path.startswith(prefix):
            raise ValueError(f"{path} is not inside the output {self.output}")
        return path[len(prefix) :]

    def _journal(self) -> dict:
        for staged in list_files(posixpath.join(self.stage, "**")):  # staged before the body too
            destination = posixpath.join(self.output, staged[len(self.stage) + 1 :])
            self._moves.setdefault(destination, staged)
        destinations = set(self._moves)
        markers = sorted(set(self._markers), key=lambda m: (-m.count("/"), m))  # the top one last
        deletes = [
            # `_SUCCESS` first: from here on readers see the output as incomplete
            *(m for m in reversed(markers) if FileSystems.exists(m)),
            *sorted({p for p in self._deletes if p not in destinations and p not in markers}),
        ]
        relative = self._relative
        return {  # paths relative to the output: a reader elsewhere can finish it
            "version": 1,
            "run": self.run,
            "deletes": [relative(p) for p in deletes],
            "moves": [[relative(source), relative(d)] for d, source in sorted(self._moves.items())],
            "markers": [relative(m) for m in markers],
            "cleanup": [relative(p) for p in self._cleanup],
        }


def recover(output: str, wait: float = LOCK_WAIT_SECONDS) -> bool:
    """Finish the commit a run left in `output` (its journal exists, its lock is free): roll it
    forward. A reader calls this before reading; a commit in progress is waited for.

    Returns:
        whether there was a commit to finish.

    Raises:
        OSError: the commit cannot be finished (e.g. no permission); the message says how.
    """
    output = output.rstrip("/")
    journal = posixpath.join(output, JOURNAL_FILE)
    if not FileSystems.exists(journal):
        return False
    lock = _Lock(output, uuid.uuid4().hex)
    lock.acquire(wait)
    try:
        return _roll_forward_left_over(output)
    finally:
        lock.release()


def _roll_forward_left_over(output: str) -> bool:
    path = posixpath.join(output, JOURNAL_FILE)
    text = read_text(path)
    if text is None:
        return False
    _LOGGER.warning("Finishing the commit into %s that an earlier run left (%s)", output, path)
    try:
        _roll_forward(output, json.loads(text))
    except OSError as err:
        raise OSError(
            f"{output} holds a commit an earlier run did not finish ({path}), and finishing it "
            f"failed: {err}; make the output writable and run again (or read it as that user)"
        ) from None
    return True


def _roll_forward(output: str, journal: dict) -> None:
    """Carry out the journal; every step may be repeated (see the module's docstring)."""
    journal = _absolute(output, journal)
    for path in journal["deletes"]:
        _delete_quietly([path], missing_only=True)
    _reached("deleted")
    folders: set[str] = set()
    for i, (source, destination) in enumerate(journal["moves"]):
        if FileSystems.exists(source):
            folder = posixpath.dirname(destination)
            if folder not in folders:
                _make_folder(folder)
                folders.add(folder)
            _replace(source, destination)
        elif not FileSystems.exists(destination):
            raise OSError(f"the commit lost {destination}: neither it nor {source} exists")
        if i == 0:
            _reached("moved-one")
    _reached("moved")
    for marker in journal["markers"]:
        with create_file(marker):
            pass
    _reached("marked")
    _delete_quietly(journal["cleanup"])
    for folder in _temporary_folders([*journal["cleanup"], *(source for source, _ in journal["moves"])]):
        _remove_empty(folder)  # other runs may be writing there: only when empty
    _reached("cleaned")
    FileSystems.delete([posixpath.join(output, JOURNAL_FILE)])


def _absolute(output: str, journal: dict) -> dict:
    def place(path: str) -> str:
        return posixpath.join(output, path)

    return {
        **journal,
        "deletes": [place(p) for p in journal["deletes"]],
        "moves": [[place(s), place(d)] for s, d in journal["moves"]],
        "markers": [place(m) for m in journal["markers"]],
        "cleanup": [place(p) for p in journal["cleanup"]],
    }


def _temporary_folders(paths: Iterable[str]) -> list[str]:
    """The `_temporary` folders holding `paths`, innermost first."""
    found = set()
    for path in paths:
        parts = path.split("/")
        found.update("/".join(parts[: i + 1]) for i, part in enumerate(parts[:-1]) if part == "_temporary")
    return sorted(found, key=lambda f: (-f.count("/"), f))


def _replace(source: str, destination: str) -> None:
    if _is_local(source) and _is_local(destination):
        os.replace(source, destination)  # atomic, replacing an old file of the same name
        return
    if FileSystems.exists(destination):
        FileSystems.delete([destination])
    FileSystems.rename([source], [destination])


def _check_places(output: str, journal: dict) -> None:
    """Before the commit point: on local folders, every file to delete or create lies inside
    the output with no symbolic link on the way, in folders this process may write."""
    if not _is_local(output):
        return
    paths = [*journal["deletes"], *(d for _, d in journal["moves"]), *journal["markers"]]
    for path in paths:
        _check_no_link(output, path)
        folder = os.path.dirname(path)
        while not os.path.exists(folder) and folder.startswith(output):
            folder = os.path.dirname(folder)
        if not os.access(folder, os.W_OK | os.X_OK):
            raise PermissionError(
                errno.EACCES,
                f"cannot replace files in {folder} (no write permission); nothing of this run was "
                f"committed and {output} is as it was; make it writable and run again",
            )


def _check_no_link(output: str, path: str) -> None:
    relative = path[len(output) + 1 :] if path.startswith(output + "/") else None
    if relative is None:
        raise ValueError(f"{path} is not inside the output {output}")
    current = output
    for part in relative.split("/"):
        current = os.path.join(current, part)
        refuse_link(current)


def refuse_link(path: str) -> None:
    """Raise ValueError if the local `path` is a symbolic link: nothing is deleted or replaced
    through one (it could lead out of the output)."""
    if os.path.islink(path):
        raise ValueError(
            f"{path} is a symbolic link (to {os.readlink(path)}): a commit replaces files only inside "
            "the output folder; replace the link with a folder, or choose another output"
        )


def _make_folder(folder: str) -> None:
    if _is_local(folder):
        os.makedirs(folder, exist_ok=True)
    elif not FileSystems.exists(folder):
        try:
            FileSystems.mkdirs(folder)
        except OSError:  # created meanwhile, or object stores without folders
            pass


def _delete_quietly(paths: list[str], missing_only: bool = False) -> None:
    """Delete; a path already gone is fine. `missing_only`: other errors are raised."""
    for path in paths:
        try:
            if _is_local(path):
                if os.path.isdir(path) and not os.path.islink(path):
                    import shutil

                    shutil.rmtree(path)
                elif os.path.lexists(path):
                    os.unlink(path)
            elif FileSystems.exists(path) or list_files(posixpath.join(path, "**")):
                FileSystems.delete([path])
        except FileNotFoundError:
            pass
        except OSError:
            if missing_only:
                raise
            _LOGGER.debug("Could not delete %s", path, exc_info=True)


def _remove_empty(folder: str) -> None:
    if _is_local(folder):
        try:
            os.rmdir(folder)
        except OSError:
            pass
    elif not list_files(posixpath.join(folder, "**")):
        _delete_quietly([folder])
