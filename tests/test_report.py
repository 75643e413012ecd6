"""report.html beside every manifest, and the terminal progress display."""

from __future__ import annotations

import builtins
import io
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from helpers_data import CANARY_RAW, config_dict, write_config, write_dataset

from airflow_skald.cli import main as cli_main
from airflow_skald.core.config import load_config
from airflow_skald.core.pipeline import run
from airflow_skald.core.progress import TerminalProgress, cli_progress, format_eta
from airflow_skald.core.report import node_in_words, render_report

CHROMIUM = next(
    (p for p in ("/usr/bin/chromium", "/usr/bin/chromium-browser") if Path(p).exists()),
    shutil.which("chromium") or shutil.which("chromium-browser"),
)


@pytest.fixture(scope="module")
def release(tmp_path_factory) -> Path:
    """A small release whose input holds the canary record (its raw values are greppable)."""
    tmp = tmp_path_factory.mktemp("report")
    write_dataset(tmp / "in", n_files=3, rows=60, canary_in=1)
    cfg = write_config(tmp / "skald.yaml", config_dict(tmp / "in", tmp / "out", k=3))
    run(load_config(cfg))
    return tmp / "out"


def test_report_sits_beside_the_manifest_and_is_self_contained(release):
    html = (release / "report.html").read_text(encoding="utf-8")
    manifest = json.loads((release / "manifest.json").read_text())
    assert html.startswith("<!DOCTYPE html>")
    assert "data:image/png;base64," in html  # plots embedded
    assert "http://" not in html and "https://" not in html and "<script" not in html
    for figure in ("dm_star", "dm_star_arx", "dm", "n_suppressed", "n_equivalence_classes"):
        assert f"{manifest[figure]:,}" in html, figure
    assert manifest["node_paper"] in html and manifest["root_node_paper"] in html
    for words in ("prosecutor risk", "2k", "evaluated", "passing", "precision", "peak RSS"):
        assert words in html, words
    assert "peak_rss_bytes_by_phase" in manifest
    assert set(manifest["peak_rss_bytes_by_phase"]) >= {"encode", "histogram", "search"}


def test_report_holds_no_record_values(release):
    html = (release / "report.html").read_text(encoding="utf-8")
    for raw in CANARY_RAW:
        assert raw not in html


def test_node_in_words():
    manifest = {
        "quasi_identifiers": [
            {"name": "blood", "type": "categorical"},
            {"name": "age", "type": "numerical", "encode": False},
            {"name": "pin", "type": "numerical", "encode": True},
        ],
        "top_node": {"blood": 2, "age": 7, "pin": 11},
    }
    rows = node_in_words(manifest, {"blood": 1, "age": 0, "pin": 5}, "((2), (1, 32))")
    assert [r["paper"] for r in rows] == ["2", "1", "32"]
    assert "hierarchy level 1" in rows[0]["meaning"]
    assert rows[1]["meaning"].startswith("original values")
    assert "width 32 encoded" in rows[2]["meaning"]
    top = node_in_words(manifest, {"blood": 2, "age": 7, "pin": 11}, "((3), (67, 1347))")
    assert all("fully generalised" in r["meaning"] for r in top)


def test_report_without_matplotlib(monkeypatch, release):
    manifest = json.loads((release / "manifest.json").read_text())
    real_import = builtins.__import__

    def no_mpl(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_mpl)
    html = render_report(manifest)
    assert "data:image/png" not in html and "matplotlib is not installed" in html
    assert "32-63" not in html or "class size" in html  # the distribution falls back to a table


def test_cli_run_writes_the_report(tmp_path, capsys):
    write_dataset(tmp_path / "in", n_files=2, rows=50)
    cfg = write_config(tmp_path / "s.yaml", config_dict(tmp_path / "in", tmp_path / "out", k=3))
    assert cli_main(["run", str(cfg), "--quiet"]) == 0
    assert (tmp_path / "out" / "report.html").exists()


@pytest.mark.skipif(
    CHROMIUM is None and not os.environ.get("CI"),
    reason="chromium not installed (CI must install it: apt-get install -y chromium)",
)
def test_report_renders_in_headless_chromium(release, tmp_path):
    if CHROMIUM is None:
        pytest.fail("chromium is not installed; CI must install it (apt-get install -y chromium)")
    shot = tmp_path / "report.png"
    cmd = [
        CHROMIUM,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--window-size=1100,1800",
        f"--screenshot={shot}",
        (release / "report.html").as_uri(),
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
