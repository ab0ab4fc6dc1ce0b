"""The finishing steps of a tensorize job, in the order both runtimes run them: dead letters and
the bad-record check, removing `_SUCCESS` before the commit, the split's metadata entry, and
`_SUCCESS` written last; plus the checks of settings they share.

The Beam `Tensorize` runs them as `beam.Map` steps, `tensorize_spark` on its driver, so both
give the same files.
"""

from __future__ import annotations

import base64
import json
import posixpath
import uuid

from beam_tensorize.config.model import TensorizeConfig
from beam_tensorize.job.commit import SUCCESS_FILE, TEMP_FOLDER, remove_empty_temporary
from beam_tensorize.job.files import FileSystems, create_file, list_files, read_text, write_text_atomically
from beam_tensorize.kernels.features.conversion import layout_for_column, layout_of
from beam_tensorize.kernels.metadata import METADATA_FILE

__all__ = [
    "BAD",
    "DEAD_LETTER_FILE",
    "DEAD_LETTER_FOLDER",
    "EXECUTION_MODES",
    "GOOD",
    "SPLIT_FOLDERS",
    "check_bad_records",
    "check_partition_columns",
    "commit_dead_letters",
    "dead_letter_json",
    "describe_split",
    "extra_layouts",
    "first_layouts",
    "ignoring_existing",
    "remove_success_marker",
    "write_success",
]

#: Execution mode -> folder the records go to.
SPLIT_FOLDERS = {"train": "trainingData", "validation": "validationData", "test": "testData"}
EXECUTION_MODES = tuple(SPLIT_FOLDERS)
DEAD_LETTER_FOLDER = "deadLetters"
DEAD_LETTER_FILE = "part-00000-of-00001.jsonl"
#: Where a run that failed the bad-record check leaves its dead letters (below the split's).
FAILED_FOLDER = "_failed"
GOOD, BAD = "good", "bad"


def extra_layouts(batch, names: tuple[str, ...]) -> tuple:
    """How the extra columns of a batch are stored (`layout_for_column` of each)."""
    return tuple(layout_for_column(n, batch.schema.field(n).type) for n in names)


def first_layouts(candidates) -> tuple:
    """The extra columns' layouts, the same on every runner whatever batch came first."""
    found = [c for c in candidates if c]
    return min(found, key=repr) if found else ()


def check_partition_columns(
    config: TensorizeConfig, names: tuple[str, ...], extra: tuple[str, ...], setting: str = "partition_by"
) -> None:
    """Partition columns must be scalar tensors or extra columns (checked when built); errors
    name the `setting` that gave them."""
    tensors = {t.name: t for t in config.tensors}
    for name in names:
        if name in tensors:
            layout = layout_of(tensors[name])
            if layout.kind != "fixed_len" or layout.shape != ():
                raise ValueError(
                    f"{setting}: tensor {name!r} is not a scalar (shape {list(layout.shape)}, "
                    f"{layout.kind}); only one value per record can name a folder"
                )
        elif name not in extra:
            raise ValueError(
                f"{setting}: {name!r} is neither a tensor ({', '.join(tensors)}) nor an extra column"
            )
    if len(set(names)) != len(names):
        raise ValueError(f"{setting}: {list(names)} names a column twice")


def ignoring_existing(split_dir: str, save_mode: str) -> bool:
    """Save mode `ignore` and the split folder holds files: the job writes nothing."""
    return save_mode == "ignore" and bool(list_files(posixpath.join(split_dir, "**")))


def check_bad_records(grouped, folder: str, max_ratio: float, ignoring: bool = False) -> dict:
    """Write every bad record as sorted JSON lines, then fail the job if too many rows were bad;
    else the counts. (Nothing is written when ignoring.)

    The lines go to `<folder>/_temporary/<id>.jsonl` and `write_success` moves them into place
    with the rest of the output, so a failed run never replaces the dead letters of the output
    it leaves as it was; a run that fails the check leaves its lines in
    `<folder>/_failed/part-00000-of-00001.jsonl` for inspection (named in the error).
    """
    good, lines = 0, []
    for kind, value in grouped[1]:
        if kind == GOOD:
            good += value
        else:
            lines.append(value)
    lines.sort()
    if ignoring:
        return {"numRecords": good, "badRecords": len(lines)}
    text = "".join(f"{line}\n" for line in lines)
    bad, total = len(lines), good + len(lines)
    if bad and bad / total > max_ratio:
        failed = posixpath.join(folder, FAILED_FOLDER, DEAD_LETTER_FILE)
        write_text_atomically(failed, text)
        raise ValueError(
            f"{bad} of {total} records could not be converted ({bad / total:.2%} > the allowed "
            f"{max_ratio:.2%}); nothing was committed. See the reasons in {failed} (the first: "
            f"{_first_reason(lines)}); fix the input, or allow more bad records with "
            "--max_bad_records_ratio"
        )
    pending = posixpath.join(folder, TEMP_FOLDER, f"{uuid.uuid4().hex}.jsonl")
    write_text_atomically(pending, text)
    return {"numRecords": good, "badRecords": bad, "deadLetters": pending}


