"""Run safety on a real deployment (issue 12, "How it is checked"; docs/design.md §5 and §7).

The session's one deployment (fixture `dep`, tests/airflow/conftest.py: api-server, scheduler,
dag-processor; LocalExecutor; PostgreSQL in a database of its own, dropped after), driving ``skald_anonymise`` through the
REST API v2 and, for the trigger form, through the Airflow UI in headless Chromium:

1. a conf without ``k`` uses the config file's k (privacy.k = 7): manifest, asset event extra
   and the encode task's first log line say 7;
2. + 6. bad conf posted through the REST API: out-of-range values (``k`` = 2.5, ``k`` = 1,
   ``suppression_limit`` = 5) and a wrong type (``k`` = "abc") are refused by the trigger itself
   (HTTP 400 naming the rule; no run); an unknown key ``K`` or no ``config`` fail the run in
   ``encode`` naming the field, before any work (no artifacts, no event, the release at the
   output untouched);
3. a second run with other settings (k=10, then k=50) to the same output is refused naming the
   existing release's k, which stays byte-identical; with ``overwrite`` it is replaced;
4. one asset event per release, holding k and the run id; a cleared ``generalise`` adds none
   and writes identical manifest bytes and parts;
5. the real trigger form: k=1 with suppression_limit=5, and k=2.5, typed into the form fields;
   the fields keep what was typed (not clamped to a bound) and the trigger is refused with the
   rule on the page, no run made. Screenshots (``SKALD_IT_SHOTS``, default
   ``/tmp/skald-run-safety``) of the filled form and of the refusal.

The tests share the deployment and the two first releases (``releases``), each checks its own
outputs and runs, so any one of them can be run alone.
"""

from __future__ import annotations

import json
import os
import sys
import time
import urllib.parse
import urllib.request
from pathlib import Path

import jsonschema
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
from deploy import Deployment, DeploymentError  # noqa: E402
from helpers_browser import CHROMIUM, PAGE_TEXT, Browser, require_chromium  # noqa: E402

pytestmark = pytest.mark.deployment

REPO = Path(__file__).resolve().parents[2]
DAG_ID = "skald_anonymise"
K_IN_FILE = 7
SHOTS = Path(os.environ.get("SKALD_IT_SHOTS") or "/tmp/skald-run-safety")


# --------------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def workdir(deployment_workdir) -> Path:
    return deployment_workdir


@pytest.fixture(scope="module")
def config_k7(workdir) -> Path:
    """A generated dataset and a config beside it whose privacy.k is 7 (not the default 50)."""
    import yaml

    from airflow_skald.core.data.generate import generate_dataset

    generated = generate_dataset(3000, 1000, seed=11, out_dir=workdir / "data")
    body = yaml.safe_load(generated.read_text())
    body["privacy"]["k"] = K_IN_FILE
    path = generated.with_name("skald-k7.yaml")
    path.write_text(yaml.safe_dump(body, sort_keys=False))
    return path


@pytest.fixture(scope="module")
def releases(dep, config_k7, workdir) -> dict:
    """Two releases made at once: ``a`` without k in the conf, ``b`` with k=10."""
    outs = {"a": workdir / "out" / "a", "b": workdir / "out" / "b"}
    confs = {
        "a": {"config": str(config_k7), "output_path": str(outs["a"])},
        "b": {"config": str(config_k7), "output_path": str(outs["b"]), "k": 10},
    }
    runs = {name: trigger(dep, conf) for name, conf in confs.items()}
    for run_id in runs.values():
        assert_run(dep, run_id, "success")
    return {"out": outs, "run": runs, "config": config_k7, "artifacts": workdir / "artifacts"}


# --------------------------------------------------------------------------- helpers
def trigger(dep: Deployment, conf: dict) -> str:
    return dep.trigger(DAG_ID, conf=conf, unpause=False)


def trigger_refusal(dep: Deployment, conf: dict) -> tuple[int, str]:
    """POST a run that the trigger refuses: the HTTP status and the ``detail`` it answers."""
    import urllib.error
    import urllib.request

    body = json.dumps({"logical_date": None, "conf": conf}).encode()
    req = urllib.request.Request(
        f"{dep.base_url}/api/v2/dags/{DAG_ID}/dagRuns",
        data=body,
        method="POST",
        headers={"Authorization": f"Bearer {dep.token()}", "Content-Type": "application/json"},
    )
    try:
        urllib.request.urlopen(req, timeout=30).close()
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())["detail"]
    raise AssertionError(f"the trigger accepted {conf}")


def assert_run(dep: Deployment, run_id: str, state: str) -> dict[str, dict]:
    """Wait for the run; assert its state; its task instances by task id."""
    got = dep.wait_for_run(DAG_ID, run_id, timeout=180)
    tis = {t["task_id"]: t for t in dep.task_instances(DAG_ID, run_id)}
    assert got == state, (run_id, {k: t["state"] for k, t in tis.items()}, task_log(dep, run_id))
    return tis


