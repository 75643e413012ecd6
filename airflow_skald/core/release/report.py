"""`report.html` beside every release's manifest: what the run decided, for people.

Self-contained (inline CSS, charts as inline SVG from `charts.py`: no plotting library),
readable from a file without a server. It is rendered from the manifest and the run record
(``run.json``: run identity, time, timings and memory) ALONE, so it holds no data value they
do not hold: levels, counts, metrics, timings, never a record. Releases written before the run
record existed kept their timings and memory in the manifest: they are read from there.

`render_report` composes one small function per section; each takes the page's facts (the
manifest with the run record laid over it) and returns HTML, or "" when it has nothing to show.
"""

from __future__ import annotations

import html
import logging
import math
import re
from collections.abc import Mapping, Sequence
from datetime import datetime

from airflow_skald.core.release.charts import bar_chart
from airflow_skald.core.release.commit import REPORT, write_bytes_atomic

log = logging.getLogger("airflow_skald")

__all__ = ["render_report", "write_report", "node_in_words", "class_size_bins"]

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
figure.chart{margin:.8em 0}.pair{display:flex;flex-wrap:wrap;gap:0 1.5em}figure.chart svg{max-width:100%;height:auto}
"""

#: the run's identity and time, in the order the report lists them
RUN_IDENTITY = (
    ("run_token", "run token"),
    ("dag_id", "DAG id"),
    ("run_id", "DAG run id"),
    ("try_number", "try number"),
    ("started_at", "started"),
    ("finished_at", "finished"),
)
#: the quality metrics the manifest reports, in the report's order, with what each measures
METRICS = (
    ("dm_star", "DM* (paper: kept |E|² + s²)"),
    ("dm_star_arx", "DM* (ARX: all classes |E|²)"),
    ("dm", "DM, discernibility (kept |E|² + N·s)"),
    ("precision", "precision (Sweeney, 1 = no generalisation)"),
)
#: figures a privacy model reaches over the kept classes (other keys are its settings)
FIGURES = {
    "min_class_size": "smallest class",
    "min_distinct": "smallest distinct count",
    "min_entropy_l": "smallest entropy l",
    "max_recursive_ratio": "largest recursive (c,l) ratio",
    "max_distance": "largest distance",
}
#: rows of long per-chunk / per-class tables shown (all are in the manifest)
MAX_ROWS = 50


# --- formatting ------------------------------------------------------------------------------


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


def _seconds(t: object) -> str:
    return f"{t:.2f} s" if isinstance(t, int | float) else "n/a"


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


def _chart(svg: str) -> str:
    return f'<figure class="chart">{svg}</figure>'


def _truncated(shown: int, total: int, what: str) -> str:
    if total <= shown:
        return ""
    return f'<p class="muted">first {shown} of {total} {what} shown; all are in manifest.json.</p>'


# --- reading the manifest and the run record -------------------------------------------------


def _facts(manifest: Mapping, run: Mapping | None) -> dict:
    """The manifest with the run record's timings, memory and identity laid over it."""
    facts = dict(manifest)
    if run:
        facts.update({k: v for k, v in run.items() if v is not None})
    return facts


def _quality(m: Mapping) -> dict:
    """The metrics, from a `quality` section ({"dm_star": ...}) or today's flat keys."""
    flat = {name: m[name] for name, _ in METRICS if name in m}
    section = m.get("quality")
    return {**flat, **section} if isinstance(section, Mapping) else flat


def _models(m: Mapping) -> list[dict]:
    """Each privacy model with its settings (and the figure reached, when the manifest has it)."""
    models = m.get("privacy_models") or (m.get("privacy") or {}).get("models") or []
    return [d for d in models if isinstance(d, Mapping)]


def _split_model(model: Mapping) -> tuple[dict, dict]:
    """(settings, figures) of one model: figures are the min_/max_ keys, settings the rest."""
    settings, figures = {}, {}
    for key, value in model.items():
        if key == "model":
            continue
        (figures if key in FIGURES or key.startswith(("min_", "max_")) else settings)[key] = value
    return settings, figures


def _lower_bound(label: str) -> float:
    found = re.match(r"\s*(\d+)", str(label))
    return int(found.group(1)) if found else math.inf


