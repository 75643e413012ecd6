"""mkdocs hooks of the documentation site (mkdocs.yml: `hooks:`).

- Every page under docs/ that the nav does not name is added to it (guide/ pages to "Guide",
  adr/ to "Decisions", others to "More"), so a page another engineer adds is always reachable.
- adr/index.md is generated: each decision record with its title and status line.
- getting-started.md is the repository's README (prerequisites, the two commands, the tour),
  its links to docs/ made relative to the site.
- The figures the pages show from results/ (outside docs/) are copied into the site.
- A mention of a decision record (`ADR 0019`) or of a design section (`docs/design.md §4e`)
  outside code becomes a link to it, so a missing record or section fails the strict build.
- The settings reference must be what the settings table writes (`make docs` rewrites it): a
  stale page is a warning, so the strict build fails.
"""

from __future__ import annotations

import logging
import posixpath
import re
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


def _readme() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return text.replace("](docs/adr/)", "](adr/index.md)").replace("](docs/", "](")


def on_files(files: Files, config) -> Files:
    files.append(File.generated(config, "adr/index.md", content=_adr_index()))
    files.append(File.generated(config, "getting-started.md", content=_readme()))
    for figure in FIGURES:
        files.append(File(figure, str(ROOT), config.site_dir, config.use_directory_urls))
    from airflow_skald.core.settings.reference import render

    page = DOCS / "reference" / "settings.md"
    if not page.exists() or page.read_text(encoding="utf-8") != render():
        log.warning(
            "docs/reference/settings.md is not what the settings table writes: run `make docs`"
        )
    return files


_CODE = re.compile(r"(^```.*?^```|`[^`\n]*`|\[[^\]\n]*\]\([^)\n]*\))", re.S | re.M)
_MENTION = re.compile(r"\bADR (\d{4})\b|\bdocs/design\.md §(\d[a-f]?)\b")


def _link(match: re.Match, page_dir: str, records: dict[str, str]) -> str:
    adr, section = match.groups()
    target, fragment = (records.get(adr), "") if adr else ("design.md", f"#s{section}")
    if target is None:
        log.warning("a mention of ADR %s, which does not exist", adr)
        return match[0]
    return f"[{match[0]}]({posixpath.relpath(target, page_dir or '.')}{fragment})"


def on_page_markdown(markdown: str, page, config, files) -> str:
    records = {p.name[:4]: f"adr/{p.name}" for p in (DOCS / "adr").glob("[0-9]*.md")}
    page_dir = posixpath.dirname(page.file.src_uri)
    parts = _CODE.split(markdown)
    for i in range(0, len(parts), 2):  # the even parts lie outside code and links
        parts[i] = _MENTION.sub(lambda m: _link(m, page_dir, records), parts[i])
    return "".join(parts)
