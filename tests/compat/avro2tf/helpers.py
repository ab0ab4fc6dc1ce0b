"""What the ported Avro2TF suites share: their resources (`data/`, copied from Avro2TF's
`avro2tf/src/test/resources/`), running our CLIs in-process with Avro2TF's flags, and reading
what they wrote the way the Scala tests read Avro2TF's output."""

from __future__ import annotations

import glob
import json
import os
from collections.abc import Sequence
from pathlib import Path

import fastavro

from beam_tensorize.sample import SAMPLE_AVRO

#: The copied resources, in Avro2TF's layout (`configs/`, `data/`, `metadata/`).
DATA = Path(__file__).resolve().parent / "data"

# ConstantsForTest.scala, with the resources resolved here.
AVRO2TF_CONFIG_PATH_VALUE_2 = "configs/avro2tf_config_2.json"
AVRO2TF_CONFIG_PATH_VALUE_2_HOCON = "configs/avro2tf_config_2.conf"
AVRO2TF_CONFIG_PATH_VALUE_3 = "configs/avro2tf_config_3.json"
AVRO2TF_CONFIG_PATH_VALUE_4 = "configs/avro2tf_config_4.json"
AVRO2TF_CONFIG_PATH_VALUE_5 = "configs/avro2tf_config_5.json"
AVRO2TF_CONFIG_PATH_VALUE_MOVIELENS = "configs/avro2tf_config_movielens.json"
AVRO2TF_CONFIG_PATH_VALUE_MOVIELENS_RANK = "configs/avro2tf_config_movielens_rank.json"
AVRO2TF_CONFIG_PATH_VALUE_SAMPLE = "configs/avro2tf_config_sample.json"
AVRO2TF_CONFIG_PATH_VALUE_SAMPLE_WITHOUT_INT_FEATURES = "configs/avro2tf_config_without_int_features.json"
AVRO2TF_CONFIG_PATH_VALUE_TEXT_SEQ = "configs/avro2tf_config_text_sequence.json"
AVRO2TF_CONFIG_PATH_VALUE_SHARE_FEATURE = "configs/avro2tf_config_share_feature.json"
AVRO2TF_CONFIG_PATH_VALUE_VOCAB_SIZE_CAP = "configs/avro2tf_config_with_vocab_size_cap.json"
INPUT_MOVIELENS_FILE_PATHS = "data/trainSmall.avro"
INPUT_TEXT_FILE_PATHS = "data/text.avro"
INPUT_TEXT_SEQ_FILE_PATHS = "data/textSequence.avro"
INPUT_SHARE_FEATURE_PATH = "data/share_feat_list/test_share_feature_list.avro"
INPUT_FDS_PATH = "data/FDS.avro"
METADATA_PATH_FDS = "metadata/tensor_metadata_FDS.json"
EXPECTED_FEATURE_LIST_W_COUNTS_PATH = "data/share_feat_list/feat_lists_w_counts"
FEATURE_LIST_SHARING_EXPECTED_VALUE_PATH_CASE1 = "data/share_feat_list/feat_lists_case_1"
FEATURE_LIST_SHARING_EXPECTED_VALUE_PATH_CASE2 = "data/share_feat_list/feat_lists_case_2"
EXPECTED_TENSOR_METADATA_GENERATED_JSON_PATH_TEXT = "metadata/tensor_metadata_text_1.json"
EXPECTED_TENSOR_METADATA_WITHOUT_INT_FEATURES_GENERATED_JSON_PATH_TEXT = (
    "metadata/tensor_metadata_text_without_int_features.json"
)
EXPECTED_TENSOR_METADATA_MOVIELENS_RANK = "metadata/tensor_metadata_movielens_rank.json"
EXPECTED_TENSOR_METADATA_FDS_RANK = "metadata/tensor_metadata_FDS_rank.json"
EXPECTED_TENSOR_METADATA_WITH_PARTITION_ID = "metadata/tensor_metadata_with_partition_id.json"
EXTERNAL_FEATURE_LIST_FILE_NAME_MOVIELENS = "genreFeatures_term"
EXTERNAL_FEATURE_LIST_FILE_NAME_TEXT = "words_term"
SAMPLE_EXTERNAL_FEATURE_LIST = "a\nb\nc\n"
EXTRA_COLUMNS_TO_KEEP_VALUE = "review,words.term:terms"
TENSORS_SHARING_FEATURE_LISTS_VALUE_CASE_1 = (
    "comments_after,comments_before; fruits_day1,fruits_day2,fruits_day3;receive_platform,send_platform"
)
TENSORS_SHARING_FEATURE_LISTS_VALUE_CASE_2 = (
    "comments_after,comments_before; fruits_day1,fruits_day2;receive_platform,send_platform"
)
TENSORS_SHARING_FEATURE_LISTS_VALUE_CASE_3 = (
    "comments_after,comments_before; fruits_day1,fruits_day4;receive_platform,send_platform"
)
MIX_NTV_FEATURE_NAME = "fruits_day4"

