"""`make airflow` (issue 18 item 9): loopback by default, ports configurable (dry run only)."""

from __future__ import annotations

import subprocess
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
