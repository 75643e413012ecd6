"""Sections: information loss (metrics, class sizes) and the quality models."""

from __future__ import annotations

from collections.abc import Mapping

from airflow_skald.core.release.report.charts import bar_chart
from airflow_skald.core.release.report.facts import METRICS, is_per_chunk, quality_metrics
from airflow_skald.core.release.report.format import chart_figure, table
from airflow_skald.core.release.report.plots import class_size_bins
from airflow_skald.core.text import esc, fmt_int, fmt_num
from airflow_skald.core.transform import registry as transform_registry
from airflow_skald.core.transform.base import BeyondNode


def _class_sizes(m: Mapping, plots: Mapping[str, str]) -> str:
    """The class-size distribution: the chart, and its figures as a table."""
    hist = m.get("class_size_histogram") or {}
    if not hist:
        return ""
    rows = [[esc(label), fmt_int(count)] for label, count in class_size_bins(hist, m.get("k"))]
    return chart_figure(plots["classes"]) + table(rows, ["class size", "classes"])


def quality_html(m: Mapping, plots: Mapping[str, str]) -> str:
    """Information loss: every reported metric (those the quality models' table scores are
    left to it), class counts, then the class sizes."""
    quality = quality_metrics(m)
    labels = dict(METRICS)
    scored = ((m.get("quality_models") or {}).get("scores") or {}).keys() - {"precision"}
    known = [
        [esc(label), fmt_num(quality[name])]
        for name, label in METRICS
        if name in quality and name not in scored
    ]
    other = [[esc(name), fmt_num(v)] for name, v in quality.items() if name not in labels]
    rows = known + other
    if is_per_chunk(m):
        rows.insert(1, ["sum of the chunks' own DM*", fmt_int(m.get("dm_star_sum_of_chunks"))])
    rows += [
        ["average class size", fmt_num(m.get("avg_class_size"))],
        ["equivalence classes (kept)", fmt_int(m.get("n_equivalence_classes"))],
    ]
    return "<h2>Information loss</h2>" + table(rows, ["metric", "value"]) + _class_sizes(m, plots)


#: the quality models (docs/design.md §4d) in the report's order, with what each measures
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


def quality_models_html(m: Mapping) -> str:
    """The objective, every quality model's score for the node, the per-QID table and each
    QID's distribution before and after generalisation (counts and labels the manifest holds,
    labels of fewer than k records never named)."""
    q = m.get("quality_models")
    if not isinstance(q, Mapping):
        return ""
    scores = q.get("scores") or {}
    objective = q.get("objective")
    beyond = transform_registry.beyond_node(m)  # e.g. local recoding's steps
    rescored = dict(beyond.scores) if beyond else {}
    rows = [
        [
            esc(label)
            + (" <b>(objective)</b>" if name == objective else "")
            + (" (global node)" if rescored and name not in rescored else ""),
            fmt_num(rescored.get(name, scores.get(name))),
        ]
        for name, label in QUALITY_MODELS
        if name in scores
    ]
    settings = (
        f"gs factor {esc(q.get('gs_factor'))}, aggregate {esc(q.get('aggregate') or 'n/a')}"
        + (f", weights {esc(q.get('weights'))}" if q.get("weights") else "")
    )
    per_qid = [
        [
            esc(r.get("name")),
            f"{fmt_int(r.get('level'))} of {fmt_int(r.get('top'))}",
            fmt_num(r.get("loss")),
            fmt_num(r.get("nu_entropy")),
            fmt_int(r.get("labels")),
        ]
        for r in q.get("qids") or []
    ]
    at_node = beyond if rescored else None  # its scores shown: its words too
    charts = "".join(_distribution_charts(r, at_node) for r in q.get("qids") or [])
    return (
        "<h2>Quality models</h2>"
        f'<p class="muted">The search minimised <b>{esc(objective)}</b> ({settings}); ties by '
        "smaller sum of levels, then precision, then qid_priority (DM*: precision first).</p>"
        + (at_node.note if at_node else "")
        + table(rows, ["model", "score of the release" if rescored else "score at the chosen node"])
        + table(per_qid, ["QID", "level", "loss", "NU-entropy (bits)", "labels"])
        + (f'<p class="muted">{esc(q["left_out"])}</p>' if q.get("left_out") else "")
        + charts
    )


def _distribution_charts(row: Mapping, beyond: BeyondNode | None = None) -> str:
    """A QID's distribution before and after; with records released beyond the node (local
    recoding's steps, in their own section) "after" is the node's, and says so."""
    dist = row.get("distribution")
    if not isinstance(dist, Mapping):
        return ""
    out = []
    after = (
        beyond.at_node.format(name=row.get("name"), level=row.get("level"))
        if beyond
        else f"{row.get('name')} after (level {row.get('level')})"
    )
    for part, title, color in (
        ("before", f"{row.get('name')} before (level {dist.get('before_level')})", "#8a94a6"),
        ("after", after, "#3b6fb6"),
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
            out.append(chart_figure(chart))
    return f'<div class="pair">{"".join(out)}</div>' if out else ""
