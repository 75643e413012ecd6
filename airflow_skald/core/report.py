"""`report.html` beside every release's manifest: what the run decided, for people.

Self-contained (inline CSS, plots embedded as base64 PNG drawn with matplotlib's Agg backend),
readable from a file without a server. It is rendered from the manifest ALONE, so it holds no
data value the manifest does not hold: levels, counts, metrics, timings, never a record.
Without matplotlib (it is the `report` extra) the report is written without its plots.
"""

from __future__ import annotations

import base64
import html
import io
import logging
import re
from collections.abc import Sequence

from airflow_skald.core.release import REPORT, write_bytes_atomic

log = logging.getLogger("airflow_skald")

__all__ = ["render_report", "write_report", "node_in_words"]

_CSS = """
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
img{max-width:100%;height:auto}
"""


def _e(x: object) -> str:
    return html.escape(str(x))


def _int(x: object) -> str:
    return f"{x:,}" if isinstance(x, int) and not isinstance(x, bool) else _e(x)


def _num(x: object, digits: int = 4) -> str:
    if isinstance(x, float):
        return f"{x:.{digits}g}" if abs(x) < 1e6 else f"{x:,.0f}"
    return _int(x)


def _bytes(n: object) -> str:
    if not isinstance(n, int | float):
        return "n/a"
    return f"{n / 2**20:,.0f} MiB"


def _paper_parts(node_paper: str) -> tuple[list[str], list[str]]:
    """((2, 1), (1, 24, 32)) -> (['2', '1'], ['1', '24', '32'])."""
    groups = re.findall(r"\(([^()]*)\)", node_paper or "")
    if len(groups) < 2:
        return [], []
    split = [[v.strip() for v in g.split(",") if v.strip()] for g in groups[:2]]
    return split[0], split[1]


def node_in_words(manifest: dict, levels: dict, node_paper: str) -> list[dict]:
    """One row per QID: level (0-based), paper level/width, and what the level means."""
    qids = manifest.get("quasi_identifiers") or [{"name": n, "type": "?"} for n in levels]
    tops = manifest.get("top_node") or {}
    cat, num = _paper_parts(node_paper)
    rows = []
    for q in qids:
        name, kind = q["name"], q.get("type", "?")
        level = levels.get(name)
        top = tops.get(name)
        if kind == "categorical" and cat:
            paper = cat.pop(0)
        elif kind == "numerical" and num:
            paper = num.pop(0)
        else:
            paper = ""
        if isinstance(level, list):
            meaning = "varies by chunk: levels " + ", ".join(str(v) for v in level)
        elif level == 0:
            meaning = "original values" + (
                f" (bins of width {paper})" if kind == "numerical" and paper else ""
            )
        elif top is not None and level == top:
            meaning = "fully generalised (one value: '*' or the whole domain)"
        elif kind == "categorical":
            meaning = f"hierarchy level {level} (paper level {paper})"
        else:
            unit = " encoded ranks" if q.get("encode") else ""
            meaning = f"bins of width {paper}{unit}"
        rows.append(
            {
                "name": name,
                "type": kind,
                "level": level,
                "top": top,
                "paper": paper,
                "meaning": meaning,
            }
        )
    return rows


def _png(fig) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=110, bbox_inches="tight")
    return base64.b64encode(buf.getvalue()).decode("ascii")


def _plots(manifest: dict) -> dict[str, str]:
    """Base64 PNGs of the class-size distribution and the phase timings ({} without matplotlib)."""
    try:
        import matplotlib

        matplotlib.use("Agg", force=True)
        import matplotlib.pyplot as plt
    except ImportError:
        return {}
    out = {}
    hist = manifest.get("class_size_histogram") or {}
    if hist:
        labels = list(hist)
        fig, ax = plt.subplots(figsize=(7.5, 3.2))
        ax.bar(range(len(labels)), [hist[b] for b in labels], color="#3b6fb6")
        ax.set_xticks(range(len(labels)), labels, rotation=30, ha="right")
        ax.set_xlabel("equivalence class size (records)")
        ax.set_ylabel("number of classes")
        ax.set_title(f"Class-size distribution (k = {manifest.get('k')})")
        ax.grid(axis="y", alpha=0.3)
        out["classes"] = _png(fig)
        plt.close(fig)
    timings = {k: v for k, v in (manifest.get("timings_s") or {}).items() if v is not None}
    if timings:
        fig, ax = plt.subplots(figsize=(7.5, 0.5 + 0.45 * len(timings)))
        names = list(timings)[::-1]
        ax.barh(names, [timings[n] for n in names], color="#d98c2b")
        ax.set_xlabel("seconds")
        ax.set_title("Time per phase")
        ax.grid(axis="x", alpha=0.3)
        out["timings"] = _png(fig)
        plt.close(fig)
    return out


