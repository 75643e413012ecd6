"""Sections: the chosen generalisation node and the RAM root (or the per-chunk baseline's
nodes), each QID's level in words."""

from __future__ import annotations

import re
from collections.abc import Mapping

from airflow_skald.core.release.report.facts import MAX_ROWS, is_per_chunk
from airflow_skald.core.release.report.format import table, truncated
from airflow_skald.core.text import esc, fmt_int
from airflow_skald.core.transform import registry as transform_registry


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
        width = f" (bins of width {paper})" if _group(q) == "numerical" and paper else ""
        return "original values" + width
    if top is not None and level == top:
        return "fully generalised (one value: '*' or the whole domain)"
    rule = q.get("rule")
    if isinstance(rule, Mapping) and isinstance(level, int):
        return _rule_level(rule, level)
    if kind == "categorical":
        return f"hierarchy level {level} (paper level {paper})"
    unit = " encoded ranks" if q.get("encode") else ""
    return f"bins of width {paper}{unit}"


def _rule_level(rule: Mapping, level: int) -> str:
    """What level `level` (0 < level < top) of a rule-built hierarchy (docs/design.md §3a) holds."""
    kind = rule.get("type")
    if kind == "date":
        unit = (rule.get("levels") or [])[level : level + 1]
        if unit and isinstance(unit[0], Mapping):
            (name, n), *_ = unit[0].items()
            return f"dates in spans of {n} {name}"
        return f"dates to the {unit[0]}" if unit else f"date level {level}"
    if kind == "masked":
        steps = rule.get("steps") or []
        n = steps[level - 1] if len(steps) >= level else level
        side = "last" if rule.get("from", "right") == "right" else "first"
        return f"the {side} {n} character{'s' if n != 1 else ''} masked ('*')"
    if kind == "intervals":
        if level == 1:
            return "the rule's intervals (cut points " + ", ".join(rule.get("bins") or []) + ")"
        groups = (rule.get("group") or [])[: level - 1]
        return "the rule's intervals merged in runs of " + " then ".join(str(g) for g in groups)
    return f"hierarchy level {level}"


def _group(q: Mapping) -> str:
    """The paper notation's group of a QID: hierarchies (categorical, every rule-built one)
    first, then numerical bin widths."""
    return "categorical" if q.get("type") == "categorical" or q.get("rule") else "numerical"


def node_in_words(manifest: dict, levels: dict, node_paper: str) -> list[dict]:
    """One row per QID: level (0-based), paper level/width, and what the level means."""
    qids = manifest.get("quasi_identifiers") or [{"name": n, "type": "?"} for n in levels]
    tops = manifest.get("top_node") or {}
    paper_of = dict(zip(("categorical", "numerical"), _paper_parts(node_paper), strict=True))
    rows = []
    for q in qids:
        name, kind = q["name"], q.get("type", "?")
        level, top = levels.get(name), tops.get(name)
        widths = paper_of.get(_group(q))
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


def _node_table(manifest: Mapping, levels: dict, node_paper: str) -> str:
    rows = [
        [
            esc(r["name"]),
            esc(r["type"]),
            esc(r["level"]) + (f" / {esc(r['top'])}" if r["top"] is not None else ""),
            esc(r["paper"]),
            esc(r["meaning"]),
        ]
        for r in node_in_words(dict(manifest), levels, node_paper)
    ]
    return table(rows, ["QID", "type", "level / top", "paper", "meaning"])


def _chosen_node(m: Mapping) -> str:
    """The global run's node, in paper notation and per QID."""
    return (
        "<h2>Chosen generalisation node</h2>"
        f"<p>Paper notation <code>{esc(m.get('node_paper'))}</code> "
        "(categorical levels counted from 1, then numerical bin widths).</p>"
        + _node_table(m, m.get("node") or {}, m.get("node_paper", ""))
    )


def ram_root_html(m: Mapping) -> str:
    """The RAM root node: the finest node whose histogram fits the memory bound."""
    how = (
        " (derived from the chunk size, paper eq. 3)"
        if m.get("histogram_bins_derived")
        else " (configured)"
    )
    floor = transform_registry.lattice_floor(m)
    if floor is not None:  # a search from no measured root (its transformation's words)
        return f"<h2>Lattice floor</h2><p>{floor}</p>" + _node_table(
            m, m.get("root_node") or {}, ""
        )
    if m.get("root_mode") == "adaptive":  # N_RAM bounds the non-empty bins (docs/design.md §4a)
        criteria = [x for x in m.get("privacy_models") or [] if x.get("attribute")]
        what = "non-empty (class, value) pairs" if criteria else "non-empty bins"
        fits = (
            f"{fmt_int(m.get('root_bins_nonempty'))} {what} (at or below the paper's "
            f"root <code>{esc(m.get('paper_root_node_paper'))}</code>)"
        )
    else:
        fits = f"{fmt_int(m.get('root_bins'))} possible bins"
    return (
        "<h2>RAM root node</h2>"
        f"<p>The finest node whose histogram fits the memory bound: "
        f"<code>{esc(m.get('root_node_paper'))}</code>, {fits} "
        f"for N<sub>RAM</sub> = {fmt_int(m.get('histogram_bins'))}{how}. "
        "The optimal node is searched above it.</p>"
        + _node_table(m, m.get("root_node") or {}, m.get("root_node_paper", ""))
    )


def _chunk_nodes(m: Mapping) -> str:
    """The per-chunk baseline: which nodes the chunks chose, and the levels over all chunks."""
    rows = [[esc(d["node_paper"]), fmt_int(d["chunks"])] for d in m.get("chunk_nodes") or []]
    return (
        "<h2>Nodes chosen chunk by chunk</h2>"
        "<p>Each chunk was anonymised alone with its own optimal node (no RAM bound, the "
        "full lattice above the all-zeros node), as a memory-bound ARX user would. The "
        "figures above are those of the union of the released chunks.</p>"
        + table(rows, ["node (paper notation)", "chunks"])
        + "<h3>Levels per QID (over all chunks)</h3>"
        + _node_table(m, m.get("node") or {}, "")
    )


def _chunk_table(m: Mapping) -> str:
    """The per-chunk baseline: each chunk's node and own figures (the first MAX_ROWS)."""
    chunks = m.get("per_chunk") or []
    shown = chunks[:MAX_ROWS]
    keys = ("n_records", "node_paper", "dm_star", "n_suppressed", "n_equivalence_classes")
    rows = [
        [fmt_int(c.get("chunk_id"))]
        + [fmt_int(c.get(key)) for key in keys]
        + [fmt_int(c.get("min_class_size"))]
        for c in shown
    ]
    head = ["chunk", "records", "node", "own DM*", "suppressed", "classes", "min class"]
    return table(rows, head) + truncated(len(shown), len(chunks), "chunks")


def nodes_html(m: Mapping) -> str:
    if is_per_chunk(m):
        return _chunk_nodes(m) + _chunk_table(m)
    return _chosen_node(m) + ram_root_html(m)
