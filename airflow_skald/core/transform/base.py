"""What a transformation is (ARX: what its ``ARXConfiguration`` adds beside the criteria, e.g.
microaggregation, local recoding): one package owning a feature that crosses the passes, as a
privacy model owns a criterion (``core.privacy.model``, ADR 0008; ADR 0060).

A `Transformation` subclass is a frozen dataclass of its settings (the typed, nested object
`SkaldConfig.transformations` holds when the config asks for it), listed once in
``core.transform.registry``. Shared code (config loading, the input's check, phase 3, the
manifest and its schema, `skald verify`, the report, the engines, differential privacy's
rules) asks the registry, which asks each configured transformation through the hooks below;
none of it names a transformation. Every hook has a default that adds nothing.

The hooks, in the order a run meets them:
- ``config_sections`` / ``parse``: the YAML sections it owns and its settings parsed from the
  config once (None: not asked for); ``setting_names`` / ``with_settings``: its rows of the
  settings table (CLI flags, DAG params, operators' keywords) and its settings after a run's;
  ``check``: what it refuses of the rest of the config (after the run's settings);
  ``settings_entry``: its part of the effective settings (the config hash), placed after the
  key ``settings_after`` names (``settings_entries``: its parts at several places);
- ``columns``: input columns it reads and releases transformed (never passed through, never
  dropped as a plain direct identifier);
- ``secrets``: the secret references it reads (resolved by the Airflow operators, checked
  apart from the other keys before any work);
- ``aggregated`` / ``out_of_lattice``: QIDs it releases as their class's aggregate (counted
  per class in phases 1 and 2) and those it takes out of the lattice;
- capability answers: ``arx_dp_refusal`` (what ARX does not run with differential privacy,
  asked before the models are), ``dp_refusal`` (why it cannot run under differential
  privacy, or None),
  ``engine_refusal`` (why an engine cannot run it, or None; ``supports_engine``),
  ``per_chunk_refusal`` (why the per-chunk baseline cannot run a config, or None),
  ``hides_input_facts`` (the manifest states no fact over every input record);
- phase 2, after the search, and phase 3, around the staged release's check (`PhaseHooks`,
  `hooks_phases`): ``after_search``; ``checked_release``, ``side_files``,
  ``released_records``, ``verified_policy``, ``after_verify``;
- phase 3: ``release_part`` (a part's table, after suppression, before the QIDs' labels);
- ``manifest_keys`` / ``manifest_section`` (``manifest_section_at``: with phase 1's
  statistics): its manifest keys (schema: `ManifestKey`) and their values;
- ``check_release``: `skald verify`'s check of its part of a written release (from the
  manifest alone, as verify runs without a config); ``counted_columns`` / ``check_classes``:
  the columns it has verify count beside the classes and its check of them;
  ``released_rows``: the rows its release holds as the manifest records them (verify's row
  count); ``kept_counts``: the per-class counts its release keeps beside the parts (a side file),
  read and checked, which verify judges the classes with (`transform.counted.KeptCounts`);
  ``judged_policy`` / ``recheck``: the manifest's policy as far as the release's classes
  together can judge it, and its own re-check of the rest (`transform.counted`);
- ``report_rows`` / ``report_note``: its lines in the report's audit section,
  ``risk_rows`` its lines heading the report's suppression and risk section, and
  ``report_section`` a section of its own (placed after the shared section ``report_after``
  names), from the manifest alone;
- ``lattice_floor``: the words of the report's lattice floor section when its search starts
  at no root measured on the data; ``beyond_node``: what it released beyond the chosen node,
  as the report's quality section and warnings show it (`BeyondNode`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from airflow_skald.core.transform.hooks_phases import PhaseHooks

if TYPE_CHECKING:  # no pyarrow at import (DAG parsing imports the config)
    import pyarrow as pa

    from airflow_skald.core.data.location import DataLocation
    from airflow_skald.core.privacy import PrivacyPolicy
    from airflow_skald.core.settings.secret import SecretRef
    from airflow_skald.core.transform.counted import (
        CountedRelease,
        JudgedRelease,
        KeptCounts,
        Recheck,
    )
    from airflow_skald.core.transform.encoded import EncodedPlan


@dataclass(frozen=True)
class ParseContext:
    """What a transformation's settings are parsed against: the config file's folder
    (relative files) and the quasi-identifiers as the config parsed them (`QidSpec`s, every
    one, in config order)."""

    base_dir: Path | None = None
    qids: tuple[Any, ...] = ()


@dataclass(frozen=True)
class ManifestKey:
    """One manifest key a transformation writes: its JSON Schema, what it must be (for the
    one-line message of `skald verify`) and what it means (docs/manifest.schema.json)."""

    schema: Mapping[str, Any]
    expects: str
    doc: str
    before: str = "output_format"  # the schema's key it is written before
    meta: Mapping[str, Any] = field(default_factory=dict)


def side_file_schema(name: str) -> dict[str, Any]:
    """The JSON Schema of a manifest key naming a side file of the release (`name`, e.g.
    ``population_counts.json``) and its SHA-256."""
    return {
        "type": "object",
        "required": ["file", "sha256"],
        "properties": {
            "file": {"const": name},
            "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
        },
        "additionalProperties": False,
    }


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


class Transformation(PhaseHooks):
    """One transformation (see the module's docstring for the hooks; phases 2 and 3:
    `PhaseHooks`)."""

    #: the name it is registered under
    name: ClassVar[str]
    #: top-level YAML sections it owns (added to the config's known sections)
    config_sections: ClassVar[tuple[str, ...]] = ()
    #: its manifest keys, in schema order
    manifest_keys: ClassVar[Mapping[str, ManifestKey]] = {}
    #: the shared report section its own section (`report_section`) follows
    report_after: ClassVar[str] = ""
    #: the effective settings' key its `settings_entry` follows ("": after the run's own)
    settings_after: ClassVar[str] = ""
    #: its rows of the settings table (`with_settings` reads them from a run's settings)
    setting_names: ClassVar[tuple[str, ...]] = ()

    @classmethod
    def parse(cls, raw: Mapping[str, Any], ctx: ParseContext) -> Transformation | None:
        """Its settings from the whole config mapping (None: not asked for); ConfigError,
        one line naming the setting, when they are wrong."""
        return None

    @classmethod
    def with_settings(
        cls, current: Transformation | None, values: Mapping[str, Any]
    ) -> Transformation | None:
        """Its settings (`current`: the file's, None: not asked for) after a run's settings
        `values` (the settings table's, parsed): `current` when none of its rows is given."""
        return current

    def setting(self, name: str) -> Any:
        """The value of its settings table's row `name` (one of `setting_names`)."""
        raise KeyError(name)

    def check(self, config: Any) -> None:
        """ConfigError, one line, for what it does not run with in `config` (a `SkaldConfig`
        after the run's settings)."""

    def settings_entry(self) -> dict[str, Any]:
        return {}

    def settings_entries(self) -> dict[str, dict[str, Any]]:
        """Its entries of the effective settings by the place they follow (a shared key, as
        `settings_after`): default `settings_entry` after `settings_after`."""
        return {self.settings_after: self.settings_entry()}

    def columns(self) -> tuple[str, ...]:
        return ()

    def secrets(self) -> tuple[SecretRef, ...]:
        return ()

    def aggregated(self) -> Mapping[str, Any]:
        """QIDs it releases as an aggregate over their class (phases 1 and 2 count their
        values per class), each with its setting."""
        return {}

    def out_of_lattice(self) -> tuple[Any, ...]:
        """QIDs (`QidSpec`s) it takes out of the generalisation lattice, released beside the
        classes the others form."""
        return ()

    def arx_dp_refusal(self) -> str | None:
        """What it is called when ARX refuses it with differential privacy, or None."""
        return None

    def dp_refusal(self, unbounded: str) -> str | None:
        """Why it cannot run under differential privacy (`unbounded`: what no (epsilon,
        delta) bounds), or None."""
        return None

    def engine_refusal(self, engine: str) -> str | None:
        """The setting `engine` does not run (its refusal names it), or None."""
        return None

    def supports_engine(self, engine: str) -> bool:
        return self.engine_refusal(engine) is None

    @classmethod
    def per_chunk_refusal(cls, config: Any) -> str | None:
        """Why the per-chunk baseline (every chunk anonymised alone, ``--per-chunk``) cannot
        run `config` (a `SkaldConfig`) when it asks for this transformation, or None."""
        return None

    @classmethod
    def hides_input_facts(cls, config: Any) -> bool:
        """The manifest of `config`'s release states no fact over every input record (a
        built hierarchy's hash of its level-0 values, phase 1's flags of a date QID)."""
        return False

    def release_part(self, table: pa.Table) -> pa.Table:
        return table

    def manifest_section(self) -> dict[str, Any]:
        return {}

    def manifest_section_at(self, plan: EncodedPlan) -> dict[str, Any]:
        """Its manifest keys' values when they read phase 1's statistics (`plan`); default
        `manifest_section`."""
        return self.manifest_section()

    @classmethod
    def check_release(
        cls, manifest: Mapping[str, Any], location: DataLocation, parts: Sequence[str]
    ) -> None:
        """VerificationError, one line, when its part of the release is wrong."""

    @classmethod
    def counted_columns(cls, manifest: Mapping[str, Any] | None) -> tuple[str, ...]:
        """Columns of a release `skald verify` counts beside the QIDs and attributes."""
        return ()

    @classmethod
    def check_classes(cls, release: CountedRelease) -> None:
        """VerificationError, one line, when its counted columns are wrong."""

    @classmethod
    def released_rows(cls, manifest: Mapping[str, Any]) -> tuple[int | None, str] | None:
        """The rows its release holds, as the manifest records them, and the manifest's
        field that says so (`skald verify`'s row count; a count None: not checked); None: not
        its to say (the first transformation's answer counts; none: ``n_records``)."""
        return None

    @classmethod
    def kept_counts(cls, path: str, manifest: Mapping[str, Any] | None) -> KeptCounts | None:
        """The per-class counts release `path` keeps beside its parts for `skald verify`, read
        and checked now (DataError / VerificationError, one line); None: it keeps none."""
        return None

    @classmethod
    def judged_policy(
        cls, manifest: Mapping[str, Any] | None, policy: PrivacyPolicy, skipped: list[dict]
    ) -> tuple[PrivacyPolicy, list[dict]]:
        """The manifest's `policy` as far as the release's classes together judge it, and the
        criteria not re-checked (`skipped`, with the reason)."""
        return policy, skipped

    @classmethod
    def recheck(cls, release: JudgedRelease) -> Recheck | None:
        """Its re-check of what `judged_policy` left out, read from the release (its side
        files checked now); None: nothing of its own."""
        return None

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
