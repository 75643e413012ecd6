"""t-closeness (Li, Li and Venkatasubramanian 2007; docs/design.md §4b, ARX's
``EqualDistanceTCloseness`` / ``OrderedDistanceTCloseness`` / ``HierarchicalDistanceTCloseness``):
the distribution of the sensitive attribute in every kept class is within t of its distribution over
all input records. Not monotone with suppression."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import numpy as np

from airflow_skald.core.data.hierarchies import Hierarchy, hierarchy_of
from airflow_skald.core.errors import ConfigError, VerificationError
from airflow_skald.core.privacy import distributions as S
from airflow_skald.core.privacy import value_order
from airflow_skald.core.privacy.at_risk import AtRiskClass
from airflow_skald.core.privacy.l_diversity import at_risk_classes
from airflow_skald.core.privacy.model import (
    ClassTable,
    ParseContext,
    PrivacyModel,
    RebuildContext,
    decimal_of,
    is_column,
)
from airflow_skald.core.settings.parse import (
    choice,
    criteria_list,
    no_repeats,
    no_unknown,
)
from airflow_skald.core.settings.table import BY_NAME
from airflow_skald.core.text import decimal_text

DISTANCES = ("equal", "ordered", "hierarchical")
NULL_LABEL = "NULL"  # how a null is looked up in a t-closeness hierarchy (docs/design.md §4b)


@dataclass(frozen=True)
class TCloseness(PrivacyModel):
    attribute: str = field()  # field(): not the base class's None default
    t: Fraction
    distance: str  # equal | ordered | hierarchical
    # bound from phase 1 (`bind`): the distribution over all input records
    global_counts: np.ndarray | None = field(default=None, compare=False, repr=False)
    hierarchy: S.EmdHierarchy | None = field(default=None, compare=False, repr=False)
    hierarchy_sha256: str | None = None  # the configured hierarchy's hash (hierarchical only)
    source: Hierarchy | None = field(default=None, compare=False, repr=False)  # as configured
    # ordered distance: numbers, text (ARX's STRING) or the values listed (`value_order`)
    order: str | tuple[str, ...] = "numbers"
    rank: np.ndarray | None = field(default=None, compare=False, repr=False)  # code -> place
    # with a research subset the ordered walk covers the population's values (ARX's
    # dictionary), those of no subset record too (ADR 0045)
    population_values: bool = False

    name = "t"
    config_key = "t_closeness"
    thresholds = ("t", "t_order")
    manifest_models = ("t-closeness",)
    monotone = False
    needs_overall = True
    with_research_subset = True  # the subset's records of each class, as ARX (ADR 0045)

    @property
    def numeric_attribute(self) -> bool:
        return self.distance == "ordered" and self.order == "numbers"

    @classmethod
    def parse(cls, raw: Any, ctx: ParseContext) -> tuple[PrivacyModel, ...]:
        out = []
        for at, item in criteria_list(raw, "t_closeness", list(ctx.sensitive)):
            keys = {"attribute", "t", "distance", "hierarchy", "hierarchy_file", "order"}
            no_unknown(item, keys, at)
            if "t" not in item:
                raise ConfigError(f"{at} needs 't'")
            distance = choice(item.get("distance", "equal"), DISTANCES, f"{at}.distance")
            t = BY_NAME["t"].parse(item["t"], f"{at}.t")
            source = None
            given = ("hierarchy" in item) + ("hierarchy_file" in item)
            if distance == "hierarchical":
                if given != 1:
                    raise ConfigError(
                        f"{at}: hierarchical distance needs exactly one of 'hierarchy' or "
                        "'hierarchy_file'"
                    )
                source = hierarchy_of(item, item["attribute"], ctx.base_dir)
            elif given:
                raise ConfigError(f"{at}: a hierarchy applies to distance hierarchical only")
            order = _order(item, distance, f"{at}.order")
            digest = source.sha256 if source is not None else None
            whole = ctx.research_subset is not None
            out.append(cls(item["attribute"], t, distance, None, None, digest, source, order))
            out[-1] = replace(out[-1], population_values=whole)
        no_repeats(out, "t_closeness", lambda c: (c.attribute, c.distance))
        return tuple(out)

    def bind(self, sensitive: Mapping[str, Any], where: str) -> PrivacyModel:
        stats = sensitive[self.attribute]
        if self.numeric_attribute and not stats.numeric:
            raise ConfigError(
                f"{where}: distance ordered orders numbers unless 'order' says text or lists "
                f"the values; '{self.attribute}' is text"
            )
        emd = None
        if self.distance == "hierarchical":
            emd = emd_hierarchy(where, self.source, stats)
        order = value_order.rank(stats.values, self.order, self.attribute, where)
        return replace(self, global_counts=stats.global_counts, hierarchy=emd, rank=order)

    def settings_entry(self) -> dict:
        """As configured: the walk over the population's values follows from the subset."""
        return {k: v for k, v in super().settings_entry().items() if k != "values"}

    def with_threshold(self, key: str, value: Any) -> PrivacyModel:
        if key == "t_order":
            return replace(self, order=_order({"order": value}, self.distance, "t_order"))
        return replace(self, **{key: value})

    @classmethod
    def check_entry(cls, entry: dict) -> str | None:
        if not is_column(entry.get("attribute")):
            return ".attribute must be a column name"
        t = decimal_of(entry.get("t"))
        if t is None or not 0 < t <= 1:
            return ".t must be a number in (0, 1]"
        if entry.get("distance") not in DISTANCES:
            return f".distance must be one of {', '.join(DISTANCES)}"
        if entry.get("order", "numbers") not in value_order.ORDERS or (
            "order" in entry and entry["distance"] != "ordered"
        ):
            return ".order must be numbers or text, of distance ordered only"
        return None

    @classmethod
    def rebuild(cls, entry: dict, ctx: RebuildContext) -> PrivacyModel | str:
        attribute, distance = entry["attribute"], entry["distance"]
        why = ctx.without_overall(attribute)
        if why is not None:
            return why
        stats = ctx.sensitive[attribute]
        t = Fraction(str(entry["t"]))
        if "order_sha256" in entry:
            return (
                "not re-checked from the release: its value order is archived in "
                "effective.json only (order_sha256)"
            )
        whole = entry.get("values") == "population"
        if whole and attribute not in ctx.overall:
            return (
                "not re-checked from the release: its ordered distance walks every value of "
                "the population, which a release of the research subset does not hold"
            )
        if distance != "hierarchical":
            order = entry.get("order", "numbers")
            where = f"t-closeness of '{attribute}'"
            ranks = value_order.rank(stats.values, order, attribute, where)
            return cls(
                attribute,
                t,
                distance,
                stats.global_counts,
                order=order,
                rank=ranks,
                population_values=whole,
            )
        digest = entry.get("hierarchy_sha256")
        source = ctx.hierarchies.get(digest) if isinstance(digest, str) else None
        if source is None:
            return (
                "not re-checked from the release: the hierarchy its hierarchy_sha256 names is "
                "not archived with it (effective.json)"
            )
        try:
            emd = emd_hierarchy(f"t-closeness of '{attribute}'", source, stats)
        except ConfigError:
            raise VerificationError(
                f"release column '{attribute}' holds a value its archived t-closeness hierarchy "
                "does not have"
            ) from None
        return cls(attribute, t, distance, stats.global_counts, emd, digest, source)

    def archived(self) -> dict:
        """What the effective config keeps beyond the settings: the hierarchy as a table, a
        listed value order as its list."""
        if isinstance(self.order, tuple):
            return {"order": list(self.order)}
        return {"hierarchy": self.source.table.tolist()} if self.source is not None else {}

    def verdict(self, table: ClassTable) -> S.Verdict:
        cv = table.values[self.attribute]
        if self.distance == "equal":
            return S.t_equal(cv, self.global_counts, self.t)
        if self.distance == "ordered":
            return S.t_ordered(cv, self.global_counts, self.t, self.rank, self.population_values)
        return S.t_hierarchical(cv, self.global_counts, self.t, self.hierarchy)

    def keeps(self, table: ClassTable) -> np.ndarray:
        return self.verdict(table).ok

    def judged(self, table: ClassTable) -> tuple[np.ndarray, float]:
        verdict = self.verdict(table)
        return verdict.ok, suppression_floor(table.sizes, verdict.figure, self.t)

    @functools.cached_property
    def smallest_kept(self) -> int:
        """Equal distance: the fewest records whose distribution can be within t of the whole
        table's (`closest_size`, once per model); the other distances: 1 (not derived)."""
        if self.distance != "equal" or self.global_counts is None:
            return 1
        return closest_size(self.global_counts, self.t)

    def describe(self) -> dict:
        out = {
            "model": "t-closeness",
            "attribute": self.attribute,
            "distance": self.distance,
            "t": decimal_text(self.t),
        } | ({"hierarchy_sha256": self.hierarchy_sha256} if self.hierarchy_sha256 else {})
        if self.population_values and self.distance == "ordered":
            out["values"] = "population"
        if isinstance(self.order, tuple):  # the values: effective.json only (personal data)
            return out | {"order_sha256": value_order.order_sha256(self.order)}
        return out | ({"order": self.order} if self.order != "numbers" else {})

    def figure(self, kept: ClassTable) -> dict:
        if not kept.n_classes:
            return {"max_distance": None}
        return {"max_distance": S.worst_figure("t_closeness", self.verdict(kept).figure)}

    def label(self) -> str:
        return f"{self.distance}-distance t-closeness of '{self.attribute}' (t={self.t})"

    def at_risk(self, kept: ClassTable, top: int = 5) -> list[AtRiskClass]:
        if not kept.n_classes:
            return []
        return at_risk_classes(self, "t_closeness", kept, self.verdict(kept).figure, top)


