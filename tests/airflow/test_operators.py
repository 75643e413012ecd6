"""Operator shells without a scheduler: no work in __init__, atomic artifacts, exact merges."""

from __future__ import annotations

import sys
import types
from pathlib import Path
from types import SimpleNamespace

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def context(run_id: str = "manual__2026-01-01T00:00:00+00:00", dag_id: str = "unit") -> dict:
    return {"dag": SimpleNamespace(dag_id=dag_id), "run_id": run_id}


@pytest.fixture
def setup(tmp_path, monkeypatch):
    from helpers_data import config_dict, write_config, write_dataset

    inp, out = tmp_path / "in", tmp_path / "out"
    write_dataset(inp, n_files=3, rows=40)
    cfg = write_config(tmp_path / "skald.yaml", config_dict(inp, out, k=3))
    monkeypatch.setenv("AIRFLOW__SKALD__ARTIFACTS", str(tmp_path / "artifacts"))
    return cfg, out, tmp_path / "artifacts"


def test_init_does_no_work_and_checks_mode():
    from airflow_skald.operators import EncodeOperator, GeneraliseOperator

    EncodeOperator(task_id="e", config="/does/not/exist.yaml", k="{{ params.k }}")
    with pytest.raises(ValueError, match="mode"):
        GeneraliseOperator(task_id="g", mode="list")


def test_artifact_write_is_atomic(tmp_path, monkeypatch):
    """A writer killed between writing and renaming leaves only a hidden .tmp file."""
    from airflow.sdk import ObjectStoragePath

    from airflow_skald.operators.artifacts import RunArtifacts

    store = RunArtifacts(str(tmp_path), "d", "r:1+2")
    assert store.path.name == "r_1_2"

    def killed(self, target):
        raise KeyboardInterrupt("killed")

    monkeypatch.setattr(ObjectStoragePath, "rename", killed)
    with pytest.raises(KeyboardInterrupt):
        store.write_json("decision.json", {"node": [1]})
    monkeypatch.undo()
    assert not store.exists("decision.json")
    assert [p.name for p in Path(store.uri().removeprefix("file://")).iterdir()] == [
        ".decision.json.tmp"
    ]
    from airflow_skald.core.errors import DataError

    with pytest.raises(DataError, match="artifact decision.json of run r:1.2 is not in"):
        store.read_json("decision.json")
    store.write_json("decision.json", {"node": [1]})  # the retry overwrites cleanly
    assert store.read_json("decision.json") == {"node": [1]}


