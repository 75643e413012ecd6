"""Section: where the release came from and where it is (config file, input, release)."""

from __future__ import annotations

from collections.abc import Mapping

from airflow_skald.core.release.report.format import esc, table


def locations_html(m: Mapping) -> str:
    """The config file the run read (from the run record), the input and the release location
    (the manifest's settings: paths as the run resolved them); "" when none is known."""
    settings = m.get("settings") if isinstance(m.get("settings"), Mapping) else {}

    def path(section: str) -> str:
        value = settings.get(section)
        return value.get("path") or "" if isinstance(value, Mapping) else ""

    rows = [
        [esc(label), f"<code>{esc(value)}</code>"]
        for label, value in (
            ("config file", m.get("config") or ""),
            ("input", path("input")),
            ("release", path("output")),
        )
        if value
    ]
    return "<h2>Where</h2>" + table(rows) if rows else ""
