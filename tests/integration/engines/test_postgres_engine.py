"""`execution: {engine: postgresql}` end to end through the CLI (docs/design.md §2a, §2b, ADR
0061), on a real PostgreSQL on 127.0.0.1:5432 (one database for the module, dropped after):
the same manifest figures (node, DM*, suppressed, classes, risk, lattice) and released rows (as
a multiset) as `execution: chunks` on the same table; `skald verify` of the release; no row
staged on the worker's disk; the pseudonym key in no SQL text and no log; the bytes received
from PostgreSQL bounded by the histogram, not the rows; a missing privilege and what the engine
does not run refused in one line, nothing written, no temporary table left; the swap keeping
what the old table had; a SIGKILL before the swap leaving the previous release."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from engine_compare import CITIES, PROFIT, config, table
from engine_compare import UTILITY as UTILITY_SETTINGS
from engine_compare import run_cli as _run
from helpers_postgres import (
    execute,
    fresh_database,
    give_properties,
    load_table,
    properties,
    query,
    rows,
    temporary_roles,
)

from airflow_skald.cli import main as cli_main

ENV = "SKALD_PG_ENGINE_DB"
KEY = "a-pseudonym-key-7d1b2a4c680f3c9e"
INPUT = "clinic.people"
#: what differs between a chunk-path and an engine release of the same table: the run, the engine,
#: table it went to, and how the input is identified (staged chunks' bytes, the engine's sum)
OWN = {
    "settings",
    "config_sha256",
    "run_token",
    "output_table",
    "input_files",
    "input_fingerprint",
    "engine",
}


@pytest.fixture(scope="module")
def pg():
    """The module's database: the input `clinic.people` (keyed by pid) and an empty schema
    `research` for the releases; its URI in the environment variable ENV."""
    with fresh_database("skald_pg_engine") as uri, pytest.MonkeyPatch.context() as mp:
        mp.setenv(ENV, uri)
        load_table(uri, INPUT, table(300, 31), key=["pid"])
        people = table(300, 41)  # a population with a research subset's flag (§4e)
        flag = pa.array(np.random.default_rng(41).random(300) < 0.35)
        load_table(uri, POPULATION, people.append_column("in_study", flag), key=["pid"])
        execute(uri, "CREATE SCHEMA research")
        yield uri


def _config(tmp: Path, engine: str, release: str, **settings) -> dict:
    cfg = config(tmp / "unused", tmp / "unused-out", **settings)
    if "input" not in settings:
        cfg["input"] = {"table": INPUT, "connection": ENV}
    cfg["output"] = {"table": f"research.{release}", "connection": ENV, "path": str(tmp / release)}
    cfg["execution"] = {"engine": engine}
    return cfg


def _rows(uri: str, name: str) -> Counter:
    rows = query(uri, f"SELECT * FROM research.{name}").to_pylist()
    return Counter(
        tuple(sorted((k, None if v is None else str(v)) for k, v in r.items())) for r in rows
    )


def _temporaries(uri: str) -> list[str]:
    found = query(uri, "SELECT relname::text AS n FROM pg_class WHERE relname LIKE 'skald\\_%'")
    return found.column("n").to_pylist()


KEPT_AND_PSEUDONYMS = {
    "direct_identifiers": [{"pid": "pseudonymise"}],
    "pseudonym_key": {"env": "SKALD_TEST_KEY"},
}
L_AND_RISK = {
    "privacy": {
        "l_diversity": [{"attribute": "disease", "l": 2}],
        "average_risk": {"max": 0.3},
    },
    "suppressed_records": "drop",
}


def _secrets() -> list[str]:
    """The key as text, its hex, and its HMAC pads' hex: none may be in a statement."""
    pads = [bytes(b ^ x for b in KEY.encode().ljust(64, b"\0")).hex() for x in (0x36, 0x5C)]
    return [KEY, KEY.encode().hex(), *pads]


def _no_parquet_while_running(monkeypatch, folder: Path) -> list[int]:
    """Before each statement the engine runs: no Parquet file anywhere under `folder`."""
    from airflow_skald.core.engine.sql.postgres_session import PostgresSession

    seen: list[int] = []
    real = PostgresSession._text

    def observed(self, statement):
        assert not list(folder.rglob("*.parquet")), "rows staged on the worker's disk"
        seen.append(1)
        return real(self, statement)

    monkeypatch.setattr(PostgresSession, "_text", observed)
    return seen


