"""k and β of (ε, δ)-DP against ARX 3.9.2 run live for one cheap point (both modes); the grid
is in tests/unit/privacy/dp/arx_dp_params.json (ARX needs up to 36 s a point)."""

from __future__ import annotations

import json
import subprocess

import pytest
from skald_testdata import ARX

from airflow_skald.core.privacy.dp.parameters import anonymisation_epsilon, calculate


@pytest.mark.skipif(not ARX.exists(), reason="ARX 3.9.2 is not installed beside the repository")
def test_k_and_beta_as_arx_live() -> None:
    out = subprocess.run(
        [str(ARX), "--dp-params-only", "1:1e-5:0.1"], check=True, capture_output=True, text=True
    )
    got = json.loads(out.stdout)
    fixed, searched = got["without_search_budget"], got["data_dependent"]
    ours = calculate(1.0, 1e-5)
    assert (ours.k, ours.beta) == (fixed["k"], fixed["beta"])
    ea = anonymisation_epsilon(1.0, 0.1)
    assert ea == searched["epsilon_anonymization"]
    ours = calculate(ea, 1e-5)
    assert ours.k == searched["k"]
    assert ours.beta == searched["beta"]  # this point's e^x is the same on the JVM and in C
