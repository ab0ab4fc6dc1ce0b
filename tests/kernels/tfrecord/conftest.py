"""The fixture the framing and Example encoder tests share: each test runs with the C
extension `_tfrecordencode` and with the numpy / pyarrow fallback."""

from __future__ import annotations

import pytest

from beam_tensorize.kernels.tfrecord import native as tfrecord_native
from beam_tensorize.kernels.tfrecord.framing import NATIVE_ENV


@pytest.fixture(params=["native", "python"])
def both_paths(request, monkeypatch):
    """Runs the test with the C extension (skipped when it is not built), then with the numpy /
    pyarrow fallback; gives the path's name. A module opts in with
    `pytestmark = pytest.mark.usefixtures("both_paths")`; a class whose tests run both paths
    themselves overrides it."""
    if request.param == "native":
        if tfrecord_native.extension() is None:
            pytest.skip("the C extension _tfrecordencode is not built")
        monkeypatch.delenv(NATIVE_ENV, raising=False)
    else:
        monkeypatch.setenv(NATIVE_ENV, "python")
    return request.param