QUERY = {  # a query as the input: read in order_by order, as the chunk path's extract
    "input": {
        "sql": f"SELECT * FROM {INPUT} WHERE age >= 25 AND city <> 'Lund'",
        "connection": ENV,
        "order_by": ["age", "pid"],
    },
    "privacy": {"k": 2, "average_risk": {"max": 0.2}},
}


POPULATION = "clinic.population"
SUBSET = {  # δ-presence over a research subset flagged by a column
    "input": {"table": POPULATION, "connection": ENV},
    "research_subset": {"column": "in_study"},
    "privacy": {"k": 2, "delta_presence": {"min": 0.1, "max": 0.7}},
}
JOURNALIST = {  # ARX's ProfitabilityJournalist: each class's loss and population (ADR 0046)
    **SUBSET,
    "privacy": {"profitability": {**PROFIT, "attacker": "journalist"}, "suppression_limit": 0.2},
}


#: the utility analysis (ADR 0079): its sample (200 of 300 records, the key bound used) joined
#: by the staged extract's numbering (two chunks of 150 in pid order)
UTILITY = {"utility": UTILITY_SETTINGS}
DP = {  # differential privacy: refused (its keyed sample would put the key into SQL text)
    "sensitive_attributes": [],
    "direct_identifiers": ["pid", "age", "zip", "income", "disease", "score"],
    "quasi_identifiers": [{"name": "city", "type": "categorical", "hierarchy": CITIES}],
    "quality": {"objective": "precision"},
}


@pytest.mark.parametrize(
    "name,settings",
    [
        ("pseudo", KEPT_AND_PSEUDONYMS),
        ("lrisk", L_AND_RISK),
        ("query", QUERY),
        ("subset", SUBSET),
        ("utility", UTILITY),
        ("profit", JOURNALIST),
    ],
)
def test_the_postgresql_engine_releases_what_the_chunk_path_releases(
    tmp_path, capsys, monkeypatch, caplog, pg, name, settings
):
    monkeypatch.setenv("SKALD_TEST_KEY", KEY)
    caplog.set_level(logging.DEBUG, logger="airflow_skald")
    manifests, errors = {}, ""
    for engine in ("chunks", "postgresql"):
        if engine == "postgresql":
            seen = _no_parquet_while_running(monkeypatch, tmp_path)
        release = f"{name}_{engine}"
        code, err = _run(tmp_path, _config(tmp_path, engine, release, **settings), release, capsys)
        assert code == 0, err
        errors += err
        manifests[engine] = json.loads((tmp_path / release / "manifest.json").read_text())
    assert seen and not list(tmp_path.rglob("*.parquet"))
    engine, chunks = manifests["postgresql"], manifests["chunks"]
    for key in (set(engine) | set(chunks)) - OWN:
        assert engine.get(key) == chunks.get(key), key
    assert _rows(pg, f"{name}_postgresql") == _rows(pg, f"{name}_chunks")
    assert _rows(pg, f"{name}_postgresql")
    manifest = (tmp_path / f"{name}_postgresql" / "manifest.json").read_bytes()
    comment = query(pg, f"SELECT obj_description('research.{name}_postgresql'::regclass) AS c")
    assert hashlib.sha256(manifest).hexdigest() in comment.column("c")[0].as_py()
    assert not _temporaries(pg)
    report = (tmp_path / f"{name}_postgresql" / "report.html").read_text()
    saw = "computed by the postgresql engine, which held the key"
    assert (saw in report) == ("pseudonym_key" in settings)
    statements = [r.getMessage() for r in caplog.records if r.name == "airflow_skald.sql"]
    assert any("CREATE TABLE" in s for s in statements)  # the engine's statements were seen
    logged = "\n".join(r.getMessage() for r in caplog.records) + errors
    assert not any(secret in logged for secret in _secrets())
    capsys.readouterr()
    code = cli_main(["verify", str(tmp_path / f"{name}_postgresql")])
    if settings is JOURNALIST:  # a release holds no domain shares: verified in part (ADR 0046)
        assert code == 4 and "could not be re-checked" in capsys.readouterr().err
    else:
        assert code == 0, capsys.readouterr()


def _engine_run(cfg: dict):
    """The postgresql engine's phases 0 and 1 in this process: the run and the engine."""
    from airflow_skald.core.config.run_config import config_from_dict
    from airflow_skald.core.engine.registry import open_engine
    from airflow_skald.core.passes.state import Run
    from airflow_skald.core.run.phase_encode import ENCODE

    run = Run(config_from_dict(cfg))
    engine = open_engine(run.config)
    run.layout(engine.list_input(run))
    ENCODE.run_on(engine, run)
    return run, engine


