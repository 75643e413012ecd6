"""k and β of (ε, δ)-DP against ARX 3.9.2 for one cheap point (both modes): ARX's answer
recorded in tests/data/arx_answers, and ARX run live where it is found; the grid is in
tests/data/arx_answers/dp-parameters-grid.json (ARX needs up to 30 minutes a point)."""

from __future__ import annotations

from arx_answers import arx_answer

from airflow_skald.core.privacy.dp_parameters import anonymisation_epsilon, calculate


def test_k_and_beta_as_arx() -> None:
    got = arx_answer("dp-parameters-1-1e-5-0.1", ["--dp-params-only", "1:1e-5:0.1"])
    fixed, searched = got["without_search_budget"], got["data_dependent"]
    ours = calculate(1.0, 1e-5)
    assert (ours.k, ours.beta) == (fixed["k"], fixed["beta"])
    ea = anonymisation_epsilon(1.0, 0.1)
    assert ea == searched["epsilon_anonymization"]
    ours = calculate(ea, 1e-5)
    assert ours.k == searched["k"]
    assert ours.beta == searched["beta"]  # this point's e^x is the same on the JVM and in C
