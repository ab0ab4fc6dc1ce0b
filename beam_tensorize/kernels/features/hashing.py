"""Hash feature values into buckets (Avro2TF's ``hashInfo``), bit-identical to TensorFlow: the
hashing step on whole batches (`hash_tensors`) and its metadata entry (`hashing_description`).

The kernel is split by subject; this module re-exports the public names of both parts, so
``beam_tensorize.kernels.features.hashing`` stays the one place to import hashing from:

* `beam_tensorize.kernels.features.hash_functions`: the hash functions on flat strings
  (``fingerprint``: FarmHash Fingerprint64 / SipHash-2-4 as TensorFlow's ops; ``avro2tf_md5``:
  Avro2TF's salted MD5), their keys and salts, `hash_buckets`, `HASH_FUNCTION_REGISTRY`;
* `beam_tensorize.kernels.features.hash_columns`: the canonical string of a value, Arrow columns
  and name-term-value lists hashed into ids and sparse vectors, `DistinctHashes`.

See ``docs/hashing.md`` for the rules.

Example:
    >>> from beam_tensorize.config.model import HashInfo
    >>> hashing_description(HashInfo(hash_bucket_size=100))["tensorflow"]
    'tf.strings.to_hash_bucket_fast(x, 100)'
    >>> hash_column(pa.array(["Drama", None]), HashInfo(hash_bucket_size=100)).to_pylist()
    [[40], [100]]
"""

from __future__ import annotations

from collections.abc import Sequence

import pyarrow as pa

from beam_tensorize.config.model import HashInfo, TensorConfig
from beam_tensorize.kernels.arrow_types import is_list_type
from beam_tensorize.kernels.features.columns import replace_tensor_columns
from beam_tensorize.kernels.features.conversion import is_hashed_ntv
from beam_tensorize.kernels.features.hash_columns import (
    DistinctHashes,
    _hash_column,
    _hash_ntv,
    canonical_strings,
    distinct_hashes,
    hash_column,
    hash_ntv,
)
from beam_tensorize.kernels.features.hash_functions import (
    AVRO2TF_SALT_LENGTH,
    AVRO2TF_SALT_SEED,
    HASH_FUNCTION_REGISTRY,
    MAX_STRONG_HASH_FUNCTIONS,
    STRONG_HASH_KEYS,
    Avro2TFMd5Hash,
    FingerprintHash,
    HashFunction,
    avro2tf_salt,
    hash_buckets,
)
from beam_tensorize.kernels.features.ntv import is_ntv
from beam_tensorize.kernels.features.sparse import sparse_to_dense

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
