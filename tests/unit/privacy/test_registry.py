"""Every privacy model of the registry, through its whole protocol: parsed from its config entry,
written back into the effective settings, given a run's threshold, bound to phase 1's statistics,
applied to a node's classes, described in a manifest entry and rebuilt from that entry for
`skald verify` with the same verdicts. A model added to the registry is checked here with no
other change to this file than its example config entry."""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import numpy as np
import pytest

from airflow_skald.core.encode.sensitive_domain import SensitiveStats
from airflow_skald.core.errors import ConfigError
from airflow_skald.core.privacy.distributions import ClassValues
from airflow_skald.core.privacy.model import ClassTable, ParseContext, RebuildContext
from airflow_skald.core.privacy.registry import (
    CONFIG_KEYS,
    MODELS,
    THRESHOLDS,
    bind_models,
    check_entry,
    parse_models,
    rebuild,
    settings_of,
    with_threshold,
)

# one example entry per config key (a model added to the registry adds one here)
EXAMPLES = {
    "k": 3,
    "l_diversity": [
        {"attribute": "disease", "l": 2},
        {"attribute": "disease", "l": 2, "variant": "entropy", "estimator": "grassberger"},
        {"attribute": "disease", "l": 2, "variant": "recursive", "c": 3},
    ],
    "t_closeness": [{"attribute": "disease", "t": 0.4}],
    "k_map": {"k": 5, "sampling_fraction": 0.1, "estimator": "zero_truncated_poisson"},
    "b_likeness": [{"attribute": "disease", "beta": 1.0, "variant": "enhanced"}],
    "d_disclosure": [{"attribute": "disease", "delta": 1.2}],
    "average_risk": {"max": 0.3, "highest": 0.5, "records_at_risk": 0.2},
    "sample_uniqueness": {"max": 0.1},
    "population_uniqueness": {"max": 0.2, "model": "zayatz", "population": 100},
    "delta_presence": {"min": 0.1, "max": 0.75},
    "differential_privacy": {"epsilon": 2, "delta": 1e-5, "search_steps": 10},
    "profitability": {"attacker": "journalist", "adversary_gain": 120, "adversary_cost": 20},
}
# models sharing a config key with another: their own example (exact k-map: no estimator)
EXAMPLE_OF_MODEL = {
    "ExactKMap": {"k": 3},
    "ProfitabilityNoAttack": {"attacker": "journalist", "attack": False, "adversary_cost": 5},
}
# a new threshold value per settings row the models own
THRESHOLD_VALUES = {
    "k": 4,
    "l": 3,
    "c": Fraction(2),
    "t": Fraction(1, 2),
    "k_map": 6,
    "b_likeness": Fraction(2),
    "d_disclosure": Fraction(3, 2),
    "average_risk": Fraction(1, 4),
    "sample_uniqueness": Fraction(1, 5),
    "population_uniqueness": Fraction(1, 10),
    "dp_epsilon": Fraction(3),
    "dp_delta": Fraction(1, 4),
    "dp_search_budget": Fraction(1, 2),
    "dp_search_steps": 20,
    "entropy_estimator": "grassberger",
    "publisher_benefit": Fraction(1000),
    "publisher_loss": Fraction(250),
    "adversary_gain": Fraction(100),
    "adversary_cost": Fraction(9, 2),
    "t_order": "text",
}
OWNER_FIELD = {
    "entropy_estimator": "estimator",
    "t_order": "order",
    "k_map": "k",
    "b_likeness": "beta",
    "d_disclosure": "delta",
    "average_risk": "max",
    "sample_uniqueness": "max",
    "population_uniqueness": "max",
    "dp_epsilon": "epsilon",
    "dp_delta": "delta",
    "dp_search_budget": "search_budget",
    "dp_search_steps": "search_steps",
}

# four classes of sizes 5, 3, 2, 4 over the values 0..2 of 'disease'
SIZES = np.array([5, 3, 2, 4])
PAIRS = (
    np.array([0, 0, 0, 1, 2, 3, 3]),  # class
    np.array([0, 1, 2, 0, 1, 0, 2]),  # value code
    np.array([2, 2, 1, 3, 2, 2, 2]),  # records
)
STATS = {"disease": SensitiveStats("disease", ["flu", "cold", "gout"], [7, 4, 3], False)}


POPULATION = np.array([10, 3, 20, 4])  # a population table's records of the same classes


def _table() -> ClassTable:
    cls, value, count = PAIRS
    return ClassTable(SIZES, {"disease": ClassValues(4, cls, value, count)}, None, POPULATION)


