"""Ported from linkedin/Avro2TF avro2tf/src/test/scala/com/linkedin/avro2tf/jobs/PrepRankingDataTest.scala.

`Avro2TF.run` is the tensorize command and `PrepRankingData.run` the prep_ranking command,
both in-process with Avro2TF's flags. Avro2TF writes the grouped records as Avro: they are
asked for with `--record_format avro` and read with fastavro. The MovieLens tests give our
prep_ranking the tensorized output folder as `--input` and take data and metadata from one
`--output` (`trainingData/`, `metadata/tensor_metadata.json`, `metadata/content_feature_list`);
the N-dimension test uses Avro2TF's own flags: `--input-data-path` (an Avro file) with
`--input-metadata-path`, and `--output-data-path` with `--output-metadata-path`.
"""

from __future__ import annotations

from pathlib import Path

import fastavro
import pytest

from tests.compat.avro2tf.helpers import (
    AVRO2TF_CONFIG_PATH_VALUE_MOVIELENS_RANK,
    EXPECTED_TENSOR_METADATA_FDS_RANK,
    EXPECTED_TENSOR_METADATA_MOVIELENS_RANK,
    INPUT_FDS_PATH,
    INPUT_MOVIELENS_FILE_PATHS,
    METADATA_PATH_FDS,
    avro2tf_metadata,
    avro_field_types,
    expected_metadata,
    is_array_of,
    prep_ranking,
    read_avro_folder,
    resource,
    tensorize,
)

pytestmark = pytest.mark.pipeline

TENSOR_METADATA_FILE_NAME = "tensor_metadata.json"
CONTENT_FEATURE_LIST = "content_feature_list"

#: Hashed tensors of the MovieLens ranking config: our numUniqueValues is hashBucketSize + 1 where
#: Avro2TF's expected metadata says hashBucketSize (a deliberate difference: the dummy id of null /
#: empty input is counted; see docs/migrating-from-avro2tf.md, "a hashed tensor's numUniqueValues").
_HASHED_MOVIELENS_RANK = {"movieId_hashed": 1001, "movieId_hashed_response": 1001}


def _with_our_hashed_sizes(expected: dict[str, list[dict]], ours: dict[str, int]) -> dict[str, list[dict]]:
    """Avro2TF's expected metadata with our documented numUniqueValues of hashed tensors."""
    for entry in expected["features"] + expected["labels"]:
        entry["numUniqueValues"] = ours.get(entry["name"], entry["numUniqueValues"])
    return expected


@pytest.fixture(scope="module")
def movielens_rank_training(tmp_path_factory) -> tuple[Path, int]:
    """(working directory, exit code) of the train run of the MovieLens ranking config, which
    both MovieLens tests prepare ranking data from."""
    working_dir = tmp_path_factory.mktemp("avro2tf-test-movielens")
    code = tensorize(
        [
            "--input-paths", resource(INPUT_MOVIELENS_FILE_PATHS),
            "--working-dir", str(working_dir),
            "--avro2tf-config-path", resource(AVRO2TF_CONFIG_PATH_VALUE_MOVIELENS_RANK),
        ]
    )  # fmt: skip
    return working_dir, code


def _check_training(working_dir: Path, code: int) -> None:
    assert code == 0
    assert (working_dir / "trainingData" / "_SUCCESS").exists()
    assert (working_dir / "metadata" / TENSOR_METADATA_FILE_NAME).exists()
    assert (working_dir / "featureList").is_dir()


def _check_ranking_output(
    data_output: Path, metadata_output: Path, expected_metadata_path: str, ours_differ: dict[str, int]
) -> None:
    output_metadata_file = metadata_output / TENSOR_METADATA_FILE_NAME
    assert (data_output / "_SUCCESS").exists()
    assert output_metadata_file.exists()
    assert (metadata_output / CONTENT_FEATURE_LIST).exists()
    # Check if tensor metadata JSON file is correctly generated
    expected = _with_our_hashed_sizes(expected_metadata(expected_metadata_path), ours_differ)
    assert avro2tf_metadata(output_metadata_file) == expected


