"""Any table in: the same rows as Avro, Parquet and ORC give the same output files; every type
each format holds goes through `Tensorize`; a format of one's own takes one class."""

from __future__ import annotations

import datetime
import decimal
import hashlib
import json
import pathlib

import apache_beam as beam
import pyarrow as pa
import pyarrow.orc as orc
import pyarrow.parquet as pq
import pytest
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from beam_tensorize.io import ReadTable
from beam_tensorize.kernels import avro
from beam_tensorize.kernels.formats import InputFormat, Split, base, project_schema, register_format
from beam_tensorize.kernels.provenance import with_source
from beam_tensorize.kernels.tfrecord.decoding import raw_decode
from beam_tensorize.kernels.tfrecord.files import file_records
from beam_tensorize.sample import AVRO2TF_CONFIG, SAMPLE_AVRO, SAMPLE_CONFIG
from pipelines.tensorize import main

pytestmark = pytest.mark.pipeline


def _sample_table() -> pa.Table:
    with open(SAMPLE_AVRO, "rb") as f:
        return pa.Table.from_batches(list(avro.read_avro_range(f, SAMPLE_AVRO))).replace_schema_metadata(None)


@pytest.fixture(scope="module")
def sample_files(tmp_path_factory) -> dict[str, str]:
    """The bundled sample as Avro (itself), Parquet (3 row groups) and ORC, written by pyarrow."""
    root = tmp_path_factory.mktemp("formats")
    table = _sample_table()
    pq.write_table(table, root / "sample.parquet", row_group_size=100)
    orc.write_table(table, root / "sample.orc")
    return {"avro": SAMPLE_AVRO, "parquet": str(root / "sample.parquet"), "orc": str(root / "sample.orc")}


def _digests(folder: pathlib.Path) -> dict[str, str]:
    return {
        str(p.relative_to(folder)): hashlib.md5(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and p.relative_to(folder).parts[0] != "report"  # names inputs, has timings
    }


@pytest.mark.parametrize("config", [SAMPLE_CONFIG, AVRO2TF_CONFIG], ids=["sample", "avro2tf"])
def test_avro_parquet_and_orc_give_identical_files(tmp_path, sample_files, config):
    outputs = {}
    for fmt, path in sample_files.items():
        out = tmp_path / fmt
        assert main(["--input", path, "--config", config, "--output", str(out)]) == 0
        outputs[fmt] = _digests(out)
    assert "trainingData/part-00000-of-00001.tfrecord" in outputs["avro"]
    assert "metadata/tensor_metadata.json" in outputs["avro"] and "_SUCCESS" in outputs["avro"]
    assert outputs["parquet"] == outputs["avro"]
    assert outputs["orc"] == outputs["avro"]


def _large(t: pa.DataType) -> pa.DataType:
    """`t` with large strings and lists, as Polars (and pandas' Arrow strings) write them."""
    if pa.types.is_string(t):
        return pa.large_string()
    if pa.types.is_list(t):
        return pa.large_list(_large(t.value_type))
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _large(f.type), f.nullable) for f in t])
    return t


_WHOLE_NTV_CONFIG = {
    "features": [
        {
            "inputFeatureInfo": {"columnExpr": "genreFeatures"},
            "outputTensorInfo": {"name": "genres", "dtype": "float", "shape": [], "isSparse": True},
        }
    ],
    "labels": [
        {
            "inputFeatureInfo": {"columnExpr": "response"},
            "outputTensorInfo": {"name": "response", "dtype": "double", "shape": []},
        }
    ],
}


