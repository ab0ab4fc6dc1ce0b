"""What a run records so its transformation can be repeated at serving time: the metadata's
`transform` entry.

The config, feature lists and hashing settings are in the metadata already; this entry adds
the run's own settings that change the records (`--filter_zeros`, `--discard_unknown_entries`,
extra columns, Avro2TF partition ids, folder columns) and the Arrow schema of the input rows
the job read, so raw records given as Python dicts become the same Arrow types (a JSON `3`
for a `float` column is read as 3.0, not as an integer).

Example:
    >>> import pyarrow as pa
    >>> settings = TransformSettings(filter_zeros=True, input_schema=pa.schema([("x", pa.int32())]))
    >>> document = settings.to_json()
    >>> document["inputColumns"], document["filterZeros"]
    ({'x': 'int32'}, True)
    >>> TransformSettings.from_json(document) == settings
    True
"""

from __future__ import annotations

import base64
import dataclasses
from collections.abc import Iterable, Mapping

import pyarrow as pa

from beam_tensorize.config.errors import TensorizeError
from beam_tensorize.kernels.schemas import unify_schemas

__all__ = ["ServingError", "TransformSettings", "canonical_schema", "input_schema_of", "one_input_schema"]


class ServingError(TensorizeError, ValueError):
    """A record cannot be transformed (the batch job would have made it a dead letter), or
    the output folder does not hold what serving needs (`beam_tensorize.serving` and
    `beam_tensorize.tf.serving` raise it)."""


@dataclasses.dataclass(frozen=True)
class TransformSettings:
    """The settings of a run that decide its records, beside the config and feature lists.

    Attributes:
        extra_columns: input columns kept beside the tensors (names or `expression:name`).
        filter_zeros: zero values were dropped from name-term-value sparse vectors.
        check_shapes: rows off their tensor's fixed shape were bad records (not kept as they are).
        discard_unknown_entries: entries not in their feature list were left out.
        partition_field_name: the column Avro2TF's `partitionId` was computed from, or None.
        num_partitions: how many partition ids.
        folder_columns: columns that name partition folders (left out of the records).
        input_schema: the Arrow schema of the input rows read (None: not known).
    """

    extra_columns: tuple[str, ...] = ()
    filter_zeros: bool = False
    check_shapes: bool = False
    discard_unknown_entries: bool = False
    partition_field_name: str | None = None
    num_partitions: int = 100
    folder_columns: tuple[str, ...] = ()
    input_schema: pa.Schema | None = None

    def to_json(self) -> dict:
        """The metadata's `transform` entry (see docs/metadata.md); the schema in its
        canonical form (`canonical_schema`), so every input format records the same one."""
        schema = None if self.input_schema is None else canonical_schema(self.input_schema)
        return {
            "extraColumns": list(self.extra_columns),
            "filterZeros": self.filter_zeros,
            "checkShapes": self.check_shapes,
            "discardUnknownEntries": self.discard_unknown_entries,
            "partitionIds": (
                {"field": self.partition_field_name, "numPartitions": self.num_partitions}
                if self.partition_field_name
                else None
            ),
            "folderColumns": list(self.folder_columns),
            "inputColumns": None if schema is None else {f.name: str(f.type) for f in schema},
            "inputSchema": None if schema is None else base64.b64encode(schema.serialize()).decode("ascii"),
        }

    @classmethod
    def from_json(cls, document: Mapping | None) -> TransformSettings:
        """Read a `transform` entry (None, from metadata written before it existed: defaults)."""
        if not document:
            return cls()
        ids = document.get("partitionIds") or {}
        encoded = document.get("inputSchema")
        schema = None
        if encoded:
            schema = pa.ipc.read_schema(pa.py_buffer(base64.b64decode(encoded)))
        return cls(
            extra_columns=tuple(document.get("extraColumns", ())),
            filter_zeros=bool(document.get("filterZeros", False)),
            check_shapes=bool(document.get("checkShapes", False)),
            discard_unknown_entries=bool(document.get("discardUnknownEntries", False)),
            partition_field_name=ids.get("field"),
            num_partitions=int(ids.get("numPartitions", 100)),
            folder_columns=tuple(document.get("folderColumns", ())),
            input_schema=schema,
        )


def canonical_schema(schema: pa.Schema) -> pa.Schema:
    """`schema` with its types only: no metadata, every field nullable (ORC keeps no
    nullability), every list's item named `item` (Parquet names it `element`); what the same
    rows read from Avro, Parquet or ORC have in common.

    Example:
        >>> canonical_schema(pa.schema([("a", pa.list_(pa.field("element", pa.int64())))])).field("a")
        pyarrow.Field<a: list<item: int64>>
    """
    return pa.schema([_canonical_field(f) for f in schema])


def _canonical_field(field: pa.Field) -> pa.Field:
    return pa.field(field.name, _canonical_type(field.type))


def _canonical_type(t: pa.DataType) -> pa.DataType:
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        item = _canonical_field(t.value_field)
        item = pa.field("item", item.type)
        return pa.list_(item) if pa.types.is_list(t) else pa.large_list(item)
    if pa.types.is_struct(t):
        return pa.struct([_canonical_field(t.field(i)) for i in range(t.num_fields)])
    return t


def input_schema_of(batch: pa.RecordBatch) -> bytes:
    """A batch's schema without its schema-level metadata (where the rows came from),
    serialized: what the metadata's `inputSchema` is made of."""
    return batch.schema.remove_metadata().serialize().to_pybytes()


def one_input_schema(schemas: Iterable[bytes | None]) -> bytes | None:
    """The one schema of every batch read (`input_schema_of`), unified the way the reader
    unifies files (`beam_tensorize.kernels.schemas`); None for no batch. The order of
    `schemas` does not matter (a Beam combiner's function).

    Raises:
        ValueError: two schemas do not unify.
    """
    distinct = sorted({s for s in schemas if s is not None})
    if not distinct:
        return None
    if len(distinct) == 1:
        return distinct[0]
    parsed = [(f"batch schema {i + 1}", pa.ipc.read_schema(pa.py_buffer(s))) for i, s in enumerate(distinct)]
    return unify_schemas(parsed).serialize().to_pybytes()
