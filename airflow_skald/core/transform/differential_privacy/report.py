"""Section: (ε, δ)-differential privacy (docs/design.md §4e): the parameters, the sample, the node, the
composition of releases of the same data, who checked the sample, and what the guarantee
covers and does not (ADR 0027), in words a privacy officer signs. From the manifest alone; the report's frame renders it
(`core.release.report.format.section_html`)."""

from __future__ import annotations

from collections.abc import Mapping

from airflow_skald.core.text import esc, fmt_num
from airflow_skald.core.transform.base import ReportSection

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


#: what the guarantee covers: SafePub's output as ARX defines it
COVERS = (
    "What the guarantee covers. The released rows and the choice of the node together are "
    "(ε, δ)-differentially private with respect to adding or removing any one person's record "
    "of the input (SafePub: Bild, Kuhn and Prasser, PETS 2018; ARX 3.9's EDDifferentialPrivacy): "
    "whether or not a person's record was in the input changes the probability of any release "
    "by at most a factor e^ε, except with probability at most δ. The rows are the records a "
    "keyed random sample kept (each with probability β), generalised to the node by the "
    "configured hierarchies and rules only, and only in classes of at least k sampled records; "
    "every other record is suppressed. Every released column is generalised with its record: "
    "no column is released as it is. The figures of this report and its manifest that describe "
    "the release (its classes, labels, records released and sampled, quality and risk) are "
    "computed from the release itself."
)
#: what it does not cover
NOT_COVERED = (
    "What it does not cover. (1) The number of input records (and so the records counted as "
    "suppressed: input records less released ones), the input files' row counts and "
    "fingerprint, given for provenance: exact facts of the input, outside the guarantee. "
    "(2) Other releases: each release of the same people spends its own ε and δ, and they add "
    "up. (3) The secret: whoever holds it, with the input, can tell which records were "
    "sampled; the guarantee holds only while it is kept secret and used for this run alone. "
    "(4) Facts true of a group: the release may still show what is common among people like "
    "a person, whether or not that person's record was in it. (5) With probability up to δ "
    "the bound may fail outright. Statistics of the whole input (the utility analysis's "
    "figures of the input, distributions before generalisation, models trained on original "
    "records) are left out of this report and its manifest for that reason."
)


def _value(v: object) -> str:
    """Floats in full (β to its last bit, as the manifest), counts with separators."""
    return esc(repr(v)) if isinstance(v, float) else fmt_num(v)


def differential_privacy_section(m: Mapping) -> ReportSection | None:
    dp = m.get("differential_privacy")
    if not isinstance(dp, Mapping):
        return None
    rows = [[esc(label), _value(dp[key])] for key, label in _ROWS if key in dp]
    node = dp.get("node") or {}
    how = "fixed (data-independent)" if dp.get("mode") == "fixed" else "SafePub's search"
    rows.append(
        ["node", esc(", ".join(f"{q} = {lv}" for q, lv in node.items())) + f" ({esc(how)})"]
    )
    if dp.get("objective_chosen"):
        rows.append(["score function chosen", esc(dp["objective_chosen"])])
    check = dp.get("sample_check") or {}
    checked = (
        f"<p>Sample checked by {esc(check.get('checked_by'))} over {fmt_num(check.get('rows'))} "
        f"released rows: {esc(check.get('checked'))}.</p>"
        if check
        else ""
    )
    paragraphs = (f"<p>{esc(dp.get('composition', ''))}</p>", checked)
    return ReportSection(
        "Differential privacy",
        rows,
        ["", ""],
        (*paragraphs, f"<p>{esc(COVERS)}</p><p>{esc(NOT_COVERED)}</p>"),
    )


def lattice_floor(m: Mapping) -> str | None:
    """Under differential privacy the search starts at level 0 of every QID (the lattice the
    hierarchies define): the report's lattice floor says so instead of a measured root."""
    if not isinstance(m.get("differential_privacy"), Mapping):
        return None
    return (
        "Differential privacy: the search starts at level 0 of every QID, the lattice the "
        "hierarchies define, never a root measured on the data (ADR 0027)."
    )
