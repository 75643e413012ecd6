"""A table released as a table by ``skald_from_postgres`` in the session's real deployment
(fixture ``dep``: api-server, scheduler, dag-processor, LocalExecutor), docs/design.md §2a:

- the connection is created through the REST API (its password stands for one that must never
  show: trust authentication ignores it); one DAG run reads ``clinic.patients`` and replaces
  ``research.patients_k3``;
- the table holds the release (its comment: the manifest's SHA-256), the manifest and report
  are in ``{artifacts}/skald-releases/research.patients_k3``, ``skald verify`` accepts it;
- the asset event is on the table's URI, the OpenLineage event names both tables as
  OpenLineage names PostgreSQL tables;
- a retry (the generalise task cleared) writes the same manifest bytes and rows, no second
  asset event;
- the password is in no XCom, task log, artifact, manifest, report or lineage event;
- ``skald_anonymise_mapped`` (the extraction in list_chunks, the chunks read by mapped tasks)
  from the same table into another table: the rows, manifest (the same input fingerprint) and
  Asset of ``skald_from_postgres``'s release.
"""

from __future__ import annotations

import hashlib
import json
import sys
import time
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))
sys.path.insert(0, str(Path(__file__).resolve().parent))

pytestmark = pytest.mark.deployment

DAG_ID = "skald_from_postgres"
PASSWORD = "pw-never-shown-7731"
TABLE = "research.patients_k3"


@pytest.fixture
def warehouse(pg_db):
    """clinic.patients and an empty schema research in a database of its own."""
    import pyarrow as pa
    from helpers_data import make_table
    from helpers_postgres import execute, load_table

    uri = f"postgresql://postgres@127.0.0.1:5432/{pg_db}"
    people = pa.concat_tables([make_table(40, seed=i, start=i * 40) for i in range(3)])
    load_table(uri, "clinic.patients", people, key=["pid"])
    execute(uri, "CREATE SCHEMA research")
    return pg_db


def _query(uri: str, sql: str) -> list[tuple]:
    import adbc_driver_postgresql.dbapi as pg

    with pg.connect(uri) as conn, conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetchall()


def _log(dep, run_id: str, task_id: str, try_number: int, dag_id: str = DAG_ID) -> str:
    import urllib.parse

    quoted = urllib.parse.quote(run_id, safe="")
    return json.dumps(
        dep.api(
            "GET",
            f"/dags/{dag_id}/dagRuns/{quoted}/taskInstances/{task_id}/logs/{try_number}"
            "?full_content=true",
        )["content"]
    )


def _connection(dep, connection_id: str, database: str) -> None:
    """A PostgreSQL connection made through the REST API, with a password that must never show
    (trust authentication ignores it)."""
    dep.api(
        "POST",
        "/connections",
        {
            "connection_id": connection_id,
            "conn_type": "postgres",
            "host": "127.0.0.1",
            "port": 5432,
            "login": "postgres",
            "password": PASSWORD,
            "schema": database,
        },
    )


