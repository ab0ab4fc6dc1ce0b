"""Avro2TF's command-line flags (`--input-paths`, `--working-dir`, ...) as aliases of ours.

A user moving from Avro2TF keeps the flags of their job: each is rewritten to the flag of
`pipelines.tensorize` that does the same; the flags that mean nothing on Beam are accepted
with a one-line note saying what happens instead.

Example:
    >>> translate(["--input-paths", "a.avro", "--working-dir=out", "--enable-cache", "true", "--min-parts", "4"])
    (['--input', 'a.avro', '--output=out', '--input_passes', '1'], ['--min-parts: Beam plans input splits from the file sizes (--split_bytes), so there is no minimum number of partitions to set'])
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["ALIASES", "translate"]

#: Avro2TF flag -> our flag (the values mean the same).
ALIASES = {
    "input-paths": "input",
    "working-dir": "output",
    "avro2tf-config-path": "config",
    "tensorize-in-config-path": "config",
    "execution-mode": "execution_mode",
    "train-mode": "execution_mode",
    "output-format": "output_format",  # Avro2TF's values avro / tfrecord are ours too
    "extra-columns-to-keep": "extra_columns_to_keep",
    "tensors-sharing-feature-lists": "tensors_sharing_feature_lists",
    "external-feature-list-path": "external_feature_lists",
    "enable-filter-zero": "filter_zeros",
    "discard-unknown-entries": "discard_unknown_entries",
    "num-output-files": "num_shards",
    "enable-term-only-feature-list": "term_only_feature_lists",
    "input-date-range": "input_date_range",
    "input-days-range": "input_days_range",
    "partition-field-name": "partition_field_name",
    "num-partitions": "num_partitions",
    "shuffle": "shuffle",
    "skip-conversion": "skip_conversion",
}

#: Avro2TF flags with no meaning on Beam: accepted (with their value), with a note.
_NOTED = {
    "min-parts": "Beam plans input splits from the file sizes (--split_bytes), so there is no "
    "minimum number of partitions to set",
}


def translate(argv: Sequence[str]) -> tuple[list[str], list[str]]:
    """`argv` with Avro2TF's flags rewritten to ours, and the notes to print.

    `--num-output-files -1` (Avro2TF's "as the data comes") is dropped: one file per input
    split is our default. `--enable-cache true` (Avro2TF persists the extracted rows between
    counting the feature lists and converting) is `--input_passes 1`, which keeps them on disk;
    `--enable-cache false` leaves the choice to the default. Avro2TF's names are recognised
    with `_` too (`--num_output_files`).
    """
    out: list[str] = []
    notes: list[str] = []
    args = list(argv)
    i = 0
    while i < len(args):
        token = args[i]
        name, eq, value = token[2:].partition("=") if token.startswith("--") else ("", "", "")
        name = name.replace("_", "-")  # --num_output_files is Avro2TF's --num-output-files too
        if name == "enable-cache":
            separate = not eq and i + 1 < len(args) and not args[i + 1].startswith("--")
            value = args[i + 1] if separate else value or "true"
            i += 2 if separate else 1
            if value.strip().lower() == "true":
                out += ["--input_passes", "1"]
            continue
        if name in _NOTED:
            takes_value = not eq and i + 1 < len(args) and not args[i + 1].startswith("--")
            notes.append(f"--{name}: {_NOTED[name]}")
            i += 2 if takes_value else 1
            continue
        if name in ALIASES:
            separate = not eq and i + 1 < len(args) and not args[i + 1].startswith("--")
            if separate:
                value = args[i + 1]
            i += 2 if separate else 1
            if name == "num-output-files" and value.strip() == "-1":
                continue
            flag = f"--{ALIASES[name]}"
            out += [flag, value] if separate else [f"{flag}{eq}{value}"]
            continue
        out.append(token)
        i += 1
    return out, notes
