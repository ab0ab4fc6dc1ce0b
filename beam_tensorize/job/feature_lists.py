"""Feature-list files of an output folder: which lists a config builds, reading, merging and
writing them (`featureList/<tensor>`, one entry per line; counts in
`metadata/featureListCounts/<tensor>.tsv`)."""

from __future__ import annotations

import json
import logging
import posixpath
from collections.abc import Iterable, Mapping, Sequence

from beam_tensorize.config.model import TensorizeConfig
from beam_tensorize.job.files import FileSystems, list_files, read_text
from beam_tensorize.job.transaction import Transaction
from beam_tensorize.kernels.features.vocab import (
    FeatureList,
    may_use_feature_list,
    own_counts,
    split_term_only,
)
from beam_tensorize.kernels.metadata import METADATA_FILE

__all__ = [
    "COUNTS_FOLDER",
    "FEATURE_LIST_FOLDER",
    "TERM_ONLY_FOLDER",
    "feature_list_groups",
    "merge_feature_lists",
    "read_feature_lists",
    "write_feature_lists",
]

_LOGGER = logging.getLogger(__name__)

#: Folder of the feature-list files below the output folder.
FEATURE_LIST_FOLDER = "featureList"
#: Avro2TF's term-only feature lists (`--term_only_feature_lists`), by tensor name.
TERM_ONLY_FOLDER = "termOnlyFeatureList"


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


def _recorded_lists(metadata_dir: str | None) -> dict[str, dict]:
    """The metadata's `featureList` entries by list path (`featureList/<tensor>`)."""
    text = None if metadata_dir is None else read_text(posixpath.join(metadata_dir, METADATA_FILE))
    if text is None:
        return {}
    document = json.loads(text)
    return {
        t["featureList"]["path"]: t["featureList"]
        for t in document.get("features", []) + document.get("labels", [])
        if t.get("featureList", {}).get("path")
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
        metadata_dir: output folder whose metadata tells which lists index NTV records (and,
            for its own `featureList/`, each list's size and digest, which are checked).

    Raises:
        FileNotFoundError: a required folder holds no list.
        ValueError: `strict` and a file is named after no tensor; or an output's list is not
            the one its metadata records (cut, edited).

    Example:
        >>> import tempfile
        >>> read_feature_lists([tempfile.mkdtemp()], ["g"], required=False)
        {}
    """
    recorded = _recorded_lists(metadata_dir)
    lists: dict[str, FeatureList] = {}
    for directory in directories:
        matches = FileSystems.match([posixpath.join(directory.rstrip("/"), "*")])[0].metadata_list
        if not matches and required:
            if strict:  # external lists: the folder the user named
                raise FileNotFoundError(
                    f"external feature lists: {directory} does not exist or holds no list file; give "
                    "a folder of files named after tensors, one entry per line"
                )
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
                text = f.read().decode("utf-8")
            if strict and not text.strip():
                raise ValueError(
                    f"external feature list {match.path} is empty; give one entry per line (or remove it)"
                )
            listed = recorded.get(posixpath.join(FEATURE_LIST_FOLDER, name))
            if metadata_dir is None or directory.rstrip("/") != posixpath.join(
                metadata_dir.rstrip("/"), FEATURE_LIST_FOLDER
            ):
                listed = None  # not the output's own lists
            lists[name] = FeatureList.from_text(text, ntv=(listed or {}).get("entries") == "name,term")
            lists[name].check_recorded(listed, match.path)
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


def write_feature_lists(
    lists: Mapping[str, FeatureList], output_dir: str, txn: Transaction
) -> dict[str, str]:
    """Write `featureList/<tensor>` and `metadata/featureListCounts/<tensor>.tsv` as part of
    the commit `txn`, and remove the list and count files of an earlier run that this run
    does not write (tensors no longer in the config): the folders then hold exactly the lists
    the metadata names. Term-only lists (`split_term_only`) go to
    `termOnlyFeatureList/<tensor>`. Returns tensor name -> relative list path."""
    counted = own_counts(lists)
    lists, term_only = split_term_only(lists)
    kept = {
        FEATURE_LIST_FOLDER: set(lists),
        COUNTS_FOLDER: {f"{name}.tsv" for name in counted},
        TERM_ONLY_FOLDER: set(term_only),
    }
    stale = [
        path
        for folder, names in kept.items()
        for path in list_files(posixpath.join(output_dir, folder, "*"))
        if posixpath.basename(path.replace("\\", "/")) not in names
    ]
    if stale:
        _LOGGER.info("Removing %d feature-list file(s) of an earlier run: %s", len(stale), stale)
        txn.delete(stale)
    paths = {}
    for name, feature_list in sorted(lists.items()):
        relative = posixpath.join(FEATURE_LIST_FOLDER, name)
        txn.write_text(posixpath.join(output_dir, relative), feature_list.to_text())
        if name in counted:  # the tensor's own counts (of a shared or capped list: all its entries)
            txn.write_text(
                posixpath.join(output_dir, COUNTS_FOLDER, f"{name}.tsv"), counted[name].counts_text()
            )
        paths[name] = relative
    for name, feature_list in sorted(term_only.items()):
        txn.write_text(posixpath.join(output_dir, TERM_ONLY_FOLDER, name), feature_list.to_text())
    return paths
