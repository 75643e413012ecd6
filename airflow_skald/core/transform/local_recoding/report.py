"""Section: local recoding (docs/design.md §4f): the figures before and after the steps, each step's node
and records, and a chart of the records kept (released) after the global node and each step.
From the manifest alone; the report's frame renders it (`core.release.report.format.section_html`,
the registry's `report_section`)."""

from __future__ import annotations

from collections.abc import Mapping

from airflow_skald.core.text import esc, fmt_int, fmt_num
from airflow_skald.core.transform.base import BeyondNode, ReportChart, ReportSection, ReportTable

_FIGURES = (
    ("n_suppressed", "suppressed records"),
    ("n_equivalence_classes", "released classes"),
    ("min_class_size", "smallest released class"),
    ("dm_star", "DM* (kept |E|² + s²)"),
    ("dm", "DM (kept |E|² + N · s)"),
    ("loss", "Loss (ARX's, 0 = no loss)"),
)


def recoding_section(m: Mapping) -> ReportSection | None:
    """The local recoding section, or none when the run did not recode locally."""
    lr = m.get("local_recoding")
    if not isinstance(lr, Mapping):
        return None
    before, after = lr.get("before") or {}, lr.get("after") or {}
    steps = lr.get("steps") or []
    settings = lr.get("settings") or {}
    shown = {"loss": fmt_num}
    figures = [
        [
            esc(label),
            shown.get(key, fmt_int)(before.get(key)),
            shown.get(key, fmt_int)(after.get(key)),
        ]
        for key, label in _FIGURES
        if key in before or key in after
    ]
    rows = [_step_row(i, s) for i, s in enumerate(steps, start=1)]
    gs = settings.get("gs_factor")
    intro = (
        '<p class="muted">The records the global node suppresses are anonymised again, on '
        f"their own, at a node of their own ({_how(settings)}"
        + (f", gs factor {esc(gs)}" if gs is not None else "")
        + ". A record released at the top node is all '*' and counted as suppressed.</p>"
    )
    listed: str | ReportTable = (
        ReportTable(rows, ["step", "node", "records searched", "released", "classes", "score"])
        if rows
        else "<p>No step released records.</p>"
    )
    chart = [_steps_chart(steps, m.get("n_records"), before)] if steps else []
    return ReportSection(
        "Local recoding",
        figures,
        ["figure", "global node only", "after local recoding"],
        [listed, *chart],
        [intro],
    )


def _step_row(i: int, s: Mapping) -> list[str]:
    """Step `i`'s row: its node, records searched and released, classes and score."""
    node = s.get("node") or {}
    return [
        str(i),
        esc(", ".join(f"{q}={lv}" for q, lv in node.items())),
        fmt_int(s.get("records")),
        fmt_int(s.get("released")) + (" (all '*')" if s.get("at_top") else ""),
        fmt_int(s.get("n_equivalence_classes")),
        f"{esc(s.get('objective'))} {fmt_num(s.get('score'))}",
    ]


def _steps_chart(steps: list, n: object, before: Mapping) -> ReportChart:
    """The records each step gives back, after the global node's."""
    first = n - before.get("n_suppressed", 0) if isinstance(n, int) else None
    return ReportChart(
        [f"step {i}" for i in range(1, len(steps) + 1)],
        [0 if s.get("at_top") else int(s.get("released") or 0) for s in steps],
        title=f"Records each step gives back (the global node released {fmt_int(first)})",
        value_label="records released",
        category_label="local recoding step",
        color="#2e8b57",
    )


def _how(settings: Mapping) -> str:
    """How the steps were searched (ARX's two local recodings)."""
    if settings.get("mode") == "adaptive":
        return (
            "ARX's optimizeIterative): each step under the run's suppression limit, its gs "
            f"factor raised by {esc(settings.get('adaption_factor'))} after a search that "
            "released nothing"
        )
    return (
        "ARX's optimizeIterativeFast): each step must release at least records = "
        f"{esc(settings.get('records'))} of all records"
    )


def beyond_node(m: Mapping) -> BeyondNode | None:
    """The steps as the report's quality section and warnings show them: the release's own
    scores (those its manifest holds after the steps), the steps' nodes that released records,
    and the words saying the global node's figures are the global node's."""
    lr = m.get("local_recoding")
    if not isinstance(lr, Mapping):
        return None
    after = lr.get("after")
    scores = {}
    if isinstance(after, Mapping):
        scores = {key: after[key] for key in ("dm_star", "dm", "loss") if key in after}
        if "dm_star_arx" in m:
            scores["dm_star_arx"] = m["dm_star_arx"]
    steps = lr.get("steps") or []
    nodes = [s["node"] for s in steps if isinstance(s, Mapping) and s.get("released")]
    return BeyondNode(
        scores=scores,
        ran=bool(steps),
        nodes=[n for n in nodes if isinstance(n, Mapping)],
        note=(
            '<p class="muted">Local recoding: DM*, DM and Loss score the release as written '
            "(every step's classes); the models marked score the global node alone.</p>"
        ),
        at_node="{name} at the global node (level {level}), before local recoding",
    )
