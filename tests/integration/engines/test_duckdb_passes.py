"""DuckDB runs each pass as SQL with the chunk path's answers (docs/design.md §2b): phase 1's
statistics, the root histogram (paper and adaptive roots), the search's node and figures from
them, the released rows as a multiset and their class table, over generated tables and
settings. Real DuckDB, in memory."""

from __future__ import annotations

import numpy as np
import pytest
from engine_compare import chunk_path, config, rows_multiset, write_files
from sqlglot import exp

from airflow_skald.core.config.run_config import config_from_dict
from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.engine.sql import passes
from airflow_skald.core.engine.sql.domain import SqlInput
from airflow_skald.core.engine.sql.duckdb_session import DuckDBSession
from airflow_skald.core.engine.sql.grouped_classes import classes_of
from airflow_skald.core.engine.sql.release import copy_to_parquet, grouped_release
from airflow_skald.core.passes import pipeline as P


def _open(files, rows=False):
    session = DuckDBSession(1)
    args = [exp.Array(expressions=[D.text(f) for f in files])]
    if rows:
        args.append(exp.EQ(this=exp.var("file_row_number"), expression=exp.true()))
    source = exp.Table(this=exp.Anonymous(this="read_parquet", expressions=args))
    view = exp.Create(
        this=D.table("skald_input"),
        kind="VIEW",
        expression=exp.select(exp.Star()).from_(source),
        properties=exp.Properties(expressions=[exp.TemporaryProperty()]),
    )
    session.execute(view)
    schema = session.query(exp.select(exp.Star()).from_(D.table("skald_input")).limit(0)).schema
    return session, SqlInput("skald_input", schema, "the input")


def _same_first_rows(cfg, plan, counts, chunks, files):
    from airflow_skald.core.count.first_rows import FirstRowScan

    node = tuple(counts.node)
    keys = counts.classes.keys
    expected = P.first_rows(cfg, plan, chunks, node, keys)
    scan = FirstRowScan(keys)
    for i, f in enumerate(files):
        session, source = _open([f], rows=True)
        try:
            scan.add(*passes.chunk_first_rows(session, source, cfg, plan, node, keys, i))
        finally:
            session.close()
    # codes are chunk << 32 | row (the chunk path cuts files into chunk_rows): the same order
    assert (np.argsort(scan.result(), kind="stable") == np.argsort(expected, kind="stable")).all()
    assert len(chunks) > len(files)


CASES = [
    # (seed, files, rows, settings)
    (1, 2, 160, {}),
    (2, 3, 120, {"memory": {"histogram_bins": 200, "root": "adaptive"}}),
    (3, 1, 300, {"privacy": {"k": 5, "l_diversity": [{"attribute": "disease", "l": 2}]}}),
    (
        4,
        2,
        150,
        {
            "privacy": {"t_closeness": [{"attribute": "score", "t": 0.4, "distance": "ordered"}]},
            "memory": {"histogram_bins": 250, "root": "adaptive"},
            "suppressed_records": "drop",
        },
    ),
    (5, 2, 140, {"quality": {"objective": "loss"}, "privacy": {"suppression_limit": 0.1}}),
]


@pytest.mark.parametrize("seed,n_files,rows,settings", CASES)
def test_duckdb_passes_equal_the_chunk_path(tmp_path, seed, n_files, rows, settings):
    inp = write_files(tmp_path / "in", n_files, rows, seed)
    cfg = config_from_dict(config(inp, tmp_path / "out", **settings))
    staged = tmp_path / "chunks"
    ref = chunk_path(cfg, staged)
    chunks, stats, counts, decision = ref.chunks, ref.stats, ref.counts, ref.decision
    expected_classes = P.count_written(cfg, str(staged), ref.names)

    files = sorted(str(p) for p in inp.glob("*.parquet"))
    session, source = _open(files)
    try:
        stats_sql = passes.domain_stats(session, source, cfg, chunks)
        assert stats_sql.to_dict() == stats.to_dict()
        plan_sql = P.plan_root(cfg, stats_sql)
        counts_sql = passes.histogram(session, source, cfg, plan_sql)
        assert counts_sql.node == counts.node
        assert counts_sql.compact().to_bytes() == counts.compact().to_bytes()
    finally:
        session.close()
    plan_sql = plan_sql.with_root(counts_sql.node, counts_sql.bounded_bins)
    decision_sql = P.search_lattice(cfg, plan_sql, counts_sql)
    if seed == 1:  # the first rows of classes (the sample-based models' order), in input order
        _same_first_rows(cfg, plan_sql, counts_sql, chunks, files)
    assert decision_sql.node == decision.node
    assert decision_sql.figures == decision.figures
    assert decision_sql.figures.dm_star == decision.figures.dm_star

    written = tmp_path / "sql"
    written.mkdir()
    for i, f in enumerate(files):
        session, source = _open([f])
        try:
            path = str(written / f"part-{i:05d}.parquet")

            def write(select, _name, session=session, path=path):
                session.execute(copy_to_parquet(select, path))

            passes.write_parts(session, source, [("p", source)], cfg, plan_sql, decision_sql, write)
            assert session.temporaries  # mapping, label and suppressed tables were sent
        finally:
            session.close()
        assert not session.temporaries  # and dropped
    assert rows_multiset(written) == rows_multiset(staged)
    session = DuckDBSession(1)
    try:
        names = [*cfg.qid_names, *cfg.criteria_attributes]
        parts = sorted(str(p) for p in written.glob("*.parquet"))
        relation = exp.Table(
            this=exp.Anonymous(
                this="read_parquet", expressions=[exp.Array(expressions=[D.text(p) for p in parts])]
            )
        )
        grouped = session.query(grouped_release(relation, names))
    finally:
        session.close()
    classes = classes_of(grouped, cfg.qid_names, list(cfg.criteria_attributes))
    assert classes.named() == expected_classes.named()
    assert classes.n_rows == expected_classes.n_rows
    # as a cursor delivers it, batch by batch (PostgreSQL's): labels met in later batches
    batches = iter(grouped.to_batches(max_chunksize=3))
    streamed = classes_of(batches, cfg.qid_names, list(cfg.criteria_attributes))
    assert streamed.labels == classes.labels
    assert streamed.named() == expected_classes.named()
