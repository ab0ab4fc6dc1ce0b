"""`DeduplicateFeatures`: blocks of rows with each user's features stored once (HybridBackend's
data deduplication; the rules are in `beam_tensorize.kernels.output.dedup`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import apache_beam as beam
import pyarrow as pa
from apache_beam.metrics import Metrics
from apache_beam.transforms.display import DisplayDataItem

from beam_tensorize import metrics
from beam_tensorize.kernels.output.dedup import deduplicated_blocks, index_column

__all__ = ["DeduplicateFeatures"]


class DeduplicateFeatures(beam.PTransform):
    """Turn every `block_size` rows of each batch into one row: the `non_user_cols` as lists,
    (None: every other column), and for each group `[key, value, ...]` of `user_cols` the
    distinct keys' values once plus
    `<key>-index` (each row's place among them). Write the result as Parquet
    (`WriteParquet`); `Dataset.from_parquet(..., key_idx_field_names=..., value_field_names=...)`
    gives the original rows back.

    Example:
        >>> import apache_beam as beam, pyarrow as pa
        >>> rows = pa.RecordBatch.from_pydict({"user": [7, 7, 8], "age": [30, 30, 40], "item": [1, 2, 3]})
        >>> with beam.Pipeline() as p:
        ...     _ = (p | beam.Create([rows]) | DeduplicateFeatures(3, [["user", "age"]], ["item"])
        ...            | beam.Map(lambda b: print(b.to_pydict())))
        {'item': [[1, 2, 3]], 'user': [[7, 8]], 'age': [[30, 40]], 'user-index': [[0, 0, 1]]}
    """

    def __init__(
        self, block_size: int, user_cols: Sequence[Sequence[str]], non_user_cols: Sequence[str] | None = None
    ):
        super().__init__()
        if not isinstance(block_size, int) or block_size < 1:
            raise ValueError(
                f"DeduplicateFeatures: block_size must be a positive number of rows, got {block_size!r}"
            )
        if not user_cols or any(not group for group in user_cols):
            raise ValueError("DeduplicateFeatures: user_cols needs groups of [key, value, ...] columns")
        self._block_size = block_size
        self._user_cols = [list(group) for group in user_cols]
        self._non_user_cols = None if non_user_cols is None else list(non_user_cols)

    def display_data(self) -> dict:
        return {
            "block_size": DisplayDataItem(self._block_size, label="Rows per block"),
            "user_cols": DisplayDataItem(
                "; ".join(",".join(g) for g in self._user_cols), label="User columns"
            ),
        }

    def expand(self, batches):
        return batches | "DeduplicateBlocks" >> beam.ParDo(
            _DeduplicateFn(self._block_size, self._user_cols, self._non_user_cols)
        ).with_output_types(pa.RecordBatch)


class _DeduplicateFn(beam.DoFn):
    """The deduplicated blocks of a batch, in order, each keeping the batch's tags (where its
    rows come from, which input split), so they are written in input order; counts the user
    values (`metrics.DEDUP_VALUES`) and those stored (`metrics.DEDUP_VALUES_STORED`)."""

    def __init__(self, block_size, user_cols, non_user_cols):
        self._args = (block_size, user_cols, non_user_cols)
        self._values = Metrics.counter(metrics.NAMESPACE, metrics.DEDUP_VALUES)
        self._stored = Metrics.counter(metrics.NAMESPACE, metrics.DEDUP_VALUES_STORED)

    def process(self, batch: pa.RecordBatch) -> Iterable[pa.RecordBatch]:
        user_cols = self._args[1]
        metadata = batch.schema.metadata
        for block in deduplicated_blocks(batch, *self._args):
            rows = len(block.column(index_column(user_cols[0][0])).flatten())
            for group in user_cols:
                self._values.inc(rows * len(group))
                self._stored.inc(len(block.column(group[0]).flatten()) * len(group))
            yield block.replace_schema_metadata(metadata)
