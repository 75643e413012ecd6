"""CSV input in the DuckDB engine (docs/design.md §2b, ADR 0064): `read_csv` parses the files as
the chunk path's reader does, so the manifest and the released rows (as a multiset) are the
chunk path's; the first rows of classes come in the chunk path's order (chunks cut the files
in `chunk_rows`, the engine numbers each file's rows); a cell that is not a number in a
numerical QID is refused in one line naming the file, the column and the row."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow.csv as pacsv
import pytest
from engine_compare import config, run_cli, same_as_chunks, table

from airflow_skald.core.config.run_config import config_from_dict
from airflow_skald.core.passes import pipeline as P


def csv_files(folder: Path, n_files: int, rows: int, seed: int, delimiter: str = ";") -> Path:
    """The comparison's tables as CSV (text quoted, a null written as an empty cell)."""
    folder.mkdir(parents=True, exist_ok=True)
    options = pacsv.WriteOptions(delimiter=delimiter)
    for i in range(n_files):
        pacsv.write_csv(table(rows, seed * 100 + i), folder / f"in-{i:03d}.csv", options)
    return folder


def _csv(inp: Path, delimiter: str = ";") -> dict:
    return {"path": str(inp), "format": "csv", "delimiter": delimiter}


def test_duckdb_reads_csv_as_the_chunk_path(tmp_path, capsys):
    inp = csv_files(tmp_path / "in", 2, 150, 31)
    qids = config(inp, inp)["quasi_identifiers"]
    qids[1]["microaggregation"] = {"function": "mean", "cluster": False}  # age: CSV text summed
    settings = {
        "input": _csv(inp),
        "quasi_identifiers": qids,
        "privacy": {"l_diversity": [{"attribute": "disease", "l": 2}]},  # "" is a value
    }
    same_as_chunks(tmp_path, capsys, inp, {"engine": "duckdb"}, **settings)


def test_first_rows_of_csv_classes_come_in_the_chunk_paths_order(tmp_path):
    from airflow_skald.core.count.first_rows import FirstRowScan
    from airflow_skald.core.engine.sql import passes
    from airflow_skald.core.engine.sql.duckdb_engine import _view, scan
    from airflow_skald.core.engine.sql.duckdb_session import DuckDBSession

    inp = csv_files(tmp_path / "in", 2, 160, 7, ",")
    cfg = config_from_dict(config(inp, tmp_path / "out", input=_csv(inp, ",")))
    chunks = P.list_chunks(cfg)
    assert len(chunks) > 2  # chunk_rows cut each file
    plan = P.plan_root(cfg, P.scan_domain(cfg, chunks))
    counts = P.count_histogram(cfg, plan, chunks)
    node, keys = tuple(counts.node), counts.classes.keys
    expected = P.first_rows(cfg, plan, chunks, node, keys)
    found = FirstRowScan(keys)
    for i, f in enumerate(sorted(str(p) for p in inp.glob("*.csv"))):
        session = DuckDBSession(2)
        try:
            source = _view(session, "skald_input", [f], scan(cfg, [f], rows=True))
            found.add(*passes.chunk_first_rows(session, source, cfg, plan, node, keys, i))
        finally:
            session.close()
    assert (np.argsort(found.result(), kind="stable") == np.argsort(expected, kind="stable")).all()


@pytest.mark.parametrize("text,same_message", [("abc", True), ("1_000", False)])
def test_a_number_the_chunk_path_cannot_read_is_refused_in_one_line(
    tmp_path, capsys, text, same_message
):
    inp = tmp_path / "in"
    inp.mkdir()
    rows = ["pid,city,age,zip,income,disease,score"]
    rows += [f"P{i},Oslo,{30 + i},1001,{i}.5,flu,1" for i in range(6)]
    rows[4] = f"P3,Oslo,{text},1001,3.5,flu,1"  # the fourth data row
    (inp / "in.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    errors = {}
    for engine in ("chunks", "duckdb"):
        cfg = config(inp, tmp_path / f"out-{engine}", input=_csv(inp, ","))
        cfg["execution"] = {"engine": engine}
        code, err = run_cli(tmp_path, cfg, engine, capsys)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert not (tmp_path / f"out-{engine}").exists()
        errors[engine] = err.strip()
    assert "column 'age' holds text that is not a number" in errors["duckdb"]
    assert "in.csv" in errors["duckdb"] and "at row 4" in errors["duckdb"]
    assert text not in errors["duckdb"]
    if same_message:
        assert errors["duckdb"] == errors["chunks"]