def assert_refused_in_encode(dep: Deployment, run_id: str, *fields: str) -> str:
    """The run failed in encode's first try, its later tasks never ran; the log names `fields`."""
    tis = assert_run(dep, run_id, "failed")
    assert tis["encode"]["state"] == "failed" and tis["encode"]["try_number"] == 1, tis["encode"]
    assert {tis[t]["state"] for t in ("histogram_lattice", "generalise")} == {"upstream_failed"}
    log = task_log(dep, run_id)
    for field in fields:
        assert field in log, (field, log)
    return log


def task_log(dep: Deployment, run_id: str, task_id: str = "encode", try_number: int = 1) -> str:
    """The task's log as Airflow serves it (structured events, incl. the error's text)."""
    return json.dumps(log_events(dep, run_id, task_id, try_number))


def log_events(dep: Deployment, run_id: str, task_id: str = "encode", try_number: int = 1):
    quoted = urllib.parse.quote(run_id, safe="")
    return dep.api(
        "GET",
        f"/dags/{DAG_ID}/dagRuns/{quoted}/taskInstances/{task_id}/logs/{try_number}"
        "?full_content=true",
    )["content"]


def files(folder: Path) -> dict[str, bytes]:
    """Every file of a folder tree and its bytes (a release, an artifact folder)."""
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def siblings(folder: Path) -> list[str]:
    """What sits beside an output (staging folders, leases): nothing a refused run leaves."""
    return sorted(p.name for p in folder.parent.iterdir())


def run_folders(artifacts: Path) -> set[str]:
    root = artifacts / DAG_ID
    return {p.name for p in root.iterdir()} if root.exists() else set()


def release_events(dep: Deployment) -> list[dict]:
    events = dep.api("GET", f"/assets/events?source_dag_id={DAG_ID}&limit=100")["asset_events"]
    return [e for e in events if (e.get("extra") or {}).get("skald_release")]


def events_for(dep: Deployment, out: Path) -> list[dict]:
    from airflow_skald.operators.release_event import release_uri

    return [e for e in release_events(dep) if e["uri"] == release_uri(str(out))]


# --------------------------------------------------------------------------- 1. k from the file
def test_conf_without_k_releases_at_the_files_k(dep, releases):
    out, run_id = releases["out"]["a"], releases["run"]["a"]
    assert "k" not in dep.run(DAG_ID, run_id)["conf"]
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["k"] == K_IN_FILE and manifest["verified"] is True
    (event,) = events_for(dep, out)
    assert event["extra"]["k"] == K_IN_FILE and event["extra"]["run_id"] == run_id
    # each task's first own log line states the run's settings
    for task_id in ("encode", "histogram_lattice", "generalise"):
        events = [e.get("event") or "" for e in log_events(dep, run_id, task_id)]
        own = events[events.index("::endgroup::", events.index("::group::Pre Execute")) + 1]
        assert own.startswith(f"SKALD {task_id} (all): config={releases['config']} "), own
        assert f" output={out} k={K_IN_FILE} suppression_limit=" in own, own


# --------------------------------------------------------------------------- 2. + 6. bad conf
def test_bad_conf_is_refused_before_any_work(dep, releases):
    """Out-of-range values and wrong types are refused by the trigger itself (HTTP 400 naming
    the rule: issue 18 item 13), an unknown key or a missing config fail the run in encode
    naming the field; no artifacts, no asset event, the release at the output untouched."""
    out, config = releases["out"]["a"], str(releases["config"])
    before, beside = files(out), siblings(out)
    folders = run_folders(releases["artifacts"])
    n_runs = len(runs_of(dep, DAG_ID))
    base = {"config": config, "output_path": str(out)}
    for bad, rule in (
        ({"k": "abc"}, r"\bk\b"),
        ({"k": 2.5}, "k must be an integer >= 2"),
        ({"k": 1, "suppression_limit": 0.1}, "k must be an integer >= 2"),
        ({"suppression_limit": 5}, "suppression_limit must be a number between 0 and 1"),
    ):
        with pytest.raises(DeploymentError, match=r"400.*" + rule):
            trigger(dep, {**base, **bad})
    # issue 30 item 3: what the trigger answers starts with the rule, not a schema dump
    for bad, line in (
        ({"k": 1}, "Invalid input for param k: 'k must be an integer >= 2' was expected"),
        (
            {"suppression_limit": 1.5},
            "Invalid input for param suppression_limit: "
            "'suppression_limit must be a number between 0 and 1' was expected",
        ),
    ):
        status, detail = trigger_refusal(dep, {**base, **bad})
        assert status == 400 and detail.splitlines()[0] == line, detail
    assert len(runs_of(dep, DAG_ID)) == n_runs  # refused: no run was made
    cases = {
        "K": ({**base, "K": 25}, ["unknown key 'K'"]),
        "config": (
            {"output_path": str(out), "k": 10},
            ["no SKALD config: set the DAG param 'config'"],
        ),
        # issue 30 item 2: {{ ds }} in a run triggered with "logical_date": null fails at once
        # (try 1, no retry after 300 s), saying what is missing
        "ds": (
            {**base, "output_path": f"{out.parent}/daily-{{{{ ds }}}}"},
            ["needs the run's logical date ({{ ds }}), and this run has none"],
        ),
    }
    runs = {name: trigger(dep, conf) for name, (conf, _) in cases.items()}
    for name, run_id in runs.items():
        assert_refused_in_encode(dep, run_id, *cases[name][1])
    assert run_folders(releases["artifacts"]) == folders  # not even the run's artifact folder
    assert files(out) == before and siblings(out) == beside


