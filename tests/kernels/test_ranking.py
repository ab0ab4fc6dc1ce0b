"""`RankingPlan` (Avro2TF's PrepRankingData rules, without Beam) on hand-made rows: group ids of
any shape, N-dimension document tensors, sparse tensors of any rank, Avro2TF's metadata update."""

from __future__ import annotations

import copy
import dataclasses
import os
import re

import pyarrow as pa
import pytest

from beam_tensorize.kernels.ranking import RankingPlan, RankingSettings


def _entry(name, dtype, shape, layout, keys, parse, document=True, sparse=False):
    return {"name": name, "dtype": dtype, "shape": shape, "numUniqueValues": None, "isSparse": sparse,
            "isDocumentFeature": document, "layout": layout, "featureKeys": keys, "parse": parse}  # fmt: skip


# A tensorized output's metadata (ours): `userId` of config shape [-1] holds one id per row, as in
# Avro2TF's MovieLens ranking config; `grid` is [2, 3], `terms` [-1, -1], `genres` sparse.
_METADATA = {
    "features": [
        _entry("userId", "long", [-1], "ragged", {"userId": "int64"},
               {"type": "RaggedFeature", "valueKey": "userId", "dtype": "int64", "partitions": []}),
        _entry("title", "string", [], "fixed_len", {"title": "string"},
               {"type": "FixedLenFeature", "key": "title", "dtype": "string", "shape": []}, document=False),
        _entry("movieId", "int", [], "fixed_len", {"movieId": "int64"},
               {"type": "FixedLenFeature", "key": "movieId", "dtype": "int64", "shape": []}),
        _entry("grid", "float", [2, 3], "fixed_len", {"grid": "float32"},
               {"type": "FixedLenFeature", "key": "grid", "dtype": "float32", "shape": [2, 3]}),
        _entry("terms", "string", [-1, -1], "ragged", {"terms": "string", "terms/row_lengths_1": "int64"},
               {"type": "RaggedFeature", "valueKey": "terms", "dtype": "string",
                "partitions": [{"type": "RowLengths", "key": "terms/row_lengths_1"}]}),
        _entry("genres", "float", [20], "sparse", {"genres/indices": "int64", "genres/values": "float32"},
               {"type": "SparseFeature", "indexKey": "genres/indices", "valueKey": "genres/values",
                "dtype": "float32", "size": 20}, sparse=True),
    ],
    "labels": [
        _entry("response", "double", [], "fixed_len", {"response": "float32"},
               {"type": "FixedLenFeature", "key": "response", "dtype": "float32", "shape": []}),
    ],
}  # fmt: skip


def _example_row(user: int, movie: int) -> dict:
    """One row as read back from the tensorized Examples (feature key -> value)."""
    return {
        "userId": [user],
        "title": f"user {user}".encode(),
        "movieId": movie,
        "grid": [float(movie * 10 + i) for i in range(6)],
        "terms": [b"a", b"b", f"m{movie}".encode()][: 1 + movie % 3],
        "terms/row_lengths_1": [1, movie % 3] if movie % 3 else [1],
        "genres/indices": [movie % 20],
        "genres/values": [1.0 + movie],
        "response": 0.5 * movie,
    }


_ROWS = [_example_row(user, movie) for movie, user in enumerate([7, 8, 7, 7, 8, 7], start=1)]


def _groups(plan: RankingPlan, rows: list[dict]) -> dict[tuple, list[dict]]:
    groups: dict[tuple, list[dict]] = {}
    for row in rows:
        values = plan.values(row)
        groups.setdefault(plan.group_key(values), []).append(values)
    return groups


def _nested_terms(row: dict) -> list[list[bytes]]:
    terms, lengths = row["terms"], row["terms/row_lengths_1"]
    return [terms[sum(lengths[:i]) : sum(lengths[: i + 1])] for i in range(len(lengths))]


