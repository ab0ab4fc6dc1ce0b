"""The report page's plots: one per tensor (`draw_figure`), drawn here as inline SVG (no plotting
library to import; a page's plots take milliseconds), the same bytes for the same document.

A plot is a `Figure`: its size in pixels, what it shows in data terms (`bars`, the `line` of a
coverage curve, its `texts` with their pixel sizes) and `Figure.svg`, the `<svg>` element the
page holds. Plots are drawn at the size they are shown (`PLOT_WIDTH` CSS pixels wide, taller for
a categorical drift of many values), with text in pixel sizes (`TICK_PX` and up).

Example:
    >>> fig = draw_figure({"name": "x", "numeric": {"histogram": {"edges": [0.0, 1.0, 2.0], "counts": [1, 3]}}})
    >>> fig.title, [(b.start, b.end, b.value) for b in fig.bars], (fig.width, fig.height)
    ('values', [(0.0, 1.0, 1), (1.0, 2.0, 3)], (560, 300))
    >>> fig.svg("x: numeric").startswith('<svg class="plot" ')
    True
"""

from __future__ import annotations

import html
import math
import unicodedata
from dataclasses import dataclass, field

__all__ = [
    "PLOT_HEIGHT",
    "PLOT_WIDTH",
    "TICK_PX",
    "TITLE_PX",
    "Bar",
    "Figure",
    "Text",
    "draw_figure",
    "figure_svg",
    "nice_ticks",
    "text_width",
]

#: Width and (usual) height of a plot, in pixels: the page shows it at this size.
PLOT_WIDTH, PLOT_HEIGHT = 560, 300
#: Text sizes on the plots, in pixels (at the size the page shows them).
TICK_PX, TITLE_PX = 12, 13
#: Categorical drift: the height each value takes (its two bars), in pixels.
_DRIFT_BAR_PX = 24
#: Longest value label on a plot (characters, then pixels; longer ones are cut, ending in "…").
_LABEL_CHARS, _LABEL_PX = 32, 200
#: The plots' font: the widths below are Helvetica's (Arial and Liberation Sans share them).
_FONT = "Helvetica, Arial, Liberation Sans, sans-serif"
#: Room left for a text beyond its width in Helvetica (a browser without it falls back to a
#: wider font: DejaVu Sans is ~10% wider).
_FONT_SLACK = 1.15
#: Advance widths of printable ASCII (32-126) in Helvetica, thousandths of the font size.
_ASCII_WIDTHS = (
    278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278,
    556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556,
    1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778,
    667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556,
    333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556,
    556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584,
)  # fmt: skip
_TICK_LENGTH = 4
_AXIS, _MUTED, _INK = "#52606d", "#616e7c", "#1f2933"
_BLUE, _GREY, _ORANGE, _GREEN = "#3e7cb1", "#9aa5b1", "#c17c2f", "#6b9f5a"


def text_width(text: str, px: float = TICK_PX) -> float:
    """The width of `text` at `px` pixels in the plots' font, from its advance widths
    (characters outside ASCII: a wide East Asian one is 1 em, a combining mark 0, others 0.6 em).

    Example:
        >>> round(text_width("drama"), 1), text_width("天", 10)
        (34.0, 10.0)
    """
    total = 0
    for char in text:
        code = ord(char)
        if 32 <= code <= 126:
            total += _ASCII_WIDTHS[code - 32]
        elif unicodedata.combining(char):
            continue
        elif unicodedata.east_asian_width(char) in "WF":
            total += 1000
        else:
            total += 600
    return total * px / 1000


@dataclass(frozen=True)
class Bar:
    """A bar, in data terms: along the bins' (or values') axis from `start` to `end`, `value`
    long, of `series` (the legend's name, or "" when the plot has one series)."""

    series: str
    start: float
    end: float
    value: float


@dataclass(frozen=True)
class Text:
    """A text on the plot: what it says, where (pixels; its anchor point), its size in pixels
    and its role ("title", "tick", "axis" or "legend")."""

    text: str
    x: float
    y: float
    px: int
    role: str
    anchor: str = "middle"
    vertical: bool = False


