"""The `utility:` section through every route: the file, and the per-run settings (CLI flags,
DAG params and operator keywords arrive as text) parsed by the settings table."""

from __future__ import annotations

import pytest
from helpers_data import config_dict

from airflow_skald.core.config.run_config import config_from_dict
from airflow_skald.core.errors import ConfigError
from airflow_skald.core.settings.utility import MODELS, UtilitySettings


def config(utility=None, **changes):
    raw = config_dict("/tmp/in", "/tmp/out")
    if utility is not None:
        raw["utility"] = utility
    raw.update(changes)
    return config_from_dict(raw)


def test_off_without_the_section_and_defaults_as_arx_with_it():
    assert config().utility is None
    on = config({}).utility
    assert on == UtilitySettings(target=None, models=MODELS, folds=10, max_records=100_000)
    assert "utility" in config({}).settings() and "utility" not in config().settings()


def test_the_file_and_the_text_routes_agree():
    from_file = config(
        {
            "target": "disease",
            "models": ["naive_bayes"],
            "folds": 5,
            "max_records": 2000,
            "features": ["age", "city"],
            "contingency": [["city", "age"]],
        }
    ).utility
    from_text = config().with_overrides(
        {
            "utility_target": "disease",
            "utility_models": "naive_bayes",
            "utility_folds": "5",
            "utility_max_records": "2000",
            "utility_features": "age, city",
            "utility_contingency": "city:age",
        }
    )
    assert from_text.utility == from_file
    assert from_file.feature_names(["city", "age"]) == ["age", "city"]
    # a flag changes one setting of the file's section, the others stand
    assert config({"folds": 4}).with_overrides({"utility_target": "disease"}).utility.folds == 4


@pytest.mark.parametrize(
    "utility,message",
    [
        ({"folds": 1}, "utility.folds must be an integer >= 2"),
        ({"models": ["svm"]}, "utility.models must be a list of"),
        ({"contingency": [["city", "disease"]]}, "names 'disease', which is not a QID"),
        ({"contingency": [["city", "city"]]}, "pairs 'city' with itself"),
        ({"target": "name"}, "'name', a direct identifier"),
        ({"colour": "red"}, "unknown key 'colour' in utility"),
        ([1], "utility must be a mapping"),
    ],
)
def test_bad_settings_are_one_line_naming_them(utility, message):
    with pytest.raises(ConfigError, match=message):
        config(utility)


def test_bad_flag_values_are_refused_like_the_file():
    with pytest.raises(ConfigError, match="utility_folds must be an integer >= 2"):
        config().with_overrides({"utility_folds": "1"})
    with pytest.raises(ConfigError, match="utility_models must be a list of"):
        config().with_overrides({"utility_models": "logistic_regression,svm"})


def test_a_research_subset_is_refused_by_either_route():
    subset = {"research_subset": {"column": "in_study"}, "privacy": {"k_map": {"k": 3}}}
    with pytest.raises(ConfigError, match="cannot be combined with a research_subset"):
        config({}, **subset)
    with pytest.raises(ConfigError, match="cannot be combined with a research_subset"):
        config(**subset).with_overrides({"utility_target": "disease"})
