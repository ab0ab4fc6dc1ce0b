"""Feature lists, sparse vectors, tokenization and batch-level hashing — kernels without Beam."""

from __future__ import annotations

import hashlib

import numpy as np
import pyarrow as pa
import pytest

from beam_tensorize.config import parse_config
from beam_tensorize.kernels.features.conversion import DENSE_VECTOR_KEY, layout_of
from beam_tensorize.kernels.features.hashing import hash_tensors, hashing_description
from beam_tensorize.kernels.features.sparse import combine_sparse, drop_zeros, sparse_to_dense
from beam_tensorize.kernels.features.tokenize import ENGLISH_STOP_WORDS, tokenize
from beam_tensorize.kernels.features.vocab import (
    FeatureList,
    apply_feature_lists,
    count_entries,
    entries_of,
    lookup_ids,
    order_feature_list,
    own_counts_name,
    partial_counts,
)
from beam_tensorize.kernels.metadata import build_metadata

NTV = pa.struct([("name", pa.string()), ("term", pa.string()), ("value", pa.float64())])


def ntv(*entries):
    return [{"name": n, "term": t, "value": v} for n, t, v in entries]


def test_entries_and_counts():
    assert entries_of(pa.array([["b", None, "a"], None, ["b"]])).to_pylist() == ["b", "a", "b"]
    assert entries_of(pa.array(["x", None])).to_pylist() == ["x"]
    column = pa.array([ntv(("Genre", "Drama", 1.0), ("Year", "1999", 1.0)), None], pa.list_(NTV))
    assert entries_of(column).to_pylist() == ["Genre,Drama", "Year,1999"]
    assert count_entries(pa.array(["a", "b", "a"])) == {"a": 2, "b": 1}
    with pytest.raises(TypeError, match="a feature list needs strings or name-term-value records, got int64"):
        entries_of(pa.array([1]))


def test_order_is_count_descending_then_entry_bytes_ascending():
    counts = {"b": 2, "a": 2, "B": 2, "é": 5, "z": 1, "ä": 2}
    assert order_feature_list(counts) == ["é", "B", "a", "b", "ä", "z"]
    assert order_feature_list(counts, cap=2) == ["é", "B"]
    assert order_feature_list([("x", 1), ("w", 1)]) == ["w", "x"]


def test_lookup_unknown_and_nulls():
    vocab = ["b", "a"]
    assert lookup_ids(pa.array(["a", "zz", None]), vocab).to_pylist() == [1, 2, 2]
    assert lookup_ids(pa.array([["a", "b"], None, []]), vocab).to_pylist() == [[1, 0], None, []]
    assert lookup_ids(pa.array([[["a"], ["q"]]]), vocab).to_pylist() == [[[1], [2]]]


def test_feature_list_text_round_trip():
    fl = FeatureList(("Genre,Drama", "Genre,Comedy"), (5, 3), ntv=True)
    assert fl.to_text() == "Genre,Drama\nGenre,Comedy\n"
    assert fl.counts_text() == "5\tGenre,Drama\n3\tGenre,Comedy\n"
    assert FeatureList.from_text(fl.to_text(), ntv=True).entries == fl.entries
    with pytest.raises(ValueError, match="contains a line break"):
        FeatureList(("a\nb",)).to_text()


CONFIG = parse_config(
    {
        "features": [
            {"outputTensorInfo": {"name": "terms", "dtype": "long", "shape": [-1]}},
            {
                "inputFeatureInfo": {"columnExpr": "g"},
                "outputTensorInfo": {"name": "sparse", "dtype": "float", "isSparse": True},
            },
            {
                "inputFeatureInfo": {"columnExpr": "g"},
                "outputTensorInfo": {"name": "dense", "dtype": "float", "shape": []},
            },
            {"outputTensorInfo": {"name": "num", "dtype": "long", "shape": []}},
        ]
    }
)


def _batch():
    return pa.RecordBatch.from_pydict(
        {
            "terms": pa.array([["x", "y", "x"], [], None]),
            "sparse": pa.array(
                [ntv(("G", "a", 1.0), ("G", "b", 2.0), ("G", "a", 0.5)), ntv(("G", "new", 0.0)), None],
                pa.list_(NTV),
            ),
            "dense": pa.array([ntv(("G", "b", 2.0)), [], ntv(("G", "zz", 3.0))], pa.list_(NTV)),
            "num": pa.array([1, 2, 3]),
        }
    )


