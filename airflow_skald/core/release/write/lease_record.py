"""The lease object's content (`LeaseInfo`): who holds an output's lease, until when, and
whether it is stale (expired, or its process on this host is gone); and the lines that name
its holder. The rule it serves: `lease.py`."""

from __future__ import annotations

import json
import math
import socket
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

import psutil

DEFAULT_TTL_S = 300.0


@dataclass(frozen=True)
class LeaseInfo:
    """The lease object's content."""

    token: str
    nonce: str
    host: str
    pid: int | None
    pid_started: float | None
    acquired: float
    renewed: float
    expires: float
    ttl_s: float
    holder: dict | None = None  # an Airflow run's {"dag_id", "run_id"}: its state frees it

    def to_bytes(self) -> bytes:
        return json.dumps(asdict(self), sort_keys=True).encode() + b"\n"

    @classmethod
    def from_bytes(cls, data: bytes) -> LeaseInfo:
        d = json.loads(data)
        return cls(
            token=str(d["token"]),
            nonce=str(d["nonce"]),
            host=str(d.get("host", "")),
            pid=d.get("pid"),
            pid_started=d.get("pid_started"),
            acquired=float(d["acquired"]),
            renewed=float(d.get("renewed", d["acquired"])),
            expires=float(d["expires"]),
            ttl_s=float(d.get("ttl_s", DEFAULT_TTL_S)),
            holder=d.get("holder") if isinstance(d.get("holder"), dict) else None,
        )

    def stale(self, now: float | None = None, judge: Judge | None = None) -> str | None:
        """Why this lease may be taken over by another run, or None while it is live.
        `judge` adds what the caller knows of the holder (Airflow: its DAG run's state)."""
        now = time.time() if now is None else now
        if now > self.expires:
            return f"expired at {_iso(self.expires)}"
        local = self.pid is not None and self.host == socket.gethostname()
        if local and not _process_alive(self.pid, self.pid_started):
            return f"its process {self.pid} is gone"
        return judge(self) if judge is not None else None


Judge = Callable[[LeaseInfo], "str | None"]  # why a live-looking lease is stale, or None


# ------------------------------------------------------------------------ processes


def process_started(pid: int) -> float | None:
    try:
        return psutil.Process(pid).create_time()
    except psutil.Error:
        return None


def _process_alive(pid: int, started: float | None) -> bool:
    """The process runs and is the one that took the lease (same start time: no pid reuse)."""
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return started is None or abs(proc.create_time() - started) < 1.0
    except psutil.AccessDenied:
        return True
    except psutil.Error:  # NoSuchProcess
        return False


# ------------------------------------------------------------------------- messages


def _iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def held_by(info: LeaseInfo) -> str:
    where = f"{info.host}" + (f" pid {info.pid}" if info.pid is not None else "")
    return f"run {info.token} since {_iso(info.acquired)} ({where})"


def busy_message(output: str, info: LeaseInfo, path: str) -> str:
    if not math.isfinite(info.expires):
        return (
            f"output {output} is locked by an unreadable lease whose age its store cannot "
            f"tell: delete {path} if no run is writing the output"
        )
    return (
        f"output {output} is being written by {held_by(info)}; its lease expires at "
        f"{_iso(info.expires)} unless renewed: wait for that run to finish, or delete {path} "
        "if it is gone"
    )


def lost_message(output: str, mine: LeaseInfo, current: LeaseInfo | None) -> str:
    now = "nobody" if current is None else held_by(current)
    return (
        f"run {mine.token} lost its lease on output {output} (now held by {now}); "
        "nothing was published"
    )