@pytest.mark.parametrize("config", ["sample", "whole NTV column"])
def test_large_strings_and_lists_give_the_files_of_the_avro_input(tmp_path, config):
    """A Parquet file of large_string / large_list columns (Polars' default) gives the records
    and feature lists of the same rows read from Avro (the metadata names the input's types)."""
    table = _sample_table()
    table = table.cast(pa.schema([pa.field(f.name, _large(f.type), f.nullable) for f in table.schema]))
    assert pa.types.is_large_string(table.schema.field("genreFeatures").type.value_type.field("term").type)
    pq.write_table(table, tmp_path / "large.parquet")
    if config == "sample":
        config_path = SAMPLE_CONFIG
    else:
        config_path = str(tmp_path / "ntv.json")
        pathlib.Path(config_path).write_text(json.dumps(_WHOLE_NTV_CONFIG))
    outputs = {}
    for name, path in (("avro", SAMPLE_AVRO), ("parquet", str(tmp_path / "large.parquet"))):
        out = tmp_path / name
        assert main(["--input", path, "--config", config_path, "--output", str(out), "--report", "none"]) == 0
        outputs[name] = {k: v for k, v in _digests(out).items() if not k.startswith("metadata/")}
    assert "trainingData/part-00000-of-00001.tfrecord" in outputs["avro"]
    assert any(k.startswith("featureList/") for k in outputs["avro"])
    assert outputs["parquet"] == outputs["avro"]


def test_auto_reads_a_folder_mixing_formats_and_names_each_split(sample_files):
    expected = _sample_table().column("userId").to_pylist()
    with TestPipeline() as p:
        batches = p | ReadTable(list(sample_files.values()), columns=["userId"], batch_rows=64)
        ids = batches | beam.FlatMap(lambda b: b.column("userId").to_pylist())
        assert_that(ids, equal_to(expected * 3))


def test_an_explicit_format_that_does_not_fit_fails_naming_the_file(tmp_path, capsys):
    args = [
        "--input",
        SAMPLE_AVRO,
        "--config",
        SAMPLE_CONFIG,
        "--output",
        str(tmp_path / "o"),
        "--input_format",
        "orc",
    ]
    assert main(args) == 1
    err = capsys.readouterr().err
    assert (
        f"{SAMPLE_AVRO}: not an ORC file (it looks like Avro); check the input path or the input format"
        in err
    )
    assert not (tmp_path / "o" / "_SUCCESS").exists()


# -- every type a format holds, through Tensorize ---------------------------------------------

ROWS = 6
_NTV = pa.list_(pa.struct([("name", pa.string()), ("term", pa.string()), ("value", pa.float32())]))


def _typed_table(fmt: str) -> pa.Table:
    """One column per Arrow type the format holds (ORC has no unsigned integers)."""
    unsigned = fmt != "orc"
    return pa.table(
        {
            "i8": pa.array([1, -2, 3, -4, 5, 127], pa.int8()),
            "i16": pa.array([1, -2, 3, 4, 5, -32768], pa.int16()),
            "i32": pa.array([1, -2, 3, 4, 5, 2**31 - 1], pa.int32()),
            "i64": pa.array([1, -2, 3, 4, 2**40, -(2**62)], pa.int64()),
            "u8": pa.array([1, 2, 3, 4, 5, 255], pa.uint8() if unsigned else pa.int16()),
            "u32": pa.array([1, 2, 3, 4, 5, 2**32 - 1], pa.uint32() if unsigned else pa.int64()),
            "f32": pa.array([0.5, 1.5, -2.5, 3.5, 4.5, 5.5], pa.float32()),
            "f64": pa.array([0.25, 1.5, 2.5, 3.5, 4.5, 1e30], pa.float64()),
            "b": pa.array([True, False, True, True, False, True]),
            "s": pa.array(["a", "b", "", "d", "é", "f"]),
            "bin": pa.array([b"\x00", b"x", b"", b"\xff", b"yy", b"z"], pa.binary()),
            "d32": pa.array([datetime.date(2020, 1, i + 1) for i in range(ROWS)], pa.date32()),
            "ts": pa.array(
                [datetime.datetime(2020, 1, 1, 0, 0, i, 250) for i in range(ROWS)], pa.timestamp("us")
            ),
            "dec": pa.array(
                [decimal.Decimal(v) for v in ["1.25", "-2.50", "0", "0.01", "3", "4"]], pa.decimal128(10, 2)
            ),
            "li": pa.array([[1, 2], [], None, [3], [4, 5, 6], [7]], pa.list_(pa.int64())),
            "lls": pa.array(
                [[["a"], ["b", "c"]], [], [[]], [["d"]], None, [["e"]]], pa.list_(pa.list_(pa.string()))
            ),
            "st": pa.array(
                [{"x": i, "y": f"v{i}"} for i in range(ROWS)],
                pa.struct([("x", pa.int32()), ("y", pa.string())]),
            ),
            "m": pa.array(
                [[("a", 1)], [("b", 2)], [], None, [("a", 5), ("c", 6)], [("a", 7)]],
                pa.map_(pa.string(), pa.int64()),
            ),
            "ntv": pa.array(
                [[{"name": "g", "term": f"t{i % 3}", "value": float(i)}] for i in range(ROWS)], _NTV
            ),
        }
    )


