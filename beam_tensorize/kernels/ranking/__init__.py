"""Ranking data preparation (Avro2TF's PrepRankingData), without Beam: the rows of one query
group -> one record of lists.

Rows are grouped by the group id tensors (any tensors: lists and records are compared whole,
as Spark groups by them). Per group, in input order:

* a *document* tensor (`isDocumentFeature`, the default; not a group id) collects the group's
  non-null values (Spark's `collect_list`) and keeps the first `max_size`. A scalar's list is
  then padded to `max_size` (labels with `label_padding`, -1 by default; other numbers with
  `feature_padding`, 0; strings with "") unless `skip_padding`; lists of any depth and
  records are only cut. A sparse tensor (`{indices, values}` of rank 1, or `{indices0, ...,
  indices<n-1>, values}` of rank n) becomes one sparse tensor of rank n + 1, `{indices0, ...,
  indices<n>, values}`, whose `indices0` is the document's place in the group (Avro2TF's
  `toSparseFeatureWithRank`);
* a *query* tensor (`isDocumentFeature: false`) and the group ids take the group's first row.

Two inputs: a tensorized output of ours (Examples, read with the metadata's `parse` entries),
or Avro2TF's layout (Avro records, described by the files' Arrow schema and a metadata document
of names, dtypes and shapes only). Three outputs (`RECORD_FORMATS`).

The metadata follows Avro2TF's `updateMetadata`: the group ids leave `features` / `labels`
(they stay in the records: ours lists them under `extraColumns`, which readers such as
`beam_tensorize.tf.make_dataset` parse too), a document tensor's shape gets `max_size` in
front, query tensors are unchanged; `contentFeatures` lists the document tensors.

The kernel is split by subject; this package re-exports the public names of its modules:

* `settings`: `RankingSettings` (the job's flags) and `RECORD_FORMATS`;
* `tensors`: what each tensor of the metadata is when rows are grouped (scalar, dense lists,
  sparse, record) and how the input stores it;
* `plan`: `RankingPlan`, which reads rows, groups them and builds the records and the metadata;
* `records`: a tensor's values as Example features and back (layouts, sparse stacking) and
  `elwc_record`.

Example:
    >>> import pyarrow as pa
    >>> metadata = {"features": [
    ...     {"name": "qid", "dtype": "long", "shape": [], "isDocumentFeature": False},
    ...     {"name": "doc", "dtype": "long", "shape": []}], "labels": []}
    >>> schema = pa.schema([("qid", pa.int64()), ("doc", pa.int64())])
    >>> plan = RankingPlan(metadata, RankingSettings(("qid",), 3), "avro", avro_schema=schema)
    >>> plan.combine([plan.values({"qid": 7, "doc": 1}), plan.values({"qid": 7, "doc": 2})])
    {'qid': 7, 'doc': [1, 2, 0]}
"""

from __future__ import annotations

from beam_tensorize.kernels.ranking.plan import RankingPlan
from beam_tensorize.kernels.ranking.records import elwc_record
from beam_tensorize.kernels.ranking.settings import RECORD_FORMATS, RankingSettings

__all__ = ["RECORD_FORMATS", "RankingPlan", "RankingSettings", "elwc_record"]
