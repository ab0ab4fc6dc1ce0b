"""`TensorizeSpec`: every setting of a tensorize job in one frozen object, validated once.

The CLI builds one from its flags, the Beam `Tensorize` transform and `tensorize_spark` take one
(or build one from their keyword arguments), so all three accept exactly the same settings with
the same messages. Validation needs no I/O: a spec can be built far from the data (a flex
template launcher).

Example:
    >>> from beam_tensorize.config import load_config
    >>> from beam_tensorize.sample import SAMPLE_CONFIG
    >>> spec = TensorizeSpec(load_config(SAMPLE_CONFIG), "out", output_format="parquet")
    >>> spec.compression, spec.split, spec.split_dir
    ('snappy', 'trainingData', 'out/trainingData')
    >>> TensorizeSpec(load_config(SAMPLE_CONFIG), "out", num_shards=0)
    Traceback (most recent call last):
    ...
    beam_tensorize.job.spec.SettingError: num_shards must be a positive integer, got 0
"""

from __future__ import annotations

import dataclasses
import os
import posixpath
from collections.abc import Callable

from beam_tensorize.config import load_config
from beam_tensorize.config.errors import TensorizeError
from beam_tensorize.config.model import TensorizeConfig
from beam_tensorize.job.commit import SAVE_MODES
from beam_tensorize.job.feature_lists import feature_list_groups
from beam_tensorize.job.file_systems import _is_local, local_path
from beam_tensorize.job.finish import EXECUTION_MODES, SPLIT_FOLDERS
from beam_tensorize.job.report import REPORT_FORMATS
from beam_tensorize.kernels import formats
from beam_tensorize.kernels.features.conversion import layout_of
from beam_tensorize.kernels.features.extract import extra_column_names, input_columns
from beam_tensorize.kernels.output import get_output_format, output_format_names
from beam_tensorize.kernels.partitions import PARTITION_FOLDER_COLUMN, PARTITION_ID_COLUMN
from beam_tensorize.kernels.report.drift import DEFAULT_DRIFT_THRESHOLD
from beam_tensorize.kernels.serving.settings import TransformSettings

__all__ = ["SettingError", "TensorizeSpec"]

#: How a message names a setting: the identity here, flag names in the CLI.
Naming = Callable[[str], str]


def _as_is(name: str) -> str:
    return name


class SettingError(TensorizeError, ValueError):
    """A bad setting. The message names its settings through a function, so that a front end
    can say them its own way (the CLI: `--num_shards` for `num_shards`).

    Example:
        >>> err = SettingError(lambda n: f"give {n('num_shards')} or {n('max_records_per_file')}")
        >>> str(err), err.naming(lambda name: "--" + name)
        ('give num_shards or max_records_per_file', 'give --num_shards or --max_records_per_file')
    """

    def __init__(self, message: Callable[[Naming], str]):
        self._message = message
        super().__init__(message(_as_is))

    def naming(self, name: Naming) -> str:
        """The message with every setting named by `name`."""
        return self._message(name)

    def __reduce__(self):  # the message function need not pickle: the text travels
        return ValueError, (str(self),)


#: Other names of execution modes (Avro2TF's `training`).
_MODE_ALIASES = {"training": "train"}


def _positive(name: str, value) -> None:
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise SettingError(lambda n: f"{n(name)} must be a positive integer, got {value!r}")


def _fraction(name: str, value) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= value <= 1.0:
        raise SettingError(lambda n: f"{n(name)} must be between 0 and 1, got {value!r}")


def _names(name: str, value) -> tuple[str, ...]:
    if isinstance(value, str):
        raise TypeError(f"{name} must be a list of names, not the string {value!r}")
    names = tuple(value)
    if not all(isinstance(n, str) and n for n in names):
        raise ValueError(f"{name} must hold non-empty names, got {list(names)!r}")
    return names