_PLAIN = [("i8", "int"), ("i16", "int"), ("i32", "int"), ("i64", "long"), ("u8", "int"), ("u32", "long"),
          ("f32", "float"), ("f64", "double"), ("b", "boolean"), ("s", "string"), ("bin", "bytes")]  # fmt: skip
TYPED_CONFIG = {
    "features": [{"outputTensorInfo": {"name": n, "dtype": d, "shape": []}} for n, d in _PLAIN]
    + [
        {"outputTensorInfo": {"name": "li", "dtype": "long", "shape": [-1]}},
        {"outputTensorInfo": {"name": "lls", "dtype": "string", "shape": [-1, -1]}},
        {"inputFeatureInfo": {"columnExpr": "CAST(d32 AS STRING)"}, "outputTensorInfo": {"name": "d32", "dtype": "string", "shape": []}},
        {"inputFeatureInfo": {"columnExpr": "CAST(ts AS STRING)"}, "outputTensorInfo": {"name": "ts", "dtype": "string", "shape": []}},
        {"inputFeatureInfo": {"columnExpr": "CAST(dec AS DOUBLE)"}, "outputTensorInfo": {"name": "dec", "dtype": "double", "shape": []}},
        {"inputFeatureInfo": {"columnExpr": "st.y"}, "outputTensorInfo": {"name": "sty", "dtype": "string", "shape": []}},
        {"inputFeatureInfo": {"columnExpr": "coalesce(m['a'], -1)"}, "outputTensorInfo": {"name": "ma", "dtype": "long", "shape": []}},
        {"inputFeatureInfo": {"columnConfig": {"ntv": {"whitelist": ["*"]}}},
         "outputTensorInfo": {"name": "ntv", "dtype": "long", "shape": [], "isSparse": True}},
    ]
}  # fmt: skip


def _expected(table: pa.Table) -> dict[str, list]:
    """What every record must hold, computed from the input rows alone."""
    rows = table.to_pylist()
    got: dict[str, list] = {}
    for name, dtype in _PLAIN:
        if dtype == "string":
            got[name] = [[r[name].encode()] for r in rows]
        elif dtype == "boolean":
            got[name] = [[int(r[name])] for r in rows]
        elif dtype in ("float", "double"):  # Examples hold 32-bit floats
            got[name] = [[float(pa.scalar(r[name], pa.float32()).as_py())] for r in rows]
        else:
            got[name] = [[r[name]] for r in rows]
    got["li"] = [r["li"] or [] for r in rows]
    got["lls"] = [[v.encode() for inner in (r["lls"] or []) for v in inner] for r in rows]
    got["lls/row_lengths_1"] = [[len(inner) for inner in (r["lls"] or [])] for r in rows]
    got["d32"] = [[r["d32"].isoformat().encode()] for r in rows]
    got["ts"] = [[r["ts"].strftime("%Y-%m-%d %H:%M:%S.%f").encode()] for r in rows]
    got["dec"] = [[pa.scalar(float(r["dec"]), pa.float32()).as_py()] for r in rows]
    got["sty"] = [[r["st"]["y"].encode()] for r in rows]
    got["ma"] = [[dict(r["m"] or []).get("a", -1)] for r in rows]
    terms = sorted({f"g,t{i % 3}" for i in range(ROWS)})
    got["ntv/indices"] = [[terms.index(f"g,{r['ntv'][0]['term']}")] for r in rows]
    got["ntv/values"] = [[r["ntv"][0]["value"]] for r in rows]
    return got


