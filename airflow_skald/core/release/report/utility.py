"""Sections: what the release is still good for (the manifest's `utility`, docs/design.md §5), and the
warning about QIDs generalised to the top for every released record (always shown)."""

from __future__ import annotations

from collections.abc import Mapping

from airflow_skald.core.release.report.charts import bar_chart
from airflow_skald.core.release.report.format import chart_figure, table
from airflow_skald.core.text import esc, fmt_int, fmt_num
from airflow_skald.core.transform import registry as transform_registry
from airflow_skald.core.utility.top import advice, all_top

#: the models' names in words
MODEL_WORDS = {
    "logistic_regression": "logistic regression",
    "naive_bayes": "naive Bayes",
    "random_forest": "random forest",
}
#: the models' names on the chart's bars (short: the labels have room for 28 characters)
MODEL_SHORT = {"logistic_regression": "log. regression"}
#: the accuracy chart's bars of one model: original, release, majority-class baseline
BAR_COLORS = ("#8a94a6", "#3b6fb6", "#d98c2b")


def _share(x: object) -> str:
    return f"{100 * x:.1f} %" if isinstance(x, int | float) and not isinstance(x, bool) else "n/a"


def all_top_html(m: Mapping) -> str:
    """A plain warning naming the QIDs the release keeps nothing of, and what would keep them."""
    node, tops = m.get("node"), m.get("top_node")
    if not isinstance(node, Mapping) or not isinstance(tops, Mapping) or m.get("mode"):
        return ""
    beyond = transform_registry.beyond_node(m)  # e.g. local recoding's steps
    names = all_top([node, *(beyond.nodes if beyond else ())], tops)
    if not names:
        return ""
    objective = (m.get("quality_models") or {}).get("objective")
    ran = beyond is not None and beyond.ran
    return f'<p class="bad">Warning: {esc(advice(names, objective, ran))}</p>'


def _accuracy_chart(c: Mapping) -> str:
    labels, values = [], []
    baseline = (c.get("baseline") or {}).get("accuracy", 0.0)
    for model in c.get("models") or []:
        kind = model.get("model")
        name = MODEL_SHORT.get(kind) or MODEL_WORDS.get(kind, str(kind))
        for part, value in (
            ("original", model["original"]["accuracy"]),
            ("release", model["release"]["accuracy"]),
            ("baseline", baseline),
        ):
            labels.append(f"{name}: {part}")
            values.append(round(100 * value, 1))
    if not values:
        return ""
    chart = bar_chart(
        labels,
        values,
        title="Accuracy: trained on the original, on the release, and the majority class",
        value_label="records classified correctly, %",
        color=BAR_COLORS,
        horizontal=True,
    )
    return chart_figure(chart)


def _classification(c: Mapping, sample: Mapping) -> str:
    base = c.get("baseline") or {}
    rows = []
    for model in c.get("models") or []:
        o, r = model.get("original") or {}, model.get("release") or {}
        rows.append(
            [
                esc(MODEL_WORDS.get(model.get("model"), model.get("model"))),
                _share(o.get("accuracy")),
                _share(r.get("accuracy")),
                _share(base.get("accuracy")),
                fmt_num(o.get("auc")),
                fmt_num(r.get("auc")),
                fmt_num(o.get("brier")),
                fmt_num(r.get("brier")),
                fmt_num(model.get("brier_skill")),
            ]
        )
    head = [
        "model",
        "accuracy, original",
        "accuracy, release",
        "majority class",
        "AUC, original",
        "AUC, release",
        "Brier, original",
        "Brier, release",
        "Brier skill",
    ]
    trained = c.get("released_for_training")
    return (
        f"<h3>Predicting '{esc(c.get('target'))}'</h3>"
        f'<p class="muted">{fmt_int(c.get("records"))} sampled records (the same in both '
        f"tables; a reproducible sample of at most {fmt_int(sample.get('max_records'))}), "
        f"{fmt_int(c.get('folds'))}-fold cross-validation, the same folds for every model; "
        f"features: {esc(', '.join(c.get('features') or []))}. The release's models learn "
        f"from its {fmt_int(trained)} records not suppressed and are scored on the released "
        "values, as ARX's StatisticsClassification. Brier skill = 1 − Brier(release) / "
        "Brier(original) (ARX's): 0 = as good as the original.</p>"
        + table(rows, head)
        + _accuracy_chart(c)
    )


