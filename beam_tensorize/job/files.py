"""Small file helpers over Beam's FileSystems (local, gs://, s3://, ...).

Apache Beam is imported at the first use of a remote file system: local paths are served
with Python's own `open` and `os` functions, as Beam's local file system does (the same
results and the same pattern syntax), so a job on Spark that reads and writes local files
never pays Beam's import (~1.7 s in the driver, ~1 s per Python worker).

Example:
    >>> import os, tempfile
    >>> folder = tempfile.mkdtemp()
    >>> write_text_atomically(os.path.join(folder, "a.txt"), "hi")
    >>> read_text(os.path.join(folder, "a.txt"))
    'hi'
"""

from __future__ import annotations

import contextlib
import logging
import os
import posixpath
import re
import shutil
import uuid
from collections.abc import Iterator, Sequence
from typing import NamedTuple

__all__ = [
    "FileSystems",
    "create_if_absent",
    "create_file",
    "list_files",
    "new_file",
    "match_files",
    "open_file",
    "read_text",
    "read_versioned",
    "replace_if_unchanged",
    "write_text_atomically",
]


_LOGGER = logging.getLogger(__name__)


class FileMetadata(NamedTuple):
    """A matched file, as Beam's `FileMetadata` gives it."""

    path: str
    size_in_bytes: int
    last_updated_in_seconds: float


class MatchResult(NamedTuple):
    """The files a pattern matched, as Beam's `MatchResult` gives them."""

    pattern: str
    metadata_list: list[FileMetadata]


#: Names whose suffix makes Beam's `open` / `create` (de)compress (`CompressionTypes.AUTO`).
_COMPRESSED_SUFFIXES = (".bz2", ".deflate", ".gz", ".zst", ".zstd", ".xz", ".lzma")


def _is_local(path: str) -> bool:
    """A path of the local file system (no `scheme://`), as Beam tells them apart."""
    return "://" not in path


def translate_pattern(pattern: str) -> str:
    """The regular expression of a Beam file pattern: fnmatch's syntax, except that `*` stays
    within a folder and `**` crosses folders (`apache_beam.io.filesystem.FileSystem`).

    Example:
        >>> bool(re.match(translate_pattern("/d/*.avro"), "/d/x/y.avro"))
        False
        >>> bool(re.match(translate_pattern("/d/**.avro"), "/d/x/y.avro"))
        True
    """
    i, n, out = 0, len(pattern), []
    while i < n:
        c = pattern[i]
        i += 1
        if c == "*":
            if i < n and pattern[i] == "*":
                out.append(".*")
                i += 1
            else:
                out.append(r"[^/\\]*")
        elif c == "?":
            out.append(".")
        elif c == "[":
            j = i
            if j < n and pattern[j] == "!":
                j += 1
            if j < n and pattern[j] == "]":
                j += 1
            while j < n and pattern[j] != "]":
                j += 1
            if j >= n:
                out.append(r"\[")
            else:
                chars = pattern[i:j].replace("\\", "\\\\")
                i = j + 1
                if chars[0] == "!":
                    chars = "^" + chars[1:]
                elif chars[0] == "^":
                    chars = "\\" + chars
                out.append(f"[{chars}]")
        else:
            out.append(re.escape(c))
    return "(?ms)" + "".join(out) + r"\Z"


def _metadata(path: str) -> FileMetadata:
    return FileMetadata(path, os.path.getsize(path), os.path.getmtime(path))


def _match_local(pattern: str) -> MatchResult:
    """Beam's local `match`: a pattern without wildcards names one file (or folder); else the
    files under the folder before the first wildcard, filtered by `translate_pattern`."""
    if pattern.endswith(("/", "\\")):
        pattern += "*"
    prefix = re.match(r"^[^[*?]*", pattern).group(0)
    if prefix == pattern:
        return MatchResult(pattern, [_metadata(pattern)] if os.path.exists(pattern) else [])
    folder = posixpath.dirname(prefix)
    matches = re.compile(translate_pattern(pattern)).match
    found = []
    if os.path.exists(folder):
        for dirpath, _, names in os.walk(folder):
            for name in names:
                path = os.path.join(dirpath, name)
                if matches(path):
                    with contextlib.suppress(OSError):  # gone meanwhile
                        found.append(_metadata(path))
    return MatchResult(pattern, found)


def _delete_local(path: str) -> None:
    if os.path.isdir(path):
        shutil.rmtree(path)
    else:
        os.remove(path)


