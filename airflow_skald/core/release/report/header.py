"""Sections: the title line and the headline cards."""

from __future__ import annotations

from collections.abc import Mapping

from airflow_skald.core.release.report.facts import (
    criteria_words,
    is_per_chunk,
    quality_metrics,
    report_title,
)
from airflow_skald.core.text import esc, fmt_int, fmt_num


def _verified_words(m: Mapping) -> str:
    if not m.get("verified"):
        return '<span class="bad">NOT verified</span>'
    criteria = criteria_words(m)
    words = "k-anonymous" if criteria == "k" else f"against {criteria}"
    return f'<span class="ok">verified {words}</span>'


def header_html(m: Mapping) -> str:
    """Title and one line: records, chunks, k, suppression limit, version, verification."""
    per_chunk = " (every chunk's part on its own, and their union)" if is_per_chunk(m) else ""
    return (
        f"<h1>{esc(report_title(m))}</h1>"
        f'<p class="muted">{fmt_int(m.get("n_records") or 0)} records in {fmt_int(m.get("chunks"))} '
        f"chunk(s), k = {fmt_int(m.get('k'))}, suppression limit {fmt_num(m.get('suppression_limit'))}, "
        f"skald {esc(m.get('version', '?'))}. Release {_verified_words(m)}{per_chunk}.</p>"
    )


def _suppressed_share(m: Mapping) -> str:
    n, s = m.get("n_records") or 0, m.get("n_suppressed") or 0
    return f"{fmt_int(s)} ({100 * s / n:.3g} %)" if n else fmt_int(s)


def cards_html(m: Mapping) -> str:
    """The headline figures, one card each."""
    quality = quality_metrics(m)
    cards = [
        ("DM*", fmt_int(quality.get("dm_star"))),
        ("equivalence classes", fmt_int(m.get("n_equivalence_classes"))),
        ("smallest class", fmt_int(m.get("min_class_size"))),
        ("suppressed records", _suppressed_share(m)),
        (
            "max prosecutor risk (kept records)",
            fmt_num((m.get("risk") or {}).get("prosecutor_risk_max")),
        ),
        ("precision", fmt_num(quality.get("precision"))),
    ]
    body = "".join(f'<div class="card"><b>{v}</b>{esc(label)}</div>' for label, v in cards)
    return f'<div class="cards">{body}</div>'
