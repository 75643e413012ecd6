"""docker/: the files parse and agree with each other and with pyproject (no Docker engine here)."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
DOCKER = REPO / "docker"
AIRFLOW_SERVICES = {
    "airflow-init",
    "airflow-apiserver",
    "airflow-scheduler",
    "airflow-dag-processor",
    "airflow-triggerer",
}


@pytest.fixture(scope="module")
def compose() -> dict:
    return yaml.safe_load((DOCKER / "docker-compose.yaml").read_text())


@pytest.fixture(scope="module")
def pyproject() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text())


@pytest.fixture(scope="module")
def dockerfile() -> str:
    return (DOCKER / "Dockerfile").read_text()


def workers(compose) -> dict[str, dict]:
    return {
        name: svc
        for name, svc in compose["services"].items()
        if "celery worker" in str(svc.get("command", ""))
    }


def test_services_present(compose):
    services = set(compose["services"])
    assert {"postgres", "redis", "minio", "minio-init"} | AIRFLOW_SERVICES <= services
    w = workers(compose)
    assert len(w) >= 2
    hostnames = [svc.get("hostname") for svc in w.values()]
    assert None not in hostnames and len(set(hostnames)) == len(hostnames)


def test_airflow_services_share_image_and_env(compose, pyproject):
    version = pyproject["project"]["version"]
    airflow_services = {n: s for n, s in compose["services"].items() if n.startswith("airflow-")}
    assert set(airflow_services) == AIRFLOW_SERVICES | set(workers(compose))
    for name, svc in airflow_services.items():
        assert svc["image"] == f"airflow-skald:{version}", name
        assert svc["build"]["dockerfile"] == "docker/Dockerfile", name
        assert str(svc["build"]["args"]["SKALD_VERSION"]) == version, name
        env = svc["environment"]
        assert env["AIRFLOW__CORE__EXECUTOR"] == "CeleryExecutor", name
        assert "@postgres:5432/" in env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"], name
        assert "postgresql+asyncpg://" in env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN_ASYNC"], name
        assert "redis://redis:6379" in env["AIRFLOW__CELERY__BROKER_URL"], name
        assert env["AIRFLOW__CORE__EXECUTION_API_SERVER_URL"].startswith(
            "http://airflow-apiserver:8080/"
        ), name
        assert env["AIRFLOW__SKALD__ARTIFACTS"].startswith("s3://minio_default@skald/"), name
        assert "AIRFLOW_CONN_MINIO_DEFAULT" in env, name
        assert "http://minio:9000" in env["AIRFLOW_CONN_MINIO_DEFAULT"], name
        # the same secrets everywhere (JWTs signed by the api-server are checked by workers)
        assert (
            env["AIRFLOW__API_AUTH__JWT_SECRET"]
            == airflow_services["airflow-apiserver"]["environment"]["AIRFLOW__API_AUTH__JWT_SECRET"]
        )


def test_commands(compose):
    s = compose["services"]
    assert s["airflow-apiserver"]["command"] == "api-server"
    assert s["airflow-scheduler"]["command"] == "scheduler"
    assert s["airflow-dag-processor"]["command"] == "dag-processor"
    assert s["airflow-triggerer"]["command"] == "triggerer"
    assert "db migrate" in " ".join(s["airflow-init"]["command"])
    port = s["airflow-apiserver"]["ports"][0].split(":")[-1]
    assert port == "8080"


def test_mounts_exist_and_match_settings(compose):
    for name, svc in compose["services"].items():
        for vol in svc.get("volumes", []):
            src, dst = vol.split(":")[:2]
            if src.startswith("."):
                assert (DOCKER / src).exists(), f"{name}: mount source {src} missing"
            else:
                assert src in compose["volumes"], f"{name}: named volume {src} not declared"
    common = compose["services"]["airflow-scheduler"]
    mounts = {v.split(":")[1]: v.split(":")[0] for v in common["volumes"]}
    assert mounts[common["environment"]["AIRFLOW__CORE__DAGS_FOLDER"]] == "../dags"
    assert (DOCKER / mounts["/opt/skald/conf"] / "skald.yaml").exists()


def test_example_config_is_valid_and_uses_the_bucket(compose):
    from airflow_skald.core.config.run_config import config_from_dict

    raw = yaml.safe_load((DOCKER / "skald" / "skald.yaml").read_text())
    config = config_from_dict(raw, base_dir=DOCKER / "skald")
    bucket_cmd = " ".join(compose["services"]["minio-init"]["command"])
    assert "mc mb --ignore-existing local/skald" in bucket_cmd
    assert config.input.path.startswith("s3://skald/")
    assert config.output.path.startswith("s3://skald/")


def test_dependencies_in_order(compose):
    s = compose["services"]
    for name in AIRFLOW_SERVICES - {"airflow-init"} | set(workers(compose)):
        deps = s[name]["depends_on"]
        assert deps["airflow-init"]["condition"] == "service_completed_successfully", name
        assert deps["postgres"]["condition"] == "service_healthy", name
        assert deps["minio-init"]["condition"] == "service_completed_successfully", name


def test_dockerfile_matches_pyproject(dockerfile, pyproject):
    project = pyproject["project"]
    base = re.search(r"^ARG AIRFLOW_IMAGE=(\S+)$", dockerfile, re.M).group(1)
    pinned_airflow = next(
        d.split("==")[1] for d in project["optional-dependencies"]["airflow"] if "==" in d
    )
    assert base == f"apache/airflow:{pinned_airflow}-python3.11"
    assert "3.11" in project["requires-python"]
    assert re.search(r"^FROM \$\{AIRFLOW_IMAGE\}$", dockerfile, re.M)
    assert re.search(rf"^ARG SKALD_VERSION={re.escape(project['version'])}$", dockerfile, re.M)
    # installs this source tree (same version by construction, re-checked at build time)
    assert '"/opt/skald/src[celery]"' in dockerfile
    assert "__version__" in dockerfile
    assert '"apache-airflow==${AIRFLOW_VERSION}"' in dockerfile
    for src in re.findall(r"^COPY (?:--chown=\S+ )?(.+) \S+$", dockerfile, re.M):
        for part in src.split():
            assert (REPO / part).exists(), f"COPY source {part} missing"
    from airflow_skald import __version__

    assert __version__ == project["version"]
