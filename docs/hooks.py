"""mkdocs hooks of the documentation site (mkdocs.yml: `hooks:`).

- Every page under docs/ that the nav does not name is added to it (guide/ pages to "Guide",
  adr/ to "Decisions", others to "More"), so a page another engineer adds is always reachable.
- adr/index.md is generated: each decision record with its title and status line.
- The figures the pages show from results/ (outside docs/) are copied into the site.
- The settings reference must be what the settings table writes (`make docs` rewrites it): a
  stale page is a warning, so the strict build fails.
"""

from __future__ import annotations

import logging
from pathlib import Path

from mkdocs.structure.files import File, Files

log = logging.getLogger("mkdocs.hooks.skald")

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
FIGURES = ("results/dm_ratio.png",)
SECTIONS = {"guide": "Guide", "adr": "Decisions"}


def _named(nav: list) -> set[str]:
    """Every page path the nav names (at any depth)."""
    found: set[str] = set()
    for item in nav:
        value = next(iter(item.values())) if isinstance(item, dict) else item
        if isinstance(value, list):
            found |= _named(value)
        elif isinstance(value, str):
            found.add(value)
    return found


def _section(nav: list, title: str) -> list:
    for item in nav:
        if isinstance(item, dict) and title in item and isinstance(item[title], list):
            return item[title]
    section: list = []
    nav.append({title: section})
    return section


def on_config(config):
    nav = config.nav
    named = _named(nav)
    for page in sorted(DOCS.rglob("*.md")):
        path = page.relative_to(DOCS).as_posix()
        if path in named:
            continue
        title = SECTIONS.get(path.split("/")[0], "More")
        _section(nav, title).append(path)
    return config


def _title_and_status(page: Path) -> tuple[str, str]:
    lines = page.read_text(encoding="utf-8").splitlines()
    title = next((line[2:].strip() for line in lines if line.startswith("# ")), page.stem)
    status = next((line.strip() for line in lines if line.startswith("Status:")), "")
    return title, status


def _adr_index() -> str:
    rows = []
    for page in sorted((DOCS / "adr").glob("[0-9]*.md")):
        title, status = _title_and_status(page)
        rows.append(
            f"| [{page.stem[:4]}]({page.name}) | {title} | {status.removeprefix('Status: ')} |"
        )
    return (
        "# Architecture decision records\n\n"
        "How the product is built and why: one record per decision, numbered (the numbers group "
        "by area: 00xx the core, 01xx Airflow, 02xx release safety, 03xx the paper's baseline). "
        "What the product does is the [design](../design.md). This list is generated from "
        "the records.\n\n| ADR | decision | status |\n|---|---|---|\n" + "\n".join(rows) + "\n"
    )


def on_files(files: Files, config) -> Files:
    files.append(File.generated(config, "adr/index.md", content=_adr_index()))
    for figure in FIGURES:
        files.append(File(figure, str(ROOT), config.site_dir, config.use_directory_urls))
    from airflow_skald.core.settings.reference import render

    page = DOCS / "reference" / "settings.md"
    if not page.exists() or page.read_text(encoding="utf-8") != render():
        log.warning(
            "docs/reference/settings.md is not what the settings table writes: run `make docs`"
        )
    return files