@dataclasses.dataclass(frozen=True)
class TensorizeSpec:
    """The settings of one tensorize job (see `beam_tensorize.transforms.Tensorize`).

    Attributes:
        config: the parsed config (a path is loaded).
        output: the output folder (local, gs://, s3://, ...; a `file:` URI is read as the
            local path it names, here and in `inputs`, `config` and `external_feature_lists`).
        inputs: input files or globs, read by `Tensorize` applied to the pipeline and by
            `tensorize_spark` (a `Tensorize` applied to record batches needs none).
        input_format: "auto", "avro", "parquet", "orc" or "tfrecord".
        execution_mode: "train" (or Avro2TF's "training"), "validation" or "test".
        output_format: "tfrecord", "parquet" or "avro".
        num_shards: data files per folder, written through a shuffle; None (default): one
            file per input split (and per `max_records_per_file`), written with no shuffle.
        max_records_per_file: with `num_shards` None, start another file after this many
            records (None: no limit).
        compression: the data files' compression (None: the format's default, "none" for
            TFRecord, "snappy" for Parquet and Avro).
        save_mode: "error", "overwrite", "overwrite_partitions", "append" or "ignore".
        max_bad_records_ratio: fail, committing nothing, past this share of bad rows.
        shared_feature_lists: groups of tensors sharing one feature list.
        external_feature_lists: a folder of ready feature lists.
        filter_zeros: drop zeros from name-term-value sparse vectors.
        check_shapes: a row whose outer dimension differs from its tensor's fixed shape (3
            values for `[10]`) is a bad record. By default it is written as it is, as Avro2TF
            writes it, counted (`offShape` in the metadata's `data` entry and the summary), and
            the metadata reads that tensor back as ragged.
        discard_unknown_entries: leave entries that are not in their feature list out of lists
            and vectors instead of giving them the unknown id (Avro2TF's
            --discard-unknown-entries; scalars keep the unknown id).
        term_only_feature_lists: train mode also writes `termOnlyFeatureList/<tensor>`: each
            list tensor's terms counted alone (NTV names left out), as Avro2TF's
            --enable-term-only-feature-list.
        extra_columns: input columns written as they are: names, or Avro2TF's
            `expression:name` (`words.term:terms`).
        partition_by: scalar tensors or extra columns naming `<col>=<value>/` folders.
        partition_field_name: a scalar tensor or extra column whose values give Avro2TF's
            partition ids (`partitionId` in the records, `partition=<id>/` folders; see
            `beam_tensorize.kernels.partitions.with_partition_ids`).
        num_partitions: how many partition ids (Avro2TF's default, 100).
        shuffle: write the records of each batch in a pseudo-random order drawn from
            `shuffle_seed` and the batch's place in the input (Avro2TF's --shuffle, made
            deterministic; with `num_shards` the records are spread over the files too).
        skip_conversion: train mode writes the feature lists and the metadata only, no records
            (Avro2TF's --skip-conversion).
        dedup_block_size, dedup_user_cols: Parquet output written in blocks of this many rows
            with each group's `[key, value, ...]` columns stored once per distinct key
            (HybridBackend's deduplication; `Dataset.from_output` restores the rows).
        report: the run report written to `<output>/report/<split>.json|html`, with
            `<split>.stats.pb` beside it (see docs/report.md): "none" (the default here; the
            CLI's default is "html"), "json" or "html" (the JSON and the page). `Tensorize` and
            `tensorize_spark` write the same report.
        drift_threshold: a validation / test run's report flags the tensors whose distance to
            the train report of the same output exceeds this (0..1).
        batch_rows: rows per batch read.
        split_bytes: about how many bytes one input split reads.
        input_passes: how often train mode reads and decodes its input. 1: once; the
            extracted batches are kept in files under `<output>/_temporary/<run>/kept/` (about
            the size of the uncompressed tensors, ~430 bytes per row of the bundled config)
            until the feature lists are counted, then read back, and removed with the run's
            other temporary files. 2: the feature lists are counted from a first read of only
            the columns they need, then the input is read again. None (the default): 1 when
            the output is on a local disk, 2 on object stores (gs://, s3://, ...), where
            writing and reading the kept files back costs more than decoding again. (Other
            modes read once; `skip_conversion` counts from its only read.)

    Raises:
        ValueError / TypeError: a setting is invalid; the message names it.
    """

    config: TensorizeConfig
    output: str
    inputs: tuple[str, ...] = ()
    input_format: str = formats.AUTO
    execution_mode: str = "train"
    output_format: str = "tfrecord"
    num_shards: int | None = None
    max_records_per_file: int | None = None
    compression: str | None = None
    save_mode: str = "error"
    max_bad_records_ratio: float = 0.0
    shared_feature_lists: tuple[tuple[str, ...], ...] = ()
    external_feature_lists: str | None = None
    filter_zeros: bool = False
    check_shapes: bool = False
    discard_unknown_entries: bool = False
    term_only_feature_lists: bool = False
    extra_columns: tuple[str, ...] = ()
    partition_by: tuple[str, ...] = ()
    partition_field_name: str | None = None
    num_partitions: int = 100
    shuffle: bool = False
    shuffle_seed: int = 0
    skip_conversion: bool = False
    dedup_block_size: int | None = None
    dedup_user_cols: tuple[tuple[str, ...], ...] = ()
    report: str = "none"
    drift_threshold: float = DEFAULT_DRIFT_THRESHOLD
    batch_rows: int = formats.DEFAULT_BATCH_ROWS
    split_bytes: int = formats.DEFAULT_SPLIT_BYTES
    input_passes: int | None = None

    def __post_init__(self):
        # One check per subject, in this order (a setting's check may rely on earlier ones).
        self._check_config()
        self._check_output_and_inputs()
        self._check_modes()
        self._check_files()
        self._check_output_format()
        self._check_bad_records()
        self._check_feature_lists()
        extra = self._check_extra_columns()
        self._check_partitions(extra)
        self._check_skip_conversion()
        self._check_dedup()
        self._check_report()
        _positive("batch_rows", self.batch_rows)
        _positive("split_bytes", self.split_bytes)
        if self.input_passes not in (None, 1, 2) or isinstance(self.input_passes, bool):
            raise SettingError(lambda n: f"{n('input_passes')} must be 1 or 2, got {self.input_passes!r}")

    def _set(self, name: str, value) -> None:
        """Store a normalised setting (the dataclass is frozen)."""
        object.__setattr__(self, name, value)

    def _check_config(self) -> None:
        config = self.config
        if isinstance(config, (str, os.PathLike)):
            config = load_config(local_path(os.fspath(config)))
        if not isinstance(config, TensorizeConfig):
            raise TypeError(
                f"config must be a TensorizeConfig or a config file path, got {type(config).__name__}"
            )
        self._set("config", config)

    def _check_output_and_inputs(self) -> None:
        if not isinstance(self.output, str) or not self.output.strip():
            raise TypeError(f"output must be a non-empty folder path, got {self.output!r}")
        self._set("output", local_path(self.output).rstrip("/") or "/")
        inputs = (self.inputs,) if isinstance(self.inputs, str) else tuple(self.inputs)
        if not all(isinstance(p, str) and p.strip() for p in inputs):
            raise ValueError(f"inputs must be non-empty file patterns, got {list(inputs)!r}")
        self._set("inputs", tuple(local_path(p) for p in inputs))
        if isinstance(self.external_feature_lists, str):
            self._set("external_feature_lists", local_path(self.external_feature_lists))

    def _check_modes(self) -> None:
        """The input format and the execution mode (Avro2TF's names accepted)."""
        if self.input_format != formats.AUTO:
            formats.get_format(self.input_format)
        self._set("execution_mode", _MODE_ALIASES.get(self.execution_mode, self.execution_mode))
        if self.execution_mode not in SPLIT_FOLDERS:
            raise ValueError(
                f"execution_mode {self.execution_mode!r} is not one of {', '.join(EXECUTION_MODES)}"
            )

    def _check_files(self) -> None:
        """How records are spread over files: `num_shards` or `max_records_per_file`."""
        if self.num_shards is not None:
            _positive("num_shards", self.num_shards)
        if self.max_records_per_file is not None:
            _positive("max_records_per_file", self.max_records_per_file)
            if self.num_shards is not None:
                raise SettingError(
                    lambda n: f"give {n('num_shards')} or {n('max_records_per_file')}, not both"
                )

    def _check_output_format(self) -> None:
        """The output format and its compression (None: the format's default)."""
        if self.output_format not in output_format_names():
            raise ValueError(
                f"output_format {self.output_format!r} is not one of {', '.join(output_format_names())}"
            )
        if self.compression is None:
            self._set("compression", get_output_format(self.output_format).compressions[0])
        compressions = get_output_format(self.output_format).compressions
        if self.compression not in compressions:
            raise SettingError(
                lambda n: (
                    f"{n('compression')} {self.compression!r} does not apply to {n('output_format')} "
                    f"{self.output_format!r}; use one of {', '.join(compressions)}"
                )
            )

    def _check_bad_records(self) -> None:
        """The save mode and the share of bad rows allowed."""
        if self.save_mode not in SAVE_MODES:
            raise ValueError(f"save_mode {self.save_mode!r} is not one of {', '.join(SAVE_MODES)}")
        _fraction("max_bad_records_ratio", self.max_bad_records_ratio)

    def _check_feature_lists(self) -> None:
        groups = tuple(_names("shared_feature_lists group", g) for g in self.shared_feature_lists)
        self._set("shared_feature_lists", groups)
        feature_list_groups(self.config, groups)

    def _check_extra_columns(self) -> tuple[str, ...]:
        """Check the extra columns; returns the names they are written under."""
        self._set("extra_columns", _names("extra_columns", self.extra_columns))
        names = extra_column_names(self.extra_columns)
        clash = set(names) & set(self.config.tensor_names)
        if clash:
            raise ValueError(f"extra columns {sorted(clash)} have the names of tensors")
        if len(set(names)) < len(names):
            raise ValueError(f"extra columns {list(names)}: a name is used twice")
        return names

    def _check_partitions(self, extra: tuple[str, ...]) -> None:
        """`partition_by`, or Avro2TF's `partition_field_name` with `num_partitions`."""
        config = self.config
        self._set("partition_by", _names("partition_by", self.partition_by))
        _check_partition_columns(config, self.partition_by, extra)
        if self.partition_field_name is None:
            return
        field = self.partition_field_name
        if not isinstance(field, str) or not field.strip():
            raise SettingError(lambda n: f"{n('partition_field_name')} must name a column, got {field!r}")
        if self.partition_by:
            raise SettingError(
                lambda n: (
                    f"give {n('partition_field_name')} (partition=<id>/ folders) or {n('partition_by')}, "
                    "not both"
                )
            )
        _positive("num_partitions", self.num_partitions)
        _check_partition_columns(config, (field,), extra, "partition_field_name")
        taken = {PARTITION_ID_COLUMN, PARTITION_FOLDER_COLUMN} & (set(extra) | set(config.tensor_names))
        if taken:
            raise ValueError(
                f"{sorted(taken)} name the partition id columns; rename the tensor or extra column"
            )

    def _check_skip_conversion(self) -> None:
        if self.skip_conversion and self.execution_mode != "train":
            raise SettingError(
                lambda n: (
                    f"{n('skip_conversion')} writes the feature lists and metadata of train mode; use "
                    f"{n('execution_mode')} train"
                )
            )

    def _check_dedup(self) -> None:
        """HybridBackend's deduplication: `dedup_block_size` with `dedup_user_cols`."""
        groups = tuple(tuple(g) for g in self.dedup_user_cols)
        self._set("dedup_user_cols", groups)
        if (self.dedup_block_size is None) != (not groups):
            raise SettingError(lambda n: f"give {n('dedup_block_size')} and {n('dedup_user_cols')} together")
        if not groups:
            return
        _positive("dedup_block_size", self.dedup_block_size)
        if self.output_format != "parquet":
            raise SettingError(
                lambda n: f"deduplication writes Parquet blocks: use {n('output_format')} parquet"
            )
        if self.folder_columns:
            raise ValueError("deduplication and partition folders exclude each other")
        if self.save_mode == "append":
            raise SettingError(
                lambda n: (
                    f"deduplicated output cannot be appended to; write it anew ({n('save_mode')} overwrite)"
                )
            )
        if any(not g or not all(isinstance(c, str) and c for c in g) for g in groups):
            raise ValueError(f"dedup_user_cols must be groups of column names, got {list(groups)}")

    def _check_report(self) -> None:
        """The run report's format and its drift threshold."""
        if self.report not in REPORT_FORMATS:
            raise ValueError(f"report {self.report!r} is not one of {', '.join(REPORT_FORMATS)}")
        _fraction("drift_threshold", self.drift_threshold)

    @property
    def split(self) -> str:
        """The split folder's name (`trainingData`, `validationData` or `testData`)."""
        return SPLIT_FOLDERS[self.execution_mode]

    @property
    def split_dir(self) -> str:
        return posixpath.join(self.output, self.split)

    @property
    def extra_names(self) -> tuple[str, ...]:
        """The names of the columns written beside the tensors: the extra columns (`expression:name`
        gives `name`), then Avro2TF's `partitionId` with `partition_field_name`."""
        names = extra_column_names(self.extra_columns)
        return (*names, PARTITION_ID_COLUMN) if self.partition_field_name else names

    @property
    def transform_settings(self) -> TransformSettings:
        """The settings serving must repeat (the metadata's `transform` entry), without the
        input schema, which is known when the job runs."""
        return TransformSettings(
            extra_columns=self.extra_columns,
            filter_zeros=self.filter_zeros,
            check_shapes=self.check_shapes,
            discard_unknown_entries=self.discard_unknown_entries,
            partition_field_name=self.partition_field_name,
            num_partitions=self.num_partitions,
            folder_columns=self.folder_columns,
        )

    @property
    def folder_columns(self) -> tuple[str, ...]:
        """The columns naming partition folders: `partition_by`, or Avro2TF's `partition`."""
        return (PARTITION_FOLDER_COLUMN,) if self.partition_field_name else self.partition_by

    @property
    def input_columns(self) -> list[str]:
        """The input columns the job reads (tensors' inputs and extra columns)."""
        return input_columns(self.config.tensors, self.extra_columns)

    @property
    def input_reads(self) -> int:
        """How often the job reads its input: 2 when train mode counts its feature lists from
        a read of their own (`input_passes`), else 1."""
        if self.execution_mode != "train" or self.skip_conversion:
            return 1
        if self.input_passes is None:
            return 1 if _is_local(self.output) else 2
        return self.input_passes

    @property
    def keeps_batches(self) -> bool:
        """Train mode converts the batches it extracted while counting the feature lists, kept
        in files, instead of reading the input again."""
        return self.execution_mode == "train" and not self.skip_conversion and self.input_reads == 1

    @property
    def feature_list_keys(self) -> dict[str, str]:
        """Tensor name -> the key of the feature list built for it in train mode."""
        return feature_list_groups(self.config, self.shared_feature_lists)

    def replace(self, **changes) -> TensorizeSpec:
        """A copy with some settings changed (validated again)."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def of(
        cls, config: TensorizeConfig | TensorizeSpec | str, output: str | None = None, **settings
    ) -> TensorizeSpec:
        """`config` itself when it is a spec (then nothing else may be given), else a new spec."""
        if isinstance(config, TensorizeSpec):
            if output is not None or settings:
                raise TypeError("give either a TensorizeSpec or a config with settings, not both")
            return config
        if output is None:
            raise TypeError("output is required with a config (or give a TensorizeSpec)")
        return cls(config, output, **settings)


def _check_partition_columns(
    config: TensorizeConfig, names: tuple[str, ...], extra: tuple[str, ...], setting: str = "partition_by"
) -> None:
    """Partition columns must be scalar tensors or extra columns; errors name the `setting`
    that gave them."""
    tensors = {t.name: t for t in config.tensors}
    for name in names:
        if name in tensors:
            layout = layout_of(tensors[name])
            if layout.kind != "fixed_len" or layout.shape != ():
                raise SettingError(
                    lambda n, name=name, layout=layout: (
                        f"{n(setting)}: tensor {name!r} is not a scalar "
                        f"(shape {list(layout.shape)}, {layout.kind}); only one value per record can name a folder"
                    )
                )
        elif name not in extra:
            raise SettingError(
                lambda n, name=name: (
                    f"{n(setting)}: {name!r} is neither a tensor ({', '.join(tensors)}) nor an extra column"
                )
            )
    if len(set(names)) != len(names):
        raise SettingError(lambda n: f"{n(setting)}: {list(names)} names a column twice")
