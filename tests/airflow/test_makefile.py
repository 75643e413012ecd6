"""The Makefile's set-up: `make test` brings Chromium or says what to install (issue 35);
`make airflow` (issue 18 item 9): loopback by default, ports configurable (dry run)."""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def dry_run(*args: str) -> str:
    done = subprocess.run(
        ["make", "-n", "-s", "airflow", *args], cwd=REPO, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_api_server_on_loopback_and_ports_configurable():
    text = dry_run()
    assert "api-server --host 127.0.0.1 --port 8080" in text
    assert "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT=8793" in text
    text = dry_run("AIRFLOW_PORT=8091", "AIRFLOW_LOG_PORT=8794", "AIRFLOW_HOST=0.0.0.0")
    assert "api-server --host 0.0.0.0 --port 8091" in text
    assert "AIRFLOW__LOGGING__WORKER_LOG_SERVER_PORT=8794" in text
    assert "AIRFLOW__API__BASE_URL=http://localhost:8091" in text


def test_make_test_names_what_to_install_when_chromium_is_missing(tmp_path):
    """A user who is not root, with no Chromium on PATH: one line saying what to install, and
    `make test` stops before running anything (a root user gets Debian's package instead)."""
    with tempfile.TemporaryDirectory() as bin_dir:  # readable by that user, unlike tmp_path
        os.chmod(bin_dir, 0o755)
        for tool in ("id", "cat", "md5sum", "cut"):  # what the Makefile runs, but no chromium
            Path(bin_dir, tool).symlink_to(f"/usr/bin/{tool}")
        done = subprocess.run(
            [
                "/usr/bin/setpriv",
                "--reuid=65534",
                "--regid=65534",
                "--clear-groups",
                "/usr/bin/make",
            ]
            + ["-s", "--no-print-directory", "chromium"],
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
