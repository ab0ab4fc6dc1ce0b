"""Feature lists (vocabularies): build them, load them, write them, apply them."""

from __future__ import annotations

import json
import logging
import posixpath
from collections.abc import Iterable, Mapping, Sequence

import apache_beam as beam
import pyarrow as pa
from apache_beam.io.filesystems import FileSystems

from beam_tensorize.config.model import TensorConfig, TensorizeConfig
from beam_tensorize.io.files import read_text, write_text_atomically
from beam_tensorize.kernels.metadata import METADATA_FILE
from beam_tensorize.kernels.vocab import (
    FeatureList,
    FeatureListLookup,
    build_feature_list,
    feature_list_caps,
    lists_per_tensor,
    may_use_feature_list,
    partial_counts,
)

__all__ = [
    "FEATURE_LIST_FOLDER",
    "ApplyFeatureLists",
    "BuildFeatureLists",
    "BuildVocab",
    "LoadFeatureLists",
    "feature_list_groups",
    "merge_feature_lists",
    "read_feature_lists",
    "write_feature_lists",
]

_LOGGER = logging.getLogger(__name__)

#: Folder of the feature-list files below the output folder.
FEATURE_LIST_FOLDER = "featureList"
#: Folder of the `count<TAB>entry` files below the output folder.
COUNTS_FOLDER = "metadata/featureListCounts"


