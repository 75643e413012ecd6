"""Sections: which run wrote the release and when, its wall time, time and memory per phase."""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime

from airflow_skald.core.release.report.facts import is_per_chunk
from airflow_skald.core.release.report.format import chart_figure, fmt_bytes, fmt_seconds, table
from airflow_skald.core.text import esc

#: the run's identity and time, in the order the report lists them
RUN_IDENTITY = (
    ("run_token", "run token"),
    ("dag_id", "DAG id"),
    ("run_id", "DAG run id"),
    ("try_number", "try number"),
    ("started_at", "started"),
    ("finished_at", "finished"),
)


def _instant(value: object) -> tuple[datetime, int] | None:
    """An ISO time with the digits of its fraction of a second (0: whole seconds), or None when
    it is missing, not an ISO time or coarser than a second."""
    text = str(value or "")
    found = re.search(r"T\d{2}:?\d{2}:?\d{2}(?:[.,](\d+))?", text)
    if not found:
        return None
    try:
        return datetime.fromisoformat(text), len(found.group(1) or "")
    except ValueError:
        return None


def _phases_total(m: Mapping) -> float | None:
    timings = m.get("timings_s") or {}
    values = [v for v in timings.values() if isinstance(v, int | float) and not isinstance(v, bool)]
    return float(sum(values)) if values else None


def _wall_time(m: Mapping) -> tuple[str, str] | None:
    """(label, value) of the run's wall time, never more precise than what it is read from;
    None when the run has no start and finish time.

    Timestamps with a fraction of a second give finished - started to that precision (at most
    hundredths). Timestamps cut to the whole second (today's run record) only place the wall time
    within a second either side of their difference: when the phases, timed precisely one after
    the other, add up to a figure in that window, the wall time is that measured total;
    otherwise (phases timed in parallel or summed over tasks, or time outside them) it is the
    difference in whole seconds."""
    start, end = _instant(m.get("started_at")), _instant(m.get("finished_at"))
    if start is None or end is None:
        return None
    try:
        elapsed = (end[0] - start[0]).total_seconds()
    except TypeError:  # one time has a zone, the other not
        return None
    digits = min(start[1], end[1], 2)
    if digits:
        return "wall time (finished − started)", f"{elapsed:.{digits}f} s"
    measured = None if is_per_chunk(m) else _phases_total(m)
    if measured is not None and elapsed - 1 < measured < elapsed + 1:
        return "wall time (measured: the phases' total)", f"{measured:.2f} s"
    return "wall time (finished − started, to the whole second)", f"{elapsed:.0f} s"


def run_identity_html(m: Mapping) -> str:
    """Which run (and Airflow DAG run) wrote the release, when, and for how long."""
    rows = [
        [esc(label), esc(m[key])] for key, label in RUN_IDENTITY if m.get(key) not in (None, "")
    ]
    if wall := _wall_time(m):
        rows.append([esc(wall[0]), wall[1]])
    return "<h2>Run</h2>" + table(rows) if rows else ""


def timings_html(m: Mapping, plots: Mapping[str, str]) -> str:
    """Time and peak memory per phase, with the timings chart."""
    timings = m.get("timings_s") or {}
    mem = m.get("peak_rss_bytes_by_phase") or {}
    peak = fmt_bytes(m.get("peak_rss_bytes"))
    rows = [
        [esc(p), fmt_seconds(t), fmt_bytes(mem.get(p)) if mem else ""] for p, t in timings.items()
    ]
    rows.append(["total", f"{sum(v for v in timings.values() if v):.2f} s", peak])
    per_phase = " (high-water mark at the end of each phase in the table)." if mem else "."
    return (
        "<h2>Time and memory</h2>"
        + table(rows, ["phase", "time", "peak RSS so far" if mem else ""])
        + f'<p class="muted">Peak resident memory of the process: {peak}{per_phase}</p>'
        + (chart_figure(plots["timings"]) if "timings" in plots else "")
    )
