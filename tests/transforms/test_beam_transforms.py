"""Each Beam transform with TestPipeline + assert_that (and the files it writes)."""

from __future__ import annotations

import gzip
import os

import apache_beam as beam
import fastavro
import pyarrow as pa
import pytest
from apache_beam.metrics.metric import MetricsFilter
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from beam_tensorize import metrics
from beam_tensorize.config import load_config, parse_config
from beam_tensorize.io import ReadAvro, WriteTFRecord
from beam_tensorize.kernels.output.dead_letters import off_shape_of
from beam_tensorize.kernels.provenance import with_source
from beam_tensorize.kernels.tfrecord.framing import iter_tfrecords
from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
from beam_tensorize.transforms import EncodeExamples, ExtractFeatures, Tensorize

pytestmark = pytest.mark.pipeline


@pytest.fixture(scope="module")
def sample_records() -> list[dict]:
    with open(SAMPLE_AVRO, "rb") as f:
        return list(fastavro.reader(f))


def _rows(batches):
    return batches | beam.FlatMap(lambda b: b.to_pylist())


def test_read_avro_reads_every_row_once_with_small_splits(sample_records):
    with TestPipeline() as p:
        batches = p | ReadAvro(SAMPLE_AVRO, columns=["userId", "MOVIEID"], split_bytes=5000, batch_rows=40)
        rows = _rows(batches) | beam.Map(lambda r: (r["userId"], r["movieId"]))
        assert_that(rows, equal_to([(r["userId"], r["movieId"]) for r in sample_records]))
        sizes = batches | "Sizes" >> beam.Map(lambda b: (b.schema.names, b.num_rows <= 40 + 20))
        assert_that(
            sizes,
            lambda got: len(got) > 5 and all(s == (["userId", "movieId"], True) for s in got),
            label="Sizes",
        )


def test_read_avro_counts_rows_in_metrics():
    p = TestPipeline()
    _ = p | ReadAvro([SAMPLE_AVRO, SAMPLE_AVRO], columns=["userId"])
    result = p.run()
    result.wait_until_finish()
    counters = result.metrics().query(MetricsFilter().with_name(metrics.ROWS_READ))["counters"]
    assert sum(c.committed for c in counters) == 600


def test_read_avro_unmatched_pattern_fails(tmp_path):
    with pytest.raises(Exception, match=r"no Avro file matches the input pattern '.*nothing-\*.avro'"):
        with TestPipeline() as p:
            _ = p | ReadAvro(str(tmp_path / "nothing-*.avro"))


def test_read_avro_not_avro_names_file(tmp_path):
    bad = tmp_path / "bad.avro"
    bad.write_bytes(b"this is not avro at all")
    with pytest.raises(Exception, match=str(bad)):
        with TestPipeline() as p:
            _ = p | ReadAvro(str(bad))


def test_read_avro_missing_column_names_file_and_columns():
    with pytest.raises(Exception, match="reads column 'nope', which this file does not have"):
        with TestPipeline() as p:
            _ = p | ReadAvro(SAMPLE_AVRO, columns=["nope"])


def test_extract_and_encode_examples(sample_records):
    import tensorflow as tf

    config = load_config(SAMPLE_CONFIG)
    plain = [t for t in config.tensors if t.name in ("movieId", "genres", "numGenres", "response")]
    with TestPipeline() as p:
        out = p | ReadAvro(SAMPLE_AVRO) | ExtractFeatures(config, plain) | EncodeExamples(config, plain)
        parsed = (
            out.examples
            | beam.FlatMap(lambda b: b.column("serialized").to_pylist())
            | beam.Map(lambda s: tf.train.Example.FromString(s))
            | beam.Map(
                lambda e: (
                    e.features.feature["movieId"].int64_list.value[0],
                    tuple(e.features.feature["genres"].bytes_list.value),
                    e.features.feature["numGenres"].int64_list.value[0],
                    round(e.features.feature["response"].float_list.value[0], 3),
                )
            )
        )
        expected = [
            (
                r["movieId"],
                tuple(g["term"].lower().encode() for g in r["genreFeatures"]),
                len(r["genreFeatures"]),
                round(r["response"], 3),
            )
            for r in sample_records
        ]
        assert_that(parsed, equal_to(expected))
        assert_that(out.dead_letters, equal_to([]), label="NoDeadLetters")


