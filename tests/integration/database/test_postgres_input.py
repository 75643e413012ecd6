"""A PostgreSQL table or query as the input (docs/design.md §2a), on a real server through ADBC:

- a table released equals the same rows released from Parquet files, however chunked; the
  staged chunks are cut at chunk_rows and hold the rows in key order;
- Adult loaded into PostgreSQL gives the node and the released rows (in key order) of Adult
  released from ARX's CSV, released as files or as a table;
- refusals (no order, a password in the config, a missing variable) are one line, exit 2,
  never quoting a password; the staged chunks are gone once the run is over, and what a
  killed run left is replaced, never read.
"""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from helpers_data import config_dict, make_table, release_rows, run_inprocess, write_config
from helpers_postgres import execute, load_table
from skald_testdata import ADULT_CSV, adult_config

from airflow_skald.core.config.run_config import config_from_dict
from airflow_skald.core.data.database.extract import extract
from airflow_skald.core.data.database.source import DatabaseSource
from airflow_skald.core.errors import DataError
from airflow_skald.core.run import runner


def _people(n: int = 120) -> pa.Table:
    return pa.concat_tables([make_table(40, seed=i, start=i * 40) for i in range(n // 40)])


def _table_config(tmp_path: Path, out: str, env: str, chunk_rows: int, **source) -> dict:
    cfg = config_dict(tmp_path / "unused", tmp_path / out, chunk_rows=chunk_rows)
    cfg["input"] = {"table": "clinic.patients", "connection": env, **source}
    cfg["memory"] = {"histogram_bins": 10**6}  # the same root however chunked
    return cfg


def test_table_release_equals_the_file_release_however_chunked(tmp_path, pg_uri, monkeypatch):
    people = _people()
    shuffled = people.take(pa.array(list(range(119, -1, -1))))  # stored out of key order
    load_table(pg_uri, "clinic.patients", shuffled, key=["pid"])
    monkeypatch.setenv("SKALD_TEST_DB", pg_uri)
    pq.write_table(people, tmp_path / "people.parquet")  # the same rows, in key order
    files = config_dict(tmp_path / "people.parquet", tmp_path / "from-file", chunk_rows=50)
    files["memory"] = {"histogram_bins": 10**6}
    expected = runner.run(config_from_dict(files))
    by_chunks = {}
    for chunk_rows in (1000, 50, 7):
        out = f"from-table-{chunk_rows}"
        manifest = runner.run(
            config_from_dict(_table_config(tmp_path, out, "SKALD_TEST_DB", chunk_rows))
        )
        assert manifest["node"] == expected["node"]
        assert manifest["n_suppressed"] == expected["n_suppressed"]
        assert manifest["chunks"] == -(-120 // chunk_rows)
        by_chunks[chunk_rows] = release_rows(tmp_path / out)
        assert not (tmp_path / f".{out}.skald-extract").exists()  # staged input deleted
        assert sorted(p.name for p in tmp_path.iterdir() if out in p.name) == [out]
        settings = manifest["settings"]["input"]
        assert settings == {
            "connection": "SKALD_TEST_DB",
            "table": "clinic.patients",
            "order_by": [],
        }
    assert by_chunks[1000] == by_chunks[50] == by_chunks[7] == release_rows(tmp_path / "from-file")


def test_staged_chunks_are_cut_at_chunk_rows_in_key_order(tmp_path, pg_uri) -> None:
    people = _people()
    load_table(pg_uri, "clinic.patients", people.take(pa.array(range(119, -1, -1))), ["pid"])
    source = DatabaseSource("db", table="clinic.patients")
    chunks = extract(source, pg_uri, 50, str(tmp_path / "staged"))
    assert [c.n_rows for c in chunks] == [50, 50, 20]
    staged = pa.concat_tables([pq.read_table(c.file) for c in chunks])
    assert staged.column("pid").to_pylist() == people.column("pid").to_pylist()
    for c in chunks:  # one row group each; the version is the bytes' hash
        assert pq.ParquetFile(c.file).metadata.num_row_groups == 1
        assert c.version.startswith("sha256:")
    again = extract(source, pg_uri, 50, str(tmp_path / "staged"))
    assert [c.version for c in again] == [c.version for c in chunks]  # same rows, same bytes
    query = DatabaseSource(
        "db", sql="SELECT pid, age FROM clinic.patients", order_by=("age", "pid")
    )
    rows = pa.concat_tables(
        [pq.read_table(c.file) for c in extract(query, pg_uri, 33, str(tmp_path / "q"))]
    )
    assert rows.to_pylist() == sorted(
        people.select(["pid", "age"]).to_pylist(), key=lambda r: (r["age"], r["pid"])
    )


def test_adult_from_postgres_equals_adult_from_csv(tmp_path, pg_uri, monkeypatch) -> None:
    adult = pacsv.read_csv(
        ADULT_CSV,
        parse_options=pacsv.ParseOptions(delimiter=";"),
        convert_options=pacsv.ConvertOptions(column_types={}, strings_can_be_null=False),
    )
    adult = adult.cast(pa.schema([pa.field(n, pa.string()) for n in adult.column_names]))
    keyed = adult.append_column("row_id", pa.array(range(adult.num_rows), pa.int64()))
    load_table(
        pg_uri, "public.adult", keyed.take(pa.array(range(adult.num_rows - 1, -1, -1))), ["row_id"]
    )
    monkeypatch.setenv("SKALD_TEST_DB", pg_uri)
    memory = {"histogram_bins": 10**9}
    from_csv = adult_config(tmp_path / "csv-out", k=10, suppression_limit=0.05, memory=memory)
    from_db = {
        **from_csv,
        "input": {"table": "adult", "connection": "SKALD_TEST_DB"},
        "output": {"path": str(tmp_path / "db-out")},
        "direct_identifiers": ["row_id"],
        "chunk_rows": 6000,
    }
    to_table = {
        **from_db,
        "output": {"table": "research.adult_k10", "connection": "SKALD_TEST_DB",
                   "path": str(tmp_path / "table-release")},
    }  # fmt: skip
    a = runner.run(config_from_dict(from_csv))
    b = runner.run(config_from_dict(from_db))
    assert b["node"] == a["node"] and b["dm_star"] == a["dm_star"]
    assert b["n_suppressed"] == a["n_suppressed"]
    assert release_rows(tmp_path / "db-out") == release_rows(tmp_path / "csv-out")
    # released as a table (docs/design.md §2a): the same rows, in the same (key) order
    execute(pg_uri, "CREATE SCHEMA research")
    c = runner.run(config_from_dict(to_table))
    assert c["node"] == a["node"] and c["dm_star"] == a["dm_star"]
    import adbc_driver_postgresql.dbapi as pg

    with pg.connect(pg_uri) as conn, conn.cursor() as cur:
        cur.execute("SELECT * FROM research.adult_k10")  # a fresh table: read in write order
        assert cur.fetch_arrow_table().to_pylist() == release_rows(tmp_path / "csv-out")


def test_refusals_are_one_line_and_never_show_a_password(tmp_path, pg_uri, monkeypatch, capsys):
    load_table(pg_uri, "clinic.patients", _people(40))  # no primary key
    monkeypatch.setenv("SKALD_TEST_DB", pg_uri)
    cfg = write_config(tmp_path / "a.yaml", _table_config(tmp_path, "out", "SKALD_TEST_DB", 10))
    code, _, err = run_inprocess(["run", str(cfg)], capsys)
    assert code == 2 and "has no primary key: give input.order_by" in err
    assert not (tmp_path / ".out.skald-extract").exists() and not (tmp_path / "out").exists()
    with_pw = pg_uri.replace("postgres@", "postgres:s3cret-pw@")
    cfg = write_config(tmp_path / "b.yaml", _table_config(tmp_path, "out", with_pw, 10))
    code, _, err = run_inprocess(["run", str(cfg)], capsys)
    assert code == 2 and "holds a password" in err and "s3cret-pw" not in err
    monkeypatch.setenv("SKALD_TEST_DB", with_pw.replace("127.0.0.1:5432/", "127.0.0.1:5432/nodb_"))
    cfg = write_config(
        tmp_path / "c.yaml", _table_config(tmp_path, "out", "SKALD_TEST_DB", 10, order_by=["pid"])
    )
    code, _, err = run_inprocess(["run", str(cfg)], capsys)
    assert code == 2 and "cannot read input clinic.patients" in err and "s3cret-pw" not in err
    assert len(err.strip().splitlines()) == 1
    monkeypatch.delenv("SKALD_TEST_DB")
    code, _, err = run_inprocess(["run", str(cfg)], capsys)
    assert code == 2 and "SKALD_TEST_DB: no such environment variable" in err
    cfg = write_config(tmp_path / "d.yaml", _table_config(tmp_path, "out", "X", 10, sql="SELECT 1"))
    code, _, err = run_inprocess(["run", str(cfg)], capsys)
    assert code == 2 and "takes one of 'table' or 'sql'" in err


def test_what_a_killed_run_staged_is_replaced_not_read(tmp_path, pg_uri, monkeypatch) -> None:
    load_table(pg_uri, "clinic.patients", _people(), key=["pid"])
    monkeypatch.setenv("SKALD_TEST_DB", pg_uri)
    left = tmp_path / ".out.skald-extract"  # a killed run's chunks: other rows
    left.mkdir()
    pq.write_table(make_table(500, seed=9, start=10_000), left / "chunk-00000.parquet")
    pq.write_table(make_table(500, seed=8, start=20_000), left / "chunk-00009.parquet")
    manifest = runner.run(config_from_dict(_table_config(tmp_path, "out", "SKALD_TEST_DB", 50)))
    assert manifest["n_records"] == 120 and manifest["chunks"] == 3
    assert not left.exists()
    again = runner.run(config_from_dict(_table_config(tmp_path, "out", "SKALD_TEST_DB", 50)))
    assert again["input_fingerprint"] == manifest["input_fingerprint"]  # an identical rerun
    # into another output: staged elsewhere, the same input (its chunks by name and version)
    other = runner.run(config_from_dict(_table_config(tmp_path, "other", "SKALD_TEST_DB", 50)))
    assert other["input_fingerprint"] == manifest["input_fingerprint"]
    assert other["input_files"] == manifest["input_files"]
    assert [f["file"] for f in manifest["input_files"]] == [
        f"chunk-0000{i}.parquet" for i in range(3)
    ]
    execute(pg_uri, "DELETE FROM clinic.patients WHERE pid = 'P000000'")  # the source changed
    with pytest.raises(DataError, match="this run has another input"):
        runner.run(config_from_dict(_table_config(tmp_path, "out", "SKALD_TEST_DB", 50)))
    assert json.loads((tmp_path / "out" / "manifest.json").read_text())["n_records"] == 120


def test_audit_of_a_table_equals_the_audit_of_its_rows_in_a_file(tmp_path, pg_uri, monkeypatch):
    from airflow_skald.core.release.check.audit import audit

    people = _people()
    load_table(pg_uri, "clinic.patients", people, key=["pid"])
    monkeypatch.setenv("SKALD_TEST_DB", pg_uri)
    pq.write_table(people, tmp_path / "people.parquet")
    by_file = audit(config_from_dict(config_dict(tmp_path / "people.parquet", tmp_path / "o")))
    by_table = audit(config_from_dict(_table_config(tmp_path, "o", "SKALD_TEST_DB", 50)))
    drop = {"seconds", "input", "chunks"}
    assert {k: v for k, v in by_table.items() if k not in drop} == {
        k: v for k, v in by_file.items() if k not in drop
    }
    assert by_table["n_records"] == 120 and by_table["input"] == "clinic.patients"
    assert not list(tmp_path.glob(".o.skald-extract"))
