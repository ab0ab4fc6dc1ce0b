"""The run report for other Beam jobs: `ComputeStatistics` (a PTransform from any
`PCollection[RecordBatch]` to one statistics dict), and the functions that write, load, compare
and render reports (see docs/report.md).

Example:
    >>> import apache_beam as beam, pyarrow as pa
    >>> from beam_tensorize.config import parse_config
    >>> config = parse_config({"features": [{"outputTensorInfo": {"name": "x", "dtype": "float", "shape": []}}]})
    >>> with beam.Pipeline() as p:
    ...     batches = p | beam.Create([pa.RecordBatch.from_pydict({"x": [1.0, 3.0]})])
    ...     _ = batches | ComputeStatistics(config) | beam.Map(lambda s: print(s["tensors"][0]["numeric"]["mean"]))
    2.0
"""

from beam_tensorize.job.report import REPORT_FORMATS, load_report, rebuild_page, report_paths, write_report
from beam_tensorize.kernels.report.drift import DEFAULT_DRIFT_THRESHOLD, compare
from beam_tensorize.kernels.report.render import render_html
from beam_tensorize.transforms.report import ComputeStatistics

__all__ = [
    "DEFAULT_DRIFT_THRESHOLD",
    "REPORT_FORMATS",
    "ComputeStatistics",
    "compare",
    "load_report",
    "rebuild_page",
    "render_html",
    "report_paths",
    "write_report",
]