def test_table_release_through_a_rest_api_connection(dep, deployment_workdir, warehouse, capsys):
    from helpers_data import config_dict, run_inprocess, write_config

    from airflow_skald.operators.dag_params import PARAMS

    _connection(dep, "skald_it_warehouse", warehouse)
    work = deployment_workdir / "table-release"
    body = config_dict(work / "unused", work / "unused-out", chunk_rows=50)
    body["input"] = {"table": "clinic.patients", "connection": "skald_it_warehouse"}
    body["output"] = {"table": "research.other", "connection": "skald_it_warehouse"}
    body["memory"] = {"histogram_bins": 10**6}
    cfg = write_config(work / "skald.yaml", body)
    conf = {name: param.value for name, param in PARAMS.items()}
    conf.update({"config": str(cfg), "k": 3, "output_table": TABLE})  # the param wins
    run_id = dep.trigger(DAG_ID, conf=conf)
    state = dep.wait_for_run(DAG_ID, run_id, timeout=240)
    tis = {t["task_id"]: t for t in dep.task_instances(DAG_ID, run_id)}
    assert state == "success", {k: t["state"] for k, t in tis.items()}

    uri = f"postgresql://postgres@127.0.0.1:5432/{warehouse}"
    folder = deployment_workdir / "artifacts" / "skald-releases" / TABLE
    manifest_bytes = (folder / "manifest.json").read_bytes()
    manifest = json.loads(manifest_bytes)
    assert manifest["k"] == 3 and manifest["n_records"] == 120
    assert manifest["output_table"] == {"table": TABLE, "connection": "skald_it_warehouse"}
    (comment,) = _query(uri, f"SELECT obj_description('{TABLE}'::regclass, 'pg_class')")[0]
    identity = json.loads(comment.removeprefix("skald release "))
    assert identity["manifest_sha256"] == hashlib.sha256(manifest_bytes).hexdigest()
    columns = [r[0] for r in _query(uri, "SELECT column_name::text FROM information_schema."
                                    "columns WHERE table_name = 'patients_k3'")]  # fmt: skip
    assert "pid" not in columns and "name" not in columns and "city" in columns
    assert _query(uri, f"SELECT count(*) FROM {TABLE}")[0][0] == 120
    assert not _query(uri, "SELECT 1 FROM pg_class WHERE relname LIKE 'patients_k3__skald%'")

    asset_uri = f"postgres://127.0.0.1:5432/{warehouse}/research/patients_k3"
    result = dep.xcom(DAG_ID, run_id, "generalise")
    assert result["release"] == asset_uri and result["release_folder"] == str(folder)
    events = dep.api("GET", f"/assets/events?source_dag_id={DAG_ID}&limit=100")["asset_events"]
    ours = [e for e in events if e["source_run_id"] == run_id]
    assert [e["uri"] for e in ours] == [asset_uri]
    assert ours[0]["extra"]["config_sha256"] == manifest["config_sha256"]

    lineage = deployment_workdir / "openlineage.jsonl"
    namespace = "postgres://127.0.0.1:5432"
    deadline, done = time.monotonic() + 60, []
    while not done:  # the listener writes after the task finished
        assert time.monotonic() < deadline
        time.sleep(1)
        lines = lineage.read_text().splitlines() if lineage.exists() else []
        done = [
            e
            for e in map(json.loads, lines)
            if e.get("eventType") == "COMPLETE"
            and e["job"]["name"] == f"{DAG_ID}.generalise"
            and e["run"]["facets"].get("skald_release")
            and e["outputs"]
            and e["outputs"][0]["name"] == f"{warehouse}.{TABLE}"
        ]
    assert [(d["namespace"], d["name"]) for d in done[0]["outputs"]] == [
        (namespace, f"{warehouse}.{TABLE}")
    ]
    assert [(d["namespace"], d["name"]) for d in done[0]["inputs"]] == [
        (namespace, f"{warehouse}.clinic.patients")
    ]

    # a retry: the generalise task cleared writes the same release again, no second event
    rows = _query(uri, f"SELECT * FROM {TABLE} ORDER BY 1, 2, 3, 4")
    dep.clear(DAG_ID, run_id, "generalise")
    state = dep.wait_for_run(DAG_ID, run_id, timeout=240)
    assert state == "success", [
        (e.get("event"), str(e.get("error_detail"))[:1500])
        for e in json.loads(_log(dep, run_id, "generalise", 2))
        if e.get("level") == "error"
    ]
    tis = {t["task_id"]: t for t in dep.task_instances(DAG_ID, run_id)}
    assert tis["generalise"]["try_number"] == 2
    assert (folder / "manifest.json").read_bytes() == manifest_bytes
    assert _query(uri, f"SELECT * FROM {TABLE} ORDER BY 1, 2, 3, 4") == rows
    events = dep.api("GET", f"/assets/events?source_dag_id={DAG_ID}&limit=100")["asset_events"]
    assert len([e for e in events if e["source_run_id"] == run_id]) == 1

    # the generalise task's link serves the release's manifest (from the run's artifacts)
    import urllib.parse
    import urllib.request

    quoted = urllib.parse.quote(run_id, safe="")
    links = dep.api("GET", f"/dags/{DAG_ID}/dagRuns/{quoted}/taskInstances/generalise/links")
    req = urllib.request.Request(
        links["extra_links"]["SKALD manifest"],
        headers={"Authorization": f"Bearer {dep.token()}"},
    )
    with urllib.request.urlopen(req, timeout=60) as resp:
        assert resp.read() == manifest_bytes

    # skald verify of the table release, the connection's URI given by the command line
    code, out, err = run_inprocess(["verify", str(folder), "--connection", uri], capsys)
    assert code == 0 and json.loads(out)["table"] == TABLE, err

    # the password nowhere
    logs = [_log(dep, run_id, t, n) for t in tis for n in range(1, tis[t]["try_number"] + 1)]
    xcoms = [json.dumps(dep.xcom(DAG_ID, run_id, t)) for t in tis]
    written = [p.read_bytes() for p in (deployment_workdir / "artifacts").rglob("*") if p.is_file()]
    assert any("research.patients_k3" in text for text in logs)  # the logs were read
    assert not [t for t in logs + xcoms if PASSWORD in t]
    assert not [w for w in written if PASSWORD.encode() in w]
    assert PASSWORD not in lineage.read_text()


