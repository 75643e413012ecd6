"""A research subset inside the SQL engines (docs/design.md §4e and §2b, ADR 0068): δ-presence
(δmin > 0 and = 0), exact k-map and l-diversity over a subset, the subset a boolean column or a
dataset of keys; DuckDB's run releases what the chunk path releases (the whole manifest, its
population counts, the rows as a multiset), and PostgreSQL's passes give the chunk path's."""

from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from engine_compare import assert_same_release, config, run_cli, table

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
    (  # exact k-map, the subset a dataset of keys; adaptive root (the counting chain)
        53,
        "keys",
        {
            "privacy": {"k_map": {"k": 4}, "suppression_limit": 0.1},
            "memory": {"histogram_bins": 300, "root": "adaptive"},
        },
    ),
]


def population(folder, seed: int, n_files: int = 2, rows: int = 150) -> list[pa.Table]:
    """Population files with a subset flag (`in_study`: about one record in three)."""
    folder.mkdir(parents=True, exist_ok=True)
    tables = []
    for i in range(n_files):
        data = table(rows, seed * 100 + i)
        rng = np.random.default_rng(seed * 100 + i)
        flag = pa.array(rng.random(rows) < 0.35)
        data = data.append_column("in_study", flag)
        pq.write_table(data, folder / f"in-{i:03d}.parquet", row_group_size=97)
        tables.append(data)
    return tables


def subset_of(tmp_path, how: str, tables: list[pa.Table]) -> dict:
    if how == "column":
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
    tables = population(tmp_path / "in", seed)
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