def test_partial_counts_mark_lists_and_ntv():
    keys = {"terms": "terms", "sparse": "shared", "dense": "shared", "num": "num"}
    got = sorted(partial_counts(_batch(), CONFIG.tensors, keys), key=repr)
    assert got == sorted(
        [
            (("terms", None), 0),
            (("terms", "x"), 2),
            (("terms", "y"), 1),
            # NTV tensors sharing a list count terms, and mark the names each one holds.
            (("shared", None), 1),
            (("shared", "\0sparse\0G"), 0),
            (("shared", "a"), 2),
            (("shared", "b"), 1),
            (("shared", "new"), 1),
            (("shared", None), 1),
            (("shared", "\0dense\0G"), 0),
            (("shared", "b"), 1),
            (("shared", "zz"), 1),
            # and each tensor of a shared list counts its own entries, as it holds them
            ((own_counts_name("sparse"), None), 1),
            ((own_counts_name("sparse"), "G,a"), 2),
            ((own_counts_name("sparse"), "G,b"), 1),
            ((own_counts_name("sparse"), "G,new"), 1),
            ((own_counts_name("dense"), None), 1),
            ((own_counts_name("dense"), "G,b"), 1),
            ((own_counts_name("dense"), "G,zz"), 1),
        ],
        key=repr,
    )  # "num" holds numbers: no feature list


def test_apply_feature_lists():
    lists = {
        "terms": FeatureList(("x", "y")),
        "sparse": FeatureList(("G,b", "G,a"), ntv=True),
        "dense": FeatureList(("G,b", "G,a"), ntv=True),
    }
    out = apply_feature_lists(_batch(), CONFIG.tensors, lists)
    assert out.column("terms").to_pylist() == [[0, 1, 0], [], None]
    assert out.column("sparse").to_pylist() == [
        {"indices": [0, 1], "values": [2.0, 1.5]},  # G,a twice: summed
        {"indices": [2], "values": [1.0]},  # unknown entries -> one, index len(list), value 1 (Avro2TF)
        {"indices": [], "values": []},
    ]
    assert out.column("dense").to_pylist() == [[2.0, 0.0, 0.0], [0.0, 0.0, 0.0], [0.0, 0.0, 1.0]]
    assert out.schema.field("dense").metadata == {DENSE_VECTOR_KEY: b"1"}
    assert out.column("num").to_pylist() == [1, 2, 3]
    filtered = apply_feature_lists(_batch(), CONFIG.tensors, lists, filter_zeros=True)
    assert filtered.column("sparse").to_pylist()[1] == {"indices": [2], "values": [1.0]}
    discarded = apply_feature_lists(_batch(), CONFIG.tensors, lists, discard_unknown=True)
    assert discarded.column("terms").to_pylist() == [[0, 1, 0], [], None]
    assert discarded.column("sparse").to_pylist()[1] == {"indices": [], "values": []}
    # Dense vectors have no unknown slot: len(list) values.
    assert discarded.column("dense").to_pylist() == [[2.0, 0.0], [0.0, 0.0], [0.0, 0.0]]
    with pytest.raises(KeyError, match="no feature list for tensor 'terms'"):
        apply_feature_lists(_batch(), CONFIG.tensors, {})


@pytest.mark.parametrize(
    ("combiner", "values"),
    [("SUM", [[3.0, 5.0], [], [1.0]]), ("AVG", [[1.5, 5.0], [], [1.0]]), ("MAX", [[2.0, 5.0], [], [1.0]])],
)
def test_combine_sparse(combiner, values):
    indices, merged = combine_sparse(
        np.array([0, 0, 0, 2]), np.array([5, 1, 1, 3]), np.array([5.0, 1.0, 2.0, 1.0]), 3, combiner
    )
    assert indices.to_pylist() == [[1, 5], [], [3]]
    assert merged.to_pylist() == values


