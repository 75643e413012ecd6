"""Both SKALD DAGs with releases and run artifacts on an S3 endpoint (issue 12 item 6).

An S3 server (moto's server mode) runs on a free 127.0.0.1 port. It is configured the way a
user configures a deployment (docker/docker-compose.yaml does the same with MinIO):

- the run artifacts go through Airflow's ``ObjectStoragePath`` (the Amazon provider) to
  ``AIRFLOW__SKALD__ARTIFACTS=s3://skald_s3@<bucket>/artifacts``, connection ``skald_s3``
  from ``AIRFLOW_CONN_SKALD_S3`` (JSON: key and secret, ``endpoint_url`` in its extra);
- the core reads inputs and writes releases through fsspec/s3fs, which take the standard
  ``AWS_*`` variables (``AWS_ENDPOINT_URL``, key, secret, region).

Input on local disk, output ``s3://<bucket>/releases/...``, runs with ``dag.test()``:

1. each DAG: release and manifest on S3, the run's artifacts on S3 under its prefix, nothing
   left beside them (staging, lease, commit marker, temporaries), the asset event on the
   ``s3://`` URI, ``skald verify s3://...`` passes; both DAGs release the same bytes;
2. a commit that fails after 3 of its 5 copies leaves no manifest at the output; a second run
   to the same output meanwhile is refused by the lease (nothing of the first touched); the
   retried task completes the release with the same bytes as an uninterrupted run.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
import time
import uuid
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))
sys.path.insert(0, str(Path(__file__).resolve().parent))
import test_dags  # noqa: E402
from helpers_data import run_subprocess  # noqa: E402
from helpers_s3 import ACCESS_KEY, REGION, SECRET_KEY, s3_server  # noqa: E402
from test_dags import return_value, run_dag, stable  # noqa: E402
from test_releases_page import _events_for  # noqa: E402

dagbag = test_dags.dagbag  # the session's DagBag fixture, shared

CONN_ID = "skald_s3"
DAGS = ("skald_anonymise", "skald_anonymise_mapped")
ARTIFACTS = {
    "plan.json",
    "decision.json",
    "manifest.json",
    "report.html",
    "run.json",
    "config/effective.json",
}


@pytest.fixture(scope="module")
def s3(airflow_home, tmp_path_factory):
    """The S3 server, a bucket, the Airflow connection and the artifacts root on it."""
    import s3fs

    with pytest.MonkeyPatch.context() as mp, s3_server(mp, tmp_path_factory.mktemp("aws")) as url:
        bucket = f"skald-{uuid.uuid4().hex[:10]}"
        s3fs.S3FileSystem().mkdir(bucket)
        connection = {
            "conn_type": "aws",
            "login": ACCESS_KEY,
            "password": SECRET_KEY,
            "extra": {"endpoint_url": url, "region_name": REGION},
        }
        mp.setenv(f"AIRFLOW_CONN_{CONN_ID.upper()}", json.dumps(connection))
        mp.setenv("AIRFLOW__SKALD__ARTIFACTS", f"s3://{CONN_ID}@{bucket}/artifacts")
        yield {"url": url, "bucket": bucket}


@pytest.fixture(scope="module")
def config(tmp_path_factory) -> Path:
    """3 chunks of the paper's synthetic dataset (3,000 rows) on local disk, and its config."""
    from airflow_skald.core.data.generate import generate_dataset

    return generate_dataset(3000, 1000, seed=3, out_dir=tmp_path_factory.mktemp("s3dag") / "in")


def _fs():
    import s3fs

    fs = s3fs.S3FileSystem()
    fs.invalidate_cache()
    return fs


def names(url: str) -> list[str]:
    """Every object under a prefix, relative to it."""
    path = url.split("://", 1)[-1].split("@", 1)[-1].rstrip("/")
    fs = _fs()
    return sorted(p[len(path) + 1 :] for p in fs.find(path)) if fs.exists(path) else []


def cat(url: str) -> bytes:
    return _fs().cat_file(url.split("://", 1)[-1].split("@", 1)[-1])


