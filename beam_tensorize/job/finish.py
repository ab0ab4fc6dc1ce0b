"""The finishing steps of a tensorize job, in the order both runtimes run them: dead letters and
the bad-record check, then one commit (`commit_split`) of the data, the split's metadata entry
(and `metadata/schema.pbtxt`), the feature lists, the staged run report, the dead letters and
the `_SUCCESS` markers; plus the checks of settings they share.

The Beam `Tensorize` runs them as `beam.Map` steps, `tensorize_spark` on its driver, so both
give the same files.
"""

from __future__ import annotations

import base64
import json
import posixpath
import uuid
from typing import TYPE_CHECKING

from beam_tensorize.job.commit import SUCCESS_FILE, TEMP_FOLDER, PendingFiles, commit_files
from beam_tensorize.job.feature_lists import FEATURE_LIST_FOLDER, read_feature_lists
from beam_tensorize.job.files import list_files, read_text, write_text_atomically
from beam_tensorize.job.metadata import MetadataInputs, MetadataSettings, write_run_metadata
from beam_tensorize.job.report import schema_string_domains, stage_statistics_proto, staged_report
from beam_tensorize.job.transaction import CommitConflict, Transaction
from beam_tensorize.kernels.features.conversion import layout_for_column
from beam_tensorize.kernels.metadata import METADATA_FILE, SPLIT_FOLDERS, sum_counts
from beam_tensorize.kernels.output.dedup import index_column
from beam_tensorize.kernels.partitions import PARTITION_ID_COLUMN, PARTITION_ID_LAYOUT

if TYPE_CHECKING:  # the spec's module imports this one
    from beam_tensorize.job.spec import TensorizeSpec

__all__ = [
    "BAD",
    "DEAD_LETTER_FILE",
    "DEAD_LETTER_FOLDER",
    "EXECUTION_MODES",
    "GOOD",
    "OFF_SHAPE",
    "SPLIT_FOLDERS",
    "check_bad_records",
    "commit_dead_letters",
    "dead_letter_json",
    "describe_split",
    "extra_layouts",
    "first_layouts",
    "ignoring_existing",
    "commit_split",
    "describe_blocks",
    "MetadataInputs",
]

#: The execution modes (`SPLIT_FOLDERS` gives the folder each one's records go to).
EXECUTION_MODES = tuple(SPLIT_FOLDERS)
DEAD_LETTER_FOLDER = "deadLetters"
DEAD_LETTER_FILE = "part-00000-of-00001.jsonl"
#: Where a run that failed the bad-record check leaves its dead letters (below the split's).
FAILED_FOLDER = "_failed"
GOOD, BAD, OFF_SHAPE = "good", "bad", "off_shape"


def extra_layouts(batch, names: tuple[str, ...]) -> tuple:
    """How the extra columns of a batch are stored (`layout_for_column` of each; Avro2TF's
    `partitionId` is a scalar int, as its metadata says)."""
    return tuple(
        PARTITION_ID_LAYOUT if n == PARTITION_ID_COLUMN else layout_for_column(n, batch.schema.field(n).type)
        for n in names
    )


def first_layouts(candidates) -> tuple:
    """The extra columns' layouts, the same on every runner whatever batch came first."""
    found = [c for c in candidates if c]
    return min(found, key=repr) if found else ()


def ignoring_existing(split_dir: str, save_mode: str) -> bool:
    """Save mode `ignore` and the split folder holds files: the job writes nothing."""
    return save_mode == "ignore" and bool(list_files(posixpath.join(split_dir, "**")))