def _table(rows: Sequence[Sequence[str]], head: Sequence[str] | None = None) -> str:
    parts = ["<table>"]
    if head:
        parts.append("<tr>" + "".join(f"<th>{_e(h)}</th>" for h in head) + "</tr>")
    for r in rows:
        cells = []
        for c in r:
            cls = ' class="num"' if re.fullmatch(r"[-\d.,%e+ ]+( MiB| s)?", c or "") else ""
            cells.append(f"<td{cls}>{c}</td>")
        parts.append("<tr>" + "".join(cells) + "</tr>")
    parts.append("</table>")
    return "".join(parts)


def _node_table(manifest: dict, levels: dict, node_paper: str) -> str:
    rows = [
        [
            _e(r["name"]),
            _e(r["type"]),
            _e(r["level"]) + (f" / {_e(r['top'])}" if r["top"] is not None else ""),
            _e(r["paper"]),
            _e(r["meaning"]),
        ]
        for r in node_in_words(manifest, levels, node_paper)
    ]
    return _table(rows, ["QID", "type", "level / top", "paper", "meaning"])


def render_report(manifest: dict) -> str:
    """The report's HTML, from the manifest only."""
    m = manifest
    per_chunk = m.get("mode") == "per_chunk"
    k = m.get("k")
    n = m.get("n_records") or 0
    s = m.get("n_suppressed") or 0
    risk = m.get("risk") or {}
    plots = _plots(m)
    title = "SKALD per-chunk baseline report" if per_chunk else "SKALD release report"
    verified = m.get("verified")
    body = [f"<h1>{_e(title)}</h1>"]
    body.append(
        f'<p class="muted">{_int(n)} records in {_int(m.get("chunks"))} chunk(s), '
        f"k = {_int(k)}, suppression limit {_num(m.get('suppression_limit'))}, "
        f"skald {_e(m.get('version', '?'))}. Release "
        + (
            '<span class="ok">verified k-anonymous</span>'
            if verified
            else '<span class="bad">NOT verified</span>'
        )
        + (" (every chunk's part on its own, and their union)" if per_chunk else "")
        + ".</p>"
    )
    cards = [
        ("DM*", _int(m.get("dm_star"))),
        ("equivalence classes", _int(m.get("n_equivalence_classes"))),
        ("smallest class", _int(m.get("min_class_size"))),
        ("suppressed records", f"{_int(s)} ({100 * s / n:.3g} %)" if n else _int(s)),
        ("max prosecutor risk", _num(risk.get("prosecutor_risk_max"))),
        ("precision", _num(m.get("precision"))),
    ]
    body.append(
        '<div class="cards">'
        + "".join(f'<div class="card"><b>{v}</b>{_e(lbl)}</div>' for lbl, v in cards)
        + "</div>"
    )

    if per_chunk:
        body.append("<h2>Nodes chosen chunk by chunk</h2>")
        body.append(
            "<p>Each chunk was anonymised alone with its own optimal node (no RAM bound, the "
            "full lattice above the all-zeros node), as a memory-bound ARX user would. The "
            "figures above are those of the union of the released chunks.</p>"
        )
        rows = [[_e(d["node_paper"]), _int(d["chunks"])] for d in m.get("chunk_nodes") or []]
        body.append(_table(rows, ["node (paper notation)", "chunks"]))
        body.append("<h3>Levels per QID (over all chunks)</h3>")
        body.append(_node_table(m, m.get("node") or {}, ""))
        chunks = m.get("per_chunk") or []
        shown = chunks[:50]
        rows = [
            [
                _int(c["chunk_id"]),
                _int(c["n_records"]),
                _e(c["node_paper"]),
                _int(c["dm_star"]),
                _int(c["n_suppressed"]),
                _int(c["n_equivalence_classes"]),
                _int(c["min_class_size"]),
            ]
            for c in shown
        ]
        body.append(
            _table(
                rows,
                ["chunk", "records", "node", "own DM*", "suppressed", "classes", "min class"],
            )
        )
        if len(chunks) > len(shown):
            body.append(
                f'<p class="muted">first {len(shown)} of {len(chunks)} chunks shown; '
                "all are in manifest.json.</p>"
            )
    else:
        body.append("<h2>Chosen generalisation node</h2>")
        body.append(
            f"<p>Paper notation <code>{_e(m.get('node_paper'))}</code> "
            "(categorical levels counted from 1, then numerical bin widths).</p>"
        )
        body.append(_node_table(m, m.get("node") or {}, m.get("node_paper", "")))
        body.append("<h2>RAM root node</h2>")
        body.append(
            f"<p>The finest node whose histogram fits the memory bound: "
            f"<code>{_e(m.get('root_node_paper'))}</code>, {_int(m.get('root_bins'))} possible "
            f"bins for N<sub>RAM</sub> = {_int(m.get('histogram_bins'))}"
            + (
                " (derived from the chunk size, paper eq. 3)"
                if m.get("histogram_bins_derived")
                else " (configured)"
            )
            + ". The optimal node is searched above it.</p>"
        )
        body.append(_node_table(m, m.get("root_node") or {}, m.get("root_node_paper", "")))

    body.append("<h2>Information loss</h2>")
    loss = [
        ["DM* (paper: kept |E|² + s²)", _int(m.get("dm_star"))],
        ["DM* (ARX: all classes |E|²)", _int(m.get("dm_star_arx"))],
        ["DM, discernibility (kept |E|² + N·s)", _int(m.get("dm"))],
        ["precision (Sweeney, 1 = no generalisation)", _num(m.get("precision"))],
        ["average class size", _num(m.get("avg_class_size"))],
        ["equivalence classes (kept)", _int(m.get("n_equivalence_classes"))],
    ]
    if per_chunk:
        loss.insert(1, ["sum of the chunks' own DM*", _int(m.get("dm_star_sum_of_chunks"))])
    body.append(_table(loss, ["metric", "value"]))
    if "classes" in plots:
        body.append(
            f'<img alt="class-size distribution" src="data:image/png;base64,{plots["classes"]}">'
        )
    elif m.get("class_size_histogram"):
        rows = [[_e(b), _int(c)] for b, c in m["class_size_histogram"].items()]
        body.append(_table(rows, ["class size", "classes"]))

    body.append("<h2>Suppression and re-identification risk</h2>")
    share = risk.get("share_below_2k")
    rows = [
        ["suppressed records", _int(s)],
        ["suppression allowed (floor(limit · N))", _int(m.get("max_suppressed"))],
        ["suppressed records are", _e(m.get("suppressed_records", "masked"))],
        ["prosecutor risk, max (1 / smallest class)", _num(risk.get("prosecutor_risk_max"))],
        ["prosecutor risk, average (classes / records)", _num(risk.get("prosecutor_risk_avg"))],
        [
            f"records in classes smaller than 2k = {_int(2 * k) if isinstance(k, int) else '?'}",
            f"{100 * share:.3g} %" if isinstance(share, float) else "n/a",
        ],
    ]
    body.append(_table(rows, ["figure", "value"]))

    body.append("<h2>Lattice search</h2>")
    lat = m.get("lattice") or {}
    rows = [
        ["nodes in the searched lattice", _int(lat.get("nodes"))],
        ["nodes evaluated (class sizes computed)", _int(lat.get("evaluated"))],
        ["nodes passing k within the suppression limit", _int(lat.get("passing"))],
    ]
    root_lat = m.get("root_lattice") or {}
    if root_lat:
        rows += [
            ["full lattice (RAM-root choice)", _int(root_lat.get("nodes"))],
            ["  evaluated for the memory bound", _int(root_lat.get("evaluated"))],
            ["  complying with the memory bound", _int(root_lat.get("complying"))],
        ]
    if per_chunk:
        rows.insert(0, ["(summed over the chunks' searches)", ""])
    body.append(_table(rows, ["counter", "value"]))

    body.append("<h2>Time and memory</h2>")
    timings = m.get("timings_s") or {}
    mem = m.get("peak_rss_bytes_by_phase") or {}
    rows = [
        [
            _e(p),
            f"{t:.2f} s" if isinstance(t, int | float) else "n/a",
            _bytes(mem.get(p)) if mem else "",
        ]
        for p, t in timings.items()
    ]
    rows.append(
        ["total", f"{sum(v for v in timings.values() if v):.2f} s", _bytes(m.get("peak_rss_bytes"))]
    )
    head = ["phase", "time", "peak RSS so far" if mem else ""]
    body.append(_table(rows, head))
    body.append(
        f'<p class="muted">Peak resident memory of the process: {_bytes(m.get("peak_rss_bytes"))}'
        + (" (high-water mark at the end of each phase in the table)." if mem else ".")
        + "</p>"
    )
    if "timings" in plots:
        body.append(f'<img alt="time per phase" src="data:image/png;base64,{plots["timings"]}">')
    if not plots:
        body.append(
            '<p class="muted">Plots omitted: matplotlib is not installed '
            "(pip install 'airflow-skald[report]').</p>"
        )

    body.append("<h2>Audit</h2>")
    rows = [
        ["direct identifiers removed", _e(", ".join(m.get("direct_identifiers_removed") or []))],
        ["sensitive attributes kept", _e(", ".join(m.get("sensitive_attributes") or []))],
        ["parts", _int(len(m.get("parts") or []))],
        ["config sha256", f"<code>{_e(m.get('config_sha256'))}</code>"],
        ["input fingerprint", f"<code>{_e(m.get('input_fingerprint'))}</code>"],
    ]
    body.append(_table(rows))
    body.append('<p class="muted">Generated from manifest.json only: no record values.</p>')
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
        + "\n".join(body)
        + "</body></html>\n"
    )


def write_report(manifest: dict, folder: str) -> str | None:
    """Write `report.html` into the (staging) release folder; a failure only logs a warning."""
    target = folder.rstrip("/") + "/" + REPORT
    try:
        write_bytes_atomic(target, render_report(manifest).encode("utf-8"))
    except Exception as exc:  # the release is verified already: a report bug must not lose it
        log.warning("report.html not written: %s", exc)
        return None
    return target
