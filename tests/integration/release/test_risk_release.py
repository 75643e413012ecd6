"""The risk analysis everywhere a person looks (issue 21, docs/design.md §4c), on Adult: the manifest's
`risk_analysis` of the k = 5, 5 % release equals an independent groupby of the written rows;
`skald verify` recomputes it from the files and catches a changed figure; `skald audit` gives
the same figures for the release as it is and for the raw table; the report shows them."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from oracle_risk import uniques
from skald_testdata import ADULT_QIDS, adult_config, read_release, write_config

from airflow_skald.cli import main


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("risk")
    risk = {"sampling_fraction": 0.1, "threshold": 0.25}
    body = adult_config(tmp / "out", k=5, suppression_limit=0.05, sensitive=(), risk=risk)
    cfg = write_config(tmp / "c.yaml", body)
    assert main(["run", str(cfg)]) == 0
    return tmp, cfg


def _independent(df, threshold: Fraction, fraction: Fraction, n_input: int) -> dict:
    starred = (df[ADULT_QIDS] == "*").all(axis=1)
    sizes = df[~starred].groupby(ADULT_QIDS).size().tolist()
    n = sum(sizes)
    pop = float(Fraction(n_input) / fraction)
    return {
        "records": n,
        "classes": len(sizes),
        "records_at_risk": sum(s for s in sizes if Fraction(1, s) > threshold) / n,
        "highest_risk": 1 / min(sizes),
        "average_risk": len(sizes) / n,
        "sample_uniques": sizes.count(1) / n,
        "dankar": (uniques(sizes, pop, "dankar", fallback=True) or 0.0) / pop,
    }


def test_manifest_risk_analysis_is_the_written_rows(release, adult_df):
    tmp, _ = release
    manifest = json.loads((tmp / "out" / "manifest.json").read_text())
    a = manifest["risk_analysis"]
    want = _independent(read_release(tmp / "out"), Fraction(1, 4), Fraction(1, 10), len(adult_df))
    assert a["records"] == want["records"] and a["classes"] == want["classes"]
    for key in ("records_at_risk", "highest_risk", "average_risk"):
        assert a["prosecutor"][key] == pytest.approx(want[key], rel=1e-12)
    assert a["sample_uniques"] == pytest.approx(want["sample_uniques"], abs=1e-15)
    assert a["population_uniques"]["dankar"] == pytest.approx(want["dankar"], rel=1e-4)
    assert sum(b["records"] for b in a["by_class_size"]) == a["records"]
    report = (tmp / "out" / "report.html").read_text()
    assert "Re-identification risk analysis" in report and "Records by class size" in report


def test_verify_recomputes_the_risk_figures(release, capsys, tmp_path):
    tmp, _ = release
    out = tmp / "out"
    assert main(["verify", str(out)]) == 0
    again = json.loads(capsys.readouterr().out)["risk_analysis"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert again == manifest["risk_analysis"]
    # a changed figure is caught (on a copy of the release)
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    manifest["risk_analysis"]["prosecutor"]["average_risk"] /= 2
    (copy / "manifest.json").write_text(json.dumps(manifest))
    assert main(["verify", str(copy)]) == 1
    assert "risk_analysis.prosecutor" in capsys.readouterr().err


def test_audit_gives_the_same_figures(release, capsys, adult_df):
    tmp, cfg = release
    assert main(["audit", str(cfg), "--input", str(tmp / "out")]) in (0, 1)
    audited = json.loads(capsys.readouterr().out)["risk_analysis"]
    manifest = json.loads((tmp / "out" / "manifest.json").read_text())
    assert audited == manifest["risk_analysis"]
    # the raw table's risk, before choosing k
    assert main(["audit", str(cfg), "--risk-threshold", "0.5"]) == 1  # k = 5 does not hold
    raw = json.loads(capsys.readouterr().out)["risk_analysis"]
    sizes = adult_df.groupby(ADULT_QIDS).size().tolist()
    assert raw["classes"] == len(sizes) and raw["threshold"] == "0.5"
    assert raw["sample_uniques"] == pytest.approx(sizes.count(1) / len(adult_df))
    assert raw["prosecutor"]["records_at_risk"] == pytest.approx(
        sum(s for s in sizes if s < 2) / len(adult_df)
    )
