"""The run report as one self-contained HTML page: an overview, then one section per tensor with
its plot (inline SVG; no script, no network).

Plots are drawn at the size they are shown (`PLOT_WIDTH` CSS pixels wide) with text in pixel
sizes (`TICK_PX` and up), and the same document always gives the same bytes.

The page is built by `page` (its HTML), `facts` (what it says of each tensor) and `plots` (the
SVG); this module gathers their public names.

Example:
    >>> page = render_html({"split": "trainingData", "rowsRead": 2, "rowsWritten": 2, "badRows": 0,
    ...     "files": [], "deadLetters": [], "tensors": [{"name": "x", "kind": "numeric", "rows": 2,
    ...     "nullRate": 0.0, "emptyRate": 0.0}]})
    >>> page.startswith("<!DOCTYPE html>"), 'id="tensor-x"' in page, "<script" in page
    (True, True, False)
"""

from __future__ import annotations

from beam_tensorize.kernels.report.page import render_html, tensor_anchor
from beam_tensorize.kernels.report.plots import PLOT_HEIGHT, PLOT_WIDTH, TICK_PX, TITLE_PX, draw_figure

__all__ = [
    "PLOT_HEIGHT",
    "PLOT_WIDTH",
    "TICK_PX",
    "TITLE_PX",
    "draw_figure",
    "render_html",
    "tensor_anchor",
]
