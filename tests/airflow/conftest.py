"""Airflow test set-up: one temporary AIRFLOW_HOME and one migrated SQLite DB per pytest session.

Airflow reads its configuration when ``airflow`` is first imported, so the environment is set
here at import time of this conftest (pytest imports it before the test modules of this folder).
``dag.test()`` runs in this process against that DB; the first call costs ~15 s, later ones ~3 s,
so every test shares it. The deployment tests (``test_deployment.py``) do not use it: they start
separate Airflow processes with their own homes (see ``deploy.py``).
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
DAGS_FOLDER = REPO / "dags"

# one home per process: xdist workers inherit the controller's environment, and two workers on
# one SQLite file would migrate it at the same time
_OWNER = os.environ.get("PYTEST_XDIST_WORKER", "main")
if os.environ.get("SKALD_TEST_AIRFLOW_HOME_OWNER") != _OWNER:
    os.environ.pop("SKALD_TEST_AIRFLOW_HOME", None)

if "airflow" in sys.modules and not os.environ.get("SKALD_TEST_AIRFLOW_HOME"):
    raise RuntimeError(
        "airflow was imported before tests/airflow/conftest.py could point AIRFLOW_HOME at a "
        "temporary folder; do not import airflow at module level outside tests/airflow"
    )

if not os.environ.get("SKALD_TEST_AIRFLOW_HOME"):
    _home = tempfile.mkdtemp(prefix="skald-pytest-airflow-")
    atexit.register(shutil.rmtree, _home, ignore_errors=True)
    for _key in [k for k in os.environ if k.startswith("AIRFLOW__")]:
        del os.environ[_key]
    os.environ.update(
        {
            "SKALD_TEST_AIRFLOW_HOME": _home,
            "SKALD_TEST_AIRFLOW_HOME_OWNER": _OWNER,
            "AIRFLOW_HOME": _home,
            "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS_FOLDER),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{_home}/airflow.db",
            "AIRFLOW__LOGGING__BASE_LOG_FOLDER": f"{_home}/logs",
        }
    )


@pytest.fixture(scope="session")
def airflow_home() -> Path:
    """The session's AIRFLOW_HOME with a migrated metadata DB (for ``dag.test()``)."""
    from airflow.utils import db

    db.initdb()
    return Path(os.environ["AIRFLOW_HOME"])
