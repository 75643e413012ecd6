"""The operators with an engine (issue 43 item 6, ADR 0069): a Spark Connect Airflow
connection resolved to Spark Connect's URI in the operator layer, its token masked;
OpenLineage names of an engine run's datasets (PostgreSQL tables by OpenLineage's naming,
files as the chunk path's: the data never moves). The DAG run with an engine:
tests/airflow/test_dags.py."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))


SECRET = "sc-token-3f9a1c77e2"


def test_a_spark_connect_connection_is_spark_connects_uri(monkeypatch):
    """Type spark_connect (or generic) with host and port -> sc://host:port; login, password
    and extra's use_ssl as Spark Connect's URI parameters; the token masked in the task's
    logs. Another type is refused naming the connection and its type."""
    from airflow_skald.core.errors import ConfigError
    from airflow_skald.operators import connections

    masked = []
    monkeypatch.setattr(connections, "mask", masked.append)
    conns = {
        "skald_sc": {"conn_type": "spark_connect", "host": "spark.example", "port": 15003},
        "skald_sc_token": {
            "conn_type": "generic",
            "host": "spark.example",
            "login": "etl",
            "password": SECRET,
            "extra": {"use_ssl": True},
        },
        "skald_pg": {"conn_type": "postgres", "host": "db.example", "port": 5432},
    }
    for name, body in conns.items():
        monkeypatch.setenv(f"AIRFLOW_CONN_{name.upper()}", json.dumps(body))

    def resolve(conn_id: str) -> str:
        config = SimpleNamespace(execution="spark", execution_connection=conn_id)
        return connections.resolver(config)(conn_id)

    assert resolve("skald_sc") == "sc://spark.example:15003"
    assert resolve("skald_sc_token") == (
        f"sc://spark.example:15002/;user_id=etl;token={SECRET};use_ssl=true"
    )
    assert masked == [SECRET]
    with pytest.raises(ConfigError, match="skald_pg: .* not postgres") as refused:
        resolve("skald_pg")
    assert len(str(refused.value).splitlines()) == 1
    # a database's connection id resolves as before, whatever the engine
    duckdb = SimpleNamespace(execution="duckdb", execution_connection=None)
    assert connections.resolver(duckdb)("skald_pg").startswith("postgresql://db.example:5432")


def test_openlineage_names_of_an_engine_runs_datasets(tmp_path, monkeypatch):
    """OpenLineage's naming (spec/naming): a PostgreSQL table is namespace
    postgres://host:port, name database.schema.table; a run in the PostgreSQL engine names the
    same tables as the chunk path's run (the data never moves), a DuckDB run the same files."""
    from helpers_data import config_dict, write_config

    from airflow_skald.operators import EncodeOperator

    monkeypatch.setenv("AIRFLOW__SKALD__ARTIFACTS", str(tmp_path / "artifacts"))
    monkeypatch.setenv("AIRFLOW_CONN_SKALD_CLINIC", "postgres://u@db.example:6543/clinic")
    context = {"dag": SimpleNamespace(dag_id="unit"), "run_id": "manual__2026-01-01"}
    names = {}
    for engine in ("chunks", "postgresql", "duckdb"):
        body = config_dict(tmp_path / "in", tmp_path / "out", k=3)
        if engine != "duckdb":
            body["input"] = {"table": "clinic.patients", "connection": "skald_clinic"}
            body["output"] = {"table": "k3", "connection": "skald_clinic"}
        body["execution"] = {"engine": engine}
        op = EncodeOperator(task_id="e", config=str(write_config(tmp_path / "s.yaml", body)))
        op.open_run(context)
        op._lineage["manifest"] = {"k": 3, "suppression_limit": "0.1"}
        lineage = op.get_openlineage_facets_on_complete(None)
        names[engine] = [(d.namespace, d.name) for d in (*lineage.inputs, *lineage.outputs)]
    tables = [
        ("postgres://db.example:6543", "clinic.clinic.patients"),
        ("postgres://db.example:6543", "clinic.public.k3"),
    ]
    assert names["postgresql"] == names["chunks"] == tables
    assert names["duckdb"] == [("file", str(tmp_path / "in")), ("file", str(tmp_path / "out"))]
