"""The utility analysis end to end on Adult through the CLI: the manifest's section (typed,
the same with other chunks and workers), its figures against pandas on the input and on the
written release, the report's section and the warning about QIDs generalised away, and what
headless Chromium shows of them."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pandas as pd
import pytest
from helpers_browser import CHROMIUM, PAGE_TEXT, Browser, require_chromium
from skald_testdata import ADULT_CSV, adult_config, read_release, write_config

from airflow_skald.cli import main
from airflow_skald.core.release.write.manifest_schema import Manifest


def _run(tmp_path, name, chunk_rows):
    utility = {"max_records": 3000, "folds": 3}
    out = tmp_path / name
    body = adult_config(
        out, k=5, suppression_limit=0.05, sensitive=(), chunk_rows=chunk_rows, utility=utility
    )
    cfg = write_config(tmp_path / f"{name}.yaml", body)
    flags = ["--utility-target", "salary-class", "--utility-contingency", "marital-status:age"]
    assert main(["run", str(cfg), "--quiet", *flags, *flags_extra(name)]) == 0
    return json.loads((tmp_path / name / "manifest.json").read_text())


def flags_extra(name):
    return ["--workers", "2"] if name == "b" else []


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("utility")
    return tmp, _run(tmp, "a", 8000), _run(tmp, "b", 5000)


def test_section_is_typed_and_does_not_depend_on_chunks_or_workers(runs):
    _, a, b = runs
    Manifest.parse(a, "manifest.json")  # the typed schema holds it
    assert a["utility"] == b["utility"]
    c = a["utility"]["classification"]
    assert c["records"] == 3000 and c["folds"] == 3 and c["target"] == "salary-class"
    assert [m["model"] for m in c["models"]] == [
        "logistic_regression",
        "naive_bayes",
        "random_forest",
    ]
    for m in c["models"]:  # Adult's income is learnt well above the majority class
        assert m["original"]["accuracy"] > c["baseline"]["accuracy"] + 0.03
        assert 0.5 < m["release"]["auc"] <= 1


def test_figures_equal_pandas_on_the_input_and_on_the_written_release(runs):
    tmp, a, _ = runs
    source = pd.read_csv(ADULT_CSV, sep=";", dtype={"age": "int64"})
    release = read_release(tmp / "a")
    for q in a["utility"]["qids"]:
        before, after, name = q["before"], q["after"], q["name"]
        assert before["count"] == len(source) and before["distinct"] == source[name].nunique()
        assert before["mode_records"] == source[name].value_counts().max()
        assert "mode" not in before and "min" not in before  # no input value is named
        released = release[name].astype(str)
        kept = released[released != "*"]
        assert after["top_records"] == int((released == "*").sum())
        assert after["count"] == len(kept) and after["distinct"] == kept.nunique()
        if len(kept):
            assert after["mode_records"] == kept.value_counts().max()
    age = next(q for q in a["utility"]["qids"] if q["name"] == "age")
    assert age["before"]["mean"] == pytest.approx(source["age"].mean(), rel=1e-5)
    assert age["before"]["std"] == pytest.approx(source["age"].std(), rel=1e-5)
    cells = a["utility"]["contingency"][0]
    pairs = release[["marital-status", "age"]].astype(str).value_counts()
    for r, row in zip(cells["rows"], cells["counts"], strict=True):
        for col, n in zip(cells["columns"], row, strict=True):
            assert n == pairs.get((r, col), 0)


def test_report_shows_the_section_and_the_warning(runs):
    tmp, a, _ = runs
    html = (tmp / "a" / "report.html").read_text(encoding="utf-8")
    assert "What the release is still good for" in html and "Predicting 'salary-class'" in html
    tops = [q for q, level in a["node"].items() if level == a["top_node"][q]]
    if tops:  # k = 5 at 5 % on Adult under DM*: several QIDs are lost
        assert "generalised to the top" in html and f"&#x27;{tops[0]}&#x27;" in html


#: each rendered SVG text of the page with its size (a label drawn, not merely in the file)
SVG_TEXTS = (
    "[...document.querySelectorAll('svg text')].map(t => { const r = t.getBBox(); "
    "return [t.textContent, r.width, r.height]; })"
)
#: the size of the report's warning paragraph about QIDs generalised away
WARNING_BOX = (
    "(() => { const p = [...document.querySelectorAll('p.bad')]"
    ".find(e => e.innerText.includes('generalised to the top')); if (!p) return null; "
    "const r = p.getBoundingClientRect(); return [r.width, r.height, "
    "getComputedStyle(p).visibility]; })()"
)
SHOW_SECTION = (
    "(() => { const h = [...document.querySelectorAll('h2')]"
    ".find(e => e.innerText.includes('still good for')); h.scrollIntoView(); return true; })()"
)


@pytest.mark.browser
def test_chromium_shows_the_figures_the_chart_and_the_warning(runs, tmp_path):
    """The report as a privacy officer sees it: every model's accuracies and the baseline's in
    the page's text, the accuracy chart's bars labelled, each QID's figures, the contingency
    table and the warning drawn (a screenshot of the section is kept: SKALD_IT_SHOTS)."""
    from airflow_skald.core.release.report.utility import MODEL_SHORT, MODEL_WORDS
    from airflow_skald.core.text import fmt_int

    require_chromium()
    tmp, a, _ = runs
    browser = Browser(CHROMIUM, width=1200, height=1000)
    try:
        browser.goto((tmp / "a" / "report.html").as_uri())
        text = browser.wait_for(PAGE_TEXT)
        labels = {t: (w, h) for t, w, h in browser.evaluate(SVG_TEXTS)}
        warning = browser.evaluate(WARNING_BOX)
        browser.evaluate(SHOW_SECTION)
        shots = Path(os.environ.get("SKALD_IT_SHOTS") or tmp_path)
        shots.mkdir(parents=True, exist_ok=True)
        shot = browser.screenshot(shots / "utility-section.png")
    finally:
        browser.close()
    u = a["utility"]
    c = u["classification"]
    assert "What the release is still good for" in text and "Predicting 'salary-class'" in text
    rows = text.split("\n")
    for m in c["models"]:
        name = MODEL_WORDS[m["model"]]
        row = next(r for r in rows if r.startswith(name + "\t"))  # the model's table row
        cells = row.split("\t")
        shares = [f"{100 * x:.1f} %" for x in (m["original"]["accuracy"], m["release"]["accuracy"])]
        assert cells[1:4] == [*shares, f"{100 * c['baseline']['accuracy']:.1f} %"], row
        short = MODEL_SHORT.get(m["model"], name)
        for part in ("original", "release", "baseline"):  # the chart's bar, drawn
            w, h = labels[f"{short}: {part}"]
            assert w > 0 and h > 0, (short, part)
    head = next(i for i, r in enumerate(rows) if r.startswith("QID\trelease: records"))
    for q in u["qids"]:  # each QID's row in the release's table: records, '*', distinct
        after = q["after"]
        row = next(r for r in rows[head:] if r.startswith(q["name"] + "\t"))
        cells = row.split("\t")
        expected = [fmt_int(after[k]) for k in ("count", "top_records", "distinct")]
        assert cells[1:4] == expected, row
    assert "Contingency of 'marital-status' and 'age' in the release" in text
    tops = [q for q, level in a["node"].items() if level == a["top_node"][q]]
    if tops:  # k = 5 at 5 % on Adult: several QIDs are lost, and the page says so
        assert warning is not None and warning[0] > 0 and warning[1] > 0, warning
        assert warning[2] == "visible" and f"'{tops[0]}'" in text
    assert shot.stat().st_size > 20_000
