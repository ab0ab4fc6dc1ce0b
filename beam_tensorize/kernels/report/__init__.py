"""The run report's Beam-free parts: mergeable statistics on Arrow batches (`statistics`,
`sketches`), drift between two reports (`drift`), anomalies against the train split's schema
(`anomalies`), the statistics as TFDV's (`tfdv_statistics`) and the HTML page (`render`)."""
