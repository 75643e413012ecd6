"""`report.html` beside every release's manifest: what the run decided, for people.

Self-contained (inline CSS, charts as inline SVG from `charts.py`: no plotting library),
readable from a file without a server. It is rendered from the manifest and the run record
(``run.json``: run identity, time, timings and memory) ALONE, so it holds no data value they
do not hold: levels, counts, metrics, timings, never a record. Releases written before the run
record existed kept their timings and memory in the manifest: they are read from there.

One module per section (or pair of related sections); each section function takes the page's
facts (the manifest with the run record laid over it, `facts.page_facts`) and returns HTML, or
"" when it has nothing to show. `render.render_report` lists them in the report's order: a new
section is a new module and one line there.
"""

from __future__ import annotations

from airflow_skald.core.release.report.nodes import node_in_words, ram_root_html
from airflow_skald.core.release.report.plots import class_size_bins
from airflow_skald.core.release.report.render import render_report, write_report

__all__ = ["render_report", "write_report", "node_in_words", "class_size_bins"]

#: the RAM-root section under the name the report's tests know it by
_ram_root = ram_root_html
