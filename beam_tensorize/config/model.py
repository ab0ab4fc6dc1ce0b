"""The config model: frozen, hashable, picklable dataclasses.

These classes mirror LinkedIn Avro2TF's tensor config (see README.md, "The config"). They are
built by :func:`beam_tensorize.config.parse_config`, which validates a JSON / YAML / HOCON
document and reports problems with their JSON path; the light checks in ``__post_init__`` only
protect code that builds the model by hand.

Example::

    config = TensorizeConfig(
        features=(
            TensorConfig(
                input=InputFeatureInfo(column_expr="userId"),
                output=OutputTensorInfo(name="userId", dtype="long", shape=(-1,)),
                role="feature",
                json_path="features[0]",
            ),
        )
    )
    config.tensor("userId").output.dtype  # "long"
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from beam_tensorize.config.expr import Expr

__all__ = [
    "ALL_NAMES",
    "COMBINERS",
    "DTYPES",
    "HASH_FUNCTIONS",
    "ROLES",
    "TENSOR_NAME_PATTERN",
    "HashInfo",
    "InputFeatureInfo",
    "NtvSelection",
    "OutputTensorInfo",
    "TensorConfig",
    "TensorizeConfig",
    "Tokenization",
    "TransformConfig",
]

#: Output dtypes accepted in ``outputTensorInfo.dtype`` (Avro2TF's names).
DTYPES: tuple[str, ...] = (
    "int",
    "long",
    "float",
    "double",
    "string",
    "boolean",
    "bytes",
    "sparseVector",
)
#: Ways to combine the ids of several hash functions / several values.
COMBINERS: tuple[str, ...] = ("SUM", "AVG", "MAX")
#: ``fingerprint`` equals TensorFlow's ``to_hash_bucket_fast``; ``avro2tf_md5`` is Avro2TF's.
HASH_FUNCTIONS: tuple[str, ...] = ("fingerprint", "avro2tf_md5")
#: Where a tensor comes from in the config document.
ROLES: tuple[str, ...] = ("feature", "label")
#: Tensor names become feature keys and file names.
TENSOR_NAME_PATTERN: re.Pattern[str] = re.compile(r"^[A-Za-z0-9_.\-]+$")
#: In a whitelist or blacklist, this entry stands for every NTV name.
ALL_NAMES = "*"


def _set(obj: object, name: str, value: Any) -> None:
    """Normalizes a field of a frozen dataclass during ``__post_init__``."""
    object.__setattr__(obj, name, value)


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _str_tuple(values: Iterable[str] | None) -> tuple[str, ...] | None:
    return None if values is None else tuple(values)


@dataclasses.dataclass(frozen=True)
class HashInfo:
    """How to hash a feature into buckets (``transformConfig.hashInfo``).

    Attributes:
        hash_bucket_size: number of buckets; ids are in ``[0, hash_bucket_size)`` and
            ``hash_bucket_size`` itself is the id of empty / null input.
        num_hash_functions: how many independent hash functions to apply.
        combiner: ``SUM``, ``AVG`` or ``MAX``; how values falling into one bucket combine.
        hash_function: ``fingerprint`` (TensorFlow-compatible) or ``avro2tf_md5``.
    """

    hash_bucket_size: int
    num_hash_functions: int = 1
    combiner: str = "SUM"
    hash_function: str = "fingerprint"

    def __post_init__(self) -> None:
        for name in ("hash_bucket_size", "num_hash_functions"):
            value = getattr(self, name)
            if not _is_int(value) or value <= 0:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if isinstance(self.combiner, str):
            _set(self, "combiner", self.combiner.upper())
        if self.combiner not in COMBINERS:
            raise ValueError(f"combiner {self.combiner!r} is not one of {', '.join(COMBINERS)}")
        if self.hash_function not in HASH_FUNCTIONS:
            raise ValueError(
                f"hash_function {self.hash_function!r} is not one of {', '.join(HASH_FUNCTIONS)}"
            )

    def to_json_dict(self) -> dict[str, Any]:
        """Returns the Avro2TF-style ``hashInfo`` object, defaults filled in."""
        return {
            "hashBucketSize": self.hash_bucket_size,
            "numHashFunctions": self.num_hash_functions,
            "combiner": self.combiner,
            "hashFunction": self.hash_function,
        }


@dataclasses.dataclass(frozen=True)
class Tokenization:
    """Split text features into tokens (``transformConfig.tokenization``).

    Attributes:
        remove_stop_words: drop English stop words after tokenizing.
    """

    remove_stop_words: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.remove_stop_words, bool):
            raise TypeError(f"remove_stop_words must be a bool, got {self.remove_stop_words!r}")

    def to_json_dict(self) -> dict[str, Any]:
        """Returns the Avro2TF-style ``tokenization`` object."""
        return {"removeStopWords": self.remove_stop_words}


@dataclasses.dataclass(frozen=True)
class TransformConfig:
    """Transformations applied after extraction (``inputFeatureInfo.transformConfig``).

    Attributes:
        hash_info: hash into buckets, or ``None``.
        tokenization: tokenize text, or ``None``.
    """

    hash_info: HashInfo | None = None
    tokenization: Tokenization | None = None

    def to_json_dict(self) -> dict[str, Any]:
        """Returns the Avro2TF-style ``transformConfig`` object (only the parts present)."""
        out: dict[str, Any] = {}
        if self.hash_info is not None:
            out["hashInfo"] = self.hash_info.to_json_dict()
        if self.tokenization is not None:
            out["tokenization"] = self.tokenization.to_json_dict()
        return out


@dataclasses.dataclass(frozen=True)
class NtvSelection:
    """Which names to take from one NTV (name-term-value) column (a ``columnConfig`` entry).

    Exactly one of ``whitelist`` and ``blacklist`` is set; the entry ``"*"`` means all names.

    Attributes:
        column: the NTV column, an array of records with fields ``name``, ``term``, ``value``.
        whitelist: names to keep, or ``None``.
        blacklist: names to drop, or ``None``.
    """

    column: str
    whitelist: tuple[str, ...] | None = None
    blacklist: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        _set(self, "whitelist", _str_tuple(self.whitelist))
        _set(self, "blacklist", _str_tuple(self.blacklist))
        if (self.whitelist is None) == (self.blacklist is None):
            raise ValueError(f"NTV column {self.column!r}: give exactly one of whitelist and blacklist")

    def selects(self, name: str) -> bool:
        """Tells whether NTV entries with this ``name`` are kept.

        Args:
            name: the ``name`` field of an NTV entry.

        Returns:
            True if the entry is selected by the whitelist / not excluded by the blacklist.
        """
        if self.whitelist is not None:
            return ALL_NAMES in self.whitelist or name in self.whitelist
        blacklist = self.blacklist or ()
        return not (ALL_NAMES in blacklist or name in blacklist)

    @property
    def selects_nothing(self) -> bool:
        """True when no entry can be selected (``"blacklist": ["*"]`` or an empty whitelist):
        then only the column's presence matters, never its values."""
        if self.whitelist is not None:
            return not self.whitelist
        return ALL_NAMES in (self.blacklist or ())

    def to_json_dict(self) -> dict[str, list[str]]:
        """Returns the value of this column's entry in ``columnConfig``."""
        if self.whitelist is not None:
            return {"whitelist": list(self.whitelist)}
        return {"blacklist": list(self.blacklist or ())}


