"""Hierarchies built from rules (docs/design.md §3a) end to end: the product's node, DM* and released
rows equal the exhaustive reference's (tests/oracle.py with tests/oracle_rules.py, written from
docs/design.md alone) on generated clinical data, however it is chunked, in Parquet or CSV, with
`--workers 2`; the manifest records each rule and its built hierarchy."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
from oracle import exhaustive_search
from oracle_rules import expected_release
from skald_testdata import read_release, write_chunks, write_config

from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.data.clinical import STAY_RULE, clinical_table
from airflow_skald.core.run.runner import run

EDUCATION = ["Preschool", "1st-4th", "5th-6th", "HS-grad", "Bachelors", "Masters", "Doctorate"]
N = 360
K = 4
LIMIT = 0.05


def clinical_frame() -> pd.DataFrame:
    """Generated clinical rows, plus admission times as ISO text in New York's zone and an
    ordered education column (so every builder sees its input kinds)."""
    df = clinical_table(seed=7, start=0, stop=N).to_pandas()
    local = df["admitted"].dt.tz_convert("America/New_York")
    df["admitted_text"] = [t.isoformat() for t in local]
    rng = np.random.default_rng(3)
    df["education"] = rng.choice(EDUCATION, N, p=[0.02, 0.03, 0.05, 0.4, 0.3, 0.15, 0.05])
    return df


QIDS_A = [
    {"name": "birth_date", "type": "date"},
    {"name": "zip", "type": "masked", "pad": "0", "align": "right"},
    STAY_RULE,
    {"name": "sex", "type": "categorical", "order": ["F", "M"], "group": [2]},
]
QIDS_B = [
    {"name": "admitted_text", "type": "date", "levels": ["hour", "day", "week", "year"]},
    {"name": "icd10", "type": "masked", "steps": [1, 3, 4]},
    {"name": "education", "type": "categorical", "order": EDUCATION, "group": [2, 2]},
]
QIDS_C = [
    {"name": "admitted_text", "type": "date", "levels": ["minute", "day", "month", "quarter"]},
    {"name": "sex", "type": "categorical", "hierarchy": {"F": ["*"], "M": ["*"]}},
]
QIDS_D = [
    {"name": "zip", "type": "masked", "pad": "0"},
    {"name": "icd10", "type": "masked", "steps": [2, 4], "from": "left"},
]
CASES = {
    "dates-zip-stay": QIDS_A,
    "zones-icd-education": QIDS_B,
    "months-sex": QIDS_C,
    "two-codes": QIDS_D,
}


def config_body(tmp, qids, fmt="parquet", folder="in", out="out") -> dict:
    source = {"path": str(tmp / folder), "format": fmt}
    return {
        "input": source,
        "output": {"path": str(tmp / out)},
        "chunk_rows": 1000,
        "direct_identifiers": ["patient_id"],
        "sensitive_attributes": ["outcome"],
        "quasi_identifiers": qids,
        "privacy": {"k": K, "suppression_limit": LIMIT},
    }


def columns(qids) -> list[str]:
    return ["patient_id", *[q["name"] for q in qids], "outcome"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_rules_match_the_exhaustive_reference_however_chunked(tmp_path, case):
    qids = CASES[case]
    df = clinical_frame()[columns(qids)]
    expected = exhaustive_search(df, qids, K, LIMIT, [])
    assert expected["node"] is not None
    want = expected_release(df, qids, expected["node"], K)
    manifests = []
    for label, sizes, fmt, workers in [
        ("a", [N], "parquet", 1),  # one chunk
        ("b", [37, 100, 64, 90], "parquet", 2),  # uneven chunks, two worker processes
        ("c", [120, 120], "csv", 1),  # CSV: dates and timestamps as ISO text
    ]:
        write_chunks(df, tmp_path / f"in-{label}", sizes, fmt)
        body = config_body(tmp_path, qids, fmt, f"in-{label}", f"out-{label}")
        cfg = write_config(tmp_path / f"{label}.yaml", body)
        manifest = run(load_config(cfg), workers=workers)
        assert manifest["node"] == expected["node"], label
        assert manifest["dm_star"] == expected["dm_star"], label
        assert manifest["n_suppressed"] == expected["n_suppressed"], label
        release = read_release(tmp_path / f"out-{label}")
        names = [q["name"] for q in qids]
        got = release[names].astype(str).reset_index(drop=True)
        pd.testing.assert_frame_equal(got, want.reset_index(drop=True), check_dtype=False)
        assert release["outcome"].tolist() == df["outcome"].tolist()
        assert "patient_id" not in release.columns
        manifests.append(manifest)
    hashes = [[q.get("hierarchy_sha256") for q in m["quasi_identifiers"]] for m in manifests]
    assert hashes[0] == hashes[1] == hashes[2]  # one built hierarchy however read and chunked


def test_manifest_records_rules_cuts_and_time_zones(tmp_path):
    df = clinical_frame()[columns(QIDS_B)]
    write_chunks(df, tmp_path / "in", [100])
    manifest = run(load_config(write_config(tmp_path / "c.yaml", config_body(tmp_path, QIDS_B))))
    described = {q["name"]: q for q in manifest["quasi_identifiers"]}
    admitted = described["admitted_text"]
    assert admitted["rule"] == {"type": "date", "levels": ["hour", "day", "week", "year"]}
    assert admitted["values_cut_to_first_level"] is True  # minutes cut to the hour
    assert admitted["time_zones_normalised_to_utc"] is True
    assert len(admitted["hierarchy_sha256"]) == 64
    assert described["icd10"]["rule"]["steps"] == [1, 3, 4]
    assert described["education"]["rule"]["type"] == "ordered"
    text = json.dumps(manifest)
    for value in df["icd10"].unique().tolist() + df["education"].unique().tolist():
        assert f'"{value}"' not in text  # codes and categories never in the manifest