def _from_k(label: str, k: object) -> str:
    """A bin's label starting at k when its lower end is below k but its upper end is not: kept
    classes hold at least k records, so "4-7" with k = 5 holds classes of 5 to 7 records."""
    found = re.fullmatch(r"\s*(\d+)\s*-\s*(\d+)\s*", str(label))
    if not found or not isinstance(k, int) or isinstance(k, bool):
        return label
    low, high = int(found.group(1)), int(found.group(2))
    return f"{k}-{high}" if low < k <= high else label


def class_size_bins(hist: Mapping[str, int], k: object = None) -> list[tuple[str, int]]:
    """The class-size histogram's bins in numeric order of their lower bound ("2-3" < "16-31").
    Given k, a bin straddling k is labelled from k ("4-7" -> "5-7" for k = 5); the manifest's
    bins are powers of two and stay as they are."""
    ordered = sorted(hist.items(), key=lambda item: _lower_bound(item[0]))
    return [(_from_k(label, k), count) for label, count in ordered]


def _paper_parts(node_paper: str) -> tuple[list[str], list[str]]:
    """((2, 1), (1, 24, 32)) -> (['2', '1'], ['1', '24', '32'])."""
    groups = re.findall(r"\(([^()]*)\)", node_paper or "")
    if len(groups) < 2:
        return [], []
    split = [[v.strip() for v in g.split(",") if v.strip()] for g in groups[:2]]
    return split[0], split[1]


def _level_meaning(q: Mapping, level: object, top: object, paper: str) -> str:
    kind = q.get("type", "?")
    if isinstance(level, list):
        return "varies by chunk: levels " + ", ".join(str(v) for v in level)
    if level == 0:
        width = f" (bins of width {paper})" if kind == "numerical" and paper else ""
        return "original values" + width
    if top is not None and level == top:
        return "fully generalised (one value: '*' or the whole domain)"
    if kind == "categorical":
        return f"hierarchy level {level} (paper level {paper})"
    unit = " encoded ranks" if q.get("encode") else ""
    return f"bins of width {paper}{unit}"


def node_in_words(manifest: dict, levels: dict, node_paper: str) -> list[dict]:
    """One row per QID: level (0-based), paper level/width, and what the level means."""
    qids = manifest.get("quasi_identifiers") or [{"name": n, "type": "?"} for n in levels]
    tops = manifest.get("top_node") or {}
    paper_of = dict(zip(("categorical", "numerical"), _paper_parts(node_paper), strict=True))
    rows = []
    for q in qids:
        name, kind = q["name"], q.get("type", "?")
        level, top = levels.get(name), tops.get(name)
        widths = paper_of.get(kind)
        paper = widths.pop(0) if widths else ""
        meaning = _level_meaning(q, level, top, paper)
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


# --- plots -----------------------------------------------------------------------------------


def _class_size_chart(hist: Mapping[str, int], k: object) -> str:
    bins = class_size_bins(hist, k)
    return bar_chart(
        [label for label, _ in bins],
        [count for _, count in bins],
        title=f"Class-size distribution (k = {k})",
        value_label="number of classes",
        category_label="equivalence class size (records)",
    )


def _timings_chart(timings: Mapping[str, float]) -> str:
    return bar_chart(
        list(timings),
        list(timings.values()),
        title="Time per phase",
        value_label="seconds",
        color="#d98c2b",
        horizontal=True,
    )


def _risk_chart(bins: Sequence[Mapping]) -> str:
    return bar_chart(
        [f"{b.get('sizes')} (risk {b.get('risk')})" for b in bins],
        [b.get("records", 0) for b in bins],
        title="Records by class size (prosecutor risk = 1 / class size)",
        value_label="records",
        category_label="class size (risk)",
        color="#b6463b",
    )


def _plots(manifest: Mapping) -> dict[str, str]:
    """Inline SVG charts of the class-size distribution, the records by class size and risk,
    and the phase timings."""
    out = {}
    bins = (manifest.get("risk_analysis") or {}).get("by_class_size") or []
    if bins and all(isinstance(b, Mapping) for b in bins):
        out["risk"] = _risk_chart(bins)
    hist = manifest.get("class_size_histogram") or {}
    if hist:
        out["classes"] = _class_size_chart(hist, manifest.get("k"))
    timings = {k: v for k, v in (manifest.get("timings_s") or {}).items() if v is not None}
    if timings:
        out["timings"] = _timings_chart(timings)
    return out