def test_other_settings_refused_then_overwrite_replaces(dep, releases):
    out, first = releases["out"]["b"], releases["run"]["b"]
    config = str(releases["config"])
    before, beside = files(out), siblings(out)
    assert json.loads(before["manifest.json"])["k"] == 10

    refused = trigger(dep, {"config": config, "output_path": str(out), "k": 50})
    log = assert_refused_in_encode(dep, refused, f"holds a release made with k=10 by run {DAG_ID}")
    assert "this run has k=50" in log and "DAG param overwrite" in log
    assert files(out) == before and siblings(out) == beside  # parts, manifest: byte-identical
    assert [e["extra"]["run_id"] for e in events_for(dep, out)] == [first]

    # the refused run left the output free: overwrite replaces the release at once
    again = trigger(dep, {"config": config, "output_path": str(out), "k": 50, "overwrite": True})
    assert_run(dep, again, "success")
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["k"] == 50 and manifest["verified"] is True
    # the replaced release's records kept beside it (issue 30 item 4)
    assert files(out) != before and siblings(out) == sorted(
        [*beside, f".{out.name}.skald-replaced"]
    )
    events = sorted(events_for(dep, out), key=lambda e: e["timestamp"])
    assert [(e["extra"]["k"], e["extra"]["run_id"]) for e in events] == [(10, first), (50, again)]
    # the releases page lists both releases of this output (the replaced one too), not the
    # refused run
    rows = dep._request("GET", "/skald/releases?format=json")
    listed = {(r["run_id"], r["privacy"]) for r in rows if r["release"] == events[0]["uri"]}
    assert listed == {(first, "k=10"), (again, "k=50")}, rows


# --------------------------------------------------------------------------- 4. events, retry
def test_one_event_per_release_and_a_retry_writes_the_same_bytes(dep, releases):
    from airflow_skald.operators.artifacts import safe_segment

    out, run_id = releases["out"]["a"], releases["run"]["a"]
    (event,) = events_for(dep, out)
    extra = event["extra"]
    assert event["source_run_id"] == extra["run_id"] == run_id and extra["dag_id"] == DAG_ID
    manifest = json.loads((out / "manifest.json").read_text())
    assert extra["k"] == manifest["k"] == K_IN_FILE
    assert extra["suppression_limit"] == "0.01" and extra["verified"] is True
    for key in ("node", "dm_star", "n_suppressed", "config_sha256", "input_fingerprint"):
        assert extra[key] == manifest[key], key
    before = files(out)
    run_dir = releases["artifacts"] / DAG_ID / safe_segment(run_id)
    assert (run_dir / "manifest.json").read_bytes() == before["manifest.json"]

    dep.api(
        "POST",
        f"/dags/{DAG_ID}/clearTaskInstances",
        {
            "dry_run": False,
            "dag_run_id": run_id,
            "task_ids": ["generalise"],
            "only_failed": False,
            "reset_dag_runs": True,
        },
    )
    tis = assert_run(dep, run_id, "success")
    assert tis["generalise"]["try_number"] == 2 and tis["encode"]["try_number"] == 1
    after = files(out)
    assert after["manifest.json"] == before["manifest.json"]
    parts = sorted(n for n in before if n.startswith("part-"))
    assert parts and all(after[n] == before[n] for n in parts) and sorted(after) == sorted(before)
    assert (run_dir / "manifest.json").read_bytes() == before["manifest.json"]
    (again,) = events_for(dep, out)
    assert again["id"] == event["id"]


# ------------------------------------------------- issue 18: stale retry, a failed run's lease
def clear(dep: Deployment, run_id: str, task_id: str) -> None:
    dep.clear(DAG_ID, run_id, task_id)


def sha256s(folder: Path) -> dict[str, str]:
    import hashlib

    return {name: hashlib.sha256(data).hexdigest() for name, data in files(folder).items()}


