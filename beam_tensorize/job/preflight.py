"""Checks of the output location made before any data is read: it must be a folder the job can
write to, found out in seconds rather than after the whole job ran.

Example:
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> check_output_writable(folder)
    >>> os.listdir(folder)
    []
"""

from __future__ import annotations

import json
import os
import posixpath
import socket
import threading
import time
import uuid

from beam_tensorize.job.commit import TEMP_FOLDER, check_target, remove_empty_temporary
from beam_tensorize.job.feature_lists import FEATURE_LIST_FOLDER, read_feature_lists
from beam_tensorize.job.files import FileSystems, create_file, list_files, match_files, open_file
from beam_tensorize.job.finish import DEAD_LETTER_FOLDER, SPLIT_FOLDERS
from beam_tensorize.job.metadata import read_metadata
from beam_tensorize.job.spec import TensorizeSpec
from beam_tensorize.job.transaction import recover, refuse_link
from beam_tensorize.kernels.metadata import config_differences, config_fingerprint

__all__ = [
    "RunLock",
    "check_output_place",
    "check_output_writable",
    "check_same_config",
    "live_locks",
    "remove_stale_temporaries",
]

#: Seconds the write probe may take (an unreachable object store retries for minutes).
PROBE_TIMEOUT = 60.0


def check_output_writable(output: str, timeout: float = PROBE_TIMEOUT) -> None:
    """Create and delete a small probe file under `<output>/_temporary/`.

    Raises:
        ValueError: `output` is an existing file, not a folder.
        OSError: the probe cannot be written or deleted (no permission, no network, no
            credentials), or it took more than `timeout` seconds; the message names the output.
    """
    if "://" not in output and os.path.isfile(output):
        raise ValueError(f"the output {output} is a file, not a folder: choose a folder for --output")
    probe = posixpath.join(output.rstrip("/"), TEMP_FOLDER, f".probe-{uuid.uuid4().hex}")

    def write_and_delete() -> None:
        with create_file(probe) as f:
            f.write(b"probe")
        FileSystems.delete([probe])
        remove_empty_temporary(output)

    finished, err = _within(timeout, write_and_delete)
    if not finished:
        raise OSError(
            f"cannot write to the output {output}: no answer within {timeout:g} s; check the "
            "network and the credentials of its file system"
        )
    if err is not None:
        raise OSError(
            f"cannot write to the output {output}: {type(err).__name__}: {err}; check that it is a "
            "folder you may write to (and the credentials of its file system)"
        ) from None


def check_inputs_found(patterns, timeout: float | None = None) -> None:
    """Every input pattern matches a file, found out in at most `timeout` seconds for all the
    patterns together (an object store that does not answer retries for minutes, for each one).

    Raises:
        FileNotFoundError: a pattern matches nothing (object stores: or could not be listed).
        OSError: no answer within `timeout` seconds; the message names the pattern.
    """
    timeout = PROBE_TIMEOUT if timeout is None else timeout
    deadline = time.monotonic() + timeout
    for pattern in patterns:
        finished, err = _within(max(deadline - time.monotonic(), 0.0), match_files, pattern, note=False)
        remote = "://" in pattern and not pattern.startswith("file://")
        if not finished:
            raise OSError(
                f"cannot list the input {pattern}: no answer within {timeout:g} s; check the network "
                "and the credentials of its file system"
            )
        if isinstance(err, FileNotFoundError) and remote:
            raise FileNotFoundError(
                f"{err}; (an object store that cannot be reached also lists nothing: check its address, "
                "e.g. --s3_endpoint_url, the network and the credentials)"
            ) from None
        if err is not None:
            raise err


def _within(timeout: float, function, *args, **kwargs) -> tuple[bool, BaseException | None]:
    """(finished in time, its error or None) of `function(*args, **kwargs)` run in a daemon
    thread (left behind when it does not finish)."""
    errors: list[BaseException | None] = []

    def run() -> None:
        try:
            function(*args, **kwargs)
            errors.append(None)
        except BaseException as err:  # noqa: BLE001 - handed to the caller, whatever it is
            errors.append(err)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(timeout)
    return (True, errors[0]) if errors else (False, None)


def check_same_config(spec: TensorizeSpec) -> None:
    """Refuse a run whose config differs from the one an existing output was written with,
    unless it is a train run overwriting an output that holds only the train split (then the
    output is replaced whole). Another config would make the metadata describe splits it did
    not write (validation / test), or mix ids of two configs in one split (append).

    Raises:
        ValueError: the configs differ; the message names the tensors that differ.
    """
    metadata = read_metadata(spec.output)
    if not metadata or "configFingerprint" not in metadata:
        return
    if metadata["configFingerprint"] == config_fingerprint(spec.config):
        return
    splits = set(metadata.get("data", {}))
    if spec.execution_mode == "train" and spec.save_mode == "overwrite" and splits <= {spec.split}:
        return
    differences = ", ".join(config_differences(spec.config, metadata.get("config", {})))
    raise ValueError(
        f"the output {spec.output} was written with another config ({differences}); give its config, "
        "or write to another --output (a train run may replace an output that holds only trainingData "
        "with --save_mode overwrite)"
    )


def check_output_place(spec: TensorizeSpec) -> None:
    """Before any data is read: with save mode `error`, the split folder must hold no files;
    and (local folders) no symbolic link inside the output, which a commit would replace or
    delete through (`beam_tensorize.job.transaction` refuses them at the commit too).

    Raises:
        FileExistsError: save mode `error` and the split folder holds files.
        ValueError: a symbolic link inside the output; the message names it and its target.
    """
    if spec.save_mode == "error":
        check_target(spec.split_dir, "error")
    root = spec.output.rstrip("/")
    if "://" in root or spec.save_mode == "ignore" or not os.path.isdir(root):
        return
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d != TEMP_FOLDER)
        for name in sorted(dirs + files):
            refuse_link(os.path.join(folder, name))


