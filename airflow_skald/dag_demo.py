"""`make demo`'s Airflow part: run the ``skald_anonymise`` DAG with ``airflow dags test``.

A temporary AIRFLOW_HOME with a SQLite metadata DB (``airflow db migrate``), the repository's
``dags/`` folder, local object storage for the artifacts (``{base}/artifacts``); then
``airflow dags test skald_anonymise --conf {...}`` in a subprocess, and where the release,
manifest, report and artifacts are.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _env(home: Path, artifacts: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("AIRFLOW")}
    env.update(
        {
            "AIRFLOW_HOME": str(home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(REPO / "dags"),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
            "AIRFLOW__SKALD__ARTIFACTS": str(artifacts),
        }
    )
    return env


def run_dag_demo(config: Path, output: Path, k: int, base: Path) -> int:
    airflow = str(Path(sys.executable).with_name("airflow"))
    artifacts = base / "artifacts"
    home = Path(tempfile.mkdtemp(prefix="skald-demo-airflow-"))
    env = _env(home, artifacts)
    try:
        print(f"AIRFLOW_HOME={home} (temporary, SQLite); migrating the metadata DB ...")
        subprocess.run([airflow, "db", "migrate"], env=env, check=True, capture_output=True)
        # the demo regenerates its data each time (new files): it replaces its own release
        conf = {"config": str(config), "output_path": str(output), "k": k, "overwrite": True}
        print(f"airflow dags test skald_anonymise --conf '{json.dumps(conf)}'")
        done = subprocess.run(
            [airflow, "dags", "test", "skald_anonymise", "--conf", json.dumps(conf)], env=env
        )
    finally:
        shutil.rmtree(home, ignore_errors=True)
    manifest_path = output / "manifest.json"
    if done.returncode != 0 or not manifest_path.exists():
        print("the DAG run failed (see the task logs above)", file=sys.stderr)
        return 1
    manifest = json.loads(manifest_path.read_text())
    runs = sorted((artifacts / "skald_anonymise").iterdir(), key=lambda p: p.stat().st_mtime)
    report = output / "report.html"
    print(
        f"\nchosen node {manifest['node_paper']} (levels {manifest['node']})\n"
        f"RAM root {manifest['root_node_paper']}\n"
        f"DM* = {manifest['dm_star']}, suppressed {manifest['n_suppressed']} of "
        f"{manifest['n_records']}, {manifest['n_equivalence_classes']} classes\n"
        f"release:   {output}\nmanifest:  {manifest_path}\n"
        + (f"report:    {report}\n" if report.exists() else "")
        + f"artifacts: {runs[-1]}"
    )
    return 0
