"""report.html beside every manifest, and the terminal progress display.

Two layers: in-memory tests render hand-written manifests and run records (no pipeline, no
files), and integration tests run a small release and read the report written beside it. The
pipeline and the CLI are imported inside the integration tests only, so the report's own tests
run alone.
"""

from __future__ import annotations

import io
import json
import re
import subprocess
from pathlib import Path

import pytest
from helpers_browser import CHROMIUM, require_chromium
from helpers_data import chart_labels

from airflow_skald.core.progress import TerminalProgress, cli_progress, format_eta
from airflow_skald.core.release.report import (
    class_size_bins,
    render_report,
    write_report,
)

# --- in memory: hand-written manifests and run records ------------------------------------

QIDS = [
    {"name": "city", "type": "categorical"},
    {"name": "age", "type": "numerical", "encode": False},
    {"name": "zip", "type": "numerical", "encode": True},
]

MODELS = [
    {"model": "k-anonymity", "k": 5, "min_class_size": 7},
    {"model": "distinct-l-diversity", "attribute": "disease", "l": 3, "min_distinct": 4},
    {"model": "entropy-l-diversity", "attribute": "disease", "l": 2, "min_entropy_l": 2.5},
    {
        "model": "recursive-cl-diversity",
        "attribute": "disease",
        "c": 3,
        "l": 2,
        "max_recursive_ratio": 0.75,
    },
    {
        "model": "t-closeness",
        "attribute": "income",
        "t": 0.2,
        "distance": "equal",
        "max_distance": 0.1875,
    },
]


def deterministic_manifest(**changes) -> dict:
    """A manifest as the deterministic release writes it: no timings, no memory, no time."""
    manifest = {
        "k": 5,
        "suppression_limit": 0.01,
        "privacy": {"models": [{"model": "k-anonymity", "k": 5}], "suppression_limit": "1/100"},
        "privacy_models": [MODELS[0]],
        "n_records": 12_345,
        "n_suppressed": 12,
        "max_suppressed": 123,
        "dm_star": 4_567_891,
        "dm_star_arx": 4_567_999,
        "dm": 4_600_003,
        "precision": 0.625,
        "n_equivalence_classes": 321,
        "min_class_size": 7,
        "avg_class_size": 38.4,
        "chunks": 4,
        "node": {"city": 1, "age": 3, "zip": 5},
        "node_paper": "((2), (8, 32))",
        "root_node": {"city": 0, "age": 1, "zip": 2},
        "root_node_paper": "((1), (2, 4))",
        "top_node": {"city": 2, "age": 7, "zip": 11},
        "histogram_bins": 11_000,
        "histogram_bins_derived": True,
        "root_bins": 6_777,
        "lattice": {"nodes": 108, "evaluated": 22, "passing": 60},
        "root_lattice": {"nodes": 252, "evaluated": 27, "complying": 138},
        "risk": {
            "prosecutor_risk_max": 1 / 7,
            "prosecutor_risk_avg": 0.026,
            "share_below_2k": 0.0611,
        },
        "class_size_histogram": {"4-7": 3, "8-15": 40, "16-31": 200, "32-63": 78},
        "suppressed_records": "mask",
        "quasi_identifiers": QIDS,
        "direct_identifiers_removed": ["pid", "name"],
        "sensitive_attributes": ["disease", "income"],
        "parts": ["part-00000.parquet", "part-00001.parquet"],
        "verified": True,
        "config_sha256": "c" * 64,
        "input_fingerprint": "f" * 64,
        "run_token": "tok-123",
        "version": "0.1.0",
    }
    manifest.update(changes)
    return manifest


RUN = {
    "run_token": "tok-123",
    "started_at": "2026-11-26T06:00:00+00:00",
    "finished_at": "2026-11-26T06:01:30+00:00",
    "timings_s": {"encode": 1.25, "histogram": 20.5, "search": 0.75, "generalise": 30.0},
    "peak_rss_bytes": 734 * 2**20,
    "peak_rss_bytes_by_phase": {
        "encode": 100 * 2**20,
        "histogram": 512 * 2**20,
        "search": 512 * 2**20,
        "generalise": 734 * 2**20,
    },
    "dag_id": "skald_release",
    "run_id": "manual__2026-11-26T06:00:00",
}


def section(html: str, heading: str) -> str:
    """The HTML from `heading`'s <h2>/<h3> to the next <h2>."""
    start = html.index(f">{heading}</h")
    end = html.find("<h2>", start)
    return html[start : end if end > 0 else None]


def cells(html: str) -> list[str]:
    return re.findall(r"<td[^>]*>(.*?)</td>", html)


