"""The report page's plots, drawn with matplotlib: one per tensor (`draw_figure`), as an inline
PNG `<img>` of its size in pixels, the same bytes for the same document (no dates or versions).

Plots are drawn at the size they are shown (`PLOT_WIDTH` CSS pixels wide, one image pixel per
CSS pixel) with text in pixel sizes (`TICK_PX` and up); matplotlib is imported when a first plot
is drawn.
"""

from __future__ import annotations

import base64
import html
import io
import json
import math

__all__ = ["PLOT_HEIGHT", "PLOT_WIDTH", "TICK_PX", "TITLE_PX", "draw_figure", "draw_figures"]

#: Resolution of the plots (pixels per inch): a point of text is `_DPI / 72` pixels.
_DPI = 100
#: Width and (usual) height of a plot, in pixels: the page shows it at this size.
PLOT_WIDTH, PLOT_HEIGHT = 560, 300
#: Text sizes on the plots, in pixels (at the size the page shows them).
TICK_PX, TITLE_PX = 12, 13
#: Categorical drift: the height each value takes (its two bars), in pixels.
_DRIFT_BAR_PX = 24
#: Longest value label on a plot (characters, then pixels; longer ones are cut, ending in "…").
_LABEL_CHARS, _LABEL_PX = 32, 200


def _points(px: float) -> float:
    """A text size in points that is `px` pixels on the plot."""
    return px * 72 / _DPI


def _panel(tensor: dict, drift: dict | None) -> str | None:
    """The tensor's plot: the drift comparison, else the bucket load of a hashed tensor, the
    histogram of numbers, the coverage curve of entries, or the values per row (None: nothing
    to plot). One plot per tensor keeps the page cheap to draw (the top entries are HTML
    bars)."""
    candidates = [
        ("drift", bool(drift and ("histograms" in drift or drift.get("frequencies", {}).get("values")))),
        ("load", "load" in tensor.get("hashing", {})),
        ("numeric", bool(tensor.get("numeric", {}).get("histogram"))),
        ("coverage", bool(tensor.get("categorical", {}).get("top"))),
        ("lengths", bool(tensor.get("lengths", {}).get("histogram"))),
    ]
    return next((name for name, present in candidates if present), None)


def _label(value) -> str:
    """A value as a tick label: shortened, `$` kept literal (no mathtext)."""
    text = str(value)
    if len(text) > _LABEL_CHARS:
        text = text[: _LABEL_CHARS - 1] + "…"
    return text.replace("$", r"\$")


def _fitted(labels: list[str], pixels: int = _LABEL_PX) -> tuple[list[str], int]:
    """The tick labels cut to at most `pixels` wide (ending in "…"), measured on the font's
    outlines without drawing, and the width of the widest."""
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    font, measure = FontProperties(size=_points(TICK_PX)), TextToPath()

    def width(text: str) -> float:
        return measure.get_text_width_height_descent(text, font, ismath=False)[0] * _DPI / 72

    fitted, widest = [], 0.0
    for text in labels:
        cut = text
        while len(cut) > 1 and width(cut) > pixels:
            cut = cut[:-2] + "…"
        fitted.append(cut)
        widest = max(widest, width(cut))
    return fitted, math.ceil(widest)


def draw_figure(tensor: dict, drift: dict | None = None):
    """The matplotlib `Figure` of a tensor's plot (None when it has nothing to plot), drawn at
    `_DPI` with a fixed layout (tight_layout would draw every figure twice; no grid of
    subplots): `PLOT_WIDTH` pixels wide, taller for a categorical drift of many values."""
    panel = _panel(tensor, drift)
    if panel is None:
        return None
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    categorical_drift = panel == "drift" and "histograms" not in drift
    width, height = PLOT_WIDTH, PLOT_HEIGHT
    left, right, top, bottom = 64, 16, 30, 40  # margins, pixels
    labels = None
    if categorical_drift:
        labels, widest = _fitted([_label(v) for v in drift["frequencies"]["values"]])
        height = max(PLOT_HEIGHT, top + bottom + _DRIFT_BAR_PX * len(labels))
        left = max(64, 16 + widest)
    elif panel == "coverage":
        bottom += 14  # the axis label
    fig = Figure(figsize=(width / _DPI, height / _DPI), dpi=_DPI)
    FigureCanvasAgg(fig)
    ax = fig.add_axes(
        (left / width, bottom / height, 1 - (left + right) / width, 1 - (top + bottom) / height)
    )
    _draw(ax, panel, tensor, drift, labels)
    ax.tick_params(labelsize=_points(TICK_PX))
    ax.title.set_fontsize(_points(TITLE_PX))
    ax.xaxis.label.set_fontsize(_points(TICK_PX))
    ax.yaxis.label.set_fontsize(_points(TICK_PX))
    if categorical_drift:
        ax.xaxis.set_major_locator(MaxNLocator(5))
        ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{100 * value:.3g}%"))
    else:
        if panel != "coverage":
            ax.xaxis.set_major_locator(MaxNLocator(6))
            ax.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:.4g}"))
        ax.yaxis.set_major_locator(MaxNLocator(5))  # few ticks: most of a plot's drawing time
    return fig


