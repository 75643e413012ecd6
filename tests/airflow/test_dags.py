"""The SKALD DAGs end to end with ``dag.test()`` on a real SQLite metadata DB (one per session).

Generated (paper-shaped) data and Adult; mapped == unmapped; releases pass the independent
checks of ``tests/oracle.py``; XCom and task logs never carry an input value (canary record);
Param validation; re-running a whole run reproduces identical artifacts.
"""

from __future__ import annotations

import copy
import datetime as dt
import json
import logging
import sys
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
import yaml

TESTS = Path(__file__).resolve().parents[1]
# many dag.test() runs: spread over the workers (the session fixtures are made per worker)
SPREAD_OVER_WORKERS = True
sys.path.insert(0, str(TESTS))

# Fields of a manifest that legitimately differ between two runs of the same release.
VOLATILE = {"timings_s", "peak_rss_bytes", "config_sha256", "run_token"}


@pytest.fixture(scope="session")
def dagbag(airflow_home):
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(str(TESTS.parent / "dags"))
    assert bag.import_errors == {}, bag.import_errors
    return bag


@pytest.fixture(scope="session")
def artifacts_root(airflow_home, tmp_path_factory, monkeypatch_session):
    root = tmp_path_factory.mktemp("artifacts")
    monkeypatch_session.setenv("AIRFLOW__SKALD__ARTIFACTS", str(root))
    return root


@pytest.fixture(scope="session")
def monkeypatch_session():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


@pytest.fixture(scope="session")
def generated(tmp_path_factory) -> Path:
    """4 chunks of the paper's synthetic dataset (4,000 rows) and its skald.yaml."""
    from airflow_skald.core.data.generate import generate_dataset

    return generate_dataset(4000, 1000, seed=7, out_dir=tmp_path_factory.mktemp("gen") / "data")


def run_dag(dagbag, dag_id: str, conf: dict, logical_date=None, expect: str = "success"):
    from airflow_skald.operators.dag_params import PARAMS

    dag = dagbag.dags[dag_id]
    # In-process dag.test() lets a run's conf linger in the shared DAG object's params, so every
    # run here states every param (defaults first), as a fresh trigger would see them.
    full = {name: param.value for name, param in PARAMS.items()}
    if "chunks_per_task" in dag.params:
        full["chunks_per_task"] = 1
    kwargs = {"run_conf": {**full, **conf}}
    if logical_date is not None:  # a fixed run_id: a second call re-runs the same run
        kwargs["logical_date"] = logical_date
        kwargs["run_after"] = logical_date
    dr = dag.test(**kwargs)
    states = {(ti.task_id, ti.map_index): ti.state for ti in dr.get_task_instances()}
    assert dr.state == expect, states
    return dr


def xcoms(dr) -> list:
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        rows = (
            session.query(XComModel)
            .filter(XComModel.dag_id == dr.dag_id, XComModel.run_id == dr.run_id)
            .all()
        )
        return [(r.task_id, r.map_index, r.key, r.value) for r in rows]


def return_value(dr, task_id: str):
    for task, map_index, key, value in xcoms(dr):
        if task == task_id and map_index == -1 and key == "return_value":
            return json.loads(value) if isinstance(value, str) else value
    raise AssertionError(f"no return value for {task_id}")


def release_files(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(folder.glob("part-*"))}


def manifest(folder: Path) -> dict:
    return json.loads((folder / "manifest.json").read_text())


def stable(m: dict) -> dict:
    out = {
        k: v
        for k, v in m.items()
        if k not in VOLATILE and not k.startswith(("timings", "peak_rss"))
    }
    if "settings" in out:  # the runs write to different outputs; every other setting agrees
        out["settings"] = {k: v for k, v in out["settings"].items() if k != "output"}
    return out


def read_release(folder: Path) -> pd.DataFrame:
    return pd.concat(
        [pq.read_table(p).to_pandas() for p in sorted(folder.glob("part-*.parquet"))],
        ignore_index=True,
    )


