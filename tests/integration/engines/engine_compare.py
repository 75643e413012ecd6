"""The chunk path and an SQL engine on the same data: small generated tables, and the
comparisons every engine test makes (the same phase-1 statistics, root counts, node, DM*,
figures, released rows as a multiset and release classes)."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

CITIES = {"Oslo": ["Norway"], "Bergen": ["Norway"], "Lund": ["Sweden"], "Malmo": ["Sweden"]}
DISEASES = ["flu", "asthma", "none", "gout", "cold"]
#: ARX's profitability cost/benefit (TestAnonymizationProfitability's getConfig2(): attacks pay
#: on classes below 6 records), for the engines' profitability cases (ADR 0046)
PROFIT = {
    "publisher_benefit": 1200,
    "publisher_loss": 3000,
    "adversary_gain": 120,
    "adversary_cost": 20,
}


def table(n: int, seed: int) -> pa.Table:
    """n rows: identifiers, a categorical, an integer, a rank-encoded and a decimal QID, a
    sensitive text (with nulls) and a numeric sensitive attribute."""
    rng = np.random.default_rng(seed)
    disease = [DISEASES[j] for j in rng.integers(0, len(DISEASES), n)]
    for j in rng.integers(0, n, n // 25):
        disease[j] = None
    return pa.table(
        {
            "pid": [f"P{seed}-{i}" for i in range(n)],
            "city": [list(CITIES)[j] for j in rng.integers(0, len(CITIES), n)],
            "age": pa.array(rng.integers(18, 80, n), pa.int64()),
            "zip": pa.array(rng.choice([1001, 1002, 1010, 1100, 2000, 2100], n), pa.int64()),
            "income": pa.array(np.round(rng.gamma(2.0, 900.0, n) * 4) / 4, pa.float64()),
            "disease": pa.array(disease, pa.string()),
            "score": pa.array(rng.integers(0, 9, n), pa.int64()),
        }
    )


def write_files(folder: Path, n_files: int, rows: int, seed: int) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n_files):
        pq.write_table(
            table(rows, seed * 100 + i), folder / f"in-{i:03d}.parquet", row_group_size=97
        )
    return folder


def config(inp: Path, out: Path, **kw) -> dict:
    cfg = {
        "input": {"path": str(inp), "format": "parquet"},
        "output": {"path": str(out), "format": "parquet"},
        "chunk_rows": 150,
        "direct_identifiers": ["pid"],
        "sensitive_attributes": ["disease", "score"],
        "quasi_identifiers": [
            {"name": "city", "type": "categorical", "hierarchy": CITIES},
            {"name": "age", "type": "numerical", "min_width": 1},
            {"name": "zip", "type": "numerical", "min_width": 1, "encode": True},
            {"name": "income", "type": "numerical", "min_width": 0.25},
        ],
        "privacy": {"k": 3, "suppression_limit": 0.05},
    }
    for key, value in kw.items():
        if key in ("privacy", "memory", "quality"):
            cfg.setdefault(key, {}).update(value)
        else:
            cfg[key] = value
    return cfg


def rows_multiset(folder: Path) -> Counter:
    """The released rows of a folder's parts, as a multiset of (column, text) tuples."""
    out: Counter = Counter()
    for part in sorted(folder.glob("part-*.parquet")):
        for row in pq.read_table(part).to_pylist():
            out[tuple(sorted((k, None if v is None else str(v)) for k, v in row.items()))] += 1
    return out


def run_cli(tmp: Path, cfg: dict, name: str, capsys, *flags: str) -> tuple[int, str]:
    """`skald run` in this process on `cfg` (written as `name`.yaml): exit code, stderr."""
    import yaml

    from airflow_skald.cli import main as cli_main

    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    capsys.readouterr()
    code = cli_main(["run", str(path), "-q", *flags])
    return code, capsys.readouterr().err


#: the manifest keys that count the chunks: an SQL engine over files lists a chunk (and
#: writes a part) per file, the chunk path cuts a file of more than `chunk_rows` rows
CHUNKING = ("chunks", "parts")


