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


# ------------------------------------------------------------------------------- workers
# `make test` runs two xdist workers with `--dist loadgroup`: a test goes to whichever worker is
# free, except tests that share something costly to make, which one worker runs together:
# the tests on the session's one real deployment (fixture `dep`, tests/airflow/conftest.py)
# and the tests of a module that makes a module- or session-scoped fixture of its own, unless
# the module says `SPREAD_OVER_WORKERS = True` (its tests are long and its fixtures cheap).
SHARED_DEPLOYMENT = "airflow-deployment"


def _worker_group(item) -> str | None:
    if "dep" in item.fixturenames:
        return SHARED_DEPLOYMENT
    if getattr(item.module, "SPREAD_OVER_WORKERS", False):
        return None
    module = item.nodeid.split("::")[0]
    info = getattr(item, "_fixtureinfo", None)
    for defs in info.name2fixturedefs.values() if info else ():
        for fixturedef in defs:
            if fixturedef.scope in ("module", "session") and fixturedef.baseid == module:
                return module
    return None


@pytest.hookimpl(tryfirst=True)  # before xdist reads the groups into the test ids
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
        group = _worker_group(item)
        if group is not None:
            item.add_marker(pytest.mark.xdist_group(group))
