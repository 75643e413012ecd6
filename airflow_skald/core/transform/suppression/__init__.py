"""Suppression (Sweeney 2002, "Achieving k-anonymity privacy protection using generalization
and suppression": the outlier classes a node leaves below the models are suppressed instead of
generalising every record further; El Emam et al. 2009, "A globally optimal k-anonymity method
for the de-identification of health data": a limit on the share of records suppressed; ARX
3.9's ``ARXConfiguration.setSuppressionLimit``, its outliers masked with '*'; docs/design.md
§4; ADR 0075).

Every run suppresses: the transformation is always configured (its limit may be 0). The
package owns the feature's settings (`Suppression`: ``privacy.suppression_limit`` and
``suppressed_records``, parsed once from the file and after a run's settings), its part of
the effective settings (the config hash) and what phase 3 does with the suppressed records
(`drop`: left out; else masked; dropped, the ``sensitive_counts.json`` phase 3 keeps beside
the release: `sensitive_counts`), its manifest keys and their schema, what `skald verify`
reads back of them (`manifest_limit`, `manifest_drops`) and its lines in the report's
suppression and risk section (`risk_rows`). The lattice search, the models' figures and `skald verify`
read the limit as the policy's (`PrivacyPolicy.suppression_limit`, made from
`config.suppression.limit`).

Kept a floor above (ADR 0075): the settings table's rows (`settings/suppression.py`, read by
the CLI, the DAG params and the operators below the config).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar

from airflow_skald.core.errors import DataError, VerificationError
from airflow_skald.core.privacy.model import decimal_of
from airflow_skald.core.privacy.policy import max_suppressed
from airflow_skald.core.settings.table import BY_NAME, read_file_setting
from airflow_skald.core.text import esc, fmt_int
from airflow_skald.core.transform.base import ManifestKey, ParseContext, Transformation
from airflow_skald.core.transform.suppression.sensitive_counts import (
    SENSITIVE_COUNTS,
    overall_attributes,
    sensitive_counts_bytes,
)

if TYPE_CHECKING:
    from airflow_skald.core.transform.hooks_phases import Staged

#: the settings table's rows (`settings/suppression.py`) and the field each one sets
SETTINGS = {"suppression_limit": "limit", "suppressed_records": "records"}
#: what the suppressed records become: masked (every QID '*', ARX's outliers) or left out
MODES = ("mask", "drop")


def in_unit_range(value: object) -> bool:
    """A manifest's limit is a decimal between 0 and 1 (JSON Schema cannot say it)."""
    limit = decimal_of(value)
    return limit is not None and 0 <= limit <= 1


#: its manifest keys: the limit (before the models' section, which holds it exactly) and
#: the mode (before the QIDs, in the release's shape)
MANIFEST_KEYS = {
    "suppression_limit": ManifestKey(
        {"type": ["number", "string"]},
        "a number between 0 and 1",
        "the share of records that may be suppressed",
        before="privacy",
        meta={"check": lambda v, m: None if in_unit_range(v) else "suppression_limit"},
    ),
    "suppressed_records": ManifestKey(
        {"enum": list(MODES)},
        "mask or drop",
        "how suppressed records are released",
        before="quasi_identifiers",
    ),
}


