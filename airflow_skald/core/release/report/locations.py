"""Section: where the release came from and where it is (config file, input, release)."""

from __future__ import annotations

from collections.abc import Mapping

from airflow_skald.core.release.report.format import table
from airflow_skald.core.text import esc


def _mapping(value: object) -> Mapping:
    return value if isinstance(value, Mapping) else {}


def _through(what: str, connection: object) -> str:
    """``<code>what</code>`` and the connection it is reached through (its name only)."""
    shown = f"<code>{esc(what)}</code>"
    return shown + (f" through connection <code>{esc(connection)}</code>" if connection else "")


def _input_row(source: Mapping) -> tuple[str, str] | None:
    """A file input's path; a database input's table (or query) and connection."""
    if source.get("table"):
        return "input table", _through(source["table"], source.get("connection"))
    if source.get("sql"):
        return "input query", _through(source["sql"], source.get("connection"))
    return ("input", f"<code>{esc(source['path'])}</code>") if source.get("path") else None


def locations_html(m: Mapping) -> str:
    """The config file the run read (from the run record), the input and the release location
    (the manifest's settings: paths as the run resolved them; a database input's table and a
    table release's table, each with its connection's name, and the folder of its records);
    "" when none is known."""
    settings = _mapping(m.get("settings"))
    release_table = _mapping(settings.get("output_table") or m.get("output_table"))
    folder = _mapping(settings.get("output")).get("path") or ""
    rows = [
        ("config file", f"<code>{esc(m['config'])}</code>") if m.get("config") else None,
        _input_row(_mapping(settings.get("input"))),
        ("release table", _through(release_table["table"], release_table.get("connection")))
        if release_table.get("table")
        else None,
        (
            ("release records" if release_table.get("table") else "release"),
            f"<code>{esc(folder)}</code>",
        )
        if folder
        else None,
    ]
    shown = [[esc(label), value] for label, value in (r for r in rows if r)]
    return "<h2>Where</h2>" + table(shown) if shown else ""
