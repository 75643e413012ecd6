"""The counting node in DuckDB (ADR 0065): the input is grouped at the chain node its
approximate distinct counts point to, and every node is judged by exact counts, so the
counting node is the chunk path's whatever node the table is grouped at, an estimate too
low (a start before the answer) or too high (a start at or past it: the chain is judged
again from the first node). Real DuckDB, in memory; the chunk path's node as the answer."""

from __future__ import annotations

import pyarrow as pa
from engine_compare import chunk_path, config, write_files
from sqlglot import exp
from test_duckdb_passes import _open

from airflow_skald.core.config.run_config import config_from_dict
from airflow_skald.core.engine.sql import (
    chain_estimate,
    class_sample,
    counts,
    grouped_table,
    passes,
    subset,
)
from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.engine.sql.coding import INPUT
from airflow_skald.core.engine.sql.domain import SqlInput
from airflow_skald.core.passes import pipeline as P


def test_every_start_on_the_chain_gives_the_chunk_paths_node(tmp_path, monkeypatch):
    """`judged` from every start, and `stepped` (ADR 0083) grouping at chain nodes before,
    at and past the answer: with the bits of the node before (`coded_place`: their sum the
    node before's exact COUNT(DISTINCT)), and without (`_MASK_BITS` 1, `PLACED_CODES` 0: no
    step has a place, the node before judged by its own table); `root_counts` (DuckDB:
    `stepped` at the estimated fit) the chunk path's node. A mapped QID's step (city, zip)
    placed by its codes modulo `_MASK_BITS` (2 here): the bits count the finer node exactly."""
    inp = write_files(tmp_path / "in", 2, 150, 7)
    settings = {"memory": {"histogram_bins": 300, "root": "adaptive"}}
    cfg = config_from_dict(config(inp, tmp_path / "out", **settings))
    expected = tuple(chunk_path(cfg, tmp_path / "chunks").counts.node)
    session, source = _open(sorted(str(p) for p in inp.glob("*.parquet")))
    try:
        plan = P.plan_root(cfg, passes.domain_stats(session, source, cfg, []))
        chain = [tuple(node) for node in plan.counting_chain()]
        answer = chain.index(expected)
        assert 0 < answer < len(chain) - 1  # starts before, at and past the answer
        source = subset.flagged(session, source, cfg)
        coding = passes.coding_of(session, source, plan, cfg)
        estimated = chain_estimate.estimated_start(session, source, coding, plan)
        assert estimated <= answer  # 150 x 2 records: the estimates are exact here
        for start in sorted({0, answer - 1, answer, answer + 1, len(chain) - 2}):
            *_, index = counts.judged(session, source, coding, plan, start)
            assert chain[index] == expected, start
        for at in sorted({1, answer - 1, answer, answer + 1, len(chain) - 1}):
            place = grouped_table.coded_place(coding, chain[at - 1], chain[at])
            table, _ = grouped_table.base_table(
                session, source, coding, plan, chain[at], False, place
            )
            finer = grouped_table.sizes(session, SqlInput(table, pa.schema([]), ""), True)[1]
            exact = counts.chain_select(source, coding, plan, chain[at - 1])
            assert finer == session.query(exact).column("n")[0].as_py(), at
        for bits, codes in (
            (grouped_table.MASK_BITS, grouped_table.PLACED_CODES),
            (1, 0),
        ):  # (1, 0): none
            monkeypatch.setattr(grouped_table, "MASK_BITS", bits)
            monkeypatch.setattr(grouped_table, "PLACED_CODES", codes)
            for at in sorted({0, answer - 1, answer, answer + 2, len(chain) - 1}):
                *_, index = counts.stepped(session, source, coding, plan, at)
                assert chain[index] == expected, (codes, at)
        monkeypatch.setattr(grouped_table, "PLACED_CODES", 1 << 24)
        monkeypatch.setattr(grouped_table, "MASK_BITS", 2)  # city's and zip's codes modulo 2
        for finer, coarser in (((0, 1, 0, 3), (1, 1, 0, 3)), ((0, 1, 0, 3), (0, 1, 1, 3))):
            place = grouped_table.coded_place(coding, finer, coarser)
            assert isinstance(place, exp.Mod), coarser  # mapped QIDs: their codes' place
            table, _ = grouped_table.base_table(
                session, source, coding, plan, coarser, False, place
            )
            bits = grouped_table.sizes(session, SqlInput(table, pa.schema([]), ""), True)[1]
            exact = counts.chain_select(source, coding, plan, finer)
            assert bits == session.query(exact).column("n")[0].as_py(), coarser
        assert counts.root_counts(session, source, coding, plan).node == expected
    finally:
        session.close()


