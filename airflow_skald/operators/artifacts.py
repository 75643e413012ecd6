"""Per-run artifact store: ``{artifacts}/{dag_id}/{run_id}/`` on any ObjectStoragePath.

Every write goes to a hidden temporary name beside the target and is then renamed, so a task
killed mid-write leaves at most a ``.*.tmp`` file that no reader looks at; content is
deterministic (sorted JSON, the core's byte formats), so a retried task rewrites identical bytes.
Run folders are never deleted here: old runs stay as an audit trail.

The default root is ``[skald] artifacts`` (env ``AIRFLOW__SKALD__ARTIFACTS``), else the local
folder ``$AIRFLOW_HOME/skald/artifacts``. Use ``s3://<conn_id>@bucket/prefix`` for object storage.
"""

from __future__ import annotations

import json
import os
from typing import Any

# The names inside a run folder are the runner's (core/run/runner.py: chunks.json, plan.json, ...)
# and the release records copied after the commit (manifest.json, run.json, report.html).


def safe_segment(text: str) -> str:
    """A run_id as one path segment (``manual__2026-01-01T00:00:00+00:00`` -> no ``:`` or ``+``)."""
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in text)


def default_root() -> str:
    try:
        from airflow.sdk.configuration import conf

        root = conf.get("skald", "artifacts", fallback="")
    except Exception:  # pragma: no cover - configuration not loadable
        root = os.environ.get("AIRFLOW__SKALD__ARTIFACTS", "")
    if root:
        return root
    home = os.environ.get("AIRFLOW_HOME") or os.path.expanduser("~/airflow")
    return os.path.join(home, "skald", "artifacts")


class RunArtifacts:
    """The artifact folder of one DAG run."""

    def __init__(self, root: str | None, dag_id: str, run_id: str):
        from airflow.sdk import ObjectStoragePath

        self.root = ObjectStoragePath(root or default_root())
        self.dag_id = dag_id
        self.run_id = run_id
        self.path = self.root / safe_segment(dag_id) / safe_segment(run_id)

    @classmethod
    def from_context(cls, root: str | None, context: Any) -> RunArtifacts:
        return cls(root, context["dag"].dag_id, context["run_id"])

    def uri(self, name: str = "") -> str:
        return str(self.path / name) if name else str(self.path)

    def write_bytes(self, name: str, data: bytes) -> str:
        target = self.path / name
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.parent / f".{target.name}.tmp"
        tmp.write_bytes(data)
        tmp.rename(target)
        return str(target)

    def write_json(self, name: str, body: Any) -> str:
        return self.write_bytes(name, json.dumps(body, sort_keys=True, indent=1).encode() + b"\n")

    def read_bytes(self, name: str) -> bytes:
        target = self.path / name
        if not target.exists():
            from airflow_skald.core.errors import DataError

            # not retried: waiting does not bring a moved or cleaned artifact store back
            raise DataError(
                f"artifact {name} of run {self.run_id} is not in {self.path}: the run's "
                "artifacts were removed or the [skald] artifacts setting changed since its "
                "first task; clear the whole run (from its first task) to redo it"
            )
        return target.read_bytes()

    def read_json(self, name: str) -> Any:
        return json.loads(self.read_bytes(name))

    def exists(self, name: str) -> bool:
        return (self.path / name).exists()