def test_timings_and_memory_come_from_the_run_record():
    html = render_report(deterministic_manifest(), RUN)
    timings = section(html, "Time and memory")
    assert "20.50 s" in timings and "30.00 s" in timings and "52.50 s" in timings  # total
    assert "734 MiB" in timings and "512 MiB" in timings and "peak RSS so far" in timings
    run = section(html, "Run")
    for value in ("tok-123", "skald_release", "manual__2026-11-26T06:00:00"):
        assert value in run
    assert "2026-11-26T06:00:00+00:00" in run and "2026-11-26T06:01:30+00:00" in run
    # start and finish are cut to the whole second and the phases (52.5 s) do not fill them
    assert "wall time (finished − started, to the whole second)" in run
    assert "90 s" in cells(run) and "90.00 s" not in run
    unfinished = section(render_report(deterministic_manifest(), {**RUN, "finished_at": ""}), "Run")
    assert "wall time" not in unfinished
    assert "Generated from manifest.json and run.json only" in html


def test_an_old_manifest_keeps_its_own_timings():
    old = deterministic_manifest(
        timings_s={"encode": 2.0, "search": 4.0}, peak_rss_bytes=300 * 2**20
    )
    html = render_report(old)
    timings = section(html, "Time and memory")
    assert "2.00 s" in timings and "6.00 s" in timings and "300 MiB" in timings
    assert "Generated from manifest.json only" in html
    assert "DAG id" not in html  # no run identity beyond what the manifest holds
    # a run record wins over the manifest's copy
    newer = section(render_report(old, RUN), "Time and memory")
    assert "52.50 s" in newer and "6.00 s" not in newer


def test_without_timings_the_time_table_is_empty_not_broken():
    timings = section(render_report(deterministic_manifest()), "Time and memory")
    assert "0.00 s" in timings and "n/a" in timings


def test_class_size_bins_are_in_numeric_order():
    hist = {"128-255": 1, "16-31": 2, "2-3": 3, "1-1": 4, "4-7": 5}
    numeric = ["1-1", "2-3", "4-7", "16-31", "128-255"]
    assert sorted(hist) != numeric  # string order is wrong: this test must catch it
    assert [b for b, _ in class_size_bins(hist)] == numeric
    assert dict(class_size_bins(hist)) == hist


def test_class_size_table_is_in_numeric_order():
    hist = {"128-255": 1, "16-31": 2, "2-3": 3, "1-1": 4, "4-7": 5}
    html = render_report(deterministic_manifest(class_size_histogram=hist))
    table = section(html, "Information loss")
    labels = [c for c in cells(table) if re.fullmatch(r"\d+-\d+", c)]
    assert labels == ["1-1", "2-3", "5-7", "16-31", "128-255"]  # k = 5: the bin from k


def test_class_size_chart_is_in_numeric_order():
    hist = {"128-255": 1, "16-31": 2, "2-3": 3, "1-1": 4, "4-7": 5}
    html = render_report(deterministic_manifest(class_size_histogram=hist), RUN)
    assert "<img" not in html and "data:image" not in html  # charts are inline SVG
    labels = chart_labels(html, "Class-size distribution (k = 5)")
    assert labels == ["1-1", "2-3", "5-7", "16-31", "128-255"]  # k = 5: the bin from k
    assert chart_labels(html, "Time per phase") == list(RUN["timings_s"])


@pytest.mark.browser
def test_report_renders_in_headless_chromium(tmp_path):
    require_chromium()
    page = Path(
        write_report(deterministic_manifest(privacy_models=MODELS), str(tmp_path), RUN) or ""
    )
    assert page.read_text(encoding="utf-8").count("<svg") == 2  # both charts drawn
    shot = tmp_path / "report.png"
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--window-size=1100,1800",
        f"--screenshot={shot}",
        page.as_uri(),
    ]
    subprocess.run(cmd, capture_output=True, timeout=90, check=False)
    assert shot.exists() and shot.stat().st_size > 20_000
    from PIL import Image

    img = Image.open(shot).convert("L")
    assert img.size == (1100, 1800)
    lo, hi = img.getextrema()
    assert hi - lo > 100  # not a blank page: text and plots were drawn
    dark = sum(img.histogram()[:128]) / (img.size[0] * img.size[1])
    assert 0.005 < dark < 0.5


# --- integration: a small release written by the pipeline ----------------------------------


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    """A small release whose input holds the canary record (its raw values are greppable)."""
    from helpers_data import config_dict, write_config, write_dataset

    from airflow_skald.core.config.run_config import load_config
    from airflow_skald.core.run.runner import run

    tmp = tmp_path_factory.mktemp("report")
    write_dataset(tmp / "in", n_files=3, rows=60, canary_in=1)
    cfg = write_config(tmp / "skald.yaml", config_dict(tmp / "in", tmp / "out", k=3))
    run(load_config(cfg))
    return tmp / "out"


def run_record(release: Path, manifest: dict) -> dict:
    """run.json beside the manifest; a release written before it kept the timings inside."""
    path = release / "run.json"
    return json.loads(path.read_text()) if path.exists() else manifest


