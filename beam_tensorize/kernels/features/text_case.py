"""Lower- and upper-casing of string arrays, as Arrow's `utf8_lower` / `utf8_upper` do, ~30x
faster on text that is all ASCII (the usual feature names, terms and ids).

Arrow's UTF-8 kernels decode every code point and look up its mapping, even in ASCII text
(~18 ns a string of 8 characters). Where no byte of an array's data is 0x80 or above, every
string is ASCII (every byte of a multi-byte UTF-8 sequence has that bit set), and the ASCII
kernels give the same strings.

Example:
    >>> import pyarrow as pa
    >>> lower_case(pa.array(["Drama", None, "Sci-Fi"])).to_pylist()
    ['drama', None, 'sci-fi']
    >>> upper_case(pa.array(["Ärger", "x"])).to_pylist()  # not ASCII: Arrow's UTF-8 kernel
    ['ÄRGER', 'X']
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["lower_case", "upper_case"]


def lower_case(values):
    """`pc.utf8_lower(values)`, by the ASCII kernel where `values` is all ASCII."""
    return (pc.ascii_lower if _all_ascii(values) else pc.utf8_lower)(values)


def upper_case(values):
    """`pc.utf8_upper(values)`, by the ASCII kernel where `values` is all ASCII."""
    return (pc.ascii_upper if _all_ascii(values) else pc.utf8_upper)(values)


def _all_ascii(values) -> bool:
    """Whether `values` is a string array no byte of whose data buffer is 0x80 or above (the
    whole buffer: a slice's neighbours count too, which only ever sends it to the UTF-8 kernel)."""
    if not isinstance(values, pa.Array) or not (
        pa.types.is_string(values.type) or pa.types.is_large_string(values.type)
    ):
        return False
    data = values.buffers()[2]
    return data is None or not (np.frombuffer(data, np.uint8) >= 0x80).any()