def test_drop_zeros_and_dense():
    indices = pa.array([[0, 2], [1]], pa.large_list(pa.int64()))
    values = pa.array([[0.0, 2.0], [0.0]], pa.large_list(pa.float64()))
    kept_i, kept_v = drop_zeros(indices, values)
    assert (kept_i.to_pylist(), kept_v.to_pylist()) == ([[2], []], [[2.0], []])
    assert sparse_to_dense(indices, values, 3).to_pylist() == [[0.0, 0.0, 2.0], [0.0, 0.0, 0.0]]


def test_tokenize():
    # Spark's list (181 words): keeps d, ll, re, ve, won (Snowball's drops them), drops would.
    assert len(ENGLISH_STOP_WORDS) == 181 and "would" in ENGLISH_STOP_WORDS
    assert not {"d", "ll", "re", "ve", "won"} & ENGLISH_STOP_WORDS
    got = tokenize(pa.array(["The Matrix (1999)", None, "Ça va? Très_bien!", ""])).to_pylist()
    # Java's \W is ASCII-only: letters with accents separate tokens, as in Spark.
    assert got == [["the", "matrix", "1999"], [], ["a", "va", "tr", "s_bien"], []]
    got = tokenize(
        pa.array([["Hello, World", None], None, ["a b it's we'd"]]), remove_stop_words=True
    ).to_pylist()
    assert got == [["hello", "world"], [], ["b", "d"]]
    with pytest.raises(TypeError, match="tokenization needs text, got int64"):
        tokenize(pa.array([1]))


HASH_CONFIG = parse_config(
    {
        "features": [
            {
                "inputFeatureInfo": {
                    "columnExpr": "s",
                    "transformConfig": {"hashInfo": {"hashBucketSize": 10}},
                },
                "outputTensorInfo": {"name": "one", "dtype": "long", "shape": []},
            },
            {
                "inputFeatureInfo": {
                    "columnExpr": "s",
                    "transformConfig": {"hashInfo": {"hashBucketSize": 10, "numHashFunctions": 3}},
                },
                "outputTensorInfo": {"name": "three", "dtype": "long", "shape": [3]},
            },
            {
                "inputFeatureInfo": {
                    "columnConfig": {"g": {"whitelist": ["*"]}},
                    "transformConfig": {"hashInfo": {"hashBucketSize": 4, "combiner": "MAX"}},
                },
                "outputTensorInfo": {"name": "vec", "dtype": "float", "shape": []},
            },
        ]
    }
)


def test_hash_tensors_shapes_and_layouts():
    from beam_tensorize.kernels.features.hashing import hash_buckets

    batch = pa.RecordBatch.from_pydict(
        {
            "one": pa.array(["a", None]),
            "three": pa.array(["a", None]),
            "vec": pa.array([ntv(("g", "x", 1.0), ("g", "y", 2.0)), []], pa.list_(NTV)),
        }
    )
    out = hash_tensors(batch, HASH_CONFIG.tensors)
    a_id = int(hash_buckets(pa.array(["a"]), 10)[0])
    assert out.column("one").to_pylist() == [a_id, 10]
    assert [len(ids) for ids in out.column("three").to_pylist()] == [3, 3]
    assert out.column("three").to_pylist()[1] == [10, 10, 10]
    dense = out.column("vec").to_pylist()
    assert (
        len(dense[0]) == 4
        and sorted(v for v in dense[0] if v) in ([1.0, 2.0], [2.0])
        and dense[1] == [0.0] * 4
    )
    assert layout_of(HASH_CONFIG.tensors[2]).kind == "fixed_len"
    assert layout_of(HASH_CONFIG.tensors[2]).shape == (4,)


def test_hash_tensors_errors():
    bad_shape = parse_config(
        {
            "features": [
                {
                    "inputFeatureInfo": {
                        "columnExpr": "s",
                        "transformConfig": {"hashInfo": {"hashBucketSize": 10, "numHashFunctions": 2}},
                    },
                    "outputTensorInfo": {"name": "s", "dtype": "long", "shape": []},
                }
            ]
        }
    )
    with pytest.raises(
        ValueError, match=r"2 hash functions give 2 ids per value; declare shape \[2\] instead of \[\]"
    ):
        hash_tensors(pa.RecordBatch.from_pydict({"s": ["a"]}), bad_shape.tensors)
    with pytest.raises(ValueError, match="needs name-term-value records, got string"):
        hash_tensors(
            pa.RecordBatch.from_pydict({"one": ["a"], "three": ["a"], "vec": ["x"]}), HASH_CONFIG.tensors
        )