@dataclass
class Figure:
    """One plot: its panel ("numeric", "drift", "load", "coverage" or "lengths"), title, size
    in pixels, what it shows and the SVG elements that draw it."""

    panel: str
    title: str
    width: int = PLOT_WIDTH
    height: int = PLOT_HEIGHT
    bars: list[Bar] = field(default_factory=list)
    line: list[tuple[float, float]] = field(default_factory=list)
    texts: list[Text] = field(default_factory=list)
    legend: list[str] = field(default_factory=list)
    _shapes: list[str] = field(default_factory=list)

    def svg(self, alt: str) -> str:
        """The plot as an inline `<svg>` element of its size in pixels, labelled `alt`."""
        label = html.escape(alt)
        texts = "".join(_text_svg(t) for t in self.texts)
        return (
            f'<svg class="plot" xmlns="http://www.w3.org/2000/svg" width="{self.width}" height="{self.height}" '
            f'viewBox="0 0 {self.width} {self.height}" role="img" aria-label="{label}" '
            f'font-family="{html.escape(_FONT)}"><title>{label}</title>{"".join(self._shapes)}{texts}</svg>'
        )


def _n(value: float) -> str:
    """A coordinate in pixels, to a tenth."""
    text = f"{value:.1f}"
    return "0.0" if text == "-0.0" else text


def _text_svg(t: Text) -> str:
    attrs = f'x="{_n(t.x)}" y="{_n(t.y)}" font-size="{t.px}" text-anchor="{t.anchor}"'
    if t.vertical:
        attrs += f' transform="rotate(-90 {_n(t.x)} {_n(t.y)})"'
    color = _INK if t.role in ("title", "legend") else _MUTED if t.role == "axis" else _AXIS
    return f'<text {attrs} fill="{color}">{html.escape(t.text)}</text>'


class _Scale:
    """Data values to pixels along one axis (linear, or log10)."""

    def __init__(self, low: float, high: float, start: float, stop: float, log: bool = False):
        self.log = log
        self.low, self.high = (math.log10(low), math.log10(high)) if log else (low, high)
        self.start, self.stop = start, stop

    def __call__(self, value: float) -> float:
        v = math.log10(value) if self.log else value
        return self.start + (v - self.low) / (self.high - self.low) * (self.stop - self.start)


def nice_ticks(low: float, high: float, most: int) -> list[float]:
    """Tick values in [low, high]: multiples of 1, 2, 2.5 or 5 times a power of ten, the
    smallest such step giving at most `most` intervals.

    Example:
        >>> nice_ticks(0, 1, 5), nice_ticks(-0.5, 12.5, 6)
        ([0.0, 0.2, 0.4, 0.6, 0.8, 1.0], [0.0, 2.5, 5.0, 7.5, 10.0, 12.5])
    """
    if not high > low:
        return [float(low)]
    power = 10.0 ** math.floor(math.log10((high - low) / most))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if (high - low) / (m * power) <= most + 1e-9)
    first, last = math.ceil(low / step - 1e-9), math.floor(high / step + 1e-9)
    return [float(f"{i * step:.12g}") + 0.0 for i in range(first, last + 1)]


def _short(value: float) -> str:
    """A number as a short tick label: 0.25, 950, 12.5k, 1.25M."""
    if abs(value) >= 1e6:
        return f"{value / 1e6:.4g}M"
    if abs(value) >= 1e4:
        return f"{value / 1e3:.4g}k"
    return f"{value:.4g}"


def _panel(tensor: dict, drift: dict | None) -> str | None:
    """The tensor's plot: the drift comparison, else the bucket load of a hashed tensor, the
    histogram of numbers, the coverage curve of entries, or the values per row (None: nothing
    to plot). One plot per tensor (the top entries are HTML bars)."""
    candidates = [
        ("drift", bool(drift and ("histograms" in drift or drift.get("frequencies", {}).get("values")))),
        ("load", "load" in tensor.get("hashing", {})),
        ("numeric", bool(tensor.get("numeric", {}).get("histogram"))),
        ("coverage", bool(tensor.get("categorical", {}).get("top"))),
        ("lengths", bool(tensor.get("lengths", {}).get("histogram"))),
    ]
    return next((name for name, present in candidates if present), None)


def _fitted(labels: list, pixels: int = _LABEL_PX) -> tuple[list[str], int]:
    """Values as tick labels: at most `_LABEL_CHARS` characters and `pixels` wide (cut, ending
    in "…"), and the width of the widest."""
    fitted, widest = [], 0.0
    for value in labels:
        cut = str(value)
        if len(cut) > _LABEL_CHARS:
            cut = cut[: _LABEL_CHARS - 1] + "…"
        while len(cut) > 1 and text_width(cut) > pixels:
            cut = cut[:-2] + "…"
        fitted.append(cut)
        widest = max(widest, text_width(cut))
    return fitted, math.ceil(widest)


