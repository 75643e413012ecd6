"""A table as the release (docs/design.md §2a), on a real PostgreSQL through ADBC:

- the table holds the rows of the same release written as a folder; the release folder holds
  the manifest and report (no rows), the table's comment the manifest's SHA-256; `skald
  verify FOLDER` re-checks the table and fails on a changed row or another release in it;
- the folder's replacement rules: an identical rerun replaces it, another k is refused
  without overwrite, a foreign table is never replaced, a stale retry does not roll a newer
  release back, a second writer is refused while one holds the table;
- kill -9 during the swap (a real process, blocked inside its swap transaction) leaves the
  previous table intact and queryable; the next run clears what it left.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers_data import REPO, config_dict, release_rows, run_inprocess, write_config
from helpers_postgres import execute, load_table, people

from airflow_skald.core.config.run_config import config_from_dict
from airflow_skald.core.errors import DataError
from airflow_skald.core.run import runner

TABLE = "research.people_k3"


def _config(tmp_path: Path, k: int = 3, **output) -> dict:
    cfg = config_dict(tmp_path / "people.parquet", tmp_path / "unused", k=k, chunk_rows=50)
    folder = {"path": str(tmp_path / "release")}
    cfg["output"] = {"table": TABLE, "connection": "SKALD_TEST_DB", **folder, **output}
    cfg["memory"] = {"histogram_bins": 10**6}
    return cfg


def _query(uri: str, sql: str) -> list[tuple]:
    import adbc_driver_postgresql.dbapi as pg

    with pg.connect(uri) as conn, conn.cursor() as cur:
        cur.execute(sql)
        return cur.fetchall()


def _rows(uri: str, table: str = TABLE) -> list[tuple]:
    import adbc_driver_postgresql.dbapi as pg

    with pg.connect(uri) as conn, conn.cursor() as cur:
        cur.execute(f"SELECT * FROM {table}")
        return sorted(tuple(r.values()) for r in cur.fetch_arrow_table().to_pylist())


def _comment(uri: str, table: str = TABLE) -> dict:
    (text,) = _query(uri, f"SELECT obj_description('{table}'::regclass, 'pg_class')")[0]
    assert text.startswith("skald release ")
    return json.loads(text[len("skald release ") :])


def _tables(uri: str) -> list[str]:
    rows = _query(uri, "SELECT relname::text FROM pg_class WHERE relnamespace = "
                  "'research'::regnamespace AND relkind = 'r' ORDER BY 1")  # fmt: skip
    return [r[0] for r in rows]


def test_table_release_holds_the_folder_release_and_verifies(
    tmp_path, warehouse, capsys, monkeypatch
):
    monkeypatch.setenv("SKALD_TEST_KEY", "table-release-key-0123456789")
    pseudonyms = {
        "direct_identifiers": [{"pid": "pseudonymise"}, "name", "address"],
        "pseudonym_key": {"env": "SKALD_TEST_KEY"},
    }
    folder_cfg = config_dict(tmp_path / "people.parquet", tmp_path / "as-folder", chunk_rows=50)
    folder_cfg.update(memory={"histogram_bins": 10**6}, **pseudonyms)
    expected = runner.run(config_from_dict(folder_cfg))
    body = {**_config(tmp_path), **pseudonyms}
    del body["output"]["path"]
    cfg = write_config(tmp_path / "skald.yaml", body)
    code, out, err = run_inprocess(["run", str(cfg), "-q"], capsys)
    assert code == 0, err
    summary = json.loads(out)
    folder = tmp_path / "skald-releases" / TABLE  # the default release folder
    assert summary["table"] == TABLE and summary["release"] == str(folder)
    manifest_bytes = (folder / "manifest.json").read_bytes()
    manifest = json.loads(manifest_bytes)
    assert manifest["node"] == expected["node"] and manifest["dm_star"] == expected["dm_star"]
    assert manifest["output_table"] == {"table": TABLE, "connection": "SKALD_TEST_DB"}
    assert (folder / "report.html").exists() and not list(folder.glob("part-*"))
    rows = _rows(warehouse)
    assert rows == sorted(tuple(r.values()) for r in release_rows(tmp_path / "as-folder"))
    columns = [r[0] for r in _query(warehouse, "SELECT column_name::text FROM information_schema"
                                    ".columns WHERE table_name = 'people_k3' ORDER BY ordinal_position")]  # fmt: skip
    assert "name" not in columns and "address" not in columns and columns[0] == "pid"
    assert all(len(r[0]) == 64 and not r[0].startswith("P0") for r in rows)  # pseudonyms only
    comment = _comment(warehouse)
    assert comment["manifest_sha256"] == hashlib.sha256(manifest_bytes).hexdigest()
    assert comment["run_token"] == manifest["run_token"] and comment["k"] == 3
    assert _tables(warehouse) == ["people_k3"]  # no new/old table left
    assert sorted(p.name for p in folder.parent.iterdir()) == [TABLE]  # no staging, no lease

    code, out, err = run_inprocess(["verify", str(folder)], capsys)
    assert code == 0, err
    report = json.loads(out)
    assert report["verified"] is True and report["table"] == TABLE
    assert report["n_records"] == 120 and report["min_class_size"] >= 3
    # a raw identifier in place of a pseudonym, counted by PostgreSQL (ADR 0070)
    execute(warehouse, f"UPDATE {TABLE} SET pid = 'P0001' WHERE ctid = (SELECT min(ctid) FROM {TABLE})")  # fmt: skip
    code, _, err = run_inprocess(["verify", str(folder)], capsys)
    assert code == 1 and f"column 'pid' in output table {TABLE} holds a value that is not a pseudonym" in err, err  # fmt: skip
    # the checks of a folder release: a row gone from the table fails it
    execute(warehouse, f"DELETE FROM {TABLE} WHERE ctid = (SELECT min(ctid) FROM {TABLE})")
    code, _, err = run_inprocess(["verify", str(folder)], capsys)
    assert code == 1 and f"output table {TABLE} has 119 rows but manifest.json" in err, err
    # another release in the table than the folder's manifest
    execute(warehouse, f"COMMENT ON TABLE {TABLE} IS 'skald release "
            '{"manifest_sha256": "00", "run_token": "x"}\'')  # fmt: skip
    code, _, err = run_inprocess(["verify", str(folder)], capsys)
    assert code == 1 and "holds another release than the manifest.json" in err


def test_replacement_rules_of_a_folder_release(tmp_path, warehouse, capsys, monkeypatch):
    first = runner.run(config_from_dict(_config(tmp_path)))
    execute(warehouse, f"GRANT SELECT ON {TABLE} TO PUBLIC")  # readers keep their access
    again = runner.run(config_from_dict(_config(tmp_path)))  # an identical rerun
    assert again["run_token"] != first["run_token"]
    assert _comment(warehouse)["run_token"] == again["run_token"]
    (acl,) = _query(warehouse, f"SELECT relacl::text FROM pg_class WHERE oid = '{TABLE}'::regclass")
    assert "=r/" in acl[0]  # PUBLIC's SELECT, granted on the table it replaced
    with pytest.raises(DataError, match=f"output table {TABLE} holds a release made with k=3"):
        runner.run(config_from_dict(_config(tmp_path, k=5)))
    assert _comment(warehouse)["run_token"] == again["run_token"]
    cfg = config_from_dict({**_config(tmp_path, k=5)}).with_overrides({"overwrite": True})
    assert runner.run(cfg)["k"] == 5 and _comment(warehouse)["k"] == 5
    # a table that is not a skald release is never replaced, overwrite or not
    load_table(warehouse, "research.foreign", people(40))
    foreign = _config(tmp_path, path=str(tmp_path / "foreign-release"))
    foreign["output"]["table"] = "research.foreign"
    with pytest.raises(DataError, match="exists and is not a skald release"):
        runner.run(config_from_dict(foreign).with_overrides({"overwrite": True}))
    assert len(_rows(warehouse, "research.foreign")) == 40
    missing = _config(tmp_path)
    missing["output"]["table"] = "nowhere.people"
    cfg = write_config(tmp_path / "missing.yaml", missing)
    code, _, err = run_inprocess(["run", str(cfg), "-q"], capsys)
    assert code == 2 and err.strip() == (
        "skald: error: output table nowhere.people: schema nowhere does not exist"
    )
    # a connection that fails: one line, never its password, nothing read or written
    bad_uri = warehouse.replace("postgres@", "postgres:s3cret-pw@") + "_nodb"
    monkeypatch.setenv("SKALD_BAD_DB", bad_uri)
    bad = _config(tmp_path, path=str(tmp_path / "bad-release"))
    bad["output"]["connection"] = "SKALD_BAD_DB"
    code, _, err = run_inprocess(["run", str(write_config(tmp_path / "bad.yaml", bad))], capsys)
    assert code == 2 and "cannot read output table research.people_k3" in err, err
    assert "s3cret-pw" not in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "bad-release").exists()


def test_stale_retry_and_a_second_writer_are_refused(tmp_path, warehouse):
    runner.run(config_from_dict(_config(tmp_path)))
    # a run that began (it recorded the release in place) ...
    stale = runner.Run(config_from_dict(_config(tmp_path, k=4)).with_overrides({"overwrite": True}))
    runner.layout(stale)
    stale.check_target()
    # ... while another run replaced that release
    newer = runner.run(config_from_dict(_config(tmp_path, k=5)).with_overrides({"overwrite": True}))
    with pytest.raises(DataError, match=f"output table {TABLE} was replaced by run"):
        runner.run_local(stale, (runner.ENCODE, runner.HISTOGRAM_PHASE, runner.GENERALISE))
    assert _comment(warehouse)["run_token"] == newer["run_token"]
    # a second writer while another session writes the table (holds its advisory lock)
    import adbc_driver_postgresql.dbapi as pg

    with pg.connect(warehouse) as holder, holder.cursor() as cur:
        cur.execute(f"SELECT pg_advisory_lock(hashtext('skald-release:{TABLE}'))")
        cur.fetchall()
        holder.commit()
        cfg = config_from_dict(_config(tmp_path, k=6)).with_overrides({"overwrite": True})
        with pytest.raises(DataError, match="is being written by another run"):
            runner.run(cfg)
    assert _comment(warehouse)["run_token"] == newer["run_token"]
    assert _tables(warehouse) == ["people_k3"]


def test_kill_9_during_the_swap_leaves_the_previous_table(tmp_path, warehouse):
    import adbc_driver_postgresql.dbapi as pg

    before = runner.run(config_from_dict(_config(tmp_path)))
    rows = _rows(warehouse)
    cfg = write_config(tmp_path / "k5.yaml", _config(tmp_path, k=5))
    env = dict(os.environ, PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with pg.connect(warehouse) as reader, reader.cursor() as cur:
        cur.execute(f"SELECT count(*) FROM {TABLE}")  # a reader: its lock blocks the DROP
        cur.fetchall()
        proc = subprocess.Popen(
            [sys.executable, "-m", "airflow_skald.cli", "run", str(cfg), "-q", "--overwrite"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        try:
            deadline = time.monotonic() + 120
            while not _waits_in_swap(warehouse):  # its swap transaction waits on our lock
                assert proc.poll() is None, proc.stderr.read().decode()
                assert time.monotonic() < deadline, "the run never reached its swap"
                time.sleep(0.05)
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(30)
        finally:
            if proc.poll() is None:
                proc.kill()
        reader.commit()  # the blocked DROP may now run, in a transaction that never commits
    for _ in range(200):  # the killed client's backend ends, its transaction rolled back
        if not _query(warehouse, "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = "
                      "'Lock' OR query LIKE 'DROP TABLE%people_k3%'"):  # fmt: skip
            break
        time.sleep(0.05)
    assert _rows(warehouse) == rows  # the previous release, intact and queryable
    assert _comment(warehouse)["run_token"] == before["run_token"]
    assert any("__skald_new_" in t for t in _tables(warehouse))  # its new table: debris
    after = runner.run(config_from_dict(_config(tmp_path, k=5)).with_overrides({"overwrite": True}))
    assert _comment(warehouse)["run_token"] == after["run_token"]
    assert _tables(warehouse) == ["people_k3"]  # the debris dropped by the next writer


def _waits_in_swap(uri: str) -> bool:
    return bool(
        _query(
            uri,
            "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
            "AND query LIKE 'DROP TABLE%people_k3%'",
        )
    )


def test_drop_mode_with_t_closeness_and_per_chunk_table_releases_verify(tmp_path, warehouse):
    from airflow_skald.core.data.database.connection import resolve_uri
    from airflow_skald.core.engine.sql.table_counts import verify_table_release
    from airflow_skald.core.run.baseline import run_per_chunk

    body = _config(tmp_path, path=str(tmp_path / "dropped"))
    body["suppressed_records"] = "drop"  # verify needs the input's distributions: kept beside
    body["privacy"]["t_closeness"] = [{"attribute": "disease", "t": 0.6, "distance": "equal"}]
    manifest = runner.run(config_from_dict(body))
    assert len(_rows(warehouse)) == 120 - manifest["n_suppressed"]
    assert verify_table_release(str(tmp_path / "dropped"), resolve_uri)["verified"] is True
    per_chunk = _config(tmp_path, path=str(tmp_path / "per-chunk"), table="research.per_chunk")
    run_per_chunk(config_from_dict(per_chunk))
    assert verify_table_release(str(tmp_path / "per-chunk"), resolve_uri)["verified"] is True
    assert len(_rows(warehouse, "research.per_chunk")) == 120
