"""The DP config (docs/design.md §4e): its settings on every route, the combinations ARX refuses (one
line each), the suppression limit it runs with, and the secret's reference."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest
from arx_answers import dp_grid_point

from airflow_skald.core.config.run_config import config_from_dict
from airflow_skald.core.errors import ConfigError
from airflow_skald.core.settings.secret import SecretRef
from tests.helpers_dp import dp_config_dict


def _raw(**dp) -> dict:
    raw = dp_config_dict("/tmp/in", "/tmp/out", "SOME_VARIABLE", **dp)
    raw["quality"] = {"objective": "dm"}
    return raw


def test_settings_and_limit() -> None:
    config = config_from_dict(_raw())
    dp = config.privacy[0]
    assert (dp.epsilon, dp.delta, dp.search_budget, dp.search_steps) == (2.0, 1e-5, 0.1, 100)
    assert config.suppression.limit == Fraction(1) and config.min_class_size == 103
    assert config.dp_key == SecretRef("dp_key", "env", "SOME_VARIABLE")
    assert "SOME_VARIABLE" not in str(config.settings())  # not in the hash nor the manifest
    over = config.with_overrides({"dp_epsilon": "1", "dp_search_steps": "7"})
    assert (over.privacy[0].epsilon, over.privacy[0].search_steps, over.min_class_size) == (
        1.0,
        7,
        59,
    )


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
    k = config_from_dict(raw).privacy[0].k  # all of ε: ARX's k at ε = 2, δ = 1e-5
    assert k == dp_grid_point(2, 1e-5, "fixed")["k"] == 114


def test_secret_sources(tmp_path: Path, monkeypatch) -> None:
    """dp_key is the config's one secret reference (as pseudonym_key): env and file read by
    the core, connection and variable by the operators only; a short secret refused."""
    monkeypatch.setenv("SKALD_UNIT_KEY", "abcdefghijklmnop")
    assert config_from_dict(_raw()).dp_key.setting == "dp_key"
    assert SecretRef.parse({"env": "SKALD_UNIT_KEY"}, "dp_key").secret() == b"abcdefghijklmnop"
    (tmp_path / "key").write_bytes(b"from-a-file-0123456789\n")
    ref = SecretRef.parse({"file": "key"}, "dp_key", tmp_path)
    assert ref.secret() == b"from-a-file-0123456789"
    assert "from-a-file" not in repr(ref)
    given = SecretRef.parse({"variable": "skald_dp"}, "dp_key")
    with pytest.raises(ConfigError, match="read by the Airflow operators"):
        given.secret()
    given.provide("handed-over-in-memory")
    assert given.secret() == b"handed-over-in-memory"
    monkeypatch.setenv("SKALD_SHORT_KEY", "abc")
    unreadable = [
        (SecretRef("dp_key", "env", "SKALD_UNSET_KEY"), "dp_key.env: the environment variable"),
        (SecretRef("dp_key", "file", str(tmp_path / "none")), "cannot read the file"),
        (SecretRef("dp_key", "env", "SKALD_SHORT_KEY"), "shorter than 16 bytes"),
    ]
    for ref, words in unreadable:
        with pytest.raises(ConfigError, match=words):
            ref.secret()
    with pytest.raises(ConfigError, match="dp_key takes one of"):
        config_from_dict({**_raw(), "dp_key": {"env": "A", "file": "b"}})


def test_per_chunk_baseline_refuses_dp_before_any_work() -> None:
    """The per-chunk baseline asks the registry; differential privacy's rules answer."""
    from airflow_skald.core.run.baseline import run_per_chunk

    with pytest.raises(ConfigError, match="^--per-chunk does not take differential_privacy "):
        run_per_chunk(config_from_dict(_raw()))
