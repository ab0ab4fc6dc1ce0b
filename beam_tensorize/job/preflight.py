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

import os
import posixpath
import threading
import uuid

from apache_beam.io.filesystems import FileSystems

from beam_tensorize.job.commit import TEMP_FOLDER, remove_empty_temporary
from beam_tensorize.job.files import create_file
from beam_tensorize.job.metadata import read_metadata
from beam_tensorize.job.spec import TensorizeSpec
from beam_tensorize.kernels.metadata import config_differences, config_fingerprint

__all__ = ["check_output_writable", "check_same_config"]

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
    failure: list[BaseException] = []

    def write_and_delete() -> None:
        try:
            with create_file(probe) as f:
                f.write(b"probe")
            FileSystems.delete([probe])
            remove_empty_temporary(output)
        except BaseException as err:  # noqa: BLE001 - reported below, whatever it is
            failure.append(err)

    worker = threading.Thread(target=write_and_delete, daemon=True)
    worker.start()
    worker.join(timeout)
    if worker.is_alive():
        raise OSError(
            f"cannot write to the output {output}: no answer within {timeout:g} s; check the "
            "network and the credentials of its file system"
        )
    if failure:
        err = failure[0]
        raise OSError(
            f"cannot write to the output {output}: {type(err).__name__}: {err}; check that it is a "
            "folder you may write to (and the credentials of its file system)"
        ) from None


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
