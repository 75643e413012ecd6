"""The paper's synthetic dataset for the benchmarks, generated once per size."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def generate(rows: int, chunk_rows: int, out: Path) -> None:
    """Generate in a child process, so this process stays small: Linux children inherit the
    parent's peak RSS (ru_maxrss survives fork+exec), which would inflate every measurement."""
    if not (out / "skald.yaml").exists():
        cmd = [
            sys.executable,
            "-m",
            "airflow_skald.cli",
            "generate",
            "--rows",
            str(rows),
            "--chunk-rows",
            str(chunk_rows),
            "--seed",
            "1",
            "--out",
            str(out),
            "--overwrite",  # no skald.yaml: what is there is an interrupted generation
        ]
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
