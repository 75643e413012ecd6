"""A real, short-lived Airflow 3.3 deployment for tests: separate processes, real REST API.

``Deployment`` starts ``airflow api-server``, ``airflow scheduler``, ``airflow dag-processor``
(and, for the CeleryExecutor, ``airflow celery worker`` processes with distinct names) in a
temporary ``AIRFLOW_HOME`` on loopback ports, triggers DAG runs through the REST API v2 with a
JWT from the simple auth manager's token endpoint, polls with a deadline, and always stops every
process it started by its process group (each process is started in its own session) and
removes what it created (the temporary home; for PostgreSQL/Redis see ``pg_database`` and
``redis_db``). ``LaunchedDeployment`` starts the same processes (and a triggerer and log server)
the way ``make airflow`` does, through ``airflow_skald/local_airflow.py``, and stops them with
a Ctrl-C.

Used as a context manager::

    with Deployment(dags_folder=..., executor="LocalExecutor") as dep:
        dep.wait_for_dag("my_dag")
        run_id = dep.trigger("my_dag", conf={"k": 5})
        assert dep.wait_for_run("my_dag", run_id) == "success"

Nothing here imports Airflow: the processes are separate programs, configured only through
``AIRFLOW__*`` environment variables built from scratch (the caller's ``AIRFLOW*`` variables
are dropped, so a pytest session's own ``AIRFLOW_HOME`` does not leak in).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import psutil

AIRFLOW_BIN = str(Path(sys.executable).with_name("airflow"))
PG_ADMIN_DSN = os.environ.get("SKALD_IT_PG_DSN", "postgresql://postgres@127.0.0.1:5432/test")
REDIS_URL = os.environ.get("SKALD_IT_REDIS_URL", "redis://127.0.0.1:6379")

# Written into the temporary home and put on the workers' PYTHONPATH: each Celery worker reports
# its own name as the task instance hostname (both run on this one machine, so the default FQDN
# would be identical and the test could not tell which worker ran what).
_HOSTNAME_MODULE = """\
import os


def hostname():
    return os.environ.get("SKALD_IT_WORKER_NAME") or __import__("socket").getfqdn()
"""

# Written into the temporary home (on PYTHONPATH): in the processes that fork a task or a DAG
# file's parse (the scheduler, whose LocalExecutor workers fork every task; a Celery worker,
# whose pool forks them; the dag-processor) it imports SKALD's task code once, so each forked
# task inherits it instead of importing it again (0.3-0.6 CPU-s a task here: a third of a
# three-task run's CPU, a quarter of its wall, measured side by side on a loaded machine). What a
# task runs is unchanged: each task still parses its DAG file, the dag-processor still reports
# an import error. Imported by a file of the home's plugins folder (Airflow imports those in
# each component before it starts work) and by the Celery configuration module below.
_PRELOAD_MODULE = """\
import importlib
import sys

if sys.argv[1:2] in (["scheduler"], ["dag-processor"]) or sys.argv[1:3] == ["celery", "worker"]:
    for name in (
        "airflow_skald.operators",
        "airflow_skald.operators.dag_params",
        "airflow_skald.operators.release_event",
        "airflow_skald.operators.lineage",
        "airflow_skald.operators.secrets",
        "airflow_skald.core.run.runner",
        "airflow_skald.core.release.report.render",
        "airflow_skald.core.data.database.connection",
    ):
        importlib.import_module(name)