def _prep_movielens(working_dir: Path, output: Path, *flags: str) -> int:
    return prep_ranking(
        [
            "--input", str(working_dir),
            "--output", str(output),
            "--group-id-list", "userId",
            "--group-list-max-size", "10",
            "--execution-mode", "training",
            "--num-output-files", "1",
            "--record_format", "avro",
            *flags,
        ]
    )  # fmt: skip


def validate_sparse_feature_output_schema(records: list[dict], sparse_features: list[str]) -> None:
    """A 2-D sparse feature is a record of column-major indices (as tf.io.SparseFeature):
    indices0, indices1 (arrays of longs) and values (an array of floats), of equal lengths."""
    assert records
    for feature in sparse_features:
        for record in records:
            indices0 = record[feature]["indices0"]
            indices1 = record[feature]["indices1"]
            values = record[feature]["values"]
            assert len(indices0) == len(indices1)
            assert len(values) == len(indices1)


def test_prep_ranking_data(movielens_rank_training):
    working_dir, code = movielens_rank_training
    _check_training(working_dir, code)
    output = working_dir / "rankingOutput"

    assert _prep_movielens(working_dir, output) == 0

    _check_ranking_output(
        output / "trainingData",
        output / "metadata",
        EXPECTED_TENSOR_METADATA_MOVIELENS_RANK,
        _HASHED_MOVIELENS_RANK,
    )
    _, records = read_avro_folder(output / "trainingData")
    # verify sparse feature schema is correct
    validate_sparse_feature_output_schema(
        records,
        [
            "genreFeatures",
            "genreFeatures_movieLatentFactorFeatures",
            "genreFeatures_movieLatentFactorFeatures_response",
        ],
    )
    # userId (shape [-1]: a list of one id per row) is the group id: one record per user, the
    # user's ratings in input order, padded with the label padding value -1
    ratings: dict[int, list[float]] = {}
    with open(resource(INPUT_MOVIELENS_FILE_PATHS), "rb") as f:
        for row in fastavro.reader(f):
            ratings.setdefault(row["userId"], []).append(row["response"])
    assert [r["userId"] for r in records] == [[user] for user in ratings]
    for record in records:
        kept = ratings[record["userId"][0]][:10]
        assert record["response"] == kept + [-1.0] * (10 - len(kept))
        assert record["genreFeatures"]["indices0"][-1] == len(kept) - 1


def test_prep_ranking_data_with_skip_padding(movielens_rank_training):
    """With skip padding the output data is not padded and the metadata is the same."""
    working_dir, code = movielens_rank_training
    _check_training(working_dir, code)
    output = working_dir / "rankingOutputSkipPadding"

    assert _prep_movielens(working_dir, output, "--skip-padding", "true") == 0

    _check_ranking_output(
        output / "trainingData",
        output / "metadata",
        EXPECTED_TENSOR_METADATA_MOVIELENS_RANK,
        _HASHED_MOVIELENS_RANK,
    )
    _, records = read_avro_folder(output / "trainingData")
    # verify padding is skipped
    assert any(len(record["response"]) < 10 for record in records)


