"""The Makefile's set-up: `make test` brings Chromium or says what to install (issue 35);
`make airflow` (issues 18 and 30): its settings (dry run), and on the shared real deployment,
which `make airflow`'s launcher starts (tests/airflow/deploy.py, LaunchedDeployment): one
process per component plus LocalExecutor's workers, as many as configured (`make airflow`:
the machine's cores), a triggerer (the health badge green), every listener on the host, and a
Ctrl-C that leaves no process behind."""

from __future__ import annotations

import os
import re
import subprocess
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

import psutil
import pytest

REPO = Path(__file__).resolve().parents[2]
STOP_SECONDS = 45  # from Ctrl-C to the last process gone (the launcher's grace period is 15 s)


def dry_run(*args: str) -> str:
    done = subprocess.run(
        ["make", "-n", "-s", "airflow", *args], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_loopback_by_default_ports_and_parallelism_configurable():
    text = dry_run()
    assert "AIRFLOW__API__HOST=127.0.0.1 " in text and "AIRFLOW__API__PORT=8080 " in text
    assert "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT=8793 " in text
    assert f"AIRFLOW__CORE__PARALLELISM={len(os.sched_getaffinity(0))} " in text  # nproc
    assert text.rstrip().endswith("exec .venv/bin/python -m airflow_skald.local_airflow")
    text = dry_run(
        "AIRFLOW_PORT=8091",
        "AIRFLOW_LOG_PORT=8794",
        "AIRFLOW_HOST=0.0.0.0",
        "AIRFLOW_PARALLELISM=6",
    )
    assert "AIRFLOW__API__HOST=0.0.0.0 " in text and "AIRFLOW__API__PORT=8091 " in text
    assert "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT=8794 " in text
    assert "AIRFLOW__API__BASE_URL=http://localhost:8091 " in text
    assert "AIRFLOW__CORE__PARALLELISM=6 " in text


def test_airflow_cli_runs_airflow_with_the_deployments_settings():
    done = subprocess.run(
        ["make", "-n", "-s", "airflow-cli", "ARGS=backfill create --dag-id skald_daily"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    recipe = done.stdout[done.stdout.rindex("export AIRFLOW_HOME=") :]  # (after a venv rebuild)
    settings, command = recipe.strip().split("; exec ")
    assert settings.startswith("export AIRFLOW_HOME=")
    assert settings_of(settings) == settings_of(dry_run().split("db migrate")[0])
    assert command == ".venv/bin/airflow backfill create --dag-id skald_daily"


def settings_of(text: str) -> dict[str, str]:
    return dict(re.findall(r"\b(AIRFLOW\w*)=(\S+)", text))


def test_make_test_names_what_to_install_when_chromium_is_missing():
    """A user who is not root, with no Chromium on PATH: one line saying what to install, and
    `make test` stops before running anything (a root user gets Debian's package instead)."""
    with tempfile.TemporaryDirectory() as bin_dir:  # readable by that user, unlike tmp_path
        os.chmod(bin_dir, 0o755)
        for tool in ("id", "cat", "md5sum", "cut"):  # what the Makefile runs, but no chromium
            Path(bin_dir, tool).symlink_to(f"/usr/bin/{tool}")
        # as root (CI): become nobody; any other user already is not root
        nobody = ["/usr/bin/setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
        done = subprocess.run(
            [*(nobody if os.geteuid() == 0 else []), "/usr/bin/make", "-s"]
            + ["--no-print-directory", "chromium"],
            cwd=REPO,
            env={"PATH": bin_dir, "HOME": bin_dir},
            capture_output=True,
            text=True,
            timeout=60,
        )
    assert done.returncode == 2
    assert done.stdout == ""
    said = [line for line in done.stderr.splitlines() if not line.startswith("make: ***")]
    assert said == [
        "make test needs Chromium for its browser tests: install it (Debian/Ubuntu: "
        "sudo apt-get install chromium) and rerun"
    ]


# ------------------------------------------------------------- the shared real deployment
def by_component(dep) -> dict[str, list[psutil.Process]]:
    """The processes `make airflow`'s launcher started, by what they are."""
    out: dict[str, list[psutil.Process]] = {}
    for proc in dep.members()[1:]:
        try:
            cmd = " ".join(proc.cmdline()).replace("api_server", "api-server")  # its title
        except (psutil.NoSuchProcess, psutil.ZombieProcess):  # a task or parse that just ended
            continue
        if cmd.startswith("airflow worker -- LocalExecutor"):
            name = "local-worker"
        elif "serve_logs.log_server" in cmd:
            name = "log-server"
        else:
            name = next((c for c in dep.COMPONENTS if f"airflow {c}" in cmd), cmd)
        out.setdefault(name, []).append(proc)
    return out


@pytest.mark.deployment
def test_components_listeners_and_parallelism_of_make_airflow(dep):
    procs = by_component(dep)
    launched = {
        name for name, ps in procs.items() if any(p.ppid() == dep.members()[0].pid for p in ps)
    }
    assert launched == set(dep.COMPONENTS), procs
    # LocalExecutor forks `parallelism` workers at start: as many as configured, not 32 (the
    # tests keep 4; `make airflow` gives the machine's cores: test_local_airflow.py, dry run)
    assert len(procs["local-worker"]) == dep.parallelism == 4
    assert all(p.ppid() in {s.pid for s in procs["scheduler"]} for p in procs["local-worker"])

    listening = {
        (c.laddr.ip, c.laddr.port, proc.pid)
        for ps in procs.values()
        for proc in ps
        for c in proc.net_connections(kind="inet")
        if c.status == psutil.CONN_LISTEN
    }
    assert {ip for ip, _, _ in listening} == {"127.0.0.1"}, listening
    assert {port for _, port, _ in listening} == {dep.port, dep._log_port}
    log_server = {p.pid for p in procs["log-server"]}
    assert {pid for _, port, pid in listening if port == dep._log_port} <= log_server
    # the log server is Airflow's (it refuses a request without the api-server's JWT)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"http://127.0.0.1:{dep._log_port}/log/x.log", timeout=10)
    assert refused.value.code == 403

    health = dep._request("GET", "/api/v2/monitor/health", auth=False)
    assert {c: v["status"] for c, v in health.items()} == dict.fromkeys(
        ("metadatabase", "scheduler", "triggerer", "dag_processor"), "healthy"
    )


@pytest.mark.deployment
@pytest.mark.stops_shared_deployment  # runs after every other test on it (conftest.py)
def test_ctrl_c_stops_every_process_make_airflow_started(dep):
    """SIGINT to the launcher, as a terminal's Ctrl-C (the components are in sessions of their
    own and get nothing from the terminal): every process it started, LocalExecutor's workers
    (which ignore SIGINT) and anything they forked included, is gone within STOP_SECONDS."""
    assert len(by_component(dep)["local-worker"]) >= 1
    dep.stop_timeout = STOP_SECONDS
    dep.stop()
    record = dep.stopped
    assert record is not None and len(record.members) >= len(dep.COMPONENTS) + 2
    assert record.survivors == [], record
    assert record.launcher_code == 0 and record.seconds < STOP_SECONDS, record
