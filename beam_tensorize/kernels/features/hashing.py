"""Hash feature values into buckets (Avro2TF's ``hashInfo``), bit-identical to TensorFlow.

Hash functions (``hash_function`` of :class:`~beam_tensorize.config.model.HashInfo`):

* ``fingerprint`` (default), one hash function: bucket = ``Fingerprint64(s) % n``, i.e. exactly
  ``tf.strings.to_hash_bucket_fast(s, n)`` and Keras ``Hashing(n)``.
* ``fingerprint``, ``k > 1`` hash functions: function ``j`` (0-based) is TensorFlow's keyed hash
  ``tf.strings.to_hash_bucket_strong(s, n, key=STRONG_HASH_KEYS[j])`` (SipHash-2-4 with the two
  64-bit key halves), i.e. Keras ``Hashing(n, salt=list(STRONG_HASH_KEYS[j]))``. The keys are fixed:
  ``STRONG_HASH_KEYS[j] = (0x243F6A8885A308D3 + j, 0x13198A2E03707344 + j)`` (hex digits of pi),
  for ``j < MAX_STRONG_HASH_FUNCTIONS`` (64); more functions raise ``ValueError``.
* ``avro2tf_md5``: LinkedIn Avro2TF's salted MD5, for migrations. Function ``j`` hashes
  ``UTF-8(s + salt_j)`` with MD5, reads the 16-byte digest as an unsigned big-endian integer and
  takes it modulo ``n``. ``salt_j`` is the ``j``-th run of 16 characters drawn from
  ``"A-Za-z0-9"`` (in that order) with ``chars[java.util.Random(817294693).nextInt(62)]`` — what
  Scala's ``new Random(817294693).alphanumeric.take(16)`` gives, repeated on one generator; one
  hash function uses the first salt. Source: repository ``linkedin/Avro2TF``, files
  ``avro2tf/src/main/scala/com/linkedin/avro2tf/utils/HashingUtils.scala`` (salts, MD5) and
  ``avro2tf/src/main/scala/com/linkedin/avro2tf/helpers/HashingTransformer.scala`` (``name,term``,
  combiners); salts as produced by Scala 2.11.6+ (the version Spark 2.3 ships).

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

import functools
import hashlib
from collections.abc import Sequence
from dataclasses import dataclass

import farmhash
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from beam_tensorize.config.model import COMBINERS, HASH_FUNCTIONS, HashInfo, TensorConfig
from beam_tensorize.kernels.arrow_types import as_large_list, is_list_type, list_lengths
from beam_tensorize.kernels.features.columns import replace_tensor_columns
from beam_tensorize.kernels.features.conversion import is_hashed_ntv
from beam_tensorize.kernels.features.expressions import cast_like_spark
from beam_tensorize.kernels.features.ntv import is_ntv, ntv_triples
from beam_tensorize.kernels.features.sparse import combine_sparse, sparse_to_dense

__all__ = [
    "AVRO2TF_SALT_LENGTH",
    "AVRO2TF_SALT_SEED",
    "HASH_FUNCTION_REGISTRY",
    "MAX_STRONG_HASH_FUNCTIONS",
    "STRONG_HASH_KEYS",
    "Avro2TFMd5Hash",
    "DistinctHashes",
    "FingerprintHash",
    "HashFunction",
    "avro2tf_salt",
    "canonical_strings",
    "distinct_hashes",
    "hash_buckets",
    "hash_column",
    "hash_ntv",
    "hash_tensors",
    "hash_tensors_with_distinct",
    "hashing_description",
]

#: How many keyed (``k > 1``) fingerprint hash functions are defined.
MAX_STRONG_HASH_FUNCTIONS = 64
#: ``STRONG_HASH_KEYS[j]`` is the ``key`` of ``tf.strings.to_hash_bucket_strong`` (Keras ``salt``)
#: for hash function ``j`` when a feature has several: ``(0x243F6A8885A308D3 + j,
#: 0x13198A2E03707344 + j)``. Both halves stay below 2**63 because TensorFlow takes them as int64.
STRONG_HASH_KEYS: tuple[tuple[int, int], ...] = tuple(
    (0x243F6A8885A308D3 + j, 0x13198A2E03707344 + j) for j in range(MAX_STRONG_HASH_FUNCTIONS)
)
#: Seed of the ``scala.util.Random`` that draws Avro2TF's salts (``HashingUtils._seed``).
AVRO2TF_SALT_SEED = 817294693
#: Characters per Avro2TF salt (``HashingUtils._saltLength``).
AVRO2TF_SALT_LENGTH = 16

_ALPHANUMERIC = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
_U64 = np.uint64


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


# --- hashing of flat strings -----------------------------------------------------------------


def hash_buckets(
    values: pa.Array,
    num_buckets: int,
    function_index: int = 0,
    num_functions: int = 1,
    hash_function: str = "fingerprint",
) -> np.ndarray:
    """Bucket ids of flat strings for one hash function.

    Args:
        values: ``string`` / ``binary`` array (large or not) without nulls; strings hash as UTF-8.
        num_buckets: ``n``; ids are in ``[0, n)``.
        function_index: which of the ``num_functions`` hash functions (0-based).
        num_functions: how many hash functions the feature uses (selects fast vs keyed hashing).
        hash_function: ``fingerprint`` or ``avro2tf_md5``.

    Returns:
        int64 ids, one per value.

    Raises:
        ValueError: bad arguments, nulls, or a non-string input.
    """
    _check_hashing(num_buckets, num_functions, hash_function)
    if not (isinstance(function_index, int) and 0 <= function_index < num_functions):
        raise ValueError(f"function_index must be in [0, {num_functions}), got {function_index!r}")
    data = _as_binary(values)
    if data.null_count:
        raise ValueError("hash_buckets: values must not contain nulls")
    return HASH_FUNCTION_REGISTRY[hash_function].buckets(data, num_buckets, function_index, num_functions)


# --- the hash functions ------------------------------------------------------------------------


class HashFunction:
    """One hash function family of `hashInfo.hashFunction`: `buckets` gives the ids of flat
    binary values for function `function_index` of `num_functions`; `describe` what serving
    needs to reproduce them (added to the metadata's `hashing` entry)."""

    name: str = ""
    #: The most functions one feature may use (None: no limit).
    max_functions: int | None = None

    def buckets(
        self, data: pa.Array, num_buckets: int, function_index: int, num_functions: int
    ) -> np.ndarray:
        raise NotImplementedError

    def describe(self, num_buckets: int, num_functions: int) -> dict:
        raise NotImplementedError


class FingerprintHash(HashFunction):
    """TensorFlow's hashing: one function is `tf.strings.to_hash_bucket_fast` (FarmHash
    Fingerprint64), several are `tf.strings.to_hash_bucket_strong` (SipHash-2-4) keyed by
    `STRONG_HASH_KEYS[j]`."""

    name = "fingerprint"
    max_functions = MAX_STRONG_HASH_FUNCTIONS

    def buckets(self, data, num_buckets, function_index, num_functions):
        if num_functions == 1:
            hashes = _fingerprints(data)
        else:
            hashes = _siphash24(data, *STRONG_HASH_KEYS[function_index])
        return (hashes % _U64(num_buckets)).astype(np.int64)

    def describe(self, num_buckets, num_functions):
        if num_functions == 1:
            return {"tensorflow": f"tf.strings.to_hash_bucket_fast(x, {num_buckets})"}
        return {
            "strongHashKeys": [list(STRONG_HASH_KEYS[j]) for j in range(num_functions)],
            "tensorflow": f"tf.strings.to_hash_bucket_strong(x, {num_buckets}, key=strongHashKeys[j])",
        }


class Avro2TFMd5Hash(HashFunction):
    """Avro2TF's hashing: MD5 of the value followed by the salt of function j, as a big-endian
    integer, modulo the bucket count (`avro2tf_salt`)."""

    name = "avro2tf_md5"

    def buckets(self, data, num_buckets, function_index, num_functions):
        salt = avro2tf_salt(function_index).encode("ascii")
        ids = [int.from_bytes(hashlib.md5(v + salt).digest(), "big") % num_buckets for v in data.to_pylist()]
        return np.array(ids, dtype=np.int64)

    def describe(self, num_buckets, num_functions):
        return {
            "salts": [avro2tf_salt(j) for j in range(num_functions)],
            "tensorflow": "not reproducible with TensorFlow ops (salted MD5)",
        }


#: `hashInfo.hashFunction` name -> its implementation (every name of `HASH_FUNCTIONS`).
HASH_FUNCTION_REGISTRY: dict[str, HashFunction] = {f.name: f for f in (FingerprintHash(), Avro2TFMd5Hash())}
if set(HASH_FUNCTION_REGISTRY) != set(HASH_FUNCTIONS):  # the config accepts exactly these names
    raise ImportError(
        f"hash functions {sorted(HASH_FUNCTION_REGISTRY)} differ from the config's {HASH_FUNCTIONS}"
    )


def avro2tf_salt(function_index: int) -> str:
    """The salt of Avro2TF's hash function ``function_index`` (0-based).

    Args:
        function_index: which hash function.

    Returns:
        16 alphanumeric characters.
    """
    if not (isinstance(function_index, int) and function_index >= 0):
        raise ValueError(f"function_index must be a non-negative integer, got {function_index!r}")
    return _avro2tf_salts(max(64, function_index + 1))[function_index]


@functools.lru_cache(maxsize=4)
def _avro2tf_salts(count: int) -> tuple[str, ...]:
    """First ``count`` salts: successive 16-character runs of one ``scala.util.Random`` stream."""
    rng = _JavaRandom(AVRO2TF_SALT_SEED)
    chars = [_ALPHANUMERIC[rng.next_int(len(_ALPHANUMERIC))] for _ in range(count * AVRO2TF_SALT_LENGTH)]
    text = "".join(chars)
    return tuple(text[i : i + AVRO2TF_SALT_LENGTH] for i in range(0, len(text), AVRO2TF_SALT_LENGTH))


class _JavaRandom:
    """``java.util.Random`` (48-bit LCG): only what Avro2TF's salts need."""

    _MULTIPLIER = 0x5DEECE66D
    _MASK = (1 << 48) - 1

    def __init__(self, seed: int) -> None:
        self._seed = (seed ^ self._MULTIPLIER) & self._MASK

    def _next(self, bits: int) -> int:
        self._seed = (self._seed * self._MULTIPLIER + 0xB) & self._MASK
        return self._seed >> (48 - bits)

    def next_int(self, bound: int) -> int:
        r = self._next(31)
        m = bound - 1
        if bound & m == 0:
            return (bound * r) >> 31
        u = r
        while True:
            r = u % bound
            if u - r + m < 2**31:  # Java retries when this int sum overflows
                return r
            u = self._next(31)


_SIP_INIT = (0x736F6D6570736575, 0x646F72616E646F6D, 0x6C7967656E657261, 0x7465646279746573)


def _siphash24(data: pa.Array, k0: int, k1: int) -> np.ndarray:
    """SipHash-2-4 of every value of a binary array, vectorised over values (uint64)."""
    count = len(data)
    offsets = _binary_offsets(data)
    lengths = np.diff(offsets)
    words = lengths // 8 + 1  # the last word carries the tail bytes and the length byte
    first_word = np.concatenate([[0], np.cumsum(words)[:-1]]).astype(np.int64)
    buffer = np.zeros(int(words.sum()) * 8, dtype=np.uint8)
    total = int(lengths.sum())
    if total:
        raw = np.frombuffer(data.buffers()[2], dtype=np.uint8)[offsets[0] : offsets[0] + total]
        shift = np.repeat(first_word * 8 - (offsets[:-1] - offsets[0]), lengths)
        buffer[shift + np.arange(total)] = raw
    buffer[(first_word + words) * 8 - 1] = (lengths & 0xFF).astype(np.uint8)
    message = buffer.view("<u8")

    order = np.argsort(-words, kind="stable")  # longest first: active values form a prefix
    first_word, words = first_word[order], words[order]
    v0, v1, v2, v3 = (
        np.full(count, init ^ key, dtype=np.uint64) for init, key in zip(_SIP_INIT, (k0, k1, k0, k1))
    )
    tmp = np.empty(count, dtype=np.uint64)
    max_words = int(words[0]) if count else 0
    active_counts = count - np.cumsum(np.bincount(words, minlength=max_words + 1))
    for t in range(max_words):
        a = int(active_counts[t])  # values with more than t words
        s = (slice(0, a),)
        m = message[first_word[:a] + t]
        v3[s] ^= m
        _sip_rounds(v0[s], v1[s], v2[s], v3[s], tmp[s], 2)
        v0[s] ^= m
    v2 ^= _U64(0xFF)
    _sip_rounds(v0, v1, v2, v3, tmp, 4)
    out = np.empty(count, dtype=np.uint64)
    out[order] = v0 ^ v1 ^ v2 ^ v3
    return out


def _rotl(x: np.ndarray, bits: int, tmp: np.ndarray) -> None:
    np.left_shift(x, _U64(bits), out=tmp)
    np.right_shift(x, _U64(64 - bits), out=x)
    x |= tmp


def _sip_rounds(v0, v1, v2, v3, tmp, rounds: int) -> None:
    for _ in range(rounds):
        v0 += v1
        _rotl(v1, 13, tmp)
        v1 ^= v0
        _rotl(v0, 32, tmp)
        v2 += v3
        _rotl(v3, 16, tmp)
        v3 ^= v2
        v0 += v3
        _rotl(v3, 21, tmp)
        v3 ^= v0
        v2 += v1
        _rotl(v1, 17, tmp)
        v1 ^= v2
        _rotl(v2, 32, tmp)


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


def _check_hashing(num_buckets: int, num_functions: int, hash_function: str) -> None:
    for name, value in (("num_buckets", num_buckets), ("num_functions", num_functions)):
        if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    if num_buckets >= 2**63:
        raise ValueError(f"num_buckets must be below 2**63, got {num_buckets}")
    if hash_function not in HASH_FUNCTION_REGISTRY:
        raise ValueError(f"hash_function {hash_function!r} is not one of {', '.join(HASH_FUNCTION_REGISTRY)}")
    limit = HASH_FUNCTION_REGISTRY[hash_function].max_functions
    if limit is not None and num_functions > limit:
        raise ValueError(
            f"numHashFunctions {num_functions} is too large: the {hash_function} hash defines "
            f"{limit} keyed functions (STRONG_HASH_KEYS)"
        )


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


def _fingerprints(data: pa.Array) -> np.ndarray:
    """uint64 FarmHash Fingerprint64 of each binary value."""
    return np.fromiter(map(farmhash.fingerprint64, data.to_pylist()), dtype=np.uint64, count=len(data))


def _combine(arr):
    return arr.combine_chunks() if isinstance(arr, pa.ChunkedArray) else arr


def _as_binary(values: pa.Array) -> pa.Array:
    values = _combine(values)
    t = values.type
    if pa.types.is_string(t) or pa.types.is_string_view(t) or pa.types.is_binary_view(t):
        return values.cast(pa.binary())
    if pa.types.is_large_string(t):
        return values.cast(pa.large_binary())
    if pa.types.is_binary(t) or pa.types.is_large_binary(t):
        return values
    raise ValueError(f"hash_buckets needs strings or bytes, got {t}; use canonical_strings first")


def _binary_offsets(data: pa.Array) -> np.ndarray:
    dtype = np.int64 if pa.types.is_large_binary(data.type) else np.int32
    offsets = np.frombuffer(data.buffers()[1], dtype=dtype)
    return offsets[data.offset : data.offset + len(data) + 1].astype(np.int64)


# --- whole batches and metadata --------------------------------------------------------------


def hashing_description(hash_info: HashInfo) -> dict:
    """What serving needs to reproduce the ids: settings, and the keys or salts used."""
    n, k = hash_info.hash_bucket_size, hash_info.num_hash_functions
    description = {
        "hashBucketSize": n,
        "numHashFunctions": k,
        "combiner": hash_info.combiner,
        "hashFunction": hash_info.hash_function,
        "dummyId": n,
    }
    description.update(HASH_FUNCTION_REGISTRY[hash_info.hash_function].describe(n, k))
    return description


def hash_tensors(batch: pa.RecordBatch, tensors: Sequence[TensorConfig]) -> pa.RecordBatch:
    """Replace the columns of hashed tensors (`hashInfo`) by their bucket ids / vectors.

    Strings and numbers become int64 ids (a scalar with one hash function stays a scalar when
    the tensor's shape is `[]`, else a list of `k` ids); NTV records become a sparse vector
    `struct<indices, values>` (`isSparse` or dtype sparseVector) or a dense vector of
    `hashBucketSize` values. Other columns pass through.

    Raises:
        ValueError: the input does not fit the tensor (NTV expected or not, scalar shape with
            several hash functions), naming the tensor.
    """

    return _hash_tensors(batch, tensors, None)


def hash_tensors_with_distinct(
    batch: pa.RecordBatch, tensors: Sequence[TensorConfig]
) -> tuple[pa.RecordBatch, dict[str, DistinctHashes]]:
    """`hash_tensors`, and per hashed tensor what its hashing saw (`DistinctHashes`): the run
    report's statistics take them instead of hashing the same values again.

    Example:
        >>> from beam_tensorize.config import parse_config
        >>> config = parse_config({"features": [{
        ...     "inputFeatureInfo": {"columnExpr": "g", "transformConfig": {"hashInfo": {"hashBucketSize": 100}}},
        ...     "outputTensorInfo": {"name": "g", "dtype": "long", "shape": []}}]})
        >>> batch = pa.RecordBatch.from_pydict({"g": ["Drama", "Drama", None]})
        >>> hashed, seen = hash_tensors_with_distinct(batch, config.tensors)
        >>> hashed.column(0).to_pylist(), seen["g"].counts.tolist(), seen["g"].ids.tolist(), seen["g"].dummy_rows
        ([40, 40, 100], [2], [[40]], 1)
    """
    seen: dict[str, DistinctHashes] = {}
    return _hash_tensors(batch, tensors, seen), seen


def _hash_tensors(
    batch: pa.RecordBatch, tensors: Sequence[TensorConfig], seen: dict[str, DistinctHashes] | None
) -> pa.RecordBatch:
    def replace(tensor: TensorConfig, field: pa.Field, column: pa.Array):
        hash_info = tensor.input.transform_config.hash_info
        if hash_info is None:
            return None
        hashed, distinct = _hash_tensor(tensor, hash_info, column, keep=seen is not None)
        if seen is not None:
            seen[tensor.name] = distinct
        return pa.field(tensor.name, hashed.type), hashed

    return replace_tensor_columns(batch, tensors, replace)


def _hash_tensor(
    tensor: TensorConfig, hash_info: HashInfo, column: pa.Array, keep: bool
) -> tuple[pa.Array, DistinctHashes | None]:
    """The tensor's hashed column, and what was hashed when `keep` (else None)."""
    name, out = tensor.name, tensor.output
    ntv_input = is_ntv(column.type)
    if is_hashed_ntv(tensor) != ntv_input:
        expected = "name-term-value records" if is_hashed_ntv(tensor) else "strings or numbers"
        raise ValueError(
            f"tensor {name!r} ({tensor.json_path}): hashing with dtype {out.dtype}"
            f"{', isSparse' if out.is_sparse else ''} needs {expected}, got {column.type}"
        )
    if ntv_input:
        indices, values, distinct = _hash_ntv(column, hash_info, keep)
        if out.is_sparse or out.dtype == "sparseVector":
            return pa.StructArray.from_arrays([indices, values], ["indices", "values"]), distinct
        return sparse_to_dense(indices, values, hash_info.hash_bucket_size), distinct
    ids, distinct = _hash_column(column, hash_info, keep)
    if not is_list_type(column.type) and not out.shape:
        if hash_info.num_hash_functions != 1:
            raise ValueError(
                f"tensor {name!r} ({tensor.json_path}): {hash_info.num_hash_functions} hash functions "
                f"give {hash_info.num_hash_functions} ids per value; declare shape "
                f"[{hash_info.num_hash_functions}] instead of []"
            )
        return ids.flatten(), distinct
    return ids, distinct
