"""Section: the lattice search's counters."""

from __future__ import annotations

from collections.abc import Mapping

from airflow_skald.core.release.report.facts import criteria_words, is_per_chunk
from airflow_skald.core.release.report.format import table
from airflow_skald.core.text import fmt_int


def lattice_html(m: Mapping) -> str:
    """The search's counters: lattice size, nodes evaluated and passing, the RAM-root choice."""
    lat = m.get("lattice") or {}
    rows = [
        ["nodes in the searched lattice", fmt_int(lat.get("nodes"))],
        ["nodes evaluated (class sizes computed)", fmt_int(lat.get("evaluated"))],
        [
            f"nodes known to pass {criteria_words(m)} within the suppression limit "
            "(evaluated, or implied by a monotone criterion)",
            fmt_int(lat.get("passing")),
        ],
    ]
    if "pruned" in lat:
        rows.append(
            [
                "nodes never classified (a lower bound of the loss ruled them out)",
                fmt_int(lat["pruned"]),
            ]
        )
    root_lat = m.get("root_lattice") or {}
    if root_lat:
        rows += [
            ["full lattice (RAM-root choice)", fmt_int(root_lat.get("nodes"))],
            ["  evaluated for the memory bound", fmt_int(root_lat.get("evaluated"))],
            ["  complying with the memory bound", fmt_int(root_lat.get("complying"))],
        ]
    if is_per_chunk(m):
        rows.insert(0, ["(summed over the chunks' searches)", ""])
    note = (
        '<p class="muted">The search classifies only the nodes it needs: nodes it never '
        "evaluated nor implied may pass too, so the nodes known to pass are not all the "
        "passing nodes of the lattice.</p>"
        if lat
        else ""
    )
    return "<h2>Lattice search</h2>" + table(rows, ["counter", "value"]) + note
