"""A DP run's secret in Airflow (docs/design.md §4e): the config's ``dp_key`` is the one secret reference
(``core/settings/secret.py``, as ``pseudonym_key``); ``{connection: ID}`` / ``{variable: NAME}``
(or the operators' dp_key_conn_id / dp_key_variable) are read by the operators through the
secrets backends and handed to the run in memory.

In the shared real deployment (tests/airflow/deploy.py): one run of ``skald_anonymise`` whose
secret is an Airflow variable made through the REST API releases classes of at least k
records, and the secret is in no log, XCom, artifact, released file (manifest, report, run
record...) nor lineage event."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(TESTS))

SECRET = "dp-deployment-secret-5c1e9a7f-never-shown"
VARIABLE = "skald_test_dp_key"


def test_operators_read_the_secret_from_a_connection_or_variable(monkeypatch, tmp_path) -> None:
    from helpers_dp import dp_config_dict

    from airflow_skald.core.config.run_config import config_from_dict
    from airflow_skald.operators.secrets import provide_secrets

    monkeypatch.setenv(
        "AIRFLOW_CONN_SKALD_DP", '{"conn_type": "generic", "password": "c-key-0123456789abcdef"}'
    )
    monkeypatch.setenv("AIRFLOW_VAR_SKALD_DP_VAR", "v-key-0123456789abcdef")
    raw = dp_config_dict(tmp_path / "in", tmp_path / "out")
    raw.pop("dp_key")  # the operators' own arguments name it
    raw["quality"] = {"objective": "dm"}
    by_conn = provide_secrets(config_from_dict(raw), dp_key_conn_id="skald_dp")
    assert by_conn.dp_key.secret() == b"c-key-0123456789abcdef"
    by_var = provide_secrets(config_from_dict(raw), dp_key_variable="SKALD_DP_VAR")
    assert by_var.dp_key.secret() == b"v-key-0123456789abcdef"
    named = provide_secrets(config_from_dict({**raw, "dp_key": {"variable": "SKALD_DP_VAR"}}))
    assert named.dp_key.secret() == b"v-key-0123456789abcdef"
    assert "v-key" not in repr(named.dp_key) and "c-key" not in repr(by_conn)
    assert provide_secrets(config_from_dict(raw)).dp_key is None  # the run refuses it


def test_a_secret_pasted_as_a_connection_or_variable_name_is_not_echoed() -> None:
    from airflow_skald.core.errors import ConfigError
    from airflow_skald.core.settings.secret import SecretRef
    from airflow_skald.operators.secrets import airflow_secret

    pasted = "supersecretvalue-61d0c4b7a93e2f58"
    for kind in ("connection", "variable"):
        with pytest.raises(ConfigError, match=f"dp_key.{kind}") as err:
            airflow_secret(SecretRef("dp_key", kind, pasted))
        assert pasted not in str(err.value)


def _texts(folder: Path) -> dict[str, bytes]:
    return {str(p): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def test_dp_run_in_a_deployment_keeps_the_secret_out_of_everything(dep, deployment_workdir):
    from helpers_data import release_rows, write_config, write_dataset
    from helpers_dp import dp_config_dict
    from test_run_safety import DAG_ID, assert_run, log_events

    work = deployment_workdir / "dp"
    write_dataset(work / "in", n_files=2, rows=600)
    body = dp_config_dict(work / "in", work / "out", search_steps=8)
    body["quality"] = {"objective": "precision"}
    body["dp_key"] = {"variable": VARIABLE}
    config = write_config(work / "skald.yaml", body)
    dep.api("POST", "/variables", {"key": VARIABLE, "value": SECRET})
    try:
        run_id = dep.trigger(DAG_ID, conf={"config": str(config)}, unpause=False)
        tis = assert_run(dep, run_id, "success")
    finally:
        dep.api("DELETE", f"/variables/{VARIABLE}")
    manifest = json.loads((work / "out" / "manifest.json").read_text())
    dp = manifest["differential_privacy"]
    rows = release_rows(work / "out")
    sizes = Counter(tuple(r[q] for q in ("city", "age", "zip")) for r in rows)
    kept = {c: n for c, n in sizes.items() if set(c) != {"*"}}
    assert len(rows) == dp["records_sampled"] and min(kept.values()) >= dp["k"]

    seen: dict[str, bytes] = {}
    for task_id, ti in tis.items():
        events = log_events(dep, run_id, task_id, ti["try_number"])
        seen[f"log of {task_id}"] = json.dumps(events).encode()
        try:
            value = dep.xcom(DAG_ID, run_id, task_id)
        except Exception:  # noqa: BLE001 - a task without a return value has no XCom
            continue
        seen[f"xcom of {task_id}"] = json.dumps(value).encode()
    assert any(k.startswith("xcom") for k in seen)
    # phase 1's root bins (a product of every input record's distinct values) stay out (ADR 0027)
    assert not [k for k, v in seen.items() if k.startswith("xcom") and b"root_bins" in v]
    seen |= _texts(work / "out")  # manifest, report, run record, effective config, parts
    seen |= _texts(deployment_workdir / "artifacts")  # every run's artifacts
    seen |= _texts(dep.home / "logs")  # every component's and task's log file
    lineage = deployment_workdir / "openlineage.jsonl"
    if lineage.exists():
        seen["lineage"] = lineage.read_bytes()
    assert {"manifest.json", "report.html", "run.json"} <= {Path(k).name for k in seen}
    leaked = [name for name, data in seen.items() if SECRET.encode() in data]
    assert not leaked, leaked


@pytest.fixture(autouse=True)
def _airflow_env(airflow_home):
    """The first test reads connections and variables in this process (env backend)."""
    return airflow_home
