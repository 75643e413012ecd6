"""The order in which the sample-based models suppress classes of one size under Loss
(docs/design.md §4c, issue 44 item 2): by each class's own loss (ARX's `HashGroupifyDistribution` with
`MetricMDNMLoss.getInformationLossInternal(node, entry)`), then by first record. On generated
tables the node, the suppressed records, Loss and the very rows suppressed equal the exhaustive
oracle's (tests/oracle_quality.py), whatever the chunking, for each aggregate and with weights."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from oracle_quality import exhaustive_quality
from oracle_risk import average_risk_ok, sample_uniqueness_ok
from skald_testdata import read_release, write_chunks, write_config

from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.run.runner import run

pytestmark = pytest.mark.integration

# labels whose domain shares differ (g0 covers 3 of 6 values, g1 2, g2 1)
HIER = {"v0": "g0", "v1": "g0", "v2": "g0", "v3": "g1", "v4": "g1", "v5": "g2"}
QIDS = [
    {"name": "cat", "type": "categorical", "hierarchy": {v: [g] for v, g in HIER.items()}},
    {"name": "num", "type": "numerical", "min_width": 2},
    {"name": "sex", "type": "categorical", "hierarchy": {"f": [], "m": []}},
]
ORACLE_QIDS = [
    {"name": "cat", "type": "categorical", "hierarchy": {v: [g, "*"] for v, g in HIER.items()}},
    QIDS[1],
    {"name": "sex", "type": "categorical", "hierarchy": {"f": ["*"], "m": ["*"]}},
]
SU = {"sample_uniqueness": {"max": 0.04}}
AR = {"average_risk": {"max": 0.2}}
# seed, rows, model, suppression limit, aggregate, weights: each but the last suppresses other
# rows (and scores another Loss) when classes of one size go by first record alone
CASES = [
    (1, 160, SU, 0.15, None, None),
    (1, 160, SU, 0.15, "arithmetic_mean", None),
    (1, 160, SU, 0.15, None, {"cat": 3, "num": 1, "sex": 2}),
    (1, 120, AR, 0.2, None, None),
    (1, 120, AR, 0.2, "sum", None),
    (1, 120, SU, 0.2, "maximum", None),
    (1, 160, SU, 0.15, "rank", None),  # ARX's RANK (ADR 0043)
    (1, 120, AR, 0.2, "rank", {"cat": 3, "num": 1, "sex": 2}),
]


def _table(seed: int, n: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    return pd.DataFrame(
        {
            "cat": rng.choice(list(HIER), n, p=rng.dirichlet(np.ones(len(HIER)) * 2)),
            "num": rng.integers(0, int(rng.integers(8, 20)), n),
            "sex": rng.choice(["f", "m"], n),
        }
    )


def _holds(model: dict):
    if "sample_uniqueness" in model:
        return lambda sizes: sample_uniqueness_ok(sizes, model["sample_uniqueness"])
    return lambda sizes: average_risk_ok(sizes, model["average_risk"])


@pytest.mark.parametrize("case", CASES, ids=[f"{list(c[2])[0]}-{c[4]}-{bool(c[5])}" for c in CASES])
def test_loss_orders_equal_classes_as_the_oracle(tmp_path, case):
    seed, n, model, limit, aggregate, weights = case
    df = _table(seed, n)
    expected = exhaustive_quality(
        df, ORACLE_QIDS, 1, limit, [], "loss", weights=weights, aggregate=aggregate,
        sample_based=_holds(model),
    )  # fmt: skip
    assert expected["node"] is not None and expected["n_suppressed"] > 0
    quality = {"objective": "loss"}
    quality.update({"aggregate": aggregate} if aggregate else {})
    quality.update({"weights": weights} if weights else {})
    tops = {"cat": 2, "num": None, "sex": 1}
    released = []
    for cut in (n, 17, 40):  # one chunk, many: the same answer and the same rows
        write_chunks(df, tmp_path / f"in-{cut}", [cut] * (n // cut))
        body = {
            "input": {"path": str(tmp_path / f"in-{cut}")},
            "output": {"path": str(tmp_path / f"out-{cut}")},
            "quasi_identifiers": QIDS,
            "privacy": {**model, "suppression_limit": limit},
            "quality": quality,
        }
        manifest = run(load_config(write_config(tmp_path / f"c-{cut}.yaml", body)))
        assert manifest["node"] == expected["node"]
        assert manifest["n_suppressed"] == expected["n_suppressed"]
        got = manifest["quality_models"]["scores"]["loss"]
        assert got == pytest.approx(expected["value"], rel=1e-9, abs=1e-12)
        release = read_release(tmp_path / f"out-{cut}")
        assert manifest["node"]["cat"] < tops["cat"] or manifest["node"]["sex"] < tops["sex"]
        masked = (release[["cat", "num", "sex"]].astype(str) == "*").all(axis=1)
        assert np.flatnonzero(masked.to_numpy()).tolist() == expected["suppressed_rows"]
        released.append(release.to_dict("list"))
    assert released[0] == released[1] == released[2]