def check_bad_records(grouped, folder: str, max_ratio: float, ignoring: bool = False) -> dict:
    """Write every bad record as sorted JSON lines, then fail the job if too many rows were bad;
    else the counts. (Nothing is written when ignoring.)

    The lines go to `<folder>/_temporary/<id>.jsonl` and `commit_split` moves them into place
    with the rest of the output, so a failed run never replaces the dead letters of the output
    it leaves as it was; a run that fails the check leaves its lines in
    `<folder>/_failed/part-00000-of-00001.jsonl` for inspection (named in the error).
    """
    good, lines, off_shape = 0, [], {}
    for kind, value in grouped[1]:
        if kind == GOOD:
            good += value
        elif kind == OFF_SHAPE:
            off_shape = sum_counts(off_shape, value)
        else:
            lines.append(value)
    lines.sort()
    kept = {"offShape": off_shape} if off_shape else {}
    if ignoring:
        return {"numRecords": good, "badRecords": len(lines), **kept}
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
    return {"numRecords": good, "badRecords": bad, "deadLetters": pending, **kept}


def _first_reason(lines: list[str]) -> str:
    """Where and why, of the dead letter (JSON lines) that comes first in the input."""

    def place(letter: dict) -> tuple:
        return str(letter.get("source")), letter.get("offset") or 0, letter.get("record") or 0

    letter = min((json.loads(line) for line in lines), key=place)
    where = str(letter.get("source", "?"))
    if letter.get("offset") is not None and "record" in letter:
        where += f" (offset {letter['offset']}, record {letter['record']})"
    return f"{where}: {letter.get('reason', '?')}"


def commit_dead_letters(counts: dict, folder: str, txn: Transaction) -> None:
    """As part of the commit `txn`: this run's dead letters become
    `<folder>/part-00000-of-00001.jsonl`, and those of an earlier failed run (`_failed/`) go."""
    pending = counts.get("deadLetters")
    if pending is None:
        return
    txn.move(pending, posixpath.join(folder, DEAD_LETTER_FILE))
    failed = posixpath.join(folder, FAILED_FOLDER)
    txn.delete(list_files(posixpath.join(failed, "**")))
    txn.cleanup(failed)


def describe_split(
    written: dict,
    split: str,
    counts: dict,
    partition_by: tuple[str, ...] = (),
    output_format: str = "tfrecord",
    appended_to: dict | None = None,
) -> dict:
    """The metadata's `data` entry of the committed split. `appended_to`: the split's entry in
    the metadata before an append (its files and counts are kept, the new ones added).
    `offShape` counts the rows kept off their tensor's fixed shape (see `OFF_SHAPE`)."""
    info = {
        "format": output_format,
        "files": written["files"],
        "numRecords": written["numRecords"],
        "badRecords": counts["badRecords"],
    }
    off_shape = sum_counts(counts.get("offShape"), (appended_to or {}).get("offShape"))
    if off_shape:
        info["offShape"] = off_shape
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


def describe_blocks(splits: dict, split: str, counts: dict, block_size: int, groups) -> dict:
    """The split's entry for deduplicated blocks: `numRecords` counts rows (the files hold
    `numBlocks` rows of blocks), and `deduplication` says how to restore them."""
    info = dict(splits[split])
    info["numBlocks"] = info["numRecords"]
    info["numRecords"] = counts["numRecords"]
    info["deduplication"] = {
        "blockSize": block_size,
        "groups": [list(g) for g in groups],
        "indexes": [index_column(g[0]) for g in groups],
    }
    return {**splits, split: info}


def _check_same_lists(spec: TensorizeSpec, inputs: MetadataInputs, previous: dict | None) -> None:
    """Under the commit lock: another run's commit since this run started must not have changed
    the feature lists this run's records are indexed with."""
    out = spec.output
    appending_train = spec.save_mode == "append" and spec.execution_mode == "train"
    changed = appending_train and (previous is not None) != inputs.lists_from_output
    if not changed and inputs.lists_from_output and spec.external_feature_lists is None:  # external
        # lists override the output's own: they are not the output's to compare
        names = list(inputs.lists)
        now = read_feature_lists(
            [posixpath.join(out, FEATURE_LIST_FOLDER)], names, required=False, metadata_dir=out
        )
        changed = any(now[n].entries != inputs.lists[n].entries for n in now if n in inputs.lists)
    if changed:
        raise CommitConflict(
            f"another run committed to {out} while this one ran, with other feature lists than "
            "this run's records are indexed with; nothing of this run was committed and the output "
            "is as that run left it; run this one again"
        )