def test_metadata_for_hashed_and_listed_tensors():
    doc = build_metadata(
        CONFIG,
        feature_lists={
            "terms": FeatureList(("x", "y")),
            "sparse": FeatureList(("G,b",), ntv=True),
            "dense": FeatureList(("G,b", "G,a"), ntv=True),
        },
        list_paths={
            "terms": "featureList/terms",
            "sparse": "featureList/sparse",
            "dense": "featureList/dense",
        },
    )
    terms, sparse, dense, num = doc["features"]
    assert terms["numUniqueValues"] == 3
    assert terms["featureList"] == {
        "path": "featureList/terms",
        "size": 2,
        "unknownId": 2,
        "entries": "string",
        "sha256": hashlib.sha256(b"x\ny\n").hexdigest(),  # of the list file, checked when it is read
    }
    # Vectors of N entries (Avro2TF): N ends the shape, numUniqueValues is null.
    assert sparse["parse"]["size"] == 2 and sparse["numUniqueValues"] is None
    assert sparse["shape"] == [*CONFIG.tensor("sparse").output.shape, 2]
    assert dense["parse"] == {"type": "FixedLenFeature", "key": "dense", "dtype": "float32", "shape": [3]}
    assert dense["shape"] == [*CONFIG.tensor("dense").output.shape, 3] and dense["numUniqueValues"] is None
    assert num["numUniqueValues"] is None and "featureList" not in num
    hashed = build_metadata(HASH_CONFIG)["features"]
    assert [t["numUniqueValues"] for t in hashed] == [11, 11, None]
    assert hashed[2]["shape"] == [*HASH_CONFIG.tensor("vec").output.shape, 4]
    assert hashed[2]["parse"] == {"type": "FixedLenFeature", "key": "vec", "dtype": "float32", "shape": [4]}
    assert hashed[1]["hashing"] == hashing_description(
        HASH_CONFIG.tensors[1].input.transform_config.hash_info
    )
    assert hashed[1]["hashing"]["strongHashKeys"][0] == [0x243F6A8885A308D3, 0x13198A2E03707344]


def test_filter_zeros_also_drops_zeros_of_hashed_ntv_vectors():
    """Avro2TF filters zeros out of every sparse vector, hashed ones included."""
    from beam_tensorize.kernels.features.hashing import hash_buckets

    config = parse_config(
        {
            "features": [
                {
                    "inputFeatureInfo": {
                        "columnExpr": "words",
                        "transformConfig": {"hashInfo": {"hashBucketSize": 1000}},
                    },
                    "outputTensorInfo": {"name": "words", "dtype": "float", "shape": [], "isSparse": True},
                }
            ]
        }
    )
    ntv = [[{"name": "w", "term": "a", "value": 0.0}, {"name": "w", "term": "b", "value": 2.0}], []]
    batch = hash_tensors(pa.RecordBatch.from_pydict({"words": ntv}), config.tensors)
    kept = apply_feature_lists(batch, config.tensors, {}).column("words").to_pylist()
    dropped = apply_feature_lists(batch, config.tensors, {}, filter_zeros=True).column("words").to_pylist()
    b = int(hash_buckets(pa.array(["w,b"]), 1000)[0])
    assert sorted(kept[0]["values"]) == [0.0, 2.0]
    assert dropped == [{"indices": [b], "values": [2.0]}, {"indices": [], "values": []}]


