"""The transformations a config may ask for: one line per transformation (ADR 0060). Config
loading, the input's check, phase 3, the manifest and its schema, `skald verify`, the report,
the engines' support check and differential privacy's rules ask this registry; nothing else
names a transformation's class. The functions read `TRANSFORMATIONS` when called (a test may
register one of its own)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from airflow_skald.core.transform.base import (
    ManifestKey,
    ParseContext,
    ReportSection,
    Transformation,
)
from airflow_skald.core.transform.differential_privacy import DifferentialPrivacySample
from airflow_skald.core.transform.pseudonyms import Pseudonyms

if TYPE_CHECKING:
    import pyarrow as pa

    from airflow_skald.core.data.location import DataLocation
    from airflow_skald.core.settings.secret import SecretRef

TRANSFORMATIONS: tuple[type[Transformation], ...] = (
    Pseudonyms,  # direct identifiers replaced by keyed pseudonyms (docs/design.md §2a)
    DifferentialPrivacySample,  # SafePub's sample, search and report (docs/design.md §4e)
)


def config_sections() -> set[str]:
    """The top-level config sections the transformations own."""
    return {s for cls in TRANSFORMATIONS for s in cls.config_sections}


def parse_all(raw: Mapping[str, Any], ctx: ParseContext) -> tuple[Transformation, ...]:
    """Every transformation the config asks for, in registry order."""
    return tuple(t for cls in TRANSFORMATIONS if (t := cls.parse(raw, ctx)) is not None)


def settings_of(transformations: Sequence[Transformation]) -> dict[str, Any]:
    return {k: v for t in transformations for k, v in t.settings_entry().items()}


def columns_of(transformations: Sequence[Transformation]) -> tuple[str, ...]:
    """Input columns the transformations read and release transformed."""
    return tuple(dict.fromkeys(c for t in transformations for c in t.columns()))


def secrets_of(transformations: Sequence[Transformation]) -> tuple[SecretRef, ...]:
    return tuple(ref for t in transformations for ref in t.secrets())


def dp_refusal(transformations: Sequence[Transformation], unbounded: str) -> str | None:
    return next((r for t in transformations if (r := t.dp_refusal(unbounded))), None)


def engine_refusal(transformations: Sequence[Transformation], engine: str) -> str | None:
    return next((r for t in transformations if (r := t.engine_refusal(engine))), None)


def release_part(transformations: Sequence[Transformation], table: pa.Table) -> pa.Table:
    """Phase 3: a part's table through each configured transformation."""
    for t in transformations:
        table = t.release_part(table)
    return table


def manifest_sections(transformations: Sequence[Transformation]) -> dict[str, Any]:
    return {k: v for t in transformations for k, v in t.manifest_section().items()}


def manifest_keys() -> Iterator[tuple[str, ManifestKey]]:
    """Every registered transformation's manifest keys (schema order within each)."""
    for cls in TRANSFORMATIONS:
        yield from cls.manifest_keys.items()


def check_release(
    manifest: Mapping[str, Any], location: DataLocation, parts: Sequence[str]
) -> None:
    for cls in TRANSFORMATIONS:
        cls.check_release(manifest, location, parts)


def report_rows(manifest: Mapping[str, Any]) -> list[list[str]]:
    return [row for cls in TRANSFORMATIONS for row in cls.report_rows(manifest)]


def report_notes(manifest: Mapping[str, Any]) -> str:
    return "".join(cls.report_note(manifest) for cls in TRANSFORMATIONS)


def report_sections(manifest: Mapping[str, Any], after: str) -> list[ReportSection]:
    """The transformations' own report sections that follow the shared section `after`."""
    return [
        s
        for cls in TRANSFORMATIONS
        if cls.report_after == after and (s := cls.report_section(manifest)) is not None
    ]
