"""The `tensorize` command's own flags: their definitions (in --help's order) and the parsing of
their list values (`a,b;c,d`)."""

from __future__ import annotations

import argparse

from beam_tensorize.job.commit import SAVE_MODES
from beam_tensorize.job.file_systems import local_path
from beam_tensorize.job.finish import EXECUTION_MODES
from beam_tensorize.job.report import REPORT_FORMATS
from beam_tensorize.kernels import formats
from beam_tensorize.kernels.formats import AUTO, format_names
from beam_tensorize.kernels.output import get_output_format, output_format_names
from beam_tensorize.kernels.report.drift import DEFAULT_DRIFT_THRESHOLD

__all__ = [
    "DEFAULT_OUTPUT",
    "SETTING_FLAGS",
    "add_flags",
    "flag_of",
    "paths",
    "shared_groups",
    "split_groups",
    "split_names",
]

#: Where the sample run writes when no --output is given.
DEFAULT_OUTPUT = "tensorize_output"

#: The flags of the job settings whose flag is not `--<setting>`.
SETTING_FLAGS = {
    "inputs": "--input",
    "extra_columns": "--extra_columns_to_keep",
    "shared_feature_lists": "--tensors_sharing_feature_lists",
}


def flag_of(setting: str) -> str:
    """The flag that gives a `TensorizeSpec` setting.

    Example:
        >>> flag_of("num_shards"), flag_of("extra_columns")
        ('--num_shards', '--extra_columns_to_keep')
    """
    return SETTING_FLAGS.get(setting, "--" + setting)


def paths(value: str) -> str:
    """A path flag's value with each `file:` URI in it (of a comma-separated list) as the local
    path it names, as Spark and Hadoop users write local paths.

    Example:
        >>> paths("file:///data/a.avro,gs://b/c.avro")
        '/data/a.avro,gs://b/c.avro'
    """
    try:
        return ",".join(local_path(part) for part in value.split(","))
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


