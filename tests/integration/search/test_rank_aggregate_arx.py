"""ARX's RANK aggregate of a multi-dimensional objective (issue 44 item 10, ADR 0043;
`Metric.AggregateFunction.RANK`, `ILMultiDimensionalRank`): the weighted per-QID values sorted
largest first, compared element by element. On Adult (8 QIDs, k = 5) the node, suppressed
records, classes and every per-QID value equal ARX 3.9.2's (recorded in tests/data/arx_answers,
run live where ARX is found), whatever the chunking; the exhaustive reference on generated
tables: tests/unit/quality/test_objectives_oracle.py and test_sample_order_loss.py draw `rank`.
"""

from __future__ import annotations

import pytest
from arx_answers import adult_input_args, arx_answer, assert_arx_release
from skald_testdata import adult_config, write_config

from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.run.runner import run

QIDS = [
    "age", "education", "marital-status", "native-country", "occupation", "race", "sex",
    "workclass",
]  # fmt: skip
ARX_METRIC = {"loss": "loss", "precision": "precision-nm"}


@pytest.mark.parametrize(("objective", "limit"), [("loss", 0.05), ("precision", 0.02)])
def test_adult_rank_equals_arx(tmp_path, objective, limit):
    arx = arx_answer(
        f"rank-adult-{objective}-s{limit}",
        [
            *adult_input_args(QIDS),
            *("--insensitive", "salary-class", "--k", "5", "--suppression", str(limit)),
            *("--metric", ARX_METRIC[objective], "--aggregate", "rank"),
        ],
    )
    nodes = []
    for chunk_rows in (40_000, 9_000):  # one chunk, four: the same answer
        body = adult_config(
            tmp_path / f"out-{chunk_rows}",
            k=5,
            suppression_limit=limit,
            qids=QIDS,
            chunk_rows=chunk_rows,
            quality={"objective": objective, "aggregate": "rank"},
        )
        manifest = run(load_config(write_config(tmp_path / f"{chunk_rows}.yaml", body)))
        assert_arx_release(manifest, arx)
        quality = manifest["quality_models"]
        want = [float(v) for v in arx["arx_information_loss"].strip("[]").split(",")]
        assert quality["scores"][objective] == pytest.approx(want[0], abs=1e-9)
        if objective == "loss":  # the manifest's per-QID figures (Loss, NU-entropy)
            per_qid = sorted((q["loss"] for q in quality["qids"]), reverse=True)
            assert per_qid == pytest.approx(want, abs=1e-9)  # ARX prints 10 digits
        nodes.append(manifest["node"])
    assert nodes[0] == nodes[1]