def _first_reason(lines: list[str]) -> str:
    """Where and why, of the dead letter (JSON lines) that comes first in the input."""

    def place(letter: dict) -> tuple:
        return str(letter.get("source")), letter.get("offset") or 0, letter.get("record") or 0

    letter = min((json.loads(line) for line in lines), key=place)
    where = str(letter.get("source", "?"))
    if letter.get("offset") is not None and "record" in letter:
        where += f" (offset {letter['offset']}, record {letter['record']})"
    return f"{where}: {letter.get('reason', '?')}"


def commit_dead_letters(counts: dict, folder: str) -> None:
    """Move this run's dead letters into `<folder>/part-00000-of-00001.jsonl` and remove those
    of an earlier failed run (`_failed/`); `_temporary/` goes once empty (a job running beside
    this one may have its own there; what killed runs left is removed when a run starts, see
    `beam_tensorize.job.preflight.remove_stale_temporaries`)."""
    pending = counts.get("deadLetters")
    if pending is None:
        return
    final = posixpath.join(folder, DEAD_LETTER_FILE)
    if FileSystems.exists(final):
        FileSystems.delete([final])
    FileSystems.rename([pending], [final])
    failed = posixpath.join(folder, FAILED_FOLDER)
    files = list_files(posixpath.join(failed, "**"))
    if files:
        FileSystems.delete(files)
    if FileSystems.exists(failed):  # an emptied local folder (object stores have none)
        FileSystems.delete([failed])
    remove_empty_temporary(folder)


def remove_success_marker(counts: dict, out: str, ignoring: bool = False) -> dict:
    """Delete `<out>/_SUCCESS` before the commit (readers see the output as incomplete)."""
    marker = posixpath.join(out, SUCCESS_FILE)
    if not ignoring and FileSystems.exists(marker):
        FileSystems.delete([marker])
    return counts


def describe_split(
    written: dict,
    split: str,
    counts: dict,
    partition_by: tuple[str, ...] = (),
    output_format: str = "tfrecord",
    appended_to: dict | None = None,
) -> dict:
    """The metadata's `data` entry of the committed split. `appended_to`: the split's entry in
    the metadata before an append (its files and counts are kept, the new ones added)."""
    info = {
        "format": output_format,
        "files": written["files"],
        "numRecords": written["numRecords"],
        "badRecords": counts["badRecords"],
    }
    if appended_to:
        info["files"] = [
            *appended_to.get("files", []),
            *(f for f in info["files"] if f not in appended_to.get("files", [])),
        ]
        info["numRecords"] += appended_to.get("numRecords", 0)
        info["badRecords"] += appended_to.get("badRecords", 0)
    if partition_by:  # the files sit in <col>=<value>/ folders; the values are not in the records
        info["partitionColumns"] = list(partition_by)
    return {split: info}


def appending_to(out: str, split: str, save_mode: str) -> dict | None:
    """With save mode `append`, the split's entry in the output's metadata now (None if it has
    none): read before the commit, as `describe_split`'s `appended_to`."""
    if save_mode != "append":
        return None
    document = read_text(posixpath.join(out, METADATA_FILE))
    return json.loads(document).get("data", {}).get(split) if document else None


def write_success(
    metadata_path: str, out: str, split: str, splits: dict, counts: dict | None = None, *_after
) -> dict:
    """Move the dead letters into place (`commit_dead_letters`), then write
    `<out>/<split>/_SUCCESS` and `<out>/_SUCCESS` last; returns the job's summary dict.
    `_after`: side inputs that only order this step after others (the run report)."""
    if counts is not None:
        commit_dead_letters(counts, posixpath.join(out, DEAD_LETTER_FOLDER, split))
    for folder in (posixpath.join(out, split), out):  # the split's too, as Avro2TF writes it
        with create_file(posixpath.join(folder, SUCCESS_FILE)):
            pass
    info = splits[split]
    return {
        "output": out,
        "split": split,
        "files": [posixpath.join(out, split, name) for name in info["files"]],
        "numRecords": info["numRecords"],
        "badRecords": info["badRecords"],
        "metadata": metadata_path,
    }


def dead_letter_json(record: dict) -> str:
    """One dead-letter record as a JSON line (bytes as base64, other odd values as text)."""
    return json.dumps(record, sort_keys=True, default=_json_default, allow_nan=True)


def _json_default(value):
    if isinstance(value, (bytes, bytearray)):
        return {"base64": base64.b64encode(bytes(value)).decode()}
    return str(value)
