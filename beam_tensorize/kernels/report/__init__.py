"""The run report's Beam-free parts: mergeable statistics on Arrow batches (`statistics`,
`sketches`), drift between two reports (`drift`) and the HTML page (`render`)."""
