"""One writer per output: a lease beside the output that works on local disk and object storage.

The lease is a small JSON object ``.{name}.skald-lease`` beside the output folder (like the
staging folders; never inside the release): ``{"token", "nonce", "host", "pid", "pid_started",
"acquired", "renewed", "expires", "ttl_s"}``. Rule:

- **Created only if absent**, atomically with its content: on local disk a private file linked
  into place with ``os.link`` (fails if the name exists, like ``O_EXCL``); on S3 a PUT with
  ``If-None-Match: *`` (AWS S3, MinIO, moto: HTTP 412 if the key exists); on the in-memory
  filesystem its exclusive mode. Other fsspec stores fall back to check-then-write, then read
  back after a pause and keep the lease only if it still holds this attempt's nonce (safe
  against one slow rival, not a guarantee; use a store with conditional writes).
- **Taken over** (deleted, then created-if-absent again, so only one of several takers wins)
  when it is (a) held by the same run token: a retry of the run that took it, (b) expired:
  its holder has not renewed it for ``ttl_s`` seconds (a heartbeat thread renews it every
  ``ttl_s/4`` while the ``output_lease`` block runs), or (c) held by a process on this host
  that is gone (its pid is not running, or runs another program: the start time differs).
  Otherwise the run stops at once with one line: ``output O is being written by run R since T
  (...)``, leaving the holder's staging folder and the release as they are.
- **Fenced**: ``Lease.check()`` (called by the commit) re-reads the lease and fails if it no
  longer holds this lease's nonce (it expired and another run took it over), so a run that
  lost its lease never publishes.
- **Released** at the end of the ``output_lease`` block (deleted only if it still holds our
  nonce): always (a CLI run), on success only, or never (see Airflow below). A killed run's
  lease is taken over by (b) or (c); a person may also delete the object by hand.

Airflow: a run spans several task processes, so its lease is taken with ``pid=None`` (no
liveness rule, only expiry; choose ``ttl_s`` longer than the longest gap between the run's
tasks) and the run's token ``{dag_id}-{run_id}``: the first task takes it and keeps it
(``release="never"``), the committing task takes it over with the same token and releases it
on success (``release="on_success"``: a failed commit keeps it for the run's own retry).
Mapped tasks writing parts side by side only check it (``check_lease_token``): a take-over,
even by the same token, would change the nonce under the others.

Limits: expiry compares wall clocks, so hosts sharing an output must agree on the time to well
within ``ttl_s``; between a take-over's delete and its create another run may win, and the
loser finds out at its next ``check()`` (before the commit), never after publishing.
"""

from __future__ import annotations

import contextlib
import os
import posixpath
import socket
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import asdict

from airflow_skald.core.data.io import filesystem
from airflow_skald.core.data.location import DataLocation
from airflow_skald.core.errors import DataError
from airflow_skald.core.release.write.lease_record import (
    DEFAULT_TTL_S,
    Judge,
    LeaseInfo,
    busy_message,
    held_by,
    lost_message,
    process_started,
)
from airflow_skald.core.release.write.lease_store import (
    create_if_absent,
    read_object,
    remove_object,
    write_object,
)
from airflow_skald.core.release.write.stores import is_local

_ATTEMPTS = 8


class OutputBusyError(DataError):
    """Another run holds the output's lease."""


class LeaseLostError(DataError):
    """This run's lease expired and was taken over by another run: it must not publish."""


def lease_path(output: str) -> str:
    """``.{name}.skald-lease`` beside the output (a URL for object stores)."""
    out = output.rstrip("/")
    head, tail = posixpath.split(out)
    return posixpath.join(head, f".{tail}.skald-lease") if head else f".{tail}.skald-lease"


def read_lease(output: str) -> LeaseInfo | None:
    """The output's current lease, or None. An unreadable one reads as expired at its mtime +
    the default ttl (a hand-edited or foreign file)."""
    fs, path = filesystem(lease_path(output))
    return read_object(fs, path)


class Lease:
    """A held lease; ``renew``/``check``/``release``. Use through ``output_lease``."""

    def __init__(self, output: str, info: LeaseInfo) -> None:
        self.output = output
        self.info = info
        self._fs, self._path = filesystem(lease_path(output))
        self._lock = threading.Lock()
        self.lost: str | None = None

    @property
    def token(self) -> str:
        return self.info.token

    def check(self) -> None:
        """Fail (LeaseLostError) unless the lease object still holds this lease's nonce."""
        with self._lock:
            current = read_object(self._fs, self._path)
            if current is None or current.nonce != self.info.nonce:
                self.lost = lost_message(self.output, self.info, current)
            if self.lost:
                raise LeaseLostError(self.lost)

    def renew(self) -> None:
        """Push the expiry ``ttl_s`` ahead (the heartbeat); fails if the lease was lost."""
        self.check()
        with self._lock:
            now = time.time()
            info = LeaseInfo(
                **{**asdict(self.info), "renewed": now, "expires": now + self.info.ttl_s}
            )
            write_object(self._fs, self._path, info.to_bytes())
            self.info = info

    def release(self) -> None:
        """Delete the lease if it is still ours (never another run's)."""
        with self._lock:
            current = read_object(self._fs, self._path)
            if current is not None and current.nonce == self.info.nonce:
                remove_object(self._fs, self._path)


