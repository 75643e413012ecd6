"""What a killed table release leaves, and who removes it (issue 40 item 6), on a real
PostgreSQL with real processes killed by SIGKILL:

- killed during the read-back of its new table, a run leaves the rows it read back in a
  private folder (0700) beside the release folder, never in the system's temporary folder;
  its retry removes them and publishes;
- killed just after its swap committed, a run leaves the table holding its release and its
  records in its staging folder: the next run on the output (even one that is refused)
  commits those records into the release folder, which then describes the table again, and
  nothing is left beside it (staging, lease, read-back); the run's own retry publishes its
  release again, leaving nothing either;
- a run that may not replace the table release is refused before its database input is read,
  in one line naming the table and what to set.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from helpers_data import REPO, config_dict, run_inprocess, write_config
from helpers_postgres import execute, load_table, people

from airflow_skald.core.config.run_config import config_from_dict
from airflow_skald.core.run import runner

TABLE = "research.people_k3"

# A run in its own process, killed by SIGKILL right after `TableWriter.<step>` returned.
_KILLED_AFTER = """
import json, os, signal, sys
from airflow_skald.core.data.database import release_table
from airflow_skald.core.config.run_config import config_from_dict
from airflow_skald.core.run import runner

step = sys.argv[1]
original = getattr(release_table.TableWriter, step)

def killed(*args, **kwargs):
    original(*args, **kwargs)
    os.kill(os.getpid(), signal.SIGKILL)

setattr(release_table.TableWriter, step, killed)
config = config_from_dict(json.loads(sys.argv[2])).with_overrides({"overwrite": True})
runner.run(config, token=sys.argv[3])
"""


def _config(tmp_path: Path, k: int = 3) -> dict:
    cfg = config_dict(tmp_path / "people.parquet", tmp_path / "unused", k=k, chunk_rows=50)
    cfg["output"] = {"table": TABLE, "connection": "SKALD_TEST_DB", "path": str(tmp_path / "rel")}
    cfg["memory"] = {"histogram_bins": 10**6}
    return cfg


def _comment(uri: str) -> dict:
    import adbc_driver_postgresql.dbapi as pg

    with pg.connect(uri) as conn, conn.cursor() as cur:
        cur.execute(f"SELECT obj_description('{TABLE}'::regclass, 'pg_class')")
        text = cur.fetchone()[0]
    return json.loads(text[len("skald release ") :])


def _killed_after(step: str, cfg: dict, token: str, systemp: Path) -> None:
    env = dict(os.environ, TMPDIR=str(systemp))
    env["PYTHONPATH"] = str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", "")
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED_AFTER, step, json.dumps(cfg), token],
        env=env,
        capture_output=True,
        timeout=300,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode()


def _beside(tmp_path: Path) -> list[str]:
    """What is beside the release folder ``rel`` (its staging, lease, read-back...)."""
    return sorted(p.name for p in tmp_path.iterdir() if p.name.startswith((".rel", "rel")))


@pytest.fixture
def systemp(tmp_path, monkeypatch) -> Path:
    """The system's temporary folder of the runs (the killed one's and the retry's)."""
    folder = tmp_path / "systemp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


def test_kill_9_during_the_read_back_then_the_retry_removes_its_rows(tmp_path, warehouse, systemp):
    runner.run(config_from_dict(_config(tmp_path)))
    _killed_after("read_back", _config(tmp_path, k=5), "run-a", systemp)
    left = tmp_path / ".rel.skald-read-back-run-a"  # the rows read back: beside the output
    assert sorted(p.name for p in left.iterdir()) == [f"part-{i:05d}.parquet" for i in range(3)]
    assert stat.S_IMODE(left.stat().st_mode) == 0o700
    assert list(systemp.iterdir()) == []  # nothing in the system's temporary folder
    retry = runner.run(
        config_from_dict(_config(tmp_path, k=5)).with_overrides({"overwrite": True}), token="run-a"
    )
    assert _comment(warehouse)["run_token"] == retry["run_token"] == "run-a"
    assert _beside(tmp_path) == ["rel"] and list(systemp.iterdir()) == []


def test_kill_9_just_after_the_swap_then_the_next_run_completes_and_clears(
    tmp_path, warehouse, systemp, capsys
):
    runner.run(config_from_dict(_config(tmp_path)))
    _killed_after("swap", _config(tmp_path, k=5), "run-b", systemp)
    assert _comment(warehouse)["run_token"] == "run-b"  # the swap committed
    assert ".rel.skald-staging-run-b" in _beside(tmp_path)  # its records, not in place
    # the next run, refused (another k, no overwrite), still puts the table's records in
    # place and removes what the killed run left
    cfg = write_config(tmp_path / "k7.yaml", _config(tmp_path, k=7))
    code, _, err = run_inprocess(["run", str(cfg), "-q"], capsys)
    assert code == 2 and f"output table {TABLE} holds a release made with k=5 by run run-b" in err
    manifest = (tmp_path / "rel" / "manifest.json").read_bytes()
    assert hashlib.sha256(manifest).hexdigest() == _comment(warehouse)["manifest_sha256"]
    assert json.loads(manifest)["k"] == 5 and not list((tmp_path / "rel").glob("part-*"))
    assert _beside(tmp_path) == ["rel"]
    code, out, err = run_inprocess(["verify", str(tmp_path / "rel")], capsys)
    assert code == 0 and json.loads(out)["verified"] is True, err
    # killed again just after its swap: the run's retry publishes its own release again
    _killed_after("swap", _config(tmp_path, k=6), "run-c", systemp)
    cfg = config_from_dict(_config(tmp_path, k=6)).with_overrides({"overwrite": True})
    retry = runner.run(cfg, token="run-c")
    manifest = (tmp_path / "rel" / "manifest.json").read_bytes()
    assert hashlib.sha256(manifest).hexdigest() == _comment(warehouse)["manifest_sha256"]
    assert json.loads(manifest)["run_token"] == retry["run_token"] == "run-c"
    assert _beside(tmp_path) == ["rel"] and list(systemp.iterdir()) == []


def test_a_refused_replacement_comes_before_the_input_is_read(tmp_path, warehouse, capsys):
    load_table(warehouse, "clinic.patients", people(), key=["pid"])
    body = _config(tmp_path)
    body["input"] = {"table": "clinic.patients", "connection": "SKALD_TEST_DB"}
    first = runner.run(config_from_dict(body))
    execute(warehouse, "DROP TABLE clinic.patients")  # a read of the input would fail
    body["privacy"]["k"] = 5
    code, _, err = run_inprocess(["run", str(write_config(tmp_path / "k5.yaml", body))], capsys)
    config_sha = _comment(warehouse)["config_sha256"][:12]
    assert code == 2 and err.startswith(
        f"skald: error: output table {TABLE} holds a release made with k=3 by run "
        f"{first['run_token']} (config {config_sha}); this run has k=5, config "
    ), err
    assert err.rstrip().endswith("pass --overwrite (DAG param overwrite) to replace it")
    assert len(err.strip().splitlines()) == 1 and "does not exist" not in err
