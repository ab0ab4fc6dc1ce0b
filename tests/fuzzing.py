"""How long the fuzz tests of native code run: a bounded number of examples in the suite, as
many as ``BEAM_TENSORIZE_FUZZ_EXAMPLES`` says when ``benchmarks/fuzz_native.py`` runs them longer.

Example::

    @fuzz_settings(150)
    @given(data=st.data())
    def test_native_equals_reference(data): ...
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

FUZZ_EXAMPLES_ENV = "BEAM_TENSORIZE_FUZZ_EXAMPLES"


def fuzz_examples(default: int) -> int:
    """``default``, or the example count ``BEAM_TENSORIZE_FUZZ_EXAMPLES`` asks for."""
    value = os.environ.get(FUZZ_EXAMPLES_ENV, "").strip()
    if not value:
        return default
    try:
        count = int(value)
    except ValueError:
        raise ValueError(f"{FUZZ_EXAMPLES_ENV}={value!r} is not a whole number of examples") from None
    if count < 1:
        raise ValueError(f"{FUZZ_EXAMPLES_ENV}={value!r} must be at least 1")
    return count


def fuzz_settings(default: int) -> settings:
    """Hypothesis settings for a fuzz test: ``fuzz_examples(default)`` examples, no deadline."""
    return settings(
        max_examples=fuzz_examples(default),
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
