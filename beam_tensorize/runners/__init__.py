"""Runner set-up: the command-line jobs' local runner (`direct`: Beam's in-process
FnApiRunner, never Prism) and a boot entry point for the SDK workers of portable runners
(`worker_boot`: Flink, Spark, Beam's job service)."""