@dataclasses.dataclass(frozen=True)
class InputFeatureInfo:
    """Where a tensor's values come from (``inputFeatureInfo``).

    Exactly one of ``column_expr`` and ``column_config`` is set.

    Attributes:
        column_expr: a Spark SQL column expression, verbatim as written in the config.
        column_expr_ast: the parsed ``column_expr``; parsed from ``column_expr`` when not
            given. It is derived from the text, so it takes no part in equality or hashing.
        column_config: NTV selections, in config order.
        transform_config: hashing / tokenization to apply.
    """

    column_expr: str | None = None
    column_expr_ast: Expr | None = dataclasses.field(default=None, compare=False, repr=False)
    column_config: tuple[NtvSelection, ...] | None = None
    transform_config: TransformConfig = TransformConfig()

    def __post_init__(self) -> None:
        if self.column_config is not None:
            _set(self, "column_config", tuple(self.column_config))
        if (self.column_expr is None) == (self.column_config is None):
            raise ValueError("give exactly one of column_expr and column_config")
        if self.column_expr is not None and self.column_expr_ast is None:
            from beam_tensorize.config.expr import parse_column_expr

            _set(self, "column_expr_ast", parse_column_expr(self.column_expr))

    def to_json_dict(self) -> dict[str, Any]:
        """Returns the Avro2TF-style ``inputFeatureInfo`` object."""
        out: dict[str, Any] = {}
        if self.column_expr is not None:
            out["columnExpr"] = self.column_expr
        else:
            out["columnConfig"] = {s.column: s.to_json_dict() for s in self.column_config or ()}
        out["transformConfig"] = self.transform_config.to_json_dict()
        return out