class _LocalFirstFileSystems:
    """Beam's `FileSystems` for remote paths (imported at the first one); local paths are
    served here with Python's `os` functions, with the results and the errors' kinds of
    Beam's local file system. Any other attribute is Beam's."""

    def __getattr__(self, name: str):
        return getattr(self._beam(), name)

    @staticmethod
    def _beam():
        from apache_beam.io.filesystems import FileSystems as beam_file_systems

        return beam_file_systems

    def exists(self, path: str) -> bool:
        return os.path.exists(path) if _is_local(path) else self._beam().exists(path)

    def match(self, patterns: Sequence[str], limits=None) -> list:
        if limits is not None or not all(_is_local(p) for p in patterns):
            return self._beam().match(patterns, limits)
        return [_match_local(p) for p in patterns]

    def open(self, path: str, *args, **kwargs):
        if _is_local(path) and not args and not kwargs and not path.lower().endswith(_COMPRESSED_SUFFIXES):
            return open(path, "rb")
        return self._beam().open(path, *args, **kwargs)

    def mkdirs(self, path: str) -> None:
        if not _is_local(path):
            return self._beam().mkdirs(path)
        os.makedirs(path)  # an existing folder raises, as in Beam

    def rename(self, sources: Sequence[str], destinations: Sequence[str]) -> None:
        if not all(_is_local(p) for p in [*sources, *destinations]):
            return self._beam().rename(sources, destinations)
        if len(sources) != len(destinations):
            raise ValueError("rename: as many sources as destinations are needed")
        failed = {}
        for source, destination in zip(sources, destinations):
            try:
                os.rename(source, destination)
            except OSError as err:
                failed[(source, destination)] = err
        if failed:
            raise OSError(f"Rename operation failed: {failed}")

    def delete(self, paths: Sequence[str]) -> None:
        if not all(_is_local(p) for p in paths):
            return self._beam().delete(paths)
        failed: dict = {}
        for result in self.match(paths):
            if not result.metadata_list:
                failed[result.pattern] = OSError(f"No files found to delete under: {result.pattern}")
            for meta in result.metadata_list:
                try:
                    _delete_local(meta.path)
                except OSError as err:
                    failed[meta.path] = err
        if failed:
            raise OSError(f"Delete operation failed: {failed}")


#: Beam's `FileSystems` (local, gs://, s3://, hdfs://, ...): local paths without Beam, others
#: through Beam, imported at the first one.
FileSystems = _LocalFirstFileSystems()


def _raw_file(path: str, mode: str):
    """`path` opened for reading ("rb") or created for writing ("wb") as raw bytes, whatever
    its name says (no compression): local paths with Python's `open` (folders created, as
    Beam's local file system does), others through Beam's file systems."""
    if _is_local(path):
        folder = os.path.dirname(path)
        if mode == "wb" and folder:
            os.makedirs(folder, exist_ok=True)
        return open(path, mode)
    from apache_beam.io.filesystem import CompressionTypes

    make = FileSystems.create if mode == "wb" else FileSystems.open
    return make(path, compression_type=CompressionTypes.UNCOMPRESSED)


class _LazyWriter:
    """A write-only file that is created at its first byte (or, empty, when closed)."""

    def __init__(self, path: str):
        self._path = path
        self._file = None

    def write(self, data) -> int:
        if not len(data):
            return 0
        if self._file is None:
            self._file = _raw_file(self._path, "wb")
        return self._file.write(data)

    def flush(self) -> None:
        if self._file is not None:
            self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
        elif self._path.startswith("s3://"):
            _put_empty_s3_object(self._path)
        else:
            _raw_file(self._path, "wb").close()


def _put_empty_s3_object(path: str) -> None:
    """Beam's S3 writer always uses a multipart upload, and S3 refuses to complete one without
    parts (MalformedXML): an empty object takes one plain PUT instead."""
    from apache_beam.io.aws.clients.s3.boto3_client import Client

    bucket, _, key = path[len("s3://") :].partition("/")
    options = FileSystems.get_filesystem(path)._options  # the pipeline's S3 options
    Client(options=options).client.put_object(Bucket=bucket, Key=key, Body=b"")


def new_file(path: str) -> _LazyWriter:
    """A new file to write bytes to, created at its first byte or when closed (also empty);
    the caller closes it (`create_file` is the context-manager form)."""
    return _LazyWriter(path)


