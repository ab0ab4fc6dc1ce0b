"""What a command, and each worker process of its in-process runner, does around its imports
(`with command_imports(__name__): import ...`), when it runs as the program. A program that
imports a command's module as a library (`from pipelines.tensorize import build_pipeline`)
keeps its process as it was: its collector, and its numpy's threads.

* **The garbage collector paused, then what the imports made frozen.** Importing Beam,
  pyarrow and this package creates about a million Python objects that live as long as the
  process and are no garbage. The cyclic garbage collector would walk all of them in each
  full pass: while they are created, while the job runs and once more when the interpreter
  exits. The imports run with the collector paused, and what they made is then left out of
  its sight (`gc.freeze`). A command's imports and exit took 1.75 s before, 1.1 s after
  (measured, `import pipelines.tensorize`); the bundled sample run 3.15 -> 2.32 s.
* **One OpenBLAS thread** (`OPENBLAS_NUM_THREADS=1` unless set). numpy's OpenBLAS starts a
  thread per core when numpy is imported, and each spins for a while before it sleeps: ~0.1 s
  of CPU in every process (the command's and its worker processes'), for
  nothing: the jobs multiply no matrices.
* **Freed memory kept for reuse** (glibc's malloc; `MALLOC_MMAP_THRESHOLD_` and
  `MALLOC_TRIM_THRESHOLD_` unless set). A job allocates and frees blocks of a few MB for every
  batch (inflated Avro blocks, encoded records, their frames). By default glibc maps such a
  block fresh from the system and unmaps it when freed, or returns the top of its heap, so
  every batch paid page faults for new memory. Blocks under 64 MiB now come from the heap,
  which keeps up to 256 MiB of freed memory: at 4M rows the bundled config's run took ~17,000
  page faults instead of ~110,000-120,000 and 3-5% less CPU, its peak memory unchanged
  (~305 MiB).

Example:
    >>> import gc
    >>> with command_imports():
    ...     import json
    ...     paused = not gc.isenabled()
    >>> paused, gc.isenabled(), gc.get_freeze_count() > 0
    (True, True, True)
"""

from __future__ import annotations

import contextlib
import ctypes
import gc
import os
from collections.abc import Iterator

__all__ = ["MALLOC_SETTINGS", "command_imports", "keep_freed_memory", "objects_set_aside"]

#: glibc malloc settings of a command's processes: environment variable -> (`mallopt`
#: parameter, value). Blocks under 64 MiB from the heap; up to 256 MiB of freed heap kept.
MALLOC_SETTINGS = {
    "MALLOC_MMAP_THRESHOLD_": (-3, 64 << 20),  # M_MMAP_THRESHOLD
    "MALLOC_TRIM_THRESHOLD_": (-1, 256 << 20),  # M_TRIM_THRESHOLD
}


@contextlib.contextmanager
def command_imports(module: str = "__main__") -> Iterator[None]:
    """No cyclic garbage collection inside the block (reference counting frees memory all
    along); at its end, the objects that exist then are left out of every later collection
    (`gc.freeze`) and the collector runs again if it ran before. Numpy imported inside the
    block, or by a process started later, uses one OpenBLAS thread unless the environment
    says otherwise. All of this only where `module` (the `__name__` of the module that
    imports) is `"__main__"`: a library's import changes nothing."""
    if module != "__main__":
        yield
        return
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    keep_freed_memory()
    running = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if running:
            gc.enable()


def keep_freed_memory() -> list[str]:
    """Applies `MALLOC_SETTINGS` that the environment does not set: to this process (glibc's
    `mallopt`; nothing where the C library has none) and, through the environment, to the
    processes it starts. Returns the variables it set.

    Example (what a command's process gets where the environment sets neither)::

        >>> sorted((name, value) for name, (_, value) in MALLOC_SETTINGS.items())
        [('MALLOC_MMAP_THRESHOLD_', 67108864), ('MALLOC_TRIM_THRESHOLD_', 268435456)]
    """
    wanted = {name: setting for name, setting in MALLOC_SETTINGS.items() if name not in os.environ}
    if not wanted:
        return []
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError):  # not glibc (macOS, Windows, musl without it)
        return []
    for name, (parameter, value) in wanted.items():
        if mallopt(parameter, value) == 1:
            os.environ[name] = str(value)
    return [name for name in wanted if name in os.environ]


@contextlib.contextmanager
def objects_set_aside() -> Iterator[None]:
    """The objects that exist when the block starts are left out of the garbage collector's
    passes inside it (`gc.freeze`), and given back to it at its end (`gc.unfreeze`); what the
    block makes is collected as usual. A program that runs a job in its own process
    (`pipelines.tensorize.main([...])`) with a large heap paid for full passes over it: with
    TensorFlow and TF Transform imported (~510,000 objects), one pass during a 1M-row run took
    0.38 s. Nothing is done where objects are frozen already (a command's imports, see
    `command_imports`, or the program's own `gc.freeze`): which are whose is not known.

    Example:
        >>> frozen = gc.get_freeze_count()
        >>> with objects_set_aside():
        ...     inside = gc.get_freeze_count()
        >>> frozen > 0 or (inside > 0 and gc.get_freeze_count() == 0)
        True
    """
    if gc.get_freeze_count():
        yield
        return
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