def parts(url: str) -> dict[str, bytes]:
    return {n: cat(f"{url}/{n}") for n in names(url) if n.startswith("part-")}


def retry_task(dag, run_id: str, task_id: str):
    """A "Clear" of one failed task of a run, as in the UI, then what the scheduler does with
    the run until it ends (in this process, the way ``dag.test()`` runs tasks)."""
    from airflow.models.dagrun import DagRun
    from airflow.sdk.definitions.dag import _run_task
    from airflow.serialization.serialized_objects import DagSerialization
    from airflow.utils.session import create_session
    from airflow.utils.state import DagRunState, TaskInstanceState
    from sqlalchemy import select

    scheduler_dag = DagSerialization.deserialize_dag(DagSerialization.serialize_dag(dag))
    scheduler_dag.clear(task_ids=[task_id], run_id=run_id)
    with create_session() as session:
        dr = session.scalar(
            select(DagRun).where(DagRun.dag_id == dag.dag_id, DagRun.run_id == run_id)
        )
        dr.dag = scheduler_dag
        dr.state = DagRunState.RUNNING
        session.commit()
        deadline = time.monotonic() + 120
        while dr.state == DagRunState.RUNNING:
            assert time.monotonic() < deadline, "the retried run did not finish"
            session.expire_all()
            schedulable, _ = dr.update_state(session=session)
            for ti in schedulable:
                ti.try_number += 1
                ti.state = TaskInstanceState.SCHEDULED
            session.commit()
            for ti in dr.get_task_instances(session=session):
                if ti.state == TaskInstanceState.SCHEDULED:
                    _run_task(ti=ti, task=dag.task_dict[ti.task_id])
        return dr


# --------------------------------------------------------------------------- both DAGs
@pytest.fixture(scope="module")
def releases(s3, dagbag, config) -> dict[str, dict]:
    """One release per DAG, both with k=10, to ``s3://<bucket>/releases/<dag_id>``."""
    done = {}
    for dag_id in DAGS:
        out = f"s3://{s3['bucket']}/releases/{dag_id}"
        dr = run_dag(dagbag, dag_id, {"config": str(config), "output_path": out, "k": 10})
        done[dag_id] = {"out": out, "run_id": dr.run_id, "result": return_value(dr, "generalise")}
    return done


@pytest.mark.parametrize("dag_id", DAGS)
def test_release_and_artifacts_on_s3(s3, releases, dag_id):
    from airflow.sdk import ObjectStoragePath

    from airflow_skald.operators.artifacts import safe_segment

    bucket, run = s3["bucket"], releases[dag_id]
    out, result = run["out"], run["result"]
    release = names(out)
    assert release == [
        "effective.json",
        "manifest.json",
        *(f"part-{i:05d}.parquet" for i in range(3)),
        "report.html",
        "run.json",
        "skald.yaml",
    ]
    manifest = json.loads(cat(f"{out}/manifest.json"))
    assert manifest["k"] == 10 and manifest["verified"] is True and manifest["chunks"] == 3
    assert result["release"] == out and result["verified"] is True

    # the run's artifacts: on S3 through the connection, under {artifacts}/{dag_id}/{run_id}/
    prefix = f"s3://{CONN_ID}@{bucket}/artifacts/{dag_id}/{safe_segment(run['run_id'])}"
    assert result["artifacts"] == prefix
    assert result["manifest"] == f"{prefix}/manifest.json"
    stored = names(prefix)
    assert set(stored) >= ARTIFACTS, stored
    assert not [n for n in stored if n.rsplit("/", 1)[-1].startswith(".")]  # no temporaries
    for name in ("manifest.json", "run.json", "report.html"):
        assert cat(f"{prefix}/{name}") == cat(f"{out}/{name}")
    root = ObjectStoragePath(prefix)  # ObjectStoragePath took the connection's endpoint
    assert root.conn_id == CONN_ID and root.fs.endpoint_url == s3["url"]
    assert (root / "decision.json").read_text() == cat(f"{prefix}/decision.json").decode()

    # nothing beside the release: no staging folder, lease or commit marker
    assert names(f"s3://{bucket}/releases") == sorted(
        f"{d}/{n}" for d in DAGS for n in names(releases[d]["out"])
    )

    # one asset event, on the s3:// URI of the release
    events = _events_for(out)
    assert [run_id for run_id, _ in events] == [run["run_id"]]
    extra = events[0][1]
    assert extra["release"] == out and extra["k"] == 10 and extra["verified"] is True

    checked = run_subprocess(["verify", out, "--k", "10"])
    assert checked.returncode == 0, checked.stderr
    report = json.loads(checked.stdout)
    assert report["verified"] is True and report["n_records"] == 3000


