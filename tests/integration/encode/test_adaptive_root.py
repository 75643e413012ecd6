"""The adaptive root (docs/design.md §4a, ADR 0012) against an independent reading of its rule.

The expected root is computed here from the oracle's per-level codes (tests/oracle.py): the
chain from the all-zeros node up to paper mode's root (one QID raised one level per step: the
largest top first, then the larger bin reduction, then the later QID in priority order), and
the first chain node whose non-empty bins over all records are at most N_RAM - 1.
"""

from __future__ import annotations

import math
import random

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import _class_ids, _prepare, _priority_order, exhaustive_search, ram_root
from skald_testdata import read_release, write_chunks, write_config
from strategies import QIDS, datasets, paper_like_table

from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.count.root_counts import RootCounts
from airflow_skald.core.encode.adaptive_root import ChainCounts, merge_on_chain
from airflow_skald.core.encode.root import plan_root
from airflow_skald.core.passes.pipeline import count_histogram, list_chunks, scan_domain
from airflow_skald.core.run.runner import run


def expected_root(df, qids, bins, priority, attributes=()) -> dict[str, int]:
    """The adaptive root by the rule, by brute force (pandas groupby per chain node)."""
    prepared = _prepare(df, qids)
    order = _priority_order(qids, priority)
    upper = ram_root(df, qids, bins, priority, sum(df[a].nunique() for a in attributes))
    node = {q: 0 for q in prepared}

    def key(q):
        cards, level = prepared[q]["n_bins"], node[q]
        return (-prepared[q]["top"], -(cards[level] / cards[level + 1]), -order.index(q))

    while True:
        ids = pd.Series(_class_ids(prepared, node))
        if attributes:
            filled = sum(len(set(zip(ids, df[a], strict=True))) for a in attributes)
        else:
            filled = ids.nunique()
        if filled <= bins - 1 or node == upper:
            return dict(node)
        node[min((q for q in node if node[q] < upper[q]), key=key)] += 1


