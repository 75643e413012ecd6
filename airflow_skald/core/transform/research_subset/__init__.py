"""The research subset (ARX: the `DPresence` criterion with a `DataSubset`, and `KMap`'s exact
variant over it; Nergiz, Atzori and Clifton 2007, "Hiding the presence of individuals from
shared databases"; docs/design.md §4e; ADR 0040, 0045, 0068): the input is a population
table and a flag column (or a dataset of the subset's keys) marks the records to release;
δ-presence and exact k-map compare each released class with the population records of the
same class.

The package owns the feature: its settings and their parse (`ResearchSubset`, the value
`SkaldConfig.transformations` holds; ``research_subset:`` is its config section), its part
of the effective settings (after ``qid_priority``), what it runs with (`check`: the models,
and no utility analysis, microaggregation or local recoding), the manifest's
``population_counts`` key and the file it names (`counts`: its format and how `skald verify`
matches it with the release's classes), and the rules by which the passes see a node's
classes as the subset's (`classes`: the flags, the subset's views of phase 2's counts, phase
3's rows) and what `skald audit` judges with it (`audit`, through the hooks `audited_config`,
`audited_columns` and `audited_classes`). The phases and the engines read the flag column
through the typed accessors `SkaldConfig.research_subset` (this transformation) and
`SkaldConfig.keyed_subset`.

Kept where they are (ADR 0074): reading the flag a keyed subset derives
(`data/subset_keys.py`, below `read_chunk`) and the engines' SQL for it
(`engine/sql/subset.py`). `skald verify` reads `population_counts.json` through the hook
`kept_counts` (the classes judged with it: `counts.PopulationCounts.on_tables`). The file is
counted at the chosen node after the search (`at_node`, the registry's `after_search`) and
kept beside the release in phase 3 (`side_files`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from airflow_skald.core.data.location import parse_location
from airflow_skald.core.data.subset_keys import FLAG, KeyedSubset
from airflow_skald.core.errors import ConfigError
from airflow_skald.core.privacy.model import PrivacyModel
from airflow_skald.core.transform.base import (
    ManifestKey,
    ParseContext,
    Transformation,
    side_file_schema,
)
from airflow_skald.core.transform.local_recoding import LocalRecoding
from airflow_skald.core.transform.research_subset.counts import POPULATION_COUNTS

if TYPE_CHECKING:
    from airflow_skald.core.privacy import ClassTable, PrivacyPolicy
    from airflow_skald.core.transform.counted import KeptCounts
    from airflow_skald.core.transform.hooks_phases import Searched, Staged

SECTION = "research_subset"


@dataclass(frozen=True)
class ResearchSubset(Transformation):
    """`research_subset: {column: in_study}` (a boolean column marking released records) or
    `{path: ..., key: [col, ...]}` (a dataset of the subset's keys: a record is released iff
    its key is among them; its flag is the derived column `subset_keys.FLAG`)."""

    column: str
    keyed: KeyedSubset | None = None

    name: ClassVar[str] = "research_subset"
    config_sections: ClassVar[tuple[str, ...]] = (SECTION,)
    settings_after: ClassVar[str] = "qid_priority"
    manifest_keys: ClassVar[Mapping[str, ManifestKey]] = {
        "population_counts": ManifestKey(
            side_file_schema("population_counts.json"),
            "an object naming population_counts.json and its sha256",
            "a research subset: the file keeping each released class's population and subset "
            "record counts (counts only), so that verify re-checks delta-presence and exact "
            "k-map; its SHA-256",
            before="recoding_steps",
        )
    }
    kept_files: ClassVar[Mapping[str, str]] = {"population_counts": POPULATION_COUNTS}

    @classmethod
    def parse(cls, raw: Mapping[str, Any], ctx: ParseContext) -> ResearchSubset | None:
        """The section (None: not given); a keyed dataset's location as the config reads
        `input:` (relative to the config file's folder)."""
        section, where = raw.get(SECTION), SECTION
        if section is None:
            return None
        if not isinstance(section, dict):
            raise ConfigError(
                f"{where} must be a mapping: {{column: ...}} or {{path: ..., key: ...}}"
            )
        if ("column" in section) == ("path" in section):
            raise ConfigError(f"{where} takes one of 'column' or 'path' (with 'key')")
        if "column" in section:
            unknown = sorted(set(section) - {"column"})
            if unknown:
                raise ConfigError(f"{where} has unknown key '{unknown[0]}' (allowed: column)")
            column = section["column"]
            if not isinstance(column, str) or not column or column == FLAG:
                raise ConfigError(f"{where}.column must name a boolean column")
            return cls(column)
        unknown = sorted(set(section) - {"path", "format", "delimiter", "key"})
        if unknown:
            raise ConfigError(f"{where} has unknown key '{unknown[0]}'")
        key = section.get("key")
        key = [key] if isinstance(key, str) else key
        if not isinstance(key, list) or not key or not all(isinstance(k, str) and k for k in key):
            raise ConfigError(f"{where}.key must name the key column(s) both tables hold")
        places = {k: section[k] for k in ("path", "format", "delimiter") if k in section}
        return cls(FLAG, KeyedSubset(parse_location(places, where, ctx.base_dir), tuple(key)))

    @property
    def input_columns(self) -> tuple[str, ...]:
        """The input's columns it reads: the flag column, or the key columns."""
        return self.keyed.key if self.keyed else (self.column,)

    def describe(self) -> dict:
        if self.keyed is None:
            return {"column": self.column}
        where = self.keyed.location
        return {"path": where.path, "format": where.format, "key": list(self.keyed.key)}

    def settings_entry(self) -> dict[str, Any]:
        return {SECTION: self.describe()}

    @classmethod
    def per_chunk_refusal(cls, config: Any) -> str | None:
        if config.transformation(cls) is None:
            return None
        return (
            "--per-chunk does not take a research_subset (a chunk holds part of the population "
            "table, so its population counts are not the table's)"
        )

    @classmethod
    def kept_counts(cls, path: str, manifest: Mapping[str, Any] | None) -> KeptCounts | None:
        """`population_counts.json`, when the manifest names it: δ-presence and exact k-map
        re-checked from it (`counts`)."""
        from airflow_skald.core.transform.research_subset.counts import read_population_counts

        return read_population_counts(path, manifest)

    # ------------------------------------------------------------------- skald audit
    @classmethod
    def audited_config(cls, config: Any, release: bool) -> tuple[Any, list[dict]]:
        """A release without its population-based models, a population table as it is
        (`audit.audited`)."""
        if config.transformation(cls) is None:
            return config, []
        from airflow_skald.core.transform.research_subset.audit import audited

        return audited(config, release)

    def audited_columns(self, attributes: Sequence[str]) -> tuple[str, ...]:
        """The flag column, or the key columns in place of a keyed subset's derived flag."""
        return (*(a for a in attributes if a != FLAG), *self.input_columns)

    @classmethod
    def audited_classes(
        cls, policy: PrivacyPolicy, star: ClassTable, table: ClassTable
    ) -> tuple[ClassTable, ClassTable]:
        """A population table's classes judged as the subset's (`classes.subset_view`)."""
        if policy.subset is None:
            return star, table
        from airflow_skald.core.transform.research_subset.classes import subset_view

        column, flags = policy.subset.column, policy.subset.mask
        return subset_view(None, star, column, flags)[1], subset_view(None, table, column, flags)[1]

    def check(self, config: Any) -> None:
        """The models it runs with (`check_subset_models`), then what needs every record of
        the population or the release's rows: the utility analysis (it reads the released
        rows), microaggregation and local recoding (ARX refuses them with δ-presence and exact
        k-map)."""
        check_subset_models(config.privacy)
        if config.utility is not None:
            raise ConfigError("the utility analysis cannot be combined with a research_subset")
        if config.microaggregations:
            raise ConfigError("microaggregation cannot be combined with a research_subset")
        if config.transformation(LocalRecoding) is not None:
            raise ConfigError(
                "transformation.local_recoding does not apply with a research_subset (ARX "
                "allows it with k, l, t, b-likeness, d-disclosure, average risk and estimated "
                "k-map only)"
            )

    # ------------------------------------------------------------------- phases 2 and 3
    @classmethod
    def after_search(cls, ctx: Searched) -> None:
        """The population counts at the chosen node (what verify re-checks δ and k-map
        from), kept in the run's store."""
        from airflow_skald.core.transform.research_subset.at_node import of_run

        counted = of_run(ctx.config, ctx.classes, ctx.decision)
        if counted is not None:
            ctx.store.write_bytes(POPULATION_COUNTS, counted)

    @classmethod
    def side_files(cls, ctx: Staged, manifest: dict) -> dict:
        """The population counts phase 2 kept, beside the release."""
        if not ctx.store.exists(POPULATION_COUNTS):
            return manifest
        data = ctx.store.read_bytes(POPULATION_COUNTS)
        return ctx.files.keep(manifest, "population_counts", POPULATION_COUNTS, data)

    @classmethod
    def released_records(cls, ctx: Staged) -> int | None:
        """The subset's records, as phase 1 counted them."""
        if ctx.policy.subset is None:
            return None
        from airflow_skald.core.transform.research_subset.classes import released_records

        stats = ctx.plan.stats
        return released_records(ctx.policy.subset, stats.n_rows, stats.sensitive)


def check_subset_models(models: Sequence[PrivacyModel]) -> None:
    """A research subset is released under k-anonymity, δ-presence, exact k-map, l-diversity
    and t-closeness (over the subset's records, ADR 0045); other models that read a sensitive
    distribution or estimate the population from the sample: refused, one line."""
    for m in models:  # l and t judge the subset's records of each class, as ARX (ADR 0045)
        if m.population_based or m.with_research_subset:
            continue
        raise ConfigError(
            f"research_subset cannot be combined with privacy.{m.config_key} (allowed: k, "
            "delta_presence, k_map without an estimator, l_diversity, t_closeness)"
        )
