"""Release identity and the "SKALD releases" page (issue 12, items 2 and 5).

- Fast checks of ``release_event.py`` (Asset URI, event extra schema) and of the page's HTML
  (escaping), without Airflow processes.
- ``dag.test()`` in this process: a run adds one asset event on the Asset of its output location;
  re-running the same run adds none.
- A real deployment (api-server, scheduler, dag-processor; LocalExecutor; PostgreSQL in a database
  of its own, dropped after): ``skald_anonymise`` triggered twice through the REST API, to two
  output locations with different k; the asset events are checked through the REST API; the
  releases page is opened in headless Chromium (driven over the DevTools protocol, as a logged-in
  user: the simple auth manager's JWT in the UI's ``_token`` cookie), both directly and embedded
  in the Airflow UI through its nav entry; the test asserts on the text the browser rendered and
  keeps screenshots (``SKALD_IT_SHOTS``, default the test's tmp folder).
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import json
import os
import sys
import time
import types
import urllib.parse
import urllib.request
from pathlib import Path

import pytest
from helpers_browser import CHROMIUM, PAGE_TEXT, Browser, require_chromium

TESTS = Path(__file__).resolve().parents[1]
REPO = TESTS.parent
sys.path.insert(0, str(Path(__file__).resolve().parent))
DAG_ID = "skald_anonymise"


# --------------------------------------------------------------------------- no processes
def test_release_uri_is_one_normalised_location():
    from airflow_skald.operators.release_event import release_asset, release_uri

    assert release_uri("/data/out/") == "file:///data/out"
    assert release_uri("/data/./x/../out//") == "file:///data/out"
    assert release_uri("file:///data/out/") == "file:///data/out"
    assert release_uri("/data/my release") == "file:///data/my%20release"
    rel = release_uri("rel/out")
    assert rel == "file://" + os.path.abspath("rel/out")
    assert release_uri("s3://aws_default@Bucket/prefix/rel/") == "s3://bucket/prefix/rel"
    assert release_uri("s3://bucket/prefix") == "s3://bucket/prefix"
    assert release_uri("S3://bucket/a/./b") == "s3://bucket/a/b"
    asset = release_asset("/data/out")
    assert asset.name == asset.uri == "file:///data/out"


def test_event_extra_schema():
    from airflow_skald.operators.release_event import EXTRA_KEYS, decimal_string, release_extra

    manifest = {
        "k": 10,
        "suppression_limit": 0.01,
        "node": {"age": 2, "zip": 1},
        "node_paper": "((3, 2))",
        "dm_star": 1234,
        "n_records": 4000,
        "n_suppressed": 7,
        "verified": True,
        "config_sha256": "c" * 64,
        "input_fingerprint": "f" * 64,
        "privacy_models": [
            {"model": "k-anonymity", "k": 10},
            {"model": "distinct-l-diversity", "l": 3, "attribute": "disease"},
        ],
    }
    extra = release_extra(manifest, output="/x/out/", dag_id="d", run_id="manual__1", links={})
    assert tuple(extra) == EXTRA_KEYS
    assert extra["skald_release"] == 1 and extra["release"] == "file:///x/out"
    assert extra["suppression_limit"] == "0.01"
    assert extra["criteria"] == [{"model": "distinct-l-diversity", "l": 3, "attribute": "disease"}]
    assert extra["manifest_url"].endswith("/skald/releases/d/manual__1/manifest.json")
    assert extra["report_url"].endswith("/skald/releases/d/manual__1/report.html")
    assert extra["config"] == "" and extra["input_events"] == []
    json.dumps(extra)  # JSON-safe
    assert decimal_string(1e-05) == "0.00001" and decimal_string(0.0) == "0.0"
    assert decimal_string("0.050") == "0.050" and decimal_string(1) == "1"
    with pytest.raises(KeyError, match="dm_star"):
        release_extra(
            {k: v for k, v in manifest.items() if k != "dm_star"},
            output="/x",
            dag_id="d",
            run_id="r",
            links={},
        )


def test_input_event_named_by_its_id():
    """Issue 30 item 10: the triggering event (no id of its own in the task's context) is
    found among its Asset's events at its timestamp: same source and extra; none or two
    alike -> None."""
    from airflow_skald.operators.release_event import same_event_id

    at = dt.datetime(2026, 3, 1, 12, 0, 1, 123456, tzinfo=dt.UTC)
    posted = types.SimpleNamespace(  # a REST-posted event: no source DAG or run
        timestamp=at,
        source_dag_id=None,
        source_run_id=None,
        source_task_id=None,
        source_map_index=None,
        extra={"batch": 1},
    )
    other = types.SimpleNamespace(**{**vars(posted), "extra": {"batch": 2}})
    by_dag = types.SimpleNamespace(**{**vars(posted), "source_dag_id": "up", "source_run_id": "r"})
    events = [
        types.SimpleNamespace(id=7, **vars(other)),
        types.SimpleNamespace(id=8, **vars(posted)),
        types.SimpleNamespace(id=9, **vars(by_dag)),
    ]
    assert same_event_id(posted, events) == 8
    assert same_event_id(by_dag, events) == 9
    assert same_event_id(posted, [*events, types.SimpleNamespace(id=10, **vars(posted))]) is None
    assert same_event_id(posted, []) is None


def test_emit_adds_one_alias_event_unless_the_run_has_one(monkeypatch):
    from airflow.sdk.execution_time.context import OutletEventAccessors

    from airflow_skald.operators import release_event as R

    manifest = {
        "k": 3,
        "suppression_limit": 0.05,
        "node": {"a": 1},
        "node_paper": "((2))",
        "dm_star": 9,
        "n_records": 9,
        "n_suppressed": 0,
        "verified": True,
        "config_sha256": "c",
        "input_fingerprint": "f",
    }
    dag = types.SimpleNamespace(dag_id="d")

    def emit(seen):
        monkeypatch.setattr(R, "already_emitted", lambda *a: seen)
        events = OutletEventAccessors()
        ctx = {"dag": dag, "run_id": "r1", "outlet_events": events}
        extra = R.emit_release_event(ctx, [R.RELEASE_ALIAS], manifest, {"output_path": "/o/"})
        return extra, events[R.RELEASE_ALIAS].asset_alias_events

    extra, added = emit(False)
    assert len(added) == 1 and added[0].extra == extra
    assert added[0].dest_asset_key.uri == added[0].dest_asset_key.name == "file:///o"
    assert extra["suppression_limit"] == "0.05" and extra["run_id"] == "r1"
    assert emit(True)[1] == []  # this run's release already has its event (a cleared task)
    assert emit(None)[1] != []  # could not tell: emit rather than lose the record


def test_releases_page_escapes_everything():
    from airflow_skald.plugin import release_rows, render_releases

    bad = "<script>alert(1)</script>"
    event = types.SimpleNamespace(
        extra={
            "skald_release": 1,
            "release": f"file:///x/{bad}",
            "k": 5,
            "criteria": [{"model": "t-closeness", "t": 0.2, "attribute": bad}],
            "node": {bad: 1},
            "node_paper": bad,
            "dm_star": 1,
            "n_suppressed": 0,
            "n_records": 9,
            "verified": True,
        },
        source_dag_id="dag",
        source_run_id=f'run"{bad}',
        timestamp=dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC),
    )
    other = types.SimpleNamespace(
        extra={"x": 1}, source_dag_id="d", source_run_id="r", timestamp=None
    )
    rows = release_rows([event, other])
    assert len(rows) == 1 and rows[0]["privacy"] == f"k=5, t=0.2 ({bad})"
    page = render_releases(rows, limit=200)
    assert "<script>" not in page and "&lt;script&gt;" in page
    assert "2026-01-02 03:04:05 UTC" in page
    # the links are built from the event's own DAG and run, quoted into one path segment
    assert "/skald/releases/dag/run%22%3Cscript%3Ealert%281%29%3C%2Fscript%3E/report.html" in page


def test_releases_page_links_the_replacing_run_and_shows_hashes_whole():
    """Issue 30 items 4 and 7: "replaced by run X" links to run X; config_sha256 and
    input_fingerprint whole, in one unbreakable, selectable element; a replaced release whose
    records are kept nowhere shows them as gone, not as dead links; its report, when served,
    says at its top that it was replaced and by which run."""
    from airflow_skald.plugin import release_rows, render_releases, with_replaced_banner

    def event(run_id: str, second: int, k: int):
        return types.SimpleNamespace(
            extra={
                "skald_release": 1,
                "release": "file:///o",
                "k": k,
                "verified": True,
                "config_sha256": "c" * 64,
                "input_fingerprint": "f" * 64,
            },
            timestamp=dt.datetime(2026, 1, 2, 3, 4, second, tzinfo=dt.UTC),
            source_dag_id="other_dag" if run_id == "new" else "d",
            source_run_id=run_id,
            id=second,
        )

    rows = release_rows([event("old", 1, 5), event("new", 2, 6)])
    assert [(r["run_id"], r["replaced_by"]) for r in rows] == [("new", None), ("old", "new")]
    assert rows[1]["replaced_by_url"].endswith("/dags/other_dag/runs/new")
    page = render_releases(rows, limit=200)
    assert f'href="{rows[1]["replaced_by_url"]}" target="_top">replaced by run new</a>' in page
    assert page.count(f'<code class="hash">{"c" * 64}</code>') == 2
    assert page.count(f'<code class="hash">{"f" * 64}</code>') == 2
    assert "code.hash{white-space:nowrap;word-break:normal;user-select:all" in page
    rows[1]["files_kept"] = False
    page = render_releases(rows, limit=200)
    assert page.count(">report</a>") == 1 and "YAML: gone (replaced, and no copy" in page

    report = b"<!DOCTYPE html><html><head></head><body class='x'><h1>r</h1></body></html>"
    shown = with_replaced_banner(report, "by run d-new", "file:///o").decode()
    assert shown.startswith("<!DOCTYPE html><html><head></head><body class='x'><div ")
    assert "This release was replaced by run d-new: file:///o now holds another" in shown
    assert shown.endswith("<h1>r</h1></body></html>")


# the page's layout as Chromium draws it: every column's box (header text -> [left, right]),
# the widths, and each piece of a URI, path or run id with the number of lines it takes
LAYOUT = """(() => {
  const box = e => e.getBoundingClientRect();
  const columns = Object.fromEntries([...document.querySelectorAll('thead th')]
    .map(th => [th.innerText.trim(), [box(th).left, box(th).right]]));
  const lines = e => { const r = document.createRange(); r.selectNodeContents(e);
    return new Set([...r.getClientRects()].map(x => Math.round(x.top))).size; };
  const pieces = [...document.querySelectorAll('td .piece')]
    .map(p => [p.textContent, p.getClientRects().length]);
  const strings = [...new Set([...document.querySelectorAll('td .piece')].map(p => p.parentNode))]
    .map(e => [...e.querySelectorAll(':scope > .piece')].map(p => p.textContent));
  const outputs = [...document.querySelectorAll('td.output')]
    .map(td => [td.firstChild.parentNode.innerText, lines(td)]);
  const links = [...document.querySelectorAll('td.links a')].map(a => box(a).right);
  return {columns, pieces, strings, outputs, links, viewport: innerWidth,
          scroll: document.documentElement.scrollWidth};
})()"""

LONG_URIS = (
    "file:///srv/anonymisation/hospital-admissions/releases/quarterly_release_2026_q4/k10-l3",
    "postgres://warehouse.example.org:5432/clinical_research/research/patients_k3_l2",
    "s3://hospital-data-lake/anonymised/admissions/2026-q4/k5-l3-release",
)


def layout_rows() -> list[dict]:
    """Releases with long output URIs, run ids and config paths, one of them replaced."""
    from airflow_skald.plugin import release_rows

    def event(i: int, release: str, run_id: str):
        return types.SimpleNamespace(
            extra={
                "skald_release": 1,
                "release": release,
                "k": 10,
                "criteria": [{"model": "distinct-l-diversity", "l": 3, "attribute": "disease"}],
                "node": {"age": 2, "zipcode": 3, "sex": 0, "education": 1, "marital_status": 2},
                "node_paper": "[2, 3, 0, 1, 2]",
                "dm_star": 1234567890123,
                "n_suppressed": 1234,
                "n_records": 3000000,
                "suppression_limit": "0.01",
                "verified": True,
                "config": "/srv/anonymisation/hospital-admissions/configs/quarterly/skald.yaml",
                "config_sha256": "c" * 64,
                "input_fingerprint": "f" * 64,
            },
            source_dag_id="skald_from_postgres",
            source_run_id=run_id,
            id=i,
            timestamp=dt.datetime(2026, 1, 2, 3, 4, i, tzinfo=dt.UTC),
        )

    runs = ("manual__2026-12-02T01:35:11.668022+00:00", "scheduled__2026-12-01T00:00:00+00:00")
    events = [event(i, uri, runs[i % 2]) for i, uri in enumerate(LONG_URIS)]
    events.append(event(9, LONG_URIS[0], "manual__2026-12-03T08:00:00.000001+00:00"))
    return release_rows(events)


@pytest.mark.browser
@pytest.mark.parametrize("width", [1216, 1280, 1600])
def test_releases_page_fits_and_wraps_uris_between_words(width, tmp_path):
    """Issue 40 item 6: the Links column was cut at 1600 px and output URIs broken inside
    words. In Chromium at 1280 and 1600 px, and 1216 (the page embedded in the Airflow UI
    of a 1280 px window, beside its navigation bar): nothing is wider than the window, every
    column ends inside it; a URI, path or run id breaks only between its pieces (after a "/",
    or a "_"/"-" in a long name), never inside one, and a long URI does wrap at 1280."""
    from airflow_skald.plugin import render_releases

    require_chromium()
    shots = Path(os.environ.get("SKALD_IT_SHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    page = tmp_path / "releases.html"
    page.write_text(render_releases(layout_rows(), limit=200), encoding="utf-8")
    browser = Browser(CHROMIUM, width=width, height=900)
    try:
        browser.goto(page.as_uri())
        got = browser.wait_for(LAYOUT)
        browser.screenshot(shots / f"skald-releases-{width}px.png")
    finally:
        browser.close()
    assert got["viewport"] == width and got["scroll"] <= width, got
    assert list(got["columns"])[-1] == "Links"
    assert all(right <= width for _, right in got["columns"].values()), got["columns"]
    assert got["links"] and max(got["links"]) <= width
    assert got["pieces"] and all(n == 1 for _, n in got["pieces"]), got["pieces"]
    for pieces in got["strings"]:  # a string breaks only after a separator
        assert all(p[-1] in "/_-. T" for p in pieces[:-1]), pieces
    outputs = {text.split("\n")[0]: lines for text, lines in got["outputs"]}
    assert set(outputs) == set(LONG_URIS)  # whole, in order, nothing dropped by the pieces
    if width <= 1280:
        assert max(outputs.values()) > 1, outputs  # the long URIs wrap (between pieces)


# --------------------------------------------------------------------------- dag.test()
@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    from airflow_skald.core.data.generate import generate_dataset

    return generate_dataset(3000, 1000, seed=5, out_dir=tmp_path_factory.mktemp("rel") / "data")


def _events_for(uri: str) -> list:
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.utils.session import create_session
    from sqlalchemy import select

    with create_session() as session:
        rows = session.execute(
            select(AssetEvent.source_run_id, AssetEvent.extra)
            .join(AssetModel, AssetModel.id == AssetEvent.asset_id)
            .where(AssetModel.uri == uri)
        ).all()
        return [(r[0], r[1]) for r in rows]


def test_one_event_per_release_in_dag_test(airflow_home, dataset, tmp_path, monkeypatch):
    from airflow.dag_processing.dagbag import DagBag

    from airflow_skald.operators.dag_params import PARAMS
    from airflow_skald.operators.release_event import EXTRA_KEYS, release_uri

    monkeypatch.setenv("AIRFLOW__SKALD__ARTIFACTS", str(tmp_path / "artifacts"))
    bag = DagBag(str(REPO / "dags"))
    dag = bag.dags[DAG_ID]
    out = tmp_path / "release"
    conf = {p: v.value for p, v in PARAMS.items()}
    conf.update({"config": str(dataset), "output_path": str(out), "k": 4})
    when = dt.datetime(2026, 3, 1, tzinfo=dt.UTC)
    first = dag.test(run_conf=conf, logical_date=when, run_after=when)
    assert first.state == "success"
    events = _events_for(release_uri(str(out)))
    assert len(events) == 1, events
    run_id, extra = events[0]
    assert run_id == first.run_id and extra["run_id"] == first.run_id
    assert tuple(extra) == EXTRA_KEYS or set(extra) == set(EXTRA_KEYS)
    assert extra["k"] == 4 and extra["verified"] is True and extra["dag_id"] == DAG_ID
    manifest = json.loads((out / "manifest.json").read_text())
    assert extra["dm_star"] == manifest["dm_star"] and extra["node"] == manifest["node"]

    again = dag.test(run_conf=conf, logical_date=when, run_after=when)  # the same run, re-run
    assert again.state == "success" and again.run_id == first.run_id
    assert len(_events_for(release_uri(str(out)))) == 1


FRAME_TEXT = (
    "(() => { const f = [...document.querySelectorAll('iframe')]"
    ".find(f => (f.getAttribute('src') || '').includes('skald/releases'));"
    " return f && f.contentDocument && f.contentDocument.body"
    " ? f.contentDocument.body.innerText : ''; })()"
)


FRAME = (
    "[...document.querySelectorAll('iframe')]"
    ".find(f => (f.getAttribute('src') || '').includes('skald/releases'))"
)
CLICK_BROWSE = (
    "(() => { const b = [...document.querySelectorAll('button, a')]"
    ".find(e => e.innerText.trim() === 'Browse'); if (b) { b.click(); } return !!b; })()"
)
MENU_ENTRY = (  # the innermost element showing the nav entry's name (the menu is a portal)
    "[...document.querySelectorAll('body *')]"
    ".filter(e => e.children.length === 0 && e.textContent.trim() === 'SKALD releases').pop()"
)


# --------------------------------------------------------------------------- deployment
@pytest.mark.deployment
@pytest.mark.browser
def test_releases_page_in_a_real_deployment(dep, dataset, tmp_path):
    if importlib.util.find_spec("asyncpg") is None:
        pytest.fail("asyncpg is not installed (Airflow's api-server needs it for PostgreSQL)")
    require_chromium()
    shots = Path(os.environ.get("SKALD_IT_SHOTS") or tmp_path)
    shots.mkdir(parents=True, exist_ok=True)
    outs = {5: tmp_path / "releases" / "a", 12: tmp_path / "releases" / "b"}
    t0 = time.monotonic()
    runs = {
        k: dep.trigger(DAG_ID, conf={"config": str(dataset), "output_path": str(out), "k": k})
        for k, out in outs.items()
    }
    for k, run_id in runs.items():
        state = dep.wait_for_run(DAG_ID, run_id, timeout=240)
        assert state == "success", (k, dep.task_instances(DAG_ID, run_id), dep.logs())
    manifests = {k: json.loads((out / "manifest.json").read_text()) for k, out in outs.items()}

    # --- REST API: one Asset per output location, one event each, extras hold k and run_id
    from airflow_skald.operators.release_event import EXTRA_KEYS, release_uri

    def own_events() -> list[dict]:  # the shared deployment holds other tests' runs too
        got = dep.api("GET", f"/assets/events?source_dag_id={DAG_ID}&limit=100")
        return [e for e in got["asset_events"] if e["source_run_id"] in runs.values()]

    events = own_events()
    assert len(events) == 2, events
    by_uri = {e["uri"]: e for e in events}
    assert set(by_uri) == {release_uri(str(out)) for out in outs.values()}
    for k, out in outs.items():
        ev = by_uri[release_uri(str(out))]
        extra = ev["extra"]
        assert set(extra) >= set(EXTRA_KEYS), extra
        assert extra["k"] == k and extra["run_id"] == runs[k] == ev["source_run_id"]
        assert extra["release"] == release_uri(str(out))
        assert extra["dm_star"] == manifests[k]["dm_star"]
        assert extra["node"] == manifests[k]["node"] and extra["verified"] is True
        assert extra["report_url"] == (
            f"{dep.base_url}/skald/releases/{DAG_ID}/{urllib.parse.quote(runs[k], safe='')}"
            "/report.html"
        )
    # a cleared (re-run) generalise task re-publishes its release without a second event
    dep.api(
        "POST",
        f"/dags/{DAG_ID}/clearTaskInstances",
        {
            "dry_run": False,
            "dag_run_id": runs[5],
            "task_ids": ["generalise"],
            "only_failed": False,
            "reset_dag_runs": True,
        },
    )
    assert dep.wait_for_run(DAG_ID, runs[5], timeout=180) == "success"
    tis = {t["task_id"]: t for t in dep.task_instances(DAG_ID, runs[5])}
    assert tis["generalise"]["try_number"] == 2
    again = own_events()
    assert len(again) == 2, again
    aliases = dep.api("GET", "/assets/aliases?name_pattern=skald-release")["asset_aliases"]
    assert [a["name"] for a in aliases] == ["skald-release"]

    # --- both extra links on every task of the run; the report link serves the report
    for task_id in ("encode", "histogram_lattice", "generalise"):
        links = dep.api("GET", f"/dags/{DAG_ID}/dagRuns/{runs[5]}/taskInstances/{task_id}/links")[
            "extra_links"
        ]
        assert links["SKALD report"] == by_uri[release_uri(str(outs[5]))]["extra"]["report_url"], (
            task_id,
            links,
        )
        assert links["SKALD manifest"].endswith("/manifest.json"), (task_id, links)
    req = urllib.request.Request(
        links["SKALD report"], headers={"Authorization": f"Bearer {dep.token()}"}
    )
    with urllib.request.urlopen(req, timeout=30) as resp:
        assert resp.headers["content-type"].startswith("text/html")
        assert b"<html" in resp.read(2000).lower()

    # --- the same rows as JSON
    listed = dep._request("GET", "/skald/releases?format=json")
    rows = [r for r in listed if r["run_id"] in runs.values()]
    assert sorted((r["run_id"], r["privacy"]) for r in rows) == sorted(
        (runs[k], f"k={k}") for k in outs
    )

    # --- the page needs Airflow auth
    with pytest.raises(urllib.error.HTTPError) as denied:
        urllib.request.urlopen(dep.base_url + "/skald/releases", timeout=30)
    assert denied.value.code in (401, 403)

    # --- the nav entry is registered
    plugins = dep.api("GET", "/plugins")["plugins"]
    skald = next(p for p in plugins if p["name"] == "skald")
    view = next(v for v in skald["external_views"] if v["name"] == "SKALD releases")
    assert view["href"] == "skald/releases" and view["category"] == "browse"

    # --- headless Chromium, logged in through the UI's cookie
    browser = Browser(CHROMIUM)
    try:
        browser.send("Network.setCookie", name="_token", value=dep.token(), url=dep.base_url + "/")
        browser.goto(dep.base_url + "/skald/releases")
        text = browser.wait_for(PAGE_TEXT)
        browser.screenshot(shots / "skald-releases.png")
        assert "SKALD releases" in text and f"{len(listed)} release(s)" in text, text
        for k, out in outs.items():
            assert runs[k] in text, text
            assert release_uri(str(out)) in text
            node = ", ".join(f"{n}={lv}" for n, lv in manifests[k]["node"].items())
            assert node in text, (node, text)
            assert str(manifests[k]["dm_star"]) in text
        assert "k=5" in text and "k=12" in text
        hrefs = browser.evaluate(
            "[...document.querySelectorAll('a')].map(a => a.textContent + ' ' + a.href)"
        )
        for k in outs:
            quoted = urllib.parse.quote(runs[k], safe="")
            files = f"{dep.base_url}/skald/releases/{DAG_ID}/{quoted}"
            assert f"report {files}/report.html" in hrefs
            assert f"manifest {files}/manifest.json" in hrefs
            assert f"effective config {files}/effective.json" in hrefs
            assert f"YAML {files}/skald.yaml" in hrefs
            assert f"{runs[k]} {dep.base_url}/dags/{DAG_ID}/runs/{quoted}" in hrefs
            # "from which config?": path, config_sha256, input_fingerprint on the page
            assert manifests[k]["config_sha256"][:12] in text
            assert manifests[k]["input_fingerprint"][:12] in text
        # following a link in the browser (cookie auth) opens that run's report
        browser.goto(by_uri[release_uri(str(outs[12]))]["extra"]["report_url"])
        assert browser.wait_for("document.title")

        # as a user finds it: the Airflow UI's Browse menu -> "SKALD releases", embedded
        browser.goto(dep.base_url + "/")
        browser.wait_for(CLICK_BROWSE)
        browser.wait_for(f"!!{MENU_ENTRY}")
        time.sleep(0.5)
        browser.screenshot(shots / "skald-browse-menu.png")
        assert browser.evaluate(f"{MENU_ENTRY}.click() || true")
        framed = browser.wait_for(
            f"(() => {{ const t = {FRAME_TEXT}; return t.includes('k=12') ? t : ''; }})()",
            timeout=60,
        )
        # the UI's route for the nav entry (it appends the embedded page's path)
        assert browser.evaluate("location.pathname").startswith("/plugin/skald-releases")
        time.sleep(1.0)  # let the UI chrome finish drawing before the screenshot
        browser.screenshot(shots / "skald-releases-in-airflow-ui.png")
        assert runs[5] in framed and runs[12] in framed
    finally:
        browser.close()
    # issue 40 item 6: embedded in the UI of a 1280 and a 1600 px window, the page fits its
    # frame (the Links column too) and no piece of a URI or run id is broken
    for width in (1280, 1600):
        browser = Browser(CHROMIUM, width=width, height=900)
        try:
            browser.send(
                "Network.setCookie", name="_token", value=dep.token(), url=dep.base_url + "/"
            )
            browser.goto(dep.base_url + "/plugin/skald-releases")
            browser.wait_for(
                f"(() => {{ const t = {FRAME_TEXT}; return t.includes('k=12') ? t : ''; }})()",
                timeout=60,
            )
            frame = browser.evaluate(f"(() => {{ const f = {FRAME}; const r = f.getBoundingClientRect();"
                                     " return [r.left, r.right, innerWidth]; })()")  # fmt: skip
            got = browser.evaluate(f"{FRAME}.contentWindow.eval({json.dumps(LAYOUT)})")
            time.sleep(1.0)
            browser.screenshot(shots / f"skald-releases-in-airflow-ui-{width}px.png")
        finally:
            browser.close()
        assert frame[1] <= frame[2] == width, frame
        assert got["scroll"] <= got["viewport"] <= frame[1] - frame[0], (got, frame)
        assert max(right for _, right in got["columns"].values()) <= got["viewport"], got
        assert got["links"] and max(got["links"]) <= got["viewport"], got
        assert got["pieces"] and all(n == 1 for _, n in got["pieces"]), got["pieces"]
    assert time.monotonic() - t0 < 420
