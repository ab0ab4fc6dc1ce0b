"""The optional C extension ``_tfrecordencode``, and the Arrow buffers it is handed.

``setup.py`` builds the extension where a C compiler is found; `framing` frames records with it
and `example_encoder` encodes Examples with it, each keeping a numpy / pyarrow path that gives
the same bytes. `native()` gives the extension, or None when it is not built (or has another
version) or when the environment variable ``BEAM_TENSORIZE_TFRECORD_ENCODER`` (`NATIVE_ENV`)
is ``python``, which forces the numpy / pyarrow code (read at every call).

Example:
    >>> import pyarrow as pa
    >>> offsets, data = binary_offsets(pa.array([b"a", b"bc", b"def"]).slice(1))
    >>> offsets.tolist(), offsets.dtype.name, bytes(data)
    ([1, 3, 6], 'int32', b'abcdef')
"""

from __future__ import annotations

import functools
import os
from typing import Any

import numpy as np
import pyarrow as pa

from beam_tensorize.kernels.extensions import load_extension

__all__ = ["NATIVE_ENV", "binary_offsets", "extension", "native"]


#: Environment variable: "python" uses the numpy / pyarrow code instead of the C extension.
NATIVE_ENV = "BEAM_TENSORIZE_TFRECORD_ENCODER"
_NATIVE_VERSION = 1


@functools.lru_cache(maxsize=1)
def extension() -> object | None:
    """The C extension, or None when it is not built or has another version (whatever
    `NATIVE_ENV` says; loaded once)."""
    return load_extension(
        "beam_tensorize.kernels.tfrecord._tfrecordencode",
        _NATIVE_VERSION,
        "TFRecord encoder",
        "numpy / pyarrow",
    )


def native() -> Any:
    """The C extension, or None when it is not built or `NATIVE_ENV` asks for Python."""
    if os.environ.get(NATIVE_ENV, "").lower() == "python":
        return None
    return extension()


def binary_offsets(array: pa.Array) -> tuple[np.ndarray, pa.Buffer | bytes]:
    """The value offsets of a binary / string array's own rows (`len(array) + 1` of them, int64
    for the large types, else int32; contiguous, not rebased to 0) and its data buffer (b"" when
    it has none), as the C extension takes them."""
    large = pa.types.is_large_binary(array.type) or pa.types.is_large_string(array.type)
    buffers = array.buffers()
    if buffers[1] is None:
        offsets = np.zeros(1, np.int64 if large else np.int32)
    else:
        offsets = np.frombuffer(buffers[1], np.int64 if large else np.int32)
        offsets = offsets[array.offset : array.offset + len(array) + 1]
    data = buffers[2] if buffers[2] is not None else b""
    return np.ascontiguousarray(offsets), data