@pytest.mark.parametrize("bins", [None, 30])
def test_mapped_phases_equal_single_task(setup, bins):
    """Operators driven by hand: partial+merge == all, and a missing group is an error.
    With 30 bins the adaptive root is above level 0: the groups' partials are counted at
    different nodes of the root chain and merged there (ADR 0012)."""
    import yaml

    from airflow_skald.operators import EncodeOperator, GeneraliseOperator, HistogramLatticeOperator
    from airflow_skald.operators.artifacts import RunArtifacts

    cfg, out, _ = setup
    if bins:
        body = yaml.safe_load(cfg.read_text())
        cfg.write_text(yaml.safe_dump({**body, "memory": {"histogram_bins": bins}}))
    common = {"config": str(cfg), "k": 3, "output_path": str(out)}
    ctx = context("all")
    EncodeOperator(task_id="e", **common).execute(ctx)
    all_decision = HistogramLatticeOperator(task_id="h", **common).execute(ctx)
    released = GeneraliseOperator(task_id="g", **common).execute(ctx)
    assert released["verified"] and released["dm_star"] == all_decision["dm_star"]
    all_bytes = {p.name: p.read_bytes() for p in sorted(out.glob("part-*"))}

    ctx = context("mapped")
    groups = EncodeOperator(task_id="l", mode="list", chunks_per_task=2, **common).execute(ctx)
    assert [g["chunk_ids"] for g in groups] == [[0, 1], [2]]
    for g in groups:
        EncodeOperator(task_id="ep", mode="partial", chunk_group=g, **common).execute(ctx)
    EncodeOperator(task_id="em", mode="merge", **common).execute(ctx)
    for g in groups:
        HistogramLatticeOperator(task_id="hp", mode="partial", chunk_group=g, **common).execute(ctx)
    mapped_decision = HistogramLatticeOperator(task_id="hm", mode="merge", **common).execute(ctx)
    for key in ("node", "dm_star", "n_suppressed", "n_equivalence_classes"):
        assert mapped_decision[key] == all_decision[key]
    if bins:
        from airflow_skald.core.count.root_counts import RootCounts

        store = RunArtifacts(None, "unit", "mapped")
        name = "partials/histogram/group-{:05d}.bin"
        nodes = {
            RootCounts.from_bytes(store.read_bytes(name.format(g["group"]))).node for g in groups
        }
        assert len(nodes) == 2  # the two groups' partials sit at different chain nodes
        plans = [RunArtifacts(None, "unit", r).read_json("plan.json") for r in ("all", "mapped")]
        assert plans[0]["root_levels"] == plans[1]["root_levels"] != [0, 0, 0]
    for g in groups:
        GeneraliseOperator(task_id="gp", mode="partial", chunk_group=g, **common).execute(ctx)
    # a killed writer's leftover must not end up in the release
    staging = next(out.parent.glob(".out.skald-staging-*"))
    (staging / ".part-00001.parquet.tmp").write_bytes(b"half")
    result = GeneraliseOperator(task_id="gm", mode="merge", **common).execute(ctx)
    assert result["verified"]
    assert {p.name: p.read_bytes() for p in sorted(out.glob("part-*"))} == all_bytes
    assert not list(out.glob(".*"))
    # clearing the final task after the commit re-publishes instead of failing
    again = GeneraliseOperator(task_id="gm", mode="merge", **common).execute(ctx)
    assert again["dm_star"] == result["dm_star"]

    # a merge with a missing partial fails clearly, at once (no retry brings it back)
    from airflow.sdk.exceptions import AirflowFailException

    store = RunArtifacts(None, "unit", "mapped")
    (Path(store.uri().removeprefix("file://")) / "partials/encode/group-00001.bin").unlink()
    with pytest.raises(AirflowFailException, match="partials/encode/group-00001.bin of run"):
        EncodeOperator(task_id="em", mode="merge", **common).execute(ctx)


def test_bad_input_is_not_retried(setup):
    from airflow.sdk.exceptions import AirflowFailException

    from airflow_skald.operators import EncodeOperator

    cfg, out, _ = setup
    with pytest.raises(AirflowFailException, match="k must be an integer"):
        EncodeOperator(task_id="e", config=str(cfg), k="abc").execute(context())
    with pytest.raises(AirflowFailException, match="no SKALD config"):
        EncodeOperator(task_id="e", config="None").execute(context())


def test_later_phase_refuses_changed_settings(setup):
    from airflow.sdk.exceptions import AirflowFailException

    from airflow_skald.operators import EncodeOperator, HistogramLatticeOperator

    cfg, out, _ = setup
    EncodeOperator(task_id="e", config=str(cfg), k=3).execute(context("c"))
    with pytest.raises(AirflowFailException, match="changed since the encode task"):
        HistogramLatticeOperator(task_id="h", config=str(cfg), k=4).execute(context("c"))


def test_artifacts_on_an_object_store_url():
    """Artifacts work on any ObjectStoragePath filesystem, not only local folders."""
    from airflow_skald.operators.artifacts import RunArtifacts

    store = RunArtifacts("memory://skald-test/artifacts", "dag", "manual__2026:1")
    uri = store.write_json("decision.json", {"node": [1, 2]})
    assert uri == "memory://skald-test/artifacts/dag/manual__2026_1/decision.json"
    assert store.read_json("decision.json") == {"node": [1, 2]}
    assert not store.exists(".decision.json.tmp")


LINEAGE_MANIFEST = {
    "k": 5,
    "suppression_limit": 0.01,
    "node": {"age": 2},
    "node_paper": "((3))",
    "dm_star": 99,
    "n_records": 100,
    "n_suppressed": 1,
    "verified": True,
    "config_sha256": "c" * 64,
    "input_fingerprint": "f" * 64,
    "privacy_models": [
        {"model": "k-anonymity", "k": 5},
        {"model": "distinct-l-diversity", "l": 3, "attribute": "disease", "min_distinct": 3},
        {"model": "t-closeness", "t": "0.6", "attribute": "disease", "max_distance": 0.5},
    ],
}


