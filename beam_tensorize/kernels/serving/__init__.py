"""What serving needs to repeat a run's transformation: the run's own settings recorded in the
metadata (`settings`) and the request format of the serving SavedModel (`requests`)."""