def _value(x: object) -> str:
    """A figure for people: "–" when absent, an integral number without ".0"."""
    if x is None:
        return "–"
    if isinstance(x, float) and x.is_integer() and abs(x) < 1e15:
        return fmt_int(int(x))
    return fmt_num(x)


def _figures(f: Mapping, keys: tuple[str, ...]) -> list[str]:
    return [_value(f.get(key)) for key in keys]


#: the per-QID tables' heads
BEFORE_HEAD = ["QID", "input: records", "distinct", "most frequent value", "mean", "std"]
AFTER_HEAD = ["QID", "release: records", "'*'", "distinct", "mode (records)"]
AFTER_HEAD += ["min", "max", "mean", "median", "std"]


def _qid_tables(qids: list) -> str:
    before, after = [], []
    for q in qids:
        b, a = q.get("before") or {}, q.get("after") or {}
        name = esc(q.get("name"))
        share = _share(b["mode_records"] / b["count"]) if b.get("count") else "–"
        before.append([name, *_figures(b, ("count", "distinct")), share])
        before[-1] += _figures(b, ("mean", "std"))
        mode = "–" if "mode" not in a else f"{esc(_value(a['mode']))} ({_value(a['mode_records'])})"
        after.append([name, *_figures(a, ("count", "top_records", "distinct")), mode])
        after[-1] += _figures(a, ("min", "max", "mean", "median", "std"))
    return (
        "<h3>Each QID before and after</h3>"
        '<p class="muted">Exact over all records. The input\'s minimum, maximum, median and '
        "mode are values of input records: the manifest, published with the release, never "
        "names one (its mean and standard deviation are shown, and its most frequent value's "
        "share). The release's figures are of its own labels; '*': records suppressed or "
        "generalised to the top; numbers when every released label of the QID is one.</p>"
        + table(before, BEFORE_HEAD)
        + table(after, AFTER_HEAD)
    )


def _contingency(c: Mapping) -> str:
    a, b = (c.get("pair") or ["?", "?"])[:2]
    cols = c.get("columns") or []
    rows = [
        [esc(label)] + [fmt_int(n) for n in counts]
        for label, counts in zip(c.get("rows") or [], c.get("counts") or [], strict=False)
    ]
    other = c.get("other")
    return (
        f"<h3>Contingency of '{esc(a)}' and '{esc(b)}' in the release</h3>"
        + table(rows, [f"{a} \\ {b}", *[str(x) for x in cols]])
        + f'<p class="muted">Records per pair of released labels (the most frequent labels; '
        f"{fmt_int(other)} records in other pairs). Association (Cramér's V) in the sample: "
        f"{_value(c.get('cramers_v_before'))} in the input, "
        f"{_value(c.get('cramers_v_after'))} in the release (–: one value only).</p>"
    )


def utility_html(m: Mapping) -> str:
    """The utility analysis: classifiers, per-QID figures, contingency tables."""
    u = m.get("utility")
    if not isinstance(u, Mapping):
        return ""
    settings = u.get("settings") or {}
    parts = ["<h2>What the release is still good for</h2>"]
    if u.get("left_out"):
        return parts[0] + f"<p>{esc(u['left_out'])}</p>"
    if isinstance(u.get("classification"), Mapping):
        parts.append(_classification(u["classification"], settings))
    parts.append(_qid_tables(u.get("qids") or []))
    parts += [_contingency(c) for c in u.get("contingency") or [] if isinstance(c, Mapping)]
    return "".join(parts)
