"""Section: the kept classes closest to failing each criterion."""

from __future__ import annotations

import math
from collections.abc import Mapping

from airflow_skald.core.release.report.facts import MAX_ROWS, models_of, split_model
from airflow_skald.core.release.report.format import table, truncated
from airflow_skald.core.text import esc, fmt_int

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
        return fmt_int(int(value))
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
    return text if text == "n/a" else f"{esc(name)} = {esc(text)}"


def _settings_of(m: Mapping, model: str, attribute: object) -> dict:
    """The settings of the manifest's model `model` on `attribute` ({} when not listed)."""
    for d in models_of(m):
        if d.get("model") == model and d.get("attribute") == attribute:
            return split_model(d)[0]
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


def at_risk_html(m: Mapping) -> str:
    """Classes at risk, per criterion (in the manifest's order of the models), worst first:
    the criterion, the class's figure, its size, the sensitive attribute and value-share
    buckets (never a value). One class may be at risk under several criteria: one row each."""
    classes = [c for c in m.get("at_risk_classes") or [] if isinstance(c, Mapping)]
    if not classes:
        return ""
    order = [(str(d.get("model")), d.get("attribute")) for d in models_of(m)]
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
            esc(words),
            _figure_cell(name, c.get("figure"), bound),
            fmt_int(c.get("size")),
            esc(c.get("attribute", "")),
            esc(", ".join(f"{b}: {n}" for b, n in (c.get("distribution") or {}).items())),
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
        + table(rows, head)
        + truncated(len(shown), len(ranked), "classes")
    )