def commit_split(
    spec: TensorizeSpec, run: str, pending: PendingFiles | None, counts: dict | None, inputs: MetadataInputs
) -> dict:
    """Commit a run's split into its output in one `Transaction`: the data files, the metadata
    (`tensor_metadata.json`, and `schema.pbtxt` for TFRecord output) and feature lists, the dead
    letters, the report staged by `write_report(target=...)` with its `<split>.stats.pb`, and
    the `_SUCCESS` markers of the split and the output, all decided under the output's lock
    against what the output holds then (two runs appending at once are both listed).

    Args:
        spec: the job's settings.
        run: the run's id (its staging folder, `staging_folder(spec.output, run)`).
        pending: the data files written (None: Avro2TF's --skip-conversion, metadata only).
        counts: what `check_bad_records` said.
        inputs: the metadata's other inputs.

    Returns:
        the job's summary: `output`, `split`, `files`, `numRecords`, `badRecords`,
        `metadata`, `offShape` when rows were kept off their fixed shape (or `skipped`, or
        `conversionSkipped`).
    """
    out, split = spec.output, spec.split
    with Transaction(out, run) as txn:
        if pending is None:
            settings = MetadataSettings.of(spec)._replace(add_to_recorded=False)
            metadata = write_run_metadata({}, settings, inputs, txn)
            txn.mark(posixpath.join(out, SUCCESS_FILE))  # the job is complete: its lists and metadata
            return {"output": out, "split": split, "files": [], "numRecords": 0, "metadata": metadata,
                    "conversionSkipped": True}  # fmt: skip
        committed = commit_files(pending.written, pending.plan, pending.checked, txn=txn)
        if committed["skipped"]:
            txn.abort()
            return {"output": out, "split": split, "skipped": True, "files": [], "numRecords": 0}
        previous = appending_to(out, split, spec.save_mode)
        _check_same_lists(spec, inputs, previous)
        splits = describe_split(committed, split, counts, spec.folder_columns, spec.output_format, previous)
        if spec.dedup_block_size:
            splits = describe_blocks(splits, split, counts, spec.dedup_block_size, spec.dedup_user_cols)
        report = staged_report(txn, out, split)  # (read once: the schema's domains, the stats.pb)
        metadata = write_run_metadata(
            splits,
            MetadataSettings.of(spec),
            inputs._replace(write_lists=inputs.write_lists and previous is None),
            txn,
            schema_string_domains(out, split, report, spec.save_mode == "append"),
        )
        stage_statistics_proto(txn, out, split, report, inputs.lists)  # beside a staged report
        commit_dead_letters(counts, posixpath.join(out, DEAD_LETTER_FOLDER, split), txn)
        for folder in (posixpath.join(out, split), out):  # the split's too, as Avro2TF writes it
            txn.mark(posixpath.join(folder, SUCCESS_FILE))
    info = splits[split]
    return {
        "output": out,
        "split": split,
        "files": [posixpath.join(out, split, name) for name in info["files"]],
        "numRecords": info["numRecords"],
        "badRecords": info["badRecords"],
        "metadata": metadata,
        **({"offShape": counts["offShape"]} if counts.get("offShape") else {}),
    }


def dead_letter_json(record: dict) -> str:
    """One dead-letter record as a JSON line (bytes as base64, other odd values as text)."""
    return json.dumps(record, sort_keys=True, default=_json_default, allow_nan=True)


def _json_default(value):
    if isinstance(value, (bytes, bytearray)):
        return {"base64": base64.b64encode(bytes(value)).decode()}
    return str(value)
