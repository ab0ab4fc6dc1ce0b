"""Names of the Beam metrics every beam_tensorize step reports (one namespace)."""

from __future__ import annotations

__all__ = [
    "BAD_RECORDS",
    "BATCHES_READ",
    "EXAMPLES_WRITTEN",
    "DEDUP_VALUES",
    "DEDUP_VALUES_STORED",
    "FILES_WRITTEN",
    "NAMESPACE",
    "ROWS_COUNTED",
    "ROWS_READ",
]

#: Namespace of all counters; query with `MetricsFilter().with_namespace(NAMESPACE)`.
NAMESPACE = "beam_tensorize"
#: Input rows decoded by the readers.
ROWS_READ = "rows_read"
#: Input rows read by train mode's counting pass (feature-list columns only).
ROWS_COUNTED = "rows_counted"
#: Record batches produced by the readers.
BATCHES_READ = "batches_read"
#: Rows that could not be turned into a tf.train.Example (sent to the dead-letter output).
BAD_RECORDS = "bad_records"
#: Serialized examples written to TFRecord files.
EXAMPLES_WRITTEN = "examples_written"
#: TFRecord files written.
FILES_WRITTEN = "files_written"
#: User-column values of the rows deduplicated (`DeduplicateFeatures`), and of them those stored.
DEDUP_VALUES = "dedup_values"
DEDUP_VALUES_STORED = "dedup_values_stored"