# --- sections --------------------------------------------------------------------------------


def _per_chunk(m: Mapping) -> bool:
    return m.get("mode") == "per_chunk"


def _title(m: Mapping) -> str:
    return "SKALD per-chunk baseline report" if _per_chunk(m) else "SKALD release report"


def _model_names(m: Mapping) -> list[str]:
    return [str(d.get("model")) for d in _models(m) if d.get("model")]


def _criteria(m: Mapping) -> str:
    """What a node must pass, in words: "k" alone, else the models' names."""
    names = _model_names(m)
    return "k" if names in ([], ["k-anonymity"]) else _e(", ".join(names))


def _verified_words(m: Mapping) -> str:
    if not m.get("verified"):
        return '<span class="bad">NOT verified</span>'
    criteria = _criteria(m)
    words = "k-anonymous" if criteria == "k" else f"against {criteria}"
    return f'<span class="ok">verified {words}</span>'


def _header(m: Mapping) -> str:
    """Title and one line: records, chunks, k, suppression limit, version, verification."""
    per_chunk = " (every chunk's part on its own, and their union)" if _per_chunk(m) else ""
    return (
        f"<h1>{_e(_title(m))}</h1>"
        f'<p class="muted">{_int(m.get("n_records") or 0)} records in {_int(m.get("chunks"))} '
        f"chunk(s), k = {_int(m.get('k'))}, suppression limit {_num(m.get('suppression_limit'))}, "
        f"skald {_e(m.get('version', '?'))}. Release {_verified_words(m)}{per_chunk}.</p>"
    )


def _suppressed_share(m: Mapping) -> str:
    n, s = m.get("n_records") or 0, m.get("n_suppressed") or 0
    return f"{_int(s)} ({100 * s / n:.3g} %)" if n else _int(s)


def _cards(m: Mapping) -> str:
    """The headline figures, one card each."""
    quality = _quality(m)
    cards = [
        ("DM*", _int(quality.get("dm_star"))),
        ("equivalence classes", _int(m.get("n_equivalence_classes"))),
        ("smallest class", _int(m.get("min_class_size"))),
        ("suppressed records", _suppressed_share(m)),
        (
            "max prosecutor risk (kept records)",
            _num((m.get("risk") or {}).get("prosecutor_risk_max")),
        ),
        ("precision", _num(quality.get("precision"))),
    ]
    body = "".join(f'<div class="card"><b>{v}</b>{_e(label)}</div>' for label, v in cards)
    return f'<div class="cards">{body}</div>'


def _node_table(manifest: Mapping, levels: dict, node_paper: str) -> str:
    rows = [
        [
            _e(r["name"]),
            _e(r["type"]),
            _e(r["level"]) + (f" / {_e(r['top'])}" if r["top"] is not None else ""),
            _e(r["paper"]),
            _e(r["meaning"]),
        ]
        for r in node_in_words(dict(manifest), levels, node_paper)
    ]
    return _table(rows, ["QID", "type", "level / top", "paper", "meaning"])


def _chosen_node(m: Mapping) -> str:
    """The global run's node, in paper notation and per QID."""
    return (
        "<h2>Chosen generalisation node</h2>"
        f"<p>Paper notation <code>{_e(m.get('node_paper'))}</code> "
        "(categorical levels counted from 1, then numerical bin widths).</p>"
        + _node_table(m, m.get("node") or {}, m.get("node_paper", ""))
    )


def _ram_root(m: Mapping) -> str:
    """The RAM root node: the finest node whose histogram fits the memory bound."""
    how = (
        " (derived from the chunk size, paper eq. 3)"
        if m.get("histogram_bins_derived")
        else " (configured)"
    )
    if m.get("root_mode") == "adaptive":  # N_RAM bounds the non-empty bins (SPEC 4a)
        criteria = [x for x in m.get("privacy_models") or [] if x.get("attribute")]
        what = "non-empty (class, value) pairs" if criteria else "non-empty bins"
        fits = (
            f"{_int(m.get('root_bins_nonempty'))} {what} (at or below the paper's "
            f"root <code>{_e(m.get('paper_root_node_paper'))}</code>)"
        )
    else:
        fits = f"{_int(m.get('root_bins'))} possible bins"
    return (
        "<h2>RAM root node</h2>"
        f"<p>The finest node whose histogram fits the memory bound: "
        f"<code>{_e(m.get('root_node_paper'))}</code>, {fits} "
        f"for N<sub>RAM</sub> = {_int(m.get('histogram_bins'))}{how}. "
        "The optimal node is searched above it.</p>"
        + _node_table(m, m.get("root_node") or {}, m.get("root_node_paper", ""))
    )


