"""`make airflow`: a real Airflow on this machine, in the foreground, stopped whole.

``python -m airflow_skald.local_airflow`` starts the api-server, scheduler, dag-processor,
triggerer and one log server, each in a session (process group) of its own, with the
``AIRFLOW__*`` environment it is given (the Makefile's), and supervises them:

- every listener is on the api-server's host ``AIRFLOW__API__HOST``: Airflow 3.3's own log
  server (``airflow.utils.serve_logs``) listens on all interfaces and has no setting for its
  host, so the scheduler and triggerer run with ``--skip-serve-logs`` and the same app is served
  here on that host, for task and trigger logs alike (one port); tasks name their host by that
  address (``hostname``, Airflow's ``hostname_callable``), where the api-server fetches a
  running task's log;
- LocalExecutor forks ``parallelism`` worker processes at start: unless
  ``AIRFLOW__CORE__PARALLELISM`` says otherwise, as many as the machine has usable cores;
- Ctrl-C, SIGTERM or SIGHUP, or any component exiting on its own, stops them all: SIGTERM to
  each component (which stops its own children: the scheduler its LocalExecutor workers, after
  the tasks they run), then, after a grace period (15 s) or at a second Ctrl-C, SIGKILL to
  every process still descending from the launcher (an Airflow process spends 1-3 CPU-s in its
  final garbage collection after it stopped working; under load that can outlast the grace). The launcher is a child subreaper, so a
  process whose parent died (LocalExecutor's workers ignore SIGINT, a task has a process group
  of its own) stays its descendant and is found, killed and reaped: none is left behind. If the
  launcher's parent (``make``) dies, the launcher gets SIGTERM and stops them the same way.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Mapping
from pathlib import Path

import psutil

HOST_ENV = "SKALD_AIRFLOW_HOST"  # the host tasks report (``hostname``)
WILDCARD_HOSTS = {"", "0.0.0.0", "::", "[::]"}
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36


def hostname() -> str:
    """Airflow's ``[core] hostname_callable`` in this deployment: the address the log server
    listens on (the machine's name when it listens on every interface)."""
    host = os.environ.get(HOST_ENV, "")
    if host in WILDCARD_HOSTS:
        return socket.getfqdn()
    return f"[{host}]" if ":" in host else host


def usable_cores() -> int:
    """CPU cores this process may run on (its affinity, not the host's count)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def component_env(base: Mapping[str, str]) -> dict[str, str]:
    """The components' environment: ``base`` with the host, ports and parallelism settled."""
    env = dict(base)
    host = env.setdefault("AIRFLOW__API__HOST", "127.0.0.1")
    env.setdefault("AIRFLOW__API__PORT", "8080")
    log_port = env.setdefault("AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT", "8793")
    env["AIRFLOW__LOGGING__TRIGGER_LOG_SERVER_PORT"] = log_port  # one log server serves both
    env.setdefault("AIRFLOW__CORE__PARALLELISM", str(usable_cores()))
    env["AIRFLOW__CORE__HOSTNAME_CALLABLE"] = "airflow_skald.local_airflow.hostname"
    env["AIRFLOW__SCHEDULER__SCHEDULER_HEALTH_CHECK_SERVER_HOST"] = host
    env[HOST_ENV] = host
    return env


def commands(env: Mapping[str, str]) -> dict[str, list[str]]:
    """Each component's command line, by name."""
    beside = Path(sys.executable).with_name("airflow")
    airflow = str(beside) if beside.exists() else shutil.which("airflow") or "airflow"
    host, port = env["AIRFLOW__API__HOST"], env["AIRFLOW__API__PORT"]
    log_app = "airflow.utils.serve_logs.log_server:get_app"
    return {
        "api-server": [airflow, "api-server", "--host", host, "--port", port],
        "scheduler": [airflow, "scheduler", "--skip-serve-logs"],
        "dag-processor": [airflow, "dag-processor"],
        "triggerer": [airflow, "triggerer", "--skip-serve-logs"],
        "log-server": [sys.executable, "-m", "uvicorn", "--factory", log_app, "--host", host]
        + ["--port", env["AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT"], "--no-access-log"],
    }


def _prctl(option: int, value: int) -> None:
    """Linux ``prctl``; a no-op elsewhere (the stop then relies on process groups alone)."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(option, value, 0, 0, 0)


def _describe(proc: psutil.Process) -> str:
    with contextlib.suppress(psutil.Error):
        return f"{proc.pid} {' '.join(' '.join(proc.cmdline()).split())[:80]}"
    return str(proc.pid)


class Supervisor:
    """The components as child processes; see the module docstring."""

    def __init__(
        self,
        cmds: Mapping[str, list[str]],
        env: Mapping[str, str],
        *,
        log_dir: Path | None = None,
        grace: float = 15.0,
    ) -> None:
        self.cmds = dict(cmds)
        self.env = dict(env)
        self.log_dir = log_dir
        self.grace = grace
        self.procs: dict[str, subprocess.Popen] = {}
        self.exit_codes: dict[int, int] = {}  # pid -> exit status, as reaped
        self.signals: list[int] = []

    def _on_signal(self, signum: int, _frame) -> None:
        self.signals.append(signum)

    def start(self) -> None:
        _prctl(_PR_SET_CHILD_SUBREAPER, 1)
        for name, cmd in self.cmds.items():
            out = None
            if self.log_dir is not None:
                out = open(self.log_dir / f"{name}.out", "ab")  # noqa: SIM115 (the child's)
            try:
                self.procs[name] = subprocess.Popen(
                    cmd,
                    env=self.env,
                    stdin=subprocess.DEVNULL,
                    stdout=out,
                    stderr=subprocess.STDOUT if out else None,
                    start_new_session=True,  # a group of its own: a terminal's Ctrl-C is ours
                )
            finally:
                if out is not None:
                    out.close()

    def reap(self) -> None:
        """Collect every child that exited (components and orphans handed to us alike)."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.exit_codes[pid] = os.waitstatus_to_exitcode(status)

    def exited(self) -> dict[str, int]:
        return {
            n: self.exit_codes[p.pid] for n, p in self.procs.items() if p.pid in self.exit_codes
        }

    def descendants(self) -> list[psutil.Process]:
        self.reap()
        try:
            return psutil.Process().children(recursive=True)
        except psutil.Error:
            return []

    def run(self) -> int:
        """Supervise until a stop signal or a component's exit; stop them all; the exit code."""
        for signum in STOP_SIGNALS:
            signal.signal(signum, self._on_signal)
        parent = os.getppid()
        _prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)  # our parent (make) died: stop as on TERM
        self.start()
        print(
            f"Airflow: {', '.join(self.procs)} started (LocalExecutor parallelism "
            f"{self.env.get('AIRFLOW__CORE__PARALLELISM')}); Ctrl-C stops them all",
            flush=True,
        )
        code = 0
        while True:
            if self.signals or os.getppid() != parent:
                reason = signal.Signals(self.signals[0]).name if self.signals else "parent gone"
                break
            self.reap()
            if gone := self.exited():
                name, status = next(iter(gone.items()))
                reason, code = f"{name} exited with code {status}", 1
                break
            time.sleep(0.5)
        self.stop(reason)
        return code

    def stop(self, reason: str) -> None:
        """SIGTERM to every component; SIGKILL to every process left after the grace period
        (or at once on a further signal), their groups included; reap everything."""
        handled = len(self.signals)
        print(f"stopping Airflow ({reason}): SIGTERM to {', '.join(self.procs)}", flush=True)
        t0 = time.monotonic()
        for proc in self.procs.values():
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(proc.pid, signal.SIGTERM)  # its own children are its business first
        while (left := self.descendants()) and time.monotonic() - t0 < self.grace:
            if len(self.signals) > handled:
                break  # a further Ctrl-C: no more waiting
            time.sleep(0.2)
        if left:
            print(
                f"still running after {time.monotonic() - t0:.0f} s, SIGKILL: "
                + "; ".join(_describe(p) for p in left),
                flush=True,
            )
        deadline = time.monotonic() + 10
        while left and time.monotonic() < deadline:
            for proc in self.procs.values():
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)
            for child in left:
                with contextlib.suppress(psutil.Error):
                    child.kill()
            time.sleep(0.1)
            left = self.descendants()
        for proc in self.procs.values():
            proc.returncode = self.exit_codes.get(proc.pid, -signal.SIGKILL)
        print(f"Airflow stopped in {time.monotonic() - t0:.1f} s", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log-dir", type=Path, help="each component's output to DIR/NAME.out")
    parser.add_argument("--grace", type=float, default=15.0, help="seconds from TERM to KILL")
    args = parser.parse_args(argv)
    env = component_env(os.environ)
    return Supervisor(commands(env), env, log_dir=args.log_dir, grace=args.grace).run()


if __name__ == "__main__":
    sys.exit(main())