def _config(tmp, df, qids, k, limit, bins, priority, root="adaptive", name="c", sizes=None):
    write_chunks(df, tmp / f"in-{name}", sizes if sizes is not None else [])
    return write_config(
        tmp / f"{name}.yaml",
        {
            "input": {"path": str(tmp / f"in-{name}")},
            "output": {"path": str(tmp / f"out-{name}")},
            "chunk_rows": 1000,
            "direct_identifiers": ["pid"],
            "sensitive_attributes": ["sens"],
            "quasi_identifiers": qids,
            "privacy": {"k": k, "suppression_limit": limit},
            "memory": {"histogram_bins": bins, "root": root},
            "qid_priority": priority,
        },
    )


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=datasets(), cut=st.integers(3, 50))
def test_adaptive_root_by_the_rule_and_never_worse_than_paper(tmp_path_factory, data, cut):
    df, qids, oracle_qids, k, limit, bins, priority = data
    bins = bins or 10**9
    try:
        paper = ram_root(df, oracle_qids, bins, priority)
    except ValueError:
        return  # too few bins even for the top node: the bad-input tests cover it
    tmp = tmp_path_factory.mktemp("adaptive")
    sizes = [cut] * (len(df) // cut)
    manifest = run(load_config(_config(tmp, df, qids, k, limit, bins, priority, sizes=sizes)))
    root = expected_root(df, oracle_qids, bins, priority)
    assert manifest["root_mode"] == "adaptive"
    assert manifest["root_node"] == root
    assert manifest["paper_root_node"] == paper
    assert all(root[q] <= paper[q] for q in root)
    found = exhaustive_search(df, oracle_qids, k, limit, priority, root=root)
    assert manifest["node"] == found["node"]
    assert manifest["dm_star"] == found["dm_star"]
    assert manifest["n_suppressed"] == found["n_suppressed"]
    assert (
        found["dm_star"] <= exhaustive_search(df, oracle_qids, k, limit, priority, paper)["dm_star"]
    )
    if bins == 10**9:  # level 0 fits: the unbounded (in-memory) optimum
        assert set(root.values()) == {0}
        assert found == exhaustive_search(df, oracle_qids, k, limit, priority)


@pytest.fixture(scope="module")
def table() -> pd.DataFrame:
    return paper_like_table()


def _oracle_qids():
    return [{**q, "widths": q.get("widths")} for q in QIDS]


PRIORITY = ["age", "bmi", "pin", "blood"]


def _table_config(tmp, df, name, sizes, chunk_rows=10**6, bins=400, root="adaptive", **extra):
    write_chunks(df, tmp / f"in-{name}", sizes)
    return load_config(
        write_config(
            tmp / f"{name}.yaml",
            {
                "input": {"path": str(tmp / f"in-{name}")},
                "output": {"path": str(tmp / f"out-{name}")},
                "chunk_rows": chunk_rows,
                "direct_identifiers": ["pid"],
                "sensitive_attributes": ["cond"],
                "quasi_identifiers": QIDS,
                "privacy": {"k": 10, "suppression_limit": 0.02, **extra},
                "memory": {"histogram_bins": bins, "root": root},
                "qid_priority": PRIORITY,
            },
        )
    )


@pytest.mark.parametrize("bins", [400, 1500, 10**6])
def test_adaptive_root_on_a_larger_table(tmp_path, table, bins):
    """Root by the rule, between level 0 and paper mode's root, DM* never worse."""
    adaptive = run(_table_config(tmp_path, table, "a", [1000, 1000], bins=bins))
    paper = run(_table_config(tmp_path, table, "p", [1000, 1000], bins=bins, root="paper"))
    qids = _oracle_qids()
    assert adaptive["root_node"] == expected_root(table, qids, bins, PRIORITY)
    assert paper["root_node"] == ram_root(table, qids, bins, PRIORITY)
    assert adaptive["paper_root_node"] == paper["root_node"] == paper["paper_root_node"]
    assert paper["root_mode"] == "paper" and adaptive["root_mode"] == "adaptive"
    assert all(adaptive["root_node"][q] <= paper["root_node"][q] for q in PRIORITY)
    assert adaptive["dm_star"] <= paper["dm_star"]
    assert adaptive["root_bins_nonempty"] <= bins - 1


def test_criteria_count_class_value_pairs(tmp_path, table):
    """With l-diversity the bins N_RAM bounds are (class, value) pairs."""
    ld = {"l_diversity": [{"attribute": "cond", "l": 2}]}
    bins = 1500
    adaptive = run(_table_config(tmp_path, table, "a", [1000, 1000], bins=bins, **ld))
    qids = _oracle_qids()
    assert adaptive["root_node"] == expected_root(
        table.rename(columns={"cond": "cond"}), qids, bins, PRIORITY, attributes=["cond"]
    )
    # the manifest's non-empty root bins are those pairs (not classes + pairs)
    ids = pd.Series(_class_ids(_prepare(table, qids), adaptive["root_node"]))
    pairs = len(set(zip(ids, table["cond"], strict=True)))
    assert adaptive["root_bins_nonempty"] == pairs <= bins - 1
    other = run(_table_config(tmp_path, table, "b", [300] * 9, chunk_rows=250, bins=bins, **ld))
    for key in ("root_node", "node", "dm_star", "n_suppressed", "root_bins_nonempty"):
        assert other[key] == adaptive[key], key
    paper = run(_table_config(tmp_path, table, "p", [1000, 1000], bins=bins, root="paper", **ld))
    assert adaptive["dm_star"] <= paper["dm_star"]


def test_any_chunking_and_workers_give_the_same_root_node_and_bytes(tmp_path, table):
    base = run(_table_config(tmp_path, table, "one", [], bins=400))
    rows = read_release(tmp_path / "out-one")
    variants = [([], 250, "slices"), ([1000, 999, 1], 10**6, "files"), ([700] * 4, 333, "mixed")]
    for sizes, chunk_rows, name in variants:
        m = run(_table_config(tmp_path, table, name, sizes, chunk_rows=chunk_rows, bins=400))
        assert m["chunks"] > 1
        for key in ("root_node", "node", "dm_star", "n_suppressed", "root_bins_nonempty"):
            assert m[key] == base[key], (name, key)
        pd.testing.assert_frame_equal(read_release(tmp_path / f"out-{name}"), rows)
    parallel = run(
        _table_config(tmp_path, table, "par", [700] * 4, chunk_rows=333, bins=400), workers=2
    )
    for key in ("root_node", "node", "dm_star", "n_suppressed", "parts"):
        assert parallel[key] == m[key], key
    for part in m["parts"]:
        assert (tmp_path / "out-par" / part).read_bytes() == (
            tmp_path / "out-mixed" / part
        ).read_bytes()


def test_partials_merge_to_the_same_counts_in_any_order_and_grouping(tmp_path, table):
    """Partials counted at different chain nodes merge to the first fitting node's counts."""
    config = _table_config(tmp_path, table, "g", [50, 400, 1200, 100, 700, 250, 30], bins=300)
    chunks = list_chunks(config)
    plan = plan_root(config, scan_domain(config, chunks))
    assert len(plan.chain) > 2
    whole = count_histogram(config, plan, chunks)
    singles = [count_histogram(config, plan, [c]) for c in chunks]
    assert len({p.node for p in singles}) > 1  # counted at different chain nodes
    rng = random.Random(3)
    for _ in range(5):
        rng.shuffle(singles)
        cut = sorted(rng.sample(range(1, len(singles)), 3))
        groups = [singles[a:b] for a, b in zip([0, *cut], [*cut, len(singles)], strict=True)]
        merged = merge_on_chain(plan, [merge_on_chain(plan, g) for g in groups])
        assert merged.node == whole.node
        assert merged.to_bytes() == whole.to_bytes()
    # the counts at the root equal a direct count there (a fixed root: the chain cut at it)
    direct = count_histogram(config, plan.with_root(whole.node), chunks)
    assert direct.node == whole.node
    assert np.array_equal(direct.classes.keys, whole.classes.keys)
    assert np.array_equal(direct.classes.counts, whole.classes.counts)
    n = whole.classes.n_bins
    assert n <= plan.n_ram - 1
    before = plan.chain[plan.chain.index(whole.node) - 1]
    finer = count_histogram(config, plan.with_root(before), chunks)
    assert finer.classes.n_bins > plan.n_ram - 1  # the node below on the chain does not fit


def test_byte_form_keeps_the_node(tmp_path, table):
    config = _table_config(tmp_path, table, "b", [1000], bins=300)
    chunks = list_chunks(config)
    plan = plan_root(config, scan_domain(config, chunks))
    counts = count_histogram(config, plan, chunks)
    back = RootCounts.from_bytes(counts.to_bytes())
    assert back.node == counts.node and back.to_bytes() == counts.to_bytes()
    acc = ChainCounts(plan, plan.chain, {})
    acc.add(back)
    assert acc.result().to_bytes() == counts.to_bytes()
    assert math.prod(plan.radices(counts.node)) == back.classes.n_possible


@pytest.mark.parametrize(
    ("criteria", "bins"), [({}, 900), ({"l_diversity": [{"attribute": "cond", "l": 2}]}, 2500)]
)
def test_bucket_sizes_do_not_change_the_counts(tmp_path, table, monkeypatch, criteria, bins):
    """Sparse tables are cut by key range into buckets (sparse_counts.BUCKET_BINS), re-cut as
    they grow and after each roll-up: every bucket size gives the same root and counts, equal
    to a direct count at that root."""
    from airflow_skald.core.encode import sparse_counts

    sizes = [50, 400, 1200, 100, 700, 250, 30]
    config = _table_config(tmp_path, table, "g", sizes, bins=bins, **criteria)
    chunks = list_chunks(config)
    plan = plan_root(config, scan_domain(config, chunks))
    assert len(plan.chain) > 2
    results = []
    for size in (16, 100, 10**9):
        monkeypatch.setattr(sparse_counts, "BUCKET_BINS", size)
        results.append(count_histogram(config, plan, chunks))
    assert len({r.to_bytes() for r in results}) == 1
    whole = results[0]
    assert whole.node != plan.chain[0] and whole.node != plan.chain[-1]  # rolled, not at P
    direct = count_histogram(config, plan.with_root(whole.node), chunks)
    assert direct.to_bytes() == whole.to_bytes()
