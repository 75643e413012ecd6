"""Pseudonyms for direct identifiers (docs/design.md §2a; ADR 0060): ``direct_identifiers:
[{pid: pseudonymise}]`` with ``pseudonym_key`` releases each value of ``pid`` as its keyed
HMAC-SHA-256 (Bellare, Canetti and Krawczyk 1996; RFC 2104) instead of dropping the column.

The package owns the feature from the config to the report: its settings (`settings`: the key
and its check value), phase 3's hashing (`hashing`), the manifest's ``pseudonymised`` key,
`skald verify`'s check that every value is a pseudonym (`verify`) and the report's lines
(`report`). The key is a secret: only its check value reaches the settings and the manifest.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from airflow_skald.core.settings.direct_identifiers import parse_direct_identifiers
from airflow_skald.core.settings.secret import SecretRef
from airflow_skald.core.transform.base import ManifestKey, ParseContext, Transformation
from airflow_skald.core.transform.pseudonyms.settings import key_id, parse_pseudonym_key

if TYPE_CHECKING:
    import pyarrow as pa

    from airflow_skald.core.data.location import DataLocation

_NAMES = {"type": "array", "items": {"type": "string", "minLength": 1}}


@dataclass(frozen=True)
class Pseudonyms(Transformation):
    """The pseudonymised columns (maybe none: a key given alone is still read) and where the
    key is (never the key)."""

    names: tuple[str, ...]
    key: SecretRef | None = field(default=None, compare=False, repr=False)

    name: ClassVar[str] = "pseudonyms"
    config_sections: ClassVar[tuple[str, ...]] = ("pseudonym_key",)
    manifest_keys: ClassVar[Mapping[str, ManifestKey]] = {
        "pseudonymised": ManifestKey(
            _NAMES,
            "a list of column names",
            "direct identifiers replaced by HMAC-SHA-256 pseudonyms",
        )
    }

    @classmethod
    def parse(cls, raw: Mapping[str, Any], ctx: ParseContext) -> Pseudonyms | None:
        _, pseudonymised = parse_direct_identifiers(raw.get("direct_identifiers") or [])
        key = parse_pseudonym_key(raw.get("pseudonym_key"), pseudonymised, ctx.base_dir)
        if key is None:  # a key without a column is still read (and kept apart from dp_key)
            return None
        return cls(tuple(pseudonymised), key)

    def settings_entry(self) -> dict[str, Any]:
        """The columns and the key's check value (never the key): a release made with another
        key has other settings."""
        if not self.names:
            return {}
        return {
            "pseudonymised": list(self.names),
            "pseudonym_key_id": key_id(self.key) if self.key else None,
        }

    def columns(self) -> tuple[str, ...]:
        return self.names

    def secrets(self) -> tuple[SecretRef, ...]:
        return (self.key,) if self.key is not None else ()

    def dp_refusal(self, unbounded: str) -> str | None:
        if not self.names:
            return None
        return (
            f"direct identifier '{self.names[0]}' would be released as a pseudonym under "
            f"differential_privacy: {unbounded}; drop it instead of pseudonymising it"
        )

    def release_part(self, table: pa.Table) -> pa.Table:
        from airflow_skald.core.transform.pseudonyms.hashing import Hasher, pseudonymise

        if not self.names:
            return table
        hasher = Hasher(self.key.secret())
        for name in self.names:
            i = table.schema.get_field_index(name)
            table = table.set_column(i, name, pseudonymise(table.column(i), hasher))
        return table

    def manifest_section(self) -> dict[str, Any]:
        return {"pseudonymised": list(self.names)} if self.names else {}

    @classmethod
    def check_release(
        cls, manifest: Mapping[str, Any], location: DataLocation, parts: Sequence[str]
    ) -> None:
        from airflow_skald.core.transform.pseudonyms.verify import pseudonyms_well_formed

        pseudonyms_well_formed(manifest, location, parts)

    @classmethod
    def report_rows(cls, manifest: Mapping[str, Any]) -> list[list[str]]:
        from airflow_skald.core.transform.pseudonyms.report import pseudonym_rows

        return pseudonym_rows(manifest)

    @classmethod
    def report_note(cls, manifest: Mapping[str, Any]) -> str:
        from airflow_skald.core.transform.pseudonyms.report import pseudonym_note

        return pseudonym_note(manifest)
