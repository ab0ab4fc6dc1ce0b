"""`metadata/schema.pbtxt`: TFX's tools read our outputs with it, unchanged.

tfx-bsl's `TFExampleRecord(files, schema=...)` must give the tensors `make_dataset` gives
(through `TensorFlowDataset` and through `BeamSource` + its `TensorAdapter`), on the bundled
sample, Avro2TF's MovieLens config and Avro2TF's text config (tokens, several hash functions,
sparse and dense name-term-value vectors, extra columns); TF Transform analyses the output with
the schema as it is.
"""

from __future__ import annotations

import glob
import os

import apache_beam as beam
import numpy as np
import pytest
import tensorflow as tf
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that
from google.protobuf import text_format
from tensorflow_metadata.proto.v0 import schema_pb2
from tfx_bsl.public import tfxio

from beam_tensorize.kernels.tfmd_schema import tfmd_schema
from beam_tensorize.tf import load_metadata, make_dataset
from pipelines.tensorize import main
from tests.compat.avro2tf.helpers import (
    AVRO2TF_CONFIG_PATH_VALUE_MOVIELENS,
    AVRO2TF_CONFIG_PATH_VALUE_SAMPLE,
    EXTRA_COLUMNS_TO_KEEP_VALUE,
    INPUT_MOVIELENS_FILE_PATHS,
    INPUT_TEXT_FILE_PATHS,
    resource,
)

pytestmark = pytest.mark.pipeline

RUNS = {
    "sample": [],
    "movielens": [
        "--config", resource(AVRO2TF_CONFIG_PATH_VALUE_MOVIELENS),
        "--input", resource(INPUT_MOVIELENS_FILE_PATHS),
    ],
    "text": [
        "--config", resource(AVRO2TF_CONFIG_PATH_VALUE_SAMPLE),
        "--input", resource(INPUT_TEXT_FILE_PATHS),
        "--extra-columns-to-keep", EXTRA_COLUMNS_TO_KEEP_VALUE,
    ],
}  # fmt: skip


@pytest.fixture(scope="module", params=sorted(RUNS))
def output(request, tmp_path_factory):
    out = str(tmp_path_factory.mktemp(request.param) / "out")
    assert main([*RUNS[request.param], "--output", out, "--quiet", "--report", "none"]) == 0
    return out


def _schema(out: str) -> schema_pb2.Schema:
    with open(os.path.join(out, "metadata", "schema.pbtxt")) as f:
        return text_format.Parse(f.read(), schema_pb2.Schema())


def _files(out: str) -> list[str]:
    return sorted(glob.glob(os.path.join(out, "trainingData", "part-*")))


def _ours(out: str) -> dict:
    return next(iter(make_dataset(out, batch_size=10_000, labels=False)))


def _same(name: str, ours, theirs) -> None:
    assert type(theirs) is type(ours), name
    if isinstance(ours, tf.SparseTensor):
        np.testing.assert_array_equal(theirs.indices.numpy(), ours.indices.numpy(), err_msg=name)
        np.testing.assert_array_equal(theirs.values.numpy(), ours.values.numpy(), err_msg=name)
        np.testing.assert_array_equal(theirs.dense_shape.numpy(), ours.dense_shape.numpy(), err_msg=name)
    elif isinstance(ours, tf.RaggedTensor):
        assert theirs.row_splits.dtype == ours.row_splits.dtype, name
        assert theirs.to_list() == ours.to_list(), name
    else:
        assert (theirs.dtype, theirs.shape) == (ours.dtype, ours.shape), name
        np.testing.assert_array_equal(theirs.numpy(), ours.numpy(), err_msg=name)


def test_schema_file_is_the_metadata_documents_schema(output):
    # written with the metadata, from it alone
    assert _schema(output) == tfmd_schema(load_metadata(output))


def test_tfx_bsl_dataset_equals_make_dataset(output):
    source = tfxio.TFExampleRecord(file_pattern=_files(output), schema=_schema(output))
    options = tfxio.TensorFlowDatasetOptions(batch_size=10_000, shuffle=False, num_epochs=1)
    theirs = next(iter(source.TensorFlowDataset(options)))
    ours = _ours(output)
    assert sorted(theirs) == sorted(ours)
    for name in ours:
        _same(name, ours[name], theirs[name])


def test_tfx_bsl_beam_source_equals_make_dataset(output):
    source = tfxio.TFExampleRecord(file_pattern=_files(output), schema=_schema(output))
    adapter_config = source.TensorAdapterConfig()
    ours = {name: value for name, value in _ours(output).items()}

    def check(batches):
        [batch] = batches
        theirs = tfxio.TensorAdapter(adapter_config).ToBatchTensors(batch)
        assert sorted(theirs) == sorted(ours)
        for name in ours:
            _same(name, ours[name], theirs[name])

    with TestPipeline() as p:
        batches = p | source.BeamSource(batch_size=10_000)
        assert_that(batches, check)


