"""Adult (ARX's copy and hierarchies) end to end, checked against the oracle and independently."""

from __future__ import annotations

import json

import pytest
from oracle import check_release, exhaustive_search_each
from skald_testdata import (
    ADULT_QIDS,
    adult_config,
    adult_oracle_qids,
    read_release,
    write_config,
)

from airflow_skald.cli import main
from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.run.runner import run


def _adult_config(tmp_path, k, limit, qids=ADULT_QIDS, chunk_rows=8000, bins=None):
    out = tmp_path / f"out-{k}-{limit}"
    memory = {"histogram_bins": bins}
    body = adult_config(
        out, k=k, suppression_limit=limit, qids=qids, chunk_rows=chunk_rows, memory=memory
    )
    return write_config(tmp_path / f"adult-{k}-{limit}.yaml", body)


@pytest.mark.parametrize("limit", [0, 0.05])
@pytest.mark.parametrize("k", [2, 5, 10, 50])
def test_adult_end_to_end(tmp_path, adult_df, k, limit):
    cfg = _adult_config(tmp_path, k, limit, bins=10**9)
    manifest = run(load_config(cfg))
    release = read_release(tmp_path / f"out-{k}-{limit}")
    checked = check_release(release, ADULT_QIDS, k, limit, len(adult_df))
    assert checked["n_suppressed"] == manifest["n_suppressed"]
    assert checked["dm_star"] == manifest["dm_star"]
    assert manifest["root_node"] == dict.fromkeys(ADULT_QIDS, 0)
    assert manifest["root_bins"] > 3e8  # possible bins at level 0 ...
    assert manifest["lattice"]["evaluated"] < manifest["lattice"]["nodes"]
    # sensitive attribute unchanged row by row, rows in input order
    assert release["salary-class"].tolist() == adult_df["salary-class"].tolist()


EXHAUSTIVE_CASES = [(5, 0), (10, 0.05), (50, 0.05)]  # (k, suppression limit)


def test_adult_matches_exhaustive_search(tmp_path, adult_df):
    """Each case's node and figures are the reference's (one walk of the reference's lattice
    answers every case: a node's classes are found once)."""
    qids = ["age", "education", "marital-status", "race", "sex"]
    expected_each = exhaustive_search_each(adult_df, adult_oracle_qids(qids), EXHAUSTIVE_CASES, [])
    for (k, limit), expected in zip(EXHAUSTIVE_CASES, expected_each, strict=True):
        cfg = _adult_config(tmp_path, k, limit, qids=qids, bins=10**9)
        manifest = run(load_config(cfg))
        assert manifest["node"] == expected["node"], (k, limit)
        assert manifest["dm_star"] == expected["dm_star"], (k, limit)
        assert manifest["n_suppressed"] == expected["n_suppressed"], (k, limit)
        assert manifest["dm_star_arx"] == expected["dm_star_arx"], (k, limit)
        assert manifest["dm"] == expected["dm"], (k, limit)


def test_adult_cli_and_verify(tmp_path, capsys):
    cfg = _adult_config(tmp_path, 10, 0.05, bins=10**9)
    assert main(["run", str(cfg), "--k", "20", "--quiet"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["verified"] is True
    release = tmp_path / "out-10-0.05"
    manifest = json.loads((release / "manifest.json").read_text())
    assert manifest["k"] == 20
    assert main(["verify", str(release), "--k", "20"]) == 0
    capsys.readouterr()
    # A larger k than the release was made for must fail verification (exit 1).
    assert main(["verify", str(release), "--k", str(manifest["min_class_size"] + 1)]) == 1