def test_encode_examples_routes_bad_rows_to_dead_letters():
    config = parse_config({"features": [{"outputTensorInfo": {"name": "x", "dtype": "long", "shape": [2]}}]})
    batch = with_source(pa.RecordBatch.from_pydict({"x": [[1, 2], [3], None]}), "/in/f.avro", 99)
    with TestPipeline() as p:
        out = p | beam.Create([batch]) | EncodeExamples(config, check_shapes=True)
        assert_that(out.examples | beam.Map(lambda b: b.num_rows), equal_to([1]))
        assert_that(
            out.dead_letters,
            equal_to(
                [
                    {
                        "source": "/in/f.avro: record 1 of the rows starting at byte 99",
                        "reason": "tensor 'x': expected 2 values at dimension 0, got 1",
                        "tensors": {"x": [3]},
                    },
                    {
                        "source": "/in/f.avro: record 2 of the rows starting at byte 99",
                        "reason": "tensor 'x': expected 2 values at dimension 0, got 0",
                        "tensors": {"x": None},
                    },
                ]
            ),
            label="DeadLetters",
        )


def test_encode_examples_keeps_rows_off_their_shape_by_default():
    """Avro2TF never checks shapes: the rows are written as they are, and counted."""
    import tensorflow as tf

    config = parse_config({"features": [{"outputTensorInfo": {"name": "x", "dtype": "long", "shape": [2]}}]})
    batch = with_source(pa.RecordBatch.from_pydict({"x": [[1, 2], [3], None]}), "/in/f.avro", 99)
    with TestPipeline() as p:
        out = p | beam.Create([batch]) | EncodeExamples(config)
        parsed = out.examples | beam.FlatMap(
            lambda b: [list(tf.train.Example.FromString(r).features.feature["x"].int64_list.value)
                       for r in b.column("serialized").to_pylist()]
        )  # fmt: skip
        assert_that(parsed, equal_to([[1, 2], [3], []]))
        assert_that(out.examples | beam.Map(off_shape_of), equal_to([{"x": 2}]), label="OffShape")
        assert_that(out.dead_letters, equal_to([]), label="NoDeadLetters")


def _serialized_batches(n_batches=4, rows=25):
    return [
        with_source(
            pa.RecordBatch.from_pydict({"serialized": [f"rec-{b}-{i}".encode() for i in range(rows)]}),
            f"/in/file-{b % 2}.avro",
            b * 1000,
        )
        for b in range(n_batches)
    ]


def _write(directory, batches, **kwargs):
    kwargs.setdefault("record_type", "ByteArray")
    with TestPipeline() as p:
        info = p | beam.Create(batches) | WriteTFRecord(str(directory), **kwargs)
        assert_that(info | beam.Map(lambda i: i["numRecords"]), equal_to([sum(b.num_rows for b in batches)]))


def _records(path):
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rb") as f:
        return list(iter_tfrecords(f, str(path)))


def test_write_tfrecord_layout_determinism_and_compression(tmp_path):
    batches = _serialized_batches()
    _write(tmp_path / "a", batches, num_shards=3, compression="gzip")
    _write(tmp_path / "b", list(reversed(batches)), num_shards=3, compression="gzip")
    names = sorted(os.listdir(tmp_path / "a"))
    assert names == ["_SUCCESS"] + [f"part-0000{i}-of-00003.tfrecord.gz" for i in range(3)]
    for name in names:  # input order does not matter: same bytes
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    everything = [r for name in names[1:] for r in _records(tmp_path / "a" / name)]
    assert sorted(everything) == sorted(r for b in batches for r in b.column("serialized").to_pylist())
    sizes = [len(_records(tmp_path / "a" / n)) for n in names[1:]]
    assert max(sizes) - min(sizes) <= 4  # round robin keeps shards balanced


