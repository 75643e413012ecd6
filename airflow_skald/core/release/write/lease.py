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
import json
import math
import os
import posixpath
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

import fsspec
import psutil

from airflow_skald.core.data.io import filesystem
from airflow_skald.core.data.location import DataLocation
from airflow_skald.core.errors import DataError

DEFAULT_TTL_S = 300.0
_SETTLE_S = 0.2  # read-back pause for stores without a create-if-absent write
_ATTEMPTS = 8


class OutputBusyError(DataError):
    """Another run holds the output's lease."""


class LeaseLostError(DataError):
    """This run's lease expired and was taken over by another run: it must not publish."""


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


def lease_path(output: str) -> str:
    """``.{name}.skald-lease`` beside the output (a URL for object stores)."""
    out = output.rstrip("/")
    head, tail = posixpath.split(out)
    return posixpath.join(head, f".{tail}.skald-lease") if head else f".{tail}.skald-lease"


def read_lease(output: str) -> LeaseInfo | None:
    """The output's current lease, or None. An unreadable one reads as expired at its mtime +
    the default ttl (a hand-edited or foreign file)."""
    fs, path = filesystem(lease_path(output))
    return _read(fs, path)


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
            current = _read(self._fs, self._path)
            if current is None or current.nonce != self.info.nonce:
                self.lost = _lost_message(self.output, self.info, current)
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
            _write(self._fs, self._path, info.to_bytes())
            self.info = info

    def release(self) -> None:
        """Delete the lease if it is still ours (never another run's)."""
        with self._lock:
            current = _read(self._fs, self._path)
            if current is not None and current.nonce == self.info.nonce:
                _remove(self._fs, self._path)


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
    if _is_local(fs):
        fs.makedirs(posixpath.dirname(path) or ".", exist_ok=True)
    for _ in range(_ATTEMPTS):
        now = time.time()
        info = LeaseInfo(
            token=token,
            nonce=uuid.uuid4().hex,
            host=socket.gethostname(),
            pid=pid,
            pid_started=_process_started(pid) if pid is not None else None,
            acquired=now,
            renewed=now,
            expires=now + ttl_s,
            ttl_s=float(ttl_s),
            holder=holder,
        )
        if _create_if_absent(fs, path, info):
            return Lease(output, info)
        current = _read(fs, path)
        if current is None:
            continue  # released meanwhile: try again
        own = current.token == token
        reason = "it is this run's own (a retry)" if own else current.stale(judge=judge)
        if reason is None:
            raise OutputBusyError(_busy_message(output, current, url))
        # Take over: delete it only if it is still the lease we judged, then create again
        # (if-absent), so of several runs taking over a stale lease only one wins.
        again = _read(fs, path)
        if again is not None and again.nonce == current.nonce:
            _remove(fs, path)
    current = _read(fs, path)
    if current is not None:
        raise OutputBusyError(_busy_message(output, current, url))
    raise OutputBusyError(f"output {output} is contended: could not take its lease {url}")


