"""Dense and sparse roll-ups of a root histogram agree with counting the data directly."""

from __future__ import annotations

import numpy as np
import pandas as pd
from skald_testdata import write_chunks, write_config

from airflow_skald.core.config import load_config
from airflow_skald.core.histogram import Histogram
from airflow_skald.core.lattice import Lattice
from airflow_skald.core.pipeline import count_histogram, list_chunks, plan_root, scan_domain
from airflow_skald.core.search import RollUps, _DenseSource, _Source


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
    root = count_histogram(cfg, plan, chunks)
    dense, sparse = _DenseSource(plan, plan.root, root), _Source(plan, plan.root, root)
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
    again = _DenseSource(plan, mid, dense.roll_up(mid)).roll_up(top)
    assert isinstance(again, Histogram) and again.counts.tolist() == [n]
