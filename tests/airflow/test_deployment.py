"""Real deployments: separate Airflow processes, DAG runs triggered through the REST API v2.

(a) LocalExecutor (the session's shared deployment, PostgreSQL); (b) CeleryExecutor with two workers, Redis broker, PostgreSQL
metadata DB (this machine's and CI's services on 127.0.0.1, each test in its own database and
Redis index, removed after). Both run ``skald_anonymise_mapped`` from ``dags/`` on generated
data and check the release against the core run in-process. Every process is stopped by its
process group, checked after.
"""

from __future__ import annotations

import importlib.util
import json
import urllib.request
from pathlib import Path

import pytest
from deploy import Deployment, DeploymentError, pg_database, redis_db

pytestmark = pytest.mark.deployment

REPO = Path(__file__).resolve().parents[2]
DAG_ID = "skald_anonymise_mapped"
SPREAD_OVER_WORKERS = True  # two long tests, each on its own deployment (tests/conftest.py)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    from airflow_skald.core.data.generate import generate_dataset

    return generate_dataset(4000, 1000, seed=3, out_dir=tmp_path_factory.mktemp("dep") / "data")


@pytest.fixture(scope="module")
def reference(dataset, tmp_path_factory) -> tuple[dict, dict[str, bytes]]:
    """The same release made by the core in this process (the CLI's path)."""
    from airflow_skald.core.config.run_config import load_config
    from airflow_skald.core.run.runner import run

    out = tmp_path_factory.mktemp("ref") / "release"
    manifest = run(load_config(dataset, overrides={"k": 10, "output_path": str(out)}))
    return manifest, parts(out)


def parts(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("part-*"))}


def artifact_bytes(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes()
        for p in sorted(root.rglob("*"))
        # timings, the run record and the report (which shows them) differ between attempts;
        # the manifest is deterministic and compared too
        if p.is_file() and "timings" not in p.parts and p.name not in ("run.json", "report.html")
    }


def run_mapped(dep: Deployment, dataset: Path, out: Path, reference) -> tuple[str, list[dict]]:
    dep.wait_for_dag(DAG_ID)
    run_id = dep.trigger(DAG_ID, conf={"config": str(dataset), "output_path": str(out), "k": 10})
    state = dep.wait_for_run(DAG_ID, run_id, timeout=240)
    tis = dep.task_instances(DAG_ID, run_id)
    assert state == "success", (
        [(t["task_id"], t["map_index"], t["state"]) for t in tis],
        dep.logs(),
    )
    mapped = [t for t in tis if t["map_index"] >= 0]
    assert len(mapped) == 3 * 4  # three phases x four chunks
    result = dep.xcom(DAG_ID, run_id, "generalise")
    assert result["verified"] is True and result["dm_star"] == reference[0]["dm_star"]
    assert result["node"] == reference[0]["node"]
    assert parts(out) == reference[1]
    return run_id, tis


def test_mapped_dag_on_the_shared_deployment(dep, deployment_workdir, dataset, reference, tmp_path):
    """LocalExecutor (the session's shared deployment, PostgreSQL): trigger with conf, extra
    link, invalid conf refused, clear+rerun. (The mapped DAG ran on a LocalExecutor deployment
    of its own, on SQLite, until the suite outgrew its budget: every ``dag.test()`` here runs on
    SQLite, and a second deployment cost a worker a minute.)"""
    mapped_runs = deployment_workdir / "artifacts" / DAG_ID
    before_runs = set(mapped_runs.iterdir()) if mapped_runs.is_dir() else set()
    out = tmp_path / "release"
    run_id, _ = run_mapped(dep, dataset, out, reference)

    # A wrong type or an out-of-range number is refused by the trigger (Param schema, HTTP
    # 400), the bounds written so the UI form cannot clamp to them (test_run_safety.py)
    for bad in ({"k": "abc"}, {"suppression_limit": "lots"}, {"k": 1}):
        with pytest.raises(DeploymentError, match="400"):
            dep.api("POST", f"/dags/{DAG_ID}/dagRuns", {"logical_date": None, "conf": bad})

    # the task's extra link points at the plugin view, which serves the manifest (auth'd)
    links = dep.api("GET", f"/dags/{DAG_ID}/dagRuns/{run_id}/taskInstances/generalise/links")
    url = links["extra_links"]["SKALD manifest"]
    assert url.startswith(dep.base_url + "/skald/releases/")
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {dep.token()}"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        served = json.loads(resp.read())
    assert served["dm_star"] == reference[0]["dm_star"]
    with pytest.raises(urllib.error.HTTPError) as denied:
        urllib.request.urlopen(url, timeout=30)
    assert denied.value.code in (401, 403)

    # Airflow "clear" of phase 2 and everything downstream: identical artifacts and release
    (run_dir,) = set(mapped_runs.iterdir()) - before_runs
    before = artifact_bytes(run_dir)
    dep.api(
        "POST",
        f"/dags/{DAG_ID}/clearTaskInstances",
        {
            "dry_run": False,
            "dag_run_id": run_id,
            "task_ids": ["histogram_chunks", "histogram_lattice"],
            "include_downstream": True,
            "only_failed": False,
            "reset_dag_runs": True,
        },
    )
    assert dep.wait_for_run(DAG_ID, run_id, timeout=180) == "success"
    tis = dep.task_instances(DAG_ID, run_id)
    retried = {t["task_id"] for t in tis if t["try_number"] >= 2}
    assert retried >= {"histogram_lattice", "generalise_chunks", "generalise"}
    assert artifact_bytes(run_dir) == before
    assert parts(out) == reference[1]


def test_celery_two_workers_postgres_redis(dataset, reference, tmp_path):
    """CeleryExecutor, Redis broker, PostgreSQL DB: mapped instances ran on both workers."""
    if importlib.util.find_spec("asyncpg") is None:
        pytest.fail(
            "asyncpg is not installed: Airflow 3.3's api-server needs it for a PostgreSQL "
            "metadata DB (install airflow-skald[celery])"
        )
    out = tmp_path / "release"
    with pg_database() as pg_url, redis_db() as broker:
        with Deployment(
            dags_folder=REPO / "dags",
            executor="CeleryExecutor",
            sql_alchemy_conn=pg_url,
            broker_url=broker,
            result_backend=f"db+{pg_url}",
            workers=("worker1", "worker2"),
            extra_env={"AIRFLOW__SKALD__ARTIFACTS": str(tmp_path / "artifacts")},
        ) as dep:
            _, tis = run_mapped(dep, dataset, out, reference)
        assert dep.alive_groups() == []
    hosts = {t["hostname"] for t in tis if t["map_index"] >= 0}
    assert hosts == {"worker1", "worker2"}, sorted(
        (t["task_id"], t["map_index"], t["hostname"]) for t in tis
    )