@dataclasses.dataclass(frozen=True)
class OutputTensorInfo:
    """What tensor to produce (``outputTensorInfo``).

    Attributes:
        name: tensor name; also the feature key and the feature-list file name.
        dtype: one of :data:`DTYPES`.
        shape: dimensions; ``-1`` is an unknown / variable size, ``()`` a scalar.
        is_sparse: produce a sparse tensor (indices, values).
        is_document_feature: Avro2TF's flag for per-document (not per-query) features.
        vocab_size_cap: keep only the N most frequent feature-list entries, or ``None``.
    """

    name: str
    dtype: str
    shape: tuple[int, ...] = ()
    is_sparse: bool = False
    is_document_feature: bool = True
    vocab_size_cap: int | None = None

    def __post_init__(self) -> None:
        _set(self, "shape", tuple(self.shape))
        if not isinstance(self.name, str) or not TENSOR_NAME_PATTERN.match(self.name):
            raise ValueError(f"tensor name {self.name!r} must match {TENSOR_NAME_PATTERN.pattern}")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype {self.dtype!r} is not one of {', '.join(DTYPES)}")
        if any(not _is_int(d) or d < -1 for d in self.shape):
            raise ValueError(f"shape {self.shape!r} must hold integers >= -1")
        if self.vocab_size_cap is not None and (not _is_int(self.vocab_size_cap) or self.vocab_size_cap <= 0):
            raise ValueError(f"vocab_size_cap must be a positive integer, got {self.vocab_size_cap!r}")

    def to_json_dict(self) -> dict[str, Any]:
        """Returns the Avro2TF-style ``outputTensorInfo`` object, defaults filled in."""
        out: dict[str, Any] = {
            "name": self.name,
            "dtype": self.dtype,
            "shape": list(self.shape),
            "isSparse": self.is_sparse,
            "isDocumentFeature": self.is_document_feature,
        }
        if self.vocab_size_cap is not None:
            out["vocabSizeCap"] = self.vocab_size_cap
        return out


@dataclasses.dataclass(frozen=True)
class TensorConfig:
    """One entry of ``features`` or ``labels``.

    Attributes:
        input: where the values come from.
        output: the tensor to produce.
        role: ``feature`` or ``label``.
        json_path: where the entry is in the config document, e.g. ``features[3]``.
    """

    input: InputFeatureInfo
    output: OutputTensorInfo
    role: str
    json_path: str

    def __post_init__(self) -> None:
        if self.role not in ROLES:
            raise ValueError(f"role {self.role!r} is not one of {', '.join(ROLES)}")

    @property
    def name(self) -> str:
        """The tensor name (``output.name``)."""
        return self.output.name

    def to_json_dict(self) -> dict[str, Any]:
        """Returns the Avro2TF-style tensor config, ``inputFeatureInfo`` always explicit."""
        return {
            "inputFeatureInfo": self.input.to_json_dict(),
            "outputTensorInfo": self.output.to_json_dict(),
        }


@dataclasses.dataclass(frozen=True)
class TensorizeConfig:
    """A whole config: the feature tensors and the label tensors.

    Attributes:
        features: feature tensors, in config order.
        labels: label tensors, in config order.
    """

    features: tuple[TensorConfig, ...]
    labels: tuple[TensorConfig, ...] = ()

    def __post_init__(self) -> None:
        _set(self, "features", tuple(self.features))
        _set(self, "labels", tuple(self.labels))
        if not self.features:
            raise ValueError("a config needs at least one feature")
        seen: set[str] = set()
        for tensor in self.tensors:
            if tensor.name in seen:
                raise ValueError(f"duplicate tensor name {tensor.name!r}")
            seen.add(tensor.name)

    @property
    def tensors(self) -> tuple[TensorConfig, ...]:
        """All tensors: features, then labels."""
        return self.features + self.labels

    @property
    def tensor_names(self) -> tuple[str, ...]:
        """Names of all tensors: features, then labels."""
        return tuple(t.name for t in self.tensors)

    def tensor(self, name: str) -> TensorConfig:
        """Looks a tensor up by name.

        Args:
            name: the tensor name (``outputTensorInfo.name``).

        Returns:
            The feature or label with that name.

        Raises:
            KeyError: no tensor has that name; the message lists the known names.
        """
        for tensor in self.tensors:
            if tensor.name == name:
                return tensor
        raise KeyError(f"no tensor named {name!r}; known tensors: {', '.join(self.tensor_names)}")

    def to_json_dict(self) -> dict[str, Any]:
        """Returns a normalized Avro2TF-style config document.

        Keys are camelCase, defaults are filled in and ``inputFeatureInfo`` is always explicit;
        ``columnExpr`` text is kept verbatim. Parsing the result gives an equal object.
        """
        return {
            "features": [t.to_json_dict() for t in self.features],
            "labels": [t.to_json_dict() for t in self.labels],
        }
