"""The staged raw extract of a database input is private (docs/design.md §2a, issue 40 item
4), on a real PostgreSQL: while the run is in its phases (seen from its progress callback,
phase 1 to 3), the staging folder is 0700 and every chunk file 0600, whatever the umask; an
error about a row or a column of a database input names the table (or query) and its key
columns, and the row's place in that order, never a staged file (gone once the run ends)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pyarrow as pa
import pytest
from helpers_data import config_dict, make_table, run_inprocess, write_config
from helpers_postgres import load_table

from airflow_skald.core.config.run_config import config_from_dict
from airflow_skald.core.run import runner


def _config(tmp_path: Path, env: str, **extra) -> dict:
    cfg = config_dict(tmp_path / "unused", tmp_path / "out", chunk_rows=50)
    cfg["input"] = {"table": "clinic.patients", "connection": env, **extra}
    return cfg


def _modes(folder: Path) -> tuple[int, set[int]]:
    return stat.S_IMODE(folder.stat().st_mode), {
        stat.S_IMODE(f.stat().st_mode) for f in folder.iterdir()
    }


def test_staged_folder_is_0700_and_its_chunks_0600_throughout_the_run(
    tmp_path, pg_uri, monkeypatch
) -> None:
    load_table(pg_uri, "clinic.patients", make_table(160, seed=3), key=["pid"])
    monkeypatch.setenv("SKALD_TEST_DB", pg_uri)
    staged = tmp_path / ".out.skald-extract"
    seen: dict[str, set] = {}

    def progress(phase: str, i: int, total: int, rows: int) -> None:
        folder, files = _modes(staged)
        seen.setdefault(phase, set()).add((folder, frozenset(files), len(list(staged.iterdir()))))

    old = os.umask(0o022)  # the usual umask: files 0644 and folders 0755 unless asked
    try:
        runner.run(config_from_dict(_config(tmp_path, "SKALD_TEST_DB")), progress=progress)
    finally:
        os.umask(old)
    assert {"encode", "histogram", "generalise"} <= set(seen)
    for phase, states in seen.items():
        assert states == {(0o700, frozenset({0o600}), 4)}, phase  # 160 rows: 4 chunks
    assert not staged.exists()  # deleted once the release is committed


def test_a_row_error_names_the_table_its_key_and_the_row_never_a_staged_file(
    tmp_path, pg_uri, monkeypatch, capsys
) -> None:
    people = make_table(120, seed=1)
    cities = people.column("city").to_pylist()
    cities[77] = "Atlantis"  # not in the hierarchy: row 78 in pid order
    people = people.set_column(people.schema.get_field_index("city"), "city", pa.array(cities))
    load_table(pg_uri, "clinic.patients", people, key=["pid"])
    monkeypatch.setenv("SKALD_TEST_DB", pg_uri)
    cfg = write_config(tmp_path / "a.yaml", _config(tmp_path, "SKALD_TEST_DB"))
    code, _, err = run_inprocess(["run", str(cfg)], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert 'first at row 78 of input table clinic.patients read in "pid" order' in err
    assert "rows 51-100 of input table clinic.patients" in err
    assert "skald-extract" not in err and "chunk-" not in err


@pytest.mark.parametrize(
    "command, source", [("run", {}), ("run", {"order_by": ["age", "pid"]}), ("audit", {})]
)
def test_a_missing_column_names_the_input_not_a_staged_file(
    tmp_path, pg_uri, monkeypatch, capsys, command, source
) -> None:
    load_table(pg_uri, "clinic.patients", make_table(60, seed=2).drop(["zip"]), key=["pid"])
    monkeypatch.setenv("SKALD_TEST_DB", pg_uri)
    cfg = write_config(tmp_path / "b.yaml", _config(tmp_path, "SKALD_TEST_DB", **source))
    code, _, err = run_inprocess([command, str(cfg)], capsys)
    order = '"age", "pid"' if source else '"pid"'
    assert code == 2, err
    assert f"column 'zip' is missing from input table clinic.patients read in {order} order" in err
    assert "skald-extract" not in err and "skald-audit" not in err and "chunk-" not in err
    assert not (tmp_path / ".out.skald-extract").exists() and not (tmp_path / "out").exists()
