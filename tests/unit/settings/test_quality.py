"""`quality:` (docs/design.md §4d) read once where it enters: the file, CLI flags and DAG params go through
the settings table; a bad value is one line naming it, exit 2, nothing written."""

from __future__ import annotations

from fractions import Fraction

import pytest
from helpers_data import config_dict, run_inprocess, write_config

from airflow_skald.core.config.run_config import config_from_dict
from airflow_skald.core.errors import ConfigError
from airflow_skald.core.quality.registry import MODELS
from airflow_skald.core.settings.quality import OBJECTIVES
from airflow_skald.core.settings.table import BY_NAME
from airflow_skald.operators.dag_params import PARAMS

pytestmark = pytest.mark.unit


def _cfg(quality: dict | None = None) -> dict:
    cfg = config_dict("/in", "/out")
    if quality is not None:
        cfg["quality"] = quality
    return cfg


def test_the_registry_lists_every_objective_the_settings_offer() -> None:
    assert tuple(MODELS) == OBJECTIVES
    assert BY_NAME["objective"].schema["enum"] == list(OBJECTIVES)
    assert {"objective", "gs_factor", "aggregate"} <= set(PARAMS)


def test_defaults_and_a_full_section() -> None:
    plain = config_from_dict(_cfg())
    assert plain.quality.objective == "dm_star" and plain.quality.gs_factor == Fraction(1, 2)
    assert "quality" not in plain.settings()  # configs without it keep their hash
    q = config_from_dict(
        _cfg({"objective": "loss", "gs_factor": 0.3, "weights": {"age": 2}, "aggregate": "sum"})
    ).quality
    assert (q.objective, q.gs_factor, q.aggregate) == ("loss", Fraction(3, 10), "sum")
    assert q.normalised_weights(["city", "age", "zip"]) == (
        Fraction(1, 2),
        Fraction(1),
        Fraction(1, 2),
    )
    assert q.g_factor == 1 and q.s_factor == Fraction(3, 5)


@pytest.mark.parametrize(
    ("quality", "message"),
    [
        ({"objective": "entropy"}, "quality.objective must be one of dm_star, "),
        ({"gs_factor": 2}, "quality.gs_factor must be a number between 0 and 1 (got 2)"),
        ({"objective": "loss", "aggregate": "median"}, "quality.aggregate must be one of"),
        (
            {"aggregate": "sum"},
            "quality.aggregate applies to loss, nu_entropy, nu_entropy_nm, precision, height",
        ),
        ({"objective": "nu_entropy", "aggregate": "geometric_mean"}, "of nu_entropy must be sum"),
        ({"weights": {"bmi": 1}}, "quality.weights names 'bmi', which is not a quasi-identifier"),
        ({"weights": {"age": -1}}, "quality.weights.age must be a number >= 0 (got -1)"),
        ({"objectiv": "loss"}, "objectiv"),
    ],
)
def test_bad_quality_settings_are_one_line(quality, message) -> None:
    with pytest.raises(ConfigError) as err:
        config_from_dict(_cfg(quality))
    assert message in str(err.value) and "\n" not in str(err.value)


def test_per_run_objective_is_checked_with_the_file(tmp_path, capsys) -> None:
    cfg = write_config(tmp_path / "skald.yaml", _cfg({"objective": "nu_entropy"}))
    code, out, err = run_inprocess(["run", str(cfg), "--objective", "nope"], capsys)
    assert code == 2 and err.strip().count("\n") == 0 and "objective must be one of" in err
    code, _, err = run_inprocess(["run", str(cfg), "--aggregate", "maximum"], capsys)
    assert code == 2 and "of nu_entropy must be sum" in err
    assert not (tmp_path / "out").exists()