class _Plot:
    """A figure being drawn, and its plotting area (pixels: `x0`..`x1` left to right, `y0`..`y1`
    bottom to top)."""

    def __init__(self, fig: Figure, left: int, right: int, top: int, bottom: int):
        self.fig = fig
        self.x0, self.x1 = left, fig.width - right
        self.y0, self.y1 = fig.height - bottom, top  # y grows downwards

    def rect(self, x: float, y: float, width: float, height: float, color: str, opacity: float = 1.0) -> None:
        if width <= 0 or height <= 0:
            return
        fade = "" if opacity == 1.0 else f' fill-opacity="{opacity}"'
        self.fig._shapes.append(
            f'<rect x="{_n(x)}" y="{_n(y)}" width="{_n(width)}" height="{_n(height)}" fill="{color}"{fade}/>'
        )

    def axes(self, xs: _Scale, ys: _Scale, xticks, yticks, xlabel=str, ylabel=str) -> None:
        """The left and bottom axis lines, their ticks and tick labels."""
        shapes, texts = self.fig._shapes, self.fig.texts
        path = [f"M{_n(self.x0)} {_n(self.y1)}V{_n(self.y0)}H{_n(self.x1)}"]
        for value in xticks:
            x = xs(value)
            path.append(f"M{_n(x)} {_n(self.y0)}v{_TICK_LENGTH}")
            texts.append(Text(xlabel(value), x, self.y0 + _TICK_LENGTH + TICK_PX + 1, TICK_PX, "tick"))
        for value in yticks:
            y = ys(value)
            path.append(f"M{_n(self.x0)} {_n(y)}h-{_TICK_LENGTH}")
            texts.append(
                Text(ylabel(value), self.x0 - _TICK_LENGTH - 3, y + TICK_PX * 0.35, TICK_PX, "tick", "end")
            )
        shapes.append(
            f'<path d="{"".join(path)}" stroke="{_AXIS}" fill="none" stroke-width="1" shape-rendering="crispEdges"/>'
        )

    def title(self, text: str, left: bool = False) -> None:
        self.fig.title = text
        x = self.x0 if left else (self.x0 + self.x1) / 2
        self.fig.texts.append(Text(text, x, self.y1 - 8, TITLE_PX, "title", "start" if left else "middle"))

    def legend(self, entries: list[tuple[str, str, float]]) -> None:
        """Swatches and names above the plot's right end (clear of the bars)."""
        x = self.x1
        for name, color, opacity in reversed(entries):
            x -= text_width(name) * _FONT_SLACK
            self.fig.texts.append(Text(name, x, self.y1 - 8, TICK_PX, "legend", "start"))
            x -= 16
            self.rect(x, self.y1 - 8 - 10, 12, 10, color, opacity)
            x -= 12
        self.fig.legend = [name for name, _, _ in entries]

    def histogram(self, edges: list, series: list[tuple[str, list, str, float]], ylabel=_short) -> None:
        """Bars per bin of one or more series (name, heights, color, opacity), over each other."""
        fig = self.fig
        top = max((max(values, default=0) for _, values, _, _ in series), default=0) or 1
        xs = _Scale(edges[0], edges[-1] if edges[-1] > edges[0] else edges[0] + 1, self.x0, self.x1)
        ys = _Scale(0, top * 1.05, self.y0, self.y1)
        for name, values, color, opacity in series:
            for start, end, value in zip(edges, edges[1:], values):
                fig.bars.append(Bar(name, start, end, value))
                self.rect(xs(start), ys(value), xs(end) - xs(start), ys(0) - ys(value), color, opacity)
        low, high = edges[0], edges[-1]
        self.axes(xs, ys, nice_ticks(low, high, 6), nice_ticks(0, top * 1.05, 5), _short, ylabel)


