"""A sensitive attribute of any column type under t-closeness (docs/design.md §4b): dates, timestamps,
booleans and decimals are kept by their text (numbers: decimals as their floats) in phase 1,
coded so in phases 2 and 3, and found again by `skald verify` in the written release, in mask
and drop mode (sensitive_counts.json). Before, a decimal crashed the run (exit 3) and a date,
timestamp or boolean failed its own verification."""

from __future__ import annotations

import datetime
import decimal
import json

import numpy as np
import pandas as pd
import pytest
from skald_testdata import write_chunks, write_config

from airflow_skald.cli import main

HIERARCHY = {f"a{i}": [f"A{i // 2}"] for i in range(6)}


def _values(kind: str, codes: np.ndarray) -> list:
    if kind == "date":
        return [datetime.date(2020, 1, int(c) + 1) for c in codes]
    if kind == "timestamp":
        return [datetime.datetime(2020, 1, int(c) + 1, 10, 30) for c in codes]
    if kind == "bool":
        return [bool(c % 2) for c in codes]
    return [decimal.Decimal(int(c)) / 2 for c in codes]  # decimal


def _run_and_verify(tmp_path, capsys, body: dict) -> dict:
    """Run the config, then `skald verify` the release: both succeed; verify's report."""
    cfg = write_config(tmp_path / "c.yaml", body)
    assert main(["run", str(cfg), "--quiet"]) == 0
    capsys.readouterr()
    assert main(["verify", str(tmp_path / "out")]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["verified"] is True
    return report


@pytest.mark.parametrize("mode", ["mask", "drop"])
@pytest.mark.parametrize("kind", ["date", "timestamp", "bool", "decimal"])
def test_run_and_verify(tmp_path, capsys, kind, mode):
    rng = np.random.default_rng(3)
    n = 240
    df = pd.DataFrame(
        {
            "a": rng.choice(sorted(HIERARCHY), size=n),
            "s": _values(kind, rng.integers(0, 4, size=n)),
        }
    )
    write_chunks(df, tmp_path / "in", [80, 160])
    body = {
        "input": {"path": str(tmp_path / "in"), "format": "parquet"},
        "output": {"path": str(tmp_path / "out"), "format": "parquet"},
        "chunk_rows": 10_000,
        "sensitive_attributes": ["s"],
        "quasi_identifiers": [{"name": "a", "type": "categorical", "hierarchy": HIERARCHY}],
        "privacy": {
            "k": 3,
            "suppression_limit": 0.1,
            "t_closeness": [{"attribute": "s", "t": 0.4}],
        },
        "suppressed_records": mode,
    }
    report = _run_and_verify(tmp_path, capsys, body)
    assert [m["model"] for m in report["privacy_models"]] == ["k-anonymity", "t-closeness"]


@pytest.mark.parametrize("mode", ["mask", "drop"])
def test_csv_numbers_under_ordered_distance(tmp_path, capsys, mode):
    """A CSV column of numbers written as "1.0" and "0.5": phase 1 reads them as numbers for
    ordered t-closeness, and the release check finds "1.0" as phase 1's 1 (it failed the run's
    own verification)."""
    rng = np.random.default_rng(4)
    n = 240
    folder = tmp_path / "in"
    folder.mkdir()
    df = pd.DataFrame(
        {"a": rng.choice(sorted(HIERARCHY), size=n), "s": rng.integers(1, 7, size=n) / 2}
    )
    df.to_csv(folder / "part-0.csv", index=False)
    assert "1.0" in (folder / "part-0.csv").read_text()
    body = {
        "input": {"path": str(folder), "format": "csv"},
        "output": {"path": str(tmp_path / "out"), "format": "csv"},
        "chunk_rows": 100,
        "sensitive_attributes": ["s"],
        "quasi_identifiers": [{"name": "a", "type": "categorical", "hierarchy": HIERARCHY}],
        "privacy": {
            "k": 3,
            "suppression_limit": 0.1,
            "t_closeness": [{"attribute": "s", "t": 0.4, "distance": "ordered"}],
        },
        "suppressed_records": mode,
    }
    _run_and_verify(tmp_path, capsys, body)
