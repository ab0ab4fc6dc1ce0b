"""Feature lists (vocabularies): build them, load them, apply them (the files: `job.feature_lists`)."""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterable, Mapping, Sequence

import apache_beam as beam
import pyarrow as pa
from apache_beam.transforms.display import DisplayDataItem

from beam_tensorize.config.model import TensorConfig, TensorizeConfig
from beam_tensorize.job.feature_lists import feature_list_groups, read_feature_lists
from beam_tensorize.kernels.features.counting import ListTensorExtractor, feature_list_columns
from beam_tensorize.kernels.features.vocab import (
    EntryCounts,
    FeatureList,
    FeatureListLookup,
    build_feature_list,
    entry_counts_by_list,
    feature_list_caps,
    lists_per_tensor,
)

__all__ = ["ApplyFeatureLists", "BuildFeatureLists", "BuildVocab", "ExtractListTensors", "LoadFeatureLists"]

_LOGGER = logging.getLogger(__name__)


class BuildFeatureLists(beam.PTransform):
    """Count every string / `name,term` entry of the tensors that need indices; order them.

    Counting is distributed: each batch yields its distinct entries with counts, summed with
    `CombinePerKey`; only the distinct entries of one list meet on one worker to be sorted
    (count descending, then entry ascending) and cut to `vocabSizeCap`. Tensors sharing a list
    count together and get the same list (capped at the smallest cap of the group).

    Input: tensor batches (after `ExtractFeatures` / `HashFeatures`).
    Output: a PCollection of one dict `{tensor name: FeatureList}`.

    Args:
        config: the parsed config.
        shared: groups of tensor names that share one list.
        external: tensors whose lists come from elsewhere (not built).
        term_only: also build Avro2TF's term-only lists (terms counted alone, NTV names left
            out; never shared, cut to the tensor's own `vocabSizeCap`), in the dict under
            `term_only_name(tensor)`.

    Example:
        >>> import apache_beam as beam, pyarrow as pa
        >>> from beam_tensorize.config import parse_config
        >>> config = parse_config({"features": [{"outputTensorInfo": {"name": "g", "dtype": "long", "shape": [-1]}}]})
        >>> with beam.Pipeline() as p:
        ...     batches = p | beam.Create([pa.RecordBatch.from_pydict({"g": [["b", "a"], ["b"]]})])
        ...     lists = batches | BuildFeatureLists(config)
        ...     _ = lists | beam.Map(lambda d: print(d["g"].entries))
        ('b', 'a')
    """

    def __init__(
        self,
        config: TensorizeConfig,
        shared: Sequence[Sequence[str]] = (),
        external: Iterable[str] = (),
        term_only: bool = False,
    ):
        super().__init__()
        self._term_only = term_only
        self._tensors = config.tensors
        self._keys = feature_list_groups(config, shared, external)
        self._caps = feature_list_caps(config, self._keys)

    def display_data(self) -> dict:
        lists = sorted(set(self._keys.values()))
        return {
            "feature_lists": DisplayDataItem(
                ", ".join(lists) or "(none)", label="Feature lists (built for string inputs)"
            )
        }

    def expand(self, batches):
        ordered = (
            batches
            | "CountInBatch" >> beam.FlatMap(entry_counts_by_list, self._tensors, self._keys, self._term_only)
            | "SumCounts" >> beam.CombinePerKey(_SumEntryCounts())
            | "OrderEntries" >> beam.Map(_order, self._caps)
            | "OneKey" >> beam.Map(lambda keyed_list: (0, keyed_list))
        )
        none_yet = batches.pipeline | "NoListsYet" >> beam.Create([(0, None)])  # a dict even for no input
        return (
            (ordered, none_yet)
            | "Together" >> beam.Flatten()
            | "AllLists" >> beam.GroupByKey()
            | "PerTensor" >> beam.Map(_lists_per_tensor, self._keys)
        )


def _lists_per_tensor(grouped, keys: Mapping[str, str]) -> dict[str, FeatureList]:
    return lists_per_tensor(dict(kl for kl in grouped[1] if kl is not None), keys)


BuildVocab = BuildFeatureLists


class ExtractListTensors(beam.PTransform):
    """Extract only the tensors that get feature lists (those whose input, in the batch's
    schema, gives strings or name-term-value records), for `BuildFeatureLists`.

    Train mode's counting pass reads the input with `ReadTable(columns=list_columns(config))`,
    which decodes only the columns these tensors read, then counts their entries.

    Example:
        >>> import apache_beam as beam
        >>> from beam_tensorize.config import load_config
        >>> from beam_tensorize.io import ReadAvro
        >>> from beam_tensorize.sample import SAMPLE_AVRO, SAMPLE_CONFIG
        >>> config = load_config(SAMPLE_CONFIG)
        >>> with beam.Pipeline() as p:
        ...     _ = (p | ReadAvro(SAMPLE_AVRO, columns=ExtractListTensors.list_columns(config))
        ...            | ExtractListTensors(config)
        ...            | beam.Map(lambda b: print(b.schema.names)))
        ['genreIds', 'genreVector']
    """

    def __init__(self, config: TensorizeConfig):
        super().__init__()
        self._tensors = config.tensors

    @staticmethod
    def list_columns(config: TensorizeConfig):
        """`ReadTable(columns=...)` reading only what the feature-list tensors need, per file."""
        return functools.partial(feature_list_columns, config.tensors)

    def expand(self, batches):
        return batches | "ExtractTensors" >> beam.ParDo(
            _ExtractListTensorsFn(self._tensors)
        ).with_output_types(pa.RecordBatch)


