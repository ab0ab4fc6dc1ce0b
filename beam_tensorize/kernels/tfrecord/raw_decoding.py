"""Serialized TFRecord payloads -> tfx_bsl's raw columns (one ``large_list`` column per feature).

Records are parsed by tfx_bsl's C++ Example decoder (no TensorFlow import). A SequenceExample's
context is read the same way (it is field 1, as an Example's features); its feature lists are
split into their steps here (the protobuf fields walked in Python) and the steps decoded by the
same decoder, into ``large_list<large_list<...>>`` columns. `decoding` turns these columns into
those of a schema and infers schemas from them.

Example:
    >>> from beam_tensorize.kernels.tfrecord.sequence_example import encode_sequence_examples
    >>> batch = pa.RecordBatch.from_pydict({"id": [7], "steps": [[[1, 2], [3]]]})
    >>> raw_decode(encode_sequence_examples(batch).to_pylist(), "SequenceExample").to_pydict()
    {'id': [[7]], 'steps': [[[1, 2], [3]]]}
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pyarrow as pa
import pyarrow.compute as pc
from tfx_bsl.coders.example_coder import ExamplesToRecordBatchDecoder

from beam_tensorize.config.errors import TensorizeError
from beam_tensorize.kernels.tfrecord.example_encoder import length_delimited

__all__ = ["BYTE_ARRAY_COLUMN", "RECORD_TYPES", "RecordError", "check_record_type", "raw_decode"]

RECORD_TYPES = ("Example", "SequenceExample", "ByteArray")
#: The column a "ByteArray" read gives (Spark-TFRecord's name).
BYTE_ARRAY_COLUMN = "byteArray"


class RecordError(TensorizeError, ValueError):
    """A record that cannot be decoded or does not fit the schema.

    Attributes:
        where: the records' source (e.g. a file name).
        index: the record's position there.
        problem: what is wrong.
    """

    def __init__(self, where: str, index: int, problem: str):
        super().__init__(f"{where}: record {index}: {problem}")
        self.where, self.index, self.problem = where, index, problem

    def moved(self, where: str, index: int) -> RecordError:
        """The same problem, for the record at `index` of `where`."""
        return RecordError(where, index, self.problem)


def check_record_type(record_type: str) -> None:
    """Raise ValueError unless `record_type` is one of `RECORD_TYPES`."""
    if record_type not in RECORD_TYPES:
        raise ValueError(f"record type {record_type!r} is not one of {', '.join(RECORD_TYPES)}")


def _varint_at(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data) or shift > 63:
            raise ValueError("truncated varint")
        byte = data[pos]
        value |= (byte & 0x7F) << shift
        pos, shift = pos + 1, shift + 7
        if not byte & 0x80:
            return value, pos


def _fields(data: bytes) -> Iterator[tuple[int, bytes | None]]:
    """(field number, payload) of each field of a message; payload None for non-bytes fields."""
    pos = 0
    while pos < len(data):
        key, pos = _varint_at(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 2:
            size, pos = _varint_at(data, pos)
            if pos + size > len(data):
                raise ValueError("truncated field")
            yield number, data[pos : pos + size]
            pos += size
        elif wire == 0:
            _, pos = _varint_at(data, pos)
            yield number, None
        elif wire in (1, 5):
            pos += 8 if wire == 1 else 4
            yield number, None
        else:
            raise ValueError(f"wire type {wire}")


def _as_examples(features: list[bytes]) -> list[bytes]:
    """`Example{features{feature{key: "v" value: <feature>}}}` around each serialized Feature."""
    values = length_delimited(0x12, pa.array(features, pa.large_binary()))
    key = pa.scalar(b"\n\x01v", pa.large_binary())
    entries = pc.binary_join_element_wise(key, values, pa.scalar(b"", pa.large_binary()))
    return length_delimited(0x0A, length_delimited(0x0A, entries)).to_pylist()


def _feature_lists(records: list[bytes]) -> dict[str, pa.Array]:
    """The feature lists of SequenceExamples, one list<list<...>> column per name.

    The `Feature` messages of every step are decoded by tfx_bsl's Example decoder (its
    SequenceExample decoder truncates int64 feature-list values to 32 bits).
    """
    per_record: list[dict[str, list[bytes]]] = []
    for index, record in enumerate(records):
        lists: dict[str, list[bytes]] = {}
        try:
            for number, payload in _fields(record):
                if number != 2 or payload is None:
                    continue
                for entry_number, entry in _fields(payload):
                    if entry_number != 1 or entry is None:
                        continue
                    entry_fields = dict(_fields(entry))
                    name = (entry_fields.get(1) or b"").decode("utf-8")
                    steps = [f for n, f in _fields(entry_fields.get(2) or b"") if n == 1 and f is not None]
                    lists[name] = steps
        except (ValueError, UnicodeDecodeError) as error:
            raise RecordError("records", index, f"not a valid SequenceExample ({error})") from None
        per_record.append(lists)
    columns = {}
    for name in sorted({name for lists in per_record for name in lists}):
        offsets, valid, steps = [0], [], []
        for lists in per_record:
            present = name in lists
            valid.append(present)
            steps.extend(lists.get(name, ()))
            offsets.append(len(steps))
        try:
            decoded = ExamplesToRecordBatchDecoder().DecodeBatch(_as_examples(steps))
        except RuntimeError:
            raise _mixed_kinds(name, per_record) from None
        values = decoded.column(0) if decoded.num_columns else pa.nulls(len(steps))
        mask = pa.array([not v for v in valid])
        columns[name] = pa.LargeListArray.from_arrays(pa.array(offsets, pa.int64()), values, mask=mask)
    return columns


#: The value kinds of a `Feature` message, by field number.
_FEATURE_KINDS = {1: "bytes_list", 2: "float_list", 3: "int64_list"}


def _mixed_kinds(name: str, per_record: list[dict[str, list[bytes]]]) -> RecordError:
    """The error for a feature list whose steps hold values of different kinds: names the
    feature list, the kinds, and the first record where a second kind appears."""
    seen: list[str] = []
    for index, lists in enumerate(per_record):
        for step in lists.get(name, ()):
            for number, _ in _fields(step):
                if number in _FEATURE_KINDS and _FEATURE_KINDS[number] not in seen:
                    seen.append(_FEATURE_KINDS[number])
            if len(seen) > 1:
                return RecordError(
                    "records",
                    index,
                    f"feature list {name!r} holds values of different kinds ({' and '.join(seen)}); "
                    "every step of a feature list must have one kind",
                )
    return RecordError("records", 0, f"feature list {name!r} cannot be decoded")


def _decode_with_tfx_bsl(records: list[bytes], record_type: str) -> pa.RecordBatch:
    # A SequenceExample's context is field 1, as an Example's features: the Example decoder
    # reads it and skips the feature lists (field 2).
    batch = ExamplesToRecordBatchDecoder().DecodeBatch(records)
    if record_type == "Example":
        return batch
    names, arrays = list(batch.schema.names), list(batch.columns)
    lists = _feature_lists(records)
    if not lists:
        return batch  # (keeps its row count when it has no columns either)
    for name, column in lists.items():
        if name in names:
            raise RecordError("records", 0, f"feature {name!r} is both a context feature and a feature list")
        names.append(name)
        arrays.append(column)
    return pa.RecordBatch.from_arrays(arrays, names=names)


def raw_decode(records: Sequence[bytes], record_type: str = "Example") -> pa.RecordBatch:
    """Parses records into tfx_bsl's raw columns (one large_list column per feature seen).

    Raises:
        RecordError: a record is not a valid message (`index` is the first such record).

    Example:
        >>> from beam_tensorize.kernels.tfrecord.example_encoder import encode_examples
        >>> records = encode_examples(pa.RecordBatch.from_pydict({"x": [1, 2]})).to_pylist()
        >>> raw_decode(records).to_pydict()
        {'x': [[1], [2]]}
    """
    check_record_type(record_type)
    records = list(records)
    if record_type == "ByteArray":
        return pa.RecordBatch.from_pydict({BYTE_ARRAY_COLUMN: pa.array(records, pa.binary())})
    try:
        return _decode_with_tfx_bsl(records, record_type)
    except RuntimeError:
        pass
    # Find the record that spoils the batch.
    for index, record in enumerate(records):
        try:
            _decode_with_tfx_bsl([record], record_type)
        except RuntimeError as error:
            raise RecordError("records", index, f"not a valid {record_type} ({error})") from None
        except RecordError as error:
            raise error.moved("records", index) from None
    # Every record decodes alone: the batch mixes kinds of one feature.
    raise RecordError(
        "records", 0, f"the records hold values of different kinds for one feature ({record_type})"
    )