def test_report_sits_beside_the_manifest_and_is_self_contained(release):
    html = (release / "report.html").read_text(encoding="utf-8")
    manifest = json.loads((release / "manifest.json").read_text())
    quality = {**manifest, **(manifest.get("quality") or {})}
    assert html.startswith("<!DOCTYPE html>")
    assert "<svg" in html and "<img" not in html  # charts inline
    outside = html.replace('xmlns="http://www.w3.org/2000/svg"', "")  # a namespace, not a fetch
    assert "http://" not in outside and "https://" not in outside and "<script" not in html
    for figure in ("dm_star", "dm_star_arx", "dm"):
        assert f"{quality[figure]:,}" in html, figure
    for figure in ("n_suppressed", "n_equivalence_classes"):
        assert f"{manifest[figure]:,}" in html, figure
    assert manifest["node_paper"] in html and manifest["root_node_paper"] in html
    for words in ("prosecutor risk", "2k", "evaluated", "passing", "precision", "peak RSS"):
        assert words in html, words
    record = run_record(release, manifest)
    assert set(record["peak_rss_bytes_by_phase"]) >= {"encode", "histogram", "search"}


def test_report_names_its_config_input_and_release(release):
    """Issue 30 item 7: the report says which config file the run read, where its input was
    and where the release is (the run record's config path, the manifest's settings)."""
    html = (release / "report.html").read_text(encoding="utf-8")
    tmp = release.parent
    assert json.loads((release / "run.json").read_text())["config"] == str(tmp / "skald.yaml")
    where = html[html.index("<h2>Where</h2>") :].split("</table>", 1)[0]
    for label, path in (("config file", "skald.yaml"), ("input", "in"), ("release", "out")):
        assert f"<td>{label}</td><td><code>{tmp / path}</code></td>" in where, where


def test_report_holds_no_record_values(release):
    from helpers_data import CANARY_RAW

    html = (release / "report.html").read_text(encoding="utf-8")
    for raw in CANARY_RAW:
        assert raw not in html


def test_class_sizes_of_a_real_manifest_in_table_and_chart(release):
    manifest = json.loads((release / "manifest.json").read_text())
    html = render_report(manifest, run_record(release, manifest))
    labels = [c for c in cells(section(html, "Information loss")) if re.fullmatch(r"\d+-\d+", c)]
    bins = class_size_bins(manifest["class_size_histogram"], manifest["k"])
    assert labels == [b for b, _ in bins]
    assert chart_labels(html, f"Class-size distribution (k = {manifest['k']})") == labels
    assert all(int(b.split("-")[0]) >= manifest["k"] for b in labels)


def test_cli_run_writes_the_report(tmp_path, capsys):
    from helpers_data import config_dict, write_config, write_dataset

    from airflow_skald.cli import main as cli_main

    write_dataset(tmp_path / "in", n_files=2, rows=50)
    cfg = write_config(tmp_path / "s.yaml", config_dict(tmp_path / "in", tmp_path / "out", k=3))
    assert cli_main(["run", str(cfg), "--quiet"]) == 0
    assert (tmp_path / "out" / "report.html").exists()


# --- the terminal progress display -----------------------------------------------------------


def test_progress_bar_on_a_tty():
    out = io.StringIO()
    bar = TerminalProgress(out, width=10, tty=True)
    for i in range(1, 4):
        bar("histogram", i, 3, 1000)
    text = out.getvalue()
    assert text.count("\r") == 3 and text.endswith("\n")
    assert "[##########] chunk 3/3" in text and "rows/s" in text and "ETA" in text


def test_progress_plain_lines_otherwise():
    out = io.StringIO()
    bar = TerminalProgress(out, tty=False)
    bar("encode", 1, 2, 10)
    bar("encode", 2, 2, 10)
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("encode: chunk 1/2") and "rows/s" in lines[1]
    assert "ETA" in lines[1] and "\r" not in out.getvalue()
    assert cli_progress(stream=io.StringIO()) is None  # not a TTY: the log lines are the progress
    assert format_eta(75) == "1m15s" and format_eta(3700) == "1h01m"


def test_adaptive_root_is_described_by_its_non_empty_bins() -> None:
    from airflow_skald.core.release.report import _ram_root

    m = {
        "root_mode": "adaptive",
        "root_node_paper": "((1, 1), (1, 1))",
        "paper_root_node_paper": "((2, 1), (4, 1))",
        "root_bins_nonempty": 59996,
        "root_bins": 10**10,
        "histogram_bins": 135000,
        "root_node": {},
    }
    html = _ram_root(m)
    assert "59,996 non-empty bins" in html and "((2, 1), (4, 1))" in html
    assert "possible" not in html
    assert "10,000,000,000 possible bins" in _ram_root({**m, "root_mode": "paper"})
    # with l-diversity / t-closeness N_RAM bounds (class, value) pairs (docs/design.md §4b)
    models = [{"model": "k-anonymity", "k": 5}, {"model": "t-closeness", "attribute": "x"}]
    html = _ram_root({**m, "privacy_models": models})
    assert "59,996 non-empty (class, value) pairs" in html
