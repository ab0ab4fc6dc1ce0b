"""`gcp-storage-emulator` with GCS's generation preconditions on uploads.

The emulator ignores `ifGenerationMatch`, which real GCS honours with `412 Precondition
Failed` (https://cloud.google.com/storage/docs/request-preconditions): `0` means "only if the
object does not exist", any other number "only if its live generation is this one". The commit
lock relies on exactly that, so the tests run the emulator with this check added in front of
its upload handler (same arguments: `python -m tests.gcs_emulator start --port ...`).
"""

from __future__ import annotations

import sys
from http import HTTPStatus

from gcp_storage_emulator import __main__ as emulator
from gcp_storage_emulator import server
from gcp_storage_emulator.exceptions import NotFound
from gcp_storage_emulator.handlers import objects

_insert = objects.insert


def _object_name(request) -> str | None:
    if "name" in request.query:
        return request.query["name"][0]
    data = request.data
    if isinstance(data, dict):
        return (data.get("meta") or data).get("name")
    return None


def insert_with_preconditions(request, response, storage, *args, **kwargs):
    """`objects.insert`, refusing an upload whose `ifGenerationMatch` does not hold."""
    wanted = request.query.get("ifGenerationMatch")
    name = _object_name(request)
    if wanted and name:
        try:
            live = str(storage.get_file_obj(request.params["bucket_name"], name)["generation"])
        except NotFound:
            live = "0"
        if live != wanted[0]:
            response.status = HTTPStatus.PRECONDITION_FAILED
            message = f"At least one of the pre-conditions you specified did not hold (ifGenerationMatch={wanted[0]})"
            response.json({"error": {"code": 412, "message": message,
                                     "errors": [{"reason": "conditionNotMet", "message": message}]}})  # fmt: skip
            return None
    return _insert(request, response, storage, *args, **kwargs)


objects.insert = insert_with_preconditions
server.HANDLERS = tuple(
    (regex, {method: insert_with_preconditions if handler is _insert else handler for method, handler in handlers.items()})
    for regex, handlers in server.HANDLERS
)  # fmt: skip

if __name__ == "__main__":
    emulator.main(sys.argv[1:])
