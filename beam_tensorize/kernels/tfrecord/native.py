"""The optional C extension ``_tfrecordencode`` (it takes Arrow buffers as
`beam_tensorize.kernels.arrow_types.binary_offsets` gives them).

``setup.py`` builds the extension where a C compiler is found; `framing` frames records with it
and `example_encoder` encodes Examples with it, each keeping a numpy / pyarrow path that gives
the same bytes. `native()` gives the extension, or None when it is not built (or has another
version) or when the environment variable ``BEAM_TENSORIZE_TFRECORD_ENCODER`` (`NATIVE_ENV`)
is ``python``, which forces the numpy / pyarrow code (read at every call).
"""

from __future__ import annotations

import functools
import os
from typing import Any

from beam_tensorize.kernels.extensions import load_extension

__all__ = ["NATIVE_ENV", "extension", "native"]


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