def check_lease_token(output: str, token: str, judge: Judge | None = None) -> None:
    """A fence for writers that must not take the lease over: Airflow's mapped tasks of one
    run write parts side by side, and a take-over (even by the same token) would change the
    nonce under the others. Raises LeaseLostError if another run holds the output's lease."""
    current = read_lease(output)
    if current is not None and current.token != token and current.stale(judge=judge) is None:
        raise LeaseLostError(
            f"run {token} does not hold the lease on output {output} (held by "
            f"{_holder(current)}); nothing was published"
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
    current = _read(fs, path)
    if current is None or current.token != token:
        return False
    _remove(fs, path)
    return True


def _heartbeat(lease: Lease, stop: threading.Event) -> None:
    while not stop.wait(lease.info.ttl_s / 4):
        try:
            lease.renew()
        except LeaseLostError:
            return  # lease.lost is set: the commit's check() stops the run
        except Exception:  # a transient storage error: try again at the next beat
            continue


# ------------------------------------------------------------------ storage primitives


def _is_local(fs: fsspec.AbstractFileSystem) -> bool:
    protocols = (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)
    return "file" in protocols or "local" in protocols


def _protocols(fs: fsspec.AbstractFileSystem) -> tuple[str, ...]:
    return (fs.protocol,) if isinstance(fs.protocol, str) else tuple(fs.protocol)


def _create_if_absent(fs: fsspec.AbstractFileSystem, path: str, info: LeaseInfo) -> bool:
    """Write `info` at `path` only if nothing is there; True if this call created it."""
    data = info.to_bytes()
    if _is_local(fs):
        tmp = f"{path}.{info.nonce}.tmp"
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        try:
            os.link(tmp, path)  # atomic, fails if the name exists; the content is complete
        except FileExistsError:
            return False
        except OSError:  # a filesystem without hard links: O_EXCL (a kill right after the
            return _create_exclusive(path, data)  # create leaves an unreadable lease)
        finally:
            os.unlink(tmp)
        return True
    if set(_protocols(fs)) & {"s3", "s3a", "memory"}:
        try:
            with fs.open(path, "xb") as fh:  # S3: PutObject with If-None-Match: *
                fh.write(data)
        except FileExistsError:
            return False
        return True
    # A store without conditional writes: check, write, pause, read back.
    if _read(fs, path) is not None:
        return False
    _write(fs, path, data)
    time.sleep(_SETTLE_S)
    back = _read(fs, path)
    return back is not None and back.nonce == info.nonce


def _create_exclusive(path: str, data: bytes) -> bool:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        return False
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)
    return True


def _read(fs: fsspec.AbstractFileSystem, path: str) -> LeaseInfo | None:
    try:
        data = fs.cat_file(path)
    except FileNotFoundError:
        return None
    try:
        return LeaseInfo.from_bytes(data)
    except (ValueError, KeyError, TypeError):
        return _unreadable(fs, path, data)


def _unreadable(fs: fsspec.AbstractFileSystem, path: str, data: bytes) -> LeaseInfo:
    """An unreadable lease (a hand-edited or foreign file) counts as held until it ages: it
    expires at its modification time + the default ttl. On a store that cannot tell that time,
    its age is unknown and it never expires (fail closed: two runs must never both write the
    output): a person deletes it."""
    try:
        mtime = fs.modified(path).timestamp()
    except Exception:  # a store without modification times (NotImplementedError)
        return LeaseInfo(
            "(unreadable lease of unknown age)",
            f"unreadable-{len(data)}-unknown-age",
            "",
            None,
            None,
            time.time(),
            time.time(),
            math.inf,
            DEFAULT_TTL_S,
        )
    return LeaseInfo(
        "(unreadable lease)",
        f"unreadable-{len(data)}-{mtime}",
        "",
        None,
        None,
        mtime,
        mtime,
        mtime + DEFAULT_TTL_S,
        DEFAULT_TTL_S,
    )


def _write(fs: fsspec.AbstractFileSystem, path: str, data: bytes) -> None:
    if _is_local(fs):  # replace atomically: a reader never sees half a lease
        tmp = f"{path}.{uuid.uuid4().hex}.tmp"
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
        return
    fs.pipe_file(path, data)


def _remove(fs: fsspec.AbstractFileSystem, path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        fs.rm_file(path)


# ------------------------------------------------------------------------ processes


def _process_started(pid: int) -> float | None:
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


def _holder(info: LeaseInfo) -> str:
    where = f"{info.host}" + (f" pid {info.pid}" if info.pid is not None else "")
    return f"run {info.token} since {_iso(info.acquired)} ({where})"


def _busy_message(output: str, info: LeaseInfo, path: str) -> str:
    if not math.isfinite(info.expires):
        return (
            f"output {output} is locked by an unreadable lease whose age its store cannot "
            f"tell: delete {path} if no run is writing the output"
        )
    return (
        f"output {output} is being written by {_holder(info)}; its lease expires at "
        f"{_iso(info.expires)} unless renewed: wait for that run to finish, or delete {path} "
        "if it is gone"
    )


def _lost_message(output: str, mine: LeaseInfo, current: LeaseInfo | None) -> str:
    now = "nobody" if current is None else _holder(current)
    return (
        f"run {mine.token} lost its lease on output {output} (now held by {now}); "
        "nothing was published"
    )
