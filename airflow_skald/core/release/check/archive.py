"""What a release keeps beside its parts so that `skald verify` re-checks every criterion from
the release alone (issue 34.3):

- ``sensitive_counts.json``, when suppressed records are dropped and a criterion compares
  classes with a sensitive attribute's distribution over ALL input records (written by the
  suppression's package, `transform.suppression.sensitive_counts`; the manifest names it with
  its SHA-256, ``sensitive_counts``: ``{"file", "sha256"}``): read back here, and verify
  refuses a file that does not match it.
- the hierarchy of a hierarchical t-closeness criterion, in ``effective.json`` (the effective
  config the release keeps), found by the ``hierarchy_sha256`` its manifest entry names.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from decimal import Decimal

import numpy as np

from airflow_skald.core.data.hierarchies import Hierarchy
from airflow_skald.core.data.side_files import read_archived, read_named
from airflow_skald.core.encode.sensitive_domain import SensitiveStats
from airflow_skald.core.errors import DataError, VerificationError
from airflow_skald.core.privacy.value_order import value_text
from airflow_skald.core.transform.suppression.sensitive_counts import (
    SENSITIVE_COUNTS,
    overall_attributes,
)

__all__ = ["SENSITIVE_COUNTS", "overall_attributes"]

EFFECTIVE = "effective.json"  # = manifest.EFFECTIVE_JSON (not imported: no arrow back up)


def read_sensitive_counts(path: str, manifest: dict | None) -> dict[str, SensitiveStats]:
    """The overall distributions the release keeps ({} if its manifest names none): DataError
    if the file is missing or malformed, VerificationError if it is not the file the manifest
    names (another SHA-256) or counts other than the manifest's records."""
    data = read_named(path, manifest, "sensitive_counts", SENSITIVE_COUNTS)
    if data is None:
        return {}
    name = f"{SENSITIVE_COUNTS} of {path}"
    try:
        body = json.loads(data)
        out = {
            a: SensitiveStats(a, list(d["values"]), [int(c) for c in d["counts"]], d["numeric"])
            for a, d in body["attributes"].items()
        }
        total = int(body["n_records"])
    except (ValueError, KeyError, TypeError, AttributeError):
        raise DataError(f"{name} is not a valid counts file") from None
    for a, stats in out.items():
        if len(stats.values) != len(stats.counts) or sum(stats.counts) != total:
            raise VerificationError(f"{name}: the counts of '{a}' do not add up to its records")
    if total != manifest.get("n_records"):
        raise VerificationError(
            f"{name} counts {total} records but manifest.json says {manifest.get('n_records')}"
        )
    return out


def check_within(
    overall: Mapping[str, SensitiveStats], released: Mapping[str, SensitiveStats], path: str
) -> None:
    """The release holds no more records of a value than the input had (VerificationError)."""
    for a, stats in overall.items():
        if a not in released:
            continue
        have = dict(zip(map(_key, stats.values), stats.counts, strict=True))
        for v, c in zip(released[a].values, released[a].counts, strict=True):
            if c > have.get(_key(v), 0):
                raise VerificationError(
                    f"release column '{a}' of {path} holds more records of a value than "
                    f"{SENSITIVE_COUNTS} counts over all input records"
                )


def _key(value: object) -> str:
    """A value as text (a CSV release reads numbers back as numbers or text alike)."""
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, int | float | str | Decimal):
        return value_text(value)  # a date, time or boolean: its text
    if isinstance(value, Decimal):
        value = float(value)
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def archived_hierarchies(path: str) -> dict[str, Hierarchy]:
    """The t-closeness hierarchies the release's effective.json keeps, by their SHA-256 ({}
    without one: a release made before they were archived)."""
    data = read_archived(path, EFFECTIVE)
    if data is None:
        return {}
    try:
        body = json.loads(data)
    except (ValueError, RecursionError):
        raise DataError(f"{EFFECTIVE} of {path} is not valid JSON") from None
    entries = body.get("t_closeness") if isinstance(body, dict) else None
    out = {}
    for entry in entries if isinstance(entries, list) else []:
        rows = entry.get("hierarchy") if isinstance(entry, dict) else None
        if not isinstance(rows, list) or not rows:
            continue
        try:
            table = np.array(rows, dtype=object)
        except ValueError:
            continue
        if table.ndim != 2 or not all(isinstance(c, str) for c in table.ravel()):
            continue
        hierarchy = Hierarchy(str(entry.get("attribute", "")), table)
        out[hierarchy.sha256] = hierarchy
    return out