def test_first_rows_are_the_chunk_paths(tmp_path, pg):
    """The first row of every root class, coded as the chunk path codes the staged chunks
    of the same table read in the same order (chunk << 32 | row), exactly."""
    from airflow_skald.core.data.database.extract import extract
    from airflow_skald.core.passes import pipeline as P

    run, engine = _engine_run(_config(tmp_path, "postgresql", "first"))
    counts = engine.root_counts(run)
    node, keys = tuple(counts.node), counts.classes.keys
    found = engine.first_rows(run, run.plan(), node, keys)
    chunks = extract(run.config.database, pg, run.config.chunk_rows, str(tmp_path / "staged"))
    assert len(chunks) == len(run.chunks()) == 2
    assert (found == P.first_rows(run.config, run.plan(), chunks, node, keys)).all()


def test_what_crosses_is_bounded_by_the_histogram_not_the_rows(tmp_path, monkeypatch, pg):
    """The bytes PostgreSQL's results bring to the worker over a whole run (every session's
    Arrow results: statistics, histogram, class table) for 400 and 20,000 rows of the same
    domains (QIDs city and zip: 24 classes at most, all present in both): about the same,
    far below the rows'. The same for `skald verify` of the table release (ADR 0070)."""
    from airflow_skald.core.engine.sql.postgres_session import PostgresSession

    received: list[int] = []
    real = PostgresSession.close

    def close(self):
        received.append(self.received)
        real(self)

    monkeypatch.setattr(PostgresSession, "close", close)
    sizes, verified = {}, {}
    for n in (400, 20_000):
        data = table(n, 7)
        load_table(pg, f"clinic.wire_{n}", data, key=["pid"])
        cfg = _config(tmp_path, "postgresql", f"wire_{n}")
        cfg["input"]["table"] = f"clinic.wire_{n}"
        cfg["quasi_identifiers"] = [q for q in cfg["quasi_identifiers"] if q["name"] in QIDS]
        cfg["sensitive_attributes"] = ["disease", "score", "age", "income"]
        received.clear()
        assert cli_main(["run", _write(tmp_path, cfg, f"wire_{n}"), "-q"]) == 0
        sizes[n] = (sum(received), data.nbytes)
        # `skald verify` of the table release: from PostgreSQL's counts (ADR 0070), no
        # temporary folder to read rows back into
        received.clear()
        with monkeypatch.context() as mp:
            mp.setattr(tempfile, "mkdtemp", _no_temporary_folder)
            assert cli_main(["verify", str(tmp_path / f"wire_{n}")]) == 0
        verified[n] = sum(received)
    (small, _), (large, rows) = sizes[400], sizes[20_000]
    print("received", sizes, "verify", verified)
    assert large < 1.2 * small and large < rows / 50, sizes
    assert 0 < verified[20_000] < 1.2 * verified[400] and verified[20_000] < rows / 50, verified


def _no_temporary_folder(*args, **kwargs):
    raise AssertionError("skald verify of a table release made a temporary folder")


QIDS = ("city", "zip")


def _write(tmp: Path, cfg: dict, name: str) -> str:
    import yaml

    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return str(path)