def assert_same_release(engine_out: Path, chunks_out: Path, cut: bool = False) -> None:
    """Every manifest figure (node, DM*, suppressed, classes, risk, quality, lattice, parts,
    input fingerprint) and the released rows as a multiset the same; only the run's own token,
    the output path and so the settings' hash differ, and the engine that ran the passes
    (`engine`: excluded here by name, it is what differs by design). `cut`: the chunk path cut
    the input files into more chunks than the engine's one per file (`CHUNKING` differs)."""
    import json

    engine = json.loads((engine_out / "manifest.json").read_text())
    chunks = json.loads((chunks_out / "manifest.json").read_text())
    ignored = ("settings", "config_sha256", "run_token", "engine", *(CHUNKING if cut else ()))
    for key in set(chunks) | set(engine):
        if key not in ignored:
            assert engine.get(key) == chunks.get(key), key
    if cut:
        assert engine["chunks"] == len(engine["parts"]) < chunks["chunks"]
    assert {**engine["settings"], "output": None} == {**chunks["settings"], "output": None}
    assert chunks["engine"] == "chunks" and engine["engine"] != "chunks"
    assert rows_multiset(engine_out) == rows_multiset(chunks_out)
    assert rows_multiset(engine_out)  # something was released


def same_as_chunks(
    tmp: Path, capsys, inp: Path, execution: dict, cut: bool = False, **settings
) -> None:
    """`inp` released with `execution` and with `execution: chunks` under the same settings:
    both runs succeed and `assert_same_release` holds (`cut`: files of more than
    `chunk_rows` rows)."""
    out = {}
    for name, how in (("chunks", {"engine": "chunks"}), (execution["engine"], execution)):
        out[name] = tmp / f"out-{name}"
        code, err = run_cli(tmp, config(inp, out[name], execution=how, **settings), name, capsys)
        assert code == 0, err
    assert_same_release(out[execution["engine"]], out["chunks"], cut)


#: the utility analysis the engines' comparisons run (a sample smaller than 300 records)
UTILITY = {
    "target": "disease",
    "models": ["naive_bayes"],
    "folds": 3,
    "max_records": 200,
    "contingency": [["city", "zip"]],
}


def same_utility_as_chunks(tmp: Path, capsys, fmt: str, execution: dict, rows: int = 150) -> dict:
    """Two files of `rows` records (`fmt` parquet or csv) released with `UTILITY` by
    `execution` and by the chunk path: `same_as_chunks` (past 150 rows the chunk path cuts
    each file into chunks of `chunk_rows`, the engine reads it whole); the engine's manifest."""
    from test_duckdb_csv import _csv, csv_files

    if fmt == "csv":
        inp = csv_files(tmp / "in", 2, rows, 41)
        more = {"input": _csv(inp)}
    else:
        inp, more = write_files(tmp / "in", 2, rows, 41), {}
    same_as_chunks(tmp, capsys, inp, execution, rows > 150, utility=UTILITY, **more)
    return json.loads((tmp / f"out-{execution['engine']}" / "manifest.json").read_text())


@dataclass
class ChunkPath:
    """The chunk path's passes over `cfg`'s input, step by step, its parts in `staged`."""

    chunks: list
    stats: Any
    plan: Any
    counts: Any
    decision: Any
    names: list[str]
    aggregates: Any = None


def chunk_path(cfg, staged: Path, aggregate: bool = False) -> ChunkPath:
    """Run the chunk path's passes (with microaggregation's aggregates when `aggregate`)."""
    from airflow_skald.core.passes import pipeline as P

    chunks = P.list_chunks(cfg)
    stats = P.scan_domain(cfg, chunks)
    plan = P.plan_root(cfg, stats)
    counts = P.count_histogram(cfg, plan, chunks)
    decision = P.search_lattice(cfg, plan, counts)
    aggregates = P.microaggregate(cfg, plan, counts, decision) if aggregate else None
    staged.mkdir(parents=True, exist_ok=True)
    extra = {"aggregates": aggregates} if aggregate else {}
    names = P.write_parts(cfg, plan, decision, chunks, str(staged), **extra)
    return ChunkPath(chunks, stats, plan, counts, decision, names, aggregates)


def fetched_rows(session) -> tuple[Counter, Callable]:
    """A multiset of released rows (as `rows_multiset` keys them) and the `fetch` callback of
    `passes.write_parts` that fills it from the engine's SELECTs."""
    released: Counter = Counter()

    def fetch(select, _name):
        for row in session.query(select).to_pylist():
            released[tuple(sorted((k, None if v is None else str(v)) for k, v in row.items()))] += 1

    return released, fetch


def assert_no_temporary_left(uri: str) -> None:
    """No `skald_*` table or view is left in the PostgreSQL database at `uri`."""
    from sqlglot import exp

    from airflow_skald.core.engine.sql import dialect as D
    from airflow_skald.core.engine.sql.postgres_session import PostgresSession

    left = PostgresSession(uri)
    try:
        found = left.query(
            exp.select(D.column("relname"))
            .from_(exp.to_table("pg_catalog.pg_class"))
            .where(exp.Like(this=D.column("relname"), expression=D.text("skald\\_%")))
        )
        assert found.num_rows == 0
    finally:
        left.close()
