"""The numeric sketch's two paths: the C extension (one pass per batch) and numpy give the same
sketch, value for value, on numbers of every kind the report sees."""

from __future__ import annotations

import numpy as np
import pytest

from beam_tensorize.kernels.report import sketches
from beam_tensorize.kernels.report.sketches import NumericSketch

pytestmark = pytest.mark.skipif(sketches._extension() is None, reason="the C extension is not built here")


def _sketch(batches, native: bool, monkeypatch) -> dict:
    with monkeypatch.context() as patch:
        if not native:
            patch.setattr(sketches, "_extension", lambda: None)
        sketch = NumericSketch()
        for batch in batches:
            sketch.add(batch)
        return sketch.to_json()


_RNG = np.random.default_rng(7)
_CASES = {
    "float32 normal": [_RNG.normal(size=245_760).astype(np.float32)],
    "float64 wide": [_RNG.normal(size=1_000) * 10.0 ** _RNG.integers(-300, 300, size=1_000)],
    "int64 extremes": [np.array([np.iinfo(np.int64).min, -1, 0, 1, 2**53 + 1, np.iinfo(np.int64).max])],
    "int32 small": [_RNG.integers(-5, 5, size=777).astype(np.int32)],
    "zeros, signs, subnormals": [np.array([0.0, -0.0, 5e-324, -5e-324, 2.2e-308, -1.0, 1.0])],
    "block edges": [_RNG.normal(size=n) for n in (1, 7, 8, 127, 128, 129, 255, 1031)],
    "several batches": [_RNG.exponential(size=10_000) for _ in range(5)],
    "a strided view": [_RNG.normal(size=2_000)[::3]],
    "NaN and infinities (numpy counts them)": [np.array([1.0, np.nan, -np.inf, 2.0]), np.array([3.0, 4.0])],
    "empty": [np.zeros(0), np.array([5.0])],
}


@pytest.mark.parametrize("case", sorted(_CASES))
def test_the_c_extension_gives_numpy_s_sketch(case, monkeypatch):
    batches = _CASES[case]
    native, plain = _sketch(batches, True, monkeypatch), _sketch(batches, False, monkeypatch)
    assert native == plain
    assert native["count"] == sum(int(np.isfinite(np.asarray(b, np.float64)).sum()) for b in batches)


def test_the_sum_is_numpy_s_and_the_buckets_hold_every_value(monkeypatch):
    values = _RNG.normal(size=100_003)
    sketch = NumericSketch()
    sketch.add(values)
    assert sketch.total == float(values.sum())  # numpy's pairwise order, to the last bit
    assert sketch.squares == float(np.add.reduce(values * values))
    positive, negative = sketch.to_json()["positive"], sketch.to_json()["negative"]
    assert sum(positive[1]) + sum(negative[1]) + sketch.zeros == len(values)
    assert (sketch.minimum, sketch.maximum) == (values.min(), values.max())


def test_the_extension_refuses_what_it_cannot_read():
    native = sketches._extension()
    with pytest.raises(TypeError, match="1-D float64, float32, int64 or int32"):
        native.summarize(np.zeros(3, np.int16))
    with pytest.raises(TypeError, match="1-D float64, float32, int64 or int32"):
        native.summarize(np.zeros((2, 2)))
    assert native.summarize(np.array([1.0, np.nan])) is None