def test_a_list_group_id_groups_by_its_values_and_leaves_the_metadata():
    plan = RankingPlan(_METADATA, RankingSettings(("userId",), 3), "avro")
    groups = _groups(plan, _ROWS)
    assert list(groups) == [((7,),), ((8,),)]  # the [-1] tensor's list, as a tuple

    seven = plan.combine(groups[((7,),)])  # movies 1, 3, 4, 6: cut to 3
    assert seven["userId"] == [7] and seven["title"] == b"user 7"
    assert seven["movieId"] == [1, 3, 4] and seven["response"] == [0.5, 1.5, 2.0]
    assert seven["grid"] == [[[10.0, 11.0, 12.0], [13.0, 14.0, 15.0]],
                             [[30.0, 31.0, 32.0], [33.0, 34.0, 35.0]],
                             [[40.0, 41.0, 42.0], [43.0, 44.0, 45.0]]]  # fmt: skip
    assert seven["terms"] == [_nested_terms(_ROWS[i]) for i in (0, 2, 3)]
    assert seven["genres"] == {"indices0": [0, 1, 2], "indices1": [1, 3, 4], "values": [2.0, 4.0, 5.0]}
    eight = plan.combine(groups[((8,),)])  # movies 2, 5: padded (labels with -1)
    assert eight["movieId"] == [2, 5, 0] and eight["response"] == [1.0, 2.5, -1.0]
    assert len(eight["grid"]) == 2 and eight["genres"]["indices0"] == [0, 1]

    # Avro2TF's updateMetadata: the group id leaves features; documents get the list size first
    metadata = plan.output_metadata()
    features = {e["name"]: e for e in metadata["features"]}
    assert list(features) == ["title", "movieId", "grid", "terms", "genres"]
    assert [e["name"] for e in metadata["labels"]] == ["response"]
    assert features["title"]["shape"] == [] and features["movieId"]["shape"] == [3]
    assert features["grid"]["shape"] == [3, 2, 3] and features["terms"]["shape"] == [3, -1, -1]
    assert features["genres"]["shape"] == [3, 20] and metadata["labels"][0]["shape"] == [3]
    assert [(e["name"], e["shape"]) for e in metadata["extraColumns"]] == [("userId", [-1])]
    assert "parse" not in features["grid"] and "parse" not in metadata["extraColumns"][0]
    assert metadata["contentFeatures"] == ["movieId", "grid", "terms", "genres", "response"]

    # Avro2TF's output columns: group ids, documents, query tensors; dtypes as Spark's
    batch = plan.record(groups[((7,),)])
    assert batch.schema.names == ["userId", "movieId", "grid", "terms", "genres", "response", "title"]
    assert batch.schema.field("movieId").type == pa.list_(pa.int32())
    assert batch.schema.field("response").type == pa.list_(pa.float64())
    assert batch.schema.field("terms").type == pa.list_(pa.list_(pa.list_(pa.string())))
    assert batch.schema.field("title").type == pa.string()
    assert batch.to_pylist()[0]["terms"][0] == [["a"], ["b"]]  # Example bytes as Avro strings


def test_example_records_of_n_dim_documents_parse_back_with_the_metadata():
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import tensorflow as tf

    from beam_tensorize.tf.dataset import parse_spec

    plan = RankingPlan(_METADATA, RankingSettings(("userId",), 3), "example")
    groups = _groups(plan, _ROWS)
    metadata = plan.output_metadata()
    features = {e["name"]: e for e in metadata["features"]}
    assert features["grid"]["parse"]["partitions"] == [
        {"type": "RowLengths", "key": "grid/row_lengths_1"},
        {"type": "UniformRowLength", "length": 3},
    ]
    assert features["terms"]["parse"]["partitions"] == [
        {"type": "RowLengths", "key": "terms/row_lengths_1"},
        {"type": "RowLengths", "key": "terms/row_lengths_2"},
    ]
    assert features["genres"]["parse"]["indexKey"] == ["genres/indices0", "genres/indices1"]
    assert features["genres"]["parse"]["size"] == [3, 20]
    records = [plan.record(rows) for rows in groups.values()]
    parsed = tf.io.parse_example(tf.constant(records), parse_spec(metadata))
    assert parsed["userId"].to_list() == [[7], [8]]  # from extraColumns
    assert parsed["movieId"].numpy().tolist() == [[1, 3, 4], [2, 5, 0]]
    assert parsed["grid"][1].to_list() == [[[20.0, 21.0, 22.0], [23.0, 24.0, 25.0]],
                                           [[50.0, 51.0, 52.0], [53.0, 54.0, 55.0]]]  # fmt: skip
    assert parsed["terms"][0].to_list() == [_nested_terms(_ROWS[i]) for i in (0, 2, 3)]
    genres = tf.sparse.to_dense(parsed["genres"]).numpy()
    assert genres.shape == (2, 3, 20) and genres[0, 2, 4] == 5.0 and genres[1, 1, 5] == 6.0
    assert parsed["response"].numpy().tolist() == [[0.5, 1.5, 2.0], [1.0, 2.5, -1.0]]


