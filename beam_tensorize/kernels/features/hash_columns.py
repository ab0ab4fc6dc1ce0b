"""Hashing applied to Arrow columns: scalar and list columns into ids, name-term-value lists
into sparse vectors, and what one hashing saw (`DistinctHashes`, for the run report).

Part of the hashing kernel (`beam_tensorize.kernels.features.hashing`); the hash functions
themselves are in `beam_tensorize.kernels.features.hash_functions`.

Canonical string of a value (what gets hashed): strings as their UTF-8 bytes; binary values as
their raw bytes; integers in decimal (``-12``); booleans ``true`` / ``false``; floating-point numbers
as Spark's ``CAST(x AS STRING)`` / Java's ``toString`` (``1.0``, ``1.0E7``, ``NaN``; a float32
value uses the shortest digits that round-trip it, ``0.1``); decimals as Arrow prints them.

Output layout:

* :func:`hash_column`: each value gives ``k`` ids in function order; a list gives its values' ids
  element-major (``e0f0, e0f1, e1f0, ...``); null values inside a list are skipped. A null scalar,
  a null list or a list with no non-null value gives the dummy id ``n`` repeated ``k`` times.
* :func:`hash_ntv`: each name-term-value entry hashes ``name + "," + term`` (Avro2TF's feature-list
  entry; a null name or term is written ``null`` as Scala's string interpolation does, a null value
  counts as 0.0) and puts its value on each of its ``k`` ids; values meeting in one bucket of one row
  merge with the combiner (``SUM``, ``AVG`` = mean of those values, ``MAX``). Rows are sparse
  vectors with ascending ids; a null or empty NTV gives an empty vector. :func:`sparse_to_dense`
  turns them into dense vectors of length ``n`` (``isSparse: false``).

Only the distinct values of a batch are hashed; ids reach the rows with a ``take``.

Deliberate differences from Avro2TF itself (they hold under ``avro2tf_md5`` too): Avro2TF gives a
null scalar or a null / empty list a single dummy id rather than ``k``, gives a null / empty NTV the
entry ``(n, 0.0)`` rather than an empty vector, and combines NTV values in float32.

Example:
    >>> import pyarrow as pa
    >>> from beam_tensorize.config.model import HashInfo
    >>> canonical_strings(pa.array([1.0, 1e7, None])).to_pylist()
    ['1.0', '1.0E7', None]
    >>> hash_column(pa.array(["Drama", None]), HashInfo(hash_bucket_size=100)).to_pylist()
    [[40], [100]]
    >>> hash_column(pa.array([7]), HashInfo(100, num_hash_functions=2)).to_pylist()
    [[10, 80]]
    >>> ntv = pa.array([[{"name": "g", "term": "a", "value": 2.0}, {"name": "g", "term": "b", "value": 3.0}]])
    >>> indices, values = hash_ntv(ntv, HashInfo(hash_bucket_size=1, combiner="MAX"))
    >>> indices.to_pylist(), values.to_pylist()
    ([[0]], [[3.0]])
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_tensorize.config.model import COMBINERS, HashInfo, TensorConfig
from beam_tensorize.kernels.arrow_types import as_large_list, is_list_type, list_lengths
from beam_tensorize.kernels.features.conversion import is_hashed_ntv
from beam_tensorize.kernels.features.expressions import cast_like_spark
from beam_tensorize.kernels.features.hash_functions import (  # the private ones: shared helpers
    _U64,
    _as_binary,
    _check_hashing,
    _combine,
    _fingerprints,
    hash_buckets,
)
from beam_tensorize.kernels.features.ntv import is_ntv, ntv_triples
from beam_tensorize.kernels.features.sparse import combine_sparse

__all__ = [
    "DistinctHashes",
    "canonical_strings",
    "distinct_hashes",
    "hash_column",
    "hash_ntv",
]


# --- canonical strings -----------------------------------------------------------------------


def canonical_strings(values: pa.Array) -> pa.Array:
    """The strings that represent flat values when hashing (see the module docstring).

    Args:
        values: a flat array of strings, binary, integers, floats, decimals or booleans (a
            dictionary array or a chunked array is accepted too).

    Returns:
        A ``string`` / ``large_string`` array (``binary`` / ``large_binary`` for binary input),
        nulls where the input is null.

    Raises:
        ValueError: the type has no canonical string (lists, structs, dates, ...).
    """
    values = _combine(values)
    t = values.type
    if pa.types.is_dictionary(t):
        return canonical_strings(values.dictionary).take(values.indices)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return values
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return values
    if pa.types.is_fixed_size_binary(t) or pa.types.is_binary_view(t):
        return values.cast(pa.binary())
    if pa.types.is_string_view(t):
        return values.cast(pa.string())
    if pa.types.is_null(t):
        return pa.nulls(len(values), pa.string())
    if pa.types.is_floating(t):
        return cast_like_spark(values, "string")
    if pa.types.is_boolean(t) or pa.types.is_integer(t) or pa.types.is_decimal(t):
        return values.cast(pa.string())
    raise ValueError(f"cannot hash values of type {t}: expected strings, bytes, numbers or booleans")


# --- columns ---------------------------------------------------------------------------------


def hash_column(column: pa.Array, hash_info: HashInfo) -> pa.LargeListArray:
    """Hash a scalar or flat-list column into ``large_list<int64>`` ids per row.

    Args:
        column: scalars (strings, bytes, numbers, booleans) or lists of them.
        hash_info: bucket count ``n``, number of hash functions ``k`` and hash function.

    Returns:
        Per row, ``k`` ids per non-null value (element-major), or ``k`` dummy ids ``n`` for a
        null scalar, a null list or a list without non-null values.

    Raises:
        ValueError: lists of lists, structs or other unhashable types; too many hash functions.
    """
    return _hash_column(column, hash_info, keep=False)[0]


def _hash_column(
    column: pa.Array, hash_info: HashInfo, keep: bool
) -> tuple[pa.LargeListArray, DistinctHashes | None]:
    """`hash_column`, and what it hashed when `keep` (else None)."""
    n, k = hash_info.hash_bucket_size, hash_info.num_hash_functions
    _check_hashing(n, k, hash_info.hash_function)
    flat, counts = _flat_values(column)
    ids, distinct = _hash_distinct(flat, hash_info, keep)  # [values, k]
    out_counts = np.where(counts > 0, counts * k, k).astype(np.int64)
    if counts.all():  # no row needs the dummy id
        out = ids.reshape(-1)
    else:
        out = np.full(int(out_counts.sum()), n, dtype=np.int64)
        out[np.repeat(counts > 0, out_counts)] = ids.reshape(-1)
    offsets = np.concatenate([[0], np.cumsum(out_counts)]).astype(np.int64)
    hashed = pa.LargeListArray.from_arrays(pa.array(offsets), pa.array(out, pa.int64()))
    if distinct is not None:
        distinct.dummy_rows = int((counts == 0).sum())
    return hashed, distinct


def _flat_values(column: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """The non-null values of a column of scalars or flat lists, and how many each row holds.

    Raises:
        ValueError: lists of lists, structs or maps.
    """
    column = _combine(column)
    if is_list_type(column.type):
        item = column.type.value_type
        if is_list_type(item) or pa.types.is_struct(item) or pa.types.is_map(item):
            raise ValueError(f"cannot hash a list of {item}: only flat lists of scalar values are supported")
        column = as_large_list(column)
        lengths = list_lengths(column)
        flat = column.flatten()
    else:
        if pa.types.is_struct(column.type) or pa.types.is_map(column.type):
            raise ValueError(f"cannot hash a column of type {column.type}")
        lengths = np.ones(len(column), dtype=np.int64)
        flat = column
    if not flat.null_count:
        return flat, lengths
    valid = np.asarray(flat.is_valid(), dtype=bool)
    valid_before = np.concatenate([[0], np.cumsum(valid, dtype=np.int64)])
    row_start = np.concatenate([[0], np.cumsum(lengths)])
    return flat.filter(pa.array(valid)), valid_before[row_start[1:]] - valid_before[row_start[:-1]]


def hash_ntv(ntv: pa.Array, hash_info: HashInfo) -> tuple[pa.LargeListArray, pa.LargeListArray]:
    """Hash NTV (name-term-value) lists into sparse vectors.

    Args:
        ntv: ``list<struct<name, term, value>>`` (large or not), e.g. from ``select_ntv``.
        hash_info: bucket count, hash functions, hash function and combiner.

    Returns:
        ``(indices, values)``: ``large_list<int64>`` ids ascending and unique per row, and
        ``large_list<double>`` their combined values. A null or empty row gives empty lists.

    Raises:
        ValueError: ``ntv`` is not a list of records with ``name``, ``term`` and ``value``.
    """
    indices, values, _ = _hash_ntv(ntv, hash_info, keep=False)
    return indices, values


def _hash_ntv(
    ntv: pa.Array, hash_info: HashInfo, keep: bool
) -> tuple[pa.LargeListArray, pa.LargeListArray, DistinctHashes | None]:
    """`hash_ntv`, and what it hashed when `keep` (else None)."""
    n, k = hash_info.hash_bucket_size, hash_info.num_hash_functions
    _check_hashing(n, k, hash_info.hash_function)
    if hash_info.combiner not in COMBINERS:
        raise ValueError(f"combiner {hash_info.combiner!r} is not one of {', '.join(COMBINERS)}")
    row_of, keys, values = ntv_triples(_combine(ntv))
    ids, distinct = _hash_distinct(keys, hash_info, keep)
    ids = ids.reshape(-1)  # entry-major, k per entry
    indices, values = combine_sparse(
        np.repeat(row_of, k), ids, np.repeat(values, k), len(ntv), hash_info.combiner
    )
    return indices, values, distinct  # a null or empty NTV gives an empty vector: no dummy id


@dataclass
class DistinctHashes:
    """What one hashing of a tensor's values saw, per distinct value: for the run report's
    bucket loads and collisions (see `beam_tensorize.kernels.report.statistics`), so that the
    report does not hash the values again.

    Attributes:
        counts: int64 occurrences of each distinct value (each at least 1).
        ids: int64 ``[distinct, k]``: each distinct value's bucket id under each hash function.
        fingerprints: uint64 FarmHash Fingerprint64 of each distinct value's canonical string
            when the tensor hashes with one fingerprint function (the default), else None.
        keys: the distinct values' canonical strings (what the hash functions read) when
            ``fingerprints`` is None, else None.
        dummy_rows: rows given the dummy id (a null scalar, a null list, a list without values).
    """

    counts: np.ndarray
    ids: np.ndarray
    fingerprints: np.ndarray | None = None
    keys: pa.Array | None = None
    dummy_rows: int = 0


def distinct_hashes(column: pa.Array, tensor: TensorConfig) -> DistinctHashes:
    """What the hashing step sees of `tensor`'s column (its `hashInfo`), without building the
    hashed rows.

    Raises:
        ValueError: as `hash_tensors` for a column the tensor cannot hash.
    """
    hash_info = tensor.input.transform_config.hash_info
    _check_hashing(hash_info.hash_bucket_size, hash_info.num_hash_functions, hash_info.hash_function)
    column = _combine(column)
    if is_hashed_ntv(tensor) and is_ntv(column.type):
        # A null or empty NTV gives an empty vector: no dummy id.
        return _hash_distinct(ntv_triples(column)[1], hash_info, keep=True)[1]
    flat, counts = _flat_values(column)
    distinct = _hash_distinct(flat, hash_info, keep=True)[1]
    distinct.dummy_rows = int((counts == 0).sum())
    return distinct


def _hash_distinct(
    values: pa.Array, hash_info: HashInfo, keep: bool = False
) -> tuple[np.ndarray, DistinctHashes | None]:
    """``[len(values), k]`` int64 ids of non-null flat values, hashing each distinct value once;
    and, when `keep`, what was hashed (else None)."""
    n, k = hash_info.hash_bucket_size, hash_info.num_hash_functions
    one_fingerprint = k == 1 and hash_info.hash_function == "fingerprint"
    if len(values) == 0:  # (of any type, even null)
        empty = np.zeros((0, k), dtype=np.int64)
        if not keep:
            return empty, None
        if one_fingerprint:
            return empty, DistinctHashes(np.zeros(0, np.int64), empty, fingerprints=np.zeros(0, np.uint64))
        return empty, DistinctHashes(np.zeros(0, np.int64), empty, keys=pa.array([], pa.binary()))
    if pa.types.is_dictionary(values.type) and not values.dictionary.null_count:
        encoded = values
    else:
        if pa.types.is_dictionary(values.type):
            values = values.dictionary_decode()
        encoded = pc.dictionary_encode(values)
    keys = canonical_strings(encoded.dictionary)
    fingerprints = None
    if one_fingerprint:
        fingerprints = _fingerprints(_as_binary(keys))
        table = (fingerprints % _U64(n)).astype(np.int64).reshape(-1, 1)
        keys = None
    else:
        table = np.empty((len(keys), k), dtype=np.int64)
        for j in range(k):
            table[:, j] = hash_buckets(keys, n, j, k, hash_info.hash_function)
    indices = np.asarray(encoded.indices, dtype=np.int64)
    ids = table[indices]
    if not keep:
        return ids, None
    counts = np.bincount(indices, minlength=len(table))
    if not counts.all():  # a dictionary input may hold entries no row uses
        used = counts > 0
        counts, table = counts[used], table[used]
        fingerprints = None if fingerprints is None else fingerprints[used]
        keys = None if keys is None else keys.filter(pa.array(used))
    return ids, DistinctHashes(counts, table, fingerprints, keys)
