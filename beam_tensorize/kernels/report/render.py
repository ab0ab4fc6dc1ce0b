"""The run report as one self-contained HTML page: an overview, then one section per tensor with
its plot (inline PNG drawn with matplotlib; no script, no network).

Plots are drawn at the size they are shown (`PLOT_WIDTH` CSS pixels wide, one image pixel per
CSS pixel, in the first column of the tensor's section) with text in pixel sizes (`TICK_PX`
and up), and the same document always gives the same bytes (no dates or versions in the PNG).

The page is built by `page` (its HTML), `facts` (what it says of each tensor) and `plots`
(matplotlib); this module, which re-exports their names, is also the page renderer's child
process (`serve_one_page`, run as `python -m beam_tensorize.kernels.report.render`).

Example:
    >>> page = render_html({"split": "trainingData", "rowsRead": 2, "rowsWritten": 2, "badRows": 0,
    ...     "files": [], "deadLetters": [], "tensors": [{"name": "x", "kind": "numeric", "rows": 2,
    ...     "nullRate": 0.0, "emptyRate": 0.0}]})
    >>> page.startswith("<!DOCTYPE html>"), 'id="tensor-x"' in page, "<script" in page
    (True, True, False)
"""

from __future__ import annotations

import contextlib
import json
import os
import sys

from beam_tensorize.kernels.report.facts import (  # noqa: F401 - re-exported
    _distinct,
    _fmt,
    _largest_difference,
    _pct,
    _tensor_facts,
)
from beam_tensorize.kernels.report.page import (  # noqa: F401 - re-exported
    _STYLE,
    _table,
    _tensor_section,
    render_html,
    tensor_anchor,
)
from beam_tensorize.kernels.report.plots import (  # noqa: F401 - re-exported
    _DPI,
    _DRIFT_BAR_PX,
    _LABEL_CHARS,
    _LABEL_PX,
    PLOT_HEIGHT,
    PLOT_WIDTH,
    TICK_PX,
    TITLE_PX,
    _bars,
    _draw,
    _figure_key,
    _figure_png,
    _fitted,
    _label,
    _legend,
    _panel,
    _points,
    draw_figure,
    draw_figures,
)

__all__ = [
    "PLOT_WIDTH",
    "TICK_PX",
    "draw_figure",
    "draw_figures",
    "render_html",
    "serve_one_page",
    "tensor_anchor",
]

#: How much the page renderer lowers its priority (`os.nice`).
_NICENESS = 10
#: Tensors with a plot of each common kind (the page renderer's warm-up).
_WARM_UP = (
    {"name": "n", "numeric": {"histogram": {"edges": [0.0, 1.0, 2.0], "counts": [1, 2]}}},
    {"name": "c", "categorical": {"top": [{"value": "a", "count": 2}], "coverage": [{"k": 1, "share": 1.0}]}},
)


def serve_one_page(stdin=None, stdout=None) -> int:
    """The page renderer's child process: import matplotlib and draw a first plot while the job
    runs; then read lines of JSON from `stdin`: `{"figures": [tensor, ...]}` draws those plots
    ahead (the statistics are known before the job's last steps end), `{"page": document}`
    renders the page (with the plots drawn ahead where they still apply), writes it to `stdout`
    (UTF-8) and ends. End of input without a page: ends at once. It runs at a lower priority
    than the job: on a busy machine the job keeps its share of the processors."""
    with contextlib.suppress(AttributeError, OSError):  # os.nice: Unix only
        os.nice(_NICENESS)
    stdin = stdin or sys.stdin.buffer
    stdout = stdout or sys.stdout.buffer
    draw_figures(list(_WARM_UP))
    figures: dict[str, str] = {}
    for line in stdin:
        message = json.loads(line)
        if "figures" in message:
            figures.update(draw_figures(message["figures"]))
        elif "page" in message:
            stdout.write(render_html(message["page"], figures).encode("utf-8"))
            stdout.flush()
            break
    return 0


if __name__ == "__main__":
    # Ends without the interpreter's teardown (~0.15 s of freeing matplotlib's objects, which
    # the job would wait for): the page is written and flushed, nothing else is left to do.
    os._exit(serve_one_page())
