"""Dense and sparse roll-ups of a root histogram agree with counting the data directly."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from skald_testdata import write_chunks, write_config

from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.count.histogram import Histogram
from airflow_skald.core.data.io import read_chunk
from airflow_skald.core.lattice import Lattice
from airflow_skald.core.passes.pipeline import count_histogram, list_chunks, plan_root, scan_domain
from airflow_skald.core.search.rollup_dense import DenseSource
from airflow_skald.core.search.rollup_sparse import SparseSource
from airflow_skald.core.search.rollups import RollUps, sum_groups


def test_dense_and_sparse_rollups_agree_on_every_node(tmp_path):
    rng = np.random.default_rng(3)
    n = 4000
    df = pd.DataFrame(
        {
            "c": rng.choice(["a", "b", "c", "d", "e"], n),
            "x": rng.integers(0, 30, n),
            "y": np.round(rng.uniform(0, 3, n), 1),
        }
    )
    write_chunks(df, tmp_path / "in", [1500])
    cfg = load_config(
        write_config(
            tmp_path / "c.yaml",
            {
                "input": {"path": str(tmp_path / "in")},
                "output": {"path": str(tmp_path / "out")},
                "quasi_identifiers": [
                    {
                        "name": "c",
                        "type": "categorical",
                        "hierarchy": {
                            "a": ["g1"],
                            "b": ["g2"],
                            "c": ["g1"],
                            "d": ["g2"],
                            "e": ["g1"],
                        },
                    },
                    {"name": "x", "type": "numerical", "min_width": 1},
                    {"name": "y", "type": "numerical", "min_width": 0.1},
                ],
                "privacy": {"k": 3},
                "memory": {"histogram_bins": 10**6},
            },
        )
    )
    chunks = list_chunks(cfg)
    plan = plan_root(cfg, scan_domain(cfg, chunks))
    root = count_histogram(cfg, plan, chunks).classes
    dense, sparse = DenseSource(plan, plan.root, root), SparseSource(plan, plan.root, root)
    cached = RollUps(plan, root)
    lattice = Lattice(plan.root, tuple(plan.tops))
    for i in range(len(lattice)):
        node = lattice.node(i)
        a, b, c = dense.roll_up(node), sparse.roll_up(node), cached.get(node)
        assert np.array_equal(a.keys, b.keys) and np.array_equal(a.counts, b.counts), node
        assert np.array_equal(a.keys, c.keys) and np.array_equal(a.counts, c.counts), node
        assert a.n_records == n
    # a dense source built from a rolled-up node rolls up further like the root does
    mid = tuple((r + t) // 2 for r, t in zip(plan.root, plan.tops, strict=True))
    top = tuple(plan.tops)
    again = DenseSource(plan, mid, dense.roll_up(mid)).roll_up(top)
    assert isinstance(again, Histogram) and again.counts.tolist() == [n]


def _plan_and_root(tmp_path, df, qids, bins=10**6):
    write_chunks(df, tmp_path / "in", [len(df) // 2])
    cfg = load_config(
        write_config(
            tmp_path / "c.yaml",
            {
                "input": {"path": str(tmp_path / "in")},
                "output": {"path": str(tmp_path / "out")},
                "quasi_identifiers": qids,
                "privacy": {"k": 3},
                "memory": {"histogram_bins": bins},
            },
        )
    )
    chunks = list_chunks(cfg)
    plan = plan_root(cfg, scan_domain(cfg, chunks))
    return cfg, chunks, plan, count_histogram(cfg, plan, chunks).classes


def test_a_level_that_only_renumbers_codes_is_still_applied(tmp_path):
    """Austria -> Europe, Brazil -> America: level 1 has as many bins as level 0 but other
    codes; the dense roll-up must apply it (found in review: it was skipped as 'no reduction')."""
    rng = np.random.default_rng(1)
    df = pd.DataFrame({"c": rng.choice(["Austria", "Brazil"], 400), "x": rng.integers(0, 8, 400)})
    hierarchy = {"Austria": ["Europe"], "Brazil": ["America"]}
    qids = [
        {"name": "c", "type": "categorical", "hierarchy": hierarchy},
        {"name": "x", "type": "numerical", "min_width": 1},
    ]
    _, _, plan, root = _plan_and_root(tmp_path, df, qids)
    assert plan.dims[0].level_map(0, 1).tolist() == [1, 0]  # a renumbering, not a reduction
    node = (1, plan.root[1])
    a, b = RollUps(plan, root).get(node), SparseSource(plan, plan.root, root).roll_up(node)
    assert np.array_equal(a.keys, b.keys) and np.array_equal(a.counts, b.counts)


@pytest.mark.parametrize(
    "shape, axis",
    [((5000, 3), 0), ((3, 6000, 2), 1), ((40, 30, 20), 0), ((40, 30, 20), 1), ((40, 30, 20), 2)],
)
def test_sum_groups_matches_a_plain_scatter_add(shape, axis):
    rng = np.random.default_rng(sum(shape) + axis)
    array = rng.integers(0, 9, shape).astype(np.int32)
    n = shape[axis]
    for targets in (
        np.arange(n) // 3,  # runs, as numerical levels
        rng.permutation(np.arange(n) % max(n // 4, 1)),  # scattered, as categorical levels
        np.zeros(n, dtype=np.int64),  # the top level
    ):
        expected = np.zeros(
            shape[:axis] + (int(targets.max()) + 1,) + shape[axis + 1 :], dtype=np.int64
        )
        np.add.at(np.moveaxis(expected, axis, 0), targets, np.moveaxis(array, axis, 0))
        got = sum_groups(array, targets, axis)
        assert got.dtype == np.int32 and np.array_equal(got, expected)


def test_numerical_codes_need_no_table_over_the_domain(tmp_path):
    """A wide numerical domain (5M units) at the root's level 0: phases 2 and 3 compute codes
    arithmetically, so no per-unit lookup table is built (found in review: 40 MB each)."""
    rng = np.random.default_rng(2)
    df = pd.DataFrame(
        {"income": rng.integers(0, 5_000_000, 2000), "c": rng.choice(["a", "b"], 2000)}
    )
    qids = [
        {"name": "income", "type": "numerical", "min_width": 1},
        {"name": "c", "type": "categorical", "hierarchy": {"a": ["*"], "b": ["*"]}},
    ]
    cfg, chunks, plan, root = _plan_and_root(tmp_path, df, qids, bins=10**7)
    dim = plan.dims[0]
    assert dim.cards[0] > 1_000_000
    table = read_chunk(cfg.input, chunks[0], ["income"])
    for level in range(dim.top + 1):
        expected = dim.level_map(0, level)[dim.codes(table.column("income"), chunks[0])]
        assert np.array_equal(dim.codes_at(table.column("income"), chunks[0], level), expected)
        dim.__dict__.pop("_maps", None)  # the reference above builds the tables; drop them
    count_histogram(cfg, plan, chunks)
    assert all(m.size <= dim.cards[plan.root[0]] for m in dim.__dict__.get("_maps", {}).values())
    assert not dim.__dict__.get("_scaled_maps")


def test_compact_sends_the_smaller_form():
    dense = np.zeros(1 << 20, dtype=np.int64)
    dense[[3, 70, 900_000]] = [5, 1, 2]
    hist = Histogram.from_dense((1 << 10, 1 << 10), dense)
    small = hist.compact()
    assert small._dense is None and small.keys.tolist() == [3, 70, 900_000]
    assert small.counts.tolist() == [5, 1, 2] and small.n_records == 8
    full = Histogram.from_dense((4,), np.array([1, 2, 3, 4]))
    assert full.compact() is full