#: The keys of an entry of Avro2TF's tensor_metadata.json (ours adds others, see docs/metadata.md).
AVRO2TF_METADATA_KEYS = ("name", "dtype", "shape", "numUniqueValues", "isSparse", "isDocumentFeature")


def resource(relative: str) -> str:
    """A test resource's path. Avro2TF's `data/trainSmall.avro` is byte-identical to the
    package's bundled MovieLens sample, so that file is used rather than a second copy."""
    if relative == INPUT_MOVIELENS_FILE_PATHS:
        return SAMPLE_AVRO
    return str(DATA / relative)


def input_batch(relative: str):
    """`session.read.avro(path)`: the whole input file as one Arrow record batch, decoded by
    our Avro reader."""
    import pyarrow as pa

    from beam_tensorize.kernels.avro.decode import read_avro_batches

    path = resource(relative)
    with open(path, "rb") as f:
        table = pa.Table.from_batches(list(read_avro_batches(f, path)))
    return table.combine_chunks().to_batches()[0]


def write_external_feature_list(folder: Path, name: str) -> str:
    """Avro2TF's tests' external feature list: `<folder>/<name>` holding `a`, `b`, `c`."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(SAMPLE_EXTERNAL_FEATURE_LIST)
    return str(folder)


def tensorize(args: Sequence[str]) -> int:
    """`python -m pipelines.tensorize <args>` in-process (no summary, no report, as Avro2TF
    writes none); returns the exit code."""
    from pipelines.tensorize import main

    return main([*args, "--quiet", "--report", "none"])


def prep_ranking(args: Sequence[str]) -> int:
    """`python -m pipelines.prep_ranking <args>` in-process; returns the exit code."""
    from pipelines.prep_ranking import main

    return main([*args, "--quiet"])


def read_avro_folder(folder: str | Path) -> tuple[dict, list[dict]]:
    """(writer schema, records) of the Avro files of a data folder (partition folders too), as
    `IOUtils.readAvro` reads a folder."""
    paths = sorted(glob.glob(os.path.join(str(folder), "**", "*.avro"), recursive=True))
    assert paths, f"no Avro file in {folder}"
    schema, records = None, []
    for path in paths:
        with open(path, "rb") as f:
            reader = fastavro.reader(f)
            records.extend(reader)
            schema = schema or reader.writer_schema
    return schema, records


def avro_field_types(schema: dict) -> dict[str, object]:
    """Field name -> its type, the null branch of `["null", t]` unions removed."""
    types = {}
    for field in schema["fields"]:
        kind = field["type"]
        if isinstance(kind, list):
            kind = [k for k in kind if k != "null"]
            kind = kind[0] if len(kind) == 1 else kind
        types[field["name"]] = kind
    return types


def is_array_of(kind: object, item: str) -> bool:
    """CommonUtils.isArrayOfLong / isArrayOfFloat on an Avro type."""
    return isinstance(kind, dict) and kind.get("type") == "array" and kind.get("items") == item


def is_sparse_record(kind: object) -> bool:
    """CommonUtils.isSparseTensor: a record {indices: array<long>, values: array<float>}."""
    if not (isinstance(kind, dict) and kind.get("type") == "record"):
        return False
    fields = {f["name"]: f["type"] for f in kind["fields"]}
    return (
        set(fields) == {"indices", "values"}
        and is_array_of(fields["indices"], "long")
        and is_array_of(fields["values"], "float")
    )


def avro2tf_metadata(path: str | Path) -> dict[str, list[dict]]:
    """A tensor_metadata.json cut to what Avro2TF writes: its `features` and `labels`, each
    entry with Avro2TF's keys only (ours adds parse, featureKeys, ... beside them)."""
    document = json.loads(Path(path).read_text())
    return {
        part: [{k: t.get(k) for k in AVRO2TF_METADATA_KEYS} for t in document.get(part, [])]
        for part in ("features", "labels")
    }


def expected_metadata(relative: str) -> dict[str, list[dict]]:
    """An expected tensor_metadata.json of Avro2TF's resources, in `avro2tf_metadata`'s form."""
    return avro2tf_metadata(resource(relative))


def lines(path: str | Path) -> list[str]:
    """`scala.io.Source.fromFile(path).getLines()`."""
    return Path(path).read_text(encoding="utf-8").splitlines()