def _chunk_nodes(m: Mapping) -> str:
    """The per-chunk baseline: which nodes the chunks chose, and the levels over all chunks."""
    rows = [[_e(d["node_paper"]), _int(d["chunks"])] for d in m.get("chunk_nodes") or []]
    return (
        "<h2>Nodes chosen chunk by chunk</h2>"
        "<p>Each chunk was anonymised alone with its own optimal node (no RAM bound, the "
        "full lattice above the all-zeros node), as a memory-bound ARX user would. The "
        "figures above are those of the union of the released chunks.</p>"
        + _table(rows, ["node (paper notation)", "chunks"])
        + "<h3>Levels per QID (over all chunks)</h3>"
        + _node_table(m, m.get("node") or {}, "")
    )


def _chunk_table(m: Mapping) -> str:
    """The per-chunk baseline: each chunk's node and own figures (the first MAX_ROWS)."""
    chunks = m.get("per_chunk") or []
    shown = chunks[:MAX_ROWS]
    keys = ("n_records", "node_paper", "dm_star", "n_suppressed", "n_equivalence_classes")
    rows = [
        [_int(c.get("chunk_id"))]
        + [_int(c.get(key)) for key in keys]
        + [_int(c.get("min_class_size"))]
        for c in shown
    ]
    head = ["chunk", "records", "node", "own DM*", "suppressed", "classes", "min class"]
    return _table(rows, head) + _truncated(len(shown), len(chunks), "chunks")


def _nodes(m: Mapping) -> str:
    if _per_chunk(m):
        return _chunk_nodes(m) + _chunk_table(m)
    return _chosen_node(m) + _ram_root(m)


def _privacy(m: Mapping) -> str:
    """Each privacy model: its settings and the figure it reached over the kept classes."""
    models = _models(m)
    if not models:
        return ""
    rows = []
    for model in models:
        settings, figures = _split_model(model)
        rows.append(
            [
                _e(model.get("model", "?")),
                _e(", ".join(f"{k} = {v}" for k, v in settings.items())),
                "<br>".join(f"{_e(FIGURES.get(k, k))}: {_num(v)}" for k, v in figures.items()),
            ]
        )
    limit = (m.get("privacy") or {}).get("suppression_limit", m.get("suppression_limit"))
    return (
        "<h2>Privacy models</h2>"
        + _table(rows, ["model", "settings", "reached over kept classes"])
        + f'<p class="muted">Suppression limit {_e(limit)} of the records.</p>'
    )


def _class_sizes(m: Mapping, plots: Mapping[str, str]) -> str:
    """The class-size distribution: the chart, and its figures as a table."""
    hist = m.get("class_size_histogram") or {}
    if not hist:
        return ""
    rows = [[_e(label), _int(count)] for label, count in class_size_bins(hist, m.get("k"))]
    return _chart(plots["classes"]) + _table(rows, ["class size", "classes"])


def _quality_section(m: Mapping, plots: Mapping[str, str]) -> str:
    """Information loss: every reported metric (those the quality models' table scores are
    left to it), class counts, then the class sizes."""
    quality = _quality(m)
    labels = dict(METRICS)
    scored = ((m.get("quality_models") or {}).get("scores") or {}).keys() - {"precision"}
    known = [
        [_e(label), _num(quality[name])]
        for name, label in METRICS
        if name in quality and name not in scored
    ]
    other = [[_e(name), _num(v)] for name, v in quality.items() if name not in labels]
    rows = known + other
    if _per_chunk(m):
        rows.insert(1, ["sum of the chunks' own DM*", _int(m.get("dm_star_sum_of_chunks"))])
    rows += [
        ["average class size", _num(m.get("avg_class_size"))],
        ["equivalence classes (kept)", _int(m.get("n_equivalence_classes"))],
    ]
    return "<h2>Information loss</h2>" + _table(rows, ["metric", "value"]) + _class_sizes(m, plots)


