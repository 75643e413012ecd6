"""The "SKALD releases" page's HTML (the plugin's ``/skald/releases``; rows: ``plugin.release_rows``).

Readable from 1280 px wide, also embedded in the Airflow UI beside its navigation bar (issue 40
item 6: the Links column was cut at 1600 px, output URIs broken inside words): the provenance
of a release (config path, config_sha256, input_fingerprint, each hash whole on one line) is a
second row under its figures instead of a column as wide as a hash, so the figures' columns
fit; a URI, path or run id wraps only after a separator (``/``, ``__``, the ``T`` of a time), its
pieces never broken (`breakable`); each link stays whole.
"""

from __future__ import annotations

import html
import re
from typing import Any

# a break is allowed after each "/" (not inside "://"), "?" or "&" of a URI or path, after the
# "__" of a run id, after the "T" between an ISO date and its time and after a space; in a
# piece longer than LONG also after the "_", "-" or "." between the words of a name
_BREAK_AFTER = re.compile(r"(?<=/)(?!/)|(?<=[?&])|(?<=__)|(?<=\dT)(?=\d)|(?<= )")
_BREAK_IN_LONG = re.compile(r"(?<=[_.-])(?=[^_.-])")
LONG = 24

_STYLE = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:1rem;color:#1b1f24}
h1{font-size:1.4rem;margin:0 0 .3rem}p.sub{color:#57606a;margin:0 0 1rem}
table{border-collapse:collapse;width:100%;font-size:.85rem}
th,td{padding:.4rem .4rem;text-align:left;vertical-align:top}
th{background:#f6f8fa;position:sticky;top:0;border-bottom:1px solid #d0d7de}
tbody.release{border-bottom:1px solid #d0d7de}
td.time{width:10ch}td.num{text-align:right;font-variant-numeric:tabular-nums}
.mono{font-family:ui-monospace,SFMono-Regular,Menlo,monospace;font-size:.8rem}
.wrap{word-break:normal;overflow-wrap:normal}.piece{white-space:nowrap}
td.links a{white-space:nowrap}tr.provenance td{padding-top:0;color:#57606a;font-size:.8rem}
tr.provenance .item{display:inline-block;margin-right:1.2rem}
.ok{color:#1a7f37;font-weight:600}.bad{color:#cf222e;font-weight:600}a{color:#0969da}
code.hash{white-space:nowrap;word-break:normal;user-select:all;font-size:.78rem}
.gone{color:#57606a}.muted{color:#57606a}
"""

_HEADERS = (
    "Time",
    "DAG / run",
    "Output",
    "k / l / t",
    "Suppression limit",
    "Node",
    "DM*",
    "Suppressed",
    "Verified",
    "Links",
)


def breakable(text: str) -> str:
    """`text` escaped, in pieces that never break inside, a line break allowed between them."""
    pieces = [
        q
        for p in _BREAK_AFTER.split(text)
        for q in (_BREAK_IN_LONG.split(p) if len(p) > LONG else [p])
        if q
    ]
    return "<wbr>".join(f'<span class="piece">{html.escape(p)}</span>' for p in pieces)


def _cell(value: Any, cls: str = "") -> str:
    attr = f' class="{cls}"' if cls else ""
    return f"<td{attr}>{html.escape(str(value))}</td>"


def _link(url: str, text: str) -> str:
    return f'<a href="{html.escape(url)}" target="_blank" rel="noopener">{html.escape(text)}</a>'


def _verified(value: Any) -> str:
    if value is True:
        return '<td class="ok">yes</td>'
    return '<td class="bad">NO</td>' if value is False else "<td>?</td>"


def _links(r: dict) -> str:
    if not r.get("files_kept", True):
        return (
            '<span class="gone">report, manifest, effective config, YAML: gone (replaced, and '
            "no copy is kept beside the output or in the run-artifact store)</span>"
        )
    return " · ".join(
        (
            _link(r["report_url"], "report"),
            _link(r["manifest_url"], "manifest"),
            _link(r["effective_url"], "effective config"),
            _link(r["yaml_url"], "YAML"),
        )
    )


def _release(r: dict) -> str:
    """One release: its figures' row and its provenance row."""
    e = html.escape
    status = (
        f'<br><a class="bad" href="{e(r["replaced_by_url"])}" target="_top">'
        f"replaced by run {e(r['replaced_by'])}</a>"
        if r["replaced_by"]
        else '<br><span class="ok">current</span>'
    )
    figures = (
        "<tr>"
        + _cell(r["time"], "time")
        + f'<td class="wrap"><span class="muted">{breakable(str(r["dag_id"]))}</span><br>'
        f'<a class="mono" href="{e(r["run_url"])}" target="_top">'
        f"{breakable(str(r['run_id']))}</a></td>"
        + f'<td class="mono wrap output">{breakable(str(r["release"]))}{status}</td>'
        + _cell(r["privacy"])
        + _cell(r["suppression_limit"], "num")
        + f'<td>{e(r["node"])}<br><span class="mono">{e(str(r["node_paper"]))}</span></td>'
        + _cell(r["dm_star"], "num")
        + _cell(f"{r['n_suppressed']} of {r['n_records']}", "num")
        + _verified(r["verified"])
        + f'<td class="links">{_links(r)}</td></tr>'
    )
    provenance = (
        f'<tr class="provenance"><td></td><td colspan="{len(_HEADERS) - 1}">'
        f'<span class="item">config <span class="mono wrap">{breakable(str(r["config"]))}'
        "</span></span> "
        f'<span class="item">config_sha256 <code class="hash">{e(str(r["config_sha256"]))}'
        "</code></span> "
        f'<span class="item">input_fingerprint <code class="hash">'
        f"{e(str(r['input_fingerprint']))}</code></span></td></tr>"
    )
    return f'<tbody class="release">{figures}{provenance}</tbody>'


def render_releases(rows: list[dict], *, limit: int) -> str:
    """The releases page (every value escaped)."""
    body = "".join(_release(r) for r in rows) or (
        f'<tbody><tr><td colspan="{len(_HEADERS)}">No SKALD release has been recorded yet.'
        "</td></tr></tbody>"
    )
    more = f" (the newest {limit})" if len(rows) >= limit else ""
    head = "".join(f"<th>{html.escape(h)}</th>" for h in _HEADERS)
    return (
        '<!doctype html><html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width">'
        "<title>SKALD releases</title>"
        f"<style>{_STYLE}</style></head><body>"
        "<h1>SKALD releases</h1>"
        f'<p class="sub">{len(rows)} release(s){html.escape(more)}, newest first, from the asset '
        "events of the <code>skald-release</code> alias. Figures only: no data values. Under "
        "each release: the config it was made from.</p>"
        f"<table><thead><tr>{head}</tr></thead>{body}</table></body></html>"
    )
