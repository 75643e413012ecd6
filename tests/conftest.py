"""Shared fixtures; helpers live in skald_testdata.py (tests/airflow has a conftest too)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from skald_testdata import ADULT  # noqa: E402


@pytest.fixture(scope="session")
def adult_df() -> pd.DataFrame:
    if not ADULT.exists():
        pytest.fail(f"Adult dataset not found at {ADULT} (shared/ must sit beside the repo)")
    return pd.read_csv(ADULT / "adult.csv", sep=";")


# ------------------------------------------------------------------------------- layers
# The folder says the layer: tests/unit (in-memory tests of one core module, the tree mirrored:
# tests/unit/<package>/test_<module>.py), tests/integration (files, the CLI, processes, kill -9,
# object storage; tests/integration/<package>/test_<module>.py where one module is under test),
# tests/airflow (dag.test and operators in process). Two marks are declared by the tests
# themselves: `deployment` (real Airflow processes, PostgreSQL/Redis) and `browser` (Chromium).
# `make test-fast` runs the unit layer; `make test` runs them all.
LAYERS = {
    "unit": pytest.mark.unit,
    "integration": pytest.mark.integration,
    "airflow": pytest.mark.airflow,
}


def pytest_collection_modifyitems(config, items) -> None:
    root = Path(__file__).resolve().parent
    for item in items:
        path = Path(str(item.fspath)).resolve()
        layer = path.relative_to(root).parts[0]
        if layer not in LAYERS:
            raise pytest.UsageError(
                f"{path.name}: tests live in tests/unit, tests/integration or tests/airflow"
            )
        item.add_marker(LAYERS[layer])