@pytest.mark.parametrize("fmt", ["parquet", "orc"])
def test_every_type_of_the_format_goes_through_tensorize(tmp_path, fmt):
    table = _typed_table(fmt)
    path = tmp_path / f"typed.{fmt}"
    (pq.write_table if fmt == "parquet" else orc.write_table)(table, path)
    config = tmp_path / "config.json"
    config.write_text(json.dumps(TYPED_CONFIG))
    out = tmp_path / "out"
    assert main(["--input", str(path), "--config", str(config), "--output", str(out)]) == 0
    data = out / "trainingData" / "part-00000-of-00001.tfrecord"
    with open(data, "rb") as f:
        decoded = raw_decode(list(file_records(f, str(data)))).to_pydict()
    expected = _expected(table)
    assert sorted(decoded) == sorted(expected)
    for name, values in expected.items():
        assert decoded[name] == values, name
    metadata = json.loads((out / "metadata" / "tensor_metadata.json").read_text())
    assert metadata["data"]["trainingData"]["numRecords"] == ROWS


# -- a format of one's own ----------------------------------------------------------------------


class IntLines(InputFormat):
    """Text files of one integer per line, starting with '#ints'."""

    name, kind = "intlines", "int-lines"

    def matches(self, head: bytes) -> bool:
        return head.startswith(b"#ints\n")

    def read_schema(self, f, path, columns=None):
        return project_schema(pa.schema([("n", pa.int64())]), columns, path)

    def read_split(self, f, split, columns=None, batch_rows=8192):
        numbers = [int(line) for line in f.read().split()[1:]]
        batch = pa.RecordBatch.from_pydict({"n": numbers}).select(
            self.read_schema(f, split.path, columns).names
        )
        yield with_source(batch, split.path, 0, "row")


def test_a_new_format_takes_one_class(tmp_path, monkeypatch):
    monkeypatch.setattr(base, "_FORMATS", dict(base._FORMATS))  # registered for this test only
    register_format(IntLines)
    (tmp_path / "a.txt").write_bytes(b"#ints\n1\n2\n3\n")
    assert IntLines().plan_splits(None, "a.txt", 12, 1 << 20) == [Split("a.txt", 0, 12)]
    with TestPipeline() as p:
        batches = p | ReadTable([str(tmp_path / "a.txt"), SAMPLE_AVRO], batch_rows=500)
        counts = batches | beam.Map(lambda b: (len(b.schema), b.num_rows, b.column(0).to_pylist()[:3]))
        assert_that(
            counts, equal_to([(1, 3, [1, 2, 3]), (len(_sample_table().schema), 300, [4.0, 3.5, 4.0])])
        )


# -- Parquet output ---------------------------------------------------------------------------


def _tfrecord_rows(split_dir: pathlib.Path) -> list[dict]:
    rows = []
    for path in sorted(split_dir.rglob("*.tfrecord")):
        with open(path, "rb") as f:
            rows += raw_decode(list(file_records(f, str(path)))).to_pylist()
    return rows


def _flat(value) -> list:
    """A nested list's leaves (a scalar as a list of one), as the TFRecords hold them."""
    if not isinstance(value, list):
        return [value]
    return [leaf for item in value for leaf in _flat(item)]