"""
# a Celery worker imports no plugin before it forks its pool, only its configuration: this one
_CELERY_CONFIG_MODULE = """\
import skald_it_preload  # noqa: F401
from airflow.providers.celery.executors.default_celery import DEFAULT_CELERY_CONFIG  # noqa: F401
"""

TERMINAL_RUN_STATES = {"success", "failed"}
# one request's limit: on a loaded 2-core machine (make test beside other work) the api-server
# answers some requests after more than 30 s; a deadline of the caller's still bounds a wait
HTTP_TIMEOUT_S = 120


class DeploymentError(RuntimeError):
    """The deployment did not come up or a request failed; the message carries log tails."""


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])


class Deployment:
    """Airflow processes started as separate programs; see the module docstring."""

    HEALTHY = ("scheduler", "dag_processor")  # what /monitor/health must report healthy

    def __init__(
        self,
        *,
        dags_folder: str | Path,
        executor: str = "LocalExecutor",
        sql_alchemy_conn: str | None = None,
        broker_url: str | None = None,
        result_backend: str | None = None,
        workers: tuple[str, ...] = ("worker1", "worker2"),
        worker_concurrency: int = 2,
        parallelism: int | None = 4,
        extra_env: dict[str, str] | None = None,
        start_timeout: float = 300.0,
    ) -> None:
        self.dags_folder = Path(dags_folder)
        self.executor = executor
        self.sql_alchemy_conn = sql_alchemy_conn
        self.broker_url = broker_url
        self.result_backend = result_backend
        self.workers = workers if executor == "CeleryExecutor" else ()
        self.worker_concurrency = worker_concurrency
        self.parallelism = parallelism
        self.extra_env = dict(extra_env or {})
        self.start_timeout = start_timeout
        self.home: Path | None = None
        self.port = 0
        self.procs: dict[str, subprocess.Popen] = {}
        self._log_files: dict[str, Path] = {}
        self._token: str | None = None
        self._password = secrets.token_urlsafe(16)
        self.username = "skald"

    # ------------------------------------------------------------------ lifecycle
    def __enter__(self) -> Deployment:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def env(self, **more: str) -> dict[str, str]:
        """Environment for every Airflow process of this deployment."""
        assert self.home is not None
        env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
        env.update(
            {
                "AIRFLOW_HOME": str(self.home),
                "AIRFLOW__CORE__DAGS_FOLDER": str(self.dags_folder),
                "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                "AIRFLOW__CORE__EXECUTOR": self.executor,
                "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "True",
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS": f"{self.username}:admin",
                "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE": str(
                    self.home / "passwords.json"
                ),
                "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"{self.base_url}/execution/",
                "AIRFLOW__CORE__HOSTNAME_CALLABLE": "skald_it_hostname.hostname",
                "AIRFLOW__API__BASE_URL": self.base_url,
                "AIRFLOW__API__HOST": "127.0.0.1",
                "AIRFLOW__API__PORT": str(self.port),
                "AIRFLOW__API__SECRET_KEY": self._secret_key,
                "AIRFLOW__API_AUTH__JWT_SECRET": self._jwt_secret,
                "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": self.sql_alchemy_conn
                or f"sqlite:///{self.home / 'airflow.db'}",
                "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
                # the DAG files do not change while a test deployment runs: re-parsing each one
                # every 30 s (the default) was its largest idle cost, ~8 CPU-s a minute (new
                # files are still parsed at once; a parse reads only the environment)
                "AIRFLOW__DAG_PROCESSOR__MIN_FILE_PROCESS_INTERVAL": "600",
                "AIRFLOW__SCHEDULER__ENABLE_HEALTH_CHECK": "False",
                # a worker's call to the Execution API (default 5 s) timed out on a loaded
                # 2-core machine: the task failed before it started (httpx.ReadTimeout)
                "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT": str(HTTP_TIMEOUT_S),
                "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT": str(self._log_port),
                "PYTHONPATH": os.pathsep.join(
                    p for p in (str(self.home), os.environ.get("PYTHONPATH", "")) if p
                ),
            }
        )
        if self.parallelism is not None:
            env["AIRFLOW__CORE__PARALLELISM"] = str(self.parallelism)
        if self.executor == "CeleryExecutor":
            env["AIRFLOW__CELERY__BROKER_URL"] = self.broker_url or ""
            env["AIRFLOW__CELERY__RESULT_BACKEND"] = self.result_backend or ""
            env["AIRFLOW__CELERY__WORKER_CONCURRENCY"] = str(self.worker_concurrency)
            env["AIRFLOW__CELERY__CELERY_CONFIG_OPTIONS"] = "skald_it_celery.DEFAULT_CELERY_CONFIG"
        env.update(self.extra_env)
        env.update(more)
        return env

    def start(self) -> None:
        self.home = Path(tempfile.mkdtemp(prefix="skald-airflow-home-"))
        (self.home / "logs").mkdir()
        (self.home / "skald_it_hostname.py").write_text(_HOSTNAME_MODULE)
        (self.home / "skald_it_preload.py").write_text(_PRELOAD_MODULE)
        (self.home / "skald_it_celery.py").write_text(_CELERY_CONFIG_MODULE)
        (self.home / "plugins").mkdir()
        (self.home / "plugins" / "skald_it_preload_plugin.py").write_text(
            "import skald_it_preload  # noqa: F401\n"
        )
        (self.home / "passwords.json").write_text(json.dumps({self.username: self._password}))
        self.port = free_port()
        self._log_port = free_port()
        self._secret_key = secrets.token_urlsafe(24)
        self._jwt_secret = secrets.token_urlsafe(32)

        migrate = subprocess.run(
            [AIRFLOW_BIN, "db", "migrate"],
            env=self.env(),
            capture_output=True,
            text=True,
            timeout=300,
        )
        if migrate.returncode != 0:
            raise DeploymentError(f"airflow db migrate failed:\n{migrate.stderr[-4000:]}")
        self._start_components()
        self._wait_healthy()

    def _start_components(self) -> None:
        self._spawn(
            "api-server",
            ["api-server", "--host", "127.0.0.1", "--port", str(self.port), "--workers", "1"],
        )
        self._spawn("scheduler", ["scheduler"])
        self._spawn("dag-processor", ["dag-processor"])
        for name in self.workers:
            self._spawn(
                name,
                [
                    "celery",
                    "worker",
                    "--celery-hostname",
                    f"{name}@%h",
                    "--concurrency",
                    str(self.worker_concurrency),
                    "--without-mingle",
                    "--without-gossip",
                ],
                SKALD_IT_WORKER_NAME=name,
                AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT=str(free_port()),
            )

    def _spawn(self, name: str, args: list[str], program: str = AIRFLOW_BIN, **env: str) -> None:
        assert self.home is not None
        log = self.home / "logs" / f"{name}.out"
        self._log_files[name] = log
        with open(log, "wb") as fh:
            self.procs[name] = subprocess.Popen(
                [program, *args],
                env=self.env(**env),
                stdout=fh,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # own process group: stop() kills children too
                cwd=self.home,
            )

    def stop(self, grace: float = 20.0) -> None:
        """SIGTERM every process group we started, then SIGKILL what is left; remove the home."""
        for proc in self.procs.values():
            if proc.poll() is None:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGTERM)
        deadline = time.monotonic() + grace
        for proc in self.procs.values():
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
        for proc in self.procs.values():
            # The group may outlive its leader (forked task runners, uvicorn workers).
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=5)
        self.procs_stopped = {name: p.returncode for name, p in self.procs.items()}
        if self.home is not None and not os.environ.get("SKALD_IT_KEEP_HOME"):
            shutil.rmtree(self.home, ignore_errors=True)

    def alive_groups(self) -> list[int]:
        """Process groups we started that still have a member (should be empty after stop)."""
        alive = []
        for proc in self.procs.values():
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                continue
            except PermissionError:
                pass
            alive.append(proc.pid)
        return alive

    def logs(self, lines: int = 40) -> str:
        return "\n".join(
            f"----- {name} (rc={p.poll() if (p := self.procs.get(name)) else '-'}) -----\n"
            f"{_tail(path, lines)}"
            for name, path in self._log_files.items()
        )

    def _check_alive(self) -> None:
        dead = {n: p.returncode for n, p in self.procs.items() if p.poll() is not None}
        if dead:
            raise DeploymentError(f"processes exited early: {dead}\n{self.logs()}")

    def _wait_healthy(self) -> None:
        deadline = time.monotonic() + self.start_timeout
        last = None
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                health = self._request("GET", "/api/v2/monitor/health", auth=False)
                if all(health.get(c, {}).get("status") == "healthy" for c in self.HEALTHY):
                    self._warm_execution_api(deadline)
                    return
                last = health
            except (OSError, DeploymentError) as exc:
                last = exc
            time.sleep(1)
        raise DeploymentError(
            f"deployment not healthy after {self.start_timeout}s: {last}\n{self.logs()}"
        )

    def _warm_execution_api(self, deadline: float) -> None:
        """One request to the execution API before any task runs: the api-server builds its
        versioned routes (cadwyn) at the first such request, inside its event loop, and every
        request waits meanwhile (seconds of CPU; minutes on a loaded 2-core machine), long
        enough for a first task's calls and the tests' own requests to time out."""
        req = urllib.request.Request(self.base_url + "/execution/health")
        try:
            with urllib.request.urlopen(req, timeout=max(30.0, deadline - time.monotonic())):
                pass
        except (OSError, urllib.error.HTTPError) as exc:
            raise DeploymentError(f"execution API not answering: {exc}\n{self.logs()}") from None

    # ------------------------------------------------------------------ REST API v2
    def _request(self, method: str, path: str, body: dict | None = None, *, auth: bool = True):
        headers = {"Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if auth:
            headers["Authorization"] = f"Bearer {self.token()}"
        req = urllib.request.Request(
            self.base_url + path, data=data, method=method, headers=headers
        )
        try:
            with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT_S) as resp:
                payload = resp.read()
        except urllib.error.HTTPError as exc:
            raise DeploymentError(
                f"{method} {path} -> HTTP {exc.code}: {exc.read()[:2000]!r}"
            ) from None
        return json.loads(payload) if payload else None

    def _request_text(self, path: str) -> str:
        """GET a page of this deployment (not JSON) with the JWT; DeploymentError on HTTP errors."""
        req = urllib.request.Request(
            self.base_url + path, headers={"Authorization": f"Bearer {self.token()}"}
        )
        try:
            with urllib.request.urlopen(req, timeout=HTTP_TIMEOUT_S) as resp:
                return resp.read().decode()
        except urllib.error.HTTPError as exc:
            raise DeploymentError(f"GET {path} -> HTTP {exc.code}: {exc.read()[:2000]!r}") from None

    def token(self) -> str:
        """A JWT from the simple auth manager's token endpoint (``POST /auth/token``)."""
        if self._token is None:
            out = self._request(
                "POST",
                "/auth/token",
                {"username": self.username, "password": self._password},
                auth=False,
            )
            self._token = out["access_token"]
        return self._token

    def api(self, method: str, path: str, body: dict | None = None):
        return self._request(method, "/api/v2" + path, body)

    def wait_for_dag(self, dag_id: str, timeout: float = 90.0) -> dict:
        """Wait until the dag-processor has parsed ``dag_id``; fail on import errors."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            self._check_alive()
            try:
                return self.api("GET", f"/dags/{urllib.parse.quote(dag_id)}")
            except DeploymentError as exc:
                if "404" not in str(exc):
                    raise
            errors = self.api("GET", "/importErrors").get("import_errors", [])
            if errors:
                raise DeploymentError(f"DAG import errors: {errors}")
            time.sleep(1)
        raise DeploymentError(f"DAG {dag_id} not parsed after {timeout}s\n{self.logs()}")

    def trigger(self, dag_id: str, conf: dict | None = None, *, unpause: bool = True) -> str:
        if unpause:
            self.api("PATCH", f"/dags/{dag_id}", {"is_paused": False})
        run = self.api(
            "POST", f"/dags/{dag_id}/dagRuns", {"logical_date": None, "conf": conf or {}}
        )
        return run["dag_run_id"]

    def wait_for_run(self, dag_id: str, run_id: str, timeout: float = 150.0) -> str:
        deadline = time.monotonic() + timeout
        state = None
        while time.monotonic() < deadline:
            self._check_alive()
            state = self.run(dag_id, run_id)["state"]
            if state in TERMINAL_RUN_STATES:
                return state
            time.sleep(1)
        raise DeploymentError(
            f"run {dag_id}/{run_id} still {state} after {timeout}s; tasks: "
            f"{[(t['task_id'], t['map_index'], t['state']) for t in self.task_instances(dag_id, run_id)]}"
            f"\n{self.logs()}"
        )

    def clear(self, dag_id: str, run_id: str, task_id: str) -> None:
        """Clear one task of a run (it runs again, its try number one up)."""
        self.api(
            "POST",
            f"/dags/{dag_id}/clearTaskInstances",
            {
                "dry_run": False,
                "dag_run_id": run_id,
                "task_ids": [task_id],
                "only_failed": False,
                "reset_dag_runs": True,
            },
        )

    def run(self, dag_id: str, run_id: str) -> dict:
        return self.api("GET", f"/dags/{dag_id}/dagRuns/{urllib.parse.quote(run_id)}")

    def task_instances(self, dag_id: str, run_id: str) -> list[dict]:
        out: list[dict] = []
        offset = 0
        while True:
            page = self.api(
                "GET",
                f"/dags/{dag_id}/dagRuns/{urllib.parse.quote(run_id)}/taskInstances"
                f"?limit=100&offset={offset}",
            )
            out.extend(page["task_instances"])
            offset += len(page["task_instances"])
            if not page["task_instances"] or offset >= page["total_entries"]:
                return out

    def xcom(
        self, dag_id: str, run_id: str, task_id: str, map_index: int = -1, key: str = "return_value"
    ):
        return self.api(
            "GET",
            f"/dags/{dag_id}/dagRuns/{urllib.parse.quote(run_id)}/taskInstances/{task_id}"
            f"/xcomEntries/{key}?map_index={map_index}&deserialize=true",
        )["value"]


# ---------------------------------------------------------------------- `make airflow`'s way
def sessions_alive(sids: set[int]) -> list[psutil.Process]:
    """Every process on this machine in one of the sessions ``sids`` (zombies aside)."""
    out = []
    for proc in psutil.process_iter():
        with contextlib.suppress(psutil.Error, OSError, IndexError, ValueError):
            stat = Path(f"/proc/{proc.pid}/stat").read_text()
            fields = stat.rsplit(")", 1)[1].split()  # after "(comm)": state ppid pgrp session
            if int(fields[3]) in sids and fields[0] != "Z":
                out.append(proc)
    return out


@dataclasses.dataclass
class StopRecord:
    """How a Ctrl-C stopped the launcher: time to the last process gone, what it had started."""

    seconds: float
    launcher_code: int | None
    members: list[str]  # every process it had started, as ``pid name: command``
    survivors: list[str]  # those alive after ``stop_timeout`` (must be empty)


class LaunchedDeployment(Deployment):
    """The deployment `make airflow` runs: ``python -m airflow_skald.local_airflow`` starts the
    api-server, scheduler, dag-processor, triggerer and log server and is stopped as a terminal's
    Ctrl-C stops it (SIGINT to the launcher's process group, not to the components': they are
    in sessions of their own). ``stop()`` records whether every process it had started was gone
    within ``stop_timeout`` (``stopped``) and kills what was not."""

    HEALTHY = ("scheduler", "dag_processor", "triggerer")
    COMPONENTS = ("api-server", "scheduler", "dag-processor", "triggerer", "log-server")

    def __init__(self, *, stop_timeout: float = 45.0, **kwargs) -> None:
        kwargs.setdefault("start_timeout", 240.0)  # five processes starting on two busy cores
        super().__init__(**kwargs)
        self.stop_timeout = stop_timeout
        self.stopped: StopRecord | None = None
        self._sids: set[int] = set()

    def _start_components(self) -> None:
        assert self.home is not None
        launcher = [sys.executable, "-m", "airflow_skald.local_airflow"]
        self._spawn("launcher", [*launcher[1:], "--log-dir", str(self.home / "logs")], launcher[0])
        for name in self.COMPONENTS:
            self._log_files[name] = self.home / "logs" / f"{name}.out"

    def members(self) -> list[psutil.Process]:
        """The launcher and every process descending from it (all it started: it reaps
        orphans as a subreaper, so a worker whose parent died is still here)."""
        launcher = psutil.Process(self.procs["launcher"].pid)
        return [launcher, *launcher.children(recursive=True)]

    def stop(self, grace: float = 20.0) -> None:
        launcher = self.procs.get("launcher")
        if self.stopped is None and launcher is not None and launcher.poll() is None:
            members = self.members()
            self._sids = {launcher.pid} | {p.pid for p in launcher_children(launcher.pid)}
            described = [_describe(p) for p in members]
            t0 = time.monotonic()
            os.killpg(launcher.pid, signal.SIGINT)  # a terminal's Ctrl-C
            deadline = t0 + self.stop_timeout

            def left() -> dict[int, psutil.Process]:
                alive = {p.pid: p for p in members if _alive(p)}
                return alive | {p.pid: p for p in sessions_alive(self._sids)}

            while (launcher.poll() is None or left()) and time.monotonic() < deadline:
                time.sleep(0.5)
            survivors = left()
            self.stopped = StopRecord(
                seconds=round(time.monotonic() - t0, 1),
                launcher_code=launcher.poll(),
                members=described,
                survivors=[_describe(p) for p in survivors.values()],
            )
            for proc in survivors.values():  # never leave them behind, even when the test fails
                with contextlib.suppress(psutil.Error):
                    proc.kill()
        super().stop(grace)

    def alive_groups(self) -> list[int]:
        return [*super().alive_groups(), *(p.pid for p in sessions_alive(self._sids))]


def launcher_children(pid: int) -> list[psutil.Process]:
    with contextlib.suppress(psutil.Error):
        return psutil.Process(pid).children()
    return []


def _alive(proc: psutil.Process) -> bool:
    with contextlib.suppress(psutil.Error):
        return proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE
    return False


def _describe(proc: psutil.Process) -> str:
    with contextlib.suppress(psutil.Error):
        return f"{proc.pid} {' '.join(proc.cmdline())[:120]}"
    return str(proc.pid)


# ---------------------------------------------------------------------- PostgreSQL / Redis
@contextlib.contextmanager
def pg_database(admin_dsn: str = PG_ADMIN_DSN) -> Iterator[str]:
    """A fresh PostgreSQL database ``skald_it_<random>``; yields its SQLAlchemy URL; dropped after."""
    import psycopg2

    name = f"skald_it_{secrets.token_hex(6)}"
    conn = psycopg2.connect(admin_dsn)
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute(f'CREATE DATABASE "{name}"')
        parts = urllib.parse.urlsplit(admin_dsn)
        url = urllib.parse.urlunsplit(
            ("postgresql+psycopg2", parts.netloc, f"/{name}", parts.query, "")
        )
        yield url
    finally:
        with conn.cursor() as cur:
            cur.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.close()


@contextlib.contextmanager
def local_postgres_deployment(
    dags_folder: str | Path, artifacts: str | Path, extra_env: dict[str, str] | None = None
) -> Iterator[Deployment]:
    """LocalExecutor on a fresh PostgreSQL database (dropped after), SKALD artifacts under
    ``artifacts`` (and `extra_env`), started by `make airflow`'s launcher: the deployment the
    release, run-safety and Makefile tests share."""
    import importlib.util

    if importlib.util.find_spec("asyncpg") is None:
        raise DeploymentError(
            "asyncpg is not installed (Airflow's api-server needs it for PostgreSQL)"
        )
    with (
        pg_database() as pg_url,
        LaunchedDeployment(
            dags_folder=dags_folder,
            executor="LocalExecutor",
            sql_alchemy_conn=pg_url,
            extra_env={"AIRFLOW__SKALD__ARTIFACTS": str(artifacts), **(extra_env or {})},
        ) as dep,
    ):
        yield dep


@contextlib.contextmanager
def redis_db(base_url: str = REDIS_URL) -> Iterator[str]:
    """An empty Redis logical database (index 1..15), flushed after; yields its URL.

    Picks an index whose keyspace is empty, so a developer's own data in another index is never
    touched; FLUSHDB afterwards only touches the index we used.
    """
    import redis

    chosen = None
    for index in list(range(15, 0, -1)):
        client = redis.Redis.from_url(f"{base_url}/{index}")
        if client.dbsize() == 0:
            client.set("skald_it_claim", os.getpid(), nx=True, ex=3600)
            if client.dbsize() == 1 and client.get("skald_it_claim") == str(os.getpid()).encode():
                chosen = index
                break
        client.close()
    if chosen is None:
        raise DeploymentError("no empty Redis database index available")
    client = redis.Redis.from_url(f"{base_url}/{chosen}")
    try:
        yield f"{base_url}/{chosen}"
    finally:
        client.flushdb()
        client.close()
