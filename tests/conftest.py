"""Shared fixtures; helpers live in skald_testdata.py (tests/airflow has a conftest too)."""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
from pathlib import Path

import pandas as pd
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from skald_testdata import ADULT_CSV  # noqa: E402


def pytest_addoption(parser) -> None:
    parser.addoption(
        "--cpu-durations",
        metavar="FILE",
        help="record each test's CPU (user + sys) in FILE and list the top ones (cpu_durations.py)",
    )


def pytest_configure(config) -> None:
    if config.getoption("cpu_durations"):
        from cpu_durations import CpuDurations

        config.pluginmanager.register(CpuDurations(config.getoption("cpu_durations")))


@pytest.fixture(autouse=True)
def skald_logger_as_configured():
    """The product's logger as a fresh process has it: a worker process also runs Airflow's
    dag.test() and in-process CLI calls, whose logging set-up (levels, disabled loggers) would
    otherwise depend on which tests ran before on the same worker."""
    logger = logging.getLogger("airflow_skald")
    logger.disabled, logger.propagate = False, True
    logger.setLevel(logging.NOTSET)
    yield


@pytest.fixture(scope="session")
def adult_df() -> pd.DataFrame:
    return pd.read_csv(ADULT_CSV, sep=";")


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
# `make test` runs three xdist workers with `--dist loadgroup`: a test goes to whichever worker is
# free, except tests that share something costly to make, which one worker runs together:
# the tests on the session's one real deployment (fixture `dep`, tests/airflow/conftest.py)
# and the tests of a module that makes a module- or session-scoped fixture of its own, unless
# the module says `SPREAD_OVER_WORKERS = True` (its tests are long and its fixtures cheap).
# (xdist 3.8's own loadgroup marks test ids in a way pytest 9 no longer reads, so the workers
# hand the groups to the controller's scheduler in a file instead.)
SHARED_DEPLOYMENT = "airflow-deployment"


def _groups_file(controller_pid: int) -> Path:
    return Path(tempfile.gettempdir()) / f"skald-xdist-groups-{controller_pid}.json"


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
    if os.environ.get("PYTEST_XDIST_WORKER"):  # the controller is this worker's parent
        groups = {item.nodeid: g for item in items if (g := _worker_group(item)) is not None}
        target = _groups_file(os.getppid())
        spare = target.with_suffix(f".{os.getpid()}")
        spare.write_text(json.dumps(groups))
        spare.replace(target)


def pytest_xdist_make_scheduler(config, log):
    """`--dist loadgroup`: tests one by one, the groups the workers found kept together."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedFixtureScheduling(LoadScopeScheduling):
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:  # written by the workers before they report collection
                path = _groups_file(os.getpid())
                self.groups = json.loads(path.read_text()) if path.exists() else {}
            return self.groups.get(nodeid, nodeid)

    return SharedFixtureScheduling(config, log)


def pytest_sessionfinish(session) -> None:
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        _groups_file(os.getpid()).unlink(missing_ok=True)
