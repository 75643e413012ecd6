"""δ-disclosure privacy (Brickell and Shmatikov 2008; docs/design.md §4c, ARX's
``DDisclosurePrivacy``): in every kept class, each value v present has |log2((c_v/n) / p_v)| <
delta, p_v its share over all input records. Class-based; not monotone."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import numpy as np

from airflow_skald.core.errors import ConfigError
from airflow_skald.core.privacy.attribute_disclosure import classes_passing, row_terms
from airflow_skald.core.privacy.model import (
    ClassTable,
    ParseContext,
    PrivacyModel,
    RebuildContext,
    decimal_of,
    is_column,
)
from airflow_skald.core.settings.parse import criteria_list, no_repeats, no_unknown
from airflow_skald.core.settings.table import BY_NAME
from airflow_skald.core.text import decimal_text


@dataclass(frozen=True)
class DDisclosure(PrivacyModel):
    attribute: str = field()
    delta: Fraction
    global_counts: np.ndarray | None = field(default=None, compare=False, repr=False)

    name = "d_disclosure"
    config_key = "d_disclosure"
    thresholds = ("d_disclosure",)
    manifest_models = ("d-disclosure",)
    monotone = False
    needs_overall = True

    @classmethod
    def parse(cls, raw: Any, ctx: ParseContext) -> tuple[PrivacyModel, ...]:
        out = []
        for at, item in criteria_list(raw, "d_disclosure", list(ctx.sensitive)):
            no_unknown(item, {"attribute", "delta"}, at)
            if "delta" not in item:
                raise ConfigError(f"{at} needs 'delta'")
            out.append(
                cls(item["attribute"], BY_NAME["d_disclosure"].parse(item["delta"], f"{at}.delta"))
            )
        no_repeats(out, "d_disclosure", lambda c: c.attribute)
        return tuple(out)

    def with_threshold(self, key: str, value: Any) -> PrivacyModel:
        return replace(self, delta=value)

    def bind(self, sensitive: Mapping[str, Any], where: str) -> PrivacyModel:
        return replace(self, global_counts=sensitive[self.attribute].global_counts)

    def logs(self, table: ClassTable) -> tuple[np.ndarray, tuple]:
        cv = table.values[self.attribute]
        c, n, g, total = row_terms(cv, self.global_counts)
        with np.errstate(divide="ignore"):
            x = np.abs(np.log2(c * float(total)) - np.log2(n * g.astype(np.float64)))
        return x, (cv, c, n, g, total)

    def keeps(self, table: ClassTable) -> np.ndarray:
        x, (cv, c, n, g, total) = self.logs(table)
        d = self.delta

        def exact(i: int) -> bool:
            # |log2(a/b)| < p/q  <=>  a^q < 2^p b^q and b^q < 2^p a^q
            a, b = int(c[i]) * total, int(n[i]) * int(g[i])
            p, q = d.numerator, d.denominator
            return a**q < (b**q << p) and b**q < (a**q << p)

        return classes_passing(cv, x, np.full(x.shape, float(d)), exact, strict=True)

    def describe(self) -> dict:
        return {
            "model": "d-disclosure",
            "attribute": self.attribute,
            "delta": decimal_text(self.delta),
        }

    def figure(self, kept: ClassTable) -> dict:
        if not kept.n_classes:
            return {"max_d": 0.0}
        x, _ = self.logs(kept)
        return {"max_d": float(np.max(x)) if x.size else 0.0}

    @classmethod
    def check_entry(cls, entry: dict) -> str | None:
        if not is_column(entry.get("attribute")):
            return ".attribute must be a column name"
        d = decimal_of(entry.get("delta"))
        return None if d is not None and d > 0 else ".delta must be a number > 0"

    @classmethod
    def rebuild(cls, entry: dict, ctx: RebuildContext) -> PrivacyModel | str:
        why = ctx.without_overall(entry["attribute"])
        if why is not None:
            return why
        stats = ctx.sensitive[entry["attribute"]]
        return cls(entry["attribute"], Fraction(str(entry["delta"])), stats.global_counts)

    def label(self) -> str:
        return f"{decimal_text(self.delta)}-disclosure on {self.attribute}"
