"""Section part (audit): the report's lines on pseudonymised direct identifiers (docs/design.md §2a): which columns, how,
and what a pseudonym lets a reader do (link records), from the manifest alone."""

from __future__ import annotations

import html
from collections.abc import Mapping

from airflow_skald.core.settings import keyed


def pseudonym_rows(m: Mapping) -> list[list[str]]:
    """The audit table's row naming the pseudonymised columns (none: no row)."""
    names = m.get("pseudonymised") or []
    if not names:
        return []
    return [["direct identifiers pseudonymised", html.escape(", ".join(names))]]


def pseudonym_note(m: Mapping) -> str:
    """What pseudonyms mean for a reader of the release."""
    names = m.get("pseudonymised") or []
    if not names:
        return ""
    settings = m.get("settings") or {}
    key_id = settings.get("pseudonym_key_id") if isinstance(settings, Mapping) else None
    check = f" (key check value <code>{html.escape(str(key_id))}</code>)" if key_id else ""
    return (
        f"<p>{html.escape(', '.join(names))}: each value is replaced by its pseudonym, the "
        "HMAC-SHA-256 of the value under a secret key in the pseudonyms' own domain "
        f"(<code>{html.escape(keyed.PSEUDONYM)}</code>), as 64 hex digits. Pseudonyms link a "
        "person's records within this release and across releases made with the same "
        f"key{check}; a release made with another key cannot be linked to this one. Whoever "
        "holds the key can compute the pseudonym of a known identifier: keep it secret."
        f"{_engine_saw(m)}</p>"
    )


def _engine_saw(m: Mapping) -> str:
    """An engine run (docs/design.md §2b): the engine computed the pseudonyms, so it held
    the key (as data, a one-row temporary table, never in SQL text)."""
    engine = m.get("engine")
    if not isinstance(engine, str) or engine in ("", "chunks"):
        return ""
    return (
        f" The pseudonyms were computed by the {html.escape(engine)} engine, which held the "
        "key for the run as a temporary table (never in SQL text): the engine saw it."
    )
