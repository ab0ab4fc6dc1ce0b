"""`KeepBatches`: batches written to files and read back after a stage boundary, unchanged;
the batches of an input split stay in one file, in order."""

from __future__ import annotations

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.filesystem import BeamIOError
from apache_beam.options.pipeline_options import PipelineOptions
from apache_beam.runners.direct.direct_runner import BundleBasedDirectRunner
from apache_beam.testing.test_pipeline import TestPipeline
from apache_beam.testing.util import assert_that, equal_to

from beam_tensorize.kernels.provenance import split_key, with_source, with_split
from beam_tensorize.kernels.spill import read_spill
from beam_tensorize.runners.direct import direct_runner_for
from beam_tensorize.transforms import keep
from beam_tensorize.transforms.keep import KeepBatches


def _batches():
    """Three input splits of 1-3 batches each, tagged as a reader tags them."""
    batches = []
    for s, count in enumerate((3, 1, 2)):
        for b in range(count):
            batch = pa.RecordBatch.from_pydict(
                {"split": [s] * 100, "batch": [b] * 100, "x": list(range(100))}
            )
            batches.append(with_split(with_source(batch, f"in/{s}.avro", 1000 * b), f"in/{s}.avro", 0))
    return batches


def _described(batch: pa.RecordBatch) -> tuple:
    return split_key(batch), batch.column("batch")[0].as_py(), batch.to_pydict()["x"] == list(range(100))


def _in_one_bundle(p, batches):
    """`batches` from one element, so that one bundle writes them in order."""
    return p | beam.Create([batches]) | beam.FlatMap(lambda bs: bs).with_output_types(pa.RecordBatch)


def test_batches_come_back_unchanged_and_splits_stay_whole_in_one_file(tmp_path):
    batches = _batches()
    with TestPipeline() as p:
        back = (
            _in_one_bundle(p, batches)
            | KeepBatches(str(tmp_path / "kept"), file_bytes=1)  # a new file at every split
            | beam.Map(_described)
        )
        assert_that(back, equal_to([_described(b) for b in batches]))
    files = sorted((tmp_path / "kept").iterdir())
    per_file = [[_described(b) for b in read_spill(open(f, "rb"), str(f))] for f in files]
    assert len(files) == 3  # one per split, closed at the first batch of the next split
    assert sorted(per_file) == [
        [
            (split_key(batches[0]), 0, True),
            (split_key(batches[0]), 1, True),
            (split_key(batches[0]), 2, True),
        ],
        [(split_key(batches[3]), 0, True)],
        [(split_key(batches[4]), 0, True), (split_key(batches[4]), 1, True)],
    ]


def test_one_file_per_bundle_below_the_size(tmp_path):
    batches = _batches()
    with TestPipeline() as p:
        _ = _in_one_bundle(p, batches) | KeepBatches(str(tmp_path / "kept"))
    (kept,) = (tmp_path / "kept").iterdir()
    assert [b.to_pydict() for b in read_spill(open(kept, "rb"), str(kept))] == [
        b.to_pydict() for b in batches
    ]


def _run_kept(runner, folder, delete_when_read=None):
    """`_batches()` kept under `folder` and read back by a pipeline on `runner`, unchanged."""
    batches = _batches()
    with beam.Pipeline(runner=runner, options=PipelineOptions([])) as p:
        back = (
            _in_one_bundle(p, batches)
            | KeepBatches(folder, file_bytes=1, delete_when_read=delete_when_read)
            | beam.Map(_described)
        )
        assert_that(back, equal_to([_described(b) for b in batches]))


def test_files_are_deleted_once_read_when_the_runner_runs_each_bundle_once(tmp_path):
    folder = tmp_path / "kept"
    _run_kept(direct_runner_for(PipelineOptions([])), str(folder))
    assert folder.is_dir() and list(folder.iterdir()) == []  # three files were written, then read


def test_files_stay_when_asked_or_when_a_bundle_may_run_again(tmp_path):
    _run_kept(direct_runner_for(PipelineOptions([])), str(tmp_path / "asked"), delete_when_read=False)
    _run_kept(BundleBasedDirectRunner(), str(tmp_path / "retrying"))  # retries a failed bundle
    assert len(list((tmp_path / "asked").iterdir())) == 3
    assert len(list((tmp_path / "retrying").iterdir())) == 3


def test_a_file_that_cannot_be_deleted_early_does_not_fail_the_job(tmp_path, monkeypatch):
    def refuse(paths):
        raise BeamIOError("Delete operation failed", {p: PermissionError(13, "denied") for p in paths})

    monkeypatch.setattr(keep.FileSystems, "delete", staticmethod(refuse))
    _run_kept(direct_runner_for(PipelineOptions([])), str(tmp_path / "kept"))  # the batches all came back
    assert len(list((tmp_path / "kept").iterdir())) == 3  # left for the job's clean-up