def test_every_config_key_has_an_example() -> None:
    assert set(EXAMPLES) == set(CONFIG_KEYS)
    assert set(THRESHOLD_VALUES) == set(THRESHOLDS)


@pytest.mark.parametrize("cls", MODELS, ids=lambda c: c.__name__)
def test_model_protocol(cls) -> None:
    ctx = ParseContext(sensitive=("disease",), research_subset="in_study")
    models = cls.parse(EXAMPLE_OF_MODEL.get(cls.__name__, EXAMPLES[cls.config_key]), ctx)
    assert models and all(type(m) is cls for m in models)
    if cls.config_key != "k":  # k is required (test_k_is_a_model_like_the_others)
        assert cls.parse(None, ctx) == ()
    # the settings entry round-trips through the parser
    written = cls.settings_value(models)
    assert cls.settings_value(cls.parse(written, ctx)) == written
    table = _table()
    bound = bind_models(models, STATS)
    for model in bound:
        if model.reads_label_loss:  # the search gives each class's information loss (ADR 0046)
            table = replace(table, label_loss=np.array([0.0, 0.5, 0.1, 0.9]))
        keeps = model.keeps(table)
        assert keeps.dtype == bool and keeps.shape == SIZES.shape
        assert isinstance(model.monotone, bool)
        assert model.min_class_size >= 1
        entry = model.describe()
        assert entry["model"] in cls.manifest_models
        assert check_entry(entry) is None  # what verify accepts from a manifest
        again = rebuild(entry, RebuildContext(STATS))
        if model.reads_label_loss:  # no domain shares in a release: named, not judged
            assert isinstance(again, str) and again.startswith("not re-checked")
            assert model.figure(table.subset(keeps)) and model.label()
            continue
        if cls.population_based:  # a release without its population counts: named, not judged
            assert isinstance(again, str) and again.startswith("not re-checked")
            again = rebuild(entry, RebuildContext(STATS, population=True))
        assert not isinstance(again, str), again
        assert np.array_equal(again.keeps(table), keeps)
        assert model.figure(table.subset(keeps))  # a figure over the kept classes
        assert model.label()


def test_k_is_a_model_like_the_others() -> None:
    models = parse_models({"k": 5}, ParseContext())
    assert [m.min_class_size for m in models] == [5]
    assert settings_of(models)["k"] == 5
    with pytest.raises(ConfigError, match="privacy.k is required"):
        parse_models({}, ParseContext())
    # k may be left out when another model is configured (docs/design.md §4c)
    alone = parse_models({"average_risk": {"max": 0.05}}, ParseContext())
    assert [type(m).__name__ for m in alone] == ["AverageRisk"]


@pytest.mark.parametrize("key", sorted(THRESHOLD_VALUES))
def test_per_run_threshold_sets_the_one_owner(key: str) -> None:
    ctx = ParseContext(sensitive=("disease",))
    diversity = {"attribute": "disease", "l": 2, "variant": "recursive", "c": 3}
    if key == "entropy_estimator":  # the estimator belongs to entropy l-diversity
        diversity = {"attribute": "disease", "l": 2, "variant": "entropy"}
    distance = "ordered" if key == "t_order" else "equal"  # the order of ordered distance
    raw = {
        "k": 3,
        "l_diversity": [diversity],
        "t_closeness": [{"attribute": "disease", "t": 0.4, "distance": distance}],
        **{k: EXAMPLES[k] for k in OWNER_FIELD if k in EXAMPLES},
        "differential_privacy": EXAMPLES["differential_privacy"],
        "profitability": {"adversary_gain": 120},  # the prosecutor: no research subset
    }
    models = with_threshold(parse_models(raw, ctx), key, THRESHOLD_VALUES[key])
    owner = [m for m in models if key in m.thresholds]
    field = OWNER_FIELD.get(key, key)
    assert len(owner) == 1
    target = owner[0].settings.cost if owner[0].config_key == "profitability" else owner[0]
    assert getattr(target, field) == THRESHOLD_VALUES[key]


def test_threshold_of_two_criteria_is_refused() -> None:
    ctx = ParseContext(sensitive=("disease",))
    models = parse_models({"k": 3, "l_diversity": EXAMPLES["l_diversity"]}, ctx)
    with pytest.raises(ConfigError, match="one configured l-diversity criterion"):
        with_threshold(models, "l", 3)


def test_unknown_manifest_model_is_listed_not_skipped_silently() -> None:
    reason = rebuild({"model": "zz-privacy"}, RebuildContext())
    assert isinstance(reason, str) and "zz-privacy" in reason