def test_openlineage_of_a_release():
    """Item 12: datasets named by OpenLineage's conventions; the facet holds figures only."""
    from airflow_skald.operators.lineage import FACET, dataset, operator_lineage

    assert (dataset("/data/in/").namespace, dataset("/data/in/").name) == ("file", "/data/in")
    s3 = dataset("s3://conn@Bucket/rel/x/")
    assert (s3.namespace, s3.name) == ("s3://bucket", "rel/x")
    lineage = operator_lineage("/data/in", "/data/out", LINEAGE_MANIFEST)
    assert [d.name for d in lineage.inputs] == ["/data/in"]
    assert [d.name for d in lineage.outputs] == ["/data/out"]
    facet = lineage.run_facets[FACET]
    assert facet.k == 5 and facet.verified is True and facet.dm_star == 99
    assert facet.l == [{"model": "distinct-l-diversity", "l": 3, "attribute": "disease"}]
    assert facet.t == [{"model": "t-closeness", "t": "0.6", "attribute": "disease"}]
    assert facet.suppression_limit == "0.01" and facet.node == {"age": 2}
    before = operator_lineage("/data/in", "/data/out", None)  # encode, histogram_lattice
    assert before.outputs == [] and before.run_facets == {}


def test_lineage_of_a_run_whose_connection_is_missing_names_the_table(tmp_path, monkeypatch):
    """Issue 40 item 6: the task fails at the missing connection; what it reports to
    OpenLineage (its FAIL event) names the input and output tables, the connection's id
    standing for their host and database, not the staging folder of the extract."""
    from airflow.sdk.exceptions import AirflowFailException
    from helpers_data import config_dict, write_config

    from airflow_skald.operators import EncodeOperator

    body = config_dict(tmp_path / "unused", tmp_path / "unused-out", k=3)
    body["input"] = {"table": "clinic.patients", "connection": "skald_missing_conn"}
    body["output"] = {"table": "research.out", "connection": "skald_missing_conn"}
    cfg = write_config(tmp_path / "skald.yaml", body)
    monkeypatch.setenv("AIRFLOW__SKALD__ARTIFACTS", str(tmp_path / "artifacts"))
    op = EncodeOperator(task_id="e", config=str(cfg))
    with pytest.raises(AirflowFailException, match="connection skald_missing_conn: not found"):
        op.execute(context())
    lineage = op.get_openlineage_facets_on_complete(None)
    assert [(d.namespace, d.name) for d in lineage.inputs] == [
        ("postgres://skald_missing_conn", "clinic.patients")
    ]


def test_refusal_creates_nothing(tmp_path, monkeypatch):
    """Issue 30 item 1: a config in the input folder with input ``.`` (as `skald generate`
    writes it) and output ``rel/daily-{{ ds }}``: refused as inside the input folder, and
    nothing is created (no ``rel/`` in the input folder, no run artifacts)."""
    from airflow.sdk.exceptions import AirflowFailException
    from helpers_data import config_dict, write_config, write_dataset

    from airflow_skald.operators import EncodeOperator

    data = tmp_path / "patients"
    write_dataset(data, n_files=2, rows=40)
    cfg = write_config(data / "skald.yaml", config_dict(".", "out", k=3))
    monkeypatch.setenv("AIRFLOW__SKALD__ARTIFACTS", str(tmp_path / "artifacts"))
    before = sorted(p.name for p in data.iterdir())
    op = EncodeOperator(task_id="e", config=str(cfg), output_path="rel/daily-2026-11-27")
    with pytest.raises(AirflowFailException, match="is inside the input folder"):
        op.execute(context())
    assert sorted(p.name for p in data.iterdir()) == before
    assert not (tmp_path / "artifacts").exists()


