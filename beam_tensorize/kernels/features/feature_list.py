"""`FeatureList` (a feature list, its text files and their check against the metadata), and
which tensors are indexed by one."""

from __future__ import annotations

import dataclasses
import hashlib
import sys
from array import array
from collections.abc import Mapping, Sequence

import pyarrow as pa

from beam_tensorize.config.model import TensorConfig
from beam_tensorize.kernels.features.ntv import is_ntv
from beam_tensorize.kernels.features.vocab_entries import is_text

__all__ = ["FeatureList", "may_use_feature_list", "uses_feature_list", "vocab_array"]


@dataclasses.dataclass(frozen=True)
class FeatureList:
    """A feature list: ordered entries, their counts when built here, and whether it indexes
    NTV records (`name,term`) rather than strings."""

    entries: tuple[str, ...]
    counts: tuple[int, ...] | None = None
    ntv: bool = False
    #: A list shared by NTV tensors (Avro2TF shares them by term): its entries are terms, and
    #: this holds (tensor, the one NTV name it has) pairs; `lists_per_tensor` gives each such
    #: tensor the entries `name,term`, so equal terms get equal ids.
    names: tuple[tuple[str, str], ...] = ()

    def __len__(self) -> int:
        return len(self.entries)

    def deep_size_in_bytes(self) -> int:
        """Bytes of this list and what it holds (its entries, counts and NTV names, their
        tuples, its attribute dict), each element counted where it occurs: what a cache weighs
        it at, without walking a million entries one object at a time.

        Example:
            >>> FeatureList(("a", "b")).deep_size_in_bytes() > 2 * sys.getsizeof("a")
            True
        """
        size = sys.getsizeof
        total = size(self) + size(vars(self)) + size(self.entries) + sum(map(size, self.entries))
        if self.counts is not None:
            total += size(self.counts) + sum(map(size, self.counts))
        names = self.names
        return total + size(names) + sum(size(pair) + size(pair[0]) + size(pair[1]) for pair in names)

    def __reduce__(self):
        """Pickled as one string of the entries and one buffer of the counts: a list passes
        between a job's steps several times, and pickle took ~0.14 s to write 632,093 entries
        one object at a time (~0.04 s this way; reading back ~0.1 -> ~0.04 s). Lists whose
        entries hold the separator, or counts past int64, pickle as usual."""
        entries, counts = self.entries, self.counts
        joined = _SEPARATOR.join(entries)
        packed_counts = None
        if counts is not None:
            try:
                packed_counts = array("q", counts).tobytes()
            except OverflowError:
                joined = None
        if joined is None or not entries or joined.count(_SEPARATOR) != len(entries) - 1:
            return (FeatureList, (entries, counts, self.ntv, self.names))
        return (_unpacked, (joined, len(entries), packed_counts, self.ntv, self.names))

    def to_text(self) -> str:
        """The `featureList/<tensor>` file: one entry per line; the line number is the index."""
        bad = [e for e in self.entries if "\n" in e or "\r" in e]
        if bad:
            raise ValueError(f"feature-list entry {bad[0]!r} contains a line break and cannot be written")
        return "".join(f"{entry}\n" for entry in self.entries)

    def counts_text(self) -> str:
        """`count<TAB>entry` lines, in list order (for people to inspect)."""
        counts = self.counts or (0,) * len(self.entries)
        return "".join(f"{count}\t{entry}\n" for count, entry in zip(counts, self.entries))

    def digest(self) -> str:
        """SHA-256 of `to_text()` (recorded in the metadata, checked when the list is loaded)."""
        return hashlib.sha256(self.to_text().encode("utf-8")).hexdigest()

    @classmethod
    def from_text(cls, text: str, ntv: bool = False) -> FeatureList:
        """Read a `featureList/<tensor>` file's text."""
        return cls(tuple(text.splitlines()), None, ntv)

    def check_recorded(self, recorded: Mapping | None, where: str) -> None:
        """Raise ValueError if this list (read from `where`) is not the one the metadata's
        `featureList` entry `recorded` describes (its `size` and `sha256`): a truncated or
        edited list would give other ids than the written records hold.

        Example:
            >>> FeatureList(("a", "b")).check_recorded({"size": 3}, "featureList/g")
            Traceback (most recent call last):
            ...
            ValueError: featureList/g holds 2 entries, but the metadata records 3 ...
        """
        if not recorded:
            return
        size, digest = recorded.get("size"), recorded.get("sha256")
        if size is not None and size != len(self):
            raise ValueError(
                f"{where} holds {len(self)} entries, but the metadata records {size} (the list the "
                "records were indexed with): it was cut or changed after the train run; restore it, or "
                "run train mode again"
            )
        if digest is not None and digest != self.digest():
            raise ValueError(
                f"{where} is not the list the records were indexed with (its SHA-256 differs from the "
                "metadata's): it was edited or reordered after the train run; restore it, or run train "
                "mode again"
            )


#: Joins a list's entries when it is pickled (entries hold no NUL in practice; those that do
#: pickle as usual).
_SEPARATOR = "\0"


def _unpacked(joined: str, size: int, counts: bytes | None, ntv: bool, names: tuple) -> FeatureList:
    """The `FeatureList` that `FeatureList.__reduce__` packed."""
    entries = tuple(joined.split(_SEPARATOR))
    if len(entries) != size:
        raise ValueError(f"a packed feature list holds {len(entries)} entries, not {size}")
    return FeatureList(entries, None if counts is None else tuple(array("q", counts).tolist()), ntv, names)


def may_use_feature_list(tensor: TensorConfig) -> bool:
    """Whether `tensor` gets a feature list when its input turns out to be text or NTV."""
    transform = tensor.input.transform_config
    return transform.hash_info is None and tensor.output.dtype in (
        "int",
        "long",
        "float",
        "double",
        "sparseVector",
    )


def uses_feature_list(tensor: TensorConfig, column_type: pa.DataType) -> bool:
    """Whether `tensor`, whose extracted column has `column_type`, is indexed by a feature list."""
    if not may_use_feature_list(tensor):
        return False
    if is_ntv(column_type):
        return True
    return is_text(column_type) and tensor.output.dtype in ("int", "long")


def vocab_array(feature_list: FeatureList | Sequence[str] | pa.Array) -> pa.Array:
    """A feature list's entries as an Arrow string array (for lookups)."""
    if isinstance(feature_list, pa.Array):
        return feature_list
    entries = feature_list.entries if isinstance(feature_list, FeatureList) else feature_list
    return pa.array(list(entries), pa.string())