def feature_list_groups(
    config: TensorizeConfig,
    shared: Sequence[Sequence[str]] = (),
    external: Iterable[str] = (),
) -> dict[str, str]:
    """Tensor name -> the key of the list it is built under (shared groups use one key).

    Tensors with an external list are left out (nothing is built for them).

    Raises:
        ValueError: a shared group names an unknown tensor, one that is hashed or cannot use a
            feature list, one with an external list, or a tensor twice.
    """
    external = set(external)
    keys: dict[str, str] = {}
    for group in shared:
        group = list(group)
        for name in group:
            if name not in config.tensor_names:
                raise ValueError(
                    f"tensors sharing feature lists: unknown tensor {name!r}; known: {', '.join(config.tensor_names)}"
                )
            tensor = config.tensor(name)
            if tensor.input.transform_config.hash_info is not None:
                raise ValueError(
                    f"tensors sharing feature lists: tensor {name!r} is hashed (hashInfo), so it has no feature list"
                )
            if not may_use_feature_list(tensor):
                raise ValueError(
                    f"tensors sharing feature lists: tensor {name!r} (dtype {tensor.output.dtype}) cannot use a feature list"
                )
            if name in external:
                raise ValueError(
                    f"tensors sharing feature lists: tensor {name!r} has an external feature list"
                )
            if name in keys:
                raise ValueError(f"tensors sharing feature lists: tensor {name!r} is in two groups")
            keys[name] = min(group)
    for tensor in config.tensors:
        if tensor.name not in keys and tensor.name not in external and may_use_feature_list(tensor):
            keys[tensor.name] = tensor.name
    return keys


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
        self, config: TensorizeConfig, shared: Sequence[Sequence[str]] = (), external: Iterable[str] = ()
    ):
        super().__init__()
        self._tensors = config.tensors
        self._keys = feature_list_groups(config, shared, external)
        self._caps = feature_list_caps(config, self._keys)

    def expand(self, batches):
        ordered = (
            batches
            | "CountInBatch" >> beam.FlatMap(partial_counts, self._tensors, self._keys)
            | "SumCounts" >> beam.CombinePerKey(sum)
            | "ByList" >> beam.Map(lambda kv: (kv[0][0], (kv[0][1], kv[1])))
            | "GroupByList" >> beam.GroupByKey()
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


def _order(grouped: tuple[str, Iterable[tuple[str | None, int]]], caps: Mapping[str, int | None]):
    key, counted = grouped
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

    Example:
        >>> import apache_beam as beam, pyarrow as pa
        >>> from beam_tensorize.config import parse_config
        >>> from beam_tensorize.kernels.vocab import FeatureList
        >>> config = parse_config({"features": [{"outputTensorInfo": {"name": "g", "dtype": "long", "shape": [-1]}}]})
        >>> with beam.Pipeline() as p:
        ...     lists = p | "Lists" >> beam.Create([{"g": FeatureList(("b", "a"))}])
        ...     batches = p | beam.Create([pa.RecordBatch.from_pydict({"g": [["a", "zz"]]})])
        ...     _ = batches | ApplyFeatureLists(config, lists) | beam.Map(lambda b: print(b.to_pydict()))
        {'g': [[1, 2]]}
    """

    def __init__(self, config: TensorizeConfig, feature_lists, filter_zeros: bool = False):
        super().__init__()
        self._tensors = config.tensors
        self._lists = feature_lists
        self._filter_zeros = filter_zeros

    def expand(self, batches):
        return batches | "LookUpIds" >> beam.ParDo(
            _ApplyFeatureListsFn(self._tensors, self._filter_zeros), beam.pvalue.AsSingleton(self._lists)
        )


class _ApplyFeatureListsFn(beam.DoFn):
    def __init__(self, tensors: tuple[TensorConfig, ...], filter_zeros: bool):
        self._tensors = tensors
        self._filter_zeros = filter_zeros

    def setup(self):
        self._seen = None
        self._lookup = FeatureListLookup({})

    def process(self, batch: pa.RecordBatch, lists: Mapping[str, FeatureList]):
        if lists is not self._seen:  # the runner hands the same side input to later bundles
            self._lookup = FeatureListLookup(lists)
            self._seen = lists
        yield self._lookup.apply(batch, self._tensors, self._filter_zeros)


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

    def expand(self, pbegin):
        return (
            pbegin
            | "Folders" >> beam.Create([tuple(self._directories)])
            | "ReadLists"
            >> beam.Map(read_feature_lists, self._names, self._strict, self._required, self._metadata_dir)
        )


def _ntv_lists(metadata_dir: str | None) -> set[str]:
    text = None if metadata_dir is None else read_text(posixpath.join(metadata_dir, METADATA_FILE))
    if text is None:
        return set()
    document = json.loads(text)
    return {
        t["name"]
        for t in document.get("features", []) + document.get("labels", [])
        if t.get("featureList", {}).get("entries") == "name,term"
    }


def read_feature_lists(
    directories: Sequence[str],
    names: Sequence[str],
    strict: bool = False,
    required: bool = True,
    metadata_dir: str | None = None,
) -> dict[str, FeatureList]:
    """Read feature lists from folders now (what `LoadFeatureLists` does when the job runs).

    Args:
        directories: folders to read, later ones winning for the same tensor.
        names: the tensors of the config.
        strict: a file named after no tensor is an error (else it is ignored).
        required: fail if a folder holds no list.
        metadata_dir: output folder whose metadata tells which lists index NTV records.

    Raises:
        FileNotFoundError: a required folder holds no list.
        ValueError: `strict` and a file is named after no tensor.

    Example:
        >>> import tempfile
        >>> read_feature_lists([tempfile.mkdtemp()], ["g"], required=False)
        {}
    """
    ntv = _ntv_lists(metadata_dir)
    lists: dict[str, FeatureList] = {}
    for directory in directories:
        matches = FileSystems.match([posixpath.join(directory.rstrip("/"), "*")])[0].metadata_list
        if not matches and required:
            raise FileNotFoundError(
                f"no feature lists in {directory}: run train mode into this output folder first"
            )
        for match in sorted(matches, key=lambda m: m.path):
            name = posixpath.basename(match.path)
            if name.startswith((".", "_")):
                continue
            if name not in names:
                if strict:
                    raise ValueError(
                        f"feature list {match.path} is named after no tensor of the config; tensors: {', '.join(names)}"
                    )
                continue
            with FileSystems.open(match.path) as f:
                lists[name] = FeatureList.from_text(f.read().decode("utf-8"), ntv=name in ntv)
    return lists


def merge_feature_lists(
    own: Mapping[str, FeatureList],
    external: Mapping[str, FeatureList],
    config: TensorizeConfig,
    shared: Sequence[Sequence[str]] = (),
) -> dict[str, FeatureList]:
    """Built (or loaded) lists overridden by external ones, checked against the config.

    Raises:
        ValueError: an external list belongs to a hashed tensor, one that cannot use a list,
            or one in a shared group.
    """
    in_groups = {name for group in shared for name in group}
    for name in external:
        tensor = config.tensor(name)
        if tensor.input.transform_config.hash_info is not None or not may_use_feature_list(tensor):
            raise ValueError(
                f"external feature list for tensor {name!r}, which uses no feature list (hashed or dtype {tensor.output.dtype})"
            )
        if name in in_groups:
            raise ValueError(
                f"tensor {name!r} has an external feature list and is in a group sharing feature lists"
            )
    merged = dict(own)
    for name, feature_list in external.items():
        ntv = own[name].ntv if name in own else feature_list.ntv
        merged[name] = FeatureList(feature_list.entries, None, ntv)
    return merged


def write_feature_lists(lists: Mapping[str, FeatureList], output_dir: str) -> dict[str, str]:
    """Write `featureList/<tensor>` and `metadata/featureListCounts/<tensor>.tsv`, each under a
    temporary name then renamed into place. Returns tensor name -> relative list path."""
    paths = {}
    for name, feature_list in sorted(lists.items()):
        relative = posixpath.join(FEATURE_LIST_FOLDER, name)
        write_text_atomically(posixpath.join(output_dir, relative), feature_list.to_text())
        if feature_list.counts is not None:
            write_text_atomically(
                posixpath.join(output_dir, COUNTS_FOLDER, f"{name}.tsv"), feature_list.counts_text()
            )
        paths[name] = relative
    return paths
