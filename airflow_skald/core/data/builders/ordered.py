"""Ordered-group hierarchies of categorical QIDs (docs/design.md §3a `order`, ARX's order builder).

`order` lists every category in its natural order; `group: [g1, g2, ...]` merges runs of g_j
adjacent groups of the previous level; a run is labelled `first-last` by its first and last
category in `order` (a run of one category by that category), or by `labels` given per level.
The hierarchy has one row per category seen in the data.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from airflow_skald.core.data.builders.levels import hierarchy_from_levels, rule_error
from airflow_skald.core.data.hierarchies import Hierarchy
from airflow_skald.core.errors import ConfigError


@dataclass(frozen=True)
class OrderedRule:
    """Validated order, groups and optional labels of a categorical QID."""

    order: tuple[str, ...]
    group: tuple[int, ...]
    labels: tuple[tuple[str, ...], ...] | None = None
    kind: str = "ordered"

    def describe(self) -> dict[str, Any]:
        return {
            "type": "ordered",
            "categories": len(self.order),  # counts only: categories may be personal data
            "group": list(self.group),
            "labels": self.labels is not None,
        }

    def runs(self, level: int) -> int:
        """Runs of categories at `level` (1-based)."""
        size = 1
        for g in self.group[:level]:
            size *= g
        return -(-len(self.order) // size)

    def chain(self, position: int) -> list[str]:
        """Labels of the category at `position` in `order`, level 1 up."""
        out, size = [], 1
        for j, g in enumerate(self.group):
            size *= g
            run = position // size
            if self.labels is not None:
                out.append(self.labels[j][run])
            else:
                first, last = run * size, min((run + 1) * size, len(self.order)) - 1
                out.append(
                    self.order[first]
                    if first == last
                    else f"{self.order[first]}-{self.order[last]}"
                )
        return out


def _text(name: str, value: Any, key: str) -> str:
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ConfigError(rule_error(name, key, "entries must be text or numbers"))
    text = str(value).strip()
    if not text:
        raise ConfigError(rule_error(name, key, "entries must not be empty"))
    return text


def parse_ordered_rule(name: str, item: dict) -> OrderedRule:
    """`order` distinct categories, `group` whole numbers >= 2, `labels` one list per level
    with one label per run."""
    order = item.get("order")
    if not isinstance(order, list) or not order:
        raise ConfigError(rule_error(name, "order", "must be a non-empty list of categories"))
    order = tuple(_text(name, v, "order") for v in order)
    if len(set(order)) != len(order):
        raise ConfigError(rule_error(name, "order", "lists a category twice"))
    group = item.get("group")
    if (
        not isinstance(group, list)
        or not group
        or not all(isinstance(g, int) and not isinstance(g, bool) and g >= 2 for g in group)
    ):
        raise ConfigError(rule_error(name, "group", "must be a list of whole numbers >= 2"))
    rule = OrderedRule(order, tuple(group))
    labels = item.get("labels")
    if labels is not None:
        if not isinstance(labels, list) or len(labels) != len(group):
            raise ConfigError(rule_error(name, "labels", "needs one list per group level"))
        out = []
        for j, level in enumerate(labels):
            if not isinstance(level, list) or len(level) != rule.runs(j + 1):
                raise ConfigError(
                    rule_error(name, "labels", f"level {j + 1} needs {rule.runs(j + 1)} labels")
                )
            out.append(tuple(_text(name, v, "labels") for v in level))
        for j in range(1, len(out)):  # one parent per label: equal labels, equal parents
            parents: dict[str, str] = {}
            size = rule.group[j]
            for run, label in enumerate(out[j - 1]):
                if parents.setdefault(label, out[j][run // size]) != out[j][run // size]:
                    raise ConfigError(
                        rule_error(name, "labels", f"level {j} label has two parents")
                    )
        rule = OrderedRule(order, tuple(group), tuple(out))
    return rule


def build_ordered(name: str, rule: OrderedRule, values: Sequence[str]) -> Hierarchy:
    """The hierarchy over the categories seen (`values`, each in `order`), in `order`'s order."""
    position = {v: i for i, v in enumerate(rule.order)}
    seen = sorted(values, key=position.__getitem__)
    chains = [rule.chain(position[v]) for v in seen]
    levels = [[c[j] for c in chains] for j in range(len(rule.group))]
    return hierarchy_from_levels(name, seen, levels)