# closest_size tries sizes 1, 2, ... up to this many, and this many values in all (a tiny t
# would otherwise walk up to N sizes when the search starts)
CLOSEST_SIZE_TRIES, CLOSEST_SIZE_CELLS = 4096, 1 << 22


def suppression_floor(sizes: np.ndarray, distance: np.ndarray, t: Fraction) -> float:
    """A lower bound of the records t-closeness suppresses at a node and at every node below
    it: sum over classes of n * (d - t) / (1 - t) where the distance d exceeds t.

    Every distance here (equal, ordered, hierarchical) is convex in the class's distribution
    and at most 1. A class of n records at distance d > t split into finer classes keeps at
    most the share (1 - d) / (1 - t) of its records in parts within t (d <= w t + (1 - w) 1
    over the parts' share w within t), so at least n (d - t) / (1 - t) of them are suppressed
    at any finer node; and merging classes never raises the sum (Jensen: (d - t)+ is convex
    and increasing). So the bound only grows downwards: where it exceeds the suppression
    limit, this node and every node below fail (the search tags them). Computed with a margin
    below the float distances' error, never above the exact bound."""
    if t >= 1 or distance.size == 0:
        return 0.0
    return S.suppression_floor(sizes, (distance - (float(t) + S.FLOOR_MARGIN)) / float(1 - t))


