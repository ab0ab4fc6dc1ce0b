"""Job steps both runtimes (Beam and Spark) run, free of Beam transforms: the commit protocol
of sharded outputs (`commit`)."""