# --------------------------------------------------------------------------- structure
def test_dags_parse_and_shape(dagbag):
    from airflow.sdk import AssetAlias

    assert {"skald_anonymise", "skald_anonymise_mapped"} <= set(dagbag.dags)
    plain = dagbag.dags["skald_anonymise"]
    assert [t.task_id for t in plain.topological_sort()] == [
        "encode",
        "histogram_lattice",
        "generalise",
    ]
    mapped = dagbag.dags["skald_anonymise_mapped"]
    is_mapped = {t.task_id: type(t).__name__ == "MappedOperator" for t in mapped.tasks}
    assert is_mapped == {
        "list_chunks": False,
        "encode_chunks": True,
        "encode": False,
        "histogram_chunks": True,
        "histogram_lattice": False,
        "generalise_chunks": True,
        "generalise": False,
    }
    for dag in (plain, mapped):
        outlets = dag.get_task("generalise").outlets
        # one Asset per output location, resolved at run time through the alias
        assert any(isinstance(o, AssetAlias) and o.name == "skald-release" for o in outlets)
        assert set(dag.params) >= {
            "config",
            "input_path",
            "output_path",
            "k",
            "suppression_limit",
            "histogram_bins",
        }
        # bug 1 of issue 10: an empty param means the file's value, never a hidden default
        assert all(dag.params[name] is None for name in dag.params if name != "chunks_per_task")