@contextlib.contextmanager
def create_file(path: str) -> Iterator[_LazyWriter]:
    """A new file to write bytes to (not compressed, whatever its name), also when it stays
    empty: Beam's `FileSystems.create` cannot make an empty object on S3.

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "_SUCCESS")
        >>> with create_file(path):
        ...     pass
        >>> os.path.getsize(path)
        0
    """
    writer = _LazyWriter(path)
    try:
        yield writer
    except BaseException:
        if writer._file is not None:
            writer._file.close()
        raise
    writer.close()


def open_file(path: str):
    """`path` opened for reading as raw bytes, whatever its name says (no decompression)."""
    return _raw_file(path, "rb")


def write_text_atomically(path: str, text: str) -> None:
    """Write `text` under a temporary name beside `path`, then rename it into place."""
    temp = f"{posixpath.dirname(path)}/.{posixpath.basename(path)}.tmp-{uuid.uuid4().hex}"
    with create_file(temp) as f:
        f.write(text.encode("utf-8"))
    if FileSystems.exists(path):
        FileSystems.delete([path])
    FileSystems.rename([temp], [path])


def create_if_absent(path: str, data: bytes) -> bool | None:
    """Create `path` holding `data` only if nothing is there, atomically (a lock's primitive):
    True created, False it exists. Local files: `O_EXCL`; S3: a conditional put
    (`If-None-Match: *`); GCS: a generation precondition (`ifGenerationMatch=0`), both through
    the clients Beam's file systems use with the job's options; None for stores without one (HDFS).

    Example:
        >>> import os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "lock")
        >>> create_if_absent(path, b"a"), create_if_absent(path, b"b"), open(path).read()
        (True, False, 'a')
    """
    if _is_local(path):
        os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            return False
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        return True
    return replace_if_unchanged(path, data, None)


def read_versioned(path: str) -> tuple[bytes, str] | None:
    """An object's bytes with its version (S3: ETag, GCS: generation), for
    `replace_if_unchanged`; None when it is absent or the store has no versions here."""
    if path.startswith("s3://"):
        from botocore.exceptions import ClientError

        bucket, key = _bucket_and_key(path)
        try:
            found = _s3_client(path).get_object(Bucket=bucket, Key=key)
        except ClientError as err:
            if err.response.get("Error", {}).get("Code") in ("NoSuchKey", "404"):
                return None
            raise
        return found["Body"].read(), found["ETag"]
    if path.startswith("gs://"):
        from google.api_core.exceptions import NotFound, PreconditionFailed

        while True:  # the object may change between reading its generation and its bytes
            blob = _gcs_bucket(path).get_blob(_bucket_and_key(path)[1])
            if blob is None:
                return None
            generation = blob.generation  # first: a download may reset the blob's properties
            try:
                return blob.download_as_bytes(if_generation_match=generation), str(generation)
            except (NotFound, PreconditionFailed):
                continue
    return None


def replace_if_unchanged(path: str, data: bytes, version: str | None) -> bool | None:
    """Write `data` to object `path` only if it is still at `version` (from `read_versioned`),
    or, with `version=None`, only if it is absent: True written, False it changed (S3's
    `If-Match` / `If-None-Match`, GCS's `ifGenerationMatch`); None for other stores."""
    if path.startswith("s3://"):
        from botocore.exceptions import ClientError

        bucket, key = _bucket_and_key(path)
        condition = {"IfNoneMatch": "*"} if version is None else {"IfMatch": version}
        try:
            _s3_client(path).put_object(Bucket=bucket, Key=key, Body=data, **condition)
        except ClientError as err:
            code = err.response.get("Error", {}).get("Code")
            if code in ("PreconditionFailed", "ConditionalRequestConflict", "NoSuchKey", "404"):
                return False
            raise
        return True
    if path.startswith("gs://"):
        from google.api_core.exceptions import NotFound, PreconditionFailed

        blob = _gcs_bucket(path).blob(_bucket_and_key(path)[1])
        try:
            blob.upload_from_string(data, if_generation_match=int(version or 0))
        except (PreconditionFailed, NotFound):
            return False
        return True
    return None


def _bucket_and_key(path: str) -> tuple[str, str]:
    bucket, _, key = path.split("://", 1)[1].partition("/")
    return bucket, key


def _s3_client(path: str):
    # Beam's S3 file system holds the job's S3 options (endpoint, credentials); its boto3
    # client is `S3IO(options).client.client` (checked by tests/e2e/test_s3.py).
    from apache_beam.io.aws import s3io

    return s3io.S3IO(options=FileSystems._beam().get_filesystem(path)._options).client.client