def test_both_dags_release_the_same_bytes(releases):
    a, b = (releases[d]["out"] for d in DAGS)
    assert parts(a) == parts(b) and len(parts(a)) == 3
    assert stable(json.loads(cat(f"{a}/manifest.json"))) == stable(
        json.loads(cat(f"{b}/manifest.json"))
    )


# --------------------------------------------------------------------------- a failed commit
class CommitCrash(OSError):
    """Stands for the connection dropping in the middle of the commit's copies."""


def test_crash_mid_commit_then_lease_then_retry(
    s3, dagbag, config, releases, monkeypatch, capfd, caplog
):
    from airflow_skald.core.release.write import commit as release
    from airflow_skald.core.release.write.commit import COMMIT_MARKER, staging_path
    from airflow_skald.core.release.write.lease import read_lease

    dag_id = "skald_anonymise_mapped"
    out = f"s3://{s3['bucket']}/releases/crashed"
    conf = {"config": str(config), "output_path": out, "k": 10}
    when = dt.datetime(2026, 2, 3, 4, 5, 6, tzinfo=dt.UTC)
    real, copies = release._copy_object, []

    def crashing(fs, src, dst):
        if len(copies) == 4:  # effective.json, 3 of 3 parts, ..., skald.yaml; the manifest last
            raise CommitCrash("injected: connection lost during the commit")
        copies.append(dst.rsplit("/", 1)[-1])
        real(fs, src, dst)

    generalise = dagbag.dags[dag_id].get_task("generalise")
    monkeypatch.setattr(generalise, "retries", 0)  # the retry is done below, by hand
    monkeypatch.setattr(release, "_copy_object", crashing)
    first = run_dag(dagbag, dag_id, conf, logical_date=when, expect="failed")
    monkeypatch.setattr(release, "_copy_object", real)

    # nothing at the output looks complete; the failed run freed its lease (issue 18: its
    # on_failure_callback), its verified staging folder stays for a retry
    left = names(out)
    assert "manifest.json" not in left and COMMIT_MARKER in left, left
    assert copies == [
        "effective.json",
        "part-00000.parquet",
        "part-00001.parquet",
        "part-00002.parquet",
    ]
    token = f"{dag_id}-{first.run_id}"
    assert read_lease(out) is None
    assert _events_for(out) == []
    staged = names(staging_path(out, token))  # whole and verified: what the retry commits
    assert staged == names(releases[dag_id]["out"]), staged

    # the retry: the failed task cleared (as in the UI) and run again within the same run
    retried = retry_task(dagbag.dags[dag_id], first.run_id, "generalise")
    assert retried.run_id == first.run_id and retried.state == "success"
    reference = releases[dag_id]["out"]
    assert parts(out) == parts(reference)
    manifest = json.loads(cat(f"{out}/manifest.json"))
    assert stable(manifest) == stable(json.loads(cat(f"{reference}/manifest.json")))
    assert manifest["run_token"] == token
    assert names(out) == names(reference)  # the marker is gone
    assert read_lease(out) is None
    assert [run_id for run_id, _ in _events_for(out)] == [first.run_id]
    siblings = [n for n in names(f"s3://{s3['bucket']}/releases") if not n.startswith("skald_")]
    assert siblings == [f"crashed/{n}" for n in names(out)]  # no staging, no lease
