"""The documentation site (docs/, mkdocs.yml): it builds strictly, its settings reference is the
settings table's, and every example configuration in it runs (docs/development.md, "The
documentation")."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from airflow_skald.cli import main as skald
from airflow_skald.core.data.generate import generate_dataset
from airflow_skald.core.settings.reference import render
from airflow_skald.core.settings.table import SETTINGS

ROOT = Path(__file__).resolve().parents[3]
DOCS = ROOT / "docs"
EXAMPLE = re.compile(r"^<!-- example -->\n```yaml\n(.*?)^```", re.S | re.M)


def test_the_site_builds_strictly_every_link_and_anchor_resolving(tmp_path) -> None:
    """mkdocs.yml sets strict and makes a link to a missing page or anchor a warning, so the
    build fails on any (docs/hooks.py adds a warning for a stale settings reference)."""
    site = tmp_path / "site"
    done = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "WARNING" not in done.stderr, done.stderr[-3000:]
    for page in DOCS.rglob("*.md"):  # every page is in the site, reachable from the nav
        built = site / page.relative_to(DOCS).with_suffix(".html")
        assert built.exists(), built
    nav = (site / "index.html").read_text(encoding="utf-8")
    for page in DOCS.rglob("*.md"):
        assert page.relative_to(DOCS).with_suffix(".html").as_posix() in nav, page
    assert (site / "design.html").read_text(encoding="utf-8").count('id="s4e"') == 1
    assert (site / "results" / "dm_ratio.png").exists()


def test_the_readmes_links_lead_to_files_of_the_repository() -> None:
    """The README is not part of the site; its links to pages of docs/ are checked here."""
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", (ROOT / "README.md").read_text("utf-8"))
    assert len(links) >= 10, links
    missing = [link for link in links if "://" not in link and not (ROOT / link).exists()]
    assert not missing, missing


def test_the_settings_reference_is_the_settings_tables() -> None:
    page = (DOCS / "reference" / "settings.md").read_text(encoding="utf-8")
    assert page == render(), "docs/reference/settings.md is stale: run `make docs`"
    rows = {
        line.split("|")[1].strip().removesuffix(" (not a param)"): line
        for line in page.splitlines()
        if line.startswith("| `")
    }
    assert set(rows) == {f"`{s.name}`" for s in SETTINGS}
    for setting in SETTINGS:
        row = rows[f"`{setting.name}`"]
        assert ("(not a param)" not in row) == setting.param, row
        if setting.path:
            assert f"`{'.'.join(setting.path)}`" in row
        if setting.cli:
            assert f"`{setting.flag}`" in row
        assert setting.expects in row
        assert setting.description.split("(")[0].split(";")[0][:40] in row


def _tour(base: Path) -> None:
    """The folder the configuration guide's "Try the examples" makes (smaller tables)."""
    generate_dataset(4000, 2000, seed=1, out_dir=base / "patients")
    generate_dataset(4000, 2000, seed=1, out_dir=base / "clinical", schema="clinical")
    (base / "study").mkdir()
    hierarchy = base / "hierarchies" / "profession.csv"
    hierarchy.parent.mkdir()
    config = str(base / "patients" / "skald.yaml")
    assert skald(["hierarchy", config, "--qid", "profession", "--out", str(hierarchy)]) == 0
    ids = pq.ParquetDataset(sorted(map(str, (base / "patients").glob("*.parquet")))).read(
        columns=["patient_id"]
    )
    pq.write_table(ids.take(pa.array(range(0, ids.num_rows, 10))), base / "study" / "ids.parquet")


def test_every_example_configuration_in_the_docs_runs(tmp_path, monkeypatch) -> None:
    examples = [
        (f"{page.relative_to(DOCS)}#{i + 1}", match[1])
        for page in sorted(DOCS.rglob("*.md"))
        for i, match in enumerate(EXAMPLE.finditer(page.read_text(encoding="utf-8")))
    ]
    assert len(examples) >= 10, [name for name, _ in examples]
    _tour(tmp_path)
    monkeypatch.setenv("SKALD_DP_KEY", "a-dp-secret-of-the-docs-examples")
    monkeypatch.setenv("SKALD_PSEUDONYM_KEY", "a-pseudonym-key-of-the-docs-examples")
    failed = []
    for n, (name, text) in enumerate(examples):
        config, release = tmp_path / f"example-{n}.yaml", tmp_path / "releases" / f"example-{n}"
        config.write_text(text, encoding="utf-8")
        ran = skald(["run", str(config), "--output", str(release)])
        verified = skald(["verify", str(release)]) if ran == 0 else None
        # 4: verified in part (a DP release's keyed sample cannot be shown by the release)
        if ran != 0 or verified not in (0, 4) or not (release / "manifest.json").exists():
            failed.append(f"{name}: run exit {ran}, verify exit {verified}")
    assert not failed, failed
