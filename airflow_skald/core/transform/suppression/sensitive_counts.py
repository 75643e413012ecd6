"""Drop mode's ``sensitive_counts.json`` (docs/design.md §4; issue 34.3): when the suppressed
records are left out of the release and a criterion compares classes with a sensitive
attribute's distribution over ALL input records (t-closeness, b-likeness, d-disclosure:
``PrivacyModel.needs_overall``), the release keeps, per such attribute, its distinct values
and how many input records hold each, so that `skald verify` re-checks those criteria from
the release alone. In mask mode the release holds every record's value already, so nothing is
written. The file holds values (personal data, as the parts do): the manifest only names it,
with its SHA-256. Read back and matched by `release.check.archive`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from airflow_skald.core.privacy import PrivacyModel

SENSITIVE_COUNTS = "sensitive_counts.json"


def overall_attributes(models: tuple[PrivacyModel, ...], mode: str) -> list[str]:
    """The attributes whose overall distribution a release must keep: suppressed records are
    dropped and a criterion compares classes with that distribution."""
    if mode != "drop":
        return []
    return list(dict.fromkeys(m.attribute for m in models if m.needs_overall and m.attribute))


def sensitive_counts_bytes(
    sensitive: Mapping[str, Any], attributes: list[str], n_records: int
) -> bytes:
    """The file's bytes (deterministic: a retry writes the same)."""
    body = {
        "n_records": n_records,
        "attributes": {
            a: {
                "values": list(sensitive[a].values),
                "counts": [int(c) for c in sensitive[a].counts],
                "numeric": bool(sensitive[a].numeric),
            }
            for a in attributes
        },
    }
    return json.dumps(body, indent=1).encode() + b"\n"