def _shared_ntv_lists(day1, day2, cap=None):
    from beam_tensorize.kernels.features.vocab import build_feature_list, lists_per_tensor, partial_counts

    config = parse_config(
        {
            "features": [
                {"outputTensorInfo": {"name": n, "dtype": "float", "shape": [], "isSparse": True}}
                for n in ("fruits_day1", "fruits_day2")
            ]
        }
    )
    keys = {"fruits_day1": "fruits_day1", "fruits_day2": "fruits_day1"}
    batch = pa.RecordBatch.from_pydict({"fruits_day1": day1, "fruits_day2": day2})
    counted: dict = {}
    for (key, entry), count in partial_counts(batch, config.tensors, keys):
        counted[(key, entry)] = counted.get((key, entry), 0) + count
    built = build_feature_list([(e, c) for (k, e), c in counted.items() if k == "fruits_day1"], cap)
    return config, lists_per_tensor({"fruits_day1": built}, keys)


def _ntv(name, *terms):
    return [{"name": name, "term": t, "value": 1.0} for t in terms]


def test_ntv_tensors_sharing_a_list_share_it_by_term_each_keeping_its_name():
    """Avro2TF's FeatureListGeneration: the terms of the group are counted together; each
    tensor's list holds its own name, so the same term has the same id in both."""
    config, lists = _shared_ntv_lists(
        [_ntv("day1", "apple", "pear"), _ntv("day1", "apple")],
        [_ntv("day2", "kiwi", "pear"), _ntv("day2", "pear")],
    )
    assert lists["fruits_day1"].entries == ("day1,pear", "day1,apple", "day1,kiwi")
    assert lists["fruits_day2"].entries == ("day2,pear", "day2,apple", "day2,kiwi")
    assert lists["fruits_day1"].counts == (3, 2, 1) and lists["fruits_day1"].ntv
    batch = pa.RecordBatch.from_pydict(
        {"fruits_day1": [_ntv("day1", "kiwi")], "fruits_day2": [_ntv("day2", "kiwi", "plum")]}
    )
    out = apply_feature_lists(batch, config.tensors, lists)
    assert out.column("fruits_day1").to_pylist() == [{"indices": [2], "values": [1.0]}]
    assert out.column("fruits_day2").to_pylist() == [{"indices": [2, 3], "values": [1.0, 1.0]}]


def test_an_ntv_tensor_sharing_a_list_with_several_names_is_refused():
    with pytest.raises(ValueError) as err:
        _shared_ntv_lists([_ntv("day1", "apple"), _ntv("dayX", "pear")], [_ntv("day2", "kiwi"), []])
    assert str(err.value) == (
        "tensor 'fruits_day1' shares a feature list (--tensors_sharing_feature_lists) but its "
        "name-term-value records have several names ('day1', 'dayX'); NTV tensors share lists by "
        "term, so each must hold one name across the data (as in Avro2TF): split the tensor by "
        "name in its columnExpr, or do not share its list"
    )


def test_unknown_ntv_records_of_a_row_become_one_entry_with_value_one_or_are_discarded():
    """Avro2TF's FeatureIndicesConversion: several records not in the list give one entry
    (the unknown id, value 1); with --discard_unknown_entries none."""
    config = parse_config(
        {"features": [{"outputTensorInfo": {"name": "v", "dtype": "float", "shape": [], "isSparse": True}}]}
    )
    batch = pa.RecordBatch.from_pydict(
        {
            "v": pa.array(
                [ntv(("G", "x", 4.0), ("G", "a", 2.0), ("G", "y", 5.0)), ntv(("G", "z", 0.0))], pa.list_(NTV)
            )
        }
    )
    lists = {"v": FeatureList(("G,a",), ntv=True)}
    assert apply_feature_lists(batch, config.tensors, lists).column("v").to_pylist() == [
        {"indices": [0, 1], "values": [2.0, 1.0]},
        {"indices": [1], "values": [1.0]},
    ]
    assert apply_feature_lists(batch, config.tensors, lists, discard_unknown=True).column(
        "v"
    ).to_pylist() == [
        {"indices": [0], "values": [2.0]},
        {"indices": [], "values": []},
    ]


def _joined_lookup(ntv_column, vocab):
    """Each record's `name,term` looked up in the list as it is written (the general path)."""
    from beam_tensorize.kernels.features.ntv import ntv_triples

    rows, entries, values = ntv_triples(ntv_column)
    ids = [vocab.index(e) if e in vocab else len(vocab) for e in entries.to_pylist()]
    return rows.tolist(), ids, values.tolist()


