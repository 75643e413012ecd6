"""Code, tests and records cite the contract in the repository, docs/design.md, by a section it
has (`docs/design.md §4e`; ADR 0038), never the SPEC outside it. Read as text: no file is run."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WHERE = ("airflow_skald", "tests", "benchmarks", "dags", "docker", "docs", ".ci")
FILES = ("Makefile", "pyproject.toml", "benchmarks/README.md")
SUFFIXES = {".py", ".md", ".yaml", ".yml", ".json", ".toml", ".cfg", ".sh", ".txt", ""}
SPEC = re.compile(r"\bSPEC\b(?!_)")
CITATION = re.compile(r"docs/design\.md (?:§|\\u00a7)(\d[a-f]?)((?:, ?§\d[a-f]?)*)")


def _texts() -> list[tuple[str, str]]:
    paths = [ROOT / name for name in FILES]
    for folder in WHERE:
        paths += [p for p in (ROOT / folder).rglob("*") if p.is_file()]
    out = []
    for path in paths:
        if path.suffix not in SUFFIXES or "__pycache__" in path.parts or path == Path(__file__):
            continue
        try:
            out.append((str(path.relative_to(ROOT)), path.read_text(encoding="utf-8")))
        except UnicodeDecodeError:
            continue
    return out


def test_citations_name_the_design_in_the_repository_and_a_section_it_has() -> None:
    sections = set(re.findall(r"\{#s(\d[a-f]?)\}", (ROOT / "docs" / "design.md").read_text()))
    assert {"1", "2a", "4e", "8"} <= sections
    wrong = []
    for name, text in _texts():
        for number, line in enumerate(text.splitlines(), 1):
            if SPEC.search(line):
                wrong.append(f"{name}:{number} cites the SPEC: cite docs/design.md §N instead")
            for first, more in CITATION.findall(line):
                for section in [first, *re.findall(r"§(\d[a-f]?)", more)]:
                    if section not in sections:
                        wrong.append(
                            f"{name}:{number} cites docs/design.md §{section}: no such section"
                        )
    assert not wrong, "\n".join(wrong)
