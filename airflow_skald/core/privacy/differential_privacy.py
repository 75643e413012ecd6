"""(ε, δ)-differential privacy as ARX 3.9's ``EDDifferentialPrivacy`` (SafePub: Bild, Kuhn and
Prasser 2018; docs/design.md §4e).

The model is k-anonymity over a β-sample of the input: k and β come from ε (less the search
budget when the node is searched) and δ by ARX's ``ParameterCalculation``
(`dp.parameters`), the sample from the run's keyed stream (`dp.sampler`), the node from a fixed
generalisation or SafePub's search (`core.search.safepub`). Records outside the sample are never
released and classes of fewer than k sampled records are suppressed; no suppression limit applies (ARX's
DP runs with limit 1).

Config (`privacy.differential_privacy`): epsilon, delta, search_budget (default 0.1, ARX's),
search_steps (default 100: expansions, docs/design.md §4e), node (a fixed {qid: level}: data-independent,
all of ε). The secret is never in the config: `dp_key` names where the run reads it, a secret
reference (`core.settings.secret`) as the pseudonyms' key is.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from airflow_skald.core.errors import ConfigError
from airflow_skald.core.privacy.dp_parameters import (
    DPParameters,
    anonymisation_epsilon,
    calculate,
)
from airflow_skald.core.privacy.k_anonymity import KAnonymity
from airflow_skald.core.privacy.model import ClassTable, ParseContext, PrivacyModel, is_int
from airflow_skald.core.settings.parse import mapping, no_unknown
from airflow_skald.core.settings.table import BY_NAME

MODEL = "differential-privacy"
DEFAULT_BUDGET = 0.1  # ARXConfiguration's default DP search budget
DEFAULT_STEPS = 100
#: the quality models ARX has a DP score function for (`search.safepub.scores`)
OBJECTIVES = ("dm", "loss", "precision", "aecs", "nu_entropy")
DP_KEY_MISSING = (
    "differential privacy needs a secret: dp_key: {env: NAME} or {file: path} in the config "
    "(operators also {connection: ID} or {variable: NAME}, or dp_key_conn_id / dp_key_variable)"
)
#: the objective a DP search scores by when none is named: ARX's default quality model
#: (``ARXConfiguration``: ``Metric.createLossMetric()``)
DEFAULT_OBJECTIVE = "loss"
#: why a value released as it is breaks the guarantee (the refusals name it)
UNBOUNDED = (
    "a value only one person has would show whether that person was sampled, which no "
    "(epsilon, delta) bounds"
)
COMPOSE = (
    "Each differentially private release of the same data spends its own epsilon: releases "
    "compose, so publishing two of them gives (epsilon1 + epsilon2, delta1 + delta2)-DP."
)


@dataclass(frozen=True)
class DifferentialPrivacy(PrivacyModel):
    epsilon: float
    delta: float
    search_budget: float = DEFAULT_BUDGET
    search_steps: int = DEFAULT_STEPS
    node: tuple[tuple[str, int], ...] | None = None  # a fixed node: data-independent
    fixed: tuple[int, float] | None = None  # (k, β) read back from a manifest

    name = "dp_epsilon"
    config_key = "differential_privacy"
    thresholds = ("dp_epsilon", "dp_delta", "dp_search_budget", "dp_search_steps")
    manifest_models = (MODEL,)
    monotone = True
    with_differential_privacy = True
    data_independent = True
    randomised = True
    default_objective = DEFAULT_OBJECTIVE
    unverifiable = (
        "not re-checked: that the released records are a keyed Binomial(N, beta) sample and "
        "the node the exponential mechanism's draw; both need the secret and the input "
        "(the run that made the release, holding the secret, checked that every released row "
        "is in its keyed sample: the manifest's differential_privacy.sample_check; re-checked "
        "here: every released class holds at least k records, and the release holds the "
        "sampled records only)"
    )

    @classmethod
    def parse(cls, raw: Any, ctx: ParseContext) -> tuple[PrivacyModel, ...]:
        if raw is None:
            return ()
        where = "privacy.differential_privacy"
        raw = mapping(raw, where)
        no_unknown(raw, {"epsilon", "delta", "search_budget", "search_steps", "node"}, where)
        for key in ("epsilon", "delta"):
            if key not in raw:
                raise ConfigError(f"{where} needs '{key}'")
        node = None
        if raw.get("node") is not None:
            levels = mapping(raw["node"], f"{where}.node")
            for qid, level in levels.items():
                if not is_int(level, 0):
                    raise ConfigError(f"{where}.node.{qid} must be an integer >= 0")
            node = tuple((str(q), int(v)) for q, v in levels.items())
        model = cls(
            float(BY_NAME["dp_epsilon"].parse(raw["epsilon"], f"{where}.epsilon")),
            float(BY_NAME["dp_delta"].parse(raw["delta"], f"{where}.delta")),
            float(
                BY_NAME["dp_search_budget"].parse(
                    raw.get("search_budget", DEFAULT_BUDGET), f"{where}.search_budget"
                )
            ),
            BY_NAME["dp_search_steps"].parse(
                raw.get("search_steps", DEFAULT_STEPS), f"{where}.search_steps"
            ),
            node,
        )
        model.check(where)
        return (model,)

    def check(self, where: str = "privacy.differential_privacy") -> None:
        """ARX's own refusals (``ARXAnonymizer.checkBeforeEncoding``)."""
        if self.searched and self.search_budget >= self.epsilon:
            raise ConfigError(f"{where}.search_budget must be smaller than epsilon")

    @classmethod
    def settings_value(cls, models: tuple[PrivacyModel, ...]) -> Any:
        return models[0].settings_entry() if models else None

    def settings_entry(self) -> dict:
        out: dict[str, Any] = {"epsilon": self.epsilon, "delta": self.delta}
        if self.searched:
            out |= {"search_budget": self.search_budget, "search_steps": self.search_steps}
        else:
            out["node"] = dict(self.node or ())
        return out

    def with_threshold(self, key: str, value: Any) -> PrivacyModel:
        field = {
            "dp_epsilon": "epsilon",
            "dp_delta": "delta",
            "dp_search_budget": "search_budget",
            "dp_search_steps": "search_steps",
        }[key]
        value = value if field == "search_steps" else float(value)
        out = DifferentialPrivacy(
            **{
                **{
                    f: getattr(self, f)
                    for f in ("epsilon", "delta", "search_budget", "search_steps", "node")
                },
                field: value,
            }
        )
        out.check(key)
        return out

    def engine_refusal(self, engine: str) -> str | None:
        return (
            "differential privacy: its keyed sample would put the key into the engine's "
            "query text; use execution: chunks"
        )

    @property
    def searched(self) -> bool:
        return self.node is None

    @property
    def epsilon_anonymisation(self) -> float:
        """The ε k and β are derived from (ARX: ε − budget's lower bound when searched)."""
        return anonymisation_epsilon(self.epsilon, self.search_budget if self.searched else None)

    @property
    def epsilon_per_step(self) -> float:
        return self.search_budget / self.search_steps if self.search_steps else 0.0

    @cached_property
    def parameters(self) -> DPParameters:
        if self.fixed is not None:
            return DPParameters(self.epsilon_anonymisation, self.delta, *self.fixed)
        return calculate(self.epsilon_anonymisation, self.delta)

    @property
    def k(self) -> int:
        return self.parameters.k

    @property
    def beta(self) -> float:
        return self.parameters.beta

    @property
    def min_class_size(self) -> int:
        return self.k

    def keeps(self, table: ClassTable) -> np.ndarray:
        return table.sizes >= self.k

    def describe(self) -> dict:
        out = {"model": MODEL, **self.settings_entry()}
        out |= {"k": self.k, "beta": self.beta, "epsilon_anonymisation": self.epsilon_anonymisation}
        if self.searched:
            out["epsilon_per_step"] = self.epsilon_per_step
        return out

    def figure(self, kept: ClassTable) -> dict:
        return KAnonymity(self.k).figure(kept)

    def violation(self, table: ClassTable, where: str) -> str | None:
        """k-anonymity of the released (sampled) records, with the DP model's k."""
        return KAnonymity(self.k).violation(table, where)

    def label(self) -> str:
        return f"({self.epsilon}, {self.delta})-DP (k={self.k})"

    @classmethod
    def check_entry(cls, entry: dict) -> str | None:
        for key in ("epsilon", "delta", "beta"):
            if not isinstance(entry.get(key), int | float) or isinstance(entry.get(key), bool):
                return f".{key} must be a number"
        if not is_int(entry.get("k"), 1):
            return ".k must be an integer >= 1"
        return None

    @classmethod
    def rebuild(cls, entry: dict, ctx: Any) -> PrivacyModel | str:
        node = entry.get("node")
        return cls(
            float(entry["epsilon"]),
            float(entry["delta"]),
            float(entry.get("search_budget", DEFAULT_BUDGET)),
            int(entry.get("search_steps", DEFAULT_STEPS)),
            tuple(node.items()) if isinstance(node, dict) else None,
            fixed=(int(entry["k"]), float(entry["beta"])),
        )


def dp_of(config: Any) -> DifferentialPrivacy | None:
    found = [m for m in config.privacy if isinstance(m, DifferentialPrivacy)]
    return found[0] if found else None


def passed_through_refusal(column: str) -> str:
    """The line refusing an input column a DP release would pass through unchanged."""
    return (
        f"column '{column}' would be released as it is under differential_privacy: "
        f"{UNBOUNDED}; declare it a quasi-identifier (with a hierarchy) or leave it out "
        "(direct_identifiers)"
    )


def check_levels_built(dims: list) -> None:
    """After phase 1: no rule level dropped because the data fills it (one label for every
    value): the levels would then depend on the data."""
    for d in dims:
        dropped = getattr(getattr(d, "hierarchy", None), "dropped", 0)
        if dropped:
            raise ConfigError(
                f"quasi-identifier '{d.name}': {dropped} level(s) of its rule hold one label "
                "for every value of the data, and under differential_privacy the levels may "
                "not depend on the data: leave the rule's last "
                f"{dropped} level(s) out"
            )
