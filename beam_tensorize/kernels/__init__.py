"""Pure functions on Arrow record batches, no Beam: the work of every step, run by the Beam
transforms and by the Spark path alike. Grouped by subject: `formats` (the input-format
protocol), `avro`, `tfrecord`, `features`; beside them the shared pieces (`arrow_types`,
`provenance`, `dead_letters`, `shards`, `partitions`, `parquet_output`, `metadata`)."""
