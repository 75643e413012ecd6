"""Microaggregated ages on Adult equal ARX 3.9.2's (docs/design.md §4f): age, sex, race and
marital-status with ARX's hierarchies, k = 100, 2 % suppression; ARX picks the node
(age 1, sex 0, race 1, marital-status 1), where the age classes are 5-year groups. ARX's
answers are recorded in tests/data/arx_answers (and ARX run live where it is found)."""

from __future__ import annotations

import pytest
from arx_answers import adult_input_args, arx_answer, column_sha256
from skald_testdata import adult_config, read_release, write_config

from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.run.runner import run

QIDS = ["age", "sex", "race", "marital-status"]
ARX_FUNCTION = {"mean": "arithmetic_mean", "median": "median"}


@pytest.mark.parametrize("function", ["mean", "median"])
def test_microaggregated_age_equals_arx(tmp_path, function):
    arx = arx_answer(
        f"microaggregation-adult-age-{function}",
        [
            *adult_input_args(QIDS),
            *("--k", "100", "--suppression", "0.02", "--datatype", "age=integer"),
            *("--microagg", f"age={ARX_FUNCTION[function]}:cluster"),
            *("--output", "{tmp}/arx.csv"),
        ],
        output_columns=["age"],
    )
    out = tmp_path / function
    body = adult_config(
        out, k=100, suppression_limit=0.02, qids=QIDS, sensitive=(), fmt="csv", chunk_rows=7000
    )
    body["quasi_identifiers"][0]["microaggregation"] = {"function": function, "cluster": True}
    manifest = run(load_config(write_config(tmp_path / f"{function}.yaml", body)))
    assert manifest["node"] == arx["node"]
    assert manifest["n_suppressed"] == arx["arx_class_statistics"]["suppressed_records"]
    ages = read_release(out)["age"].tolist()  # the released column, in input order
    assert column_sha256(ages) == arx["output_sha256"]["age"]
