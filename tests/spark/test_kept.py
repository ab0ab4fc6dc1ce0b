"""Train mode's one read on Spark, without a session: the counting task keeps each split's
extracted batches, and the encoding task writes the same files from them as from the input,
which it no longer reads."""

from __future__ import annotations

import collections
import pathlib
import shutil
import types

import pytest

from beam_tensorize.job.reading import plan_splits, unified_schema
from beam_tensorize.job.spec import TensorizeSpec
from beam_tensorize.kernels.features.vocab import build_feature_list, feature_list_caps, lists_per_tensor
from beam_tensorize.kernels.spill import read_spill
from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
from beam_tensorize.spark._encode import EncodeBatches
from beam_tensorize.spark._feature_lists import CountEntries, Keep
from beam_tensorize.spark._kept import delete_kept, runs_each_task_once
from beam_tensorize.spark._tasks import RECORD
from beam_tensorize.spark._write import EncodeAndWrite, commit_plan


def _sums(counted) -> collections.Counter:
    sums = collections.Counter()
    for key, entry, count in counted:
        sums[(key, entry)] += count
    return sums


def _lists(spec: TensorizeSpec, counted) -> dict:
    """The feature lists of the counts, as `_build_feature_lists` makes them on Spark."""
    entries = collections.defaultdict(list)
    for (key, entry), count in _sums(counted).items():
        entries[key].append((entry, count))
    caps = feature_list_caps(spec.config, spec.feature_list_keys)
    built = {key: build_feature_list(found, caps.get(key)) for key, found in entries.items()}
    return lists_per_tensor(built, spec.feature_list_keys)


def _refuse(paths):
    from apache_beam.io.filesystem import BeamIOError

    raise BeamIOError("Delete operation failed", {p: PermissionError(13, "denied") for p in paths})


def _written(
    spec: TensorizeSpec, lists: dict, tasks: list, schema, kept: str | None, delete: bool = False
) -> dict:
    """{file key: the file's bytes} an encoding task writes for `tasks`."""
    plan = commit_plan(spec)
    encode = EncodeBatches(spec, types.SimpleNamespace(value=lists))
    rows = list(EncodeAndWrite(encode, plan, False, schema, kept, delete)(iter(tasks)))
    files = {row["key"]: open(row["payload"].decode(), "rb").read() for row in rows if row["kind"] == RECORD}
    shutil.rmtree(plan.temp_dir)
    return files


def test_the_encoding_task_writes_the_same_files_from_the_kept_batches(tmp_path):
    data = tmp_path / "in.avro"
    shutil.copy(SAMPLE_AVRO, data)
    spec = TensorizeSpec(SAMPLE_CONFIG, str(tmp_path / "out"), inputs=[str(data)], split_bytes=20_000)
    splits = plan_splits(spec.inputs, None, spec.split_bytes, dead_letters=True)
    assert len(splits) > 1 and spec.keeps_batches
    schema = unified_schema(splits, spec.input_columns)
    listed = tuple(t for t in spec.config.tensors if t.name in spec.feature_list_keys)
    keep = Keep(spec, str(tmp_path / "out" / "_temporary" / "run" / "kept"), schema)

    def count(keep_batches):
        counting = CountEntries(listed, spec.feature_list_keys, spec.batch_rows, False, keep_batches)
        return list(counting(iter(list(enumerate(splits)) if keep_batches else splits)))

    counted = count(keep)
    assert _sums(counted) == _sums(count(None))  # the same counts as from the list columns alone
    lists = _lists(spec, counted)
    assert lists["genreIds"].entries[:3] and len(lists["genreIds"].entries) == 19
    kept = sorted((tmp_path / "out" / "_temporary" / "run" / "kept").iterdir())
    assert [p.name for p in kept] == [f"split-{i:06d}.spill" for i in range(len(splits))]
    assert sum(b.num_rows for p in kept for b in read_spill(open(p, "rb"), str(p))) == 300
    from_input = _written(spec, lists, splits, schema, None)
    data.unlink()  # the encoding task reads the kept batches only
    from_kept = _written(spec, lists, list(enumerate(splits)), schema, keep.folder)
    assert from_kept == from_input and len(from_kept) == 2  # the sample has two Avro blocks
    with pytest.raises(FileNotFoundError):
        _written(spec, lists, splits, schema, None)
    # Where Spark runs each task once, the task deletes its split's file once read (where it
    # can: a file that cannot be deleted then stays for the job's clean-up).
    first = list(enumerate(splits))[:1]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr("beam_tensorize.spark._kept.FileSystems.delete", _refuse)
        assert _written(spec, lists, first, schema, keep.folder, delete=True)
    assert sorted(pathlib.Path(keep.folder).iterdir()) == kept
    assert _written(spec, lists, first, schema, keep.folder, delete=True)
    assert sorted(pathlib.Path(keep.folder).iterdir()) == kept[1:]
    delete_kept(keep.folder, spec.output)
    assert not (tmp_path / "out" / "_temporary").exists()


@pytest.mark.parametrize(
    "master, conf, once",
    [
        ("local", {}, True),
        ("local[2]", {}, True),
        ("local[*]", {"spark.speculation": "false"}, True),
        ("local[2, 3]", {}, False),  # three attempts per task
        ("local[2,3]", {}, False),
        ("local-cluster[2,1,1024]", {}, False),
        ("spark://host:7077", {}, False),
        ("yarn", {}, False),
        ("local[2]", {"spark.speculation": "True"}, False),  # speculative copies read it too
    ],
)
def test_files_are_deleted_when_read_only_where_each_task_runs_once(master, conf, once):
    assert runs_each_task_once(master, conf) is once