def test_write_tfrecord_one_shard_keeps_source_order(tmp_path):
    batches = _serialized_batches()
    _write(tmp_path, batches, num_shards=1)
    expected_order = sorted(
        batches,
        key=lambda b: (
            b.schema.metadata[b"beam_tensorize.source"],
            int(b.schema.metadata[b"beam_tensorize.offset"]),
        ),
    )
    expected = [r for b in expected_order for r in b.column("serialized").to_pylist()]
    assert _records(tmp_path / "part-00000-of-00001.tfrecord") == expected


def test_write_tfrecord_empty_input_writes_every_shard(tmp_path):
    _write(tmp_path, [], num_shards=2)
    assert sorted(os.listdir(tmp_path)) == [
        "_SUCCESS",
        "part-00000-of-00002.tfrecord",
        "part-00001-of-00002.tfrecord",
    ]
    assert _records(tmp_path / "part-00001-of-00002.tfrecord") == []


def test_write_tfrecord_save_modes(tmp_path):
    _write(tmp_path, _serialized_batches(1), num_shards=2)
    with pytest.raises(Exception, match="already holds 2 file"):
        _write(tmp_path, _serialized_batches(2), num_shards=1)
    assert (
        len(_records(tmp_path / "part-00000-of-00002.tfrecord"))
        + len(_records(tmp_path / "part-00001-of-00002.tfrecord"))
        == 25
    )
    _write(tmp_path, _serialized_batches(2), num_shards=1, save_mode="overwrite")
    assert sorted(os.listdir(tmp_path)) == ["_SUCCESS", "part-00000-of-00001.tfrecord"]
    assert len(_records(tmp_path / "part-00000-of-00001.tfrecord")) == 50


def test_write_tfrecord_failed_gate_leaves_old_output(tmp_path):
    _write(tmp_path, _serialized_batches(1), num_shards=1)
    before = (tmp_path / "part-00000-of-00001.tfrecord").read_bytes()

    def fail(_):
        raise RuntimeError("simulated failure before commit")

    with pytest.raises(Exception, match="simulated failure before commit"):
        with TestPipeline() as p:
            gate = p | "Gate" >> beam.Create([None]) | beam.Map(fail)
            _ = (
                p
                | beam.Create(_serialized_batches(3))
                | WriteTFRecord(
                    str(tmp_path), 1, save_mode="overwrite", record_type="ByteArray", commit_gate=gate
                )
            )
    assert sorted(n for n in os.listdir(tmp_path) if not n.startswith("_temporary")) == [
        "_SUCCESS",
        "part-00000-of-00001.tfrecord",
    ]
    assert (tmp_path / "part-00000-of-00001.tfrecord").read_bytes() == before


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"num_shards": 0}, "num_shards must be a positive integer or None, got 0"),
        ({"max_records_per_file": -1}, "max_records_per_file must be a positive integer or None, got -1"),
        ({"num_shards": 2, "max_records_per_file": 5}, "give num_shards or max_records_per_file, not both"),
        ({"compression": "lz4"}, "compression 'lz4' is not one of none, gzip"),
        ({"save_mode": "replace"}, "save_mode 'replace' is not one of error, overwrite"),
    ],
)
def test_write_tfrecord_validates_arguments(kwargs, message):
    with pytest.raises(ValueError, match=message):
        WriteTFRecord("/tmp/x", **kwargs)


def test_tensorize_fails_past_bad_ratio_and_commits_nothing(tmp_path):
    config = parse_config({"features": [{"outputTensorInfo": {"name": "x", "dtype": "long", "shape": []}}]})
    batch = with_source(pa.RecordBatch.from_pydict({"x": [1, None, 3, 4]}), "/in/f.avro", 0)
    with pytest.raises(
        Exception, match=r"1 of 4 records could not be converted \(25.00% > the allowed 10.00%\)"
    ):
        with TestPipeline() as p:
            _ = p | beam.Create([batch]) | Tensorize(config, str(tmp_path), max_bad_records_ratio=0.1)
    assert not (tmp_path / "_SUCCESS").exists()
    assert not (tmp_path / "trainingData" / "part-00000-of-00001.tfrecord").exists()
    assert not (tmp_path / "deadLetters" / "trainingData" / "part-00000-of-00001.jsonl").exists()
    dead = (tmp_path / "deadLetters" / "trainingData" / "_failed" / "part-00000-of-00001.jsonl").read_text()
    assert (
        '"reason": "tensor \'x\': null value"' in dead and "record 1 of the rows starting at byte 0" in dead
    )


