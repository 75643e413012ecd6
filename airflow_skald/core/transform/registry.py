"""The transformations a config may ask for: one line per transformation (ADR 0060, 0078).
Config loading, the input's check, the runner's phases 2 and 3 (`after_search`,
`finish_release`, `after_verify`: a loop over every registered transformation), the
per-chunk baseline's check of each part (`part_policy`, `checked_part`), the
manifest and its schema, `skald verify`, the report, the engines' support check and
differential privacy's rules ask this registry; nothing else names a transformation's class. The functions read `TRANSFORMATIONS` when called (a test may
register one of its own)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from airflow_skald.core.transform.base import (
    BeyondNode,
    ManifestKey,
    ParseContext,
    ReportSection,
    Transformation,
)
from airflow_skald.core.transform.differential_privacy import DifferentialPrivacySample
from airflow_skald.core.transform.local_recoding import LocalRecoding
from airflow_skald.core.transform.microaggregation import Microaggregation
from airflow_skald.core.transform.pseudonyms import Pseudonyms
from airflow_skald.core.transform.research_subset import ResearchSubset
from airflow_skald.core.transform.suppression import Suppression

if TYPE_CHECKING:
    import pyarrow as pa

    from airflow_skald.core.data.location import DataLocation
    from airflow_skald.core.privacy import ClassTable, PrivacyPolicy
    from airflow_skald.core.settings.secret import SecretRef
    from airflow_skald.core.transform.counted import (
        CountedRelease,
        JudgedRelease,
        KeptCounts,
        Recheck,
    )
    from airflow_skald.core.transform.encoded import EncodedPlan
    from airflow_skald.core.transform.hooks_engine import KeyedRun
    from airflow_skald.core.transform.hooks_phases import ChunkPart, Searched, Staged

TRANSFORMATIONS: tuple[type[Transformation], ...] = (
    Suppression,  # the classes below the models suppressed, up to a limit (docs/design.md §4)
    ResearchSubset,  # a population table's flagged records released (docs/design.md §4e)
    Microaggregation,  # a QID released as its class's aggregate (docs/design.md §4f)
    Pseudonyms,  # direct identifiers replaced by keyed pseudonyms (docs/design.md §2a)
    LocalRecoding,  # the suppressed records recoded step by step (docs/design.md §4f)
    DifferentialPrivacySample,  # SafePub's sample, search and report (docs/design.md §4e)
)


def config_sections() -> set[str]:
    """The top-level config sections the transformations own."""
    return {s for cls in TRANSFORMATIONS for s in cls.config_sections}


def parse_all(raw: Mapping[str, Any], ctx: ParseContext) -> tuple[Transformation, ...]:
    """Every transformation the config asks for, in registry order."""
    return tuple(t for cls in TRANSFORMATIONS if (t := cls.parse(raw, ctx)) is not None)


def setting_names() -> set[str]:
    """The settings table's rows the transformations read from a run's settings."""
    return {n for cls in TRANSFORMATIONS for n in cls.setting_names}


def with_settings(
    transformations: Sequence[Transformation], values: Mapping[str, Any]
) -> tuple[Transformation, ...]:
    """The transformations after a run's settings `values`, in registry order."""
    out = []
    for cls in TRANSFORMATIONS:
        current = next((t for t in transformations if type(t) is cls), None)
        if (t := cls.with_settings(current, values)) is not None:
            out.append(t)
    others = [t for t in transformations if type(t) not in TRANSFORMATIONS]
    return (*out, *others)


def aggregated_of(transformations: Sequence[Transformation]) -> dict[str, Any]:
    """QIDs released as an aggregate over their class, each with its setting."""
    return {k: v for t in transformations for k, v in t.aggregated().items()}


def out_of_lattice_of(transformations: Sequence[Transformation]) -> tuple[Any, ...]:
    """QIDs (their specs) taken out of the lattice, released beside the classes."""
    return tuple(q for t in transformations for q in t.out_of_lattice())


def setting_of(transformations: Sequence[Transformation], name: str) -> Any:
    """The value of the settings table's row `name` a transformation reads (None: the config
    does not ask for that transformation)."""
    t = next((t for t in transformations if name in t.setting_names), None)
    return t.setting(name) if t is not None else None


def check(transformations: Sequence[Transformation], config: Any) -> None:
    for t in transformations:
        t.check(config)


def arx_dp_refusal(transformations: Sequence[Transformation]) -> str | None:
    return next((r for t in transformations if (r := t.arx_dp_refusal())), None)


def settings_of(transformations: Sequence[Transformation], after: str = "") -> dict[str, Any]:
    """The effective settings' entries of the transformations placed after the key `after`."""
    return {k: v for t in transformations for k, v in t.settings_entries().get(after, {}).items()}