def acquire_lease(
    output: str,
    token: str,
    ttl_s: float = DEFAULT_TTL_S,
    pid: int | None | str = "self",
    holder: dict | None = None,
    judge: Judge | None = None,
) -> Lease:
    """Take the output's lease for run `token` (see the module's rule) or raise OutputBusyError.

    `pid`: the process whose death frees the lease at once ("self": this process); None for a
    lease that outlives its process (an Airflow run over several tasks). `holder`: the
    Airflow run that holds it; `judge`: how the caller tells that a holder is gone (Airflow:
    its DAG run is no longer running).
    """
    pid = os.getpid() if pid == "self" else pid
    url = lease_path(output)
    fs, path = filesystem(url)
    if is_local(fs):
        fs.makedirs(posixpath.dirname(path) or ".", exist_ok=True)
    for _ in range(_ATTEMPTS):
        now = time.time()
        info = LeaseInfo(
            token=token,
            nonce=uuid.uuid4().hex,
            host=socket.gethostname(),
            pid=pid,
            pid_started=process_started(pid) if pid is not None else None,
            acquired=now,
            renewed=now,
            expires=now + ttl_s,
            ttl_s=float(ttl_s),
            holder=holder,
        )
        if create_if_absent(fs, path, info):
            return Lease(output, info)
        current = read_object(fs, path)
        if current is None:
            continue  # released meanwhile: try again
        own = current.token == token
        reason = "it is this run's own (a retry)" if own else current.stale(judge=judge)
        if reason is None:
            raise OutputBusyError(busy_message(output, current, url))
        # Take over: delete it only if it is still the lease we judged, then create again
        # (if-absent), so of several runs taking over a stale lease only one wins.
        again = read_object(fs, path)
        if again is not None and again.nonce == current.nonce:
            remove_object(fs, path)
    current = read_object(fs, path)
    if current is not None:
        raise OutputBusyError(busy_message(output, current, url))
    raise OutputBusyError(f"output {output} is contended: could not take its lease {url}")


def check_lease_token(output: str, token: str, judge: Judge | None = None) -> None:
    """A fence for writers that must not take the lease over: Airflow's mapped tasks of one
    run write parts side by side, and a take-over (even by the same token) would change the
    nonce under the others. Raises LeaseLostError if another run holds the output's lease."""
    current = read_lease(output)
    if current is not None and current.token != token and current.stale(judge=judge) is None:
        raise LeaseLostError(
            f"run {token} does not hold the lease on output {output} (held by "
            f"{held_by(current)}); nothing was published"
        )


@contextlib.contextmanager
def output_lease(
    output: str | DataLocation,
    token: str,
    ttl_s: float = DEFAULT_TTL_S,
    pid: int | None | str = "self",
    heartbeat: bool = True,
    release: str = "always",
    holder: dict | None = None,
    judge: Judge | None = None,
) -> Iterator[Lease]:
    """Hold the output's lease for the block: renewed every ``ttl_s/4`` by a daemon thread.
    `output` is a path, URL or a DataLocation. At the end of the block it is released:
    ``"always"`` (a CLI run), ``"on_success"`` (kept for a retry when the block fails: the
    Airflow task that commits), or ``"never"`` (an Airflow task before the commit: the run's
    later tasks take it over with the same token)."""
    if release not in ("always", "on_success", "never"):
        raise ValueError(f"release must be always, on_success or never, not {release!r}")
    output = getattr(output, "path", output)
    lease = acquire_lease(output, token, ttl_s, pid, holder, judge)
    stop = threading.Event()
    beat = None
    if heartbeat:
        beat = threading.Thread(
            target=_heartbeat, args=(lease, stop), name="skald-lease", daemon=True
        )
        beat.start()
    ok = False
    try:
        yield lease
        ok = True
    finally:
        stop.set()
        if beat is not None:
            beat.join(timeout=30)
        if release == "always" or (release == "on_success" and ok):
            lease.release()


def release_run_lease(output: str, token: str) -> bool:
    """Delete the output's lease if run `token` holds it (whatever the attempt): a run that
    failed for good frees its output at once. True if a lease was deleted."""
    fs, path = filesystem(lease_path(output))
    current = read_object(fs, path)
    if current is None or current.token != token:
        return False
    remove_object(fs, path)
    return True


def _heartbeat(lease: Lease, stop: threading.Event) -> None:
    while not stop.wait(lease.info.ttl_s / 4):
        try:
            lease.renew()
        except LeaseLostError:
            return  # lease.lost is set: the commit's check() stops the run
        except Exception:  # a transient storage error: try again at the next beat
            continue
