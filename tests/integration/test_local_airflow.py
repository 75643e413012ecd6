"""`make airflow`'s launcher (airflow_skald/local_airflow.py) with small stand-in programs in
place of Airflow's components (the real ones: tests/airflow/test_makefile.py on the shared
deployment): a Ctrl-C stops every process it started, also those that ignore SIGTERM/SIGINT,
sit in process groups of their own or were orphaned, within the grace period plus a second;
a component that exits on its own stops the others; the environment it gives them."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import psutil

from airflow_skald.local_airflow import component_env, hostname, usable_cores

GRACE = 1.0
# A stubborn component: ignores TERM and INT, and forks a child that does the same in a process
# group of its own (as a task process does).
STUBBORN = (
    "import os, signal, time\n"
    "for s in (signal.SIGTERM, signal.SIGINT): signal.signal(s, signal.SIG_IGN)\n"
    "if os.fork() == 0: os.setpgid(0, 0)\n"
    "time.sleep(600)\n"
)
# A component that exits at once on TERM, leaving a child that ignores it (an orphan).
DESERTER = (
    "import os, signal, time\n"
    "if os.fork() == 0:\n"
    "    signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
    "    time.sleep(600)\n"
    "time.sleep(600)\n"
)
LAUNCH = (
    "import sys\n"
    "from airflow_skald.local_airflow import Supervisor\n"
    "cmds = {{'polite': [sys.executable, '-c', 'import time; time.sleep(600)'],\n"
    "        'stubborn': [sys.executable, '-c', {stubborn!r}],\n"
    "        'deserter': [sys.executable, '-c', {deserter!r}],\n"
    "        'quitter': [sys.executable, '-c', 'import time; time.sleep({quit_after})']}}\n"
    "sys.exit(Supervisor(cmds, dict(__import__('os').environ), grace={grace}).run())\n"
)


def launch(quit_after: float = 600) -> subprocess.Popen:
    code = LAUNCH.format(stubborn=STUBBORN, deserter=DESERTER, quit_after=quit_after, grace=GRACE)
    return subprocess.Popen(
        [sys.executable, "-c", code],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,  # as `make airflow` in a terminal: Ctrl-C reaches this group only
    )


def started(launcher: subprocess.Popen, count: int, timeout: float = 30) -> list[psutil.Process]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        procs = psutil.Process(launcher.pid).children(recursive=True)
        if len(procs) >= count:
            return procs
        time.sleep(0.05)
    raise AssertionError(f"only {len(procs)} of {count} processes started")


def alive(procs: list[psutil.Process]) -> list[psutil.Process]:
    out = []
    for proc in procs:
        try:
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                out.append(proc)
        except psutil.NoSuchProcess:
            pass
    return out


def test_ctrl_c_stops_every_process_also_stubborn_and_orphaned_ones():
    launcher = launch()
    try:
        procs = started(launcher, 6)  # 4 components, the stubborn one's and the deserter's child
        time.sleep(0.3)  # the children set their signal handlers
        t0 = time.monotonic()
        os.killpg(launcher.pid, signal.SIGINT)
        out, _ = launcher.communicate(timeout=GRACE + 10)
        elapsed = time.monotonic() - t0
    finally:
        for proc in alive(psutil.Process().children(recursive=True)):
            proc.kill()
    assert launcher.returncode == 0, out
    assert alive(procs) == []
    assert GRACE <= elapsed < GRACE + 5, (elapsed, out)
    lines = out.splitlines()
    assert lines[0].startswith("Airflow: polite, stubborn, deserter, quitter started")
    assert lines[1] == "stopping Airflow (SIGINT): SIGTERM to polite, stubborn, deserter, quitter"
    assert re.match(r"still running after \d+ s, SIGKILL: ", lines[2]), lines
    assert lines[3].startswith("Airflow stopped in ")
    assert lines[2].count(sys.executable) == 3  # the stubborn one, its child, the orphan


def test_a_component_that_exits_stops_the_others():
    launcher = launch(quit_after=1)
    try:
        procs = started(launcher, 6)
        out, _ = launcher.communicate(timeout=30)
    finally:
        for proc in alive(psutil.Process().children(recursive=True)):
            proc.kill()
    assert launcher.returncode == 1
    assert "stopping Airflow (quitter exited with code 0)" in out
    assert alive(procs) == []


def test_environment_every_listener_on_the_host_parallelism_the_cores():
    env = component_env({"AIRFLOW__API__HOST": "10.1.2.3", "AIRFLOW__API__PORT": "9090"})
    assert env["AIRFLOW__CORE__PARALLELISM"] == str(usable_cores())
    assert usable_cores() == len(os.sched_getaffinity(0))  # `nproc`, as the Makefile sizes it
    assert env["AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT"] == "8793"
    assert env["AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT"] == "8793"  # one log server for both
    assert env["AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_SERVER_HOST"] == "10.1.2.3"
    assert env["AIRFLOW__CORE__HOSTNAME_CALLABLE"] == "airflow_skald.local_airflow.hostname"
    assert component_env({"AIRFLOW__CORE__PARALLELISM": "8"})["AIRFLOW__CORE__PARALLELISM"] == "8"
    assert component_env({})["AIRFLOW__API__HOST"] == "127.0.0.1"


def test_tasks_name_their_host_by_the_log_servers_address(monkeypatch):
    monkeypatch.setenv("SKALD_AIRFLOW_HOST", "127.0.0.1")
    assert hostname() == "127.0.0.1"
    monkeypatch.setenv("SKALD_AIRFLOW_HOST", "::1")
    assert hostname() == "[::1]"
    monkeypatch.setenv("SKALD_AIRFLOW_HOST", "0.0.0.0")
    assert hostname() == __import__("socket").getfqdn()