def test_mapped_dag_releases_the_table_of_the_unmapped_one(dep, deployment_workdir, warehouse):
    """``skald_anonymise_mapped`` from the same table into a table release (its chunks read by
    mapped tasks, extracted once by list_chunks): the rows, the manifest and the Asset of the
    unmapped DAG's release of the same table, the staged chunks gone after the commit."""
    from helpers_data import config_dict, write_config
    from test_dags import stable

    from airflow_skald.operators.dag_params import PARAMS

    connection = "skald_it_mapped"
    _connection(dep, connection, warehouse)
    work = deployment_workdir / "mapped-table-release"
    body = config_dict(work / "unused", work / "unused-out", chunk_rows=50)  # 3 chunks
    body["input"] = {"table": "clinic.patients", "connection": connection}
    body["output"] = {"table": "research.unused", "connection": connection}
    body["memory"] = {"histogram_bins": 10**6}
    cfg = write_config(work / "skald.yaml", body)
    conf = {name: param.value for name, param in PARAMS.items()}
    conf.update({"config": str(cfg), "k": 3})
    tables = {"skald_from_postgres": "research.plain_k3", "skald_anonymise_mapped": "research.mapped_k3"}  # fmt: skip
    runs = {d: dep.trigger(d, conf={**conf, "output_table": t}) for d, t in tables.items()}
    for dag_id, run_id in runs.items():
        state = dep.wait_for_run(dag_id, run_id, timeout=300)
        tis = dep.task_instances(dag_id, run_id)
        assert state == "success", [(t["task_id"], t["map_index"], t["state"]) for t in tis]
    mapped = [t for t in dep.task_instances("skald_anonymise_mapped", runs["skald_anonymise_mapped"])
              if t["task_id"] == "generalise_chunks"]  # fmt: skip
    assert sorted(t["map_index"] for t in mapped) == [0, 1, 2]

    uri = f"postgresql://postgres@127.0.0.1:5432/{warehouse}"
    releases = deployment_workdir / "artifacts" / "skald-releases"
    manifests, rows = {}, {}
    for dag_id, table in tables.items():
        folder = releases / table
        data = (folder / "manifest.json").read_bytes()
        manifests[dag_id] = json.loads(data)
        (comment,) = _query(uri, f"SELECT obj_description('{table}'::regclass, 'pg_class')")[0]
        assert json.loads(comment.removeprefix("skald release "))["manifest_sha256"] == (
            hashlib.sha256(data).hexdigest()
        )
        rows[dag_id] = _query(uri, f"SELECT * FROM {table} ORDER BY 1, 2, 3, 4")
        assert not (releases / f".{table}.skald-extract").exists()  # the staged input: gone
        asset_uri = "postgres://127.0.0.1:5432/{}/{}".format(warehouse, table.replace(".", "/"))
        assert dep.xcom(dag_id, runs[dag_id], "generalise")["release"] == asset_uri
        events = dep.api("GET", f"/assets/events?source_dag_id={dag_id}&limit=100")
        ours = [e for e in events["asset_events"] if e["source_run_id"] == runs[dag_id]]
        assert [e["uri"] for e in ours] == [asset_uri]
        assert PASSWORD not in json.dumps(dep.xcom(dag_id, runs[dag_id], "generalise"))
    assert len(rows["skald_from_postgres"]) == 120
    assert rows["skald_anonymise_mapped"] == rows["skald_from_postgres"]
    a, b = (manifests[d] for d in tables)
    assert a["output_table"]["table"] == "research.plain_k3"
    assert b["output_table"] == {"table": "research.mapped_k3", "connection": connection}
    assert a["chunks"] == b["chunks"] == 3 and b["verified"] is True
    # the same input fingerprint and staged chunks (by name and version) though each run
    # staged them beside its own release folder; every figure the same
    assert [f["file"] for f in b["input_files"]] == [f"chunk-0000{i}.parquet" for i in range(3)]
    assert a["input_fingerprint"] == b["input_fingerprint"]
    for m in (a, b):  # each names its own table
        del m["output_table"], m["settings"]["output_table"]
    assert stable(a) == stable(b)
    for dag_id, run_id in runs.items():  # the password in no task log of either run
        for t in dep.task_instances(dag_id, run_id):
            if t["map_index"] == -1:
                assert PASSWORD not in _log(dep, run_id, t["task_id"], t["try_number"], dag_id)


