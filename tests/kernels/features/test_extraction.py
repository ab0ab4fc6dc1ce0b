"""NTV selection, tensor extraction, feature layouts and metadata — kernels without Beam."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pytest

from beam_tensorize.config import parse_config
from beam_tensorize.config.model import NtvSelection
from beam_tensorize.kernels.features.conversion import FeatureDataError, FeatureLayout, to_feature_columns
from beam_tensorize.kernels.features.extract import ExtractError, extract_tensors, input_columns
from beam_tensorize.kernels.features.ntv import select_ntv
from beam_tensorize.kernels.metadata import build_metadata, metadata_json
from beam_tensorize.kernels.provenance import describe_row, order_key, source_of, with_source

NTV = pa.struct([("name", pa.string()), ("term", pa.string()), ("value", pa.float64())])


def ntv(*entries):
    return [{"name": n, "term": t, "value": v} for n, t, v in entries]


@pytest.fixture()
def ntv_batch():
    return pa.RecordBatch.from_pydict(
        {
            "genres": pa.array(
                [
                    ntv(("Genre", "Action", 1.0), ("Year", "1999", 1.0)),
                    [],
                    None,
                    ntv(("Genre", "Drama", 0.5)),
                ],
                pa.list_(NTV),
            ),
            "latent": pa.array(
                [ntv(("0", "", 0.1), ("1", "", 0.2)), ntv(("0", "", 0.3)), ntv(("1", "", 0.4)), None],
                pa.list_(NTV),
            ),
        }
    )


def test_select_ntv_whitelist_blacklist_and_merge(ntv_batch):
    result = select_ntv(
        ntv_batch,
        [NtvSelection("genres", whitelist=("Genre",)), NtvSelection("latent", blacklist=("0",))],
    )
    assert result.to_pylist() == [
        ntv(("Genre", "Action", 1.0), ("1", "", 0.2)),
        [],
        ntv(("1", "", 0.4)),
        ntv(("Genre", "Drama", 0.5)),
    ]


def test_select_ntv_star(ntv_batch):
    everything = select_ntv(ntv_batch, [NtvSelection("genres", whitelist=("*",))])
    assert [len(r) for r in everything.to_pylist()] == [2, 0, 0, 1]
    nothing = select_ntv(ntv_batch, [NtvSelection("latent", blacklist=("*",))])
    assert nothing.to_pylist() == [[], [], [], []]


def test_a_column_that_selects_nothing_is_read_only_as_far_as_its_names(ntv_batch):
    """`"blacklist": ["*"]` (or an empty whitelist) can select no entry: the reader is asked
    for the entries' names only (not their terms and values), which still proves the column
    is there and holds records; the merged entries are the other columns' alone."""
    config = parse_config(
        {
            "features": [
                {
                    "inputFeatureInfo": {
                        "columnConfig": {"genres": {"whitelist": ["Genre"]}, "latent": {"blacklist": ["*"]}}
                    },
                    "outputTensorInfo": {"name": "ntv", "dtype": "float", "isSparse": True},
                }
            ]
        }
    )
    assert [s.selects_nothing for s in config.tensors[0].input.column_config] == [False, True]
    assert NtvSelection("x", whitelist=()).selects_nothing
    assert not NtvSelection("x", blacklist=("0",)).selects_nothing
    assert input_columns(config.tensors) == ["genres", "latent.name"]
    names_only = pa.RecordBatch.from_pydict(
        {
            "genres": ntv_batch.column("genres"),
            "latent": pa.array(
                [[{"name": "0"}], [], None, [{"name": "1"}]], pa.list_(pa.struct([("name", pa.string())]))
            ),
        }
    )
    expected = [ntv(("Genre", "Action", 1.0)), [], [], ntv(("Genre", "Drama", 0.5))]
    assert extract_tensors(names_only, config.tensors).column("ntv").to_pylist() == expected
    assert extract_tensors(ntv_batch, config.tensors).column("ntv").to_pylist() == expected
    # The same column read as a whole elsewhere is read whole.
    assert input_columns(config.tensors, ["latent"]) == ["genres", "latent"]
    with pytest.raises(ExtractError, match="no NTV column 'latent' in the input; available: genres"):
        extract_tensors(names_only.select(["genres"]), config.tensors)
    no_names = names_only.set_column(1, "latent", pa.array([[1], [], None, [2]]))
    with pytest.raises(
        ExtractError, match="column 'latent' is list<item: int64>, not an array of name/term/value"
    ):
        extract_tensors(no_names, config.tensors)