@dataclass(frozen=True)
class Suppression(Transformation):
    """How many records may be suppressed (`limit`, a share of all records: the policy's
    ``floor(limit * n)``) and what the release does with them (`records`: mask or drop)."""

    limit: Fraction = Fraction(0)
    records: str = "mask"

    name: ClassVar[str] = "suppression"
    setting_names: ClassVar[tuple[str, ...]] = tuple(SETTINGS)
    manifest_keys: ClassVar[Mapping[str, ManifestKey]] = MANIFEST_KEYS
    kept_files: ClassVar[Mapping[str, str]] = {"sensitive_counts": SENSITIVE_COUNTS}

    @classmethod
    def parse(cls, raw: Mapping[str, Any], ctx: ParseContext) -> Suppression:
        """The file's settings (each row's default when left out): never None."""
        return cls(**{f: read_file_setting(raw, BY_NAME[name]) for name, f in SETTINGS.items()})

    @classmethod
    def with_settings(
        cls, current: Transformation | None, values: Mapping[str, Any]
    ) -> Suppression:
        """The file's settings after a run's (CLI flags, DAG params)."""
        base = current if isinstance(current, Suppression) else cls()
        given = {f: values[name] for name, f in SETTINGS.items() if name in values}
        return replace(base, **given) if given else base

    def setting(self, name: str) -> Any:
        return getattr(self, SETTINGS[name])

    @property
    def drop(self) -> bool:
        """Phase 3 leaves the suppressed records out (``suppressed_records: drop``); else it
        releases them with every QID masked."""
        return self.records == "drop"

    def at_limit(self, limit: Fraction) -> Suppression:
        """The same settings with another limit (differential privacy's rules: 1)."""
        return replace(self, limit=Fraction(limit))

    def masked(self) -> Suppression:
        """The same settings releasing the suppressed records masked (the utility analysis's
        sample, as ARX's outliers)."""
        return replace(self, records="mask")

    def settings_entries(self) -> dict[str, dict[str, Any]]:
        """Its two entries of the effective settings, where they always were: the limit
        after the models' settings, the mode after the research subset's."""
        return {
            "privacy": {"suppression_limit": str(self.limit)},
            "research_subset": {"suppressed_records": self.records},
        }

    def manifest_section(self) -> dict[str, Any]:
        """The limit as a number (the models' section holds it exactly) and the mode."""
        return {"suppression_limit": float(self.limit), "suppressed_records": self.records}

    # ------------------------------------------------------------------- phase 3
    @classmethod
    def side_files(cls, ctx: Staged, manifest: dict) -> dict:
        """Drop mode: what verify needs to re-check t-closeness & co. (`sensitive_counts`)."""
        overall = overall_attributes(ctx.policy.models, ctx.config.suppression.records)
        if not overall:
            return manifest
        stats = ctx.plan.stats
        data = sensitive_counts_bytes(stats.sensitive, overall, stats.n_rows)
        return ctx.files.keep(manifest, "sensitive_counts", SENSITIVE_COUNTS, data)

    # ------------------------------------------------------------------- read back
    @staticmethod
    def manifest_limit(manifest: Mapping[str, Any]) -> Fraction | None:
        """The limit a manifest records (its exact text when it has one; None: none)."""
        exact = (manifest.get("privacy") or {}).get("suppression_limit")
        value = exact if exact is not None else manifest.get("suppression_limit")
        return None if value is None else Fraction(str(value))

    @staticmethod
    def manifest_drops(manifest: Mapping[str, Any] | None) -> bool:
        """The release left its suppressed records out (a manifest without the key: masked)."""
        return (manifest or {}).get("suppressed_records", "mask") == "drop"

    @staticmethod
    def verified_limit(manifest: Mapping[str, Any] | None, given: Any, where: str) -> Any:
        """The limit `skald verify` judges a release by: `given` (--suppression-limit), else
        the manifest's (DataError, one line, when it has none: `where` names the manifest);
        no manifest: 0."""
        if given is not None:
            return given
        if manifest and "suppression_limit" not in manifest:
            raise DataError(
                f"{where} has no suppression_limit: give it to verify (--suppression-limit)"
            )
        return manifest["suppression_limit"] if manifest else 0

    @classmethod
    def released_rows(cls, manifest: Mapping[str, Any]) -> tuple[int | None, str] | None:
        """Dropped: every record but the suppressed ones (a manifest without n_suppressed:
        not checked, the rows missing are counted as suppressed by `class_figures`)."""
        if not cls.manifest_drops(manifest):
            return None
        if "n_suppressed" not in manifest:
            return None, "n_suppressed"
        return manifest["n_records"] - manifest["n_suppressed"], "n_records - n_suppressed"

    @staticmethod
    def check_suppressed(n_suppressed: int, n_records: int, limit: Fraction, where: str) -> int:
        """The records the limit allows to suppress of `n_records` (the policy's
        ``floor(limit * n)``); VerificationError (one line, `where` first) when a written
        release (`skald verify`, the run's own check, the per-chunk baseline) suppresses more."""
        allowed = max_suppressed(limit, n_records)
        if n_suppressed > allowed:
            raise VerificationError(
                f"{where} suppresses {n_suppressed} records, more than the limit allows ({allowed})"
            )
        return allowed

    @classmethod
    def risk_rows(cls, manifest: Mapping[str, Any]) -> list[list[str]]:
        """How many records were suppressed, how many the limit allowed, and how."""
        m = manifest
        return [
            ["suppressed records", fmt_int(m.get("n_suppressed") or 0)],
            ["suppression allowed (floor(limit · N))", fmt_int(m.get("max_suppressed"))],
            ["suppressed records are", esc(m.get("suppressed_records", "masked"))],
        ]