def _as_example_features(row: dict, nested: set[str]) -> dict:
    """A Parquet or Avro row as the Example features of the same tensors (values flat, row
    lengths of the `nested` list-of-list columns, a sparse record's indices and values)."""
    features = {}
    for name, value in row.items():
        if isinstance(value, dict):  # a sparse tensor as Avro holds it: {indices, values}
            for part, values in value.items():
                features[f"{name}/{part}"] = [v.encode() if isinstance(v, str) else v for v in _flat(values)]
            continue
        features[name] = [v.encode() if isinstance(v, str) else v for v in _flat(value)]
        if name in nested:
            features[f"{name}/row_lengths_1"] = [len(inner) for inner in value]
    return features


#: Tensors of text and NTV columns: tokenized text (feature-list ids and hashed, several hash
#: functions), a dense NTV vector, a hashed NTV.
TEXT_CONFIG = {
    "features": [
        {"inputFeatureInfo": {"columnExpr": "concat_ws(' ', genreFeatures.term)",
                              "transformConfig": {"tokenization": {"removeStopWords": True}}},
         "outputTensorInfo": {"name": "tokens", "dtype": "long", "shape": [-1]}},
        {"inputFeatureInfo": {"columnExpr": "concat_ws(' ', genreFeatures.term)",
                              "transformConfig": {"tokenization": {},
                                                  "hashInfo": {"hashBucketSize": 50, "numHashFunctions": 2}}},
         "outputTensorInfo": {"name": "hashedTokens", "dtype": "long", "shape": [-1]}},
        {"inputFeatureInfo": {"columnConfig": {"genreFeatures": {"whitelist": ["Genre"]}}},
         "outputTensorInfo": {"name": "genreVector", "dtype": "float", "shape": [], "isSparse": False}},
        {"inputFeatureInfo": {"columnConfig": {"movieLatentFactorFeatures": {"whitelist": ["*"]}},
                              "transformConfig": {"hashInfo": {"hashBucketSize": 100, "combiner": "AVG"}}},
         "outputTensorInfo": {"name": "hashedFactors", "dtype": "float", "shape": [], "isSparse": True}},
        {"outputTensorInfo": {"name": "userId", "dtype": "long", "shape": []}},
    ]
}  # fmt: skip


def _columnar_rows(path: pathlib.Path, output_format: str) -> tuple[list[dict], set[str]]:
    """The rows of a Parquet or Avro output file, and its list-of-list columns."""
    if output_format == "parquet":
        table = pq.read_table(path)
        nested = {
            f.name for f in table.schema if pa.types.is_list(f.type) and pa.types.is_list(f.type.value_type)
        }
        return table.to_pylist(), nested
    import fastavro

    with open(path, "rb") as f:
        reader = fastavro.reader(f)
        fields = reader.writer_schema["fields"]
        rows = list(reader)

    def array_items(avro_type):
        """The item type of an array type (or of the array in a union with null), else None."""
        for t in avro_type if isinstance(avro_type, list) else [avro_type]:
            if isinstance(t, dict) and t.get("type") == "array":
                return t["items"]
        return None

    def is_nested(avro_type) -> bool:
        items = array_items(avro_type)
        return items is not None and array_items(items) is not None

    return rows, {f["name"] for f in fields if is_nested(f["type"])}


