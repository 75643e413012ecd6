"""A transformation's part of the report (`release.report`; in ARX, what ``ARXResult`` and
the output's ``DataHandle.getStatistics()`` tell of it), read from the manifest alone, as the
report is made without a config (ADR 0060).

When each hook is called, while the report's sections are made:

- ``report_rows`` / ``report_note``: its lines in the report's audit section;
- ``risk_rows``: its lines heading the report's suppression and risk section;
- ``report_section``: a section of its own (`ReportSection`, with `ReportTable`s and
  `ReportChart`s), placed after the shared section ``report_after`` names;
- ``lattice_floor``: the words of the report's lattice floor section when its search starts
  at no root measured on the data;
- ``beyond_node``: what it released beyond the chosen node, as the report's quality section
  and warnings show it (`BeyondNode`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class ReportTable:
    """A table of HTML cells (`head`: its header row, or none)."""

    rows: Sequence[Sequence[str]]
    head: Sequence[str] | None = None


@dataclass(frozen=True)
class ReportChart:
    """A bar chart of counts, one bar per label (the report's frame draws it)."""

    labels: Sequence[str]
    values: Sequence[float]
    title: str
    value_label: str
    category_label: str = ""
    color: str = "#3b6fb6"


@dataclass(frozen=True)
class BeyondNode:
    """A release a transformation wrote beyond the chosen node (local recoding's steps), as the
    report's shared sections show it: the quality models' scores of the release as written
    (`scores`: the others score the chosen node alone; none: the shared section shows the
    node's), whether it ran at all (`ran`), the further nodes it released records at
    (`nodes`), the paragraph heading the scores (`note`, HTML) and the title of a QID's
    distribution at the chosen node (`at_node`, its fields ``name`` and ``level``)."""

    scores: Mapping[str, Any]
    ran: bool
    nodes: Sequence[Mapping[str, Any]]
    note: str
    at_node: str


@dataclass(frozen=True)
class ReportSection:
    """A transformation's own section of the report: its title, the HTML paragraphs before
    its table (`intro`), a table of HTML cells (`head`: the table's header row, or none) and
    what follows it: HTML paragraphs, more tables, charts."""

    title: str
    rows: Sequence[Sequence[str]]
    head: Sequence[str] | None = None
    paragraphs: Sequence[str | ReportTable | ReportChart] = ()
    intro: Sequence[str] = ()


class ReportHooks:
    """Its lines and sections of the report (see the module's docstring for when each hook
    is called); every default adds nothing."""

    #: the shared report section its own section (`report_section`) follows
    report_after: ClassVar[str] = ""

    @classmethod
    def report_rows(cls, manifest: Mapping[str, Any]) -> list[list[str]]:
        return []

    @classmethod
    def report_note(cls, manifest: Mapping[str, Any]) -> str:
        return ""

    @classmethod
    def risk_rows(cls, manifest: Mapping[str, Any]) -> list[list[str]]:
        """Its lines (HTML cells) heading the report's suppression and risk section."""
        return []

    @classmethod
    def report_section(cls, manifest: Mapping[str, Any]) -> ReportSection | None:
        return None

    @classmethod
    def lattice_floor(cls, manifest: Mapping[str, Any]) -> str | None:
        """The words (HTML) of the report's lattice floor section when the release's search
        started at no root measured on the data (None: the RAM root phase 1 measured)."""
        return None

    @classmethod
    def beyond_node(cls, manifest: Mapping[str, Any]) -> BeyondNode | None:
        """What the release holds beyond the chosen node (None: nothing of its own)."""
        return None