def closest_size(global_counts: np.ndarray, t: Fraction) -> int:
    """The smallest class size n at which some class can be within t, in equal distance, of
    the distribution `global_counts` (g_v over N records). A class of n records has counts c
    with sum n; its distance sum_v |c_v N - g_v n| / (2 N n) is smallest when each c_v is
    n g_v / N rounded down or up, the r = n - sum floor(n g_v / N) values with the largest
    remainders rounded up (the terms are convex and separable). Exact integers and `t` as a
    fraction; at most N (a class of all N records is at distance 0). Sizes are tried up to a
    work limit (CLOSEST_SIZE_*); when none up to it is close enough, the limit is returned:
    still a size below which no class is kept, only a weaker one."""
    g = np.asarray(global_counts, dtype=np.int64)
    g = g[g > 0]
    big_n = int(g.sum())
    t = Fraction(t)
    last = min(big_n, CLOSEST_SIZE_TRIES, max(1, CLOSEST_SIZE_CELLS // max(g.size, 1)))
    for n in range(1, last + 1):
        q, rem = np.divmod(g * n, big_n)
        r = n - int(q.sum())
        order = np.sort(rem)[::-1]
        cost = int(order[r:].sum()) + r * big_n - int(order[:r].sum())
        if cost * t.denominator <= t.numerator * 2 * big_n * n:
            return n
    return last


def _order(item: Mapping[str, Any], distance: str, where: str) -> str | tuple[str, ...]:
    """An entry's `order` (the settings table's `t_order`), of ordered distance only."""
    if "order" not in item:
        return "numbers"
    if distance != "ordered":
        raise ConfigError(f"{where}: an order applies to distance ordered only")
    return value_order.as_order(BY_NAME["t_order"].parse(item["order"], where), where)


def emd_hierarchy(where: str, hierarchy: Hierarchy, stats: Any) -> S.EmdHierarchy:
    """The hierarchy as integer ids per level for each value code (leaves: observed values)."""
    table = hierarchy.table
    row_of = {str(v): r for r, v in enumerate(table[:, 0])}
    rows = []
    for v in stats.values:
        label = NULL_LABEL if v is None else _label(v)
        if label not in row_of:
            raise ConfigError(
                f"{where}: the hierarchy of '{stats.name}' has no row for a value of the input "
                f"(value #{len(rows) + 1} in sorted order)"
            )
        rows.append(row_of[label])
    sub = table[np.asarray(rows, dtype=np.int64)]
    levels = np.zeros(sub.shape, dtype=np.int64)
    for level in range(sub.shape[1]):
        _, levels[:, level] = np.unique(sub[:, level].astype(str), return_inverse=True)
    return S.EmdHierarchy(levels)


def _label(v: object) -> str:
    """A value as hierarchies write it (an integral float as an integer: 3.0 -> "3")."""
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    return str(v)