def _gcs_bucket(path: str):
    # Beam's GCS file system holds the job's options (project, credentials, emulator host); its
    # google-cloud-storage client is `_gcsIO().client` (checked by tests/e2e/test_gcs.py).
    return FileSystems._beam().get_filesystem(path)._gcsIO().client.bucket(_bucket_and_key(path)[0])


def read_text(path: str) -> str | None:
    """The UTF-8 text of `path`, or None when it does not exist."""
    if not FileSystems.exists(path):
        return None
    with FileSystems.open(path) as f:
        return f.read().decode("utf-8")


def list_files(pattern: str) -> list[str]:
    """Paths matching a path or glob, sorted; none when nothing (not even the folder) is there.

    Raises:
        OSError: the file system could not be listed for another reason (no permission, no
            network, no credentials): an output that cannot be read is not an empty one.

    Example:
        >>> import tempfile
        >>> list_files(tempfile.mkdtemp() + "/**")
        []
    """
    try:
        return sorted(m.path for m in FileSystems.match([pattern])[0].metadata_list)
    except Exception as err:  # noqa: BLE001 - a file system may raise for a folder that does not exist
        causes = list((getattr(err, "exception_details", None) or {}).values()) or [err]
        if all(_not_found(cause) for cause in causes):
            return []
        raise OSError(
            f"cannot list {pattern}: {type(causes[0]).__name__}: {causes[0]}; check the path, the network "
            "and the credentials of its file system"
        ) from None


def _not_found(err: BaseException) -> bool:
    """The error says only that nothing is there (a local path, an object-store key or bucket)."""
    return (
        isinstance(err, FileNotFoundError)
        or type(err).__name__ in ("NotFound", "NoSuchKey", "NoSuchBucket")
        or getattr(err, "code", None) == 404
    )


def match_files(pattern: str, kind: str = "input", note: bool = True) -> list[tuple[str, int]]:
    """(path, size) of every file matching a path, folder (its files, recursively) or glob,
    sorted by path. In folders and globs, Hadoop's hidden files (a name, or a folder below the
    pattern's fixed part, starting with `_` or `.`: `_SUCCESS`, `.crc`, `_temporary/`) are
    left out, as Spark and Hadoop do.

    Args:
        pattern: a path, folder or glob (local, gs://, s3://, ...).
        kind: what the files are, for the error message ("Avro", "TFRecord", ...).
        note: log a warning saying how many hidden files were left out.

    Raises:
        FileNotFoundError: nothing matches (the message names the pattern).

    Example:
        >>> from beam_tensorize.sample import SAMPLE_AVRO
        >>> [size for _, size in match_files(SAMPLE_AVRO, "Avro")]
        [128344]
    """
    listing = _is_folder(pattern) or any(c in pattern for c in "*?[")
    if _is_folder(pattern):  # a folder is its files, as in Spark and Hadoop (recursively)
        pattern = pattern.rstrip("/") + "/**"
    matched = FileSystems.match([pattern])[0].metadata_list
    found = sorted((m.path, m.size_in_bytes) for m in matched)
    if listing:  # Hadoop's hidden files (_SUCCESS, .crc, _temporary/...) are no input
        prefix = pattern.split("*")[0].split("?")[0].split("[")[0]
        base = prefix if prefix.endswith("/") else posixpath.dirname(prefix) + "/"
        kept = [
            (p, n)
            for p, n in found
            if not _hidden(p[len(base) :] if p.startswith(base) else posixpath.basename(p))
        ]
        if len(kept) < len(found) and note:
            _LOGGER.warning(
                "%s: skipped %d hidden file(s) (names starting with '_' or '.', e.g. _SUCCESS, .crc)",
                pattern, len(found) - len(kept),
            )  # fmt: skip
        found = kept
    if not found:
        raise FileNotFoundError(f"no {kind} file matches the input pattern {pattern!r}")
    return found


def _is_folder(path: str) -> bool:
    if _is_local(path):
        return os.path.isdir(path)
    return path.endswith("/") or (not any(c in path for c in "*?[") and not FileSystems.exists(path)
                                  and bool(list_files(path.rstrip("/") + "/**")))  # fmt: skip


def _hidden(relative: str) -> bool:
    return any(part.startswith(("_", ".")) for part in relative.split("/") if part)