def test_select_ntv_of_one_column_keeps_its_row_order(ntv_batch):
    only_genres = select_ntv(ntv_batch, [NtvSelection("genres", whitelist=("Genre",))])
    assert only_genres.to_pylist() == [ntv(("Genre", "Action", 1.0)), [], [], ntv(("Genre", "Drama", 0.5))]
    everything = select_ntv(ntv_batch, [NtvSelection("latent", whitelist=("*",))])
    assert everything.to_pylist() == [
        ntv(("0", "", 0.1), ("1", "", 0.2)),
        ntv(("0", "", 0.3)),
        ntv(("1", "", 0.4)),
        [],
    ]
    sliced = select_ntv(ntv_batch.slice(1, 3), [NtvSelection("latent", blacklist=("0",))])
    assert sliced.to_pylist() == [[], ntv(("1", "", 0.4)), []]


def test_select_ntv_rejects_non_ntv_column():
    batch = pa.RecordBatch.from_pydict({"x": [[1, 2]]})
    with pytest.raises(
        ValueError, match="column 'x' is list<item: int64>, not an array of name/term/value records"
    ):
        select_ntv(batch, [NtvSelection("x", whitelist=("*",))])


SAMPLE_LIKE_CONFIG = {
    "features": [
        {"outputTensorInfo": {"name": "userId", "dtype": "long", "shape": [-1]}},
        {
            "inputFeatureInfo": {"columnExpr": "lower(genres.term)"},
            "outputTensorInfo": {"name": "terms", "dtype": "string", "shape": [-1]},
        },
        {
            "inputFeatureInfo": {"columnConfig": {"genres": {"whitelist": ["Genre"]}}},
            "outputTensorInfo": {"name": "genreNtv", "dtype": "float", "isSparse": True},
        },
    ],
    "labels": [{"outputTensorInfo": {"name": "response", "dtype": "double"}}],
}


def test_extract_tensors_and_input_columns(ntv_batch):
    config = parse_config(SAMPLE_LIKE_CONFIG)
    batch = with_source(
        ntv_batch.append_column("userId", pa.array([1, 2, 3, 4], pa.int32())).append_column(
            "response", pa.array([4.0, 3.5, 1.0, 2.0])
        ),
        "/data/a.avro",
        77,
    )
    out = extract_tensors(batch, config.tensors)
    assert out.schema.names == ["userId", "terms", "genreNtv", "response"]
    assert out.column("terms").to_pylist() == [["action", "1999"], [], None, ["drama"]]
    assert out.column("genreNtv").to_pylist()[0] == ntv(("Genre", "Action", 1.0))
    assert source_of(out) == ("/data/a.avro", 77)
    assert input_columns(config.tensors) == ["genres", "response", "userId"]


def test_extract_error_names_tensor_and_config_path(ntv_batch):
    config = parse_config({"features": [{"outputTensorInfo": {"name": "missing", "dtype": "long"}}]})
    with pytest.raises(ExtractError) as err:
        extract_tensors(ntv_batch, config.tensors)
    assert str(err.value) == (
        "features[0].inputFeatureInfo ('missing'): columnExpr 'missing': no field 'missing' in the "
        "input columns; available: genres, latent"
    )


def layouts(*specs):
    return [FeatureLayout.for_tensor(*spec) for spec in specs]


