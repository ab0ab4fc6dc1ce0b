"""Ported from linkedin/Avro2TF avro2tf/src/test/scala/com/linkedin/avro2tf/configs/Avro2TFConfigTest.scala.

Avro2TF's `OutputTensorInfo` is a case class whose `shape` is an `Array[Int]`: two infos with
equal but distinct shape arrays must be equal. Ours is a frozen dataclass.
"""

from __future__ import annotations

from beam_tensorize.config import OutputTensorInfo


def test_equality():
    array1 = [1]
    array2 = [1]

    first = OutputTensorInfo("foo", "int", array1)
    second = OutputTensorInfo("foo", "int", array2)

    assert array1 is not array2
    assert first == second
    assert hash(first) == hash(second)
    assert first != OutputTensorInfo("foo", "int", [2])  # the shape takes part in equality