def columns_of(transformations: Sequence[Transformation]) -> tuple[str, ...]:
    """Input columns the transformations read and release transformed."""
    return tuple(dict.fromkeys(c for t in transformations for c in t.columns()))


def secrets_of(transformations: Sequence[Transformation]) -> tuple[SecretRef, ...]:
    return tuple(ref for t in transformations for ref in t.secrets())


def dp_refusal(transformations: Sequence[Transformation], unbounded: str) -> str | None:
    return next((r for t in transformations if (r := t.dp_refusal(unbounded))), None)


def engine_refusal(transformations: Sequence[Transformation], engine: str) -> str | None:
    return next((r for t in transformations if (r := t.engine_refusal(engine))), None)


def per_chunk_refusal(config: Any) -> str | None:
    """The first registered transformation's refusal of the per-chunk baseline, or None."""
    return next((r for cls in TRANSFORMATIONS if (r := cls.per_chunk_refusal(config))), None)


def hides_input_facts(config: Any) -> bool:
    """A registered transformation keeps facts over every input record out of the manifest."""
    return any(cls.hides_input_facts(config) for cls in TRANSFORMATIONS)


def row_sample(run: KeyedRun) -> Any:
    """The run's keyed sample of the input's rows (a `RowSample`), or None: every row."""
    return next((s for cls in TRANSFORMATIONS if (s := cls.row_sample(run)) is not None), None)


def search_key(run: KeyedRun) -> int | None:
    """The key of the run's search stream, or None: the search draws nothing."""
    return next((k for cls in TRANSFORMATIONS if (k := cls.search_key(run)) is not None), None)


def release_part(transformations: Sequence[Transformation], table: pa.Table) -> pa.Table:
    """Phase 3: a part's table through each configured transformation."""
    for t in transformations:
        table = t.release_part(table)
    return table


def after_search(ctx: Searched) -> None:
    """Phase 2, after the search: what each transformation keeps for phase 3."""
    for cls in TRANSFORMATIONS:
        cls.after_search(ctx)


def finish_release(ctx: Staged, manifest: dict) -> dict:
    """Phase 3, before the shared check: the run's own checks of the staged release (each
    transformation's, in registry order), then the side files each keeps for `skald verify`."""
    for cls in TRANSFORMATIONS:
        manifest = cls.checked_release(ctx, manifest)
    for cls in TRANSFORMATIONS:
        manifest = cls.side_files(ctx, manifest)
    return manifest


def released_records(ctx: Staged) -> int:
    """The records the staged release is made of (every input record unless a
    transformation releases fewer)."""
    found = (n for cls in TRANSFORMATIONS if (n := cls.released_records(ctx)) is not None)
    return next(found, ctx.plan.stats.n_rows)


def verified_policy(ctx: Staged) -> PrivacyPolicy:
    """The policy the shared check judges the staged release's classes under."""
    policy = ctx.policy
    for cls in TRANSFORMATIONS:
        policy = cls.verified_policy(ctx, policy)
    return policy


def after_verify(ctx: Staged, manifest: dict) -> dict:
    """Phase 3, after the shared check: each transformation's own check and its files."""
    for cls in TRANSFORMATIONS:
        manifest = cls.after_verify(ctx, manifest)
    return manifest


def part_policy(ctx: ChunkPart) -> PrivacyPolicy:
    """The per-chunk baseline: the policy one chunk's part is judged under alone."""
    policy = ctx.policy
    for cls in TRANSFORMATIONS:
        policy = cls.part_policy(ctx, policy)
    return policy


def checked_part(ctx: ChunkPart) -> None:
    """The per-chunk baseline: each transformation's own check of one chunk's part."""
    for cls in TRANSFORMATIONS:
        cls.checked_part(ctx)


def manifest_sections(
    transformations: Sequence[Transformation], plan: EncodedPlan
) -> dict[str, Any]:
    return {k: v for t in transformations for k, v in t.manifest_section_at(plan).items()}


def manifest_keys() -> Iterator[tuple[str, ManifestKey]]:
    """Every registered transformation's manifest keys (schema order within each)."""
    for cls in TRANSFORMATIONS:
        yield from cls.manifest_keys.items()


def check_release(
    manifest: Mapping[str, Any], location: DataLocation, parts: Sequence[str]
) -> None:
    for cls in TRANSFORMATIONS:
        cls.check_release(manifest, location, parts)


def counted_columns(manifest: Mapping[str, Any] | None) -> tuple[str, ...]:
    """The columns `skald verify` counts beside the QIDs and attributes, in registry order."""
    return tuple(n for cls in TRANSFORMATIONS for n in cls.counted_columns(manifest))


def check_classes(release: CountedRelease) -> None:
    """Each transformation's check of its counted columns (`release.start`: the first)."""
    start = release.start
    for cls in TRANSFORMATIONS:
        cls.check_classes(replace(release, start=start))
        start += len(cls.counted_columns(release.manifest))