def _figure_png(tensor: dict, drift: dict | None) -> str:
    """The tensor's plot as an inline PNG `<img>` of its size in pixels ('' when it has
    nothing to plot)."""
    fig = draw_figure(tensor, drift)
    if fig is None:
        return ""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", metadata={"Software": None})
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    width, height = (round(v) for v in fig.get_size_inches() * _DPI)
    alt = html.escape(f"{tensor['name']}: {_panel(tensor, drift)}")
    return (
        f'<img class="plot" alt="{alt}" width="{width}" height="{height}" src="data:image/png;base64,{data}">'
    )


def _bars(ax, edges, counts, **style):
    """A histogram as one filled step artist (much cheaper to draw than a bar per bin)."""
    style.pop("edgecolor", None)
    ax.stairs(counts, edges, fill=True, **style)


def _legend(ax) -> None:
    """Train and this split, above the plot's right end (clear of the bars)."""
    ax.legend(
        frameon=False,
        fontsize=_points(TICK_PX),
        loc="lower right",
        bbox_to_anchor=(1.0, 1.0),
        ncols=2,
        borderaxespad=0.1,
        handlelength=1.2,
    )


def _draw(ax, panel: str, tensor: dict, drift: dict | None, labels: list[str] | None = None) -> None:
    if panel == "numeric":
        hist = tensor["numeric"]["histogram"]
        _bars(ax, hist["edges"], hist["counts"], color="#3e7cb1", edgecolor="white")
        ax.set_title("ids" if tensor.get("hashing", {}).get("statisticsOf") == "ids" else "values", y=1.0)
    elif panel == "drift" and "histograms" in drift:
        hist = drift["histograms"]
        total_a, total_b = sum(hist["train"]) or 1, sum(hist["current"]) or 1
        _bars(
            ax, hist["edges"], [c / total_a for c in hist["train"]], color="#9aa5b1", alpha=0.7, label="train"
        )
        _bars(
            ax,
            hist["edges"],
            [c / total_b for c in hist["current"]],
            color="#3e7cb1",
            alpha=0.6,
            label="this split",
        )
        _legend(ax)
        ax.set_title(f"share of {drift['compared']}", loc="left", y=1.0)
    elif panel == "drift":  # categorical: each value's share in train and here, side by side
        freq = drift["frequencies"]
        rows = range(len(freq["values"]))
        ax.barh([y - 0.2 for y in rows], freq["train"], height=0.4, color="#9aa5b1", label="train")
        ax.barh([y + 0.2 for y in rows], freq["current"], height=0.4, color="#3e7cb1", label="this split")
        ax.set_yticks(list(rows), labels)
        ax.set_ylim(len(freq["values"]) - 0.5, -0.5)  # the most frequent on top
        _legend(ax)
        ax.set_title("share of entries", loc="left", y=1.0)
    elif panel == "coverage":
        points = tensor["categorical"]["coverage"]
        ax.plot([p["k"] for p in points], [p["share"] for p in points], marker="o", color="#3e7cb1")
        ax.set_xscale("log")
        ticks = [k for k in (1, 10, 100, 1000) if k <= points[-1]["k"]]
        ax.set_xticks(ticks, [str(k) for k in ticks])  # plain labels (no mathtext)
        ax.minorticks_off()
        ax.set_ylim(0, 1.02)
        ax.set_title("coverage by top k", y=1.0)
        ax.set_xlabel("k")
    elif panel == "load":
        hist = tensor["hashing"]["load"]["histogram"]
        _bars(ax, hist["edges"], hist["counts"], color="#c17c2f", edgecolor="white")
        ax.set_title("bucket load (occurrences per bucket)", y=1.0)
        ax.set_ylabel("buckets")
    elif panel == "lengths":
        hist = tensor["lengths"]["histogram"]
        _bars(ax, hist["edges"], hist["counts"], color="#6b9f5a", edgecolor="white")
        ax.set_title("values per row", y=1.0)
    ax.spines[["top", "right"]].set_visible(False)


def _figure_key(tensor: dict, drift: dict | None) -> str:
    return json.dumps([tensor, drift], sort_keys=True)


def draw_figures(tensors: list[dict], drift: dict | None = None) -> dict[str, str]:
    """The plots of `tensors` (report entries) for `render_html(..., figures=)`."""
    drift_of = {t["name"]: t for t in (drift or {}).get("tensors", [])}
    return {_figure_key(t, drift_of.get(t["name"])): _figure_png(t, drift_of.get(t["name"])) for t in tensors}