def test_prep_ranking_data_with_n_dim_tensor(tmp_path):
    """N-dimension dense tensors (nested arrays) and sparse tensors (indices0 .. indicesN,
    values) of documents get the group list size in front of their shape."""
    working_dir = tmp_path / "avro2tf-test-FDS"
    data_output_path = working_dir / "rankingOutput"
    metadata_output_path = working_dir / "rankingMetadataOutput"

    code = prep_ranking(
        [
            "--input-data-path", resource(INPUT_FDS_PATH),
            "--input-metadata-path", resource(METADATA_PATH_FDS),
            "--output-data-path", str(data_output_path),
            "--output-metadata-path", str(metadata_output_path),
            "--group-id-list", "uid",
            "--group-list-max-size", "10",
            "--execution-mode", "training",
            "--num-output-files", "1",
        ]
    )  # fmt: skip

    assert code == 0
    _check_ranking_output(data_output_path, metadata_output_path, EXPECTED_TENSOR_METADATA_FDS_RANK, {})
    assert (metadata_output_path / CONTENT_FEATURE_LIST).read_text().split("\n") == [
        "docId", "denseVector", "double2DDenseVector", "double3DDenseTensor", "float1DSparseTensor",
        "float2DSparseTensor", "float4DSparseTensor", "primitive", "label",
    ]  # fmt: skip

    # The records, against a grouping of the input computed here (fastavro, not our reader).
    with open(resource(INPUT_FDS_PATH), "rb") as f:
        rows = list(fastavro.reader(f))
    groups: dict[int, list[dict]] = {}
    for row in rows:
        groups.setdefault(row["uid"], []).append(row)
    schema, records = read_avro_folder(data_output_path)
    assert sorted(r["uid"] for r in records) == sorted(groups)
    assert [r["uid"] for r in records] == list(groups)  # groups in the order of their first row
    for record in records:
        docs = groups[record["uid"]][:10]
        pad = 10 - len(docs)
        assert record["docId"] == [d["docId"] for d in docs] + [0] * pad
        assert record["primitive"] == [d["primitive"] for d in docs] + [0.0] * pad
        assert record["label"] == [d["label"] for d in docs] + [-1] * pad  # the label padding
        # dense tensors: the documents' nested arrays, cut, not padded
        assert record["denseVector"] == [d["denseVector"] for d in docs]
        assert record["double2DDenseVector"] == [d["double2DDenseVector"] for d in docs]
        assert record["double3DDenseTensor"] == [d["double3DDenseTensor"] for d in docs]
        # sparse tensors: indices0 is the document's place, then its own indices
        for name, rank in (
            ("float1DSparseTensor", 1),
            ("float2DSparseTensor", 2),
            ("float4DSparseTensor", 4),
        ):
            sparse = record[name]
            assert sorted(sparse) == [f"indices{i}" for i in range(rank + 1)] + ["values"]
            assert sparse["indices0"] == [p for p, d in enumerate(docs) for _ in d[name]["values"]]
            for i in range(rank):
                assert sparse[f"indices{i + 1}"] == [x for d in docs for x in d[name][f"indices{i}"]]
            assert sparse["values"] == [v for d in docs for v in d[name]["values"]]
    assert {len(g) for g in groups.values()} == {3}  # 100 users with 3 documents each
    assert all(len(r["denseVector"]) == 3 and len(r["docId"]) == 10 for r in records)
    first = next(r for r in records if r["uid"] == rows[0]["uid"])
    assert [len(m) for m in first["double3DDenseTensor"][0]] == [3, 3]  # [2, 3, 4] per document
    assert len(first["double3DDenseTensor"][0][0][0]) == 4

    # The Avro schema Avro2TF's Spark writer gives these columns: group id as it was, arrays of
    # the element type (nested for N-dim tensors), records of long / float arrays for sparse.
    types = avro_field_types(schema)
    assert list(types) == [
        "uid", "docId", "denseVector", "double2DDenseVector", "double3DDenseTensor",
        "float1DSparseTensor", "float2DSparseTensor", "float4DSparseTensor", "primitive", "label",
    ]  # fmt: skip
    assert types["uid"] == "int" and is_array_of(types["docId"], "int") and is_array_of(types["label"], "int")
    assert is_array_of(types["primitive"], "float")
    assert types["double2DDenseVector"] == {
        "type": "array",
        "items": {"type": "array", "items": {"type": "array", "items": "double"}},
    }
    sparse_fields = {f["name"]: f["type"] for f in types["float2DSparseTensor"]["fields"]}
    assert list(sparse_fields) == ["indices0", "indices1", "indices2", "values"]
    assert all(is_array_of(sparse_fields[f"indices{i}"], "long") for i in range(3))
    assert is_array_of(sparse_fields["values"], "float")
