"""The report of a table release says where its rows came from and where they are (issue 40
item 6): its "Where" section names the input table and the release table, each with the name
of its connection (never a password), and the folder that keeps the release's records; a
release from a query names the query."""

from __future__ import annotations

import pyarrow as pa
from helpers_data import config_dict, make_table, run_inprocess, where_rows, write_config
from helpers_postgres import execute, load_table

PASSWORD = "pw-never-in-a-report-5521"


def test_where_names_the_input_table_and_the_release_table(tmp_path, pg_uri, monkeypatch, capsys):
    people = pa.concat_tables([make_table(40, seed=i, start=i * 40) for i in range(3)])
    load_table(pg_uri, "clinic.patients", people, key=["pid"])
    execute(pg_uri, "CREATE SCHEMA research")
    monkeypatch.setenv("SKALD_TEST_DB", pg_uri.replace("postgres@", f"postgres:{PASSWORD}@"))
    body = config_dict(tmp_path / "unused", tmp_path / "unused-out", k=3, chunk_rows=50)
    body["input"] = {"table": "clinic.patients", "connection": "SKALD_TEST_DB"}
    body["output"] = {"table": "research.patients_k3", "connection": "SKALD_TEST_DB"}
    body["memory"] = {"histogram_bins": 10**6}
    config = write_config(tmp_path / "skald.yaml", body)
    code, _, err = run_inprocess(["run", str(config), "-q"], capsys)
    assert code == 0, err
    folder = tmp_path / "skald-releases" / "research.patients_k3"
    report = folder / "report.html"
    assert where_rows(report) == {
        "config file": str(config),
        "input table": "clinic.patients through connection SKALD_TEST_DB",
        "release table": "research.patients_k3 through connection SKALD_TEST_DB",
        "release records": str(folder),
    }
    assert PASSWORD not in report.read_text(encoding="utf-8")

    # a query as the input: the query, through its connection
    body["input"] = {
        "sql": "SELECT * FROM clinic.patients WHERE pid IS NOT NULL",
        "connection": "SKALD_TEST_DB",
        "order_by": ["pid"],
    }
    body["output"] = {"table": "research.patients_q", "connection": "SKALD_TEST_DB"}
    config = write_config(tmp_path / "query.yaml", body)
    code, _, err = run_inprocess(["run", str(config), "-q"], capsys)
    assert code == 0, err
    where = where_rows(tmp_path / "skald-releases" / "research.patients_q" / "report.html")
    assert where["input query"] == (
        "SELECT * FROM clinic.patients WHERE pid IS NOT NULL through connection SKALD_TEST_DB"
    )
    assert where["release table"] == "research.patients_q through connection SKALD_TEST_DB"
