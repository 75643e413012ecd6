"""Local recoding inside the SQL engines (docs/design.md §4f and §2b, ADR 0063): over generated
small tables and settings (fast and adaptive mode, masked or dropped rows, a subset of the
QIDs, an extra privacy model), DuckDB's run releases what the chunk path releases: the same
manifest (the global node, every step, DM*, every figure) and the same rows as a multiset."""

from __future__ import annotations

import json

import numpy as np
import pytest
from engine_compare import assert_same_release, config, run_cli, write_files


def generated(seed: int) -> tuple[int, int, dict]:
    """A case drawn from `seed`: files, rows per file and the settings (local recoding in fast
    mode for an even seed, adaptive for an odd one; suppressed records masked or dropped by
    the seed's second bit; k, suppression limit, `records`, an l-diversity drawn)."""
    rng = np.random.default_rng(seed)
    adaptive = seed % 2 == 1
    if adaptive:
        lr = {"mode": "adaptive", "gs_factor": float(rng.choice([0.05, 0.2]))}
        lr["adaption_factor"] = float(rng.choice([0.05, 0.1]))
    else:
        lr = {"records": float(rng.choice([0.002, 0.01, 0.05]))}
        if rng.integers(0, 2):
            lr["max_steps"] = int(rng.integers(1, 4))
    settings: dict = {
        "transformation": {"local_recoding": lr},
        "privacy": {
            "k": int(rng.choice([5, 8, 10])),
            "suppression_limit": float(rng.choice([0.1, 0.2])),
        },
        "suppressed_records": ("mask", "drop")[seed // 2 % 2],
    }
    if adaptive:
        settings["quality"] = {"objective": "loss"}
    if rng.integers(0, 3) == 0:
        settings["privacy"]["l_diversity"] = [{"attribute": "disease", "l": 2}]
    return int(rng.integers(2, 4)), int(rng.integers(100, 151)), settings


def _qids(seed: int, cfg: dict) -> dict:
    """Two to four of the config's QIDs (the decimal one, whose lattice is largest, at times)."""
    rng = np.random.default_rng(seed + 1000)
    qids = cfg["quasi_identifiers"]
    keep = sorted(rng.choice(len(qids), int(rng.integers(2, len(qids) + 1)), replace=False))
    cfg["quasi_identifiers"] = [qids[i] for i in keep]
    dropped = [q["name"] for i, q in enumerate(qids) if i not in keep]
    cfg["direct_identifiers"] = [*cfg["direct_identifiers"], *dropped]
    return cfg


#: seeds whose cases cover: a step at the top node (masked, dropped), two steps (masked,
#: dropped), adaptive steps leaving records suppressed (masked, dropped), l-diversity
SEEDS = (0, 16, 18, 29, 31, 34)


@pytest.mark.parametrize("seed", SEEDS)
def test_duckdb_local_recoding_releases_what_the_chunk_path_releases(tmp_path, capsys, seed):
    n_files, rows, settings = generated(seed)
    inp = write_files(tmp_path / "in", n_files, rows, seed + 40)
    out = {}
    for engine in ("chunks", "duckdb"):
        out[engine] = tmp_path / f"out-{engine}"
        cfg = _qids(seed, config(inp, out[engine], execution={"engine": engine}, **settings))
        code, err = run_cli(tmp_path, cfg, engine, capsys)
        assert code == 0, err
    assert_same_release(out["duckdb"], out["chunks"])
    manifest = json.loads((out["duckdb"] / "manifest.json").read_text())
    assert manifest["verified"] is True and manifest["local_recoding"]["steps"]