@pytest.mark.browser
def test_stale_retry_and_failed_runs_leave_the_newest_release(dep, releases, workdir):
    """Defect 1: run A (k=7) released, run B replaced it (k=25, overwrite); clearing A's
    generalise fails at once naming B, the bytes stay B's (sha256), no event is added.
    Defect 2: that failure, and a run refused in histogram_lattice (l=40 of an l-diversity
    criterion that cannot hold), free the output: a corrected run succeeds at once."""
    import yaml

    out = workdir / "stale" / "x"
    body = yaml.safe_load(releases["config"].read_text())
    body["input"]["path"] = str(releases["config"].parent / body["input"]["path"])
    body["privacy"]["l_diversity"] = [{"attribute": "health_condition", "l": 2}]
    config = workdir / "skald-l.yaml"
    config.write_text(yaml.safe_dump(body, sort_keys=False))
    conf = {"config": str(config), "output_path": str(out)}
    run_a = trigger(dep, conf)
    assert_run(dep, run_a, "success")
    run_b = trigger(dep, {**conf, "k": 25, "overwrite": True})
    assert_run(dep, run_b, "success")
    before = sha256s(out)
    manifest_b = json.loads((out / "manifest.json").read_text())
    assert manifest_b["k"] == 25

    clear(dep, run_a, "generalise")
    tis = assert_run(dep, run_a, "failed")
    assert tis["generalise"]["try_number"] == 2
    log = task_log(dep, run_a, "generalise", 2)
    assert f"was replaced by run {DAG_ID}-{run_b} after run {DAG_ID}-{run_a} began" in log, log
    assert sha256s(out) == before
    events = sorted(events_for(dep, out), key=lambda e: e["timestamp"])
    assert [(e["extra"]["run_id"], e["extra"]["k"]) for e in events] == [(run_a, 7), (run_b, 25)]
    # the failed retry left no lease, no staging folder; A's records are kept beside (item 4)
    assert siblings(out) == [".x.skald-replaced", "x"]

    refused = trigger(dep, {**conf, "l": 40, "overwrite": True})
    tis = assert_run(dep, refused, "failed")
    assert tis["histogram_lattice"]["state"] == "failed", tis
    assert siblings(out) == [".x.skald-replaced", "x"]
    # a lease left by a run killed without its callbacks (written here as that failed run would
    # have left it, 6 h to go): its DAG run is no longer running, so the next run takes it over
    now = time.time()
    lease = {
        "token": f"{DAG_ID}-{refused}",
        "nonce": "killed",
        "host": "elsewhere",
        "pid": None,
        "pid_started": None,
        "acquired": now,
        "renewed": now,
        "expires": now + 6 * 3600,
        "ttl_s": 6 * 3600,
        "holder": {"dag_id": DAG_ID, "run_id": refused},
    }
    (out.parent / ".x.skald-lease").write_text(json.dumps(lease))
    fixed = trigger(dep, {**conf, "k": 12, "overwrite": True})
    assert_run(dep, fixed, "success")
    assert json.loads((out / "manifest.json").read_text())["k"] == 12
    # the stale lease taken over, then released by the commit
    assert siblings(out) == [".x.skald-replaced", "x"]
    assert {"effective.json", "skald.yaml"} <= set(files(out))  # "from which config?"
    assert files(out)["skald.yaml"] == config.read_bytes()

    # item 11: the releases page marks replaced releases (by which run) and names the config
    rows = [r for r in dep._request("GET", "/skald/releases?format=json") if r["release"]]
    mine = {r["run_id"]: r for r in rows if r["release"] == events[0]["uri"]}
    assert {r: mine[r]["replaced_by"] for r in mine} == {
        run_a: run_b,
        run_b: fixed,
        fixed: None,
    }
    manifest = json.loads((out / "manifest.json").read_text())
    assert mine[fixed]["config"] == str(config)
    assert mine[fixed]["config_sha256"] == manifest["config_sha256"]
    assert mine[fixed]["input_fingerprint"] == manifest["input_fingerprint"]
    page = dep._request_text("/skald/releases")
    assert f"replaced by run {fixed}" in page and f"replaced by run {run_b}" in page
    browser = Browser(CHROMIUM)  # as an auditor sees it
    try:
        browser.send("Network.setCookie", name="_token", value=dep.token(), url=dep.base_url + "/")
        browser.goto(dep.base_url + "/skald/releases")
        text = browser.wait_for(PAGE_TEXT)
        SHOTS.mkdir(parents=True, exist_ok=True)
        browser.screenshot(SHOTS / "releases-replaced.png")
    finally:
        browser.close()
    assert f"replaced by run {run_b}" in text and f"replaced by run {fixed}" in text, text
    assert str(config) in text and manifest["config_sha256"][:12] in text

    # defect 3: links are served from the release folder, not the run-artifact store
    import shutil

    from airflow_skald.operators.artifacts import safe_segment

    for run_id in (run_b, fixed):
        shutil.rmtree(releases["artifacts"] / DAG_ID / safe_segment(run_id))
    quoted = urllib.parse.quote(fixed, safe="")
    served = dep._request_text(f"/skald/releases/{DAG_ID}/{quoted}/manifest.json")
    assert json.loads(served) == manifest
    assert dep._request_text(f"/skald/releases/{DAG_ID}/{quoted}/skald.yaml") == (
        config.read_text()
    )
    (event,) = [e for e in events_for(dep, out) if e["extra"]["run_id"] == fixed]
    assert event["extra"]["manifest_url"].endswith(
        f"/skald/releases/{DAG_ID}/{quoted}/manifest.json"
    )
    # issue 30 item 4: the replaced release's records were kept beside the output by the run
    # that replaced it: its links still work with its run artifacts gone (the store moved),
    # and its report says it was replaced, by which run (item 7)
    quoted_b = urllib.parse.quote(run_b, safe="")
    served = dep._request_text(f"/skald/releases/{DAG_ID}/{quoted_b}/manifest.json")
    assert json.loads(served) == manifest_b
    report_b = dep._request_text(f"/skald/releases/{DAG_ID}/{quoted_b}/report.html")
    assert f"This release was replaced by run {DAG_ID}-{fixed}:" in report_b
    assert "This release was replaced" not in dep._request_text(
        f"/skald/releases/{DAG_ID}/{quoted}/report.html"
    )
    rows = [r for r in dep._request("GET", "/skald/releases?format=json") if r["release"]]
    for row in (r for r in rows if r["release"] == events[0]["uri"]):  # never a dead link
        assert row.get("files_kept", True), row
        for key in ("report_url", "manifest_url", "effective_url", "yaml_url"):
            assert dep._request_text(urllib.parse.urlsplit(row[key]).path), (row, key)
    # a clear of a run whose artifacts are gone fails at once, saying so
    before = sha256s(out)
    clear(dep, fixed, "histogram_lattice")
    deadline = time.monotonic() + 120
    while True:  # the run's leaf (generalise) stays a success: wait for the cleared task
        ti = {t["task_id"]: t for t in dep.task_instances(DAG_ID, fixed)}["histogram_lattice"]
        if ti["try_number"] == 2 and ti["state"] in ("success", "failed", "up_for_retry"):
            break
        assert time.monotonic() < deadline, ti
        time.sleep(1)
    assert ti["state"] == "failed", ti  # at once: no retry
    log = task_log(dep, fixed, "histogram_lattice", 2)
    assert "the run's artifacts were removed or the [skald] artifacts setting changed" in log
    assert sha256s(out) == before


