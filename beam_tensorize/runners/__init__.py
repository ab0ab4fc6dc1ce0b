"""Helpers for running beam_tensorize on portable runners (Flink, Spark, Beam's job service)."""
