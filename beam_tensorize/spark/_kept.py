"""Train mode's one read on Spark (`TensorizeSpec.keeps_batches`): the counting task of each
input split reads it whole, extracts its tensors, counts the feature lists' entries and keeps
the extracted batches in a file of its own (`beam_tensorize.kernels.spill`), with the records
that did not decode; the encoding task of the split reads that file instead of the input.

A split's file is `<folder>/split-<index>.spill`, written under a name of its own and renamed
into place when whole, so a retried (or speculative) task never leaves half a file there. When
Spark runs each task once (`runs_each_task_once`: a local master), the encoding task deletes
the file once it has read it, so its disk space and page cache come back while the output is
written; elsewhere a retried task reads it again, and the files go when the job ends.
"""

from __future__ import annotations

import logging
import posixpath
import re
import uuid
from collections.abc import Iterator

import pyarrow as pa

from beam_tensorize.job.commit import remove_empty_temporary
from beam_tensorize.job.files import FileSystems, open_arrow_file
from beam_tensorize.job.finish import dead_letter_json
from beam_tensorize.job.reading import read_split_batches
from beam_tensorize.job.spec import TensorizeSpec
from beam_tensorize.kernels.features.extract import extract_tensors
from beam_tensorize.kernels.spill import SpillWriter, read_spill

__all__ = ["delete_kept", "kept_batches", "read_and_keep", "runs_each_task_once"]

_LOGGER = logging.getLogger(__name__)

#: Marks the batch of a split's file that holds the records that did not decode (JSON lines).
_LETTERS = b"beam_tensorize.kept.dead_letters"


def _path(folder: str, index: int) -> str:
    return posixpath.join(folder, f"split-{index:06d}.spill")


def read_and_keep(
    spec: TensorizeSpec, folder: str, index: int, fmt, split, schema: pa.Schema | None
) -> Iterator[pa.RecordBatch]:
    """The extracted batches of input split `index` (every input column read, cast to the
    input's unified `schema`), kept in its file as they are given out."""
    path = _path(folder, index)
    temp = f"{path}.{uuid.uuid4().hex}"
    letters: list[bytes] = []
    with SpillWriter(open_arrow_file(temp, "wb")) as kept:
        for item in read_split_batches(fmt, split, spec.input_columns, spec.batch_rows, None, schema):
            if isinstance(item, dict):
                letters.append(dead_letter_json(item).encode())
                continue
            extracted = extract_tensors(item, spec.config.tensors, spec.extra_columns)
            kept.write(extracted)
            yield extracted
        if letters:
            marked = pa.RecordBatch.from_pydict({"letter": pa.array(letters, pa.binary())})
            kept.write(marked.replace_schema_metadata({_LETTERS: b""}))
    FileSystems.rename([temp], [path])


def kept_batches(
    folder: str, index: int, unreadable: list[bytes], delete: bool = False
) -> Iterator[pa.RecordBatch]:
    """The extracted batches `read_and_keep` kept of split `index`; the dead letters of its
    records that did not decode (JSON lines) go to `unreadable`. With `delete`, the file is
    deleted once every batch was read (only where no task runs twice: `runs_each_task_once`)."""
    path = _path(folder, index)
    for batch in read_spill(open_arrow_file(path, "rb"), path):
        if _LETTERS in (batch.schema.metadata or {}):
            unreadable += batch.column("letter").to_pylist()
        else:
            yield batch
    if delete:
        try:
            FileSystems.delete([path])
        except OSError as err:  # Beam's BeamIOError too; the job removes the folder anyway
            _LOGGER.debug("could not delete the kept batches %s early: %s", path, err)


#: Masters whose tasks Spark runs at most once (`local`, `local[4]`, `local[*]`; not
#: `local[4,3]`, which gives each task 3 attempts, nor a cluster's, which retry a failed task).
_ONE_ATTEMPT = re.compile(r"local(\[(\*|\d+)\])?")


def runs_each_task_once(master: str, conf: dict[str, str]) -> bool:
    """Whether Spark runs each task of a session with this `master` and configuration at most
    once: a local master without a number of attempts, and no speculative copies.

    Example:
        >>> runs_each_task_once("local[2]", {}), runs_each_task_once("local[2,3]", {})
        (True, False)
        >>> runs_each_task_once("spark://host:7077", {}), runs_each_task_once("local", {"spark.speculation": "true"})
        (False, False)
    """
    speculative = conf.get("spark.speculation", "false").strip().lower() == "true"
    return bool(_ONE_ATTEMPT.fullmatch(master.strip())) and not speculative


def delete_kept(folder: str, output: str) -> None:
    """Remove the run's kept batches (and the output's `_temporary/` once empty)."""
    if FileSystems.exists(folder):
        FileSystems.delete([folder])
    remove_empty_temporary(output)
