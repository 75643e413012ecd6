"""Airflow test set-up: one temporary AIRFLOW_HOME and one migrated SQLite DB per pytest session.

Airflow reads its configuration when ``airflow`` is first imported, so the environment is set
here at import time of this conftest (pytest imports it before the test modules of this folder).
``dag.test()`` runs in this process against that DB; the first call costs ~15 s, later ones ~1-3 s,
so every test shares it. The deployment tests do not use it: they drive real Airflow processes
with their own homes (see ``deploy.py``): the session's one shared deployment (fixture ``dep``,
LocalExecutor on PostgreSQL; tests/conftest.py sends every test using it to one worker), and
the executor tests of ``test_deployment.py``, which start the deployment under test.
"""

from __future__ import annotations

import atexit
import json
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


def _bundle_per_dag_file(home: str) -> str:
    """One LocalDagBundle per file of dags/ (a folder holding a link to it): ``dag.test()``
    parses and stores the whole bundle of the DAG it runs at every call (the 5 DAGs of dags/:
    ~2,200 Param validations, ~1.4 CPU-s), so each call parses only the file under test."""
    bundles = []
    for path in sorted(DAGS_FOLDER.glob("*.py")):
        folder = Path(home, "bundles", path.stem)
        folder.mkdir(parents=True)
        (folder / path.name).symlink_to(path)
        local = "airflow.dag_processing.bundles.local.LocalDagBundle"
        bundles.append({"name": path.stem, "classpath": local, "kwargs": {"path": str(folder)}})
    return json.dumps(bundles)


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
            "AIRFLOW__DAG_PROCESSOR__DAG_BUNDLE_CONFIG_LIST": _bundle_per_dag_file(_home),
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
    _check_each_schema_once()
    return Path(os.environ["AIRFLOW_HOME"])


def _check_each_schema_once() -> None:
    """jsonschema checks a schema against its draft's metaschema at every validation (most of
    its cost), and Airflow validates the SKALD DAGs' 47 Params (JSON Schema draft 7) thousands
    of times per ``dag.test()`` (serializing the DAG and each task, each task's params). The
    check's verdict depends on the schema alone: the session checks each draft-7 schema once
    and keeps those that passed; one that fails is checked (and refused) every time."""
    from jsonschema.validators import Draft7Validator

    check = Draft7Validator.check_schema.__func__
    passed: set[str] = set()

    def check_once(cls, schema, *args, **kwargs) -> None:
        if args or kwargs:  # another format checker: not what Param.resolve asks
            return check(cls, schema, *args, **kwargs)
        key = json.dumps(schema, sort_keys=True, default=repr)
        if key not in passed:
            check(cls, schema)  # raises SchemaError for a bad schema: never kept
            passed.add(key)

    Draft7Validator.check_schema = classmethod(check_once)


@pytest.fixture(scope="session")
def deployment_workdir(tmp_path_factory) -> Path:
    """Files the shared deployment reads (the scheduled DAG's config and input asset, the
    OpenLineage file) and its SKALD artifacts."""
    return tmp_path_factory.mktemp("deployment")


@pytest.fixture(scope="session")
def dep(deployment_workdir):
    """One real deployment (api-server, scheduler, dag-processor; LocalExecutor; PostgreSQL in
    a database of its own, dropped after) for the tests that need one; ``skald_anonymise`` is
    unpaused. Each test checks its own runs and outputs."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from deploy import local_postgres_deployment

    workdir = deployment_workdir
    scheduled = {  # dags/skald_scheduled.py: read at parse time (files written by the tests)
        "SKALD_SCHEDULED_CONFIG": str(workdir / "daily" / "skald.yaml"),
        "SKALD_INPUT_ASSET": f"file://{workdir / 'daily' / 'incoming'}",
        # OpenLineage through the provider's file transport: one JSON event per line
        "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps(
            {"type": "file", "log_file_path": str(workdir / "openlineage.jsonl"), "append": True}
        ),
        "AIRFLOW__OPENLINEAGE__NAMESPACE": "skald-test",
    }
    with local_postgres_deployment(DAGS_FOLDER, workdir / "artifacts", scheduled) as deployment:
        deployment.wait_for_dag("skald_anonymise")
        deployment.api("PATCH", "/dags/skald_anonymise", {"is_paused": False})
        _SHARED.append(deployment)
        yield deployment
        _SHARED.clear()
    assert deployment.alive_groups() == []


_SHARED: list = []  # the shared deployment while it runs


@pytest.fixture
def pg_db():
    """A PostgreSQL database of its own (its name), dropped after the test."""
    import uuid

    import psycopg2

    name = f"skald_dag_{uuid.uuid4().hex[:10]}"
    admin = psycopg2.connect("postgresql://postgres@127.0.0.1:5432/postgres")
    admin.autocommit = True
    with admin.cursor() as cur:
        cur.execute(f'CREATE DATABASE "{name}"')
    try:
        yield name
    finally:
        with admin.cursor() as cur:
            cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.close()


def pytest_configure(config) -> None:
    config.addinivalue_line(
        "markers", "stops_shared_deployment: stops `dep` (runs after every other test on it)"
    )


def pytest_collection_modifyitems(items) -> None:
    """The shared deployment's tests run one after another, last, and the test that stops it
    as a Ctrl-C would runs last of them (one worker runs them in collection order,
    tests/conftest.py; without workers the deployment would otherwise be stopped after its
    first test, see pytest_runtest_teardown)."""
    last = [item for item in items if item.get_closest_marker("stops_shared_deployment")]
    on_dep = [item for item in items if "dep" in item.fixturenames and item not in last]
    if on_dep or last:
        shared = set(on_dep + last)
        items[:] = [item for item in items if item not in shared] + on_dep + last


def pytest_runtest_teardown(item, nextitem) -> None:
    """Stop the shared deployment after the last test that uses it (they run one after another
    on one worker, tests/conftest.py), not at the end of the session: its idle processes
    would spend CPU for the rest of the run. Its database is dropped at the end."""
    if (
        _SHARED
        and "dep" in item.fixturenames
        and (nextitem is None or "dep" not in nextitem.fixturenames)
    ):
        _SHARED[0].stop()