@pytest.mark.parametrize(
    "records",
    [
        [("a", "x"), ("a", "b,c"), ("a", "y"), ("a", "")],  # one name: looked up by its terms
        [("a,b", "c"), ("a,b", "x")],  # a name holding the separator
        [("a", "x"), ("b", "x"), ("a", "b,c")],  # several names: the joined entries
        [("é", "ü"), ("é", "x")],  # names and terms beyond ASCII
    ],
)
def test_lookup_ntv_finds_what_the_joined_entries_find(records):
    from beam_tensorize.kernels.features.vocab_entries import lookup_ntv

    vocab = ["b,x", "a,b,c", "a,x", "a,", "é,ü", "a,b,x", "z"]
    column = pa.array(
        [[{"name": n, "term": t, "value": float(i)} for i, (n, t) in enumerate(records)], None, []],
        pa.list_(pa.struct([("name", pa.string()), ("term", pa.string()), ("value", pa.float64())])),
    )
    for kind in (pa.string(), pa.large_string()):
        rows, ids, values = lookup_ntv(column, pa.array(vocab, kind))
        assert (rows.tolist(), ids.tolist(), values.tolist()) == _joined_lookup(column, vocab)
    assert lookup_ntv(column, [])[1].tolist() == [0] * len(records)


@pytest.mark.parametrize(
    "records",
    [
        [("Genre", "Drama"), ("Genre", "Comedy"), ("Genre", "Drama")],  # one name: its terms counted
        [("a", "x"), ("b", "x"), ("a", "x"), ("b", "y")],  # several names: pairs of codes
        [("a,b", "c"), ("a", "b,c"), ("a", "b,c")],  # two pairs that print alike
        [("a", None), (None, "x"), ("a", "x"), (None, None)],  # nulls are written `null`
        [("é", "ü"), ("é", "ü"), ("", "")],  # beyond ASCII; empty name and term
        [],
    ],
)
def test_ntv_entry_counts_equal_counting_the_joined_entries(records):
    from beam_tensorize.kernels.features.vocab_entries import column_entry_counts

    rows = [[{"name": n, "term": t, "value": 1.0} for n, t in records], None, [None]]
    for text in (pa.string(), pa.large_string()):
        item = pa.struct([("name", text), ("term", text), ("value", pa.float64())])
        column = pa.array(rows, pa.list_(item))
        joined = [f"{'null' if n is None else n},{'null' if t is None else t}" for n, t in records]
        expected = {entry: joined.count(entry) for entry in joined}
        assert count_entries(entries_of(column)) == expected
        assert column_entry_counts(column) == expected
        assert column_entry_counts(column.slice(0, 1)) == expected


def test_ntv_entry_counts_of_integer_terms_print_them_as_spark_does():
    from beam_tensorize.kernels.features.vocab_entries import column_entry_counts

    item = pa.struct([("name", pa.string()), ("term", pa.int64()), ("value", pa.float32())])
    column = pa.array(
        [[{"name": "year", "term": 1999, "value": 1.0}, {"name": "year", "term": 7, "value": 2.0}]] * 2
    )
    column = column.cast(pa.list_(item))
    assert column_entry_counts(column) == {"year,1999": 2, "year,7": 2}


@pytest.mark.parametrize("seed", range(10))
def test_feature_lists_are_ordered_by_count_then_utf8_bytes_as_before(seed):
    """`build_feature_list` (pyarrow's sort) orders as the Python sort it replaced: count
    descending, then the entries' UTF-8 bytes ascending; a cap keeps the first entries."""
    import pickle

    from beam_tensorize.kernels.features.vocab import EntryCounts, build_feature_list

    rng = np.random.default_rng(seed)
    words = ["a", "b", "ab", "B", "é", "e", "日本", "\U0001f600", "a b", "z" * 30, "Zeta", "ä"]
    counted = {w: int(rng.integers(1, 4)) for w in rng.choice(words, 9, replace=False)}
    ordered = sorted(counted.items(), key=lambda item: (-item[1], item[0].encode("utf-8")))
    for cap in (None, 3):
        expected = ordered if cap is None else ordered[:cap]
        # the counts arrive in parts, split at random, with the NTV marker among them
        parts = [EntryCounts.of([(None, 0)])]
        for entry, count in counted.items():
            for _ in range(count):
                parts.append(EntryCounts.of([(entry, 1)]))
        rng.shuffle(parts)
        merged = EntryCounts()
        for part in parts:
            merged.merge(pickle.loads(pickle.dumps(part)))
        built = build_feature_list(merged, cap)
        assert list(zip(built.entries, built.counts)) == expected
        assert not built.ntv
        assert build_feature_list(list(counted.items()) + [(None, 1)], cap).ntv


