"""DAG ``skald_from_postgres`` with ``dag.test()``: a table read through an Airflow
connection (``AIRFLOW_CONN_...``), pseudonyms keyed by an Airflow variable
(``AIRFLOW_VAR_...``), the table param per run; the release equals the CLI's from the same
table, the connection's password and the key are in no XCom, artifact or released file, the
lineage names the table as OpenLineage names PostgreSQL tables, the staged chunks are gone.
Then with ``execution: postgresql`` (ADR 0070): the engine's table release holds the chunk
path's rows, its manifest names the engine, and ``skald verify`` accepts it."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

KEY = "airflow-variable-key-0123456789"


def test_table_through_a_connection_released_by_the_dag(airflow_home, tmp_path, monkeypatch, pg_db):
    import pyarrow as pa
    from airflow.dag_processing.dagbag import DagBag
    from helpers_data import config_dict, make_table, release_rows, write_config
    from helpers_postgres import load_table

    from airflow_skald.core.config.run_config import load_config
    from airflow_skald.core.engine.sql.table_counts import verify_table_release
    from airflow_skald.core.run import runner
    from airflow_skald.operators.dag_params import PARAMS

    uri = f"postgresql://postgres@127.0.0.1:5432/{pg_db}"
    people = pa.concat_tables([make_table(40, seed=i, start=i * 40) for i in range(3)])
    load_table(uri, "clinic.patients", people, key=["pid"])
    load_table(uri, "clinic.other", people.slice(0, 60), key=["pid"])
    # trust auth ignores the password: it stands for one that must never leak
    monkeypatch.setenv(
        "AIRFLOW_CONN_SKALD_TEST_PG",
        f"postgres://postgres:pw-never-shown-42@127.0.0.1:5432/{pg_db}",
    )
    monkeypatch.setenv("AIRFLOW_VAR_SKALD_TEST_KEY", KEY)
    monkeypatch.setenv("AIRFLOW__SKALD__ARTIFACTS", str(tmp_path / "artifacts"))
    body = config_dict(tmp_path / "unused", tmp_path / "out", chunk_rows=50)
    body["input"] = {"table": "clinic.patients", "connection": "skald_test_pg"}
    body["direct_identifiers"] = [{"pid": "pseudonymise"}, "name", "address"]
    body["pseudonym_key"] = {"variable": "skald_test_key"}
    body["memory"] = {"histogram_bins": 10**6}
    cfg = write_config(tmp_path / "skald.yaml", body)

    dag = DagBag(str(TESTS.parent / "dags" / "skald_from_postgres.py")).dags["skald_from_postgres"]
    conf = {name: param.value for name, param in PARAMS.items()}
    dr = dag.test(run_conf={**conf, "config": str(cfg), "k": 3, "input_table": "clinic.other"})
    assert dr.state == "success", {t.task_id: t.state for t in dr.get_task_instances()}
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["n_records"] == 60 and manifest["pseudonymised"] == ["pid"]
    assert manifest["settings"]["input"]["table"] == "clinic.other"
    assert not (tmp_path / ".out.skald-extract").exists()

    # the CLI from the same table (its URI in an environment variable, the key in another)
    monkeypatch.setenv("SKALD_TEST_PG_URI", uri)
    monkeypatch.setenv("SKALD_TEST_KEY_ENV", KEY)
    body["input"] = {"table": "clinic.other", "connection": "SKALD_TEST_PG_URI"}
    body["pseudonym_key"] = {"env": "SKALD_TEST_KEY_ENV"}
    body["output"]["path"] = str(tmp_path / "cli")
    runner.run(load_config(write_config(tmp_path / "cli.yaml", body), {"k": 3}))
    assert release_rows(tmp_path / "out") == release_rows(tmp_path / "cli")

    # the same DAG with `execution: postgresql` (issue 43 item 6, ADR 0070): the passes run in
    # PostgreSQL through the Airflow connection, which writes the release as a table; its rows
    # are the chunk path's, and `skald verify` judges it from PostgreSQL's counts
    from helpers_postgres import execute, query

    execute(uri, "CREATE SCHEMA research")
    body["input"] = {"table": "clinic.patients", "connection": "skald_test_pg"}
    body["pseudonym_key"] = {"variable": "skald_test_key"}
    body["output"] = {"table": "research.other_k3", "connection": "skald_test_pg"}
    engine_cfg = write_config(tmp_path / "engine.yaml", body)
    conf.update(config=str(engine_cfg), k=3, input_table="clinic.other", execution="postgresql")
    dr_engine = dag.test(run_conf=conf)
    assert dr_engine.state == "success", {
        t.task_id: t.state for t in dr_engine.get_task_instances()
    }
    folder = tmp_path / "artifacts" / "skald-releases" / "research.other_k3"
    engine_manifest = json.loads((folder / "manifest.json").read_text())
    assert engine_manifest["engine"] == "postgresql" and engine_manifest["n_records"] == 60
    assert engine_manifest["node"] == manifest["node"] and not list(folder.glob("part-*"))
    released = query(uri, "SELECT * FROM research.other_k3").to_pylist()
    assert _multiset(released) == _multiset(release_rows(tmp_path / "out"))
    assert verify_table_release(str(folder), lambda _: uri)["verified"] is True

    from airflow_skald.core.data.database.connection import table_uri
    from airflow_skald.operators.lineage import dataset

    # the input dataset as the operators name it: OpenLineage's PostgreSQL naming
    named = dataset(table_uri("postgres://postgres:pw@127.0.0.1:5432/" + pg_db, "clinic.other"))
    assert (named.namespace, named.name) == ("postgres://127.0.0.1:5432", f"{pg_db}.clinic.other")

    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        values = [
            str(r.value)
            for r in session.query(XComModel)
            .filter(XComModel.run_id.in_([dr.run_id, dr_engine.run_id]))
            .all()
        ]
    written = [p.read_bytes() for p in (tmp_path / "artifacts").rglob("*") if p.is_file()]
    written += [p.read_bytes() for p in (tmp_path / "out").rglob("*") if p.is_file()]
    for secret in ("pw-never-shown-42", KEY):
        assert not [v for v in values if secret in v]
        assert not [w for w in written if secret.encode() in w]


def _multiset(rows: list[dict]) -> Counter:
    return Counter(tuple(sorted(r.items())) for r in rows)
