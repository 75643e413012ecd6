"""The per-chunk baseline (`skald run --per-chunk`): each chunk alone, checked independently.

Every chunk below holds the global domain ends (age 20 and 70, every zip code), so the oracle
(brute force on the chunk alone, its own domain) sees exactly the dimensions the baseline
shares across chunks, and its optimal node must be the baseline's node for that chunk.
"""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
from oracle import check_release, exhaustive_search
from oracle_quality import exhaustive_quality
from skald_testdata import write_chunks, write_config

from airflow_skald.cli import main as cli_main
from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.passes import pipeline
from airflow_skald.core.run import runner
from airflow_skald.core.run.baseline import RollUpCache, chunk_plan, run_per_chunk
from airflow_skald.core.search.rollups import roll_up

CITY = {"Oslo": ["Norway"], "Bergen": ["Norway"], "Lund": ["Sweden"], "Malmo": ["Sweden"]}
ZIPS = [1001, 1002, 1003, 1010, 1020, 1100, 1200]
QIDS = [
    {"name": "city", "type": "categorical", "hierarchy": CITY},
    {"name": "age", "type": "numerical", "min_width": 1},
    {"name": "zip", "type": "numerical", "min_width": 1, "encode": True},
]
SIZES = [90, 70, 110]
K, LIMIT = 4, 0.05


def _chunk(n: int, seed: int, ages: tuple[int, int] = (20, 70)) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    age = rng.integers(ages[0], ages[1] + 1, n)
    age[:2] = (20, 70)  # the global domain ends in every chunk
    z = rng.choice(ZIPS, n, p=[0.3, 0.2, 0.15, 0.15, 0.1, 0.05, 0.05])
    z[: len(ZIPS)] = ZIPS
    return pd.DataFrame(
        {
            "pid": [f"P{seed}-{i}" for i in range(n)],
            "city": rng.choice(list(CITY), n, p=[0.4, 0.3, 0.2, 0.1]),
            "age": age,
            "zip": z,
            "disease": rng.choice(["flu", "gout", "none"], n),
        }
    )


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return pd.concat([_chunk(n, seed=10 + i) for i, n in enumerate(SIZES)], ignore_index=True)


def _config(tmp_path, data, out_name="out", **extra):
    inp = write_chunks(data, tmp_path / "in", SIZES[:-1])
    body = {
        "input": {"path": str(inp), "format": "parquet"},
        "output": {"path": str(tmp_path / out_name), "format": "parquet"},
        "chunk_rows": 1000,
        "direct_identifiers": ["pid"],
        "sensitive_attributes": ["disease"],
        "quasi_identifiers": QIDS,
        "privacy": {"k": K, "suppression_limit": LIMIT},
        "qid_priority": ["age", "city", "zip"],
        **extra,
    }
    return write_config(tmp_path / "skald.yaml", body)


@pytest.fixture(scope="module")
def per_chunk(tmp_path_factory, data):
    tmp = tmp_path_factory.mktemp("per_chunk")
    path = _config(tmp, data)
    manifest = run_per_chunk(load_config(path))
    return tmp / "out", manifest


def test_each_chunk_gets_the_oracles_optimal_node(per_chunk, data):
    out, manifest = per_chunk
    assert manifest["mode"] == "per_chunk" and manifest["chunks"] == len(SIZES)
    start = 0
    for info, n in zip(manifest["per_chunk"], SIZES, strict=True):
        chunk = data.iloc[start : start + n]
        start += n
        want = exhaustive_search(chunk, QIDS, K, LIMIT, ["age", "city", "zip"])
        assert info["node"] == want["node"]
        assert info["dm_star"] == want["dm_star"]
        assert info["n_suppressed"] == want["n_suppressed"]
        assert info["n_records"] == n
    assert manifest["root_node"] == {"city": 0, "age": 0, "zip": 0}  # no RAM bound per chunk


@pytest.mark.parametrize("objective", ["loss", "height", "aecs"])
def test_each_chunk_minimises_the_configured_objective(tmp_path, data, objective):
    """docs/design.md §4d: the per-chunk baseline (`--per-chunk`, the paper's experiment) minimises the
    run's objective in every chunk: each chunk's node is the exhaustive oracle's for it."""
    path = _config(tmp_path, data, quality={"objective": objective})
    manifest = run_per_chunk(load_config(path))
    start = 0
    for info, n in zip(manifest["per_chunk"], SIZES, strict=True):
        chunk = data.iloc[start : start + n]
        start += n
        want = exhaustive_quality(chunk, QIDS, K, LIMIT, ["age", "city", "zip"], objective)
        assert info["node"] == want["node"]
        assert info["n_suppressed"] == want["n_suppressed"]


def test_every_part_passes_an_independent_k_check_alone(per_chunk):
    out, manifest = per_chunk
    parts = sorted(out.glob("part-*.parquet"))
    assert len(parts) == len(SIZES)
    for part, info in zip(parts, manifest["per_chunk"], strict=True):
        df = pq.read_table(part).to_pandas()
        got = check_release(df, ["city", "age", "zip"], K, LIMIT, info["n_records"])
        assert got["dm_star"] == info["dm_star"]
        assert "pid" not in df.columns