def test_entry_counts_sum_many_parts_and_travel_as_one_table():
    import pickle

    from beam_tensorize.kernels.features.vocab import EntryCounts

    merged = EntryCounts()
    for i in range(300):  # past the size at which the parts are summed along the way
        merged.merge(EntryCounts.of([(f"e{j}", 1) for j in range(i % 7, 1000)]))
    totals = dict(pickle.loads(pickle.dumps(merged)).pairs())
    assert len(totals) == 1000
    assert totals["e0"] == sum(1 for i in range(300) if i % 7 == 0)
    assert totals["e999"] == 300
    assert EntryCounts().pairs() == []


def test_entry_counts_by_list_gather_the_partial_counts_of_each_list():
    from beam_tensorize.kernels.features.vocab import entry_counts_by_list

    config = parse_config(
        {
            "features": [
                {
                    "inputFeatureInfo": {"columnExpr": "g"},
                    "outputTensorInfo": {"name": "g", "dtype": "long", "shape": [-1]},
                },
                {
                    "inputFeatureInfo": {"columnExpr": "v"},
                    "outputTensorInfo": {"name": "v", "dtype": "float", "shape": [], "isSparse": True},
                },
            ]
        }
    )
    batch = pa.RecordBatch.from_pydict(
        {
            "g": [["b", "a"], ["b"]],
            "v": pa.array(
                [ntv(("Genre", "x", 1.0)), ntv(("Genre", "x", 2.0), ("Year", "1", 1.0))], pa.list_(NTV)
            ),
        }
    )
    keys = {"g": "g", "v": "v"}
    expected: dict = {}
    for (key, entry), count in partial_counts(batch, config.tensors, keys):
        expected.setdefault(key, {})[entry] = count
    got = {key: dict(counts.pairs()) for key, counts in entry_counts_by_list(batch, config.tensors, keys)}
    assert got == expected == {"g": {None: 0, "b": 2, "a": 1}, "v": {None: 1, "Genre,x": 2, "Year,1": 1}}


@pytest.mark.parametrize(
    "feature_list",
    [
        FeatureList(()),
        FeatureList(("",)),
        FeatureList(("", "a", ""), (3, 2, 1)),
        FeatureList(("a\0b", "c"), (1, 1)),  # holds the separator: pickled as usual
        FeatureList(("a", "b"), (2**70, 1)),  # a count past int64: pickled as usual
        FeatureList(("é", "日本", "a,b"), None, True, (("genreVector", "Genre"),)),
        FeatureList(tuple(f"user{i}" for i in range(50_000)), tuple(range(50_000, 0, -1))),
    ],
)
def test_feature_lists_pickle_to_themselves(feature_list):
    import pickle

    for protocol in (2, pickle.DEFAULT_PROTOCOL, pickle.HIGHEST_PROTOCOL):
        copy = pickle.loads(pickle.dumps(feature_list, protocol=protocol))
        assert copy == feature_list
        assert type(copy.entries) is tuple and (copy.counts is None or type(copy.counts) is tuple)


def test_summed_entry_counts_pickle_to_their_own_size():
    """The summed table is one chunk: a pickle carries its rows, not every chunk's shared
    buffer again (pyarrow's group_by gives slices of one buffer)."""
    import pickle

    from beam_tensorize.kernels.features.vocab import EntryCounts

    summed = EntryCounts()
    for part in range(20):
        summed.merge(EntryCounts.of([(f"user{i}", 1) for i in range(part * 5000, part * 5000 + 8000)]))
    table = summed.summed()
    assert table.num_rows == 103_000 and table["entry"].num_chunks == 1
    assert len(pickle.dumps(summed)) < 2 * table.nbytes