def test_a_template_that_cannot_render_fails_without_retry(setup):
    """Issue 30 item 2: ``{{ ds }}`` in a run without a logical date (REST trigger with
    ``"logical_date": null``) fails at once (AirflowFailException: no retry) in one line
    saying what is missing, from the operators' second pass over a param's text and from
    Airflow's own rendering of a templated field."""
    from airflow.sdk import DAG
    from airflow.sdk.exceptions import AirflowFailException

    from airflow_skald.operators import EncodeOperator

    cfg, out, artifacts = setup
    dag = DAG("unit", schedule=None)
    ctx = {
        **context(),
        "dag": dag,
        "dag_run": types.SimpleNamespace(logical_date=None, conf={}, start_date=None),
    }
    needs = r"output_path '.*daily-\{\{ ds \}\}' needs the run's logical date \(\{\{ ds \}\}\)"
    op = EncodeOperator(
        task_id="e", dag=dag, config=str(cfg), output_path=f"{out}/daily-{{{{ ds }}}}"
    )
    with pytest.raises(AirflowFailException, match=needs + ", and this run has none"):
        op.execute(ctx)  # the param's text rendered by the operator
    with pytest.raises(AirflowFailException, match=needs) as failed:
        op.render_template_fields(ctx)  # Airflow's rendering, before execute
    assert "\n" not in str(failed.value)
    op = EncodeOperator(task_id="e2", dag=dag, config=str(cfg), output_path="{{ nothing.here }}")
    with pytest.raises(AirflowFailException, match="output_path '{{ nothing.here }}' cannot be"):
        op.render_template_fields(ctx)
    assert not out.exists() and not artifacts.exists()


def test_a_stale_retry_is_refused_before_any_work(setup, monkeypatch):
    """Issue 30 item 6: run A released, run B replaced it (overwrite); A's generalise run
    again is refused naming B before it writes a single part, and B's release stays."""
    from airflow.sdk.exceptions import AirflowFailException

    from airflow_skald.core.passes import pipeline
    from airflow_skald.core.release.write.replaced import RECORDS, archive_replaced, archived_file
    from airflow_skald.operators import EncodeOperator, GeneraliseOperator
    from airflow_skald.operators import HistogramLatticeOperator as Histogram

    cfg, out, _ = setup
    records = {}
    for run_id, settings in (("A", {"k": 3}), ("B", {"k": 4, "overwrite": True})):
        for op in (EncodeOperator, Histogram, GeneraliseOperator):
            op(task_id=op.__name__, config=str(cfg), **settings).execute(context(run_id))
        records[run_id] = {n: (out / n).read_bytes() for n in RECORDS if (out / n).exists()}
        assert archive_replaced(str(out), f"unit-{run_id}") is None  # its own: nothing kept
    # item 4: B kept A's records (never its parts) beside the output, byte for byte
    assert {"manifest.json", "report.html", "run.json", "skald.yaml"} <= set(records["A"])
    assert {n: archived_file(str(out), "unit-A", n) for n in records["A"]} == records["A"]
    assert sorted(p.name for p in out.parent.iterdir() if p.name.startswith(".out")) == [
        ".out.skald-replaced"
    ]
    assert archived_file(str(out), "unit-B", "manifest.json") is None
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    written = []
    real = pipeline.write_parts
    monkeypatch.setattr(
        pipeline, "write_parts", lambda *a, **kw: written.append(a) or real(*a, **kw)
    )
    for op in (GeneraliseOperator, EncodeOperator):  # the task cleared, or the whole run
        with pytest.raises(AirflowFailException, match="was replaced by run unit-B after run"):
            op(task_id=op.__name__, config=str(cfg), k=3).execute(context("A"))
    assert written == [] and {p.name: p.read_bytes() for p in out.iterdir()} == before


def test_openlineage_facet_matches_its_schema():
    """Issue 30: the facet's _schemaURL names the schema the plugin serves, and the facet as
    OpenLineage serialises it validates against that schema (no field left undescribed)."""
    import json

    import jsonschema
    from openlineage.client.serde import Serde

    from airflow_skald.operators.lineage import FACET, release_facet
    from airflow_skald.operators.lineage_schema import SCHEMA

    manifest = {
        **LINEAGE_MANIFEST,
        "node": {"age": 2, "zip": 0},
        "privacy_models": [{"model": "entropy-l-diversity", "l": 2.5, "attribute": "disease"}]
        + LINEAGE_MANIFEST["privacy_models"][2:],
    }
    facet = json.loads(Serde.to_json(release_facet(manifest)))
    assert facet["_schemaURL"].endswith(
        "/skald/schemas/skald_release.json#/$defs/SkaldReleaseRunFacet"
    )
    jsonschema.validate({FACET: facet}, SCHEMA)
    for bad in ({"k": 1}, {"data": "a value"}, {"node": {"age": "x"}}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({FACET: {**facet, **bad}}, SCHEMA)
