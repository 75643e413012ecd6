"""`skald hierarchy` (docs/design.md §3a) and bad rules on the command line.

For each builder the exported ARX CSV, loaded back as `hierarchy_file:`, gives the same node,
DM* and released rows as the rule itself; `--check` reports counts only; every bad rule named
in docs/design.md §3a is one line naming the QID and the rule, exit 2, before phase 2, nothing written.
"""

from __future__ import annotations

import json

import pandas as pd
import pytest
from skald_testdata import read_release, write_chunks, write_config

from airflow_skald.cli import main
from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.data.clinical import STAY_RULE, clinical_table
from airflow_skald.core.data.hierarchies import Hierarchy
from airflow_skald.core.run.runner import run

EDUCATION = ["Preschool", "1st-4th", "5th-6th", "HS-grad", "Bachelors", "Masters", "Doctorate"]
N = 300


def frame() -> pd.DataFrame:
    df = clinical_table(seed=11, start=0, stop=N).to_pandas()
    df["education"] = [EDUCATION[i % 7] for i in range(N)]
    df["stay_label"] = [f"[{x}-{x}]" for x in df["length_of_stay"]]  # its level-0 label
    return df


RULES = {
    "birth_date": ({"name": "birth_date", "type": "date"}, "birth_date"),
    "zip": ({"name": "zip", "type": "masked", "pad": "0"}, "zip"),
    "icd10": ({"name": "icd10", "type": "masked", "steps": [1, 3, 4]}, "icd10"),
    "education": (
        {"name": "education", "type": "categorical", "order": EDUCATION, "group": [2, 2]},
        "education",
    ),
    "length_of_stay": (
        STAY_RULE,
        "stay_label",  # the file's first column is the release's level-0 label
    ),
}
SEX = {"name": "sex", "type": "categorical", "hierarchy": {"F": ["*"], "M": ["*"]}}


def body(tmp, qids, out) -> dict:
    return {
        "input": {"path": str(tmp / "in")},
        "output": {"path": str(tmp / out)},
        "chunk_rows": 1000,
        "direct_identifiers": ["patient_id"],
        "sensitive_attributes": ["outcome"],
        "quasi_identifiers": qids,
        "privacy": {"k": 3, "suppression_limit": 0.05},
    }


@pytest.mark.parametrize("name", sorted(RULES))
def test_exported_hierarchy_gives_the_same_release_as_the_rule(tmp_path, capsys, name):
    rule, column = RULES[name]
    df = frame()
    write_chunks(df, tmp_path / "in", [70, 130])
    by_rule = write_config(tmp_path / "rule.yaml", body(tmp_path, [rule, SEX], "out-rule"))
    exported = tmp_path / f"{name}.csv"
    assert main(["hierarchy", str(by_rule), "--qid", name, "--out", str(exported)]) == 0
    h = Hierarchy.from_file(name, exported)  # an ARX file as any user's
    assert h.table[:, -1].tolist() == ["*"] * len(h.table)
    by_file = {"name": column, "type": "categorical", "hierarchy_file": str(exported)}
    cfg_file = write_config(tmp_path / "file.yaml", body(tmp_path, [by_file, SEX], "out-file"))
    a = run(load_config(by_rule))
    b = run(load_config(cfg_file))
    assert list(a["node"].values()) == list(b["node"].values())
    assert (a["dm_star"], a["n_suppressed"]) == (b["dm_star"], b["n_suppressed"])
    built = {q["name"]: q for q in a["quasi_identifiers"]}[name]["hierarchy_sha256"]
    listed = {q["name"]: q for q in b["quasi_identifiers"]}[column]["hierarchy_sha256"]
    assert built == listed == h.sha256  # the manifest names the same hierarchy both ways
    ra, rb = read_release(tmp_path / "out-rule"), read_release(tmp_path / "out-file")
    assert ra[name].astype(str).tolist() == rb[column].astype(str).tolist()
    assert ra["sex"].tolist() == rb["sex"].tolist()
    capsys.readouterr()
    assert main(["hierarchy", str(by_rule), "--qid", name, "--check"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["levels"] == h.top_level + 1 and report["values"] == len(h.table)
    assert report["per_level"][-1] == {
        "level": h.top_level,
        "labels": 1,
        "values_per_label": {"min": len(h.table), "max": len(h.table)},
    }
    for value in df[column].astype(str).unique()[:20]:
        assert value not in json.dumps(report)  # counts only


def test_export_to_stdout_is_arx_csv(tmp_path, capsys):
    write_chunks(frame(), tmp_path / "in", [])
    config = body(tmp_path, [RULES["icd10"][0], SEX], "out")
    config["privacy"]["l_diversity"] = [{"attribute": "outcome", "l": 2}]  # phase 1 of one QID
    cfg = write_config(tmp_path / "c.yaml", config)
    assert main(["hierarchy", str(cfg), "--qid", "icd10"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "E11.9;E11.*;E1***;E****;*" in lines
    assert not (tmp_path / "out").exists()  # phase 1 only: nothing released


BAD = [
    (
        {"name": "length_of_stay", "type": "numerical", "min_width": 1, "bins": [1, 7, 3]},
        "'length_of_stay' rule bins: cuts must strictly increase",
    ),
    (
        {"name": "birth_date", "type": "date", "levels": ["year", {"years": 5}, {"years": 12}]},
        "'birth_date' rule levels: {years: 12} after {years: 5}",
    ),
    (
        {"name": "icd10", "type": "masked", "steps": [1, 6]},
        "'icd10' rule steps: step 6 is beyond the code length 5",
    ),
    (
        {"name": "birth_date", "type": "date", "levels": ["day", "week", "month"]},
        "'birth_date' rule levels: month after week",
    ),
    (
        {"name": "bad_date", "type": "date"},
        "'bad_date' rule date: a value does not parse as an ISO-8601 date",
    ),
    ({"name": "short_code", "type": "masked"}, "'short_code' rule pad: codes have lengths 4 to 5"),
    ({"name": "zip", "type": "masked"}, "'zip' rule masked: the column holds numbers"),
    (
        {"name": "length_of_stay", "type": "numerical", "min_width": 2, "bins": [1, 4]},
        "'length_of_stay' rule bins: cut 4 is not a whole number of min_width 2 units",
    ),
    (
        {"name": "length_of_stay", "type": "numerical", "bins": [1, 4]},
        "'length_of_stay' rule bins: needs min_width",
    ),
    (
        {"name": "length_of_stay", "type": "numerical", "min_width": 1, "bins": [3, 7]},
        "'length_of_stay' rule bins: values lie below the first cut and no 'below' label",
    ),
    (
        {"name": "education", "type": "categorical", "order": EDUCATION[:5], "group": [2]},
        "'education' has value",
    ),
]


@pytest.mark.parametrize(("qid", "message"), BAD, ids=[m.split(":")[0] for _, m in BAD])
def test_bad_rules_are_one_line_exit_2_before_phase_2(tmp_path, capsys, qid, message):
    df = frame()
    df["bad_date"] = ["2020-02-30" if i == 5 else "2020-01-01" for i in range(N)]
    df["short_code"] = ["AB12" if i % 2 else "AB123" for i in range(N)]
    write_chunks(df, tmp_path / "in", [100], "csv")
    body_ = body(tmp_path, [qid], "out")
    body_["input"]["format"] = "csv"
    cfg = write_config(tmp_path / "c.yaml", body_)
    assert main(["run", str(cfg), "-q"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err, err
    assert not (tmp_path / "out").exists()
