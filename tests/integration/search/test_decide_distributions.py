"""decide.distributions on real Adult: the per-QID distributions before and after that the
manifest and the report show name no input value. Level 0 holds the input's own values: they
are ranks ("value #01", most records first); a generalised level's labels are the hierarchy's;
no listed label holds fewer than k records."""

from __future__ import annotations

import csv

import pandas as pd
from skald_testdata import ADULT, ADULT_CSV, ADULT_QIDS, adult_config, write_config

from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.run.runner import run

K = 5


def hierarchy_labels(name: str, level: int) -> set[str]:
    with open(ADULT / f"adult_hierarchy_{name}.csv", newline="", encoding="utf-8") as f:
        return {row[level] for row in csv.reader(f, delimiter=";") if len(row) > level}


def test_level_zero_is_ranked_generalised_levels_are_named(tmp_path):
    body = adult_config(tmp_path / "out", k=K, suppression_limit=0.05, chunk_rows=None)
    manifest = run(load_config(write_config(tmp_path / "adult.yaml", body)))
    raw = pd.read_csv(ADULT_CSV, sep=";", dtype=str)
    qids = {q["name"]: q for q in manifest["quality_models"]["qids"]}
    assert set(qids) == set(ADULT_QIDS)
    levels = manifest["node"]
    assert 0 in levels.values() and any(v > 0 for v in levels.values())  # both kinds seen
    for name, q in qids.items():
        dist = q["distribution"]
        for side, level in (("before", dist["before_level"]), ("after", levels[name])):
            listed = dist[side]["labels"]
            counts = [c for _, c in listed]
            assert counts == sorted(counts, reverse=True) and min(counts) >= K, (name, side)
            labels = [label for label, _ in listed]
            if level == 0:
                width = max(2, len(str(len(labels))))
                assert labels == [f"value #{r + 1:0{width}d}" for r in range(len(labels))]
            else:
                assert set(labels) <= hierarchy_labels(name, level) | {"*"}, (name, side)
                assert not set(labels) & set(raw[name]) - {"*"}, (name, side)
