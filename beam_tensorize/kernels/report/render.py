"""The run report as one self-contained HTML page: an overview, then one section per tensor with
its plot (inline PNG drawn with matplotlib; no script, no network).

Plots are drawn at the size they are shown (`PLOT_WIDTH` CSS pixels wide, one image pixel per
CSS pixel, in the first column of the tensor's section) with text in pixel sizes (`TICK_PX`
and up), and the same document always gives the same bytes (no dates or versions in the PNG).

Example:
    >>> page = render_html({"split": "trainingData", "rowsRead": 2, "rowsWritten": 2, "badRows": 0,
    ...     "files": [], "deadLetters": [], "tensors": [{"name": "x", "kind": "numeric", "rows": 2,
    ...     "nullRate": 0.0, "emptyRate": 0.0}]})
    >>> page.startswith("<!DOCTYPE html>"), 'id="tensor-x"' in page, "<script" in page
    (True, True, False)
"""

from __future__ import annotations

import base64
import contextlib
import html
import io
import json
import math
import os
import sys

__all__ = [
    "PLOT_WIDTH",
    "TICK_PX",
    "draw_figure",
    "draw_figures",
    "render_html",
    "serve_one_page",
    "tensor_anchor",
]

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

_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0;color:#1f2933;background:#f5f7fa}
main{max-width:1100px;margin:0 auto;padding:16px 24px}
h1{font-size:1.5em;margin:.4em 0} h2{font-size:1.2em;margin:.2em 0 .4em}
section{background:#fff;border:1px solid #d9e2ec;border-radius:6px;padding:12px 16px;margin:14px 0}
table{border-collapse:collapse;font-size:.9em;margin:.3em 0}
td,th{border-bottom:1px solid #e4e7eb;padding:3px 10px;text-align:left;vertical-align:top}
th{background:#f0f4f8} td.n{text-align:right;font-variant-numeric:tabular-nums}
.cards{display:flex;flex-wrap:wrap;gap:10px} .card{background:#f0f4f8;border-radius:6px;padding:8px 14px}
.card b{display:block;font-size:1.3em} .flag{color:#b42318;font-weight:600} .ok{color:#2f7d32}
img.plot{display:block;max-width:100%;height:auto} code{font-size:.85em;word-break:break-all}
.muted{color:#616e7c;font-size:.85em}
.row{display:grid;grid-template-columns:560px minmax(0,1fr);gap:24px;align-items:start;margin-top:8px}
@media (max-width:900px){.row{grid-template-columns:minmax(0,1fr)}}
.top .bar{display:flex;align-items:center;font-size:.8em;line-height:1.35em}
.top .label{width:170px;text-align:right;padding-right:6px;overflow:hidden;white-space:nowrap;text-overflow:ellipsis}
.top .fill{display:inline-block;height:.9em;background:#3e7cb1} .top .count{padding-left:5px;color:#616e7c}
"""


def tensor_anchor(name: str) -> str:
    """The HTML id of a tensor's section."""
    return "tensor-" + "".join(c if c.isalnum() or c in "-_" else "_" for c in name)


def _fmt(value, digits: int = 4) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:.{digits}g}"
    return html.escape(str(value))


def _pct(value) -> str:
    return "-" if value is None else f"{100 * value:.2f}%"


def _table(headers: list[str], rows: list[list[str]], numeric: set[int] = frozenset()) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(f"<td{' class=n' if i in numeric else ''}>{c}</td>" for i, c in enumerate(row))
        + "</tr>"
        for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


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


def _distinct(categories: dict) -> str:
    """The distinct count of a categorical summary: the number when it is exact, else a lower
    bound (with the counts' error)."""
    if categories["exact"]:
        return _fmt(categories["distinctAtLeast"])
    return f"≥ {categories['distinctAtLeast']:,} (counts ±{categories['maxCountError']:,})"


def _tensor_facts(tensor: dict) -> list[tuple[str, str]]:
    # A hashed tensor described as the ids its records hold (else: an NTV vector's values).
    ids = tensor.get("hashing", {}).get("statisticsOf") == "ids"
    facts = [
        ("kind", _fmt(tensor.get("kind"))),
        ("rows", _fmt(tensor.get("rows"))),
        ("null", _pct(tensor.get("nullRate"))),
        ("empty", _pct(tensor.get("emptyRate"))),
    ]
    numbers = tensor.get("numeric")
    if numbers:
        quantiles = {q["q"]: q["value"] for q in numbers.get("quantiles", [])}
        facts += [
            ("ids" if ids else "values", _fmt(numbers["count"])),
            ("min", _fmt(numbers["min"])),
            ("median", _fmt(quantiles.get(0.5))),
            ("max", _fmt(numbers["max"])),
        ]
        if not ids:  # the mean of ids tells nothing
            facts += [("mean", _fmt(numbers["mean"])), ("std", _fmt(numbers["std"]))]
        if numbers.get("nanCount"):
            facts.append(("NaN", _fmt(numbers["nanCount"])))
    lengths = tensor.get("lengths")
    if lengths and lengths.get("count"):
        facts.append(
            (
                "ids per row" if ids else "values per row",
                f"{_fmt(lengths['min'])}-{_fmt(lengths['max'])}, mean {_fmt(lengths['mean'])}",
            )
        )
    categories = tensor.get("categorical")
    if categories and ids:
        facts.append(("distinct ids", _distinct(categories)))
    elif categories:
        facts += [("entries", _fmt(categories["occurrences"])), ("distinct", _distinct(categories))]
        top20 = next((c["share"] for c in categories["coverage"] if c["k"] == 20), None)
        facts.append(("top 20 cover", _pct(top20)))
    listed = tensor.get("featureList")
    if listed:
        facts += [("list size", _fmt(listed["size"])), ("not in list", _pct(listed["unknownShare"]))]
    hashing = tensor.get("hashing")
    if hashing:
        facts.append(("buckets", _fmt(hashing["hashBucketSize"])))
        if "bucketsUsedShare" in hashing:
            facts.append(("buckets used", _pct(hashing["bucketsUsedShare"])))
        if hashing.get("dummyIdOccurrences"):
            facts.append(("dummy ids", _fmt(hashing["dummyIdOccurrences"])))
        facts += [
            (
                "input: distinct values",
                ("≈ " if not hashing["distinctExact"] else "") + _fmt(hashing["distinctValues"]),
            ),
            ("input: values sharing a bucket", _pct(hashing.get("collidingShare"))),
        ]
    sparse = tensor.get("sparse")
    if sparse:
        facts += [("dimension", _fmt(sparse["dimension"])), ("density", _pct(sparse["density"]))]
    return facts


def _figure_key(tensor: dict, drift: dict | None) -> str:
    return json.dumps([tensor, drift], sort_keys=True)


def _largest_difference(drift: dict) -> str:
    """Categorical drift: which shown value's share differs most, and its two shares."""
    freq = drift.get("frequencies") or {}
    if not freq.get("values"):
        return ""
    gaps = [abs(a - b) for a, b in zip(freq["train"], freq["current"])]
    at = gaps.index(max(gaps))
    return (
        f" (most for {html.escape(str(freq['values'][at]))}: {_pct(freq['train'][at])} of train, "
        f"{_pct(freq['current'][at])} here)"
    )


def _tensor_section(tensor: dict, drift: dict | None, figures: dict[str, str]) -> str:
    name = tensor["name"]
    facts = "".join(
        f'<div class="card"><span class="muted">{k}</span><b>{v}</b></div>' for k, v in _tensor_facts(tensor)
    )
    drift_line = ""
    if drift:
        mark = '<span class="flag">drift</span>' if drift["flagged"] else '<span class="ok">no drift</span>'
        drift_line = (
            f"<p>{mark}: {html.escape(drift['measure'])} distance of the {drift['compared']} to train "
            f"{_fmt(drift['distance'])}{_largest_difference(drift)}</p>"
        )
    top = ""
    categories = tensor.get("categorical")
    if categories and categories["top"]:
        highest = categories["top"][0]["count"] or 1
        bars = "".join(
            f'<div class="bar"><span class="label" title="{html.escape(str(t["value"]))}">'
            f'{html.escape(str(t["value"])[:40])}</span><span class="fill" style="width:{200 * t["count"] / highest:.0f}px">'
            f'</span><span class="count">{_fmt(t["count"])}</span></div>'
            for t in categories["top"]
        )
        what = "ids" if tensor.get("hashing", {}).get("statisticsOf") == "ids" else "entries"
        where = " (this split)" if drift else ""
        top = f'<div class="top"><div class="muted">top {len(categories["top"])} {what}{where}</div>{bars}</div>'
    image = figures.get(_figure_key(tensor, drift))
    if image is None:
        image = _figure_png(tensor, drift)
    empty = html.escape(tensor.get("notSummarized", "nothing to plot"))
    plot = f'<div class="plot">{image}</div>' if image else f'<p class="muted">{empty}</p>'
    dtype = html.escape(f"{tensor.get('dtype', '')} {tensor.get('shape', '')}")
    return (
        f'<section class="tensor" id="{tensor_anchor(name)}"><h2>{html.escape(name)} '
        f'<span class="muted">{dtype}</span></h2><div class="cards">{facts}</div>{drift_line}'
        f'<div class="row">{plot}{top}</div></section>'
    )


def render_html(report: dict, figures: dict[str, str] | None = None) -> str:
    """The report page of a report document (see docs/report.md); `figures`: plots drawn
    beforehand (`draw_figures`), used where their tensor and drift are the same."""
    figures = figures or {}
    split = report.get("split", "")
    drift = report.get("drift") or {}
    drift_of = {t["name"]: t for t in drift.get("tensors", [])}
    cards = [
        ("rows read", _fmt(report.get("rowsRead"))),
        ("rows written", _fmt(report.get("rowsWritten"))),
        ("bad rows", _fmt(report.get("badRows"))),
        ("input files", _fmt(len(report.get("files", [])))),
        ("tensors", _fmt(len(report.get("tensors", [])))),
    ]
    if drift:
        cards.append(("drifting tensors", _fmt(len(drift.get("flagged", [])))))
    overview = "".join(f'<div class="card"><span class="muted">{k}</span><b>{v}</b></div>' for k, v in cards)
    rows = []
    for tensor in report.get("tensors", []):
        d = drift_of.get(tensor["name"])
        flag = (
            ""
            if d is None
            else (f'<span class="flag">{_fmt(d["distance"])}</span>' if d["flagged"] else _fmt(d["distance"]))
        )
        listed = tensor.get("featureList", {}).get("unknownShare")
        rows.append(
            [
                f'<a href="#{tensor_anchor(tensor["name"])}">{html.escape(tensor["name"])}</a>',
                _fmt(tensor.get("kind")),
                _pct(tensor.get("nullRate")),
                _pct(tensor.get("emptyRate")),
                _pct(listed) if listed is not None else "",
                flag,
            ]
        )
    tensors_table = _table(["tensor", "kind", "null", "empty", "not in list", "drift"], rows, {2, 3, 4, 5})
    files = report.get("files", [])
    shown = sorted(files, key=lambda f: (-f["badRows"], f["file"]))[:20]
    file_rows = [
        [html.escape(f["file"]), _fmt(f["rowsRead"]), _fmt(f["rowsWritten"]), _fmt(f["badRows"])]
        for f in shown
    ]
    files_html = _table(["file", "read", "written", "bad"], file_rows, {1, 2, 3})
    if len(files) > len(shown):
        files_html += (
            f'<p class="muted">and {len(files) - len(shown):,} more files (all in the JSON report)</p>'
        )
    letters = report.get("deadLetters", [])
    if letters:
        letter_rows = [
            [
                html.escape(d["reason"]),
                _fmt(d["count"]),
                f"<code>{html.escape(json.dumps(d['example'])[:300])}</code>",
            ]
            for d in letters[:20]
        ]
        letters_html = _table(["reason", "count", "example"], letter_rows, {1})
    else:
        letters_html = '<p class="muted">no bad rows</p>'
    drift_html = ""
    if drift:
        flagged = ", ".join(html.escape(n) for n in drift.get("flagged", [])) or "none"
        drift_html = (
            f"<p>Compared with <b>{html.escape(drift['against'])}</b> (threshold {_fmt(drift['threshold'])}): "
            f"tensors over the threshold: {flagged}.</p>"
        )
    anomalies = (report.get("anomalies") or {}).get("features", [])
    if anomalies:
        listed = "; ".join(
            f"<b>{html.escape(a['name'])}</b>: {_fmt(a['count'])} value(s) not in the train split's "
            f"({html.escape(', '.join(a['values']))})"
            for a in anomalies
        )
        drift_html += f'<p><span class="flag">anomalies</span> against {html.escape(report["anomalies"]["against"])}: {listed}.</p>'
    timings = report.get("timings") or {}
    timing_html = ""
    if timings:
        timing_html = (
            '<p class="muted">time per stage: '
            + ", ".join(
                f"{html.escape(k)} {v:.2f} s"
                for k, v in sorted(timings.items())
                if isinstance(v, (int, float))
            )
            + "</p>"
        )
    sections = "".join(
        _tensor_section(t, drift_of.get(t["name"]), figures) for t in report.get("tensors", [])
    )
    title = f"Run report: {html.escape(split)}"
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<link rel="icon" href="data:,"><title>{title}</title><style>{_STYLE}</style></head><body><main>'
        f'<h1>{title}</h1><section id="overview"><h2>Overview</h2><div class="cards">{overview}</div>'
        f"{drift_html}{tensors_table}{timing_html}</section>"
        f'<section id="files"><h2>Input files</h2>{files_html}</section>'
        f'<section id="dead-letters"><h2>Bad rows by reason</h2>{letters_html}</section>'
        f"{sections}</main></body></html>\n"
    )


def draw_figures(tensors: list[dict], drift: dict | None = None) -> dict[str, str]:
    """The plots of `tensors` (report entries) for `render_html(..., figures=)`."""
    drift_of = {t["name"]: t for t in (drift or {}).get("tensors", [])}
    return {_figure_key(t, drift_of.get(t["name"])): _figure_png(t, drift_of.get(t["name"])) for t in tensors}


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