def _lineage_events(path: Path, keep, timeout: float = 90) -> list[dict]:
    """The OpenLineage events of the deployment's file transport that `keep` selects (waits:
    the listener writes after the task finished)."""
    deadline = time.monotonic() + timeout
    while True:
        lines = path.read_text().splitlines() if path.exists() else []
        found = [e for e in map(json.loads, lines) if keep(e)]
        if found or time.monotonic() > deadline:
            return found
        time.sleep(1)


def test_replaced_table_release_report_where_and_a_missing_connection(
    dep, deployment_workdir, warehouse
):
    """Issue 40 item 6: a table release replaced by a later run (overwrite, another k): its
    report, as the plugin serves it, has the "replaced" banner naming that run (the newer
    release's report has none); the "Where" section of the written report names the input
    table and the release table (with their connections' names) and the records' folder. A run
    whose connection is missing fails, and its lineage FAIL event names the input table
    (the connection's id for its host), not the staging path."""
    import urllib.parse
    import urllib.request

    from helpers_data import config_dict, where_rows, write_config

    from airflow_skald.operators.dag_params import PARAMS

    connection, table = "skald_it_replaced", "research.replaced_k"
    _connection(dep, connection, warehouse)
    work = deployment_workdir / "replaced-table-release"
    body = config_dict(work / "unused", work / "unused-out", chunk_rows=50)
    body["input"] = {"table": "clinic.patients", "connection": connection}
    body["output"] = {"table": table, "connection": connection}
    body["memory"] = {"histogram_bins": 10**6}
    cfg = write_config(work / "skald.yaml", body)
    conf = {name: param.value for name, param in PARAMS.items()} | {"config": str(cfg)}
    runs = []
    for more in ({"k": 3}, {"k": 4, "overwrite": True}):
        runs.append(dep.trigger(DAG_ID, conf={**conf, **more}))
        assert dep.wait_for_run(DAG_ID, runs[-1], timeout=300) == "success"
    first, second = runs

    def served_report(run_id: str) -> str:
        quoted = urllib.parse.quote(run_id, safe="")
        url = f"{dep.base_url}/skald/releases/{DAG_ID}/{quoted}/report.html"
        req = urllib.request.Request(url, headers={"Authorization": f"Bearer {dep.token()}"})
        with urllib.request.urlopen(req, timeout=60) as resp:
            return resp.read().decode()

    asset_uri = f"postgres://127.0.0.1:5432/{warehouse}/research/replaced_k"
    replaced = served_report(first)
    assert (
        f"This release was replaced by run {DAG_ID}-{second}: {asset_uri} now holds another "
        "release." in replaced
    ), replaced[:2000]
    assert "k = 3" in replaced  # the first release's own report, under the banner
    assert "This release was replaced" not in served_report(second)

    folder = deployment_workdir / "artifacts" / "skald-releases" / table
    assert where_rows(folder / "report.html") == {
        "config file": str(cfg),
        "input table": f"clinic.patients through connection {connection}",
        "release table": f"{table} through connection {connection}",
        "release records": str(folder),
    }

    # a connection that does not exist: the run fails; the FAIL event names the table
    body["input"]["connection"] = body["output"]["connection"] = "skald_it_missing"
    missing = write_config(work / "missing.yaml", body)
    run_id = dep.trigger(DAG_ID, conf={**conf, "config": str(missing), "k": 3})
    assert dep.wait_for_run(DAG_ID, run_id, timeout=300) == "failed"
    assert "connection skald_it_missing: not found" in _log(dep, run_id, "encode", 1)
    failed = _lineage_events(
        deployment_workdir / "openlineage.jsonl",
        lambda e: (
            e.get("eventType") == "FAIL"
            and e["job"]["name"] == f"{DAG_ID}.encode"
            and run_id in json.dumps(e["run"].get("facets", {}))
        ),
    )
    assert failed, "no FAIL event of the encode task"
    for event in failed:
        assert [(d["namespace"], d["name"]) for d in event["inputs"]] == [
            ("postgres://skald_it_missing", "clinic.patients")
        ], event["inputs"]
