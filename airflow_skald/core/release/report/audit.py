"""Section: what an auditor matches the release with."""

from __future__ import annotations

from collections.abc import Mapping

from airflow_skald.core.release.report.format import table
from airflow_skald.core.text import esc, fmt_int
from airflow_skald.core.transform import registry as transform_registry


def audit_html(m: Mapping, with_run_record: bool) -> str:
    """What an auditor matches the release with: columns removed and kept, parts, hashes."""
    rows = [
        ["direct identifiers removed", esc(", ".join(m.get("direct_identifiers_removed") or []))],
        ["sensitive attributes kept", esc(", ".join(m.get("sensitive_attributes") or []))],
        *transform_registry.report_rows(m),
        ["parts", fmt_int(len(m.get("parts") or []))],
        ["config sha256", f"<code>{esc(m.get('config_sha256'))}</code>"],
        ["input fingerprint", f"<code>{esc(m.get('input_fingerprint'))}</code>"],
    ]
    sources = "manifest.json and run.json" if with_run_record else "manifest.json"
    return (
        "<h2>Audit</h2>"
        + table(rows)
        + transform_registry.report_notes(m)
        + f'<p class="muted">Generated from {sources} only: no record values.</p>'
    )
