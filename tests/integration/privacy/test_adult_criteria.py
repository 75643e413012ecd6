"""Adult with `occupation` as the sensitive attribute (issue 11): l-diversity (distinct 2 and 3,
entropy 2, recursive (3,2)) and t-closeness (equal and hierarchical over occupation's ARX
hierarchy, t = 0.2) over the other 7 QIDs, suppression 0 and 5 %, k = 2.

End to end through the CLI (`skald run` at the level-0 root, then `skald verify`), each release
checked by the naive groupby check of tests/oracle.py; and the same cases against the exhaustive
reference on the sub-lattice above a coarser RAM root (histogram_bins=20000, 72 of the 2160
nodes: the full lattice takes the reference minutes per case).
"""

from __future__ import annotations

import json

import pytest
from oracle import Criteria, check_release, exhaustive_search_each, ram_root
from skald_testdata import (
    ADULT,
    ADULT_QIDS,
    adult_config,
    adult_oracle_qids,
    read_release,
    write_config,
)

from airflow_skald.cli import main
from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.run.runner import run

QIDS = [q for q in ADULT_QIDS if q != "occupation"]
K = 2
OCCUPATION = {"attribute": "occupation"}
CASES = {
    "distinct-2": {"l_diversity": [{**OCCUPATION, "l": 2}]},
    "distinct-3": {"l_diversity": [{**OCCUPATION, "l": 3}]},
    "entropy-2": {"l_diversity": [{**OCCUPATION, "l": 2, "variant": "entropy"}]},
    "recursive-3-2": {"l_diversity": [{**OCCUPATION, "l": 2, "variant": "recursive", "c": 3}]},
    "t-equal-0.2": {"t_closeness": [{**OCCUPATION, "t": 0.2, "distance": "equal"}]},
    "t-hierarchical-0.2": {
        "t_closeness": [
            {
                **OCCUPATION,
                "t": 0.2,
                "distance": "hierarchical",
                "hierarchy_file": str(ADULT / "adult_hierarchy_occupation.csv"),
            }
        ]
    },
}
LIMITS = (0, 0.05)  # suppression limits
FIGURES = ("min_distinct", "min_entropy_l", "max_recursive_ratio", "max_distance")


def adult_criteria_config(tmp_path, case: str, limit, bins: int | None) -> tuple:
    out = tmp_path / f"out-{case}-{limit}"
    body = adult_config(
        out,
        k=K,
        suppression_limit=limit,
        qids=QIDS,
        sensitive=["occupation", "salary-class"],
        privacy=CASES[case],
        memory={"histogram_bins": bins, "root": "paper"},
    )
    return write_config(tmp_path / f"adult-{case}-{limit}.yaml", body), out


def criterion_figures(manifest: dict) -> list[float | None]:
    """The figure of each criterion after k, as the manifest lists it."""
    return [next(m[f] for f in FIGURES if f in m) for m in manifest["privacy_models"][1:]]


def assert_same_figures(got: list, want: list) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        assert g == pytest.approx(float(w), rel=1e-9), (got, want)


@pytest.mark.parametrize("limit", LIMITS)
@pytest.mark.parametrize("case", list(CASES))
def test_adult_criteria_end_to_end(tmp_path, adult_df, capsys, case, limit):
    cfg, out = adult_criteria_config(tmp_path, case, limit, 10**9)
    assert main(["run", str(cfg), "--quiet"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["verified"] is True
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["root_node"] == dict.fromkeys(QIDS, 0)
    assert main(["verify", str(out)]) == 0
    verified = json.loads(capsys.readouterr().out)
    assert verified["verified"] is True
    assert verified["n_suppressed"] == manifest["n_suppressed"]
    # every criterion re-checked (a hierarchical one with the hierarchy the release keeps)
    assert "not_rechecked" not in verified
    assert_same_figures(criterion_figures(verified), criterion_figures(manifest))
    # the naive groupby check of every criterion on the written release
    release = read_release(out)
    checked = check_release(
        release, QIDS, K, limit, len(adult_df), sensitive_input=adult_df, **CASES[case]
    )
    assert checked["n_suppressed"] == manifest["n_suppressed"]
    assert checked["dm_star"] == manifest["dm_star"]
    assert checked["n_classes"] == manifest["n_equivalence_classes"]
    assert_same_figures(criterion_figures(manifest), checked["figures"])
    assert release["occupation"].tolist() == adult_df["occupation"].tolist()


@pytest.mark.parametrize("case", list(CASES))
def test_adult_criteria_match_exhaustive_search(tmp_path, adult_df, case):
    """Above a coarser root (histogram_bins=20000 with the (class, occupation) tables counted:
    72 nodes) the product's node, DM*, suppression and figures are the reference's, at each
    suppression limit (the reference judges each node's classes once for both)."""
    oracle_qids = adult_oracle_qids(QIDS)
    tables = Criteria(**CASES[case], inputs=adult_df).n_values
    root = ram_root(adult_df, oracle_qids, 20000, [], tables)
    cases = [(K, limit) for limit in LIMITS]
    expected_each = exhaustive_search_each(adult_df, oracle_qids, cases, [], root, **CASES[case])
    for limit, expected in zip(LIMITS, expected_each, strict=True):
        cfg, _ = adult_criteria_config(tmp_path, case, limit, 20000)
        manifest = run(load_config(cfg))
        assert manifest["root_node"] == root
        assert expected["evaluated"] == 72
        assert manifest["node"] == expected["node"], limit
        assert manifest["dm_star"] == expected["dm_star"], limit
        assert manifest["n_suppressed"] == expected["n_suppressed"], limit
        assert manifest["n_equivalence_classes"] == expected["n_classes"], limit
        assert_same_figures(criterion_figures(manifest), expected["figures"])