def test_phase_1_bounds_decide_nodes_as_the_exact_counts_and_skip_the_estimate(tmp_path):
    """`sure_fits` (ADR 0077): a node it says fits has at most N_RAM - 1 non-empty bins, one it
    says does not has more (the exact COUNT(DISTINCT)s over the input); the estimating scan
    covers only the nodes in doubt, and is not run when none is."""
    inp = write_files(tmp_path / "in", 2, 150, 7)
    session, source = _open(sorted(str(p) for p in inp.glob("*.parquet")))
    try:
        for bins, scans in ((300, 1), (3, 0)):
            settings = {"memory": {"histogram_bins": bins, "root": "adaptive"}}
            cfg = config_from_dict(config(inp, tmp_path / "out", **settings))
            plan = P.plan_root(cfg, passes.domain_stats(session, source, cfg, []))
            flagged = subset.flagged(session, source, cfg)
            coding = passes.coding_of(session, flagged, plan, cfg)
            sure = chain_estimate.sure_fits(plan, len(coding.values))
            for node, decided in zip(plan.counting_chain(), sure, strict=True):
                select = counts.chain_select(flagged, coding, plan, tuple(node))
                n = session.query(select).column("n")[0].as_py()
                assert decided is None or decided == (n <= plan.n_ram - 1), (bins, node)
            asked = _estimates(session, flagged, coding, plan)
            assert asked == scans, sure
            assert (None in sure) == bool(scans) and True in sure
    finally:
        session.close()


def test_the_class_sample_holds_whole_classes_and_counts_exactly_at_rate_1(tmp_path, monkeypatch):
    """`class_sample` (ADR 0083): at rate 1 its estimates are every chain node's exact
    COUNT(DISTINCT); at rate 3 the sample holds each class of its top node with all the
    input's rows of it or none, some classes and not all, whether a mapped QID above level 0
    is left out of the hash (enough classes without it) or hashed by its code (a join), and
    a mapped QID at level 0 is hashed by its raw value (no join); a top node of one class is
    not sampled (its estimates exact whatever the rate)."""
    inp = write_files(tmp_path / "in", 2, 150, 7)
    settings = {"memory": {"histogram_bins": 300, "root": "adaptive"}}
    cfg = config_from_dict(config(inp, tmp_path / "out", **settings))
    session, source = _open(sorted(str(p) for p in inp.glob("*.parquet")))
    try:
        plan = P.plan_root(cfg, passes.domain_stats(session, source, cfg, []))
        source = subset.flagged(session, source, cfg)
        coding = passes.coding_of(session, source, plan, cfg)
        chain = [tuple(node) for node in plan.counting_chain()]
        keys = [coding.bin_keys(plan, node) for node in chain]
        exact = [
            session.query(counts.chain_select(source, coding, plan, node)).column("n")[0].as_py()
            for node in chain
        ]
        assert class_sample.estimates(session, source, coding, keys, chain[-1], 1) == exact
        tops = tuple(d.top for d in plan.dims)  # one class: nothing to hash, every row counted
        assert class_sample.estimates(session, source, coding, keys, tops, 3) == exact
        read = class_sample.class_hash(coding, chain[0], 3)
        assert {c.table for t in read for c in t.find_all(exp.Column)} == {INPUT}  # city, zip raw
        top = (1, 1, 1, 3)  # city and zip (mapped) above level 0; age x income 147k classes
        for least, joined in ((1, set()), (10**9, {"m0", "m2"})):
            monkeypatch.setattr(class_sample, "MIN_CLASSES", least)
            terms = class_sample.class_hash(coding, top, 3)
            assert {c.table for t in terms for c in t.find_all(exp.Column)} - {INPUT} == joined
            whole = _classes(session, source, coding, plan, top)
            sample = class_sample.sampled(session, source, coding, top, 3)
            kept = _classes(session, sample, coding, plan, top)
            assert 0 < len(kept) < len(whole)
            assert all(whole[k] == n for k, n in kept.items())
    finally:
        session.close()


def _classes(session, source, coding, plan, node) -> dict[int, int]:
    """The records of each class of `node` in `source`."""
    key = coding.key(plan, node)
    select = coding.relation(source, key).select(key.as_("k"), D.count_star().as_("n"))
    table = session.query(select.group_by(key))
    return dict(zip(table.column("k").to_pylist(), table.column("n").to_pylist(), strict=True))


def _estimates(session, source, coding, plan) -> int:
    """`estimated_start` run on the real session: the estimating scans it asked (DuckDB's:
    the distinct counts over the sample view of classes, `class_sample`)."""
    asked = []
    query = session.query

    def recorded(statement, *args):
        read = {t.name for t in statement.find_all(exp.Table)}
        asked.append(any(name.startswith("skald_sample_") for name in read))
        return query(statement, *args)

    session.query = recorded
    try:
        chain_estimate.estimated_start(session, source, coding, plan)
    finally:
        del session.query
    return sum(asked)
