"""What a transformation is (ARX: what its ``ARXConfiguration`` adds beside the criteria, e.g.
microaggregation, local recoding): one package owning a feature that crosses the passes, as a
privacy model owns a criterion (``core.privacy.model``, ADR 0008; ADR 0060).

A `Transformation` subclass is a frozen dataclass of its settings (the typed, nested object
`SkaldConfig.transformations` holds when the config asks for it), listed once in
``core.transform.registry``. Shared code (config loading, the input's check, the runner's
phases, the manifest and its schema, `skald verify`, the report, the engines, differential
privacy's rules) asks the registry, which asks each transformation through its hooks; none
of it names a transformation. Every hook has a default that adds nothing.

The hooks, grouped by the pass or purpose they serve, in the order a run meets them; each
group is one class `Transformation` composes, its module saying when each hook is called:

- `SettingsHooks` (`hooks_settings`): the config's sections and the settings table's rows
  it owns, parsed once, overridden by a run's settings, checked against the rest of the
  config, described in the effective settings; the columns and secrets it reads;
- `EngineHooks` (`hooks_engine`): what the passes and the engines ask: QIDs aggregated per
  class or taken out of the lattice, its capability answers (differential privacy, engines,
  the per-chunk baseline, facts over every input record), phase 3's part table;
- `PhaseHooks` (`hooks_phases`): what it adds to phase 2 after the search and to phase 3
  around the staged release's check, handed typed contexts (`Searched`, `Staged`);
- `ReleaseHooks` (`hooks_release`): its manifest keys and their values, and `skald
  verify`'s checks of its part of the release, from the manifest and the release alone;
- `ReportHooks` (`hooks_report`): its lines and sections of the report, from the manifest
  alone.
"""

from __future__ import annotations

from typing import ClassVar

from airflow_skald.core.transform.hooks_engine import EngineHooks
from airflow_skald.core.transform.hooks_phases import PhaseHooks
from airflow_skald.core.transform.hooks_release import ManifestKey, ReleaseHooks, side_file_schema
from airflow_skald.core.transform.hooks_report import (
    BeyondNode,
    ReportChart,
    ReportHooks,
    ReportSection,
    ReportTable,
)
from airflow_skald.core.transform.hooks_settings import ParseContext, SettingsHooks

__all__ = [
    "BeyondNode",
    "ManifestKey",
    "ParseContext",
    "ReportChart",
    "ReportSection",
    "ReportTable",
    "Transformation",
    "side_file_schema",
]


class Transformation(SettingsHooks, EngineHooks, PhaseHooks, ReleaseHooks, ReportHooks):
    """One transformation: a frozen dataclass of its settings (a subclass), with the hooks of
    each group (see the module's docstring)."""

    #: the name it is registered under
    name: ClassVar[str]