def test_skip_padding_and_the_padding_values():
    settings = RankingSettings(("userId",), 3, label_padding=-9.0, feature_padding=4.5)
    plan = RankingPlan(_METADATA, settings, "avro")
    eight = plan.combine(_groups(plan, _ROWS)[((8,),)])
    assert eight["movieId"] == [2, 5, 4] and eight["response"] == [1.0, 2.5, -9.0]
    plan = RankingPlan(_METADATA, dataclasses.replace(settings, skip_padding=True), "example")
    eight = plan.combine(_groups(plan, _ROWS)[((8,),)])
    assert eight["movieId"] == [2, 5] and eight["response"] == [1.0, 2.5]
    entry = next(e for e in plan.output_metadata()["features"] if e["name"] == "movieId")
    assert entry["shape"] == [3] and entry["parse"]["type"] == "RaggedFeature"


# Avro2TF's layout: Avro columns and a metadata of names, dtypes and shapes only.
_AVRO2TF_METADATA = {
    "features": [
        {"name": "qid", "dtype": "long", "shape": [], "isSparse": False, "isDocumentFeature": True},
        {"name": "doc", "dtype": "int", "shape": [], "isSparse": False, "isDocumentFeature": True},
        {"name": "emb", "dtype": "float", "shape": [-1], "isSparse": False, "isDocumentFeature": True},
        {"name": "v1", "dtype": "float", "shape": [30], "isSparse": True, "isDocumentFeature": True},
        {"name": "v3", "dtype": "float", "shape": [4, 5, 6], "isSparse": True, "isDocumentFeature": True},
        {"name": "extra", "dtype": "string", "shape": [], "isSparse": False, "isDocumentFeature": True},
    ],
    "labels": [{"name": "y", "dtype": "int", "shape": [], "isSparse": False, "isDocumentFeature": True}],
}
_AVRO2TF_SCHEMA = pa.schema([
    ("qid", pa.int64()), ("doc", pa.int32()), ("emb", pa.list_(pa.float32())),
    ("v1", pa.struct([("indices", pa.list_(pa.int64())), ("values", pa.list_(pa.float32()))])),
    ("v3", pa.struct([(f"indices{i}", pa.list_(pa.int64())) for i in range(3)] + [("values", pa.list_(pa.float32()))])),
    ("extra", pa.string()), ("y", pa.int32()), ("unused", pa.string()),
])  # fmt: skip


def _avro_row(qid, doc, y=1, emb=(0.5,)):
    return {"qid": qid, "doc": doc, "emb": list(emb), "y": y, "extra": f"e{doc}", "unused": "x",
            "v1": {"indices": [doc], "values": [float(doc)]},
            "v3": {"indices0": [1, 2], "indices1": [3, 4], "indices2": [5, 0], "values": [0.25, 0.75]}}  # fmt: skip


