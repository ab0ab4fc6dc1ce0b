"""`make_dataset` as a training input: completeness check, parallel reads, shuffling, repeats,
and shards that are disjoint and complete (by file, by record, from a tf.distribute context)."""

from __future__ import annotations

import os
from collections import Counter

import pytest

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf

from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
from beam_tensorize.tf import make_dataset
from pipelines.tensorize import main

pytestmark = pytest.mark.pipeline


@pytest.fixture(scope="module")
def output(tmp_path_factory):
    out = tmp_path_factory.mktemp("tf") / "out"
    args = ["--input", SAMPLE_AVRO, "--config", SAMPLE_CONFIG, "--output", str(out), "--quiet"]
    assert main([*args, "--max_records_per_file", "50"]) == 0  # 6 files of 50 records
    return out


def _keys(dataset) -> list[tuple]:
    """(movieId, userIds) of every record, in dataset order."""
    keys = []
    for batch in dataset:
        movies = batch["movieId"].numpy().tolist()
        users = batch["userId"].to_list() if isinstance(batch["userId"], tf.RaggedTensor) else batch["userId"]
        keys += [(m, tuple(u)) for m, u in zip(movies, users)]
    return keys


def test_shards_are_disjoint_and_complete(output):
    everything = Counter(_keys(make_dataset(str(output), batch_size=64, labels=False)))
    assert sum(everything.values()) == 300
    for shards in (2, 7):  # by file (6 files), by record (7 > 6 files)
        parts = [Counter(_keys(make_dataset(str(output), batch_size=64, labels=False, num_shards=shards,
                                            shard_index=i))) for i in range(shards)]  # fmt: skip
        assert sum(parts, Counter()) == everything
        assert all(sum(p.values()) > 0 for p in parts)
    context = tf.distribute.InputContext(num_input_pipelines=2, input_pipeline_id=1)
    assert _keys(make_dataset(str(output), labels=False, input_context=context)) == _keys(
        make_dataset(str(output), labels=False, num_shards=2, shard_index=1)
    )


def test_shuffles_are_seeded_permutations_and_repeat_and_remainder_work(output):
    plain = _keys(make_dataset(str(output), batch_size=64, labels=False))
    shuffled = _keys(
        make_dataset(str(output), batch_size=64, labels=False, shuffle_files=True, shuffle_buffer=100, seed=3)
    )
    again = _keys(
        make_dataset(str(output), batch_size=64, labels=False, shuffle_files=True, shuffle_buffer=100, seed=3)
    )
    assert shuffled == again and shuffled != plain and Counter(shuffled) == Counter(plain)
    batches = list(make_dataset(str(output), batch_size=64, labels=False, repeat=2, drop_remainder=True))
    assert len(batches) == 600 // 64 and all(b["movieId"].shape[0] == 64 for b in batches)
    features, labels = next(iter(make_dataset(str(output), batch_size=8)))
    assert list(labels) == ["response"] and "response" not in features


def test_an_incomplete_output_is_refused(output, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(output, copy)
    (copy / "_SUCCESS").unlink()
    with pytest.raises(ValueError, match="has no _SUCCESS: the job writing it has not finished, or failed"):
        make_dataset(str(copy))
    with pytest.raises(ValueError, match=r"shard_index must be in \[0, num_shards\), got 2 of 2"):
        make_dataset(str(output), num_shards=2, shard_index=2)
    with pytest.raises(ValueError, match="has no testData split"):
        make_dataset(str(output), split="test")


@pytest.mark.parametrize("fmt", ["tfrecord", "parquet"])
def test_the_keras_example_trains_on_an_output(output, tmp_path, fmt):
    """examples/train_keras.py: a model sized from the metadata learns (the loss falls), from a
    TFRecord output (make_dataset) and from a Parquet output (Dataset.from_output)."""
    if fmt == "parquet":
        args = [
            "--input",
            SAMPLE_AVRO,
            "--config",
            SAMPLE_CONFIG,
            "--output",
            str(tmp_path / "pq"),
            "--quiet",
        ]
        assert main([*args, "--output_format", "parquet"]) == 0
        output = tmp_path / "pq"
    import importlib.util

    path = os.path.join(
        os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
        "examples",
        "train_keras.py",
    )
    spec = importlib.util.spec_from_file_location("train_keras", path)
    example = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(example)
    tf.keras.utils.set_random_seed(0)
    model = example.build_model(example.load_metadata(str(output)))
    data = example.inputs(str(output), batch_size=300)
    before = model.evaluate(data, verbose=0)
    model.fit(
        example.inputs(str(output), shuffle_buffer=300, seed=1, repeat=None), steps_per_epoch=60, verbose=0
    )
    assert model.evaluate(data, verbose=0) < 0.5 * before


def test_reading_sparse_tensors_logs_no_deprecation_of_tfs_own_ops(output, monkeypatch):
    """Parsing a tf.io.SparseFeature calls TF's deprecated sparse_merge, which logged a
    deprecation warning on every make_dataset (beam_tensorize.tf._compat silences it)."""
    import logging

    from tensorflow.python.util import deprecation

    monkeypatch.setattr(deprecation, "_PRINTED_WARNING", {})  # TF warns once per process
    seen = []
    handler = logging.Handler()
    handler.emit = lambda record: seen.append(record.getMessage())
    logger = logging.getLogger("tensorflow")
    logger.addHandler(handler)
    try:
        sparse = [
            n
            for n, v in next(iter(make_dataset(str(output), batch_size=100, labels=False))).items()
            if isinstance(v, tf.SparseTensor)
        ]
        assert sparse  # the sample has sparse tensors: the case that logged
        tf.io.parse_example(tf.constant([b""]), {"x": tf.io.SparseFeature("i", "v", tf.float32, 3)})
        assert any("sparse_merge" in m for m in seen)  # TF's own call logs it, so the check can fail
        seen.clear()
        monkeypatch.setattr(deprecation, "_PRINTED_WARNING", {})
        next(iter(make_dataset(str(output), batch_size=100)))
    finally:
        logger.removeHandler(handler)
    assert not [m for m in seen if "deprecated" in m]


def test_make_dataset_s_functions_skip_grappler(output):
    """make_dataset's parsing functions are marked to be instantiated without grappler on
    each new iterator, as from_parquet's are (tests/tf/test_parquet.py)."""
    graph = tf.Graph()
    with graph.as_default():
        make_dataset(str(output), batch_size=8)
    functions = graph.as_graph_def().library.function
    assert functions and all(f.attr["experimental_ints_on_device"].b for f in functions)