def test_layout_kinds_and_keys():
    fixed, ragged, sparse = layouts(
        ("a", "long", (2, 3), False), ("b", "float", (-1, 4, -1), False), ("c", "float", (10,), True)
    )
    assert (fixed.kind, fixed.feature_keys()) == ("fixed_len", ["a"])
    assert (ragged.kind, ragged.feature_keys()) == ("ragged", ["b", "b/row_lengths_2"])
    assert (sparse.kind, sparse.feature_keys()) == ("sparse", ["c/indices", "c/values"])
    assert FeatureLayout.for_tensor("d", "sparseVector", (), False).kind == "sparse"


def test_to_feature_columns_values_and_types():
    batch = pa.RecordBatch.from_pydict(
        {
            "i": pa.array([1, 2], pa.int32()),
            "b": [True, False],
            "f": pa.array([1.5, 2.25], pa.float64()),
            "s": ["x", "y"],
            "l": [[1, 2], None],
            "grid": pa.array([[[1.0, 2.0], [3.0, 4.0]], [[5.0, 6.0], [7.0, 8.0]]]),
            "ragged": [[["a"], ["b", "c"]], [[]]],
            "sv": [{"indices": [1, 4], "values": [0.5, 1.0]}, {"indices": [], "values": []}],
        }
    )
    result = to_feature_columns(
        batch,
        layouts(
            ("i", "int", (), False),
            ("b", "boolean", (), False),
            ("f", "double", (), False),
            ("s", "string", (), False),
            ("l", "long", (-1,), False),
            ("grid", "float", (2, 2), False),
            ("ragged", "string", (-1, -1), False),
            ("sv", "sparseVector", (5,), False),
        ),
    )
    assert result.reasons == []
    features = result.features
    assert features.to_pydict() == {
        "i": [[1], [2]],
        "b": [[1], [0]],
        "f": [[1.5], [2.25]],
        "s": [[b"x"], [b"y"]],
        "l": [[1, 2], []],
        "grid": [[1.0, 2.0, 3.0, 4.0], [5.0, 6.0, 7.0, 8.0]],
        "ragged": [[b"a", b"b", b"c"], []],
        "ragged/row_lengths_1": [[1, 2], [0]],
        "sv/indices": [[1, 4], []],
        "sv/values": [[0.5, 1.0], []],
    }
    types = {f.name: f.type.value_type for f in features.schema}
    assert types["i"] == pa.int64() and types["f"] == pa.float32() and types["s"] == pa.large_binary()


def test_scalar_with_shape_minus_one_becomes_list():
    batch = pa.RecordBatch.from_pydict({"u": pa.array([7, None], pa.int32())})
    result = to_feature_columns(batch, layouts(("u", "long", (-1,), False)))
    assert result.features.to_pydict() == {"u": [[7], []]}
    assert result.reasons == []


@pytest.mark.parametrize(
    ("column", "spec", "bad_rows", "reason"),
    [
        (pa.array([1, None, 3]), ("x", "long", (), False), [1], "tensor 'x': null value"),
        (
            pa.array([[1, 2], [3]]),
            ("x", "long", (2,), False),
            [1],
            "tensor 'x': expected 2 values at dimension 0, got 1",
        ),
        (pa.array([[1, None]]), ("x", "long", (-1,), False), [0], "tensor 'x': null element in the list"),
        (
            pa.array([[[1], None]]),
            ("x", "long", (-1, -1), False),
            [0],
            "tensor 'x': null list inside the value",
        ),
        (
            pa.array([1, 2**40]),
            ("x", "int", (), False),
            [1],
            "tensor 'x': value overflows dtype int (32 bits)",
        ),
        (
            pa.array([1.0, 2.5]),
            ("x", "long", (), False),
            [1],
            "tensor 'x': value is not a whole number fitting dtype long",
        ),
        (
            pa.array([1.0, 1e300]),
            ("x", "float", (), False),
            [1],
            "tensor 'x': value overflows a 32-bit float",
        ),
        (
            pa.array([0, 2]),
            ("x", "boolean", (), False),
            [1],
            "tensor 'x': boolean tensor holds a value other than 0/1",
        ),
        (
            pa.array([{"indices": [1], "values": [1.0, 2.0]}]),
            ("x", "sparseVector", (4,), False),
            [0],
            "tensor 'x': indices and values differ in length",
        ),
        (
            pa.array([{"indices": [9], "values": [1.0]}]),
            ("x", "sparseVector", (4,), False),
            [0],
            "tensor 'x': index outside the dense shape [4]",
        ),
    ],
)
def test_bad_rows_are_reported_and_dropped(column, spec, bad_rows, reason):
    result = to_feature_columns(pa.RecordBatch.from_pydict({"x": column}), layouts(spec), check_shapes=True)
    assert result.bad_rows.tolist() == bad_rows
    assert result.reasons == [reason] * len(bad_rows)
    assert result.features.num_rows == len(column) - len(bad_rows)
    assert result.off_shape == {}