class _ExtractListTensorsFn(beam.DoFn):
    def __init__(self, tensors: tuple[TensorConfig, ...]):
        self._tensors = tensors

    def setup(self):
        self._extract = ListTensorExtractor(self._tensors)

    def process(self, batch: pa.RecordBatch):
        extracted = self._extract(batch)
        if extracted is not None:
            yield extracted


class _SumEntryCounts(beam.CombineFn):
    """Sums the `EntryCounts` of one feature list (pyarrow sums them, not one element each)."""

    def create_accumulator(self) -> EntryCounts:
        return EntryCounts()

    def add_input(self, accumulator: EntryCounts, counts: EntryCounts) -> EntryCounts:
        return accumulator.merge(counts)

    def merge_accumulators(self, accumulators: Iterable[EntryCounts]) -> EntryCounts:
        merged = EntryCounts()
        for accumulator in accumulators:
            merged.merge(accumulator)
        return merged

    def extract_output(self, accumulator: EntryCounts) -> EntryCounts:
        return accumulator


def _order(summed: tuple[str, EntryCounts], caps: Mapping[str, int | None]):
    key, counted = summed
    return key, build_feature_list(counted, caps.get(key))


class ApplyFeatureLists(beam.PTransform):
    """Replace strings / NTV records by their feature-list indices (lists as a side input).

    The lists arrive once per worker as a singleton side input. Unknown entries get index
    `len(list)`. NTV tensors become sparse vectors (`isSparse: true`) or dense vectors of
    `len(list) + 1` values.

    Args:
        config: the parsed config.
        feature_lists: a PCollection of one dict `{tensor name: FeatureList}`.
        filter_zeros: drop zero values from sparse vectors.
        discard_unknown: leave entries not in their list out of lists and vectors (scalars
            keep the unknown id).

    Example:
        >>> import apache_beam as beam, pyarrow as pa
        >>> from beam_tensorize.config import parse_config
        >>> from beam_tensorize.kernels.features.vocab import FeatureList
        >>> config = parse_config({"features": [{"outputTensorInfo": {"name": "g", "dtype": "long", "shape": [-1]}}]})
        >>> with beam.Pipeline() as p:
        ...     lists = p | "Lists" >> beam.Create([{"g": FeatureList(("b", "a"))}])
        ...     batches = p | beam.Create([pa.RecordBatch.from_pydict({"g": [["a", "zz"]]})])
        ...     _ = batches | ApplyFeatureLists(config, lists) | beam.Map(lambda b: print(b.to_pydict()))
        {'g': [[1, 2]]}
    """

    def __init__(
        self,
        config: TensorizeConfig,
        feature_lists,
        filter_zeros: bool = False,
        discard_unknown: bool = False,
    ):
        super().__init__()
        self._tensors = config.tensors
        self._lists = feature_lists
        self._filter_zeros = filter_zeros
        self._discard_unknown = discard_unknown

    def display_data(self) -> dict:
        return {"filter_zeros": DisplayDataItem(self._filter_zeros, label="Drop zeros of sparse vectors")}

    def expand(self, batches):
        return batches | "LookUpIds" >> beam.ParDo(
            _ApplyFeatureListsFn(self._tensors, self._filter_zeros, self._discard_unknown),
            beam.pvalue.AsSingleton(self._lists),
        ).with_output_types(pa.RecordBatch)


class _ApplyFeatureListsFn(beam.DoFn):
    def __init__(self, tensors: tuple[TensorConfig, ...], filter_zeros: bool, discard_unknown: bool):
        self._tensors = tensors
        self._filter_zeros = filter_zeros
        self._discard_unknown = discard_unknown

    def setup(self):
        self._seen = None
        self._lookup = FeatureListLookup({})

    def process(self, batch: pa.RecordBatch, lists: Mapping[str, FeatureList]):
        if lists is not self._seen:  # the runner hands the same side input to later bundles
            self._lookup = FeatureListLookup(lists)
            self._seen = lists
        yield self._lookup.apply(batch, self._tensors, self._filter_zeros, self._discard_unknown)


class LoadFeatureLists(beam.PTransform):
    """Read feature lists from folders (`<dir>/<tensor name>`, one entry per line).

    Applied to the pipeline root; yields one dict `{tensor name: FeatureList}`. Files are read
    when the pipeline runs, not when it is built.

    Args:
        directories: folders to read, later ones winning for the same tensor.
        tensor_names: the tensors of the config; a file named after no tensor is an error when
            `strict` (external lists), ignored otherwise.
        strict: see `tensor_names`.
        required: fail if a folder does not exist.
        metadata_dir: output folder whose metadata tells which lists index NTV records.

    Example:
        >>> import apache_beam as beam
        >>> with beam.Pipeline() as p:
        ...     lists = p | LoadFeatureLists(["out/featureList"], ["g"], required=False)
    """

    def __init__(
        self,
        directories: Sequence[str],
        tensor_names: Iterable[str],
        strict: bool = False,
        required: bool = True,
        metadata_dir: str | None = None,
    ):
        super().__init__()
        self._directories = list(directories)
        self._names = tuple(tensor_names)
        self._strict = strict
        self._required = required
        self._metadata_dir = metadata_dir

    def display_data(self) -> dict:
        return {
            "directories": DisplayDataItem(", ".join(self._directories), label="Folders"),
            "strict": DisplayDataItem(self._strict, label="Every file names a tensor"),
        }

    def expand(self, pbegin):
        return (
            pbegin
            | "Folders" >> beam.Create([tuple(self._directories)])
            | "ReadLists"
            >> beam.Map(read_feature_lists, self._names, self._strict, self._required, self._metadata_dir)
        )