def released_rows(manifest: Mapping[str, Any]) -> tuple[int | None, str]:
    """The rows a release holds as its manifest records them, and the field that says so: the
    first transformation's answer (registry order), else every record (``n_records``)."""
    for cls in TRANSFORMATIONS:
        if (rows := cls.released_rows(manifest)) is not None:
            return rows
    return manifest["n_records"], "n_records"


def kept_counts(path: str, manifest: Mapping[str, Any] | None) -> tuple[KeptCounts, ...]:
    """The per-class counts release `path` keeps beside its parts, each read and checked."""
    return tuple(c for cls in TRANSFORMATIONS if (c := cls.kept_counts(path, manifest)))


def judged_policy(
    manifest: Mapping[str, Any] | None, policy: PrivacyPolicy, skipped: list[dict]
) -> tuple[PrivacyPolicy, list[dict]]:
    """The manifest's policy as the release's classes together judge it (each transformation
    narrowing it in turn) and the criteria left to the transformations or not re-checked."""
    for cls in TRANSFORMATIONS:
        policy, skipped = cls.judged_policy(manifest, policy, skipped)
    return policy, skipped


def rechecks(release: JudgedRelease) -> tuple[Recheck, ...]:
    """The transformations' own re-checks of a release judged without a run."""
    return tuple(r for cls in TRANSFORMATIONS if (r := cls.recheck(release)) is not None)


def kept_files(manifest: Mapping[str, Any]) -> tuple[str, ...]:
    """The files a release keeps beside its parts as its manifest names them (registry
    order), whatever the run's config: a table release copies them beside its rows."""
    return tuple(
        name
        for cls in TRANSFORMATIONS
        for key, name in cls.kept_files.items()
        if isinstance(manifest.get(key), Mapping)
    )


def audited_config(config: Any, release: bool) -> tuple[Any, list[dict]]:
    """`skald audit`: the config as a table as it is can be audited (each transformation
    narrowing it in turn), and the models left out."""
    return _narrowed(lambda cls, c: cls.audited_config(c, release), config)


def audited_models(
    manifest: Mapping[str, Any] | None, models: tuple[Any, ...]
) -> tuple[tuple[Any, ...], list[dict]]:
    """`skald audit`: the models a release's classes together are judged by, and the others."""
    return _narrowed(lambda cls, m: cls.audited_models(manifest, m), models)


def _narrowed(step: Callable[[Any, Any], tuple[Any, list[dict]]], value: Any) -> tuple[Any, list]:
    """`value` through each registered transformation's `step` in turn, and what each left
    out (the models, each with the reason)."""
    not_checked: list[dict] = []
    for cls in TRANSFORMATIONS:
        value, listed = step(cls, value)
        not_checked += listed
    return value, not_checked


def audited_columns(
    transformations: Sequence[Transformation], attributes: Sequence[str]
) -> tuple[str, ...]:
    """`skald audit`: the input's columns read for the counted `attributes`."""
    columns = tuple(attributes)
    for t in transformations:
        columns = t.audited_columns(columns)
    return columns


def audited_classes(
    policy: PrivacyPolicy, star: ClassTable, table: ClassTable
) -> tuple[ClassTable, ClassTable]:
    """`skald audit`: the counted classes as the policy judges them."""
    for cls in TRANSFORMATIONS:
        star, table = cls.audited_classes(policy, star, table)
    return star, table


def report_rows(manifest: Mapping[str, Any]) -> list[list[str]]:
    return [row for cls in TRANSFORMATIONS for row in cls.report_rows(manifest)]


def risk_rows(manifest: Mapping[str, Any]) -> list[list[str]]:
    """The transformations' lines heading the report's suppression and risk section."""
    return [row for cls in TRANSFORMATIONS for row in cls.risk_rows(manifest)]


def report_notes(manifest: Mapping[str, Any]) -> str:
    return "".join(cls.report_note(manifest) for cls in TRANSFORMATIONS)


def report_sections(manifest: Mapping[str, Any], after: str) -> list[ReportSection]:
    """The transformations' own report sections that follow the shared section `after`."""
    return [
        s
        for cls in TRANSFORMATIONS
        if cls.report_after == after and (s := cls.report_section(manifest)) is not None
    ]


def lattice_floor(manifest: Mapping[str, Any]) -> str | None:
    """A transformation's words for the report's lattice floor (None: the measured root)."""
    return next((w for cls in TRANSFORMATIONS if (w := cls.lattice_floor(manifest))), None)


def beyond_node(manifest: Mapping[str, Any]) -> BeyondNode | None:
    """What a transformation released beyond the chosen node (None: the node's release)."""
    return next((b for cls in TRANSFORMATIONS if (b := cls.beyond_node(manifest))), None)
