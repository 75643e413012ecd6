"""PostgreSQL runs each pass of the SQL layer with the chunk path's answers (docs/design.md
§2b): the same phase-1 statistics, root histogram, node and figures, released rows (the
engine's SELECT of them) as a multiset, over generated tables loaded into a real PostgreSQL
on 127.0.0.1:5432 (a database per test module, dropped after); no temporary table is left."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from engine_compare import (
    assert_no_temporary_left,
    chunk_path,
    config,
    fetched_rows,
    rows_multiset,
    table,
)
from helpers_postgres import fresh_database
from sqlglot import exp
from test_engine_microaggregation import CASES as MICRO

from airflow_skald.core.config.run_config import config_from_dict
from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.engine.sql import passes
from airflow_skald.core.engine.sql.domain import SqlInput
from airflow_skald.core.engine.sql.postgres_session import PostgresSession
from airflow_skald.core.passes import pipeline as P


@pytest.fixture(scope="module")
def pg_uri():
    with fresh_database("skald_engines") as uri:
        yield uri


def _load(uri: str, name: str, data: pa.Table) -> None:
    import adbc_driver_postgresql.dbapi as pg

    with pg.connect(uri) as conn:
        with conn.cursor() as cur:
            cur.adbc_ingest(name, data, mode="create")
        conn.commit()


CASES = [
    (21, {}),
    (
        22,
        {
            "privacy": {"l_diversity": [{"attribute": "disease", "l": 2}]},
            "suppressed_records": "drop",
        },
    ),
    (
        23,
        {
            "privacy": {"t_closeness": [{"attribute": "score", "t": 0.4, "distance": "ordered"}]},
            "memory": {"histogram_bins": 250, "root": "adaptive"},
        },
    ),
    (  # local recoding: each row at its step's node (ADR 0063)
        24,
        {
            "transformation": {"local_recoding": {"records": 0.005}},
            "privacy": {"k": 5, "suppression_limit": 0.1},
        },
    ),
    (25, MICRO[2]),  # microaggregation: integer means from class sums (ADR 0064)
    (26, MICRO[1]),  # microaggregation: five functions from (class, value) tables
]


@pytest.mark.parametrize("seed,settings", CASES)
def test_postgres_passes_equal_the_chunk_path(tmp_path, pg_uri, seed, settings):
    data = table(260, seed)
    inp = tmp_path / "in"
    inp.mkdir()
    pq.write_table(data, inp / "in.parquet")
    relation = f"people_{seed}"
    _load(pg_uri, relation, data)
    cfg = config_from_dict(config(inp, tmp_path / "out", **settings))
    ref = chunk_path(cfg, tmp_path / "chunks", aggregate=True)
    chunks, stats, counts, decision = ref.chunks, ref.stats, ref.counts, ref.decision
    staged = tmp_path / "chunks"

    session = PostgresSession(pg_uri)
    try:
        schema = session.query(exp.select(exp.Star()).from_(D.table(relation)).limit(0)).schema
        source = SqlInput(relation, schema, f"table {relation}")
        stats_sql = passes.domain_stats(session, source, cfg, chunks)
        assert stats_sql.to_dict() == stats.to_dict()
        plan_sql = P.plan_root(cfg, stats_sql)
        counts_sql = passes.histogram(session, source, cfg, plan_sql)
        assert counts_sql.compact().to_bytes() == counts.compact().to_bytes()
        plan_sql = plan_sql.with_root(counts_sql.node, counts_sql.bounded_bins)
        decision_sql = P.search_lattice(cfg, plan_sql, counts_sql)
        assert (decision_sql.node, decision_sql.figures) == (decision.node, decision.figures)
        steps = [s.to_dict() for s in decision_sql.steps]
        assert steps == [s.to_dict() for s in decision.steps]
        assert bool(steps) == ("transformation" in settings)
        released, fetch = fetched_rows(session)
        aggregates = P.microaggregate(cfg, plan_sql, counts_sql, decision_sql)
        parts = [("p", source)]
        passes.write_parts(session, source, parts, cfg, plan_sql, decision_sql, fetch, aggregates)
        assert released == rows_multiset(staged)
    finally:
        session.close()
    assert_no_temporary_left(pg_uri)


def test_a_nan_and_an_infinity_are_counted_in_postgresql(pg_uri):
    """PostgreSQL has no isnan(): the dialect writes ISNAN as an equality with NaN (its NaN
    equals itself), so phase 1 counts NaN among the nulls and infinities apart."""
    from airflow_skald.core.engine.sql.domain import summaries

    values = [1.5, float("nan"), float("inf"), float("-inf"), 2.0, float("nan"), None]
    _load(pg_uri, "odd_doubles", pa.table({"x": pa.array(values, pa.float64())}))
    session = PostgresSession(pg_uri)
    try:
        schema = pa.schema([("x", pa.float64())])
        q = config_from_dict(
            config(
                "in", "out", quasi_identifiers=[{"name": "x", "type": "numerical", "min_width": 1}]
            )
        ).quasi_identifiers[0]
        got = summaries(session, SqlInput("odd_doubles", schema, "odd_doubles"), [q])
    finally:
        session.close()
    assert (got["n"], got["nulls0"], int(got["nan0"]), int(got["infinite0"])) == (7, 1, 2, 2)
