"""The report's HTML building blocks: number formats, tables, the page and its CSS (text and
counts as HTML are `core.text`'s)."""

from __future__ import annotations

import re
from collections.abc import Sequence

from airflow_skald.core.release.report.charts import bar_chart
from airflow_skald.core.text import esc
from airflow_skald.core.transform.base import ReportChart, ReportSection, ReportTable

CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2em auto;
max-width:1000px;color:#1d2330;line-height:1.45;padding:0 1em}
h1{font-size:1.6em;margin-bottom:.2em}h2{font-size:1.2em;margin-top:1.6em;
border-bottom:2px solid #d8dde6;padding-bottom:.2em}
table{border-collapse:collapse;margin:.6em 0}td,th{border:1px solid #d8dde6;padding:.3em .7em;
text-align:left;vertical-align:top}th{background:#f1f3f7}td.num{text-align:right;
font-variant-numeric:tabular-nums}.ok{color:#1b7f3b;font-weight:600}.bad{color:#b3261e;
font-weight:600}.muted{color:#5b6475;font-size:.9em}code{background:#f1f3f7;padding:0 .3em}
.cards{display:flex;flex-wrap:wrap;gap:.8em;margin:1em 0}.card{border:1px solid #d8dde6;
border-radius:6px;padding:.6em 1em;min-width:150px}.card b{display:block;font-size:1.3em}
figure.chart{margin:.8em 0}.pair{display:flex;flex-wrap:wrap;gap:0 1.5em}figure.chart svg{max-width:100%;height:auto}
"""


def fmt_bytes(n: object) -> str:
    if not isinstance(n, int | float):
        return "n/a"
    return f"{n / 2**20:,.0f} MiB"


def fmt_seconds(t: object) -> str:
    return f"{t:.2f} s" if isinstance(t, int | float) else "n/a"


def table(rows: Sequence[Sequence[str]], head: Sequence[str] | None = None) -> str:
    parts = ["<table>"]
    if head:
        parts.append("<tr>" + "".join(f"<th>{esc(h)}</th>" for h in head) + "</tr>")
    for r in rows:
        cells = []
        for c in r:
            cls = ' class="num"' if re.fullmatch(r"[-\d.,%e+ ]+( MiB| s)?", c or "") else ""
            cells.append(f"<td{cls}>{c}</td>")
        parts.append("<tr>" + "".join(cells) + "</tr>")
    parts.append("</table>")
    return "".join(parts)


def section_html(section: ReportSection) -> str:
    """A transformation's section of the report (its title, introduction, table and what
    follows it)."""
    return (
        f"<h2>{esc(section.title)}</h2>"
        + "".join(section.intro)
        + table(section.rows, section.head)
        + "".join(_block(b) for b in section.paragraphs)
    )


def _block(block: str | ReportTable | ReportChart) -> str:
    """A paragraph as it is, a table or a chart drawn."""
    if isinstance(block, ReportTable):
        return table(block.rows, block.head)
    if isinstance(block, ReportChart):
        svg = bar_chart(
            block.labels,
            block.values,
            title=block.title,
            value_label=block.value_label,
            category_label=block.category_label,
            color=block.color,
        )
        return chart_figure(svg)
    return block


def chart_figure(svg: str) -> str:
    return f'<figure class="chart">{svg}</figure>'


def truncated(shown: int, total: int, what: str) -> str:
    if total <= shown:
        return ""
    return f'<p class="muted">first {shown} of {total} {what} shown; all are in manifest.json.</p>'


def page(title: str, sections: Sequence[str]) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        + "\n".join(s for s in sections if s)
        + "</body></html>\n"
    )
