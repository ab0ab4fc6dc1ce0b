"""The hash functions of ``hashInfo.hashFunction`` on flat strings, bit-identical to TensorFlow.

Part of the hashing kernel (`beam_tensorize.kernels.features.hashing`): this module turns flat
``string`` / ``binary`` values into bucket ids for one hash function; `hash_columns` applies it to
Arrow columns and name-term-value lists.

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

Both TensorFlow functions run in the optional C extension ``_hashes`` (one loop over a batch's
values) when it is built; without it FarmHash comes from pyfarmhash, one call per value, and
SipHash from numpy, vectorised over values. The two paths give the same hashes.

A new hash function is a `HashFunction` subclass added to `HASH_FUNCTION_REGISTRY` (and its name
to the config's ``HASH_FUNCTIONS``).

Example:
    >>> import pyarrow as pa
    >>> hash_buckets(pa.array(["Drama", "Comedy"]), 100).tolist()
    [40, 39]
    >>> hash_buckets(pa.array(["Drama"]), 100, function_index=1, num_functions=2).tolist()
    [53]
    >>> avro2tf_salt(0)
    'HlHffttmhdWWvj8M'
"""

from __future__ import annotations

import functools
import hashlib

import farmhash
import numpy as np
import pyarrow as pa

from beam_tensorize.config.model import HASH_FUNCTIONS
from beam_tensorize.kernels.arrow_types import binary_offsets
from beam_tensorize.kernels.extensions import load_extension

__all__ = [
    "AVRO2TF_SALT_LENGTH",
    "AVRO2TF_SALT_SEED",
    "HASH_FUNCTION_REGISTRY",
    "MAX_STRONG_HASH_FUNCTIONS",
    "STRONG_HASH_KEYS",
    "Avro2TFMd5Hash",
    "FingerprintHash",
    "HashFunction",
    "avro2tf_salt",
    "hash_buckets",
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


@functools.lru_cache(maxsize=1)
def _extension():
    """The optional C extension `_hashes`, or None (pyfarmhash and numpy)."""
    return load_extension("beam_tensorize.kernels.features._hashes", 1, "hashing", "pyfarmhash / numpy")


def _native_hashes(data: pa.Array, function: str, *keys: int) -> np.ndarray:
    """`function` (``fingerprint64`` or ``siphash24``) of the extension over a binary array."""
    out = np.empty(len(data), dtype=np.uint64)
    offsets, buffer = binary_offsets(data)
    getattr(_extension(), function)(offsets, buffer, *keys, out)
    return out


def _siphash24(data: pa.Array, k0: int, k1: int) -> np.ndarray:
    """SipHash-2-4 of every value of a binary array (uint64)."""
    if _extension() is not None:
        return _native_hashes(data, "siphash24", k0, k1)
    return _numpy_siphash24(data, k0, k1)


def _numpy_siphash24(data: pa.Array, k0: int, k1: int) -> np.ndarray:
    """SipHash-2-4 of every value of a binary array, vectorised over values (uint64)."""
    count = len(data)
    offsets = binary_offsets(data)[0].astype(np.int64)
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


# --- binary values (also used by hash_columns) -------------------------------------------------


def _fingerprints(data: pa.Array) -> np.ndarray:
    """uint64 FarmHash Fingerprint64 of each binary value."""
    if _extension() is not None:
        return _native_hashes(data, "fingerprint64")
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
