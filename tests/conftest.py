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
# `pytest -m unit` (in-memory core: phase functions over Arrow tables, oracles),
# `-m integration` (files, CLI, processes, kill -9, object storage), `-m airflow` (dag.test and
# operators in process), `-m deployment` (real Airflow processes, PostgreSQL/Redis) and
# `-m browser` (headless Chromium); `make test` runs them all.
UNIT_FILES = {"test_oracle.py", "test_sensitive.py", "test_yaml_load.py", "test_rollups.py"}
DEPLOYMENT_FILES = {"test_deployment.py", "test_releases_page.py", "test_run_safety.py"}


def pytest_collection_modifyitems(config, items) -> None:
    import inspect

    for item in items:
        path = Path(str(item.fspath))
        if "airflow" in path.parts:
            item.add_marker(pytest.mark.airflow)
            if path.name in DEPLOYMENT_FILES:
                item.add_marker(pytest.mark.deployment)
        elif "unit" in path.parts or path.name in UNIT_FILES:
            item.add_marker(pytest.mark.unit)
        else:
            item.add_marker(pytest.mark.integration)
        try:
            source = inspect.getsource(item.function)
        except (OSError, TypeError, AttributeError):
            source = ""
        if "chromium" in source.lower() or "browser" in item.name:
            item.add_marker(pytest.mark.browser)
