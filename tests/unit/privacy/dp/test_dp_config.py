"""The DP config (SPEC §4e): its settings on every route, the combinations ARX refuses (one
line each), the suppression limit it runs with, and the secret's reference."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from airflow_skald.core.config.run_config import config_from_dict
from airflow_skald.core.errors import ConfigError
from airflow_skald.core.privacy.dp.secret import KeyRef, resolve
from tests.helpers_data import config_dict


def _raw(**dp) -> dict:
    raw = config_dict("/tmp/in", "/tmp/out")
    raw["privacy"] = {"differential_privacy": {"epsilon": 2, "delta": 1e-5, **dp}}
    raw["quality"] = {"objective": "dm"}
    raw["dp_key"] = {"env": "SOME_VARIABLE"}
    return raw


def test_settings_and_limit() -> None:
    config = config_from_dict(_raw())
    dp = config.privacy[0]
    assert (dp.epsilon, dp.delta, dp.search_budget, dp.search_steps) == (2.0, 1e-5, 0.1, 100)
    assert config.suppression_limit == Fraction(1) and config.k == 103
    assert config.dp_key == KeyRef(env="SOME_VARIABLE")
    assert "SOME_VARIABLE" not in str(config.settings())  # not in the hash nor the manifest
    over = config.with_overrides({"dp_epsilon": "1", "dp_search_steps": "7"})
    assert (over.privacy[0].epsilon, over.privacy[0].search_steps, over.k) == (1.0, 7, 59)


@pytest.mark.parametrize(
    ("change", "words"),
    [
        (lambda r: r["privacy"].update(suppression_limit=0.05), "suppression_limit"),
        (lambda r: r.update(quality={"objective": "dm_star"}), "quality.objective"),
        (lambda r: r["privacy"]["differential_privacy"].update(search_budget=2), "smaller"),
        (lambda r: r["privacy"]["differential_privacy"].update(epsilon=0), "epsilon"),
        (lambda r: r["privacy"]["differential_privacy"].update(delta=1), "delta"),
        (lambda r: r["privacy"]["differential_privacy"].pop("delta"), "delta"),
        (lambda r: r.update(research_subset={"column": "in_study"}), "research_subset"),
        (lambda r: r.update(dp_key={"env": "A", "file": "b"}), "dp_key"),
        (
            lambda r: r["quasi_identifiers"][1].update(
                microaggregation={"function": "mean", "cluster": True}
            ),
            "microaggregation",
        ),
    ],
)
def test_refused_with_one_line(change, words) -> None:
    raw = _raw()
    change(raw)
    with pytest.raises(ConfigError, match=words) as err:
        config_from_dict(raw)
    assert "\n" not in str(err.value)


def test_fixed_node_takes_any_objective() -> None:
    raw = _raw(node={"city": 1, "age": 2, "zip": 0})
    raw["quality"] = {"objective": "dm_star"}
    assert config_from_dict(raw).privacy[0].k == 114  # all of ε: ARX's k at ε = 2


def test_secret_sources(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SKALD_UNIT_KEY", "abc")
    assert resolve(KeyRef(env="SKALD_UNIT_KEY")) == b"abc"
    (tmp_path / "key").write_bytes(b"from-a-file\n")
    assert resolve(KeyRef.parse({"file": "key"}, tmp_path)) == b"from-a-file"
    assert resolve(None, b"given") == b"given"
    for ref in (None, KeyRef(env="SKALD_UNSET_KEY"), KeyRef(file=str(tmp_path / "none"))):
        with pytest.raises(ConfigError):
            resolve(ref)
