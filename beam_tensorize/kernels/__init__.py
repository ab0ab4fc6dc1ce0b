"""Pure functions on Arrow record batches, no Beam: the work of every step, run by the Beam
transforms and by the Spark path alike. Grouped by subject: `formats` (the input-format
protocol), `output` (the output-format protocol, the placement of rows into files, encoding
with dead letters, deduplicated blocks), `serving` (what serving repeats of a run), `avro`,
`tfrecord`, `features`, `report` (the run report); beside them the shared pieces
(`arrow_types`, `schemas`, `provenance`, `partitions`, `metadata`, `tfmd_schema`, `ranking`,
`filesystems`)."""
