"""ARX's non-monotone non-uniform entropy (issue 44 item 4, ADR 0044; `MetricMDNUNMEntropy`
and `MetricMDNUNMEntropyPrecomputed`) with record suppression: the suppressed records add
`s * sum_x c_x log2(S / c_x)` per QID. On Adult (8 QIDs, k = 5) the node, suppressed records,
classes and loss equal ARX 3.9.2's (recorded in tests/data/arx_answers, run live where ARX is
found), at two gs factors, in one chunk and in four; ARX's two classes give the same answer.
The exhaustive reference on generated tables, chunked any way:
tests/unit/quality/test_objectives_oracle.py (`nu_entropy_nm`).
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


def _arx(metric: str, limit: float, gs: str) -> dict:
    return arx_answer(
        f"{metric}-adult-s{limit}-gs{gs}",
        [
            *adult_input_args(QIDS),
            *("--insensitive", "salary-class", "--k", "5", "--suppression", str(limit)),
            *("--metric", metric, "--gs-factor", gs, "--aggregate", "sum"),
        ],
    )


def test_arx_precomputed_or_not_is_one_model():
    plain, cached = _arx("entropy-nm", 0.05, "0.5"), _arx("entropy-nm-precomputed", 0.05, "0.5")
    assert plain["metric_class"] != cached["metric_class"]
    for key in ("node", "arx_information_loss", "arx_class_statistics"):
        assert plain[key] == cached[key]


@pytest.mark.parametrize(
    ("limit", "gs", "chunk_rows"), [(0.05, "0.5", 40_000), (0.1, "0.3", 9_000)]
)
def test_adult_nu_entropy_nm_equals_arx(tmp_path, limit, gs, chunk_rows):
    arx = _arx("entropy-nm", limit, gs)
    body = adult_config(
        tmp_path / "out",
        k=5,
        suppression_limit=limit,
        qids=QIDS,
        chunk_rows=chunk_rows,
        quality={"objective": "nu_entropy_nm", "gs_factor": float(gs)},
    )
    manifest = run(load_config(write_config(tmp_path / "run.yaml", body)))
    assert_arx_release(manifest, arx)
    assert manifest["n_suppressed"] > 0  # the suppressed records' entropy is part of the loss
    want = float(arx["arx_information_loss"])  # the sum of ARX's per-QID values (10 digits)
    assert manifest["quality_models"]["scores"]["nu_entropy_nm"] == pytest.approx(want, rel=1e-9)
