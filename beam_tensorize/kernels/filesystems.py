"""pyarrow file systems for a path, configured from the usual environment variables (no Beam,
no TensorFlow): what the TensorFlow loaders and the serving preprocessor read through.

* a local path (no `scheme://`): the local file system, the path made absolute;
* `s3://bucket/key`: with `AWS_ENDPOINT_URL` (e.g. a MinIO or moto server), an S3 file system
  on that endpoint (`AWS_REGION` / `AWS_DEFAULT_REGION`, credentials as pyarrow finds them);
* `gs://bucket/object`: with `STORAGE_EMULATOR_HOST` (the Google Cloud clients' emulator
  variable), an anonymous GCS file system on that host;
* anything else: `pyarrow.fs.FileSystem.from_uri` (real S3 and GCS, `hdfs://`, ...).

Example:
    >>> fs, inner = filesystem_for("s3://bucket/data/part-0.parquet")  # doctest: +SKIP
    >>> type(filesystem_for("/tmp/x.parquet")[0]).__name__
    'LocalFileSystem'
"""

from __future__ import annotations

import datetime
import os

import pyarrow.fs as pafs

__all__ = ["filesystem_for"]


def _endpoint(url: str) -> tuple[str, str]:
    """(scheme, host[:port]) of an endpoint URL; https when it has no scheme."""
    scheme, _, host = url.partition("://")
    return (scheme, host.rstrip("/")) if host else ("https", url.rstrip("/"))


def filesystem_for(path: str) -> tuple[pafs.FileSystem, str]:
    """The file system holding `path` and the path inside it."""
    if "://" not in path:
        return pafs.LocalFileSystem(), os.path.abspath(path)
    if path.startswith("s3://") and os.environ.get("AWS_ENDPOINT_URL"):
        scheme, host = _endpoint(os.environ["AWS_ENDPOINT_URL"])
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
        return pafs.S3FileSystem(endpoint_override=host, scheme=scheme, region=region), path[len("s3://") :]
    if path.startswith("gs://") and os.environ.get("STORAGE_EMULATOR_HOST"):
        scheme, host = _endpoint(os.environ["STORAGE_EMULATOR_HOST"])
        gcs = pafs.GcsFileSystem(
            anonymous=True,
            scheme=scheme,
            endpoint_override=host,
            retry_time_limit=datetime.timedelta(seconds=15),
        )
        return gcs, path[len("gs://") :]
    return pafs.FileSystem.from_uri(path)