def check_feature_lists(spec: TensorizeSpec) -> None:
    """Before any data is read, in validation / test mode: the output holds the feature lists
    of its train run (unless external lists are given), each the one its metadata records.

    Raises:
        FileNotFoundError: no lists (no train run into this output).
        ValueError: a list was cut or edited after the train run.
    """
    if spec.execution_mode == "train" or not spec.feature_list_keys:
        return
    folder = posixpath.join(spec.output.rstrip("/"), FEATURE_LIST_FOLDER)
    metadata = read_metadata(spec.output)
    if metadata is None:  # no train run into this output: its lists are missing (unless external)
        required = spec.external_feature_lists is None
    else:  # the lists the train run wrote, as it recorded them
        entries = [*metadata.get("features", []), *metadata.get("labels", [])]
        required = any("featureList" in e for e in entries)
    found = read_feature_lists(
        [folder], spec.config.tensor_names, required=required, metadata_dir=spec.output
    )
    for entry in [] if metadata is None else [*metadata.get("features", []), *metadata.get("labels", [])]:
        path = entry.get("featureList", {}).get("path", "")
        name = posixpath.basename(path)
        if (
            path.startswith(FEATURE_LIST_FOLDER + "/")
            and name in spec.config.tensor_names
            and name not in found
        ):
            raise FileNotFoundError(
                f"{posixpath.join(spec.output.rstrip('/'), path)} is missing: the metadata records it (the "
                "list the train run indexed its records with); restore it, or run train mode again"
            )


#: A running job's lock file, in `<output>/_temporary/`: `.run-<id>.lock`.
_LOCK_PREFIX = ".run-"
#: A lock written on another machine counts as live for this long (its process cannot be checked).
FOREIGN_LOCK_HOURS = 24.0


class RunLock:
    """Marks a job as running into an output: a lock file naming the host and process, removed
    when the job ends. A later job finding no live lock may remove the temporary files of runs
    that were killed (`remove_stale_temporaries`).

    Example:
        >>> import os, tempfile
        >>> folder = tempfile.mkdtemp()
        >>> with RunLock(folder):
        ...     len(live_locks(folder))
        1
        >>> os.listdir(folder)
        []
    """

    def __init__(self, output: str):
        self.output = output.rstrip("/")
        self.path = posixpath.join(self.output, TEMP_FOLDER, f"{_LOCK_PREFIX}{uuid.uuid4().hex}.lock")

    def __enter__(self) -> RunLock:
        body = {"host": socket.gethostname(), "pid": os.getpid(), "started": time.time()}
        with create_file(self.path) as f:
            f.write(json.dumps(body).encode())
        return self

    def __exit__(self, *exc) -> None:
        try:
            FileSystems.delete([self.path])
        except Exception:  # noqa: BLE001 - gone already, or the file system is unreachable
            pass
        remove_empty_temporary(self.output)


def _lock_is_live(path: str) -> bool:
    try:
        with open_file(path) as f:
            body = json.loads(f.read().decode())
    except Exception:  # noqa: BLE001 - unreadable: being written, so live
        return True
    if body.get("host") == socket.gethostname():
        try:
            os.kill(int(body["pid"]), 0)
        except ProcessLookupError:
            return False
        except (PermissionError, KeyError, ValueError, TypeError):
            return True
        return True
    return time.time() - float(body.get("started", 0)) < FOREIGN_LOCK_HOURS * 3600


def live_locks(output: str) -> list[str]:
    """The lock files of jobs running into `output` now (this machine: their process is alive;
    another machine: written in the last `FOREIGN_LOCK_HOURS`)."""
    pattern = posixpath.join(output.rstrip("/"), TEMP_FOLDER, f"{_LOCK_PREFIX}*.lock")
    return [path for path in list_files(pattern) if _lock_is_live(path)]


def remove_stale_temporaries(output: str) -> tuple[int, int]:
    """Finish the commit a killed run left (`beam_tensorize.job.transaction.recover`), then
    remove what killed runs left in the output's temporary folders (`<output>/_temporary/`,
    `<output>/<split>/_temporary/`, `<output>/deadLetters/<split>/_temporary/`), unless a job is
    running into the output now. Only those folders are listed, not the committed data. Call
    it before taking the `RunLock`.

    Returns:
        (files removed, their bytes).
    """
    recover(output)  # first: a killed commit's staged files are the output's new contents
    if live_locks(output):
        return 0, 0
    root = output.rstrip("/")
    splits = SPLIT_FOLDERS.values()
    folders = [root, *(posixpath.join(root, s) for s in splits)]
    folders += [posixpath.join(root, DEAD_LETTER_FOLDER, s) for s in splits]
    removed = size = 0
    for folder in folders:
        stale = _match(posixpath.join(folder, TEMP_FOLDER, "**"))
        if stale:
            FileSystems.delete([m.path for m in stale])
            remove_empty_temporary(folder)  # with the empty sub-folders left behind
            removed += len(stale)
            size += sum(m.size_in_bytes for m in stale)
    return removed, size


def _match(pattern: str) -> list:
    try:
        return list(FileSystems.match([pattern])[0].metadata_list)
    except Exception:  # noqa: BLE001 - a folder that does not exist
        return []