def test_rows_off_the_outer_fixed_dimension_are_kept_and_counted_by_default():
    """Avro2TF never checks shapes: a [2] tensor of 1 or 3 values (or a null) is written as it
    is; the rows are counted per tensor. Inner dimensions are still checked (the Example holds
    the values flat) and a row bad for that is not counted as off shape."""
    batch = pa.RecordBatch.from_pydict(
        {
            "x": pa.array([[1, 2], [3], [4, 5, 6], None]),
            "m": pa.array([[[1, 2]], [[1, 2], [3, 4]], [[1, 2, 3]], [[5, 6]]]),
        }
    )
    result = to_feature_columns(batch, layouts(("x", "long", (2,), False), ("m", "long", (1, 2), False)))
    assert result.bad_rows.tolist() == [2]
    assert result.reasons == ["tensor 'm': expected 2 values at dimension 1, got 3"]
    assert result.features.to_pydict() == {"x": [[1, 2], [3], []], "m": [[1, 2], [1, 2, 3, 4], [5, 6]]}
    assert result.off_shape == {"x": 2, "m": 1}


@pytest.mark.parametrize(
    ("column", "spec", "message"),
    [
        (
            pa.array([[1]]),
            ("x", "long", (), False),
            "tensor 'x': shape [] needs 0 list level(s) but the input is list<item: int64>",
        ),
        (
            pa.array(["a"]),
            ("x", "long", (), False),
            "dtype long with string input needs a feature list or hashing",
        ),
        (
            pa.array([1]),
            ("x", "sparseVector", (), False),
            "a sparse tensor needs a record with 'indices' and 'values'",
        ),
    ],
)
def test_column_level_errors(column, spec, message):
    with pytest.raises(FeatureDataError) as err:
        to_feature_columns(pa.RecordBatch.from_pydict({"x": column}), layouts(spec))
    assert message in str(err.value)


def test_metadata_document():
    config = parse_config(
        {
            "features": [
                {"outputTensorInfo": {"name": "u", "dtype": "long", "shape": [-1]}},
                {"outputTensorInfo": {"name": "grid", "dtype": "float", "shape": [2, -1, 3]}},
                {"outputTensorInfo": {"name": "sv", "dtype": "sparseVector", "shape": [100]}},
            ],
            "labels": [{"outputTensorInfo": {"name": "y", "dtype": "double", "shape": []}}],
        }
    )
    doc = build_metadata(
        config, {"trainingData": {"files": ["part-00000-of-00001.tfrecord"], "numRecords": 3}}
    )
    u, grid, sv = doc["features"]
    assert u["parse"] == {"type": "RaggedFeature", "valueKey": "u", "dtype": "int64", "partitions": []}
    assert grid["parse"]["partitions"] == [
        {"type": "RowLengths", "key": "grid/row_lengths_1"},
        {"type": "UniformRowLength", "length": 3},
    ]
    assert grid["featureKeys"] == {"grid": "float32", "grid/row_lengths_1": "int64"}
    assert sv["parse"] == {
        "type": "SparseFeature",
        "indexKey": "sv/indices",
        "valueKey": "sv/values",
        "dtype": "float32",
        "size": 100,
    }
    assert sv["isSparse"] is True and sv["numUniqueValues"] is None
    assert doc["labels"][0]["parse"] == {
        "type": "FixedLenFeature",
        "key": "y",
        "dtype": "float32",
        "shape": [],
    }
    assert doc["data"] == {"trainingData": {"files": ["part-00000-of-00001.tfrecord"], "numRecords": 3}}
    text = metadata_json(doc)
    assert json.loads(text) == doc and text == metadata_json(json.loads(text))