def test_tensorize_within_bad_ratio_commits(tmp_path):
    config = parse_config({"features": [{"outputTensorInfo": {"name": "x", "dtype": "long", "shape": []}}]})
    batch = with_source(pa.RecordBatch.from_pydict({"x": [1, None, 3, 4]}), "/in/f.avro", 0)
    with TestPipeline() as p:
        out = p | beam.Create([batch]) | Tensorize(config, str(tmp_path), max_bad_records_ratio=0.5)
        assert_that(out.result | beam.Map(lambda r: (r["numRecords"], r["badRecords"])), equal_to([(3, 1)]))
    assert (tmp_path / "_SUCCESS").exists()
    assert len(_records(tmp_path / "trainingData" / "part-00000-of-00001.tfrecord")) == 3


def test_feature_list_groups_and_merge_checks():
    from beam_tensorize.job.feature_lists import feature_list_groups, merge_feature_lists
    from beam_tensorize.kernels.features.vocab import FeatureList

    config = load_config(os.path.join(os.path.dirname(SAMPLE_AVRO), "avro2tf_config.json"))
    keys = feature_list_groups(config, [["genreFeatures_term", "genreFeatures"]])
    assert keys["genreFeatures"] == keys["genreFeatures_term"] == "genreFeatures"
    assert "movieId_hashed" not in keys and keys["userId"] == "userId"
    with pytest.raises(ValueError, match="tensor 'movieId_hashed' is hashed"):
        feature_list_groups(config, [["genreFeatures", "movieId_hashed"]])
    with pytest.raises(ValueError, match="in two groups"):
        feature_list_groups(config, [["genreFeatures", "userId"], ["userId", "genreFeatures_term"]])
    external = {"genreFeatures_term": FeatureList(("Drama",))}
    merged = merge_feature_lists({"genreFeatures_term": FeatureList(("Comedy",), (3,))}, external, config)
    assert merged["genreFeatures_term"] == FeatureList(("Drama",), None, False)
    with pytest.raises(ValueError, match="has an external feature list and is in a group"):
        merge_feature_lists({}, external, config, [["genreFeatures_term", "genreFeatures"]])
    with pytest.raises(
        ValueError, match="external feature list for tensor 'movieId_hashed', which uses no feature list"
    ):
        merge_feature_lists({}, {"movieId_hashed": FeatureList(("1",))}, config)


def test_public_transforms_describe_themselves_in_display_data():
    from apache_beam.transforms.display import DisplayData

    from beam_tensorize.io import ReadParquet, ReadTable, WriteParquet
    from beam_tensorize.transforms import BuildFeatureLists, HashFeatures

    config = load_config(SAMPLE_CONFIG)

    def shown(transform) -> dict:
        return {item.key: item.value for item in DisplayData.create_from(transform).items}

    assert shown(ReadTable(["a.avro", "b.parquet"], columns=["userId"])) == {
        "file_patterns": "a.avro, b.parquet",
        "format": "auto",
        "columns": "userId",
        "batch_rows": 8192,
        "split_bytes": 64 << 20,
    }
    assert shown(ReadParquet("x.parquet"))["format"] == "parquet"
    assert shown(WriteParquet("out", num_shards=3, partition_by=["day"])) == {
        "directory": "out",
        "file_format": "parquet",
        "num_shards": 3,
        "max_records_per_file": "no limit",
        "compression": "snappy",
        "save_mode": "error",
        "partition_by": "day",
    }
    assert shown(WriteTFRecord("out", max_records_per_file=10))["num_shards"] == "one per input split"
    assert shown(WriteTFRecord("out"))["compression"] == "none"
    tensorize = shown(Tensorize(config, "out", output_format="parquet"))
    assert tensorize["output_format"] == "parquet" and tensorize["tensors"].startswith("userId, movieId")
    assert shown(ExtractFeatures(config, extra_columns=["weight"]))["extra_columns"] == "weight"
    assert shown(HashFeatures(config)) == {"hashed": "movieBucket"}
    lists = "genreIds, genreVector, movieId, movieLatentFactors, numGenres, response, userId"
    assert shown(BuildFeatureLists(config)) == {"feature_lists": lists}
    assert shown(EncodeExamples(config))["output_format"] == "tfrecord"