def test_schema_domains_and_shapes(tmp_path):
    out = str(tmp_path / "out")
    assert main(["--output", out, "--quiet", "--report", "json"]) == 0
    features = {f.name: f for f in _schema(out).feature}
    # a feature-list id: the list's 19 entries and the unknown id
    assert (features["genreIds"].int_domain.min, features["genreIds"].int_domain.max) == (0, 19)
    assert features["genreIds"].int_domain.is_categorical
    # a hash bucket: 1,000 buckets and the id of an empty input
    assert (features["movieBucket"].int_domain.min, features["movieBucket"].int_domain.max) == (0, 1000)
    # a sparse vector's indices
    assert features["genreVector/indices"].int_domain.max == 19
    assert features["genreVector/values"].type == schema_pb2.FLOAT
    # a fixed shape, in every record
    assert [d.size for d in features["movieLatentFactors"].shape.dim] == [30]
    assert features["movieLatentFactors"].presence.min_fraction == 1.0
    # a plain integer has no domain (its largest value is Avro2TF's numUniqueValues, not a bound)
    assert not features["userId"].HasField("int_domain")
    assert features["genres"].type == schema_pb2.BYTES
    # a string tensor with few values (every one counted by the train report): its domain, as
    # TFDV's infer_schema gives it
    with open(os.path.join(out, "featureList", "genreIds")) as f:
        terms = f.read().splitlines()
    assert list(features["genres"].string_domain.value) == sorted(t.lower() for t in terms)
    group = _schema(out).tensor_representation_group[""].tensor_representation
    assert group["genreVector"].WhichOneof("kind") == "sparse_tensor"
    assert group["genres"].WhichOneof("kind") == "ragged_tensor"
    assert group["movieId"].WhichOneof("kind") == "dense_tensor"


def test_tf_transform_analyses_the_output_with_the_schema(tmp_path):
    import tensorflow_transform as tft
    import tensorflow_transform.beam as tft_beam

    out = str(tmp_path / "out")
    assert main(["--output", out, "--quiet", "--report", "none"]) == 0
    source = tfxio.TFExampleRecord(file_pattern=_files(out), schema=_schema(out))
    ours = _ours(out)

    def preprocessing_fn(inputs):
        return {
            "numGenres": inputs["numGenres"],
            "genreCount": tf.reshape(tf.sparse.reduce_sum(inputs["genreVector"], axis=1), [-1]),
            "genreVocabIds": tft.compute_and_apply_vocabulary(inputs["genres"]),
            "movieIdZ": tft.scale_to_z_score(tf.cast(inputs["movieId"], tf.float32)),
        }

    def check(outputs):
        import pyarrow as pa

        table = pa.Table.from_batches([batch for batch, _ in outputs])
        assert table.num_rows == 300

        def values(name):  # TF Transform writes every tensor as a list column
            return np.asarray(table[name].combine_chunks().flatten())

        # a sparse tensor of ones sums to the record's number of genres
        np.testing.assert_array_equal(values("genreCount"), values("numGenres").astype(np.float32))
        # TF Transform's vocabulary orders by frequency: comedy (123 times), then drama (121)
        ids = values("genreVocabIds")
        assert (np.count_nonzero(ids == 0), np.count_nonzero(ids == 1), ids.size) == (123, 121, 785)
        assert abs(float(np.mean(values("movieIdZ")))) < 1e-5

    assert int(tf.reduce_sum(ours["numGenres"])) == 785
    with TestPipeline() as p, tft_beam.Context(temp_dir=str(tmp_path / "tft")):
        raw = p | source.BeamSource()
        (transformed, _), _ = (raw, source.TensorAdapterConfig()) | tft_beam.AnalyzeAndTransformDataset(
            preprocessing_fn, output_record_batches=True
        )
        assert_that(transformed | beam.combiners.ToList(), lambda lists: check(lists[0]))


def test_a_parquet_output_has_no_schema_and_an_earlier_ones_goes(tmp_path):
    out = str(tmp_path / "out")
    assert main(["--output", out, "--quiet", "--report", "none"]) == 0
    assert os.path.exists(os.path.join(out, "metadata", "schema.pbtxt"))
    args = [
        "--output",
        out,
        "--quiet",
        "--report",
        "none",
        "--output_format",
        "parquet",
        "--save_mode",
        "overwrite",
    ]
    assert main(args) == 0
    assert load_metadata(out)["data"]["trainingData"]["format"] == "parquet"
    assert sorted(os.listdir(os.path.join(out, "metadata"))) == ["featureListCounts", "tensor_metadata.json"]