def test_provenance():
    batch = with_source(pa.RecordBatch.from_pydict({"a": [1, 2]}), "gs://b/x.avro", 1024)
    assert describe_row(batch, 1) == "gs://b/x.avro: record 1 of the rows starting at byte 1024"
    assert order_key(batch) < order_key(with_source(batch, "gs://b/x.avro", 2048))
    untagged = pa.RecordBatch.from_pydict({"a": np.arange(2)})
    assert order_key(untagged, b"abc") == order_key(untagged, b"abc") != order_key(untagged, b"abd")


@pytest.mark.parametrize(
    ("arrow_type", "dtype", "shape"),
    [
        (pa.int32(), "long", (-1,)),
        (pa.float32(), "double", (-1,)),
        (pa.bool_(), "boolean", (-1,)),
        (pa.string(), "string", (-1,)),
        (pa.binary(), "bytes", (-1,)),
        (pa.list_(pa.list_(pa.int64())), "long", (-1, -1)),
    ],
)
def test_layout_for_extra_columns(arrow_type, dtype, shape):
    from beam_tensorize.kernels.features.conversion import layout_for_column

    layout = layout_for_column("c", arrow_type)
    assert (layout.dtype, layout.shape, layout.kind) == (dtype, shape, "ragged")


def test_layout_for_extra_column_rejects_records():
    from beam_tensorize.kernels.features.conversion import layout_for_column

    with pytest.raises(FeatureDataError, match="extra column 'm' is map<string, int64>"):
        layout_for_column("m", pa.map_(pa.string(), pa.int64()))


def test_extract_keeps_extra_columns():
    config = parse_config({"features": [{"outputTensorInfo": {"name": "u", "dtype": "long"}}]})
    batch = pa.RecordBatch.from_pydict({"u": [1], "Weight": [0.5]})
    out = extract_tensors(batch, config.tensors, ["weight"])
    assert out.to_pydict() == {"u": [1], "weight": [0.5]}
    with pytest.raises(ExtractError, match="extra column 'nope': no field 'nope'"):
        extract_tensors(batch, config.tensors, ["nope"])


def test_decimal_columns_convert_to_integer_and_float_tensors():
    import decimal

    values = pa.array([decimal.Decimal("1.00"), None, decimal.Decimal("-2.50")], pa.decimal128(5, 2))
    batch = pa.RecordBatch.from_pydict({"d": values, "f": values})
    layouts = [
        FeatureLayout.for_tensor("d", "long", (), False),
        FeatureLayout.for_tensor("f", "float", (-1,), False),
    ]
    result = to_feature_columns(batch, layouts)
    assert result.features.to_pydict() == {"d": [[1]], "f": [[1.0]]}
    assert list(result.bad_rows) == [1, 2]
    assert "null" in result.reasons[0] and "whole number" in result.reasons[1]


def test_large_longs_convert_to_float_tensors_as_spark_casts_them():
    import numpy as np

    big = 2 * 10**18 + 1  # not exactly representable as a double
    batch = pa.RecordBatch.from_pydict(
        {"j": pa.array([big, 5], pa.int64()), "k": pa.array([big, 7], pa.int64())}
    )
    layouts = [
        FeatureLayout.for_tensor("j", "double", (), False),
        FeatureLayout.for_tensor("k", "float", (), False),
    ]
    result = to_feature_columns(batch, layouts)
    assert list(result.bad_rows) == []
    expected = [[float(np.float32(float(big)))], [5.0]]
    assert result.features.to_pydict() == {"j": expected, "k": [expected[0], [7.0]]}
