"""Section: (ε, δ)-differential privacy (docs/design.md §4e): the parameters, the sample, the node and
the composition of releases of the same data."""

from __future__ import annotations

from collections.abc import Mapping

from airflow_skald.core.release.report.format import esc, fmt_num, table

_ROWS = (
    ("epsilon", "ε (privacy budget of this release)"),
    ("delta", "δ"),
    ("search_budget", "search budget (part of ε choosing the node)"),
    ("search_steps", "search steps (pivot draws)"),
    ("epsilon_per_step", "ε per draw"),
    ("epsilon_anonymisation", "ε of the sample and k"),
    ("k", "k (smallest released class)"),
    ("beta", "β (sampling probability)"),
    ("objective", "score function"),
    ("records_input", "input records"),
    ("records_sampled", "records sampled"),
    ("records_released", "records released"),
    ("records_suppressed", "records suppressed (left out of the sample included)"),
)


def _value(v: object) -> str:
    """Floats in full (β to its last bit, as the manifest), counts with separators."""
    return esc(repr(v)) if isinstance(v, float) else fmt_num(v)


def differential_privacy_html(m: Mapping) -> str:
    dp = m.get("differential_privacy")
    if not isinstance(dp, Mapping):
        return ""
    rows = [[esc(label), _value(dp[key])] for key, label in _ROWS if key in dp]
    node = dp.get("node") or {}
    how = "fixed (data-independent)" if dp.get("mode") == "fixed" else "SafePub's search"
    rows.append(
        ["node", esc(", ".join(f"{q} = {lv}" for q, lv in node.items())) + f" ({esc(how)})"]
    )
    return (
        "<h2>Differential privacy</h2>"
        + table(rows, ["", ""])
        + f"<p>{esc(dp.get('composition', ''))}</p>"
    )
