"""Population uniqueness by Zayatz's model equals ARX 3.9.2 (docs/design.md §4c, issue 44 item 3,
ADR 0042): Adult with age, education, native-country and sex (ARX's hierarchies), uniques
<= 0.005 % of the USA's population (ARX's Region.USA, 317,238,626), Loss, 2 % suppression.
The node, the suppressed records, the classes, Loss (to ARX's 1e-10 rounding) and the
population-uniques figure of the release (the model's and the risk analysis's, bit for bit)
are ARX's, recorded in tests/data/arx_answers (and ARX run live where it is found), whether
the input is read in one chunk or in seven."""

from __future__ import annotations

import pytest
from arx_answers import adult_input_args, arx_answer, assert_arx_release
from skald_testdata import adult_config, write_config

from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.run.runner import run

pytestmark = pytest.mark.integration

QIDS = ["age", "education", "native-country", "sex"]
USA = 317_238_626  # ARXPopulationModel.Region.USA


@pytest.fixture(scope="module")
def arx() -> dict:
    return arx_answer(
        "zayatz-adult-usa-loss",
        [
            *adult_input_args(QIDS),
            *("--pop-unique", "0.00005:zayatz:usa", "--suppression", "0.02"),
            *("--metric", "loss", "--no-own-stats", "--risk"),
        ],
    )


@pytest.mark.parametrize("chunk_rows", [None, 4500])
def test_zayatz_equals_arx(tmp_path, arx, chunk_rows):
    model = {"max": 0.00005, "model": "zayatz", "population": USA}
    body = adult_config(
        tmp_path / "out", k=1, suppression_limit=0.02, qids=QIDS, sensitive=(),
        chunk_rows=chunk_rows, quality={"objective": "loss"}, risk={"population": USA},
        privacy={"population_uniqueness": model},
    )  # fmt: skip
    del body["privacy"]["k"]
    manifest = run(load_config(write_config(tmp_path / "c.yaml", body)))
    assert_arx_release(manifest, arx)
    loss = manifest["quality_models"]["scores"]["loss"]
    assert loss == pytest.approx(arx["arx_information_loss_value"], abs=1e-9)
    figure = arx["risk_output"]["population_uniqueness"]["zayatz"]["fraction_unique"]
    assert manifest["privacy_models"][0]["population_uniques"] == figure
    assert manifest["risk_analysis"]["population_uniques"]["zayatz"] == figure
