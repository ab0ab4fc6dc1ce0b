"""Pure functions on Arrow record batches, no Beam: the work of every step, run by the Beam
transforms and by the Spark path alike. Grouped by subject: `formats` (the input-format
protocol), `avro`, `tfrecord`, `features`, `report` (the run report); beside them the shared
pieces (`arrow_types`, `schemas`, `provenance`, `dead_letters`, `shards`, `split_files`,
`partitions`, `dedup`, `parquet_output`, `avro_output`, `metadata`, `tfmd_schema`, `ranking`,
`serving_settings`, `serving_requests`, `filesystems`)."""
