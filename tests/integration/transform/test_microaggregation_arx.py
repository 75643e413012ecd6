"""Microaggregated ages on Adult equal ARX 3.9.2's (docs/design.md §4f): age, sex, race and
marital-status with ARX's hierarchies, k = 100, 2 % suppression; ARX picks the node
(age 1, sex 0, race 1, marital-status 1), where the age classes are 5-year groups."""

from __future__ import annotations

import hashlib
import json
import subprocess

from skald_testdata import ADULT, ARX, adult_config, read_release, write_config

from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.run.runner import run

QIDS = ["age", "sex", "race", "marital-status"]
NODE = {"age": 1, "sex": 0, "race": 1, "marital-status": 1}

# ARX's released age column (one line per record, input order) with
#   arx --input adult.csv --sep ';' --qid age=... --qid sex=... --qid race=...
#       --qid marital-status=... --k 100 --suppression 0.02 --datatype age=integer
#       --microagg age=arithmetic_mean:cluster --output out.csv
# sha256 of the lines "value\n" (29,654 released records, 508 "*")
ARX_MEAN_SHA256 = "60f38ffd07d86ccc300f54bad6f41a1ec6b665f24e557400ed21b773fb7d46a2"


def _skald(tmp_path, function: str) -> list[str]:
    out = tmp_path / function
    body = adult_config(
        out, k=100, suppression_limit=0.02, qids=QIDS, sensitive=(), fmt="csv", chunk_rows=7000
    )
    body["quasi_identifiers"][0]["microaggregation"] = {"function": function, "cluster": True}
    manifest = run(load_config(write_config(tmp_path / f"{function}.yaml", body)))
    assert manifest["node"] == NODE
    assert manifest["n_suppressed"] == 508
    return read_release(tmp_path / function)["age"].tolist()


def test_mean_equals_arx(tmp_path):
    ages = _skald(tmp_path, "mean")
    assert hashlib.sha256("".join(a + "\n" for a in ages).encode()).hexdigest() == ARX_MEAN_SHA256


def test_median_equals_arx_run_here(tmp_path):
    out, info = tmp_path / "arx.csv", tmp_path / "arx.json"
    qid_args = [a for q in QIDS for a in ("--qid", f"{q}={ADULT / f'adult_hierarchy_{q}.csv'}")]
    command = [str(ARX), "--input", str(ADULT / "adult.csv"), "--sep", ";", *qid_args]
    command += ["--k", "100", "--suppression", "0.02", "--datatype", "age=integer"]
    command += ["--microagg", "age=median:cluster", "--output", str(out), "--json", str(info)]
    command += ["--no-arx-stats"]
    subprocess.run(command, check=True, capture_output=True)
    assert json.loads(info.read_text())["node"] == NODE
    lines = out.read_text().splitlines()
    column = lines[0].split(";").index("age")
    arx = [line.split(";")[column] for line in lines[1:]]
    ours = _skald(tmp_path, "median")
    assert ours == arx
