"""Small bar charts for report.html as inline SVG: no plotting library to import (matplotlib
cost ~1 s per report, most of a small run), text a browser renders sharply and a reader can
select, and nothing but the counts and labels given (every label is escaped).

A chart is a title, bars with their value at the end, category labels, and a value axis with
a few round ticks; vertical bars for distributions, horizontal bars for timings.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape

FONT = "font-family:system-ui,-apple-system,'Segoe UI',sans-serif"
_CHAR_W = 6.2  # px per character at 11 px, for label room
_LABEL = 30  # characters of a slanted category label shown (the bar's tooltip has it whole)


def nice_ticks(top: float, count: int = 5) -> list[float]:
    """Round tick values 0..>=top (1, 2 or 5 times a power of ten apart)."""
    if top <= 0:
        return [0.0, 1.0]
    raw = top / max(count - 1, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    n = math.ceil(top / step - 1e-9)
    return [i * step for i in range(n + 1)]


def _number(value: float) -> str:
    if float(value).is_integer():
        return f"{int(value):,}"
    return f"{value:,.3g}" if abs(value) < 100 else f"{value:,.0f}"


def bar_chart(
    labels: Sequence[str],
    values: Sequence[float],
    *,
    title: str,
    value_label: str,
    category_label: str = "",
    color: str | Sequence[str] = "#3b6fb6",
    horizontal: bool = False,
    width: int = 720,
) -> str:
    """One bar per label, as an `<svg>` element sized `width` px wide; `color` one colour, or
    one per bar (repeated when shorter: a group's colours)."""
    labels = [str(x) for x in labels]
    values = [float(v) for v in values]
    ticks = nice_ticks(max(values, default=0.0))
    top = ticks[-1] or 1.0
    if horizontal:
        return _horizontal(labels, values, ticks, top, title, value_label, color, width)
    return _vertical(labels, values, ticks, top, title, value_label, category_label, color, width)


def _fill(color: str | Sequence[str], i: int) -> str:
    return color if isinstance(color, str) else color[i % len(color)]


def _svg(width: int, height: int, title: str, body: list[str]) -> str:
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" style="{FONT}">'
        f"<title>{escape(title)}</title>"
        f'<text x="{width / 2:.1f}" y="18" text-anchor="middle" font-size="14" '
        f'font-weight="600">{escape(title)}</text>'
    )
    return head + "".join(body) + "</svg>"


def _vertical(labels, values, ticks, top, title, value_label, category_label, color, width):
    longest = max((len(x) for x in labels), default=1)
    reach = min(longest, _LABEL) * _CHAR_W * 0.72  # labels at 45 degrees: as far left as down
    bottom = 28 + reach
    plot_h, top_y = 190, 32
    # the first label ends under its bar's centre and runs down-left: room for it to the left
    left = max(64.0, reach + 8 - (width - 80) / max(len(labels), 1) / 2)
    height = int(top_y + plot_h + bottom + (18 if category_label else 0))
    plot_w = width - left - 16
    slot = plot_w / max(len(labels), 1)
    base = top_y + plot_h
    body = []
    for t in ticks:
        y = base - plot_h * t / top
        body.append(
            f'<line x1="{left}" x2="{left + plot_w}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
            f'<text x="{left - 6}" y="{y + 4:.1f}" text-anchor="end" font-size="11">'
            f"{_number(t)}</text>"
        )
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        h = plot_h * value / top
        x = left + i * slot + slot * 0.15
        cx = left + (i + 0.5) * slot
        body.append(
            f'<rect x="{x:.1f}" y="{base - h:.1f}" width="{slot * 0.7:.1f}" height="{h:.1f}" '
            f'fill="{_fill(color, i)}"><title>{escape(label)}: {_number(value)}</title></rect>'
            f'<text x="{cx:.1f}" y="{base - h - 4:.1f}" font-size="10" text-anchor="middle">'
            f"{_number(value)}</text>"
            f'<text x="{cx:.1f}" y="{base + 14:.1f}" font-size="11" text-anchor="end" '
            f'transform="rotate(-45 {cx:.1f} {base + 14:.1f})">{escape(label[:_LABEL])}</text>'
        )
    body.append(
        f'<line x1="{left}" x2="{left + plot_w}" y1="{base}" y2="{base}" stroke="#333"/>'
        f'<text x="14" y="{top_y + plot_h / 2:.1f}" font-size="12" text-anchor="middle" '
        f'transform="rotate(-90 14 {top_y + plot_h / 2:.1f})">{escape(value_label)}</text>'
    )
    if category_label:
        body.append(
            f'<text x="{left + plot_w / 2:.1f}" y="{height - 6}" font-size="12" '
            f'text-anchor="middle">{escape(category_label)}</text>'
        )
    return _svg(width, height, title, body)


def _horizontal(labels, values, ticks, top, title, value_label, color, width):
    longest = max((len(x) for x in labels), default=1)
    left = 16 + min(longest, 28) * _CHAR_W
    row, top_y = 24, 32
    plot_h = row * max(len(labels), 1)
    plot_w = width - left - 70
    height = int(top_y + plot_h + 44)
    base = top_y + plot_h
    body = []
    for t in ticks:
        x = left + plot_w * t / top
        body.append(
            f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{top_y}" y2="{base}" stroke="#ddd"/>'
            f'<text x="{x:.1f}" y="{base + 14}" text-anchor="middle" font-size="11">'
            f"{_number(t)}</text>"
        )
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        y = top_y + i * row
        w = plot_w * value / top
        body.append(
            f'<text x="{left - 6:.1f}" y="{y + row * 0.65:.1f}" text-anchor="end" '
            f'font-size="11">{escape(label[:28])}</text>'
            f'<rect x="{left:.1f}" y="{y + row * 0.15:.1f}" width="{w:.1f}" '
            f'height="{row * 0.7:.1f}" fill="{_fill(color, i)}"><title>{escape(label)}: '
            f"{_number(value)}</title></rect>"
            f'<text x="{left + w + 4:.1f}" y="{y + row * 0.65:.1f}" font-size="11">'
            f"{_number(value)}</text>"
        )
    body.append(
        f'<line x1="{left:.1f}" x2="{left:.1f}" y1="{top_y}" y2="{base}" stroke="#333"/>'
        f'<text x="{left + plot_w / 2:.1f}" y="{height - 8}" font-size="12" '
        f'text-anchor="middle">{escape(value_label)}</text>'
    )
    return _svg(width, height, title, body)
