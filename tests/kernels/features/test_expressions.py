"""columnExpr parsing (config layer) and evaluation on Arrow (kernel layer), without Beam."""

from __future__ import annotations

import pyarrow as pa
import pytest

from beam_tensorize.config.expr import ExprError, Path, parse_column_expr, root_columns
from beam_tensorize.kernels.features.expressions import ExpressionEvalError, evaluate, java_double_string

NTV = pa.struct([("name", pa.string()), ("term", pa.string()), ("value", pa.float64())])


@pytest.fixture(scope="module")
def batch() -> pa.RecordBatch:
    return pa.RecordBatch.from_pydict(
        {
            "userId": pa.array([1, 2, None], pa.int32()),
            "g": pa.array(
                [
                    [
                        {"name": "Genre", "term": "Action", "value": 1.0},
                        {"name": "Genre", "term": "Drama", "value": 0.5},
                    ],
                    [],
                    None,
                ],
                pa.list_(NTV),
            ),
            "f": pa.array([1.5, None, 0.1], pa.float32()),
            "d": pa.array([1e7, 2.0, -0.00012], pa.float64()),
            "s": pa.array(["12", " x ", None]),
            "m": pa.array([[("a", 1)], [("b", 2), ("a", 3)], None], pa.map_(pa.string(), pa.int64())),
            "nested": pa.array([[[1, 2], [3]], [[4]], None], pa.list_(pa.list_(pa.int64()))),
            "rec": pa.array(
                [{"inner": {"deep": "x"}}, {"inner": None}, None],
                pa.struct([("inner", pa.struct([("deep", pa.string())]))]),
            ),
            "deep": pa.array(
                [[[{"t": "a"}], [{"t": "b"}, {"t": "c"}]], [], None],
                pa.list_(pa.list_(pa.struct([("t", pa.string())]))),
            ),
        }
    )


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("userId", [1, 2, None]),
        ("USERID", [1, 2, None]),  # case-insensitive resolution, like Spark
        ("g.term", [["Action", "Drama"], [], None]),
        ("g.value", [[1.0, 0.5], [], None]),
        ("g.term[0]", ["Action", None, None]),
        ("g.term[5]", [None, None, None]),
        ("element_at(g.term, -1)", ["Drama", None, None]),
        ("element_at(g.term, 1)", ["Action", None, None]),
        ("rec.inner.deep", ["x", None, None]),
        ("deep.t", [[["a"], ["b", "c"]], [], None]),
        ("nested[0]", [[1, 2], [4], None]),
        ("nested[1][0]", [3, None, None]),
        ("m['a']", [1, 3, None]),
        ("m['zz']", [None, None, None]),
        ("CAST(userId AS STRING)", ["1", "2", None]),
        ("cast(f as string)", ["1.5", None, "0.1"]),
        ("cast(d as string)", ["1.0E7", "2.0", "-1.2E-4"]),
        ("cast(s as long)", [12, None, None]),
        ("cast(s as int)", [12, None, None]),
        ("cast(s as double)", [12.0, None, None]),
        ("cast(d as int)", [10000000, 2, 0]),
        ("cast(userId as boolean)", [True, True, None]),
        ("userId + 1", [2, 3, None]),
        ("userId * 2 - 1", [1, 3, None]),
        ("userId / 2", [0.5, 1.0, None]),
        ("-userId", [-1, -2, None]),
        ("concat(s, '-', userId)", ["12-1", " x -2", None]),
        ("s || '!'", ["12!", " x !", None]),
        ("concat_ws('|', s, g.term[0])", ["12|Action", " x ", ""]),
        ("concat_ws('-', g.term, s)", ["Action-Drama-12", " x ", ""]),
        ("lower(g.term)", [["action", "drama"], [], None]),
        ("upper(s)", ["12", " X ", None]),
        ("trim(s)", ["12", "x", None]),
        ("ltrim(s)", ["12", "x ", None]),
        ("rtrim(s)", ["12", " x", None]),
        ("length(s)", [2, 3, None]),
        ("substring(s, 2, 2)", ["2", "x ", None]),
        ("substring(s, -1)", ["2", " ", None]),
        ("size(g)", [2, 0, None]),
        ("coalesce(userId, 0)", [1, 2, 0]),
        ("split(s, '2')", [["1", ""], [" x "], None]),
        ("abs(userId - 5)", [4, 3, None]),
        ("'const'", ["const", "const", "const"]),
    ],
)
def test_evaluate(batch, expr, expected):
    assert evaluate(parse_column_expr(expr), batch).to_pylist() == expected


def test_evaluate_on_sliced_batch_keeps_rows_aligned(batch):
    sliced = batch.slice(1, 2)
    assert evaluate(parse_column_expr("g.term"), sliced).to_pylist() == [[], None]
    assert evaluate(parse_column_expr("nested[0]"), sliced).to_pylist() == [[4], None]


@pytest.mark.parametrize(
    ("expr", "message"),
    [
        ("nope", "no field 'nope' in the input columns; available: userId, g, f, d, s, m, nested, rec, deep"),
        ("g.nope", "no field 'nope' in 'g'; available: name, term, value"),
        ("userId.x", "'userId' is int32, not a record; cannot take field 'x'"),
        ("userId[0]", "cannot index int32: only lists and maps take [ ]"),
        ("lower(userId)", "lower() needs strings, got int32"),
        ("size(userId)", "size() needs a list or map, got int32"),
    ],
)
def test_evaluate_errors(batch, expr, message):
    with pytest.raises(ExpressionEvalError) as err:
        evaluate(parse_column_expr(expr), batch)
    assert str(err.value) == message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "expected a non-empty Spark SQL column expression"),
        ("a, b", "not valid Spark SQL"),
        ("max(a)", "unsupported SQL construct 'MAX(a)' (Max)"),
        ("SELECT a FROM t", "unsupported SQL construct 'SELECT a FROM t' (Select)"),
        ("cast(a as date)", "cannot CAST to DATE; supported: STRING, LONG"),
        ("a.*", "'*' selects many columns; name one column"),
        ("lower(a, b)", "The number of provided arguments (2) is greater than the maximum"),
        ("concat_ws('-')", "concat_ws() takes 2 or more arguments, got 1"),
        ("foo(a)", "unsupported function foo(); supported: abs, coalesce, concat"),
        ("a % 2", "unsupported SQL construct 'a % 2' (Mod)"),
    ],
)
def test_parse_errors(text, message):
    with pytest.raises(ExprError) as err:
        parse_column_expr(text)
    assert message in str(err.value)


def test_parse_paths_and_roots():
    assert parse_column_expr("a.b.c.d.e") == Path(("a", "b", "c", "d", "e"))
    assert parse_column_expr("`weird name`.x") == Path(("weird name", "x"))
    assert root_columns(parse_column_expr("concat(a.x, b[0], cast(c AS STRING), 'lit')")) == {"a", "b", "c"}


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (1.0, "1.0"),
        (-3.25, "-3.25"),
        (1e7, "1.0E7"),
        (123456789.0, "1.23456789E8"),
        (1e-3, "0.001"),
        (9.99e-4, "9.99E-4"),
        (1234567.0, "1234567.0"),
        (-0.0, "-0.0"),
        (float("nan"), "NaN"),
        (float("-inf"), "-Infinity"),
    ],
)
def test_java_double_string(value, text):
    assert java_double_string(value) == text
