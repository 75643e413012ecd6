"""What a SQL engine does not run yet is refused in one line, and each owner answers for
itself (issue 42: a model's `engine_refusal`, the engine's `utility`), no list kept elsewhere."""

from __future__ import annotations

import pytest
from helpers_data import config_dict

from airflow_skald.core.config.run_config import config_from_dict
from airflow_skald.core.engine.sql.duckdb_engine import DuckDBEngine
from airflow_skald.core.engine.sql.postgres_engine import PostgresEngine
from airflow_skald.core.engine.sql.spark_engine import SparkEngine
from airflow_skald.core.engine.sql.support import check_supported, unsupported
from airflow_skald.core.errors import ConfigError

COST = {"publisher_benefit": 1200, "publisher_loss": 3000, "adversary_gain": 120}
DP = {"epsilon": 2, "delta": 1e-6}
ENGINES = (DuckDBEngine, PostgresEngine, SparkEngine)


def _config(tmp_path, privacy=None, **more):
    body = config_dict(tmp_path / "in", tmp_path / "out")
    body["privacy"] = {**body["privacy"], **(privacy or {})}
    return config_from_dict({**body, **more}, judge=False)  # DP's rules: not the question


@pytest.mark.parametrize("engine", ENGINES)
def test_the_models_answer_whether_an_engine_runs_them(tmp_path, engine) -> None:
    assert (
        unsupported(_config(tmp_path, {"l_diversity": [{"attribute": "disease", "l": 2}]}), engine)
        is None
    )
    profit = _config(tmp_path, {"profitability": {**COST, "adversary_cost": 20}})
    assert unsupported(profit, engine) is None  # runs since issue 43 item 4 (ADR 0046)
    dp = unsupported(_config(tmp_path, {"differential_privacy": DP}), engine)
    assert dp is not None and dp.startswith("differential privacy: its keyed sample")


def test_the_engine_answers_whether_it_gathers_the_utility_analysis(tmp_path) -> None:
    config = _config(tmp_path, utility={"folds": 3})
    for engine in ENGINES:  # PostgreSQL too since ADR 0079
        assert unsupported(config, engine) is None
    refusing = type("Refusing", (PostgresEngine,), {"utility": False})  # an engine that does not
    with pytest.raises(
        ConfigError,
        match="utility .the analysis reads the released rows. "
        "does not run in the postgresql engine yet; use execution: chunks",
    ):
        check_supported(config, refusing)
