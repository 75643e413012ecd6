"""Roll-ups above a large sparse root: dense hubs, least-recently-used eviction within the cache
budget, and the class-count bound that lets the search fail a node without rolling it up.

Small tables take these paths only with the thresholds lowered (`force_hubs`); every node's
histogram must then equal the plain roll-up from the root, and every search decision the one
taken without them (and the exhaustive reference's).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from oracle import exhaustive_search
from skald_testdata import adult_config, write_chunks, write_config
from strategies import criteria_config, criteria_datasets, datasets, write_input

from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.errors import DataError
from airflow_skald.core.lattice import Lattice
from airflow_skald.core.passes.pipeline import (
    count_histogram,
    list_chunks,
    plan_root,
    scan_domain,
    search_lattice,
)
from airflow_skald.core.search import rollups
from airflow_skald.core.search.rollup_sparse import SparseSource
from airflow_skald.core.search.rollups import RollUps


def force_hubs(monkeypatch, share: int = 4, factor: float = 2) -> dict:
    """Sparse roots, hubs and the class-count bound on any table; counts what they did."""
    monkeypatch.setattr(rollups, "DENSE_LIMIT", 0)
    monkeypatch.setattr(rollups, "HUB_MIN_BINS", 1)
    monkeypatch.setattr(rollups, "BOUND_MIN_BINS", 1)
    monkeypatch.setattr(rollups, "HUB_SHARE", share)
    monkeypatch.setattr(rollups, "CACHE_FACTOR", factor)
    monkeypatch.setattr(rollups, "CACHE_FLOOR", 0)  # the budget as tight as the factor says
    seen = {"hubs": 0, "drops": 0, "bounds": 0}
    hub, drop, fewest = RollUps._hub, RollUps._drop, SparseSource.distinct_at_least

    def counted_hub(self, node):
        out = hub(self, node)
        seen["hubs"] += out is not None
        return out

    def counted_drop(self, node):
        seen["drops"] += 1
        return drop(self, node)

    def counted_fewest(self, *args, **kwargs):
        seen["bounds"] += 1
        return fewest(self, *args, **kwargs)

    monkeypatch.setattr(RollUps, "_hub", counted_hub)
    monkeypatch.setattr(RollUps, "_drop", counted_drop)
    monkeypatch.setattr(SparseSource, "distinct_at_least", counted_fewest)
    return seen


def _table(n: int = 3000, seed: int = 5) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "c": rng.choice(list("abcdef"), n),
            "x": rng.integers(0, 60, n),
            "y": np.round(rng.uniform(0, 4, n), 1),
            "z": rng.integers(0, 25, n),
        }
    )


def _root(tmp_path, df: pd.DataFrame, criteria: dict | None = None):
    write_chunks(df, tmp_path / "in", [len(df) // 3])
    hierarchy = {v: [f"g{i % 3}", "h"] for i, v in enumerate("abcdef")}
    body = {
        "input": {"path": str(tmp_path / "in")},
        "output": {"path": str(tmp_path / "out")},
        "quasi_identifiers": [
            {"name": "c", "type": "categorical", "hierarchy": hierarchy},
            {"name": "x", "type": "numerical", "min_width": 1},
            {"name": "y", "type": "numerical", "min_width": 0.1},
            {"name": "z", "type": "numerical", "min_width": 1},
        ],
        "privacy": {"k": 3, **(criteria or {})},
        "memory": {"histogram_bins": 10**7},
    }
    if criteria:
        body["sensitive_attributes"] = ["s"]
    cfg = load_config(write_config(tmp_path / "c.yaml", body))
    chunks = list_chunks(cfg)
    plan = plan_root(cfg, scan_domain(cfg, chunks))
    return cfg, plan, count_histogram(cfg, plan, chunks)


@pytest.mark.parametrize("share, factor", [(1, 2), (4, 2), (64, 2), (2, 0.5)])
def test_hub_rollups_equal_rolling_up_from_the_root(tmp_path, monkeypatch, share, factor):
    _, plan, counts = _root(tmp_path, _table())
    root = counts.classes
    seen = force_hubs(monkeypatch, share, factor)
    cached = RollUps(plan, root)
    assert not cached.dense and cached.hub_cells > 0
    reference = SparseSource(plan, plan.root, root)
    lattice = Lattice(plan.root, tuple(plan.tops))
    order = np.random.default_rng(share).permutation(len(lattice))
    for i in [*order.tolist(), *order[::3].tolist()]:  # later visits hit the cache
        node = lattice.node(i)
        want = reference.roll_up(node)
        got = cached.get(node)
        assert np.array_equal(got.keys, want.keys) and np.array_equal(got.counts, want.counts)
        assert sorted(cached.sizes(node).tolist()) == sorted(want.counts.tolist()), node
        assert cached.used <= cached.budget
        assert plan.root in cached.cache
    assert seen["hubs"] > 0
    if share == 1 or factor < 1:
        assert seen["drops"] > 0  # hubs as large as the budget allows push each other out


def test_distinct_at_least_is_a_lower_bound_of_the_classes(tmp_path):
    _, plan, counts = _root(tmp_path, _table())
    source = SparseSource(plan, plan.root, counts.classes)
    lattice = Lattice(plan.root, tuple(plan.tops))
    last = len(plan.root) - 1
    for i in range(0, len(lattice), 7):
        node = lattice.node(i)
        bins = source.roll_up(node).n_bins
        found = source.distinct_at_least(node, enough=10**9)
        assert 0.9 * bins <= found <= bins, node  # few hash collisions on small tables
        assert source.distinct_at_least(node, enough=0) <= bins
        merged = (*node[:last], plan.tops[last])  # the last QID ignored: its top's classes
        assert source.distinct_at_least(node, 10**9, ignore=(last,)) <= (
            source.roll_up(merged).n_bins
        )


def test_fewest_classes_only_where_a_roll_up_would_be_slow(tmp_path, monkeypatch):
    _, plan, counts = _root(tmp_path, _table())
    root = counts.classes
    assert RollUps(plan, root).fewest_classes(plan.root, 10) is None  # a dense root
    force_hubs(monkeypatch, share=10**9)  # sparse, hubs of no cells: every node is "slow"
    cached = RollUps(plan, root)
    top = tuple(plan.tops)
    assert cached.fewest_classes(plan.root, 10) is None  # cached
    assert cached.fewest_classes(top, 1) is None  # one possible bin: never more than one class
    node = tuple(min(r + 1, t) for r, t in zip(plan.root, plan.tops, strict=True))
    assert cached.fewest_classes(node, root.n_bins) is None  # no more bins than that to count
    assert cached.fewest_classes(node, 10) > 10
    few = cached.sizes(node).size  # rolled up: no node above it has more classes than that
    assert cached.fewest_classes(top[:1] + node[1:], few) is None
    assert cached.fewest_classes(top[:1] + node[1:], few - 1) is not None


def _decision(config, monkeypatch=None, **force):
    chunks = list_chunks(config)
    plan = plan_root(config, scan_domain(config, chunks))
    counts = count_histogram(config, plan, chunks)
    seen = force_hubs(monkeypatch, **force) if monkeypatch is not None else None
    try:
        decision = search_lattice(config, plan, counts)
    except DataError as exc:
        return str(exc), seen
    finally:
        if monkeypatch is not None:
            monkeypatch.undo()
    body = decision.to_dict()
    body.pop("lattice")  # evaluated / pruned counts: the order may differ, never the answer
    return (body, decision.figures.to_dict(), decision.suppressed_keys.tolist()), seen


def _same_decision(config, monkeypatch, **force) -> dict:
    plain, _ = _decision(config)
    forced, seen = _decision(config, monkeypatch, **force)
    assert forced == plain
    return seen


def _events(seen: dict) -> None:
    event("hubs built" if seen["hubs"] else "no hub")
    event("classes bounded" if seen["bounds"] else "no class bound")


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=datasets(), cut=st.integers(3, 50), share=st.sampled_from([1, 3, 16, 10**9]))
def test_search_decisions_do_not_depend_on_the_roll_up_paths(
    tmp_path_factory, monkeypatch, data, cut, share
):
    df, qids, oracle_qids, k, limit, _, priority = data
    tmp = tmp_path_factory.mktemp("case")
    write_chunks(df, tmp / "in", [cut] * (len(df) // cut))
    body = {
        "input": {"path": str(tmp / "in")},
        "output": {"path": str(tmp / "out")},
        "chunk_rows": 1000,
        "direct_identifiers": ["pid"],
        "sensitive_attributes": ["sens"],
        "quasi_identifiers": qids,
        "privacy": {"k": k, "suppression_limit": limit},
        "memory": {"histogram_bins": 10**9},
        "qid_priority": priority,
    }
    config = load_config(write_config(tmp / "c.yaml", body))
    _events(_same_decision(config, monkeypatch, share=share))
    plain, _ = _decision(config)
    if not isinstance(plain, str):  # the root is level 0 (adaptive, N_RAM ample)
        expected = exhaustive_search(df, oracle_qids, k, limit, priority)
        assert plain[0]["node_levels"] == [expected["node"][q["name"]] for q in qids]
        assert plain[0]["dm_star"] == expected["dm_star"]


@pytest.mark.parametrize("variant", ["distinct", "mixed"])
@settings(
    max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(data=st.data(), cut=st.integers(3, 50), share=st.sampled_from([1, 8, 10**9]))
def test_criteria_decisions_do_not_depend_on_the_roll_up_paths(
    tmp_path_factory, monkeypatch, variant, data, cut, share
):
    df, qids, _, k, limit, bins, priority, criteria, drop = data.draw(criteria_datasets(variant))
    tmp = tmp_path_factory.mktemp("case")
    write_input(tmp, df, cut)
    cfg = criteria_config(tmp, qids, k, limit, None, priority, criteria, drop, root="adaptive")
    _events(_same_decision(load_config(cfg), monkeypatch, share=share))


def _adult(tmp_path, k: int, limit: float, criteria: dict | None = None):
    memory = {"histogram_bins": 10**9}
    body = adult_config(
        tmp_path / "out", k=k, suppression_limit=limit, privacy=criteria or {}, memory=memory
    )
    return load_config(write_config(tmp_path / "adult.yaml", body))


@pytest.mark.parametrize("share", [2, 16, 10**9])
@pytest.mark.parametrize("k, limit", [(5, 0.05), (10, 0.05), (5, 0)])
def test_adult_decisions_with_hubs_and_class_bounds(tmp_path, monkeypatch, k, limit, share):
    seen = _same_decision(_adult(tmp_path, k, limit), monkeypatch, share=share)
    assert seen["hubs"] > 0 if share < 10**9 else seen["bounds"] > 0


def test_adult_l_diversity_with_hubs_and_class_bounds(tmp_path, monkeypatch):
    criteria = {"l_diversity": [{"attribute": "salary-class", "l": 2}]}
    config = _adult(tmp_path, 5, 0.05, criteria)
    assert _same_decision(config, monkeypatch, share=8)["hubs"] > 0
    assert _same_decision(config, monkeypatch, share=10**9)["bounds"] > 0
