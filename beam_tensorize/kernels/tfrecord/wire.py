r"""Protobuf wire pieces for every row at once: byte matrices, varints, their concatenation.

`example_encoder`'s numpy / pyarrow path builds each row's message from pieces held as
`ByteRows` (a ``[rows, width]`` byte matrix and a mask of the bytes each row uses): the varint
lengths (`varint`), constant tags and keys (`constant`), pieces kept on some rows only
(`masked`, `scatter_rows`); `concat_parts` joins them row by row into one Arrow binary array.

Example:
    >>> import numpy as np
    >>> import pyarrow as pa
    >>> lengths = varint(np.array([1, 300]))
    >>> concat_parts([constant(b"\x0a", 2), lengths], 2, pa.binary()).to_pylist()
    [b'\n\x01', b'\n\xac\x02']
    >>> varint_bytes(300)
    b'\xac\x02'
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

__all__ = [
    "ByteRows",
    "concat_parts",
    "constant",
    "masked",
    "offsets_buffer",
    "scatter_rows",
    "varint",
    "varint_bytes",
]


class ByteRows:
    """Per-row byte strings held as a ``[n, width]`` matrix plus a mask.

    Row ``i`` is ``matrix[i][mask[i]]``; ``lengths[i] == mask[i].sum()``.
    """

    __slots__ = ("lengths", "mask", "matrix")

    def __init__(self, matrix: np.ndarray, mask: np.ndarray | None, lengths: np.ndarray):
        self.matrix = matrix
        self.mask = mask  # None: every byte of every row is used
        self.lengths = lengths


def varint(values: np.ndarray) -> ByteRows:
    """Encodes non-negative (or uint64-viewed) integers as protobuf varints.

    Args:
        values: 1-D array of uint64 (negative int64 viewed as uint64 encode as
            10-byte varints, as protobuf does for int64 fields).

    Returns:
        The varints as a masked byte matrix, one row per value.
    """
    values = values.astype(np.uint64, copy=False)
    n = values.shape[0]
    top = int(values.max()) if n else 0
    width = max(1, (top.bit_length() + 6) // 7)
    if width == 1:
        return ByteRows(values.astype(np.uint8).reshape(n, 1), None, np.ones(n, np.int64))
    matrix = np.empty((n, width), np.uint8)
    mask = np.empty((n, width), np.bool_)
    mask[:, 0] = True
    lengths = np.ones(n, np.int64)
    rest = values
    for j in range(width):
        low = (rest & np.uint64(0x7F)).astype(np.uint8)
        if j + 1 < width:
            rest = rest >> np.uint64(7)
            more = rest != 0
            mask[:, j + 1] = more
            lengths += more
            low |= more.view(np.uint8) << np.uint8(7)
        matrix[:, j] = low
    return ByteRows(matrix, mask, lengths)


def constant(data: bytes, n: int, rows: np.ndarray | None = None) -> ByteRows:
    """The same bytes on every row (or only on rows where ``rows`` is true)."""
    width = len(data)
    matrix = np.broadcast_to(np.frombuffer(data, np.uint8), (n, width))
    if rows is None:
        return ByteRows(matrix, None, np.full(n, width, np.int64))
    mask = np.broadcast_to(rows[:, None], (n, width))
    return ByteRows(matrix, mask, rows.astype(np.int64) * width)


def masked(part: ByteRows, rows: np.ndarray) -> ByteRows:
    """Keeps ``part`` only on rows where ``rows`` is true."""
    mask = rows[:, None] if part.mask is None else part.mask & rows[:, None]
    mask = np.broadcast_to(mask, part.matrix.shape)
    return ByteRows(part.matrix, mask, np.where(rows, part.lengths, 0))


def offsets_buffer(lengths_or_offsets: np.ndarray, large: bool, *, cumulative: bool) -> pa.Buffer:
    """An Arrow offsets buffer (int64 when `large`, else int32) from row lengths (`cumulative`:
    summed from 0) or from offsets as they are."""
    if cumulative:
        offsets = np.zeros(lengths_or_offsets.shape[0] + 1, np.int64)
        np.cumsum(lengths_or_offsets, out=offsets[1:])
    else:
        offsets = lengths_or_offsets
    return pa.py_buffer(np.ascontiguousarray(offsets, dtype=np.int64 if large else np.int32))


def concat_parts(parts: list[ByteRows], n: int, binary_type: pa.DataType) -> pa.Array:
    """Concatenates masked byte matrices row-wise into one binary array."""
    width = sum(p.matrix.shape[1] for p in parts)
    matrix = np.empty((n, width), np.uint8)
    mask = None
    if any(p.mask is not None for p in parts):
        mask = np.ones((n, width), np.bool_)
    lengths = np.zeros(n, np.int64)
    column = 0
    for part in parts:
        stop = column + part.matrix.shape[1]
        matrix[:, column:stop] = part.matrix
        if part.mask is not None:
            mask[:, column:stop] = part.mask
        lengths += part.lengths
        column = stop
    data = matrix.reshape(-1) if mask is None else matrix[mask]
    large = binary_type == pa.large_binary()
    return pa.Array.from_buffers(
        binary_type,
        n,
        [None, offsets_buffer(lengths, large, cumulative=True), pa.py_buffer(data)],
    )


def scatter_rows(part: ByteRows, present: np.ndarray) -> ByteRows:
    """Spreads one matrix row per present row over all rows (absent rows empty)."""
    n = present.shape[0]
    if part.matrix.shape[0] == n:
        return part
    matrix = np.zeros((n, part.matrix.shape[1]), np.uint8)
    matrix[present] = part.matrix
    mask = np.zeros(matrix.shape, np.bool_)
    mask[present] = True if part.mask is None else part.mask
    lengths = np.zeros(n, np.int64)
    lengths[present] = part.lengths
    return ByteRows(matrix, mask, lengths)


def varint_bytes(value: int) -> bytes:
    out = bytearray()
    while True:
        low = value & 0x7F
        value >>= 7
        if value:
            out.append(low | 0x80)
        else:
            out.append(low)
            return bytes(out)
