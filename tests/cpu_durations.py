"""CPU per test (user + sys seconds), which a loaded machine does not inflate as it does wall time.

Off by default; ``pytest --cpu-durations FILE tests/...`` turns it on (tests/conftest.py). Each
test's set-up, call and tear-down are measured together (a module's or the session's fixture is
paid by the test that makes it or tears it down), in two ways:

``tree``
    this process (``RUSAGE_SELF``), its reaped children (``RUSAGE_CHILDREN``, which holds what
    they reaped in turn) and every live descendant (its own and its reaped children's times from
    ``/proc``): the real Airflow processes a test starts are counted while they run and once
    reaped. A process whose parent dies before reaping it is handed to init and its CPU is lost
    to this count (e.g. a task process left behind when a scheduler is killed).
``cgroup``
    the CPU of the whole control group this process runs in (cgroup v1 ``cpuacct.usage`` or v2
    ``cpu.stat``), which loses nothing a test started; recorded only when the group is not the
    machine's root and one worker (or none) runs, since the group holds every worker. Start
    pytest in a group of its own for it, e.g. (root, cgroup v1)::

        mkdir /sys/fs/cgroup/cpuacct/skald-tests && echo $$ > /sys/fs/cgroup/cpuacct/skald-tests/cgroup.procs

Neither counts the PostgreSQL server's own processes (they are the server's children).
Each worker appends one JSON line per test to FILE; the process that prints the session's
summary (the xdist controller, or the only process) lists the top tests, modules and layers.
"""

from __future__ import annotations

import json
import os
import resource
import time
from collections import defaultdict
from pathlib import Path

import psutil
import pytest

_TOP = 25


def _tree_cpu() -> float:
    """CPU seconds of this process, its reaped children and its live descendants."""
    total = 0.0
    for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN):
        usage = resource.getrusage(who)
        total += usage.ru_utime + usage.ru_stime
    for proc in psutil.Process().children(recursive=True):
        try:
            t = proc.cpu_times()
        except psutil.Error:  # gone meanwhile: its parent reaped it (counted there) or init did
            continue
        total += t.user + t.system + t.children_user + t.children_system
    return total


def _cgroup_usage_file() -> Path | None:
    """This process's own cgroup's CPU counter, None in the root group or without one."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if path == "/":
            continue
        if "cpuacct" in controllers.split(","):
            for mount in ("cpuacct", "cpu,cpuacct", "cpuacct,cpu"):
                f = Path("/sys/fs/cgroup", mount, path.lstrip("/"), "cpuacct.usage")
                if f.exists():
                    return f
        if controllers == "":
            f = Path("/sys/fs/cgroup", path.lstrip("/"), "cpu.stat")
            if f.exists():
                return f
    return None


def _cgroup_cpu(f: Path) -> float:
    text = f.read_text()
    if f.name == "cpuacct.usage":
        return int(text) / 1e9
    usage = dict(line.split() for line in text.splitlines())
    return int(usage["usage_usec"]) / 1e6


def _layer(nodeid: str) -> str:
    parts = nodeid.split("/")
    return parts[1] if len(parts) > 2 and parts[0] == "tests" else parts[0]


class CpuDurations:
    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.worker = os.environ.get("PYTEST_XDIST_WORKER")
        self.cgroup = _cgroup_usage_file()
        if int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1")) > 1:
            self.cgroup = None  # the group holds every worker
        if not self.worker and self.path.exists():
            self.path.unlink()  # a fresh file per session (the workers append to it)

    def _now(self) -> tuple[float, float | None]:
        return _tree_cpu(), _cgroup_cpu(self.cgroup) if self.cgroup else None

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        wall, (tree, cg) = time.monotonic(), self._now()
        yield
        tree2, cg2 = self._now()
        record = {
            "nodeid": item.nodeid,
            "tree": round(tree2 - tree, 3),
            "cgroup": None if cg is None else round(cg2 - cg, 3),
            "wall": round(time.monotonic() - wall, 3),
            "worker": self.worker,
        }
        with self.path.open("a") as f:
            f.write(json.dumps(record) + "\n")

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.worker or not self.path.exists():
            return
        records = [json.loads(line) for line in self.path.read_text().splitlines()]
        if not records:
            return

        def cpu(r: dict) -> float:
            return r["cgroup"] if r["cgroup"] is not None else r["tree"]

        write = terminalreporter.write_line
        source = "cgroup" if all(r["cgroup"] is not None for r in records) else "tree"
        terminalreporter.section(f"CPU per test (user + sys, {source}; {self.path})")
        by_module: dict[str, float] = defaultdict(float)
        by_layer: dict[str, float] = defaultdict(float)
        for r in records:
            by_module[r["nodeid"].split("::")[0]] += cpu(r)
            by_layer[_layer(r["nodeid"])] += cpu(r)
        for r in sorted(records, key=cpu, reverse=True)[:_TOP]:
            write(f"{cpu(r):8.1f} s  (wall {r['wall']:7.1f})  {r['nodeid']}")
        write("modules:")
        for module, s in sorted(by_module.items(), key=lambda kv: -kv[1])[:_TOP]:
            write(f"{s:8.1f} s  {module}")
        for layer, s in sorted(by_layer.items()):
            write(f"{s:8.1f} s  layer {layer}")
        total = sum(cpu(r) for r in records)
        tree = sum(r["tree"] for r in records)
        write(f"{total:8.1f} s  all {len(records)} tests ({total / 60:.1f} CPU-minutes)")
        if source == "cgroup":
            write(f"{tree:8.1f} s  of it seen by the process tree (the rest: orphaned processes)")