# One flat list of flag definitions and no logic: it reads best whole, in --help's order.
def add_flags(parser: argparse.ArgumentParser) -> None:
    """Add the job's flags to `parser`."""
    parser.add_argument(
        "--input",
        type=paths,
        default=None,
        help="Input files: a file, glob or comma-separated list of them (local, gs://, "
        "s3://). With neither --input nor --config, the bundled MovieLens sample is used.",
    )
    parser.add_argument(
        "--input_date_range",
        default=None,
        help="Read the day folders <input>/daily/yyyy/MM/dd/ from the first date to the last, "
        "both included: yyyyMMdd-yyyyMMdd (Avro2TF's --input-date-range). Missing days are "
        "skipped with a note.",
    )
    parser.add_argument(
        "--input_days_range",
        default=None,
        help="Read the day folders <input>/daily/yyyy/MM/dd/ from START to END days before "
        "today, both included: START-END, e.g. 3-1 (Avro2TF's --input-days-range).",
    )
    parser.add_argument(
        "--input_format",
        default=AUTO,
        choices=(AUTO, *format_names()),
        help="Format of the input files: auto (default: told from each file's first bytes), "
        "avro, parquet, orc or tfrecord (tf.train.Example records).",
    )
    parser.add_argument(
        "--config",
        type=paths,
        default=None,
        help="Avro2TF-style tensor config (.json, .yaml/.yml or .conf/.hocon). With "
        "neither --input nor --config, the bundled sample's config is used.",
    )
    parser.add_argument(
        "--output",
        type=paths,
        default=None,
        help=f"Output folder. Default: ./{DEFAULT_OUTPUT} (only for the bundled sample).",
    )
    parser.add_argument(
        "--execution_mode",
        default="train",
        choices=(*EXECUTION_MODES, "training"),
        help="train (or Avro2TF's training) writes trainingData/, validation validationData/, "
        "test testData/.",
    )
    parser.add_argument(
        "--output_format",
        default="tfrecord",
        choices=output_format_names(),
        help="Format of the data files: tfrecord (tf.train.Example records, default), parquet "
        "(the same tensors as columns; sparse tensors as <name>/indices and <name>/values) or "
        "avro (Avro2TF's default: the tensors as record fields; a sparse tensor as a record "
        "{indices, values}).",
    )
    parser.add_argument(
        "--num_shards",
        type=int,
        default=None,
        help="Exactly this many data files (per partition folder), through a shuffle that holds "
        "the records (memory grows with the data on the DirectRunner). Default: one file per "
        "input split, written where the records are encoded, in bounded memory.",
    )
    parser.add_argument(
        "--max_records_per_file",
        type=int,
        default=None,
        help="Without --num_shards: start another data file after this many records "
        "(like Spark's maxRecordsPerFile). Default: no limit.",
    )
    parser.add_argument(
        "--compression",
        default=None,
        choices=tuple(
            dict.fromkeys(c for name in output_format_names() for c in get_output_format(name).compressions)
        ),
        help="Compression of the data files. TFRecord: none (default), gzip (.tfrecord.gz) or "
        "zlib (.tfrecord.zlib); Parquet: snappy (default), gzip, zstd or none; Avro: snappy "
        "(default), deflate, zstd or none.",
    )
    parser.add_argument(
        "--save_mode",
        default=None,
        choices=SAVE_MODES,
        help="If the split folder already holds files: error (default), overwrite, "
        "overwrite_partitions (replace only the partitions in the new data), append, or ignore "
        "(write nothing). The bundled-sample run defaults to overwrite.",
    )
    parser.add_argument(
        "--max_bad_records_ratio",
        type=float,
        default=0.0,
        help="Fail (committing nothing) when more than this fraction of records cannot be "
        "converted; bad records are written to <output>/deadLetters/ either way. Default 0.",
    )
    parser.add_argument(
        "--report",
        default="html",
        choices=REPORT_FORMATS,
        help="Run report in <output>/report/<split>.json and .html: statistics of every "
        "tensor, input file and bad-row reason, drift against the train report in the same "
        "output (see docs/report.md). html (default): the JSON and a self-contained page; "
        "json: the JSON only; none: no report.",
    )
    parser.add_argument(
        "--drift_threshold",
        type=float,
        default=DEFAULT_DRIFT_THRESHOLD,
        help="A validation or test run's report flags tensors whose distance to the train "
        f"report exceeds this (0 to 1). Default {DEFAULT_DRIFT_THRESHOLD}.",
    )
    parser.add_argument(
        "--external_feature_lists",
        type=paths,
        default=None,
        help="Folder of ready feature lists (one file per tensor, named like the tensor, one "
        "entry per line) used instead of building them; a file named after no tensor is an error.",
    )
    parser.add_argument(
        "--tensors_sharing_feature_lists",
        default=None,
        help="Groups of tensors that share one feature list built from all their entries: "
        "tensor names joined by ',' within a group and ';' between groups, e.g. 'a,b;c,d'.",
    )
    _add_switch(
        parser,
        "--filter_zeros",
        "Drop zero values from name-term-value sparse vectors (--filter_zeros, or "
        "--filter_zeros=true|false).",
    )
    _add_switch(
        parser,
        "--check_shapes",
        "Make a row whose outer dimension differs from its tensor's fixed shape (3 values for "
        "[10]) a bad record. By default it is written as it is, as Avro2TF writes it, counted in "
        "the summary, and the metadata reads that tensor back as ragged.",
    )
    _add_switch(
        parser,
        "--discard_unknown_entries",
        "Leave entries that are not in their feature list out of lists and vectors, "
        "instead of giving them the unknown id (Avro2TF's --discard-unknown-entries); a scalar "
        "keeps the unknown id.",
    )
    _add_switch(
        parser,
        "--term_only_feature_lists",
        "Train mode also writes termOnlyFeatureList/<tensor>: each feature-list tensor's "
        "terms counted alone (name-term-value names left out), as Avro2TF's "
        "--enable-term-only-feature-list.",
    )
    parser.add_argument(
        "--partition_field_name",
        default=None,
        help="A scalar tensor or extra column whose values give Avro2TF's partition ids: "
        "partitionId in the records (MD5 with Avro2TF's salt, modulo --num_partitions) and "
        "partition=<id>/ folders (Avro2TF's --partition-field-name).",
    )
    parser.add_argument(
        "--num_partitions",
        type=int,
        default=100,
        help="How many partition ids --partition_field_name gives (default 100, as Avro2TF).",
    )
    _add_switch(
        parser,
        "--shuffle",
        "Write each batch's records in a pseudo-random order drawn from --shuffle_seed and "
        "the batch's place in the input: the same input gives the same files (Avro2TF's "
        "--shuffle, made deterministic). With --num_shards the records spread over the files too.",
    )
    parser.add_argument(
        "--shuffle_seed",
        type=int,
        default=0,
        help="The seed of --shuffle (default 0).",
    )
    _add_switch(
        parser,
        "--skip_conversion",
        "Train mode: write the feature lists and the metadata only, no records (Avro2TF's "
        "--skip-conversion).",
    )
    parser.add_argument(
        "--dedup_block_size",
        type=int,
        default=None,
        help="With --output_format parquet: write blocks of this many rows with the user columns "
        "(--dedup_user_cols) stored once per distinct key (HybridBackend's deduplication; "
        "Dataset.from_output restores the rows).",
    )
    parser.add_argument(
        "--dedup_user_cols",
        default=None,
        help="Groups of columns deduplicated by their first (the key), ',' within a group and ';' "
        "between groups, e.g. 'user,user_age;item,item_price'.",
    )
    parser.add_argument(
        "--extra_columns_to_keep",
        default=None,
        help="Comma-separated input columns written as they are beside the tensors (numbers, "
        "strings, bytes or lists of them); see the metadata's extraColumns.",
    )
    parser.add_argument(
        "--partition_by",
        default=None,
        help="Comma-separated scalar tensors or extra columns that name Hive-style partition "
        "folders <split>/<col>=<value>/, outermost first (left out of the records).",
    )
    _add_switch(
        parser,
        "--verbose",
        "Show the runner's log and error tracebacks on the console (--verbose, or "
        "--verbose=true|false); without it they go to a log file named in the error line.",
    )
    _add_switch(
        parser,
        "--quiet",
        "Print nothing but errors: no progress lines, no summary.",
    )
    parser.add_argument(
        "--progress_interval",
        type=float,
        default=10.0,
        help="Seconds between progress lines (rows read and written, rows/s, elapsed time) on "
        "the DirectRunner (default 10).",
    )
    parser.add_argument("--version", action="store_true", help="Print beam_tensorize's version and exit.")
    parser.add_argument(
        "--batch_rows",
        type=int,
        default=formats.DEFAULT_BATCH_ROWS,
        help=f"Rows per Arrow record batch read from the input (default {formats.DEFAULT_BATCH_ROWS}).",
    )
    parser.add_argument(
        "--split_bytes",
        type=int,
        default=formats.DEFAULT_SPLIT_BYTES,
        help="About how many bytes of input one split reads (default 64 MiB): smaller splits "
        "give more parallel tasks and, without --num_shards, more output files "
        "(Avro2TF's --min-parts).",
    )
    parser.add_argument(
        "--input_passes",
        type=int,
        choices=(1, 2),
        default=None,
        help="How often train mode reads and decodes the input. 1: once, keeping the extracted "
        "rows in the output's _temporary/ folder (about the size of the uncompressed tensors) "
        "until the feature lists are counted; 2: a first read of only the feature-list columns, "
        "then a second of everything. Default: 1 when the output is on a local disk, 2 on "
        "object stores (gs://, s3://).",
    )