def test_provider_info_valid_and_registered(airflow_home):
    import airflow
    import jsonschema
    from airflow.providers_manager import ProvidersManager

    from airflow_skald.provider import get_provider_info

    schema = json.loads((Path(airflow.__file__).parent / "provider_info.schema.json").read_text())
    jsonschema.validate(get_provider_info(), schema)
    pm = ProvidersManager()
    assert "airflow-skald" in pm.providers
    assert "airflow_skald.operators.links.SkaldManifestLink" in pm.extra_links_class_names
    # and the CLI a user would run
    import subprocess

    listed = subprocess.run(
        [str(Path(sys.executable).with_name("airflow")), "providers", "list", "-o", "json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert listed.returncode == 0, listed.stderr[-2000:]
    names = {p["package_name"]: p["version"] for p in json.loads(listed.stdout)}
    from airflow_skald import __version__

    assert names["airflow-skald"] == __version__


def test_package_import_is_light():
    """Importing the operators must not import the core's heavy dependencies (DAG parsing)."""
    import subprocess

    code = (
        "import sys, airflow_skald.operators, airflow_skald.provider, airflow_skald.plugin; "
        "heavy = [m for m in ('pandas', 'pyarrow', 'airflow_skald.core.passes.pipeline') "
        "if m in sys.modules]; print(heavy)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"


# --------------------------------------------------------------------------- params
def test_params_keep_what_was_typed_and_refuse_out_of_range(dagbag):
    """No minimum/maximum in the Param schemas (the form would clamp to them): values in range
    are kept as typed; out-of-range values are refused by the params' validation, which the
    trigger runs, naming the rule (issue 18 item 13)."""
    from airflow.sdk.exceptions import ParamValidationError

    for dag_id in ("skald_anonymise", "skald_anonymise_mapped"):
        params = copy.deepcopy(dagbag.dags[dag_id].params)
        params.update({"k": 2, "suppression_limit": 1, "histogram_bins": 2, "config": "/x.yaml"})
        params.validate()
        assert params["k"] == 2 and params["suppression_limit"] == 1
        for bad, rule in (
            ({"k": 1}, "k must be an integer >= 2"),
            ({"suppression_limit": 5}, "suppression_limit must be a number between 0 and 1"),
            ({"histogram_bins": 1}, "histogram_bins must be an integer >= 2"),
        ):
            refused = copy.deepcopy(dagbag.dags[dag_id].params)
            with pytest.raises(ParamValidationError, match=rule):
                refused.update(bad)
                refused.validate()


def test_selects_label_the_empty_choice_and_settings_read_as_people_write(tmp_path):
    """Issue 18 item 8: the form's selects name the empty choice (not "null"); the settings
    line states suppression_limit as the decimal people write (the manifest keeps it exact)."""
    from airflow_skald.core.config.run_config import config_from_dict
    from airflow_skald.operators.base import settings_line
    from airflow_skald.operators.dag_params import PARAMS

    selects = {n: p.schema for n, p in PARAMS.items() if "enum" in p.schema}
    assert {"suppressed_records", "root"} <= set(selects)
    for schema in selects.values():
        assert schema["enum"][0] is None
        assert schema["values_display"] == {"null": "(the config file's value)"}
    from helpers_data import config_dict

    line = settings_line(config_from_dict(config_dict(tmp_path / "in", tmp_path / "out")))
    assert " suppression_limit=0.1 " in line and "1/10" not in line


REFUSED_AT_TRIGGER = [
    ({"k": "abc"}, "k"),
    ({"k": 1}, "k must be an integer >= 2"),
    ({"k": 2.5}, "k must be an integer >= 2"),
    ({"suppression_limit": 5}, "suppression_limit must be a number between 0 and 1"),
    ({"suppression_limit": -0.1}, "suppression_limit must be a number between 0 and 1"),
    ({"histogram_bins": 1}, "histogram_bins must be an integer >= 2"),
]


def test_wrong_types_and_out_of_range_values_are_refused_at_trigger(dagbag):
    """No run is made: the params' schemas refuse them (issue 18 item 13). Each value as the
    trigger checks it (the DAG as the scheduler holds it, serialized and back, its params
    merged with the conf and validated: what ``dag.test()`` and the REST API's trigger run
    before a run exists), and one through ``dag.test()`` itself (each call re-parses and
    stores the DAG's file first, conftest.py)."""
    from airflow.sdk.exceptions import ParamValidationError
    from airflow.serialization.serialized_objects import DagSerialization

    dag = dagbag.dags["skald_anonymise"]
    served = DagSerialization.deserialize_dag(DagSerialization.serialize_dag(dag))
    for bad, rule in REFUSED_AT_TRIGGER:
        with pytest.raises(ParamValidationError, match=rule):
            served.params.deep_merge({**bad, "config": "/nonexistent.yaml"}).validate()
    bad, rule = REFUSED_AT_TRIGGER[1]
    with pytest.raises(ParamValidationError, match=rule):
        dag.test(run_conf={**bad, "config": "/nonexistent.yaml"})


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ({"K": 25}, "unknown key 'K' in the run's conf"),
    ],
)
def test_bad_conf_fails_the_run_before_any_work(
    dagbag, artifacts_root, generated, tmp_path, capfd, caplog, bad, message
):
    out = tmp_path / "release"
    conf = {"config": str(generated), "output_path": str(out), **bad}
    dr = run_dag(dagbag, "skald_anonymise", conf, expect="failed")
    states = {ti.task_id: ti.state for ti in dr.get_task_instances()}
    assert states["encode"] == "failed" and states["generalise"] != "success"
    text = capfd.readouterr()
    assert message in text.out + text.err + caplog.text
    assert not out.exists() and not list(tmp_path.glob(".release*"))


def test_conf_without_k_uses_the_files_k(dagbag, artifacts_root, generated, tmp_path):
    """Bug 1 of issue 10: a conf without k released at k=50 whatever the file said."""
    cfg = yaml.safe_load(generated.read_text())
    cfg["privacy"]["k"] = 100
    cfg["input"]["path"] = str(generated.parent / cfg["input"]["path"])
    path = tmp_path / "k100.yaml"
    path.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "release"
    dr = run_dag(dagbag, "skald_anonymise", {"config": str(path), "output_path": str(out)})
    assert manifest(out)["k"] == 100 and manifest(out)["min_class_size"] >= 100
    assert return_value(dr, "generalise")["min_class_size"] >= 100


@pytest.mark.parametrize("dag_id", ["skald_anonymise", "skald_anonymise_mapped"])
def test_l_and_t_per_run(dagbag, artifacts_root, generated, tmp_path, dag_id):
    """Issue 11: criteria through both DAGs, thresholds set per run (params l and t); the
    figures reached are in XCom and the asset event; the release holds them (naive check)."""
    cfg = yaml.safe_load(generated.read_text())
    cfg["input"]["path"] = str(generated.parent / cfg["input"]["path"])
    cfg["privacy"]["l_diversity"] = [{"attribute": "health_condition", "l": 2}]
    cfg["privacy"]["t_closeness"] = [{"attribute": "health_condition", "t": 0.9}]
    path = tmp_path / "criteria.yaml"
    path.write_text(yaml.safe_dump(cfg))
    out = tmp_path / "release"
    conf = {"config": str(path), "output_path": str(out), "k": 5, "l": 4, "t": 0.6}
    dr = run_dag(dagbag, dag_id, conf)
    models = {m["model"]: m for m in manifest(out)["privacy_models"]}
    assert models["distinct-l-diversity"]["l"] == 4 and models["t-closeness"]["t"] == "0.6"
    assert models["distinct-l-diversity"]["min_distinct"] >= 4
    assert models["t-closeness"]["max_distance"] <= 0.6
    assert return_value(dr, "generalise")["privacy_models"] == manifest(out)["privacy_models"]
    release = read_release(out)
    qids = [q["name"] for q in cfg["quasi_identifiers"]]
    kept = release[~(release[qids].astype(str) == "*").all(axis=1)]
    per_class = kept.groupby([kept[q].astype(str) for q in qids])["health_condition"]
    assert per_class.nunique().min() >= 4 and per_class.size().min() >= 5


def test_bad_l_fails_the_run_naming_it(dagbag, artifacts_root, generated, tmp_path, capfd):
    out = tmp_path / "release"
    conf = {"config": str(generated), "output_path": str(out), "l": 3}
    run_dag(dagbag, "skald_anonymise", conf, expect="failed")
    text = capfd.readouterr()
    assert "l sets the threshold of the one configured l-diversity criterion" in (
        text.out + text.err
    )
    assert not out.exists()


def test_missing_config_fails_clearly(dagbag, artifacts_root, tmp_path, capfd, caplog):
    run_dag(
        dagbag,
        "skald_anonymise",
        {"config": str(tmp_path / "missing.yaml"), "k": 5},
        expect="failed",
    )  # bad input is not retried (AirflowFailException): no wait for a retry delay
    out = capfd.readouterr()
    assert "config file not found" in out.out + out.err + caplog.text


# --------------------------------------------------------------------------- end to end
def test_generated_mapped_equals_unmapped(dagbag, artifacts_root, generated, tmp_path):
    from oracle import check_release

    from airflow_skald.core.config.run_config import load_config
    from airflow_skald.core.run.runner import run

    outs, artifacts = {}, {}
    for dag_id in ("skald_anonymise", "skald_anonymise_mapped"):
        out = tmp_path / f"release-{dag_id}"
        conf = {"config": str(generated), "output_path": str(out), "k": 10}
        dr = run_dag(dagbag, dag_id, conf)
        result = return_value(dr, "generalise")
        assert result["verified"] is True
        assert Path(result["manifest"].removeprefix("file://")).exists()
        assert "/skald/releases/" in result["manifest_url"]
        outs[dag_id], artifacts[dag_id] = out, result["artifacts"]
    a, b = (outs["skald_anonymise"], outs["skald_anonymise_mapped"])

    # runs keep separate artifacts: the same conf again is another run, its own folder
    conf = {"config": str(generated), "output_path": str(a), "k": 10}
    again = return_value(run_dag(dagbag, "skald_anonymise", conf), "generalise")["artifacts"]
    assert again != artifacts["skald_anonymise"]
    for uri in (again, artifacts["skald_anonymise"]):
        assert (Path(uri.removeprefix("file://")) / "manifest.json").exists()
    assert release_files(a) == release_files(b)
    assert len(release_files(a)) == 4
    assert stable(manifest(a)) == stable(manifest(b))

    # the same as the core in one process (the CLI's path)
    cli_out = tmp_path / "release-cli"
    m = run(load_config(generated, overrides={"k": 10, "output_path": str(cli_out)}))
    assert release_files(cli_out) == release_files(a)
    assert stable(m) == stable(manifest(a))

    # independent checks of the release
    cfg = yaml.safe_load(generated.read_text())
    qids = [q["name"] for q in cfg["quasi_identifiers"]]
    check = check_release(read_release(a), qids, 10, 0.01, 4000)
    assert check["n_suppressed"] == manifest(a)["n_suppressed"]
    assert check["min_class_size"] >= 10


def _adult_config(tmp_path: Path) -> Path:
    from skald_testdata import adult_config

    names = ["age", "education", "marital-status", "occupation", "race", "sex", "workclass"]
    memory = {"histogram_bins": 10**9}
    body = adult_config(
        tmp_path / "adult-out", k=5, suppression_limit=0.02, qids=names, memory=memory
    )
    path = tmp_path / "adult.yaml"
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


def test_adult_both_dags(dagbag, artifacts_root, tmp_path, capsys):
    """Both DAGs with a non-default objective (param `objective`: Loss, 2 % suppression) give
    the release, node and scores of `skald run --objective loss` (issue 22)."""
    from oracle import check_release

    from airflow_skald.cli import main

    cfg = _adult_config(tmp_path)
    outs = {}
    for dag_id in ("skald_anonymise", "skald_anonymise_mapped"):
        out = tmp_path / f"adult-{dag_id}"
        conf = {"config": str(cfg), "output_path": str(out), "k": 10, "objective": "loss"}
        run_dag(dagbag, dag_id, conf)
        outs[dag_id] = out
    a, b = outs["skald_anonymise"], outs["skald_anonymise_mapped"]
    assert release_files(a) == release_files(b)
    assert stable(manifest(a)) == stable(manifest(b))
    cli = tmp_path / "adult-cli"
    args = ["run", str(cfg), "--k", "10", "--objective", "loss", "--output", str(cli), "--quiet"]
    assert main(args) == 0
    capsys.readouterr()
    assert release_files(cli) == release_files(a)
    assert stable(manifest(cli)) == stable(manifest(a))
    m = manifest(a)
    assert m["quality_models"]["objective"] == "loss" and m["n_suppressed"] > 0
    assert m["k"] == 10 and m["chunks"] == 4 and m["verified"]
    names = [q["name"] for q in yaml.safe_load(cfg.read_text())["quasi_identifiers"]]
    check = check_release(read_release(a), names, 10, 0.02, m["n_records"])
    assert check["min_class_size"] >= 10
    assert check["n_suppressed"] == m["n_suppressed"]


# --------------------------------------------------------------------------- privacy of XCom/logs
def test_xcom_and_logs_carry_no_input_values(dagbag, artifacts_root, tmp_path, capfd, caplog):
    from helpers_data import CANARY_RAW, config_dict, write_config, write_dataset

    inp, out = tmp_path / "in", tmp_path / "out"
    write_dataset(inp, n_files=3, rows=60, canary_in=1)
    cfg = write_config(tmp_path / "skald.yaml", config_dict(inp, out, k=3, suppression_limit=0.1))
    capfd.readouterr()
    caplog.set_level(logging.INFO)
    dr = run_dag(dagbag, "skald_anonymise_mapped", {"config": str(cfg), "k": 3})
    logs = "".join(capfd.readouterr()) + caplog.text
    assert "chunk 1/1" in logs and "chosen node" in logs  # progress and decision are logged
    values = xcoms(dr)
    assert len(values) >= 10
    blob = json.dumps([v for *_, v in values], default=str)
    for raw in CANARY_RAW:
        assert raw not in blob, f"input value {raw!r} leaked into XCom"
        assert raw not in logs, f"input value {raw!r} leaked into the task logs"
    # every XCom is small (references and figures only)
    assert max(len(json.dumps(v, default=str)) for *_, v in values) < 4000
    # the canary's row exists in the input and is masked in the release
    rel = read_release(out)
    assert len(rel) == 181
    assert not any(raw in rel.to_csv() for raw in CANARY_RAW[:5])


# --------------------------------------------------------------------------- retries / audit
def test_rerun_reproduces_identical_artifacts(dagbag, artifacts_root, generated, tmp_path):
    """Re-running a run (same run_id: every task cleared and re-executed) rewrites the same bytes."""
    when = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    out = tmp_path / "release"
    conf = {"config": str(generated), "output_path": str(out), "k": 25}

    def snapshot(dr) -> dict[str, bytes]:
        root = Path(return_value(dr, "generalise")["artifacts"].removeprefix("file://"))
        files = {
            str(p.relative_to(root)): p.read_bytes()
            for p in root.rglob("*")
            # timings, the run record and the report that prints them differ between attempts;
            # the manifest is deterministic (docs/design.md §5): compared byte for byte
            if p.is_file()
            and "timings" not in p.parts
            and p.name not in ("run.json", "report.html")
        }
        files.update({f"release/{k}": v for k, v in release_files(out).items()})
        files["release/manifest.json"] = (out / "manifest.json").read_bytes()
        return files

    first_dr = run_dag(dagbag, "skald_anonymise_mapped", conf, logical_date=when)
    first, first_manifest = snapshot(first_dr), stable(manifest(out))
    assert {
        "chunks.json",
        "domain_stats.json",
        "plan.json",
        "histogram.bin",
        "decision.json",
    } <= set(first)
    assert {"manifest.json", "config/effective.json", "config/skald.yaml"} <= set(first)
    assert sum(1 for k in first if k.startswith("release/part-")) == 4
    second_dr = run_dag(dagbag, "skald_anonymise_mapped", conf, logical_date=when)
    assert second_dr.run_id == first_dr.run_id
    assert snapshot(second_dr) == first
    assert stable(manifest(out)) == first_manifest
    # no staging folder or temporary file is left behind
    leftovers = [p.name for p in out.parent.iterdir() if "staging" in p.name or p.suffix == ".tmp"]
    assert leftovers == []


# ------------------------------------------------------------- rule-built hierarchies
@pytest.fixture(scope="session")
def clinical(tmp_path_factory) -> Path:
    """3 chunks of the clinical table (issue 20): every QID's hierarchy built from a rule."""
    from airflow_skald.core.data.generate import generate_dataset

    out = tmp_path_factory.mktemp("clinical") / "data"
    return generate_dataset(3000, 1000, seed=5, out_dir=out, schema="clinical")


@pytest.mark.parametrize("dag_id", ["skald_anonymise", "skald_anonymise_mapped"])
def test_rule_built_hierarchies_through_the_dags(
    dagbag, artifacts_root, clinical, tmp_path, dag_id
):
    """Issue 20 item 9: the same operators and DAGs take a config of rules; the release is the
    CLI's, byte for byte, and the manifest names the same built hierarchies."""
    from airflow_skald.core.config.run_config import load_config
    from airflow_skald.core.run.runner import run

    out = tmp_path / "release"
    run_dag(dagbag, dag_id, {"config": str(clinical), "output_path": str(out), "k": 5})
    cli = run(load_config(clinical, {"output_path": str(tmp_path / "cli"), "k": 5}))
    dag_manifest = manifest(out)
    assert dag_manifest["node"] == cli["node"] and dag_manifest["dm_star"] == cli["dm_star"]
    assert dag_manifest["quasi_identifiers"] == cli["quasi_identifiers"]
    assert release_files(out) == release_files(tmp_path / "cli")


def test_templated_relative_output_path(dagbag, artifacts_root, tmp_path):
    """Issue 18 defects 4 and 5: ``{{ ds }}`` in a path param is rendered with the run's
    logical date, and a relative path from a param resolves against the config file's folder
    (as the file's own paths), not the worker's working directory."""
    import datetime as dt

    from airflow_skald.core.data.generate import generate_dataset

    config = generate_dataset(600, 1000, seed=3, out_dir=tmp_path / "data")
    day = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    conf = {
        "config": str(config),
        "output_path": "../rel/daily-{{ ds }}",
        "input_path": "{{ 'chunk' }}-*.parquet",  # relative, templated: the config's folder
    }
    dr = run_dag(dagbag, "skald_anonymise", conf, logical_date=day)
    out = tmp_path / "rel" / "daily-2026-03-01"
    # item 6: the run record times the DAG run (from its start), each phase by its own task,
    # in the phases' order
    record = json.loads((out / "run.json").read_text())
    assert record["started_at"] == dr.start_date.astimezone(dt.UTC).isoformat(timespec="seconds")
    assert list(record["timings_s"]) == ["encode", "histogram", "search", "generalise", "verify"]
    assert manifest(out)["verified"] is True and manifest(out)["n_records"] == 600
    assert sorted(p.name for p in (tmp_path / "rel").iterdir()) == ["daily-2026-03-01"]
    assert not list(Path.cwd().glob("rel/daily-*"))


def test_a_dag_run_with_an_engine_releases_what_the_chunk_path_releases(
    dagbag, artifacts_root, tmp_path, capsys
):
    """Issue 43 item 6: the file says `execution: chunks`, the DAG param `execution: duckdb`
    runs the passes in DuckDB, and the release is the chunk path's (ADR 0069)."""
    sys.path.insert(0, str(TESTS / "integration" / "engines"))
    from engine_compare import assert_same_release, config, run_cli, write_files

    inp = write_files(tmp_path / "in", 2, 150, 5)
    code, err = run_cli(tmp_path, config(inp, tmp_path / "chunks"), "chunks", capsys)
    assert code == 0, err
    path = tmp_path / "engine.yaml"
    path.write_text(yaml.safe_dump(config(inp, tmp_path / "unused", execution="chunks")))
    out = tmp_path / "duckdb"
    conf = {"config": str(path), "output_path": str(out), "execution": "duckdb"}
    run_dag(dagbag, "skald_anonymise", conf)
    assert json.loads((out / "manifest.json").read_text())["engine"] == "duckdb"
    assert_same_release(out, tmp_path / "chunks")