def test_avro2tf_layout_sparse_tensors_of_any_rank_and_nulls_left_out_as_collect_list():
    settings = RankingSettings(("qid",), 4, drop_columns=("extra", "not_a_column"))
    plan = RankingPlan(_AVRO2TF_METADATA, settings, "avro", avro_schema=_AVRO2TF_SCHEMA)
    assert plan.read_columns() == ["qid", "doc", "emb", "v1", "v3", "y"]  # not dropped / unused ones
    rows = [_avro_row(1, 10), _avro_row(1, 11, y=None, emb=()), _avro_row(1, 12)]
    rows[1]["v3"] = None
    grouped = plan.combine([plan.values(r) for r in rows])
    assert grouped["doc"] == [10, 11, 12, 0]
    assert grouped["y"] == [1, 1, -1, -1]  # Spark's collect_list leaves the null out
    assert grouped["emb"] == [[0.5], [], [0.5]]
    assert grouped["v1"] == {"indices0": [0, 1, 2], "indices1": [10, 11, 12], "values": [10.0, 11.0, 12.0]}
    assert grouped["v3"] == {
        "indices0": [0, 0, 1, 1],  # the null one is not collected: the third row is place 1
        "indices1": [1, 2, 1, 2], "indices2": [3, 4, 3, 4], "indices3": [5, 0, 5, 0],
        "values": [0.25, 0.75, 0.25, 0.75],
    }  # fmt: skip
    metadata = plan.output_metadata()
    assert [e["name"] for e in metadata["features"]] == ["doc", "emb", "v1", "v3"]  # qid, extra gone
    assert [e["shape"] for e in metadata["features"]] == [[4], [4, -1], [4, 30], [4, 4, 5, 6]]
    assert plan.record([plan.values(r) for r in rows]).schema.field("v3").type == pa.struct(
        [(f"indices{i}", pa.list_(pa.int64())) for i in range(4)] + [("values", pa.list_(pa.float32()))]
    )


def test_example_layout_of_avro2tf_tensors():
    plan = RankingPlan(
        _AVRO2TF_METADATA, RankingSettings(("qid",), 4), "example", avro_schema=_AVRO2TF_SCHEMA
    )
    metadata = plan.output_metadata()
    by_name = {e["name"]: e for e in [*metadata["features"], *metadata["labels"], *metadata["extraColumns"]]}
    assert by_name["qid"]["parse"] == {"type": "FixedLenFeature", "key": "qid", "dtype": "int64", "shape": []}
    assert by_name["v3"]["parse"] == {
        "type": "SparseFeature", "indexKey": [f"v3/indices{i}" for i in range(4)], "valueKey": "v3/values",
        "dtype": "float32", "size": [4, 4, 5, 6],
    }  # fmt: skip
    assert by_name["v1"]["parse"]["size"] == [4, 30]
    assert by_name["emb"]["parse"]["partitions"] == [{"type": "RowLengths", "key": "emb/row_lengths_1"}]
    assert isinstance(plan.record([plan.values(_avro_row(1, 10))]), bytes)


def test_mistakes_name_the_tensor():
    schema = _AVRO2TF_SCHEMA.append(pa.field("rec", pa.struct([("a", pa.int32())])))
    metadata = copy.deepcopy(_AVRO2TF_METADATA)
    metadata["features"].append({"name": "rec", "dtype": "int", "shape": [], "isDocumentFeature": True})
    with pytest.raises(
        ValueError, match=re.escape("tensor 'rec' is a column of type struct<a: int32>, which a tf.train")
    ):
        RankingPlan(metadata, RankingSettings(("qid",), 2), "example", avro_schema=schema)
    plan = RankingPlan(metadata, RankingSettings(("qid",), 2), "avro", avro_schema=schema)
    rows = [plan.values({**_avro_row(1, d), "rec": {"a": d}}) for d in range(3)]
    assert plan.combine(rows)["rec"] == [{"a": 0}, {"a": 1}]  # kept as they are, cut
    with pytest.raises(ValueError, match="tensor 'doc' of the metadata is not a column of the Avro input"):
        RankingPlan(_AVRO2TF_METADATA, RankingSettings(("qid",), 2), "avro", avro_schema=schema.remove(1))
    with pytest.raises(ValueError, match="group id 'nope' is not a tensor of the metadata"):
        RankingPlan(_METADATA, RankingSettings(("nope",), 2))
    with pytest.raises(ValueError, match="group id 'userId' is also a dropped column"):
        RankingSettings(("userId",), 2, drop_columns=("userId",))