@pytest.mark.parametrize("output_format", ["parquet", "avro"])
@pytest.mark.parametrize(
    "config", [SAMPLE_CONFIG, AVRO2TF_CONFIG, "typed", "text"], ids=["sample", "avro2tf", "typed", "text"]
)
def test_columnar_outputs_hold_the_tensors_of_the_tfrecord_output(tmp_path, config, output_format):
    """Every tensor kind (scalars, fixed and ragged lists, lists of lists, sparse and dense NTV,
    hashed NTV, tokenized text, typed columns) written as Parquet and as Avro holds, row by row,
    the values of the TFRecord output of the same run."""
    if config == "typed":
        source = tmp_path / "typed.parquet"
        pq.write_table(_typed_table("parquet"), source)
        config = tmp_path / "config.json"
        config.write_text(json.dumps(TYPED_CONFIG))
    else:
        source = SAMPLE_AVRO
        if config == "text":
            config = tmp_path / "config.json"
            config.write_text(json.dumps(TEXT_CONFIG))
    args = ["--input", str(source), "--config", str(config), "--num_shards", "2"]
    assert main([*args, "--output", str(tmp_path / "tf")]) == 0
    assert main([*args, "--output", str(tmp_path / "col"), "--output_format", output_format]) == 0
    files = sorted(p.name for p in (tmp_path / "col" / "trainingData").iterdir())
    suffix = {"parquet": ".parquet", "avro": ".avro"}[output_format]
    assert files == ["_SUCCESS", f"part-00000-of-00002{suffix}", f"part-00001-of-00002{suffix}"]
    columnar_rows = []
    for name in files[1:]:
        rows, nested = _columnar_rows(tmp_path / "col" / "trainingData" / name, output_format)
        columnar_rows += [_as_example_features(row, nested) for row in rows]
    example_rows = _tfrecord_rows(tmp_path / "tf" / "trainingData")
    assert len(columnar_rows) == len(example_rows) > 0
    # The same records in the same files and order: compare them pairwise.
    for columnar_row, example_row in zip(columnar_rows, example_rows):
        example_row = {k: v for k, v in example_row.items() if v is not None}
        assert columnar_row == example_row
    metadata = {
        f: json.loads((tmp_path / f / "metadata" / "tensor_metadata.json").read_text()) for f in ("tf", "col")
    }
    assert metadata["col"]["data"]["trainingData"]["format"] == output_format
    assert metadata["col"]["data"]["trainingData"]["files"] == files[1:]
    assert metadata["col"]["features"] == metadata["tf"]["features"]
    assert (tmp_path / "col" / "_SUCCESS").exists()
    if output_format == "parquet":
        assert metadata["col"]["compression"] == "SNAPPY"


