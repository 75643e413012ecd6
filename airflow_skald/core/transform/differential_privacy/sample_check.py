"""What a differentially private release's manifest says of the run's own check of its keyed
sample (docs/design.md §4e, ADR 0027): every released row is a record the sample kept, checked
by the run itself (`passes.dp_sample_check`, the only holder of the secret the sample is drawn
from; `skald verify` cannot re-check it). Phase 3's `checked_release` hook of
`DifferentialPrivacySample`."""

from __future__ import annotations

from airflow_skald.core.errors import VerificationError

#: what the manifest says was checked, and by whom
CHECKED = (
    "every released row is a record the run's keyed sample kept: each part was read back and "
    "equals its input chunk's sampled records generalised to the node, row by row in input "
    "order (checked by the run itself, the only holder of the secret the sample is drawn from; "
    "skald verify cannot re-check it)"
)


def with_sample_check(manifest: dict, rows: int | None) -> dict:
    """The manifest saying who checked what of the sample (`rows`: the released rows the
    check compared; None: a part was not checked, which fails the run)."""
    if rows is None:
        raise VerificationError("a part of the release was not checked against the keyed sample")
    dp = {**manifest["differential_privacy"]}
    dp["sample_check"] = {"checked_by": "the run", "checked": CHECKED, "rows": rows}
    return {**manifest, "differential_privacy": dp}