#: the quality models (SPEC §4d) in the report's order, with what each measures
QUALITY_MODELS = (
    ("dm_star", "DM* (paper)"),
    ("dm_star_arx", "DM* (ARX)"),
    ("dm", "discernibility (DM)"),
    ("aecs", "average equivalence class size"),
    ("loss", "Loss (ARX, 0 = no loss)"),
    ("nu_entropy", "non-uniform entropy, bits"),
    ("precision", "precision loss (ARX, 0 = no loss)"),
    ("height", "height (sum of levels)"),
)


def _quality_models(m: Mapping) -> str:
    """The objective, every quality model's score for the node, the per-QID table and each
    QID's distribution before and after generalisation (counts and labels the manifest holds,
    labels of fewer than k records never named)."""
    q = m.get("quality_models")
    if not isinstance(q, Mapping):
        return ""
    scores = q.get("scores") or {}
    objective = q.get("objective")
    rows = [
        [_e(label) + (" <b>(objective)</b>" if name == objective else ""), _num(scores.get(name))]
        for name, label in QUALITY_MODELS
        if name in scores
    ]
    settings = (
        f"gs factor {_e(q.get('gs_factor'))}, aggregate {_e(q.get('aggregate') or 'n/a')}"
        + (f", weights {_e(q.get('weights'))}" if q.get("weights") else "")
    )
    per_qid = [
        [
            _e(r.get("name")),
            f"{_int(r.get('level'))} of {_int(r.get('top'))}",
            _num(r.get("loss")),
            _num(r.get("nu_entropy")),
            _int(r.get("labels")),
        ]
        for r in q.get("qids") or []
    ]
    charts = "".join(_distribution_charts(r) for r in q.get("qids") or [])
    return (
        "<h2>Quality models</h2>"
        f'<p class="muted">The search minimised <b>{_e(objective)}</b> ({settings}); ties by '
        "smaller sum of levels, then precision, then qid_priority (DM*: precision first).</p>"
        + _table(rows, ["model", "score at the chosen node"])
        + _table(per_qid, ["QID", "level", "loss", "NU-entropy (bits)", "labels"])
        + charts
    )


def _distribution_charts(row: Mapping) -> str:
    dist = row.get("distribution")
    if not isinstance(dist, Mapping):
        return ""
    out = []
    for part, title, color in (
        ("before", f"{row.get('name')} before (level {dist.get('before_level')})", "#8a94a6"),
        ("after", f"{row.get('name')} after (level {row.get('level')})", "#3b6fb6"),
    ):
        d = dist.get(part) or {}
        labels = [str(lab) for lab, _ in d.get("labels") or []]
        values = [c for _, c in d.get("labels") or []]
        if d.get("other"):
            labels.append(f"other ({d.get('other_labels')} labels)")
            values.append(d["other"])
        if part == "after" and dist.get("suppressed"):
            labels.append("* (suppressed)")
            values.append(dist["suppressed"])
        if values:
            chart = bar_chart(
                labels, values, title=title, value_label="records", color=color, width=470
            )
            out.append(_chart(chart))
    return f'<div class="pair">{"".join(out)}</div>' if out else ""


#: the records the risk figures are computed over (the manifest's `risk` section)
KEPT = "kept (not suppressed) records"


def _risk(m: Mapping) -> str:
    """Suppression, then the re-identification risk of the kept classes (suppressed records,
    masked or dropped, are in no class the figures count)."""
    risk = m.get("risk") or {}
    k = m.get("k")
    share = risk.get("share_below_2k")
    two_k = _int(2 * k) if isinstance(k, int) and not isinstance(k, bool) else "?"
    rows = [
        ["suppressed records", _int(m.get("n_suppressed") or 0)],
        ["suppression allowed (floor(limit · N))", _int(m.get("max_suppressed"))],
        ["suppressed records are", _e(m.get("suppressed_records", "masked"))],
        [
            f"prosecutor risk of the {KEPT}, max (1 / smallest kept class)",
            _num(risk.get("prosecutor_risk_max")),
        ],
        [
            f"prosecutor risk of the {KEPT}, average (kept classes / kept records)",
            _num(risk.get("prosecutor_risk_avg")),
        ],
        [
            f"share of the {KEPT} in classes smaller than 2k = {two_k}",
            f"{100 * share:.3g} %" if isinstance(share, float | int) else "n/a",
        ],
    ]
    return (
        "<h2>Suppression and re-identification risk</h2>"
        + _table(rows, ["figure", "value"])
        + f'<p class="muted">The risk figures are computed over the {KEPT} only: a suppressed '
        "record (masked or dropped) is in no equivalence class they count.</p>"
    )