def draw_figure(tensor: dict, drift: dict | None = None) -> Figure | None:
    """The plot of a tensor's report entry (and its drift entry), None when it has nothing to
    plot: `PLOT_WIDTH` pixels wide, taller for a categorical drift of many values."""
    panel = _panel(tensor, drift)
    if panel is None:
        return None
    left, right, top, bottom = 64, 16, 30, 40  # margins, pixels
    fig = Figure(panel, "")
    if panel == "drift" and "histograms" not in drift:
        _categorical_drift(fig, drift, left, right, top, bottom)
        return fig
    if panel == "coverage":
        bottom += 14  # the axis label
    plot = _Plot(fig, left, right, top, bottom)
    if panel == "numeric":
        hist = tensor["numeric"]["histogram"]
        plot.histogram(hist["edges"], [("", hist["counts"], _BLUE, 1.0)])
        plot.title("ids" if tensor.get("hashing", {}).get("statisticsOf") == "ids" else "values")
    elif panel == "drift":
        hist = drift["histograms"]
        total_a, total_b = sum(hist["train"]) or 1, sum(hist["current"]) or 1
        shares = [
            ("train", [c / total_a for c in hist["train"]], _GREY, 0.7),
            ("this split", [c / total_b for c in hist["current"]], _BLUE, 0.6),
        ]
        plot.histogram(hist["edges"], shares, lambda v: f"{v:.3g}")
        plot.legend([(name, color, opacity) for name, _, color, opacity in shares])
        plot.title(f"share of {drift['compared']}", left=True)
    elif panel == "coverage":
        _coverage(plot, tensor["categorical"]["coverage"])
    elif panel == "load":
        hist = tensor["hashing"]["load"]["histogram"]
        plot.histogram(hist["edges"], [("", hist["counts"], _ORANGE, 1.0)])
        plot.title("bucket load (occurrences per bucket)")
        fig.texts.append(Text("buckets", 14, (plot.y0 + plot.y1) / 2, TICK_PX, "axis", vertical=True))
    else:  # lengths
        hist = tensor["lengths"]["histogram"]
        plot.histogram(hist["edges"], [("", hist["counts"], _GREEN, 1.0)])
        plot.title("values per row")
    return fig


def _coverage(plot: _Plot, points: list[dict]) -> None:
    """Share of all occurrences the top k entries account for, k on a log scale."""
    fig = plot.fig
    ks = [p["k"] for p in points]
    low, high = min(ks), max(ks)
    if high <= low:
        low, high = low / 2, high * 2
    xs = _Scale(low, high, plot.x0 + 6, plot.x1 - 6, log=True)
    ys = _Scale(0, 1.02, plot.y0, plot.y1)
    fig.line = [(p["k"], p["share"]) for p in points]
    path = "".join(f"{'M' if i == 0 else 'L'}{_n(xs(k))} {_n(ys(s))}" for i, (k, s) in enumerate(fig.line))
    fig._shapes.append(f'<path d="{path}" stroke="{_BLUE}" stroke-width="1.5" fill="none"/>')
    fig._shapes.extend(
        f'<circle cx="{_n(xs(k))}" cy="{_n(ys(s))}" r="3" fill="{_BLUE}"/>' for k, s in fig.line
    )
    ticks = [k for k in (1, 10, 100, 1000, 10000) if low <= k <= high]
    plot.axes(xs, ys, ticks, nice_ticks(0, 1, 5), str, lambda v: f"{v:.3g}")
    fig.texts.append(Text("k", (plot.x0 + plot.x1) / 2, fig.height - 6, TICK_PX, "axis"))
    plot.title("coverage by top k")


def _categorical_drift(fig: Figure, drift: dict, left: int, right: int, top: int, bottom: int) -> None:
    """Each value's share of entries in train and here, side by side; the most frequent on top."""
    freq = drift["frequencies"]
    labels, widest = _fitted(freq["values"])
    rows = len(labels)
    fig.height = max(PLOT_HEIGHT, top + bottom + _DRIFT_BAR_PX * rows)
    plot = _Plot(fig, max(left, 16 + math.ceil(widest * _FONT_SLACK)), right, top, bottom)
    highest = max(max(freq["train"], default=0), max(freq["current"], default=0)) or 0.01
    xs = _Scale(0, highest * 1.05, plot.x0, plot.x1)
    ys = _Scale(-0.5, rows - 0.5, plot.y1, plot.y0)  # row 0 at the top
    series = (("train", freq["train"], _GREY, -0.4), ("this split", freq["current"], _BLUE, 0.0))
    for name, shares, color, offset in series:
        for row, share in enumerate(shares):
            fig.bars.append(Bar(name, row + offset, row + offset + 0.4, share))
            plot.rect(
                xs(0), ys(row + offset), xs(share) - xs(0), ys(row + offset + 0.4) - ys(row + offset), color
            )
    plot.axes(xs, ys, nice_ticks(0, highest * 1.05, 5), [], lambda v: f"{100 * v:.3g}%")
    for row, label in enumerate(labels):
        fig.texts.append(Text(label, plot.x0 - 6, ys(row) + TICK_PX * 0.35, TICK_PX, "tick", "end"))
    plot.legend([("train", _GREY, 1.0), ("this split", _BLUE, 1.0)])
    plot.title("share of entries", left=True)


def figure_svg(tensor: dict, drift: dict | None) -> str:
    """The tensor's plot as an inline `<svg>` ('' when it has nothing to plot)."""
    fig = draw_figure(tensor, drift)
    return "" if fig is None else fig.svg(f"{tensor['name']}: {fig.panel}")