def test_union_figures_are_counted_over_the_whole_release(per_chunk, data):
    out, manifest = per_chunk
    union = pd.concat([pq.read_table(p).to_pandas() for p in sorted(out.glob("part-*"))])
    got = check_release(union, ["city", "age", "zip"], K, LIMIT, len(data))
    assert manifest["dm_star"] == got["dm_star"]
    assert manifest["n_suppressed"] == got["n_suppressed"]
    assert manifest["n_equivalence_classes"] == got["n_classes"]
    assert manifest["dm_star_sum_of_chunks"] == sum(c["dm_star"] for c in manifest["per_chunk"])
    # identical tuples of different chunks merge, so the union is never better than the sum
    assert manifest["dm_star"] >= manifest["dm_star_sum_of_chunks"]
    assert (out / "report.html").exists() and (out / "manifest.json").exists()


def test_chunks_share_the_global_domains(tmp_path):
    """A chunk with a narrow age range still bins from the GLOBAL minimum (fixed hierarchies)."""
    narrow = _chunk(80, seed=3, ages=(30, 33))
    narrow.loc[:1, "age"] = 31  # this chunk alone would start its bins at 30
    df = pd.concat([_chunk(90, seed=1), narrow], ignore_index=True)
    inp = write_chunks(df, tmp_path / "in", [90])
    body = {
        "input": {"path": str(inp), "format": "parquet"},
        "output": {"path": str(tmp_path / "out"), "format": "parquet"},
        "chunk_rows": 1000,
        "direct_identifiers": ["pid"],
        "quasi_identifiers": QIDS,
        "privacy": {"k": 10, "suppression_limit": 0.02},
    }
    manifest = run_per_chunk(load_config(write_config(tmp_path / "c.yaml", body)))
    part = pq.read_table(tmp_path / "out" / "part-00001.parquet").to_pandas()
    level = manifest["per_chunk"][1]["node"]["age"]
    width = 2**level
    for label in set(part["age"]) - {"*"}:
        lo = int(re.match(r"\[(\d+)-", label).group(1))
        assert (lo - 20) % width == 0 or label == "[20-70]", label


def test_drop_mode_counts_dropped_rows_as_suppressed(tmp_path, data):
    path = _config(tmp_path, data, suppressed_records="drop")
    manifest = run_per_chunk(load_config(path))
    union = pd.concat(
        [pq.read_table(p).to_pandas() for p in sorted((tmp_path / "out").glob("part-*"))]
    )
    got = check_release(union, ["city", "age", "zip"], K, LIMIT, len(data))
    assert got["n_dropped"] == manifest["n_suppressed"]
    assert manifest["dm_star"] == got["dm_star"]


def test_cli_per_chunk_then_verify(tmp_path, data, capsys):
    path = _config(tmp_path, data)
    assert cli_main(["run", str(path), "--per-chunk", "--quiet", "--k", "5"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["verified"] is True and summary["chunks"] == len(SIZES)
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    assert manifest["k"] == 5 and len(manifest["per_chunk"]) == len(SIZES)
    assert cli_main(["verify", str(tmp_path / "out"), "--k", "5"]) == 0


def test_per_chunk_and_skald_agree_on_one_chunk(tmp_path, data):
    """With one chunk and a RAM bound that does not bind, the baseline is SKALD."""
    one = data.iloc[:90]
    inp = write_chunks(one, tmp_path / "in", [])
    base = {
        "input": {"path": str(inp), "format": "parquet"},
        "chunk_rows": 1000,
        "direct_identifiers": ["pid"],
        "quasi_identifiers": QIDS,
        "privacy": {"k": K, "suppression_limit": LIMIT},
        "memory": {"histogram_bins": 10**6},
    }
    a = run_per_chunk(
        load_config(
            write_config(
                tmp_path / "a.yaml",
                {**base, "output": {"path": str(tmp_path / "a"), "format": "parquet"}},
            )
        )
    )
    b = runner.run(
        load_config(
            write_config(
                tmp_path / "b.yaml",
                {**base, "output": {"path": str(tmp_path / "b"), "format": "parquet"}},
            )
        )
    )
    assert a["dm_star"] == b["dm_star"] == a["dm_star_sum_of_chunks"]
    assert a["per_chunk"][0]["node"] == b["node"]


def test_roll_up_cache_matches_direct_roll_ups(tmp_path, data):
    config = load_config(_config(tmp_path, data))
    chunks = pipeline.list_chunks(config)
    plan = pipeline.plan_root(config, pipeline.scan_domain(config, chunks))
    zero = chunk_plan(plan, chunks[0].n_rows)
    hist = pipeline.count_histogram(config, zero, chunks[:1])
    cache = RollUpCache(zero, hist)
    rng = np.random.default_rng(0)
    for _ in range(40):
        node = tuple(int(rng.integers(0, t + 1)) for t in plan.tops)
        want = np.sort(roll_up(zero, hist.classes, node).counts)
        assert np.array_equal(np.sort(cache.table(node).sizes), want)
        assert np.array_equal(np.sort(cache.table(node).sizes), want)  # the compressed cache
