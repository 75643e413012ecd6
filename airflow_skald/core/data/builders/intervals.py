"""Interval hierarchies of numerical QIDs (docs/design.md §3a `bins`, ARX's interval builder).

Level 0 stays the value quantised by `min_width` (docs/design.md §3); `bins` (strictly increasing cut
points) make level 1 of half-open intervals `[a-b)`, with `below` / `above` labels for values
outside the outer cuts (else such a value is an error); `group: [g1, g2, ...]` merges runs of
g_j adjacent intervals of the previous level (the below / above bins are never merged). The
hierarchy is built over the distinct level-0 bins of the data's domain.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from airflow_skald.core.data.builders.levels import hierarchy_from_levels, rule_error
from airflow_skald.core.data.hierarchies import Hierarchy
from airflow_skald.core.errors import ConfigError, DataError
from airflow_skald.core.text import decimal_text


@dataclass(frozen=True)
class IntervalRule:
    """Validated cut points and groups of a numerical QID."""

    bins: tuple[Fraction, ...]
    group: tuple[int, ...] = ()
    below: str | None = None
    above: str | None = None
    kind: str = "intervals"

    def describe(self) -> dict[str, Any]:
        return {
            "type": "intervals",
            "bins": [decimal_text(b) for b in self.bins],
            "group": list(self.group),
            "below": self.below,
            "above": self.above,
        }


def _number(name: str, value: Any) -> Fraction:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ConfigError(rule_error(name, "bins", f"{value!r} is not a number"))
    try:
        return Fraction(str(value).strip())
    except (ValueError, ZeroDivisionError):
        raise ConfigError(rule_error(name, "bins", f"{value!r} is not a number")) from None


def parse_interval_rule(name: str, item: dict, min_width: Fraction) -> IntervalRule:
    """Cuts strictly increasing, each a whole number of `min_width` units from the first;
    groups whole numbers >= 2; labels non-empty text; `min_width` given explicitly."""
    if "min_width" not in item:
        raise ConfigError(rule_error(name, "bins", "needs min_width"))
    for key in ("widths", "encode"):
        if item.get(key) not in (None, False):
            raise ConfigError(rule_error(name, "bins", f"cannot be combined with {key}"))
    raw = item["bins"]
    if not isinstance(raw, list) or len(raw) < 2:
        raise ConfigError(rule_error(name, "bins", "must list at least two cut points"))
    cuts = tuple(_number(name, v) for v in raw)
    for a, b in zip(cuts, cuts[1:], strict=False):
        if b <= a:
            raise ConfigError(
                rule_error(
                    name,
                    "bins",
                    f"cuts must strictly increase ({decimal_text(b)} after {decimal_text(a)})",
                )
            )
    for c in cuts[1:]:
        if ((c - cuts[0]) / min_width).denominator != 1:
            raise ConfigError(
                rule_error(
                    name,
                    "bins",
                    f"cut {decimal_text(c)} is not a whole number of min_width "
                    f"{decimal_text(min_width)} units from {decimal_text(cuts[0])}",
                )
            )
    group = item.get("group") or []
    if not isinstance(group, list) or not all(
        isinstance(g, int) and not isinstance(g, bool) and g >= 2 for g in group
    ):
        raise ConfigError(rule_error(name, "group", "must be a list of whole numbers >= 2"))
    labels = {}
    for key in ("below", "above"):
        value = item.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ConfigError(rule_error(name, key, "must be a non-empty label"))
        labels[key] = value
    return IntervalRule(cuts, tuple(group), labels["below"], labels["above"])


def cut_text(x: Fraction, decimals: int) -> str:
    """A cut as interval labels print it: integers plainly, decimals with as many decimals as
    `min_width`."""
    if x.denominator == 1 and decimals == 0:
        return str(x.numerator)
    return f"{float(x):.{decimals}f}"


def decimals_of(x: Fraction) -> int:
    d = 0
    while (x * 10**d).denominator != 1 and d < 10:
        d += 1
    return d


def interval_levels(rule: IntervalRule, decimals: int, low: Fraction) -> list[str] | None:
    """The labels of the level-0 bin starting at `low`, level 1 up (None: outside the cuts
    with no label for it)."""
    cuts = rule.bins
    if low < cuts[0]:
        return None if rule.below is None else [rule.below] * (len(rule.group) + 1)
    if low >= cuts[-1]:
        return None if rule.above is None else [rule.above] * (len(rule.group) + 1)
    i = bisect.bisect_right(cuts, low) - 1
    out, size = [], 1
    for g in (1, *rule.group):
        size *= g
        start = (i // size) * size
        end = min(start + size, len(cuts) - 1)
        out.append(f"[{cut_text(cuts[start], decimals)}-{cut_text(cuts[end], decimals)})")
    return out


def build_intervals(
    name: str,
    rule: IntervalRule,
    min_width: Fraction,
    values: Sequence[str],
    lows: Sequence[Fraction],
) -> Hierarchy:
    """The hierarchy over the distinct level-0 bins (`values` their labels, `lows` their lower
    bounds). The level-0 grid must be aligned with the cuts, or a level-0 bin would straddle one."""
    if lows and ((lows[0] - rule.bins[0]) / min_width).denominator != 1:
        raise DataError(
            rule_error(
                name,
                "bins",
                "the data's minimum is not a whole number of min_width units from the first "
                "cut, so level-0 bins would straddle cuts",
            )
        )
    decimals = 0
    if any(c.denominator != 1 for c in rule.bins):
        decimals = max(decimals_of(min_width), *(decimals_of(c) for c in rule.bins))
    rows = []
    for low in lows:
        labels = interval_levels(rule, decimals, low)
        if labels is None:
            side = "below the first cut" if low < rule.bins[0] else "at or above the last cut"
            key = "below" if low < rule.bins[0] else "above"
            raise DataError(
                rule_error(name, "bins", f"values lie {side} and no '{key}' label is given")
            )
        rows.append(labels)
    levels = [[r[j] for r in rows] for j in range(len(rule.group) + 1)]
    return hierarchy_from_levels(name, list(values), levels)
