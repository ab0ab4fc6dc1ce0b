"""Avro object container files to Arrow record batches, block by block.

An Avro container file is a header (magic ``Obj\\x01``, a metadata map holding
the writer schema and the codec, a 16-byte sync marker) followed by blocks::

    long  record count
    long  byte size of the (compressed) payload
    byte  payload[size]
    byte  sync marker[16]

This module splits that work in two, like a splittable source needs it:

* :func:`read_header` and :func:`iter_blocks` find blocks without decoding
  them. ``iter_blocks`` takes a byte range ``[start, end)`` and yields exactly
  the blocks that *start* in it, so cutting a file into consecutive ranges
  reads every block once.
* :func:`decode_block` decompresses one block and decodes its records into a
  ``pyarrow.RecordBatch`` with a given (possibly projected) Arrow schema.

Records are decoded with fastavro's compiled reader, then handed to Arrow as
one struct array per block. The writer schema is compiled once per
(schema, projection) into a *decoder schema* for fastavro that is
wire-identical to the writer schema but arranged so that the Python values
need (almost) no post-processing:

* all names are full names; ``doc``/``default``/``aliases`` are dropped;
* logical types are removed, so fastavro returns raw ints / bytes / strings;
  dates, times and timestamps become Arrow temporal types by a zero-copy
  ``view`` of the int arrays (exact, and no ``datetime`` objects are built),
  decimals are converted from their big-endian two's-complement bytes here;
* in a union of several non-null types (an Arrow struct ``member0``,
  ``member1``, ...) every unnamed branch is wrapped in a one-field record
  with a private name. The wrapper has the same encoding as the branch, and
  with fastavro's ``return_named_type`` option every value of such a union
  comes back as ``(type name, value)``, which tells the branch exactly
  (``int`` vs ``long``, ``string`` vs an enum, ``bytes`` vs ``fixed``, ``map``
  vs a record) without guessing from the Python value.

With a column projection that leaves out records, arrays or maps, fastavro
is given a reader schema listing only the projected top-level fields, so it
skips the others without building Python objects for them (checked once per
process; should a fastavro version not behave as expected, all fields are
decoded and the others dropped).

Type mapping (Spark's spark-avro conventions): ``null`` -> null,
``boolean`` -> bool, ``int`` -> int32, ``long`` -> int64, ``float`` ->
float32, ``double`` -> float64, ``bytes`` -> binary, ``string`` -> string,
``fixed`` -> fixed_size_binary, ``enum`` -> string, ``record`` -> struct,
``array`` -> list, ``map`` -> map<string, value>. ``[null, X]`` is X,
nullable; ``[int, long]`` -> int64 and ``[float, double]`` -> float64 (null
allowed); any other union is a struct of nullable ``member<i>`` fields, one
per non-null branch, exactly one set per row. A field, list item or map value
is nullable only when its type is a union with null. Logical types: ``date``
-> date32, ``time-millis`` -> time32[ms], ``time-micros`` -> time64[us],
``timestamp-millis/micros/nanos`` -> timestamp[ms/us/ns, UTC],
``local-timestamp-*`` -> timestamp without time zone, ``decimal`` ->
decimal128 (decimal256 above precision 38), ``uuid`` -> string; unknown or
invalid logical types fall back to the underlying type. A record field's
``doc`` goes into the Arrow field metadata under ``doc``.

Native fast path: when the optional C extension is built (``setup.py`` builds
it where a compiler is available) and the schema uses only what it supports
(everything above but decimals, see :mod:`beam_tensorize.kernels.avro.native`),
blocks are decoded straight into Arrow buffers, with results identical to the
fastavro path and many times faster. Setting the environment variable
``BEAM_TENSORIZE_AVRO_DECODER=fastavro`` forces the fastavro path (read at
each block, so it can be changed in a running process).
"""

from beam_tensorize.kernels.arrow_types import project_arrow_schema, resolve_column
from beam_tensorize.kernels.avro.container import (
    CODECS,
    MAGIC,
    SYNC_SIZE,
    AvroFormatError,
    AvroHeader,
    RawBlock,
    iter_blocks,
    read_header,
)
from beam_tensorize.kernels.avro.decode import DECODER_ENV, decode_block, read_avro_batches
from beam_tensorize.kernels.avro.reading import (
    DEFAULT_BATCH_ROWS,
    DEFAULT_SPLIT_BYTES,
    read_avro_range,
    read_range_schema,
    split_ranges,
)
from beam_tensorize.kernels.avro.schema import AvroSchemaJson, parse_schema
from beam_tensorize.kernels.avro.types import avro_schema_to_arrow

__all__ = [
    "CODECS",
    "DECODER_ENV",
    "DEFAULT_BATCH_ROWS",
    "DEFAULT_SPLIT_BYTES",
    "MAGIC",
    "SYNC_SIZE",
    "AvroFormatError",
    "AvroHeader",
    "AvroSchemaJson",
    "RawBlock",
    "avro_schema_to_arrow",
    "decode_block",
    "iter_blocks",
    "parse_schema",
    "project_arrow_schema",
    "read_avro_batches",
    "read_avro_range",
    "read_header",
    "read_range_schema",
    "resolve_column",
    "split_ranges",
]
