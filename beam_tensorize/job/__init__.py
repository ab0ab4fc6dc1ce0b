"""Job steps both runtimes (Beam and Spark) run, free of Beam transforms: the settings
(`spec`), the checks before reading (`preflight`), the reading of input splits (`reading`,
`tfrecord_read`, `daily`), the commit protocol (`commit`, `transaction`), the finishing steps
(`finish`), and the metadata, feature-list and run-report files (`metadata`, `feature_lists`,
`report`)."""
