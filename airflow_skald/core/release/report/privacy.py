"""Section: the privacy models, their settings and the figures reached."""

from __future__ import annotations

from collections.abc import Mapping

from airflow_skald.core.release.report.facts import FIGURES, models_of, split_model
from airflow_skald.core.release.report.format import table
from airflow_skald.core.text import esc, fmt_num


def privacy_html(m: Mapping) -> str:
    """Each privacy model: its settings and the figure it reached over the kept classes."""
    models = models_of(m)
    if not models:
        return ""
    rows = []
    for model in models:
        settings, figures = split_model(model)
        rows.append(
            [
                esc(model.get("model", "?")),
                esc(", ".join(f"{k} = {v}" for k, v in settings.items())),
                "<br>".join(f"{esc(FIGURES.get(k, k))}: {fmt_num(v)}" for k, v in figures.items()),
            ]
        )
    limit = (m.get("privacy") or {}).get("suppression_limit", m.get("suppression_limit"))
    return (
        "<h2>Privacy models</h2>"
        + table(rows, ["model", "settings", "reached over kept classes"])
        + f'<p class="muted">Suppression limit {esc(limit)} of the records.</p>'
    )