def _share(x: object) -> str:
    """A share as a percentage; an estimate that did not converge is "unavailable"."""
    if x is None:
        return "unavailable"
    if isinstance(x, bool) or not isinstance(x, int | float):
        return "n/a"
    return f"{100 * x:.4g} %"


def _risk_analysis(m: Mapping, plots: Mapping[str, str]) -> str:
    """The risk analysis of the released records (SPEC §4c, as ARX's risk perspective)."""
    a = m.get("risk_analysis")
    if not isinstance(a, Mapping):
        return ""
    pros = a.get("prosecutor") or {}
    pop = a.get("population_uniques") or {}
    where = (
        f"population {_int(a['population'])}"
        if "population" in a
        else f"sampling fraction {_e(a.get('sampling_fraction', '1'))}"
    )
    rows = [
        ["records analysed (not all '*')", _int(a.get("records"))],
        ["equivalence classes", _int(a.get("classes"))],
        [
            f"prosecutor: records at risk (risk above {_e(a.get('threshold'))})",
            _share(pros.get("records_at_risk")),
        ],
        ["prosecutor: highest risk", _share(pros.get("highest_risk"))],
        ["prosecutor: average risk", _share(pros.get("average_risk"))],
        ["journalist (no population table: = prosecutor)", _share(pros.get("average_risk"))],
        ["marketer risk", _share(a.get("marketer_risk"))],
        ["sample uniques", _share(a.get("sample_uniques"))],
        *[
            [f"population uniques, {name}", _share(pop.get(key))]
            for key, name in (("zayatz", "Zayatz"), ("pitman", "Pitman"), ("snb", "SNB"))
        ],
        [
            f"population uniques, Dankar's rule (picks {_e(a.get('dankar_model'))})",
            _share(pop.get("dankar")),
        ],
    ]
    return (
        "<h2>Re-identification risk analysis</h2>"
        + _table(rows, ["figure", "value"])
        + f'<p class="muted">Population: {where}. Estimates as ARX computes them; '
        "&quot;unavailable&quot;: the estimator did not converge.</p>"
        + (_chart(plots["risk"]) if "risk" in plots else "")
    )


#: per model of the manifest: its name in words, the figure an at-risk class is ranked by, and
#: whether the smallest figure is the worst (a class must reach at least the setting) or the
#: largest (it must stay below it)
AT_RISK = {
    "distinct-l-diversity": ("distinct l-diversity", "distinct values", True),
    "entropy-l-diversity": ("entropy l-diversity", "entropy l", True),
    "recursive-cl-diversity": ("recursive (c,l)-diversity", "n₁ / (n_l + … + n_m)", False),
    "t-closeness": ("t-closeness", "distance", False),
}


def _figure(value: object, bound: object = None) -> str:
    """A criterion's figure for people: an integral value without ".0", others to 4 significant
    digits, more when 4 would put the figure on the other side of (or on) the model's
    setting `bound` than the exact figure is."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "n/a"
    if isinstance(value, int) or (math.isfinite(value) and value.is_integer()):
        return _int(int(value))
    if not math.isfinite(value):
        return "∞" if value > 0 else ("-∞" if value < 0 else "n/a")
    try:
        limit = float(bound) if bound is not None and not isinstance(bound, bool) else None
    except (TypeError, ValueError):
        limit = None
    for digits in range(4, 18):
        text = f"{value:.{digits}g}"
        if limit is None or (float(text) > limit) - (float(text) < limit) == (value > limit) - (
            value < limit
        ):
            return text
    return repr(value)


def _figure_cell(name: str, value: object, bound: object) -> str:
    text = _figure(value, bound)
    return text if text == "n/a" else f"{_e(name)} = {_e(text)}"


def _settings_of(m: Mapping, model: str, attribute: object) -> dict:
    """The settings of the manifest's model `model` on `attribute` ({} when not listed)."""
    for d in _models(m):
        if d.get("model") == model and d.get("attribute") == attribute:
            return _split_model(d)[0]
    return {}


