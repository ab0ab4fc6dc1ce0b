"""Conditional writes on object stores, a lock's and a journal's primitives: an object created
only if absent (`create_if_absent`), read with its version (`read_versioned`) and replaced only if
still at that version (`replace_if_unchanged`); S3 through boto3, GCS through
google-cloud-storage, both with the clients (and the job's options) Beam's file systems use.
"""

from __future__ import annotations

import os

from beam_tensorize.job.file_systems import FileSystems, _is_local

__all__ = ["create_if_absent", "read_versioned", "replace_if_unchanged"]


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


def _put_empty_s3_object(path: str) -> None:
    """Beam's S3 writer always uses a multipart upload, and S3 refuses to complete one without
    parts (MalformedXML): an empty object takes one plain PUT instead."""
    from apache_beam.io.aws.clients.s3.boto3_client import Client

    bucket, _, key = path[len("s3://") :].partition("/")
    options = FileSystems.get_filesystem(path)._options  # the pipeline's S3 options
    Client(options=options).client.put_object(Bucket=bucket, Key=key, Body=b"")
