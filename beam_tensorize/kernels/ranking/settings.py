"""The settings of ranking data preparation (Avro2TF's PrepRankingData flags) and the record
formats it writes.

Example:
    >>> RankingSettings(("qid",), 10, skip_padding=True).max_size
    10
    >>> RECORD_FORMATS
    ('example', 'elwc', 'avro')
"""

from __future__ import annotations

import dataclasses

__all__ = ["RECORD_FORMATS", "RankingSettings"]

#: Output records: `example` (one Example per group, lists of documents), `elwc` (TF-Ranking's
#: ExampleListWithContext: the group ids and query tensors as the context Example, one Example
#: per document) or `avro` (Avro2TF's output: one Avro record per group, a document tensor an
#: array of its documents' values, a sparse tensor a record {indices0, ..., values}).
RECORD_FORMATS = ("example", "elwc", "avro")


@dataclasses.dataclass(frozen=True)
class RankingSettings:
    """How groups are made (Avro2TF's PrepRankingData flags).

    Attributes:
        group_ids: the tensors whose values make a group (`--group-id-list`).
        max_size: documents kept per group (`--group-list-max-size`).
        label_padding: the value labels are padded with (`--label-padding-value`).
        feature_padding: the value other numbers are padded with (`--feature-padding-value`).
        skip_padding: do not pad groups with fewer documents (`--skip-padding`).
        drop_columns: tensors left out of the records and the metadata (`--drop-column-list`;
            names that are no tensor are ignored, as Spark's `drop` ignores them).

    Example:
        >>> RankingSettings(("qid",), 10).label_padding
        -1.0
    """

    group_ids: tuple[str, ...]
    max_size: int
    label_padding: float = -1.0
    feature_padding: float = 0.0
    skip_padding: bool = False
    drop_columns: tuple[str, ...] = ()

    def __post_init__(self):
        if not self.group_ids or not all(isinstance(g, str) and g for g in self.group_ids):
            raise ValueError(f"group ids must be one or more tensor names, got {self.group_ids!r}")
        if not isinstance(self.max_size, int) or isinstance(self.max_size, bool) or self.max_size < 1:
            raise ValueError(f"the group list size must be a positive integer, got {self.max_size!r}")
        dropped = sorted(set(self.group_ids) & set(self.drop_columns))
        if dropped:
            raise ValueError(
                f"group id {dropped[0]!r} is also a dropped column; keep it, or group by another"
            )