def _criterion(m: Mapping, model: str, attribute: object) -> tuple[str, str, bool, object]:
    """(the criterion in words, its figure's name, smallest is worst, the figure's bound)."""
    if not model:  # a manifest written before the at-risk classes named their model
        return "not recorded", "figure", True, None
    words, figure, smallest = AT_RISK.get(model, (model, "figure", True))
    settings = _settings_of(m, model, attribute)
    of = f" of '{attribute}'" if attribute not in (None, "") else ""
    shown = [f"{key} = {settings[key]}" for key in ("c", "l", "t") if key in settings]
    if "distance" in settings:
        shown.append(f"{settings['distance']} distance")
    bound = settings.get("c" if model == "recursive-cl-diversity" else "t")
    if model in ("distinct-l-diversity", "entropy-l-diversity"):
        bound = settings.get("l")
    return words + of + (f" ({', '.join(shown)})" if shown else ""), figure, smallest, bound


def _at_risk(m: Mapping) -> str:
    """Classes at risk, per criterion (in the manifest's order of the models), worst first:
    the criterion, the class's figure, its size, the sensitive attribute and value-share
    buckets (never a value). One class may be at risk under several criteria: one row each."""
    classes = [c for c in m.get("at_risk_classes") or [] if isinstance(c, Mapping)]
    if not classes:
        return ""
    order = [(str(d.get("model")), d.get("attribute")) for d in _models(m)]
    groups: dict[tuple, list[Mapping]] = {}
    for c in classes:
        groups.setdefault((str(c.get("model") or ""), c.get("attribute")), []).append(c)
    keys = sorted(groups, key=lambda g: order.index(g) if g in order else len(order))
    ranked = []
    for key in keys:  # stable: a criterion's ties keep the manifest's order
        words, name, smallest, bound = _criterion(m, *key)
        number = [
            c.get("figure") if isinstance(c.get("figure"), int | float) else None
            for c in groups[key]
        ]
        worst = sorted(
            range(len(groups[key])),
            key=lambda i: (
                number[i] is None,
                0.0 if number[i] is None else (number[i] if smallest else -number[i]),
            ),
        )
        ranked += [(words, name, bound, groups[key][i]) for i in worst]
    shown = ranked[:MAX_ROWS]
    rows = [
        [
            _e(words),
            _figure_cell(name, c.get("figure"), bound),
            _int(c.get("size")),
            _e(c.get("attribute", "")),
            _e(", ".join(f"{b}: {n}" for b, n in (c.get("distribution") or {}).items())),
        ]
        for words, name, bound, c in shown
    ]
    head = [
        "criterion",
        "figure",
        "class size",
        "sensitive attribute",
        "records per value, most frequent first",
    ]
    return (
        "<h3>Classes at risk</h3>"
        '<p class="muted">The kept classes closest to failing each criterion, grouped by '
        "criterion, worst first (smallest distinct count or entropy l, largest (c,l) ratio or "
        "distance). A class close to failing several criteria has one row per criterion.</p>"
        + _table(rows, head)
        + _truncated(len(shown), len(ranked), "classes")
    )


def _lattice(m: Mapping) -> str:
    """The search's counters: lattice size, nodes evaluated and passing, the RAM-root choice."""
    lat = m.get("lattice") or {}
    rows = [
        ["nodes in the searched lattice", _int(lat.get("nodes"))],
        ["nodes evaluated (class sizes computed)", _int(lat.get("evaluated"))],
        [
            f"nodes known to pass {_criteria(m)} within the suppression limit "
            "(evaluated, or implied by a monotone criterion)",
            _int(lat.get("passing")),
        ],
    ]
    if "pruned" in lat:
        rows.append(
            [
                "nodes never classified (a lower bound of the loss ruled them out)",
                _int(lat["pruned"]),
            ]
        )
    root_lat = m.get("root_lattice") or {}
    if root_lat:
        rows += [
            ["full lattice (RAM-root choice)", _int(root_lat.get("nodes"))],
            ["  evaluated for the memory bound", _int(root_lat.get("evaluated"))],
            ["  complying with the memory bound", _int(root_lat.get("complying"))],
        ]
    if _per_chunk(m):
        rows.insert(0, ["(summed over the chunks' searches)", ""])
    note = (
        '<p class="muted">The search classifies only the nodes it needs: nodes it never '
        "evaluated nor implied may pass too, so the nodes known to pass are not all the "
        "passing nodes of the lattice.</p>"
        if lat
        else ""
    )
    return "<h2>Lattice search</h2>" + _table(rows, ["counter", "value"]) + note


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
    measured = None if _per_chunk(m) else _phases_total(m)
    if measured is not None and elapsed - 1 < measured < elapsed + 1:
        return "wall time (measured: the phases' total)", f"{measured:.2f} s"
    return "wall time (finished − started, to the whole second)", f"{elapsed:.0f} s"


