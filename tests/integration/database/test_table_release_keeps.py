"""A table release keeps who may read what (issue 40 item 3), on a real PostgreSQL:

- a release table with row-level security (ENABLE and FORCE), policies, table and column
  grants, an index, constraints, comments (table, column, index) and another owner keeps each
  after an ``--overwrite`` run: a role that saw 0 rows under ``USING (false)`` still sees 0,
  a role with a column grant reads that column and no other;
- what cannot be kept is refused before phase 1 in one line naming it (an index on a column
  the release no longer has, a unique key of quasi-identifiers, a view or another table's
  foreign key depending on the table), and the table stays as it was.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers_data import config_dict, run_inprocess, write_config
from helpers_postgres import execute, give_properties, properties_sql, rows, temporary_roles

from airflow_skald.core.config.run_config import config_from_dict
from airflow_skald.core.errors import DataError
from airflow_skald.core.run import runner

TABLE = "research.people_k3"


def _config(tmp_path: Path, k: int = 3) -> dict:
    cfg = config_dict(tmp_path / "people.parquet", tmp_path / "unused", k=k, chunk_rows=50)
    cfg["output"] = {"table": TABLE, "connection": "SKALD_TEST_DB", "path": str(tmp_path / "rel")}
    cfg["memory"] = {"histogram_bins": 10**6}
    return cfg


_query = rows


@pytest.fixture
def roles(warehouse):
    """The roles of this test (`helpers_postgres.temporary_roles`)."""
    with temporary_roles(warehouse) as names:
        yield names


_PROPERTIES = properties_sql(TABLE)  # what the table has, as the catalogs print it


def _properties(uri: str) -> dict[str, list[tuple]]:
    return {name: _query(uri, sql) for name, sql in _PROPERTIES.items()}


def _description(uri: str) -> str:
    (text,) = _query(uri, f"SELECT obj_description('{TABLE}'::regclass, 'pg_class')")[0]
    return text.split("\n", 1)[1] if "\n" in text else ""


def test_overwrite_keeps_rls_policies_grants_indexes_constraints_comments_owner(
    tmp_path, warehouse, roles, capsys
):
    runner.run(config_from_dict(_config(tmp_path)))
    reader, columns = (f'"{roles[r]}"' for r in ("reader", "columns"))
    give_properties(warehouse, TABLE, roles)
    count = f"SELECT count(*) FROM {TABLE}"
    assert _query(warehouse, f"SET ROLE {reader}", count) == [(0,)]
    assert _query(warehouse, f"SET ROLE {columns}", f"SELECT count(city) FROM {TABLE}") == [(120,)]
    before = _properties(warehouse)

    cfg = write_config(tmp_path / "k5.yaml", _config(tmp_path, k=5))
    code, _, err = run_inprocess(["run", str(cfg), "-q", "--overwrite"], capsys)
    assert code == 0, err
    assert _query(warehouse, "SELECT count(*) FROM research.people_k3") == [(120,)]  # replaced
    assert _query(warehouse, f"SET ROLE {reader}", count) == [(0,)]  # still sees nothing
    assert _query(warehouse, f"SET ROLE {columns}", f"SELECT count(city) FROM {TABLE}") == [(120,)]
    with pytest.raises(Exception, match="permission denied"):
        _query(warehouse, f"SET ROLE {columns}", f"SELECT disease FROM {TABLE}")
    after = _properties(warehouse)
    for name in _PROPERTIES:
        assert after[name] == before[name], name
    assert after["rls"][0][:3] == (True, True, roles["owner"])
    assert len(after["policies"]) == 3 and after["indexes"][0][2] == "for the city reports"
    # the table's description: after its release identity, kept from release to release
    execute(warehouse, f"DO $$ BEGIN EXECUTE format('COMMENT ON TABLE {TABLE} IS %L', "
            f"obj_description('{TABLE}'::regclass, 'pg_class') || E'\\nResearch extract, ask "
            "the data office'); END $$")  # fmt: skip
    cfg = write_config(tmp_path / "k4.yaml", _config(tmp_path, k=4))
    code, _, err = run_inprocess(["run", str(cfg), "-q", "--overwrite"], capsys)
    assert code == 0, err
    assert _description(warehouse) == "Research extract, ask the data office"
    assert _properties(warehouse) == before
    assert _query(warehouse, f"SET ROLE {reader}", count) == [(0,)]
    code, _, err = run_inprocess(["verify", str(tmp_path / "rel")], capsys)
    assert code == 0, err


def test_what_cannot_be_kept_is_refused_before_phase_1(tmp_path, warehouse, capsys):
    first = runner.run(config_from_dict(_config(tmp_path)))
    execute(warehouse, f"CREATE INDEX by_disease ON {TABLE} (disease)")
    dropped = _config(tmp_path)  # the next release no longer has the column disease
    dropped["direct_identifiers"].append("disease")
    dropped["sensitive_attributes"] = []
    run = runner.Run(config_from_dict(dropped).with_overrides({"overwrite": True}))
    runner.layout(run)  # phase 0: the input listed
    with pytest.raises(DataError) as refused:
        run.check_target()  # before phase 1
    assert str(refused.value) == (
        f"output table {TABLE} cannot be replaced keeping who may read what and how it is "
        "used: index by_disease uses column disease, which the release does not have"
    )
    execute(warehouse, "DROP INDEX research.by_disease")
    execute(warehouse, f"DELETE FROM {TABLE}")  # so that a unique key can be added
    execute(warehouse, f"ALTER TABLE {TABLE} ADD CONSTRAINT one_per_tuple UNIQUE (city, age, zip)")
    cfg = write_config(tmp_path / "again.yaml", _config(tmp_path))
    code, _, err = run_inprocess(["run", str(cfg), "-q", "--overwrite"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "constraint one_per_tuple is unique on quasi-identifiers (age, city, zip), which a " \
        "release with k=3 repeats" in err  # fmt: skip
    execute(warehouse, f"ALTER TABLE {TABLE} DROP CONSTRAINT one_per_tuple")
    # a view and another table's foreign key: refused before the input is even listed
    execute(warehouse, f"CREATE VIEW research.cities AS SELECT city FROM {TABLE}")
    execute(warehouse, f"ALTER TABLE {TABLE} ADD CONSTRAINT people_pk PRIMARY KEY (city, age, "
            "zip, disease)")  # fmt: skip
    execute(warehouse, "CREATE TABLE research.visits (city text, age text, zip text, "
            f"disease text, FOREIGN KEY (city, age, zip, disease) REFERENCES {TABLE})")  # fmt: skip
    run = runner.Run(config_from_dict(_config(tmp_path)).with_overrides({"overwrite": True}))
    with pytest.raises(DataError) as refused:
        run.check_target_early()
    assert "view research.cities depends on it" in str(refused.value)
    assert "foreign key visits_city_age_zip_disease_fkey of table research.visits points to it" \
        in str(refused.value)  # fmt: skip
    assert "pass --overwrite" not in str(refused.value)
    rows = _query(warehouse, f"SELECT obj_description('{TABLE}'::regclass, 'pg_class')")
    assert first["run_token"] in rows[0][0]  # the first release, untouched


def test_an_owner_the_writer_may_not_give_is_refused_before_the_input_is_read(
    tmp_path, warehouse, roles, monkeypatch, capsys
):
    writer, owner = roles["writer"], roles["owner"]
    execute(warehouse, f'ALTER SCHEMA research OWNER TO "{writer}"')  # it may drop the table
    monkeypatch.setenv("SKALD_TEST_DB", warehouse.replace("postgres@", f"{writer}@"))
    runner.run(config_from_dict(_config(tmp_path)))  # written by the writer
    execute(warehouse, f'GRANT CREATE ON SCHEMA research TO "{owner}"')
    execute(warehouse, f'ALTER TABLE {TABLE} OWNER TO "{owner}"')
    run = runner.Run(config_from_dict(_config(tmp_path, k=5)).with_overrides({"overwrite": True}))
    with pytest.raises(DataError) as refused:
        run.check_target_early()
    assert str(refused.value) == (
        f"output table {TABLE} cannot be replaced keeping who may read what and how it is "
        f"used: it is owned by role {owner}, of which the connection's role {writer} is not "
        "a member (the new table could not be given that owner)"
    )
    cfg = write_config(tmp_path / "k5.yaml", _config(tmp_path, k=5))
    code, _, err = run_inprocess(["run", str(cfg), "-q", "--overwrite"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "is not a member" in err, err
    rows = _query(warehouse, f"SELECT relowner::regrole::text FROM pg_class WHERE oid = "
                  f"'{TABLE}'::regclass")  # fmt: skip
    assert rows == [(owner,)]  # the table as it was


@pytest.mark.parametrize(
    ("sql", "named"),
    [
        (
            [
                "CREATE FUNCTION research.counted() RETURNS bigint LANGUAGE sql BEGIN ATOMIC "
                f"SELECT count(*) FROM {TABLE}; END"
            ],
            "function research.counted() depends on it",
        ),
        (
            [f"CREATE FUNCTION research.one(r {TABLE}) RETURNS int LANGUAGE sql AS 'SELECT 1'"],
            f"function research.one({TABLE}) depends on it",
        ),
        (
            [f"CREATE TABLE research.copies (n int, person {TABLE})"],
            "column person of table research.copies depends on it",
        ),
        (
            [
                "CREATE TABLE research.notes (n int)",
                f"CREATE POLICY seen ON research.notes USING (EXISTS (SELECT 1 FROM {TABLE}))",
            ],
            "policy seen on table research.notes depends on it",
        ),
    ],
    ids=["function-body", "function-argument", "column-of-its-type", "policy-elsewhere"],
)
def test_other_objects_using_the_table_are_refused_before_phase_1(tmp_path, warehouse, sql, named):
    """A function whose SQL body reads the table, one taking its row type, another table's
    column of its row type or policy reading it: PostgreSQL will not drop the table for them,
    so the swap failed after the whole run (input extracted, phases 1-3 done): refused before
    the input is listed, in one line naming the object."""
    first = runner.run(config_from_dict(_config(tmp_path)))
    for statement in sql:
        execute(warehouse, statement)
    run = runner.Run(config_from_dict(_config(tmp_path)).with_overrides({"overwrite": True}))
    with pytest.raises(DataError) as refused:
        run.check_target_early()
    message = str(refused.value)
    assert len(message.splitlines()) == 1 and message.endswith(named), message
    rows = _query(warehouse, f"SELECT obj_description('{TABLE}'::regclass, 'pg_class')")
    assert first["run_token"] in rows[0][0]  # the first release, untouched


def test_staged_rows_of_a_table_release_are_private_until_the_swap(tmp_path, warehouse):
    """The table's policies and grants decide who reads its rows; the generalised rows staged
    on disk before the swap were in a 0755 folder (files 0644) for every local user: the
    staging folder is 0700 while they are there, whatever the umask; the records folder the
    release leaves (manifest, report) is as the umask makes it."""
    import os
    import stat

    seen: set[int] = set()

    def progress(phase: str, i: int, total: int, rows: int) -> None:
        for folder in tmp_path.glob(".rel.skald-staging-*"):
            if any(folder.glob("part-*")):
                seen.add(stat.S_IMODE(folder.stat().st_mode))

    old = os.umask(0o022)
    try:
        runner.run(config_from_dict(_config(tmp_path)), progress=progress)
    finally:
        os.umask(old)
    assert seen == {0o700}
    assert stat.S_IMODE((tmp_path / "rel").stat().st_mode) == 0o755
    assert not list(tmp_path.glob(".rel.skald-staging-*"))
