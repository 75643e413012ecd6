"""Sections: suppression and the kept records' risk, and the re-identification risk analysis."""

from __future__ import annotations

from collections.abc import Mapping

from airflow_skald.core.release.report.format import chart_figure, table
from airflow_skald.core.text import esc, fmt_int, fmt_num
from airflow_skald.core.transform import registry as transform_registry

#: the records the risk figures are computed over (the manifest's `risk` section)
KEPT = "kept (not suppressed) records"


def risk_html(m: Mapping) -> str:
    """Suppression, then the re-identification risk of the kept classes (suppressed records,
    masked or dropped, are in no class the figures count)."""
    risk = m.get("risk") or {}
    k = m.get("k")
    share = risk.get("share_below_2k")
    two_k = fmt_int(2 * k) if isinstance(k, int) and not isinstance(k, bool) else "?"
    rows = [
        *transform_registry.risk_rows(m),  # suppression's: suppressed, allowed, how
        [
            f"prosecutor risk of the {KEPT}, max (1 / smallest kept class)",
            fmt_num(risk.get("prosecutor_risk_max")),
        ],
        [
            f"prosecutor risk of the {KEPT}, average (kept classes / kept records)",
            fmt_num(risk.get("prosecutor_risk_avg")),
        ],
        [
            f"share of the {KEPT} in classes smaller than 2k = {two_k}",
            f"{100 * share:.3g} %" if isinstance(share, float | int) else "n/a",
        ],
    ]
    return (
        "<h2>Suppression and re-identification risk</h2>"
        + table(rows, ["figure", "value"])
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


def risk_analysis_html(m: Mapping, plots: Mapping[str, str]) -> str:
    """The risk analysis of the released records (docs/design.md §4c, as ARX's risk perspective)."""
    a = m.get("risk_analysis")
    if not isinstance(a, Mapping):
        return ""
    pros = a.get("prosecutor") or {}
    pop = a.get("population_uniques") or {}
    where = (
        f"population {fmt_int(a['population'])}"
        if "population" in a
        else f"sampling fraction {esc(a.get('sampling_fraction', '1'))}"
    )
    rows = [
        ["records analysed (not all '*')", fmt_int(a.get("records"))],
        ["equivalence classes", fmt_int(a.get("classes"))],
        [
            f"prosecutor: records at risk (risk above {esc(a.get('threshold'))})",
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
            f"population uniques, Dankar's rule (picks {esc(a.get('dankar_model'))})",
            _share(pop.get("dankar")),
        ],
    ]
    return (
        "<h2>Re-identification risk analysis</h2>"
        + table(rows, ["figure", "value"])
        + f'<p class="muted">Population: {where}. Estimates as ARX computes them; '
        "&quot;unavailable&quot;: the estimator did not converge.</p>"
        + (chart_figure(plots["risk"]) if "risk" in plots else "")
    )
