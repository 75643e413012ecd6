"""What ARX's four profitability models share (ADR 0046): their config entry
``privacy.profitability: {attacker: prosecutor | journalist, attack: true | false,
publisher_benefit, publisher_loss, adversary_gain, adversary_cost}`` (ARX's
``ARXCostBenefitConfiguration``, its defaults where left out; each parameter a settings-table
row, so a run may override it), its manifest entry and its check."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from airflow_skald.core.privacy.delta_presence import subset_column
from airflow_skald.core.privacy.model import ParseContext, PrivacyModel, decimal_of
from airflow_skald.core.settings.cost_benefit import KEYS, CostBenefit
from airflow_skald.core.settings.parse import choice, mapping, no_unknown
from airflow_skald.core.settings.table import BY_NAME

ATTACKERS = ("prosecutor", "journalist")
WHERE = "privacy.profitability"


@dataclass(frozen=True)
class ProfitabilitySettings:
    """One `privacy.profitability` entry, validated."""

    attacker: str = "prosecutor"
    attack: bool = True
    cost: CostBenefit = field(default_factory=CostBenefit)

    @classmethod
    def parse(cls, raw: Any, ctx: ParseContext) -> ProfitabilitySettings:
        raw = mapping(raw, WHERE)
        no_unknown(raw, {"attacker", "attack", *KEYS}, WHERE)
        attacker = choice(raw.get("attacker", "prosecutor"), ATTACKERS, f"{WHERE}.attacker")
        attack = raw.get("attack", True)
        if not isinstance(attack, bool):
            from airflow_skald.core.errors import ConfigError

            raise ConfigError(f"{WHERE}.attack must be true or false")
        if attacker == "journalist":  # its population: the research subset's table
            subset_column(ctx, f"{WHERE} with attacker journalist")
        values = {k: BY_NAME[k].parse(raw[k], f"{WHERE}.{k}") for k in KEYS if k in raw}
        return cls(attacker, attack, CostBenefit(**values))

    def with_value(self, key: str, value: Any) -> ProfitabilitySettings:
        return replace(self, cost=replace(self.cost, **{key: Fraction(value)}))

    def entry(self) -> dict:
        """Its settings entry (the config's form) and the body of its manifest entry."""
        return {"attacker": self.attacker, "attack": self.attack, **self.cost.describe()}

    @classmethod
    def check_entry(cls, entry: dict) -> str | None:
        if entry.get("attacker") not in ATTACKERS:
            return ".attacker must be prosecutor or journalist"
        for key in KEYS:
            x = decimal_of(entry.get(key))
            if x is None or x < 0:
                return f".{key} must be a number >= 0"
        return None

    @classmethod
    def rebuilt(cls, entry: dict) -> ProfitabilitySettings:
        cost = CostBenefit(**{k: Fraction(str(entry[k])) for k in KEYS})
        return cls(entry["attacker"], bool(entry.get("attack", True)), cost)

    def label(self, what: str) -> str:
        c = self.cost
        return (
            f"{what} ({self.attacker}; benefit {c.describe()['publisher_benefit']}, loss "
            f"{c.describe()['publisher_loss']}, gain {c.describe()['adversary_gain']}, cost "
            f"{c.describe()['adversary_cost']})"
        )


def is_attack(raw: Any) -> bool:
    """The entry asks for the attack model (ARX's ProfitabilityProsecutor / Journalist)."""
    return not isinstance(raw, dict) or raw.get("attack", True) is not False


class ProfitabilityEntry:
    """What the two profitability models share as registry models: their config key's entry
    (`attack` tells them apart), settings, thresholds and manifest check."""

    settings: ProfitabilitySettings
    name = "profitability"
    config_key = "profitability"
    thresholds = KEYS
    #: the entry's `attack` this model answers
    with_attack: bool = True

    @property
    def population_based(self) -> bool:
        return self.settings.attacker == "journalist"

    @property
    def game(self) -> ProfitabilitySettings:
        return self.settings

    @classmethod
    def parse(cls, raw: Any, ctx: ParseContext) -> tuple[PrivacyModel, ...]:
        if raw is None or is_attack(raw) != cls.with_attack:
            return ()
        return (cls(ProfitabilitySettings.parse(raw, ctx)),)  # type: ignore[call-arg]

    @classmethod
    def settings_value(cls, models: tuple[PrivacyModel, ...]) -> Any:
        return models[0].settings_entry() if models else None

    def settings_entry(self) -> dict:
        return self.settings.entry()

    def with_threshold(self, key: str, value: Any) -> PrivacyModel:
        return type(self)(self.settings.with_value(key, value))  # type: ignore[call-arg]

    @classmethod
    def check_entry(cls, entry: dict) -> str | None:
        return ProfitabilitySettings.check_entry(entry)
