"""`execution: {engine: postgresql}` end to end through the CLI (docs/design.md §2a, §2b, ADR
0061), on a real PostgreSQL on 127.0.0.1:5432 (one database for the module, dropped after):
the same manifest figures (node, DM*, suppressed, classes, risk, lattice) and released rows (as
a multiset) as `execution: chunks` on the same table; `skald verify` of the release; no row
staged on the worker's disk; the pseudonym key in no SQL text and no log; the bytes received
from PostgreSQL bounded by the histogram, not the rows; a missing privilege and what the engine
does not run refused in one line, nothing written, no temporary table left."""

from __future__ import annotations

import json
import logging
from collections import Counter
from pathlib import Path

import pytest
from engine_compare import config, table
from engine_compare import run_cli as _run
from helpers_postgres import execute, fresh_database, load_table, query

ENV = "SKALD_PG_ENGINE_DB"
KEY = "a-pseudonym-key-7d1b2a4c680f3c9e"
INPUT = "clinic.people"
#: what differs between a chunk-path and an engine release of the same table: the run, the
#: table it went to, and how the input is identified (staged chunks' bytes, the engine's sum)
OWN = {"settings", "config_sha256", "run_token", "output_table", "input_files", "input_fingerprint"}


@pytest.fixture(scope="module")
def pg():
    """The module's database: the input `clinic.people` (keyed by pid) and an empty schema
    `research` for the releases; its URI in the environment variable ENV."""
    with fresh_database("skald_pg_engine") as uri, pytest.MonkeyPatch.context() as mp:
        mp.setenv(ENV, uri)
        load_table(uri, INPUT, table(300, 31), key=["pid"])
        execute(uri, "CREATE SCHEMA research")
        yield uri


def _config(tmp: Path, engine: str, release: str, **settings) -> dict:
    cfg = config(tmp / "unused", tmp / "unused-out", **settings)
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


CASES = [
    ("k", {}),
    (
        "ldiv",
        {
            "privacy": {"l_diversity": [{"attribute": "disease", "l": 2}]},
            "suppressed_records": "drop",
        },
    ),
    ("risk", {"privacy": {"average_risk": {"max": 0.3}}}),
    (
        "pseudo",
        {
            "direct_identifiers": [{"pid": "pseudonymise"}],
            "pseudonym_key": {"env": "SKALD_TEST_KEY"},
        },
    ),
]


@pytest.mark.parametrize("name,settings", CASES, ids=[c[0] for c in CASES])
def test_the_postgresql_engine_releases_what_the_chunk_path_releases(
    tmp_path, capsys, monkeypatch, caplog, pg, name, settings
):
    monkeypatch.setenv("SKALD_TEST_KEY", KEY)
    caplog.set_level(logging.DEBUG, logger="airflow_skald")
    manifests = {}
    for engine in ("chunks", "postgresql"):
        release = f"{name}_{engine}"
        code, err = _run(tmp_path, _config(tmp_path, engine, release, **settings), release, capsys)
        assert code == 0, err
        manifests[engine] = json.loads((tmp_path / release / "manifest.json").read_text())
    engine, chunks = manifests["postgresql"], manifests["chunks"]
    for key in (set(engine) | set(chunks)) - OWN:
        assert engine.get(key) == chunks.get(key), key
    assert _rows(pg, f"{name}_postgresql") == _rows(pg, f"{name}_chunks")
    assert _rows(pg, f"{name}_postgresql")
    comment = query(pg, f"SELECT obj_description('research.{name}_postgresql'::regclass) AS c")
    assert engine["output_table"]["table"] == f"research.{name}_postgresql"
    sha = __import__("hashlib").sha256(
        (tmp_path / f"{name}_postgresql" / "manifest.json").read_bytes()
    )
    assert sha.hexdigest() in comment.column("c")[0].as_py()
    assert not _temporaries(pg)
    statements = [r.getMessage() for r in caplog.records if r.name == "airflow_skald.sql"]
    assert statements  # the engine's statements were seen
    logged = "\n".join(r.getMessage() for r in caplog.records) + err
    assert KEY not in logged and KEY.encode().hex() not in logged
