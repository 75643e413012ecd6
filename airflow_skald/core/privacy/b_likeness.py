"""β-likeness (Cao and Karras 2012; docs/design.md §4c, ARX's ``BasicBLikeness`` /
``EnhancedBLikeness``): in every kept class, each value v present is at most beta more frequent,
relative to its share p_v over all input records, than in the input: (c_v/n - p_v)/p_v <= beta;
enhanced: <= min(beta, -ln p_v). Class-based; monotone with generalisation only (not with
suppression)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from decimal import Decimal, localcontext
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
from airflow_skald.core.settings.parse import choice, criteria_list, no_repeats, no_unknown
from airflow_skald.core.settings.table import BY_NAME
from airflow_skald.core.text import decimal_text

VARIANTS = ("basic", "enhanced")


def _ln(x: Fraction) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 60
        return (Decimal(x.numerator) / Decimal(x.denominator)).ln()


@dataclass(frozen=True)
class BLikeness(PrivacyModel):
    attribute: str = field()
    beta: Fraction
    variant: str = "enhanced"
    global_counts: np.ndarray | None = field(default=None, compare=False, repr=False)

    name = "b_likeness"
    config_key = "b_likeness"
    thresholds = ("b_likeness",)
    manifest_models = ("b-likeness",)
    monotone = False
    needs_overall = True

    @classmethod
    def parse(cls, raw: Any, ctx: ParseContext) -> tuple[PrivacyModel, ...]:
        out = []
        for at, item in criteria_list(raw, "b_likeness", list(ctx.sensitive)):
            no_unknown(item, {"attribute", "beta", "variant"}, at)
            if "beta" not in item:
                raise ConfigError(f"{at} needs 'beta'")
            beta = BY_NAME["b_likeness"].parse(item["beta"], f"{at}.beta")
            variant = choice(item.get("variant", "enhanced"), VARIANTS, f"{at}.variant")
            out.append(cls(item["attribute"], beta, variant))
        no_repeats(out, "b_likeness", lambda c: (c.attribute, c.variant))
        return tuple(out)

    def with_threshold(self, key: str, value: Any) -> PrivacyModel:
        return replace(self, beta=value)

    def bind(self, sensitive: Mapping[str, Any], where: str) -> PrivacyModel:
        return replace(self, global_counts=sensitive[self.attribute].global_counts)

    def distances(self, table: ClassTable) -> tuple[np.ndarray, tuple]:
        cv = table.values[self.attribute]
        c, n, g, total = row_terms(cv, self.global_counts)
        with np.errstate(divide="ignore", invalid="ignore"):
            d = (c * float(total) / (n * g.astype(np.float64))) - 1.0
        return d, (cv, c, n, g, total)

    def keeps(self, table: ClassTable) -> np.ndarray:
        d, (cv, c, n, g, total) = self.distances(table)
        beta = self.beta
        bound = np.full(d.shape, float(beta))
        enhanced = self.variant == "enhanced"
        if enhanced:
            bound = np.minimum(bound, -np.log(g / float(total)))

        def exact(i: int) -> bool:
            x = Fraction(int(c[i]) * total, int(n[i]) * int(g[i])) - 1
            if x <= beta:
                if not enhanced:
                    return True
                with localcontext() as ctx:
                    ctx.prec = 60
                    dx = Decimal(x.numerator) / Decimal(x.denominator)
                    return dx <= -_ln(Fraction(int(g[i]), total))
            return False

        return classes_passing(cv, d, bound, exact)

    def describe(self) -> dict:
        return {
            "model": "b-likeness",
            "attribute": self.attribute,
            "variant": self.variant,
            "beta": decimal_text(self.beta),
        }

    def figure(self, kept: ClassTable) -> dict:
        if not kept.n_classes:
            return {"max_b": 0.0}
        d, _ = self.distances(kept)
        return {"max_b": float(np.max(d)) if d.size else 0.0}

    @classmethod
    def check_entry(cls, entry: dict) -> str | None:
        if not is_column(entry.get("attribute")):
            return ".attribute must be a column name"
        beta = decimal_of(entry.get("beta"))
        if beta is None or beta <= 0:
            return ".beta must be a number > 0"
        if entry.get("variant") not in VARIANTS:
            return f".variant must be one of {', '.join(VARIANTS)}"
        return None

    @classmethod
    def rebuild(cls, entry: dict, ctx: RebuildContext) -> PrivacyModel | str:
        why = ctx.without_overall(entry["attribute"])
        if why is not None:
            return why
        stats = ctx.sensitive[entry["attribute"]]
        return cls(
            entry["attribute"], Fraction(str(entry["beta"])), entry["variant"], stats.global_counts
        )

    def label(self) -> str:
        return f"{self.variant} {decimal_text(self.beta)}-likeness on {self.attribute}"
