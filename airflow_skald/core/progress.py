"""Terminal progress for long passes: chunk i/N, rows/s and ETA.

`TerminalProgress` is a pipeline progress callback `(phase, i, total, rows)`: on a TTY it
redraws one bar per phase in place; on anything else (a log file, CI) it writes one plain line
per chunk. The pipeline already logs one plain line per chunk through the `airflow_skald` logger,
so the CLI uses the bar only on a TTY (`cli_progress`) and then hides those per-chunk log lines.
No data value is ever shown: only phase names, counts and rates.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["TerminalProgress", "cli_progress", "format_eta"]

_CHUNK_LINE = "%s: chunk %d/%d"  # the pipeline's per-chunk log format (ChunkProgress)


def format_eta(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    if seconds >= 60:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds}s"


class TerminalProgress:
    """Progress callback: a bar when `stream` is a TTY, plain lines otherwise."""

    def __init__(
        self, stream: TextIO | None = None, width: int = 30, tty: bool | None = None
    ) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.tty = self.stream.isatty() if tty is None else tty
        self._phase: str | None = None
        self._start = 0.0
        self._first = 1
        self._rows = 0

    def __call__(self, phase: str, i: int, total: int, rows: int) -> None:
        """Called after chunk i of `total` (1-based) of `phase` is done, with its row count.

        The first call of a phase only starts the clock (the phase's start is not reported),
        so rates and ETAs are measured over chunks 2..i.
        """
        now = time.perf_counter()
        if phase != self._phase or i <= 1:
            self._phase, self._start, self._first, self._rows = phase, now, i, 0
            stats = f"chunk {i}/{total}  ETA --"
        else:
            self._rows += rows
            elapsed = max(now - self._start, 1e-9)
            eta = elapsed / (i - self._first) * (total - i)
            rate = self._rows / elapsed
            stats = f"chunk {i}/{total}  {rate / 1e6:.2f}M rows/s  ETA {format_eta(eta)}"
        if self.tty:
            done = int(self.width * i / max(total, 1))
            bar = "#" * done + "." * (self.width - done)
            end = "\n" if i >= total else ""
            self.stream.write(f"\r{phase:<11}[{bar}] {stats}\x1b[K{end}")
        else:
            self.stream.write(f"{phase}: {stats}\n")
        self.stream.flush()


class _HideChunkLines(logging.Filter):
    def filter(self, record: logging.LogRecord) -> bool:
        return not (isinstance(record.msg, str) and record.msg.startswith(_CHUNK_LINE))


def cli_progress(quiet: bool = False, stream: TextIO | None = None) -> TerminalProgress | None:
    """The CLI's progress display: a bar on an interactive terminal, else None.

    Not interactive: the pipeline's plain per-chunk log lines are the progress (none if quiet).
    Interactive: the bar replaces those lines (other log lines still show).
    """
    stream = stream if stream is not None else sys.stderr
    if quiet or not stream.isatty():
        return None
    hide = _HideChunkLines()
    for handler in logging.getLogger().handlers:
        handler.addFilter(hide)
    return TerminalProgress(stream, tty=True)


#: a caller's own progress callback: (phase, chunk i, chunks, rows of chunk i)
Progress = Callable[[str, int, int, int], None]

log = logging.getLogger("airflow_skald")


class ChunkProgress:
    """Logs one line per chunk: phase, i/N, rows, rows/s and ETA (no data values)."""

    def __init__(self, phase: str, total: int, extra: Progress | None = None):
        self.phase, self.total, self.extra = phase, total, extra
        self.start = time.perf_counter()
        self.rows = 0

    def __call__(self, i: int, rows: int) -> None:
        self.rows += rows
        elapsed = max(time.perf_counter() - self.start, 1e-9)
        eta = elapsed / i * (self.total - i)
        log.info(
            "%s: chunk %d/%d, %d rows, %.2fM rows/s, ETA %.0fs",
            self.phase,
            i,
            self.total,
            rows,
            self.rows / elapsed / 1e6,
            eta,
        )
        if self.extra:
            self.extra(self.phase, i, self.total, rows)