def test_the_composed_transforms_give_tensorizes_output_file_for_file(tmp_path):
    """README's chain ReadAvro -> ExtractFeatures -> HashFeatures -> BuildFeatureLists ->
    ApplyFeatureLists -> EncodeExamples -> WriteTFRecord(...).without_commit() -> CommitOutput
    used to end without a top-level _SUCCESS (make_dataset refused it) and with metadata lacking
    `transform`, `format` and `numUniqueValues`; now it is Tensorize's output, byte for byte."""
    from beam_tensorize import TensorizeSpec
    from beam_tensorize.tf import make_dataset
    from beam_tensorize.transforms import ApplyFeatureLists, BuildFeatureLists, CommitOutput, HashFeatures

    config = load_config(SAMPLE_CONFIG)
    whole, composed = tmp_path / "whole", tmp_path / "composed"
    spec = TensorizeSpec(config, str(whole), inputs=[SAMPLE_AVRO])
    with beam.Pipeline() as p:
        _ = p | Tensorize(spec)
    spec = TensorizeSpec(config, str(composed))
    with beam.Pipeline() as p:
        read = p | ReadAvro(SAMPLE_AVRO, columns=spec.input_columns)
        hashed = read | ExtractFeatures(config) | HashFeatures(config)
        lists = hashed | BuildFeatureLists(config)
        encoded = hashed | ApplyFeatureLists(config, lists) | EncodeExamples(config)
        sink = WriteTFRecord(spec.split_dir, record_type="ByteArray").without_commit()
        pending = encoded.examples | sink
        _ = pending | CommitOutput(
            spec, feature_lists=lists, dead_letters=encoded.dead_letters, examples=encoded.examples,
            input_batches=read, tensor_batches=hashed,
        )  # fmt: skip

    def tree(root):
        return {
            os.path.relpath(os.path.join(d, f), root): open(os.path.join(d, f), "rb").read()
            for d, _, files in os.walk(root)
            for f in files
        }

    assert tree(composed) == tree(whole)
    assert "_SUCCESS" in tree(composed) and "metadata/tensor_metadata.json" in tree(composed)
    assert (
        sum(int(b["userId"].shape[0]) for b in make_dataset(str(composed), batch_size=100, labels=False))
        == 300
    )


def test_record_batches_cross_steps_with_their_coder_and_keep_their_source_tags():
    from beam_tensorize.io import RecordBatchCoder
    from beam_tensorize.transforms import HashFeatures

    config = load_config(SAMPLE_CONFIG)
    pipeline = beam.Pipeline()
    read = pipeline | ReadAvro(SAMPLE_AVRO)
    hashed = read | ExtractFeatures(config) | HashFeatures(config)
    encoded = hashed | EncodeExamples(config)
    for pcoll in (read, hashed, encoded.examples):
        assert pcoll.element_type is pa.RecordBatch
    # Ours, or TFDV's equivalent IPC coder when tensorflow_data_validation was imported later
    # (each registers one for pa.RecordBatch): not the pickling fallback either way.
    coder = beam.coders.registry.get_coder(pa.RecordBatch)
    assert coder.to_type_hint() is pa.RecordBatch
    assert isinstance(coder, RecordBatchCoder) or type(coder).__module__.startswith(
        "tensorflow_data_validation"
    )
    batch = with_source(pa.RecordBatch.from_pydict({"x": [[1.5], []]}), "/in/f.avro", 40)
    with TestPipeline() as p:
        moved = (
            p
            | beam.Create([batch]).with_output_types(pa.RecordBatch)
            | beam.Reshuffle()  # a stage boundary: the batch is encoded and decoded
            | beam.Map(lambda b: (b.to_pydict(), b.schema.metadata))
        )
        assert_that(moved, equal_to([({"x": [[1.5], []]}, batch.schema.metadata)]))