def _boolean(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def _add_switch(parser: argparse.ArgumentParser, name: str, help: str) -> None:
    """An on/off flag: `--name` alone, or `--name=true|false` (also `--name true`)."""
    parser.add_argument(name, type=_boolean, nargs="?", const=True, default=False, help=help)


def split_names(text: str | None) -> list[str]:
    """The names of a comma-separated flag value, blanks dropped."""
    return [name.strip() for name in (text or "").split(",") if name.strip()]


def shared_groups(text: str | None) -> list[list[str]]:
    """The groups of `--tensors_sharing_feature_lists` (`a,b;c,d,e`, blanks and a trailing `;`
    allowed), checked as Avro2TF's parser checks them: at least one group, each of two or more
    names, no name in two groups. None (the flag not given): no groups.

    Example:
        >>> shared_groups(" a, b ; c,d,e;")
        [['a', 'b'], ['c', 'd', 'e']]
    """
    if text is None:
        return []
    flag = "--tensors_sharing_feature_lists"
    groups = _groups(text)
    if not groups:
        raise ValueError(f"{flag}: {text!r} names no group; give groups like a,b;c,d (or leave the flag out)")
    seen: set[str] = set()
    for group, names in groups:
        if len(names) < 2:
            raise ValueError(f"{flag}: group {group!r} needs two or more tensor names")
        twice = sorted(seen.intersection(names))
        if twice or len(set(names)) < len(names):
            name = twice[0] if twice else next(n for n in names if names.count(n) > 1)
            raise ValueError(f"{flag}: tensor {name!r} is in two groups")
        seen.update(names)
    return [names for _, names in groups]


def split_groups(text: str | None) -> list[list[str]]:
    """The names of each `;`-separated group of a flag value (`a,b;c,d`), empty groups dropped.

    Example:
        >>> split_groups("user,user_age;item,item_price;")
        [['user', 'user_age'], ['item', 'item_price']]
    """
    return [names for _, names in _groups(text)]


def _groups(text: str | None) -> list[tuple[str, list[str]]]:
    """(text, names) of each `;`-separated group of a flag value (`a,b;c,d`); an empty group (a
    trailing `;`, as Avro2TF allows) is dropped."""
    return [(group, split_names(group)) for group in (text or "").split(";") if group.strip()]
