"""`lower_case` / `upper_case`: Arrow's UTF-8 case mapping, by the ASCII kernels where an array
is all ASCII."""

from __future__ import annotations

import random

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from beam_tensorize.kernels.features import text_case
from beam_tensorize.kernels.features.text_case import lower_case, upper_case

_ASCII = "aZ09 -_.,;:!?/\\'\"\t\n~"
_OTHER = "äÄßẞİıΣσςéÉøŒ中🙂\u0307"


def _strings(rng: random.Random, alphabet: str, n: int) -> list:
    return [
        None if rng.random() < 0.1 else "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 12)))
        for _ in range(n)
    ]


@pytest.mark.parametrize("string_type", [pa.string(), pa.large_string()])
@pytest.mark.parametrize("alphabet", [_ASCII, _ASCII + _OTHER], ids=["ascii", "unicode"])
def test_the_same_strings_as_arrows_utf8_kernels(string_type, alphabet):
    rng = random.Random(7)
    for _ in range(20):
        values = pa.array(_strings(rng, alphabet, rng.randint(0, 200)), string_type)
        for part in (values, values.slice(3, 50), values.slice(len(values))):
            assert lower_case(part).equals(pc.utf8_lower(part))
            assert upper_case(part).equals(pc.utf8_upper(part))


def test_ascii_kernels_only_for_ascii_data(monkeypatch):
    ascii_only = pa.array(["Drama", None, "Sci-Fi"])
    unicode_text = pa.array(["Ärger", "İstanbul"])
    assert text_case._all_ascii(ascii_only) and text_case._all_ascii(pa.array([], pa.large_string()))
    assert not text_case._all_ascii(unicode_text)
    assert not text_case._all_ascii(unicode_text.slice(1, 0))  # the whole buffer decides
    assert not text_case._all_ascii(pa.chunked_array([ascii_only]))  # not an array: Arrow's kernel
    monkeypatch.setattr(pc, "utf8_lower", lambda values: pytest.fail("the UTF-8 kernel for ASCII text"))
    assert lower_case(ascii_only).to_pylist() == ["drama", None, "sci-fi"]