# ------------------------------------------------------------------ issue 18: OpenLineage
def test_openlineage_events_name_input_release_and_figures(dep, releases, workdir):
    """Item 12: the provider emits, for the run's generalise task, a COMPLETE event with the
    input dataset, the release as output dataset and the skald_release facet (figures only)."""
    out = releases["out"]["a"]
    manifest = json.loads((out / "manifest.json").read_text())
    log = workdir / "openlineage.jsonl"
    deadline = time.monotonic() + 60
    while True:  # the listener writes after the task finished
        events = [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []
        done = [
            e
            for e in events
            if e.get("eventType") == "COMPLETE"
            and any(o["name"] == str(out) for o in e.get("outputs") or [])
        ]
        if done:
            break
        assert time.monotonic() < deadline, [e.get("job", {}).get("name") for e in events]
        time.sleep(1)
    event = done[0]  # (a later test clears this run's generalise: a second, same event)
    assert event["job"]["name"] == f"{DAG_ID}.generalise"
    assert [(d["namespace"], d["name"]) for d in event["outputs"]] == [("file", str(out))]
    data = releases["config"].parent
    assert [d["namespace"] for d in event["inputs"]] == ["file"]
    assert event["inputs"][0]["name"].startswith(str(data))
    facet = event["run"]["facets"]["skald_release"]
    assert facet["k"] == K_IN_FILE == manifest["k"] and facet["verified"] is True
    for key in ("node", "dm_star", "n_suppressed", "n_records", "config_sha256"):
        assert facet[key] == manifest[key], key
    assert facet["l"] == [] and facet["t"] == [] and facet["suppression_limit"] == "0.01"
    # its _schemaURL resolves (no login) to the schema that describes it (issue 30)
    url, _, pointer = facet["_schemaURL"].partition("#")
    assert url == f"{dep.base_url}/skald/schemas/skald_release.json"
    schema = json.loads(urllib.request.urlopen(url, timeout=30).read())
    assert pointer == "/$defs/SkaldReleaseRunFacet" and "skald_release" in schema["description"]
    jsonschema.validate({"skald_release": facet}, schema)
    # the earlier tasks report the input they read, no release
    encode = [
        e
        for e in events
        if e["job"]["name"] == f"{DAG_ID}.encode"
        and e.get("eventType") == "COMPLETE"
        and any(d["name"] == event["inputs"][0]["name"] for d in e.get("inputs") or [])
    ]
    assert encode and all(not e.get("outputs") for e in encode)


# ------------------------------------------------------ issue 18: scheduled and asset-driven
def runs_of(dep: Deployment, dag_id: str) -> list[dict]:
    return dep.api("GET", f"/dags/{dag_id}/dagRuns?limit=100&order_by=logical_date")["dag_runs"]


def wait_runs(
    dep: Deployment, dag_id: str, count: int, days: tuple[str, ...] = (), timeout: float = 240
) -> list[dict]:
    """Wait until `dag_id` has `count` runs (of the logical `days`, if given), all finished."""
    deadline = time.monotonic() + timeout
    while True:
        runs = [
            r for r in runs_of(dep, dag_id) if not days or (r["logical_date"] or "")[:10] in days
        ]
        if len(runs) >= count and all(r["state"] in ("success", "failed") for r in runs):
            return runs
        assert time.monotonic() < deadline, runs
        time.sleep(2)


def reproducible(folder: Path) -> dict[str, str]:
    """sha256 of a release's files but the run record and the report that prints its timings
    (they differ between attempts; the manifest and parts are deterministic), and the report
    without its "Run" and "Time and memory" sections: what README says a rerun keeps
    (issue 30 item 9)."""
    import hashlib
    import re

    out = {k: v for k, v in sha256s(folder).items() if k not in ("run.json", "report.html")}
    report = (folder / "report.html").read_text(encoding="utf-8")
    steady = re.sub(r"<h2>(Run|Time and memory)</h2>.*?(?=<h2>|</body>)", "", report, flags=re.S)
    assert len(steady) < len(report)  # the two sections are there, and cut
    return {
        **out,
        "report.html outside Run, Time and memory": hashlib.sha256(steady.encode()).hexdigest(),
    }


def test_daily_partitions_backfill_and_asset_trigger(dep, releases, workdir):
    """Item 10: skald_daily over two logical dates by a backfill (input ``date={{ ds }}``,
    output ``releases/daily-{{ ds }}``, relative to the config's folder); one date run again
    whole and a clear of the other's generalise reproduce the bytes (sha256); skald_on_asset
    runs on an update of its input Asset and its release event names that input event."""
    import shutil

    import yaml

    from airflow_skald.core.data.generate import generate_dataset

    daily = workdir / "daily"
    days = ("2026-03-01", "2026-03-02")
    for seed, day in enumerate(days):
        generate_dataset(1200 + 300 * seed, 1000, seed=seed, out_dir=daily / f"date={day}")
    body = yaml.safe_load((daily / f"date={days[0]}" / "skald.yaml").read_text())
    body["privacy"]["k"] = 5
    body["input"]["path"] = "incoming"
    for day in days:
        (daily / f"date={day}" / "skald.yaml").unlink()
    (daily / "skald.yaml").write_text(yaml.safe_dump(body, sort_keys=False))
    shutil.copytree(daily / f"date={days[0]}", daily / "incoming")

    dep.wait_for_dag("skald_daily")
    dep.api("PATCH", "/dags/skald_daily", {"is_paused": False})
    backfill = {
        "dag_id": "skald_daily",
        "from_date": f"{days[0]}T00:00:00Z",
        "to_date": f"{days[1]}T00:00:00Z",
        "max_active_runs": 2,
    }
    dep.api("POST", "/backfills", backfill)
    # (unpaused, the scheduler also starts today's run: its partition does not exist, it fails)
    runs = wait_runs(dep, "skald_daily", 2, days)
    assert [r["state"] for r in runs] == ["success", "success"], runs
    outs = {day: daily / "releases" / f"daily-{day}" for day in days}
    first = {day: reproducible(out) for day, out in outs.items()}
    for seed, day in enumerate(days):
        manifest = json.loads((outs[day] / "manifest.json").read_text())
        assert manifest["n_records"] == 1200 + 300 * seed and manifest["verified"] is True
    assert sorted(p.name for p in (daily / "releases").iterdir()) == [f"daily-{d}" for d in days]

    # a date run again (a whole run cleared: what a backfill reprocessing it does, one run per
    # logical date) and a clear of the other date's generalise: the same bytes
    by_day = {
        day: next(r["dag_run_id"] for r in runs if r["logical_date"].startswith(day))
        for day in days
    }
    for day, tasks in (
        (days[0], ["generalise"]),
        (days[1], ["encode", "histogram_lattice", "generalise"]),
    ):
        clear_run = {
            "dry_run": False,
            "dag_run_id": by_day[day],
            "task_ids": tasks,
            "only_failed": False,
        }
        dep.api(
            "POST", "/dags/skald_daily/clearTaskInstances", {**clear_run, "reset_dag_runs": True}
        )
    for day in days:
        assert dep.wait_for_run("skald_daily", by_day[day], timeout=180) == "success"
        tis = {
            t["task_id"]: t["try_number"] for t in dep.task_instances("skald_daily", by_day[day])
        }
        assert tis["generalise"] == 2 and tis["encode"] == (1 if day == days[0] else 2), tis
    assert {day: reproducible(out) for day, out in outs.items()} == first

    # data-aware: an update of the input Asset (here through the REST API) runs skald_on_asset
    dep.wait_for_dag("skald_on_asset")
    dep.api("PATCH", "/dags/skald_on_asset", {"is_paused": False})
    uri = f"file://{daily / 'incoming'}"
    (asset,) = [a for a in dep.api("GET", "/assets?limit=100")["assets"] if a["uri"] == uri]
    made = dep.api("POST", "/assets/events", {"asset_id": asset["id"], "extra": {"batch": 1}})
    (run,) = wait_runs(dep, "skald_on_asset", 1)
    assert run["state"] == "success", run
    out = daily / "releases" / "from-asset"
    (event,) = [
        e
        for e in dep.api("GET", "/assets/events?source_dag_id=skald_on_asset")["asset_events"]
        if (e.get("extra") or {}).get("skald_release")
    ]
    assert event["uri"] == f"file://{out}"
    (source,) = event["extra"]["input_events"]
    assert source["uri"] == uri and source["timestamp"][:19] == made["timestamp"][:19]
    assert source["id"] == made["id"]  # the input event by its id (issue 30 item 10)
    assert json.loads((out / "manifest.json").read_text())["n_records"] == 1200


# --------------------------------------------------------------------------- 5. the trigger form
OPEN_TRIGGER = (
    "(() => { const b = [...document.querySelectorAll('button')]"
    ".find(e => e.innerText.trim() === 'Trigger' && !e.closest('[role=dialog]'));"
    " if (b) { b.click(); } return !!b; })()"
)
SUBMIT = (
    "(() => { const d = [...document.querySelectorAll('[role=dialog]')]"
    ".find(d => d.innerText.includes('Run Parameters')); const b = d && [...d.querySelectorAll("
    "'button')].filter(e => e.innerText.trim() === 'Trigger').pop(); if (b) { b.click(); }"
    " return !!b; })()"
)


def field(name: str) -> str:
    return f"document.querySelector('[role=dialog] [name=element_{name}]')"


LONGEST_TYPED = 12


def type_into(browser: Browser, name: str, text: str) -> None:
    """Focus the form field and type `text` key by key, as a user does (a value longer than
    LONGEST_TYPED, a path, is pasted), then Tab out."""
    focused = browser.evaluate(
        f"(() => {{ const e = {field(name)}; e.scrollIntoView({{block: 'center'}}); e.focus();"
        " e.select(); return document.activeElement === e; })()"
    )
    assert focused, name
    if len(text) > LONGEST_TYPED:  # a path, not what is under test: pasted in one event (keys
        browser.send("Input.insertText", text=text)  # typed this fast into React's controlled
    else:  # input are sometimes dropped on a loaded machine)
        for ch in text:
            browser.send(
                "Input.dispatchKeyEvent", type="keyDown", key=ch, text=ch, unmodifiedText=ch
            )
            browser.send("Input.dispatchKeyEvent", type="keyUp", key=ch)
    for kind in ("keyDown", "keyUp"):
        browser.send(
            "Input.dispatchKeyEvent", type=kind, key="Tab", code="Tab", windowsVirtualKeyCode=9
        )


def fill_and_submit(dep: Deployment, browser: Browser, typed: dict[str, str], shot: Path) -> None:
    """Open the DAG's trigger form, type the values, check the form shows them as typed (not
    rounded or clamped), and submit it."""
    browser.goto(f"{dep.base_url}/dags/{DAG_ID}")
    browser.wait_for(OPEN_TRIGGER)
    browser.wait_for(f"!!{field('k')}")
    for name, text in typed.items():
        type_into(browser, name, text)
    time.sleep(0.3)
    shown = {name: browser.evaluate(f"{field(name)}.value") for name in typed}
    assert shown == typed  # nothing rounded, clamped or reformatted in the field
    browser.evaluate(f"{field('k')}.scrollIntoView({{block: 'center'}})")
    browser.screenshot(shot)
    assert browser.evaluate(SUBMIT)


@pytest.mark.browser
def test_trigger_form_refuses_out_of_range_values_in_a_browser(dep, releases):
    """k=1 with suppression_limit=5, and k=2.5, typed into the real trigger form: the fields
    keep what was typed (no clamping to a bound), the trigger is refused with the rule shown on
    the page, and no run is made (issue 18 item 13)."""
    require_chromium()
    SHOTS.mkdir(parents=True, exist_ok=True)
    out, config = releases["out"]["a"], str(releases["config"])
    before, n_runs = files(out), len(runs_of(dep, DAG_ID))
    forms = {
        "k1-sl5": ({"k": "1", "suppression_limit": "5"}, "k must be an integer >= 2"),
        "k2.5": ({"k": "2.5"}, "k must be an integer >= 2"),
    }
    browser = Browser(CHROMIUM)
    try:
        browser.send("Network.setCookie", name="_token", value=dep.token(), url=dep.base_url + "/")
        for name, (typed, rule) in forms.items():
            typed = {"config": config, "output_path": str(out), **typed}
            fill_and_submit(dep, browser, typed, SHOTS / f"form-{name}-filled.png")
            text = browser.wait_for(
                f"(() => {{ const t = {PAGE_TEXT}; return t.includes({json.dumps(rule)}) ? t : ''; }})()"
            )
            browser.screenshot(SHOTS / f"form-{name}-refused.png")
            assert rule in text
            assert f"/dags/{DAG_ID}/runs/" not in browser.evaluate("location.pathname")
    finally:
        browser.close()
    assert len(runs_of(dep, DAG_ID)) == n_runs and files(out) == before


# the trigger form's request, recorded in the page as it is sent (the UI posts with XHR)
RECORD_POSTS = """
window.__posts = [];
const send = XMLHttpRequest.prototype.send, open = XMLHttpRequest.prototype.open;
XMLHttpRequest.prototype.open = function (method, url) {
  this.__request = [method, String(url)]; return open.apply(this, arguments); };
XMLHttpRequest.prototype.send = function (body) {
  if (body) { window.__posts.push([...this.__request, String(body)]); }
  return send.apply(this, arguments); };
"""


def clear_field(browser: Browser, name: str) -> None:
    """Select what the field holds and delete it with Backspace, as a user empties a field."""
    assert browser.evaluate(
        f"(() => {{ const e = {field(name)}; e.focus(); e.select(); return true; }})()"
    )
    for kind in ("keyDown", "keyUp"):
        browser.send(
            "Input.dispatchKeyEvent",
            type=kind,
            key="Backspace",
            code="Backspace",
            windowsVirtualKeyCode=8,
        )


def posted_conf(browser: Browser) -> dict:
    """The conf of the one trigger request the form sent."""
    posts = [p for p in browser.evaluate("window.__posts") if p[0] == "POST"]
    (post,) = [p for p in posts if p[1].endswith(f"/dags/{DAG_ID}/dagRuns")]
    return json.loads(post[2])["conf"]


@pytest.mark.browser
def test_trigger_form_refuses_a_non_number_and_empty_means_the_files_k(dep, releases, workdir):
    """Issue 40 item 6: `abc` typed into k. Airflow 3.3's number field sends anything that is no
    number as null, the same as an empty field (the run used the file's k); the numeric params
    are now fields that send what was typed (`Setting.param_schema`): the trigger refuses it
    with one line naming k (on the page, and the REST API for the very conf the form sent), no
    run is made and nothing is written. The same field emptied again means the file's k."""
    require_chromium()
    SHOTS.mkdir(parents=True, exist_ok=True)
    out, config = workdir / "out" / "form-empty-k", str(releases["config"])
    line = "Invalid input for param k: 'k must be an integer >= 2' was expected"
    n_runs, folders = len(runs_of(dep, DAG_ID)), run_folders(releases["artifacts"])
    browser = Browser(CHROMIUM)
    try:
        browser.send("Page.addScriptToEvaluateOnNewDocument", source=RECORD_POSTS)
        browser.send("Network.setCookie", name="_token", value=dep.token(), url=dep.base_url + "/")
        typed = {"config": config, "output_path": str(out), "k": "abc"}
        fill_and_submit(dep, browser, typed, SHOTS / "form-kabc-filled.png")
        text = browser.wait_for(
            f"(() => {{ const t = {PAGE_TEXT}; return t.includes({json.dumps(line)}) ? t : ''; }})()"
        )
        browser.evaluate(  # the refusal, where the form shows it, into the screenshot
            "[...document.querySelectorAll('[role=dialog] *')].filter(e => !e.children.length"
            f" && (e.innerText || '').includes({json.dumps(line)})).pop().scrollIntoView()"
        )
        browser.screenshot(SHOTS / "form-kabc-refused.png")
        assert line in text and f"/dags/{DAG_ID}/runs/" not in browser.evaluate("location.pathname")
        sent = posted_conf(browser)
        assert sent["k"] == "abc" and sent["output_path"] == str(out), sent
        status, detail = trigger_refusal(dep, sent)  # the same conf through the REST API
        assert status == 400 and detail.splitlines()[0] == line, detail
        assert len(runs_of(dep, DAG_ID)) == n_runs  # no run
        assert not out.exists() and run_folders(releases["artifacts"]) == folders

        # typed, then emptied: the file's k (privacy.k = 7)
        browser.goto(f"{dep.base_url}/dags/{DAG_ID}")
        browser.evaluate("window.__posts = []")
        browser.wait_for(OPEN_TRIGGER)
        browser.wait_for(f"!!{field('k')}")
        for name, text in typed.items():
            type_into(browser, name, text)
        clear_field(browser, "k")
        time.sleep(0.3)
        assert browser.evaluate(f"{field('k')}.value") == ""
        browser.screenshot(SHOTS / "form-k-emptied.png")
        assert browser.evaluate(SUBMIT)
        path = browser.wait_for(
            f"(() => {{ const p = location.pathname; return p.includes('/dags/{DAG_ID}/runs/') ? p : ''; }})()"
        )
        assert posted_conf(browser)["k"] is None
    finally:
        browser.close()
    run_id = urllib.parse.unquote(path.rsplit("/runs/", 1)[1].split("/")[0])
    assert_run(dep, run_id, "success")
    assert json.loads((out / "manifest.json").read_text())["k"] == K_IN_FILE
