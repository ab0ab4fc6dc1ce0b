"""Import TensorFlow without the lines its C++ prints on a machine without a GPU.

A CPU-only machine running the `tensorflow` wheel gets, on every import, lines no setting hides
(they are printed before TensorFlow reads `TF_CPP_MIN_LOG_LEVEL`), and an error line at the first
operation:

    WARNING: All log messages before absl::InitializeLog() is called are written to STDERR
    I0000 ... cudart_stub.cc:31] Could not find cuda drivers on your machine, GPU will not be used.
    I0000 ... port.cc:153] oneDNN custom operations are on. You may see slightly different ...
    E0000 ... cuda_platform.cc:52] failed call to cuInit: INTERNAL: CUDA error: ...

`import_tensorflow` imports TensorFlow and lists its GPUs (which makes the cuInit call, once per
process) while the process's standard error passes through a filter that drops exactly these
lines; every other line is passed on as it comes. A user who imported TensorFlow before us has
seen the import's lines already; the cuInit line is still dropped.

Example:
    >>> tf = import_tensorflow()
    >>> tf.constant(1).numpy()
    np.int32(1)
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import sys
import threading
from collections.abc import Iterator

__all__ = ["NOISE", "import_tensorflow", "without_noise"]

#: The lines dropped: TensorFlow's notes that there is no CUDA driver, and its note (on CPUs
#: with AVX-512 and the like) that its oneDNN kernels are on.
NOISE = re.compile(
    rb"All log messages before absl::InitializeLog\(\) is called are written to STDERR"
    rb"|cudart_stub\.cc:\d+\] Could not find cuda drivers"
    rb"|port\.cc:\d+\] oneDNN custom operations are on"
    rb"|failed call to cuInit"
)

#: Seconds to wait for the last lines after the filter is taken away.
_DRAIN_SECONDS = 5.0


def import_tensorflow():
    """`tensorflow`, imported (if it is not yet) and its GPUs listed, without the no-GPU lines."""
    with without_noise():
        tf = importlib.import_module("tensorflow")
        tf.config.list_physical_devices("GPU")
    return tf


@contextlib.contextmanager
def without_noise(stream: int = 2) -> Iterator[None]:
    """Within the block, lines written to file descriptor `stream` (from Python or C) that match
    `NOISE` are dropped; the others are passed on at once. Does nothing where the descriptor
    cannot be redirected."""
    try:
        sys.stderr.flush()
        saved = os.dup(stream)
        read_end, write_end = os.pipe()
    except (OSError, ValueError, AttributeError):
        yield
        return
    os.dup2(write_end, stream)
    os.close(write_end)
    forwarder = threading.Thread(target=_forward, args=(read_end, saved), daemon=True)
    forwarder.start()
    try:
        yield
    finally:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            sys.stderr.flush()
        os.dup2(saved, stream)  # the pipe's last write end closes: the forwarder reads to its end
        forwarder.join(_DRAIN_SECONDS)
        if not forwarder.is_alive():  # (else a child process holds the pipe: `saved` stays open)
            os.close(saved)


def _forward(read_end: int, target: int) -> None:
    """Copy lines from `read_end` to `target`, leaving out the noise, until the pipe closes."""
    pending = b""
    with open(read_end, "rb", buffering=0, closefd=True) as pipe:
        while chunk := pipe.read(65536):
            lines = (pending + chunk).split(b"\n")
            pending = lines.pop()
            _write(target, b"".join(line + b"\n" for line in lines if not NOISE.search(line)))
    if pending and not NOISE.search(pending):
        _write(target, pending)


def _write(target: int, data: bytes) -> None:
    with contextlib.suppress(OSError):
        while data:
            data = data[os.write(target, data) :]