def test_a_folder_output_and_a_missing_privilege_are_refused_in_one_line(
    tmp_path, capsys, monkeypatch, pg
):
    cfg = _config(tmp_path, "postgresql", "refused")
    cfg["output"] = {"path": str(tmp_path / "folder"), "format": "parquet"}
    code, err = _run(tmp_path, cfg, "folder", capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "execution.engine postgresql writes the release as a table" in err
    cfg = _config(tmp_path, "postgresql", "refused")
    cfg["input"] = {"sql": f"DELETE FROM {INPUT}", "connection": ENV, "order_by": ["pid"]}
    code, err = _run(tmp_path, cfg, "delete", capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "execution.engine postgresql: input.sql must be one SELECT" in err
    cfg = _config(tmp_path, "postgresql", "refused", **DP)
    cfg["privacy"] = {"k": 3, "differential_privacy": {"epsilon": 2, "delta": 1e-6}}
    code, err = _run(tmp_path, cfg, "dp", capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert "differential privacy: its keyed sample" in err and "postgresql" in err
    assert query(pg, f"SELECT count(*) AS n FROM {INPUT}").column("n")[0].as_py() == 300
    with temporary_roles(pg) as roles:
        writer = roles["writer"]
        execute(pg, f'GRANT USAGE ON SCHEMA clinic, research TO "{writer}"')
        execute(pg, f'GRANT SELECT ON {INPUT} TO "{writer}"')
        monkeypatch.setenv("SKALD_AS_WRITER", pg.replace("postgres@", f"{writer}@"))
        cfg = _config(tmp_path, "postgresql", "refused")
        cfg["input"]["connection"] = cfg["output"]["connection"] = "SKALD_AS_WRITER"
        code, err = _run(tmp_path, cfg, "privilege", capsys)
        assert code == 2 and len(err.strip().splitlines()) == 1, err
        assert "the connection's role lacks CREATE on schema research" in err
    assert not _temporaries(pg)
    assert not query(pg, "SELECT 1 FROM pg_class WHERE relname LIKE 'refused%'").num_rows
    written = sorted(p.name for p in tmp_path.iterdir())
    assert written == ["delete.yaml", "dp.yaml", "folder.yaml", "privilege.yaml"]


def test_the_swap_keeps_grants_policies_indexes_comments_and_owner(tmp_path, capsys, pg):
    release = "research.kept"
    assert _run(tmp_path, _config(tmp_path, "postgresql", "kept"), "kept", capsys)[0] == 0
    with temporary_roles(pg) as roles:
        give_properties(pg, release, roles)
        before = properties(pg, release)
        reader = f'"{roles["reader"]}"'
        count = f"SELECT count(*) FROM {release}"
        cfg = _config(tmp_path, "postgresql", "kept", privacy={"k": 4})
        code, err = _run(tmp_path, cfg, "kept4", capsys, "--overwrite")
        assert code == 0, err
        assert properties(pg, release) == before
        assert rows(pg, f"SET ROLE {reader}", count) == [(0,)]  # still sees nothing
        assert rows(pg, count)[0][0] > 0
        assert json.loads((tmp_path / "kept" / "manifest.json").read_text())["k"] == 4


def test_sigkill_after_the_engine_wrote_its_new_table_leaves_the_previous_release(
    tmp_path, capsys, pg
):
    """A run killed once PostgreSQL has written its new table, before the swap: the previous
    release is as it was (rows, comment), and the next run drops the killed run's table."""
    import signal
    import subprocess
    import sys
    import time

    repo = Path(__file__).resolve().parents[3]
    release = "research.killed"
    assert _run(tmp_path, _config(tmp_path, "postgresql", "killed"), "first", capsys)[0] == 0
    state = f"SELECT obj_description('{release}'::regclass), (SELECT count(*) FROM {release})"
    before = rows(pg, state)
    path = _write(tmp_path, _config(tmp_path, "postgresql", "killed", privacy={"k": 6}), "second")
    proc = subprocess.Popen(
        [sys.executable, "-m", "airflow_skald.cli", "run", path, "-q", "--overwrite"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ, PYTHONPATH=str(repo)),
        cwd=str(repo),
    )
    new = "SELECT count(*) FROM pg_class WHERE relname LIKE 'killed\\_\\_skald\\_new\\_%'"
    deadline, written = time.monotonic() + 120, False
    while time.monotonic() < deadline and proc.poll() is None and not written:
        written = rows(pg, new)[0][0] > 0
        time.sleep(0.005)
    assert written and proc.poll() is None, "the run ended before the swap could be missed"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert rows(pg, state) == before
    cfg = _config(tmp_path, "postgresql", "killed", privacy={"k": 6})
    code, err = _run(tmp_path, cfg, "third", capsys, "--overwrite")
    assert code == 0, err
    assert rows(pg, new) == [(0,)] and rows(pg, state) != before


def test_the_input_version_follows_the_tables_rows(tmp_path, pg):
    """The manifest's input identity (ChunkRef.version) is the table's version, computed by
    PostgreSQL in one scan: an update of one row changes it; a view's is its content's."""
    from airflow_skald.core.config.run_config import config_from_dict
    from airflow_skald.core.engine.registry import open_engine
    from airflow_skald.core.passes.state import Run

    load_table(pg, "clinic.versioned", table(60, 5), key=["pid"])
    execute(pg, "CREATE VIEW clinic.versioned_view AS SELECT * FROM clinic.versioned")

    def version(name: str) -> str:
        cfg = _config(tmp_path, "postgresql", "versioned")
        cfg["input"].update(table=name, order_by=["pid"])
        run = Run(config_from_dict(cfg))
        return open_engine(run.config).list_input(run)[0].version

    table_before, view_before = version("clinic.versioned"), version("clinic.versioned_view")
    assert table_before.startswith("pgversion:") and view_before.startswith("pgsum:")
    assert version("clinic.versioned") == table_before  # read again: the same
    execute(pg, "UPDATE clinic.versioned SET age = age + 1 WHERE pid = 'P5-7'")
    assert version("clinic.versioned") != table_before
    assert version("clinic.versioned_view") != view_before