def test_parquet_output_partitions_and_save_modes(tmp_path, capsys):
    out = tmp_path / "out"
    args = [
        "--input",
        SAMPLE_AVRO,
        "--config",
        SAMPLE_CONFIG,
        "--output",
        str(out),
        "--output_format",
        "parquet",
    ]
    assert main([*args, "--partition_by", "numGenres", "--compression", "zstd"]) == 0
    folders = sorted(p.name for p in (out / "trainingData").iterdir() if p.is_dir())
    assert folders == [f"numGenres={n}" for n in range(1, 7)]
    first = pq.ParquetFile(out / "trainingData" / "numGenres=3" / "part-00000-of-00001.parquet")
    assert first.metadata.row_group(0).column(0).compression == "ZSTD"
    assert "numGenres" not in first.schema_arrow.names
    table = pq.read_table(out / "trainingData")  # pyarrow reads the Hive folders back
    assert table.num_rows == 300
    assert sorted(table.column("numGenres").to_pylist()) == sorted(
        len(r["genreFeatures"]) for r in _sample_table().to_pylist()
    )
    capsys.readouterr()
    assert main([*args, "--partition_by", "numGenres", "--compression", "zlib"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: --compression 'zlib' does not apply to --output_format 'parquet'; use one of snappy, none, gzip, zstd"
    )
    assert main([*args, "--partition_by", "numGenres", "--save_mode", "append"]) == 0
    assert sorted(p.name for p in (out / "trainingData" / "numGenres=1").iterdir()) == [
        "part-00000-of-00001-1.parquet",
        "part-00000-of-00001.parquet",
    ]
    assert pq.read_table(out / "trainingData").num_rows == 600


def test_a_tfrecord_output_is_tensorized_again_with_the_same_values(tmp_path):
    """TFRecord as an input format: our own output, read back (schema inferred per file) through
    an identity config, gives the same records."""
    first = tmp_path / "first"
    assert main(["--input", SAMPLE_AVRO, "--config", SAMPLE_CONFIG, "--output", str(first)]) == 0
    metadata = json.loads((first / "metadata" / "tensor_metadata.json").read_text())
    dense = [
        t for t in metadata["features"] + metadata["labels"] if not t["isSparse"] and len(t["shape"]) <= 1
    ]
    config = tmp_path / "identity.json"
    config.write_text(json.dumps({"features": [
        {"outputTensorInfo": {"name": t["name"], "dtype": t["dtype"], "shape": t["shape"]}} for t in dense
    ]}))  # fmt: skip
    second = tmp_path / "second"
    args = [
        "--input",
        str(first / "trainingData" / "*.tfrecord"),
        "--config",
        str(config),
        "--output",
        str(second),
    ]
    assert main([*args, "--input_format", "tfrecord"]) == 0
    before = _tfrecord_rows(first / "trainingData")
    after = _tfrecord_rows(second / "trainingData")
    names = [t["name"] for t in dense]
    assert len(after) == len(before) == 300
    assert [{n: r[n] for n in names} for r in after] == [{n: r[n] for n in names} for r in before]


@pytest.mark.parametrize("output_format", ["parquet", "avro"])
def test_a_dense_ntv_vector_is_one_list_per_row_in_columnar_outputs(tmp_path, capsys, output_format):
    """An NTV tensor with isSparse false and config shape [] becomes a vector of the feature
    list's size + 1 per row: Parquet / Avro outputs used to write its values flat (6,000
    one-value records for 300 rows, exit 0) or crash beside other tensors."""
    import json

    import fastavro
    import pyarrow.parquet as pq

    from beam_tensorize.sample import SAMPLE_AVRO
    from pipelines.tensorize import main

    config = tmp_path / "config.json"
    vector = {"inputFeatureInfo": {"columnConfig": {"genreFeatures": {"whitelist": ["Genre"]}}},
              "outputTensorInfo": {"name": "genreVector", "dtype": "float", "shape": [], "isSparse": False}}  # fmt: skip
    user = {"outputTensorInfo": {"name": "userId", "dtype": "long", "shape": []}}
    config.write_text(json.dumps({"features": [vector, user]}))
    outs = {}
    for fmt in ("tfrecord", output_format):
        outs[fmt] = tmp_path / fmt
        args = ["--input", SAMPLE_AVRO, "--config", str(config), "--output", str(outs[fmt]), "--quiet"]
        assert main([*args, "--output_format", fmt]) == 0, capsys.readouterr().err
    metadata = json.loads((outs[output_format] / "metadata" / "tensor_metadata.json").read_text())
    size = next(t for t in metadata["features"] if t["name"] == "genreVector")["shape"][-1]
    assert size == 20  # 19 genres and the unknown id
    (path,) = (outs[output_format] / "trainingData").glob("part-*")
    if output_format == "parquet":
        rows = pq.read_table(path).to_pylist()
    else:
        with open(path, "rb") as f:
            rows = list(fastavro.reader(f))
    assert len(rows) == 300 and all(len(r["genreVector"]) == size for r in rows)
    from beam_tensorize.tf import make_dataset

    expected = {}
    for batch in make_dataset(str(outs["tfrecord"]), batch_size=300, labels=False):
        for u, v in zip(batch["userId"].numpy().tolist(), batch["genreVector"].numpy().tolist()):
            expected.setdefault(u, []).append([round(x, 6) for x in v])
    got = {}
    for r in rows:
        got.setdefault(r["userId"], []).append([round(x, 6) for x in r["genreVector"]])
    assert {u: sorted(v) for u, v in got.items()} == {u: sorted(v) for u, v in expected.items()}
