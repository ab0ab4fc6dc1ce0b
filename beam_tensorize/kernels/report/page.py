"""The report page's HTML: the overview (cards, the tensors' table, input files, bad rows,
drift and anomalies, timings) and one section per tensor (its facts, plot and top entries).
No script, no network: the style is inline and the plots are inline SVG (`plots`)."""

from __future__ import annotations

import html
import json

from beam_tensorize.kernels.report.facts import _fmt, _largest_difference, _pct, _tensor_facts
from beam_tensorize.kernels.report.plots import figure_svg

__all__ = ["render_html", "tensor_anchor"]

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
svg.plot{display:block;max-width:100%;height:auto} code{font-size:.85em;word-break:break-all}
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


def _table(headers: list[str], rows: list[list[str]], numeric: set[int] = frozenset()) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in headers)
    body = "".join(
        "<tr>"
        + "".join(f"<td{' class=n' if i in numeric else ''}>{c}</td>" for i, c in enumerate(row))
        + "</tr>"
        for row in rows
    )
    return f"<table><tr>{head}</tr>{body}</table>"


def _cards(facts) -> str:
    """Facts (label, text) as cards."""
    return "".join(f'<div class="card"><span class="muted">{k}</span><b>{v}</b></div>' for k, v in facts)


def _tensor_section(tensor: dict, drift: dict | None) -> str:
    name = tensor["name"]
    facts = _cards(_tensor_facts(tensor))
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
    image = figure_svg(tensor, drift)
    empty = html.escape(tensor.get("notSummarized", "nothing to plot"))
    plot = f'<div class="plot">{image}</div>' if image else f'<p class="muted">{empty}</p>'
    dtype = html.escape(f"{tensor.get('dtype', '')} {tensor.get('shape', '')}")
    return (
        f'<section class="tensor" id="{tensor_anchor(name)}"><h2>{html.escape(name)} '
        f'<span class="muted">{dtype}</span></h2><div class="cards">{facts}</div>{drift_line}'
        f'<div class="row">{plot}{top}</div></section>'
    )


def render_html(report: dict) -> str:
    """The report page of a report document (see docs/report.md)."""
    split = report.get("split", "")
    drift = report.get("drift") or {}
    drift_of = {t["name"]: t for t in drift.get("tensors", [])}
    overview = _cards(_overview_facts(report, drift))
    tensors_table = _tensors_table(report.get("tensors", []), drift_of)
    files_html = _files_html(report.get("files", []))
    letters_html = _letters_html(report.get("deadLetters", []))
    drift_html = _drift_html(drift) + _anomalies_html(report.get("anomalies") or {})
    timing_html = _timing_html(report.get("timings") or {})
    sections = "".join(_tensor_section(t, drift_of.get(t["name"])) for t in report.get("tensors", []))
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


def _overview_facts(report: dict, drift: dict) -> list[tuple[str, str]]:
    """The run's cards: rows, bad rows, files, tensors (and drifting ones)."""
    cards = [
        ("rows read", _fmt(report.get("rowsRead"))),
        ("rows written", _fmt(report.get("rowsWritten"))),
        ("bad rows", _fmt(report.get("badRows"))),
        ("input files", _fmt(len(report.get("files", [])))),
        ("tensors", _fmt(len(report.get("tensors", [])))),
    ]
    if drift:
        cards.append(("drifting tensors", _fmt(len(drift.get("flagged", [])))))
    return cards


def _tensors_table(tensors: list[dict], drift_of: dict[str, dict]) -> str:
    """One row per tensor, linking to its section: kind, null, empty, not in list, drift."""
    rows = []
    for tensor in tensors:
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
    return _table(["tensor", "kind", "null", "empty", "not in list", "drift"], rows, {2, 3, 4, 5})


def _files_html(files: list[dict]) -> str:
    """The input files, those with the most bad rows first (20 of them)."""
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
    return files_html


def _letters_html(letters: list[dict]) -> str:
    """The bad rows by reason, with a count and an example (20 reasons)."""
    if not letters:
        return '<p class="muted">no bad rows</p>'
    letter_rows = [
        [
            html.escape(d["reason"]),
            _fmt(d["count"]),
            f"<code>{html.escape(json.dumps(d['example'])[:300])}</code>",
        ]
        for d in letters[:20]
    ]
    return _table(["reason", "count", "example"], letter_rows, {1})


def _drift_html(drift: dict) -> str:
    """What the split was compared with, and the tensors over the threshold ('' without drift)."""
    if not drift:
        return ""
    flagged = ", ".join(html.escape(n) for n in drift.get("flagged", [])) or "none"
    return (
        f"<p>Compared with <b>{html.escape(drift['against'])}</b> (threshold {_fmt(drift['threshold'])}): "
        f"tensors over the threshold: {flagged}.</p>"
    )


def _anomalies_html(anomalies: dict) -> str:
    """The values not in the train split's schema, per feature ('' when there are none)."""
    features = anomalies.get("features", [])
    if not features:
        return ""
    listed = "; ".join(
        f"<b>{html.escape(a['name'])}</b>: {_fmt(a['count'])} value(s) not in the train split's "
        f"({html.escape(', '.join(a['values']))})"
        for a in features
    )
    return (
        f'<p><span class="flag">anomalies</span> against {html.escape(anomalies["against"])}: {listed}.</p>'
    )


def _timing_html(timings: dict) -> str:
    """The time of each stage ('' when none is recorded)."""
    if not timings:
        return ""
    return (
        '<p class="muted">time per stage: '
        + ", ".join(
            f"{html.escape(k)} {v:.2f} s" for k, v in sorted(timings.items()) if isinstance(v, (int, float))
        )
        + "</p>"
    )
