"""A research subset inside the SQL engines (docs/design.md §4e and §2b, ADR 0068): δ-presence
(δmin > 0 and = 0), exact k-map, l-diversity and ARX's journalist profitability without
attack over a subset, the subset a boolean column or a
dataset of keys; DuckDB's run releases what the chunk path releases (the whole manifest, its
population counts, the rows as a multiset), and PostgreSQL's passes give the chunk path's."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from engine_compare import (
    PROFIT,
    assert_no_temporary_left,
    assert_same_release,
    chunk_path,
    config,
    fetched_rows,
    run_cli,
    table,
)

CASES = [
    (  # δ-presence with δmin > 0: a population class without a subset record fails its node
        51,
        "column",
        {"privacy": {"k": 2, "delta_presence": {"min": 0.1, "max": 0.7}}},
    ),
    (  # δ-presence with δmin = 0 and l-diversity over the subset's records (ADR 0045)
        52,
        "column",
        {
            "privacy": {
                "k": 2,
                "delta_presence": {"min": 0.0, "max": 0.5},
                "l_diversity": [{"attribute": "disease", "l": 2}],
                "suppression_limit": 0.1,
            },
            "suppressed_records": "drop",
        },
    ),
    (  # l-diversity over the subset, whose records hold no null: the population's null is
        # kept (counted 0) when the chunks' phase-1 statistics merge
        56,
        "column, no null",
        {
            "privacy": {
                "k": 2,
                "delta_presence": {"min": 0.0, "max": 0.6},
                "l_diversity": [{"attribute": "disease", "l": 2}],
                "suppression_limit": 0.1,
            },
        },
    ),
    (  # exact k-map and t-closeness (the subset's distribution), the subset a dataset of keys; adaptive root (the counting chain)
        53,
        "keys",
        {
            "privacy": {
                "k_map": {"k": 4},
                "t_closeness": [{"attribute": "score", "t": 0.3, "distance": "ordered"}],
                "suppression_limit": 0.1,
            },
            "memory": {"histogram_bins": 300, "root": "adaptive"},
        },
    ),
    (  # ARX's ProfitabilityJournalistNoAttack: population records per class (ADR 0046)
        57,
        "keys",
        {
            "privacy": {
                "profitability": {**PROFIT, "attacker": "journalist", "attack": False},
                "suppression_limit": 0.1,
            }
        },
    ),
]


def population(
    folder, seed: int, n_files: int = 2, rows: int = 150, null_out: bool = False
) -> list[pa.Table]:
    """Population files with a subset flag (`in_study`: about one record in three; `null_out`:
    no record of the subset has a null disease)."""
    folder.mkdir(parents=True, exist_ok=True)
    tables = []
    for i in range(n_files):
        data = table(rows, seed * 100 + i)
        rng = np.random.default_rng(seed * 100 + i)
        flag = pa.array(rng.random(rows) < 0.35)
        if null_out:
            flag = pc.and_(flag, data.column("disease").is_valid())
        data = data.append_column("in_study", flag)
        pq.write_table(data, folder / f"in-{i:03d}.parquet", row_group_size=97)
        tables.append(data)
    return tables


def subset_of(tmp_path, how: str, tables: list[pa.Table]) -> dict:
    if how.startswith("column"):
        return {"column": "in_study"}
    whole = pa.concat_tables(tables)
    keys = whole.filter(whole.column("in_study")).select(["pid"])
    path = tmp_path / "subset.parquet"
    pq.write_table(keys, path)
    return {"path": str(path), "key": ["pid"]}


@pytest.mark.parametrize("seed,how,settings", CASES)
def test_duckdb_research_subset_releases_what_the_chunk_path_releases(
    tmp_path, capsys, seed, how, settings
):
    tables = population(tmp_path / "in", seed, null_out=how.endswith("no null"))
    subset = subset_of(tmp_path, how, tables)
    out = {}
    for engine in ("chunks", "duckdb"):
        out[engine] = tmp_path / f"out-{engine}"
        cfg = config(
            tmp_path / "in",
            out[engine],
            execution={"engine": engine},
            research_subset=subset,
            **settings,
        )
        if how == "keys":  # the flag is derived from the keys, not released as a column
            cfg["direct_identifiers"] = [*cfg["direct_identifiers"], "in_study"]
        code, err = run_cli(tmp_path, cfg, engine, capsys)
        assert code == 0, err
    assert_same_release(out["duckdb"], out["chunks"])
    manifest = json.loads((out["duckdb"] / "manifest.json").read_text())
    assert "population_counts" in manifest
    assert (out["duckdb"] / manifest["population_counts"]["file"]).read_bytes() == (
        out["chunks"] / manifest["population_counts"]["file"]
    ).read_bytes()
    released = pa.concat_tables(pq.read_table(p) for p in sorted(out["duckdb"].glob("part-*")))
    assert "in_study" not in released.column_names
    assert released.num_rows < sum(t.num_rows for t in tables)


def test_postgres_passes_with_a_research_subset_equal_the_chunk_path(tmp_path):
    """PostgreSQL's passes with a keyed subset, δ-presence (δmin > 0) and l-diversity over the
    subset: the chunk path's statistics, root counts, node, figures and released rows; no
    temporary table or view is left."""

    from engine_compare import rows_multiset
    from helpers_postgres import fresh_database
    from sqlglot import exp
    from test_postgres_passes import _load

    from airflow_skald.core.config.run_config import config_from_dict
    from airflow_skald.core.engine.sql import dialect as D
    from airflow_skald.core.engine.sql import passes
    from airflow_skald.core.engine.sql.domain import SqlInput
    from airflow_skald.core.engine.sql.postgres_session import PostgresSession
    from airflow_skald.core.passes import pipeline as P

    tables = population(tmp_path / "in", 54, n_files=1, rows=240)
    settings = {
        "privacy": {
            "k": 2,
            "delta_presence": {"min": 0.1, "max": 0.8},
            "l_diversity": [{"attribute": "disease", "l": 2}],
            "suppression_limit": 0.1,
        },
        "research_subset": subset_of(tmp_path, "keys", tables),
    }
    cfg = config_from_dict(config(tmp_path / "in", tmp_path / "out", **settings))
    staged = tmp_path / "chunks"
    ref = chunk_path(cfg, staged)
    chunks, stats, plan, counts, decision = (
        ref.chunks,
        ref.stats,
        ref.plan,
        ref.counts,
        ref.decision,
    )
    with fresh_database("skald_subset") as uri:
        _load(uri, "people", tables[0])
        session = PostgresSession(uri)
        try:
            schema = session.query(exp.select(exp.Star()).from_(D.table("people")).limit(0))
            source = SqlInput("people", schema.schema, "table people")
            stats_sql = passes.domain_stats(session, source, cfg, chunks)
            assert stats_sql.to_dict() == stats.to_dict()
            counts_sql = passes.histogram(session, source, cfg, plan)
            assert counts_sql.compact().to_bytes() == counts.compact().to_bytes()
            decision_sql = P.search_lattice(cfg, plan, counts_sql)
            assert (decision_sql.node, decision_sql.figures) == (decision.node, decision.figures)
            released, fetch = fetched_rows(session)

            parts = [("p", source)]
            passes.write_parts(session, source, parts, cfg, plan, decision_sql, fetch)
            assert released == rows_multiset(staged) and released
        finally:
            session.close()
        assert_no_temporary_left(uri)


def test_a_subset_keyed_by_a_double_column_is_refused_in_one_line(tmp_path, capsys):
    """pyarrow's text of a double is not the engines' (1.0 vs 1): refused, exit 2, no
    release, rather than another subset than the chunk path's."""
    tables = population(tmp_path / "in", 55, n_files=1, rows=60)
    pq.write_table(tables[0].select(["income"]).slice(0, 20), tmp_path / "keys.parquet")
    subset = {"path": str(tmp_path / "keys.parquet"), "key": ["income"]}
    out = tmp_path / "out"
    cfg = config(
        tmp_path / "in",
        out,
        execution={"engine": "duckdb"},
        research_subset=subset,
        privacy={"k_map": {"k": 2}},
    )
    cfg["direct_identifiers"] = [*cfg["direct_identifiers"], "in_study"]
    code, err = run_cli(tmp_path, cfg, "refused", capsys)
    assert code == 2
    assert err.strip().count("\n") == 0
    assert "research_subset key column 'income' is double" in err
    assert not out.exists()