def _run_identity(m: Mapping) -> str:
    """Which run (and Airflow DAG run) wrote the release, when, and for how long."""
    rows = [[_e(label), _e(m[key])] for key, label in RUN_IDENTITY if m.get(key) not in (None, "")]
    if wall := _wall_time(m):
        rows.append([_e(wall[0]), wall[1]])
    return "<h2>Run</h2>" + _table(rows) if rows else ""


def _timings(m: Mapping, plots: Mapping[str, str]) -> str:
    """Time and peak memory per phase, with the timings chart."""
    timings = m.get("timings_s") or {}
    mem = m.get("peak_rss_bytes_by_phase") or {}
    peak = _bytes(m.get("peak_rss_bytes"))
    rows = [[_e(p), _seconds(t), _bytes(mem.get(p)) if mem else ""] for p, t in timings.items()]
    rows.append(["total", f"{sum(v for v in timings.values() if v):.2f} s", peak])
    per_phase = " (high-water mark at the end of each phase in the table)." if mem else "."
    return (
        "<h2>Time and memory</h2>"
        + _table(rows, ["phase", "time", "peak RSS so far" if mem else ""])
        + f'<p class="muted">Peak resident memory of the process: {peak}{per_phase}</p>'
        + (_chart(plots["timings"]) if "timings" in plots else "")
    )


def _audit(m: Mapping, with_run_record: bool) -> str:
    """What an auditor matches the release with: columns removed and kept, parts, hashes."""
    rows = [
        ["direct identifiers removed", _e(", ".join(m.get("direct_identifiers_removed") or []))],
        ["sensitive attributes kept", _e(", ".join(m.get("sensitive_attributes") or []))],
        ["parts", _int(len(m.get("parts") or []))],
        ["config sha256", f"<code>{_e(m.get('config_sha256'))}</code>"],
        ["input fingerprint", f"<code>{_e(m.get('input_fingerprint'))}</code>"],
    ]
    sources = "manifest.json and run.json" if with_run_record else "manifest.json"
    return (
        "<h2>Audit</h2>"
        + _table(rows)
        + f'<p class="muted">Generated from {sources} only: no record values.</p>'
    )


def _page(title: str, sections: Sequence[str]) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_e(title)}</title><style>{_CSS}</style></head><body>"
        + "\n".join(s for s in sections if s)
        + "</body></html>\n"
    )


def render_report(manifest: dict, run: dict | None = None) -> str:
    """The report's HTML, from the manifest and (when given) the run record only."""
    m = _facts(manifest, run)
    plots = _plots(m)
    return _page(
        _title(m),
        [
            _header(m),
            _cards(m),
            _nodes(m),
            _privacy(m),
            _quality_section(m, plots),
            _quality_models(m),
            _risk(m),
            _risk_analysis(m, plots),
            _at_risk(m),
            _lattice(m),
            _run_identity(m),
            _timings(m, plots),
            _audit(m, with_run_record=bool(run)),
        ],
    )


def write_report(manifest: dict, folder: str, run: dict | None = None) -> str | None:
    """Write `report.html` into the (staging) release folder; a failure only logs a warning."""
    target = folder.rstrip("/") + "/" + REPORT
    try:
        write_bytes_atomic(target, render_report(manifest, run).encode("utf-8"))
    except Exception as exc:  # the release is verified already: a report bug must not lose it
        log.warning("report.html not written: %s", exc)
        return None
    return target
