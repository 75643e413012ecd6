"""Independent re-check of a written release (`skald verify`, and the last step of every run).

It trusts nothing from the run but the QID column names and record count in the manifest:
it reads the parts back, counts equivalence classes of the released strings, and checks every
kept class has at least k records and the suppressed records stay within the limit.
Memory follows the number of distinct classes, not the number of rows.

A damaged or incomplete release is told apart from one that breaks its policy, in this order,
each failure one line naming the file (never a value read from it):

* bad input, `DataError` (exit 2), nothing judged: the release cannot be read as its manifest
  describes it. manifest.json that is not JSON, not a JSON object, or whose fields verify reads
  have the wrong type or range (k not an integer >= 2, parts not a list of part file names...);
  a part the manifest lists that is missing; a part that is not a readable Parquet/CSV file or
  lacks a column.
* not verified, `VerificationError` (exit 1): the release reads, but what it holds disagrees
  with its manifest or breaks the policy. A part-* file the manifest does not list; a row count
  other than the manifest's (n_records; n_records - n_suppressed when suppressed records were
  dropped), checked before any privacy criterion; a class smaller than k or another criterion
  broken; a figure other than the manifest's (`verify_figures`: every one the classes
  determine); a direct identifier column in any part.
* verified in part (the report's "verified" is "partial", `skald verify` exits 4): what was
  re-checked holds, but a criterion could not be (listed under "not_rechecked" with the
  reason): a release made before it kept what the re-check needs (`archive`: the hierarchy of
  hierarchical t-closeness; in drop mode, the input's sensitive distributions;
  `population_counts`: a research subset's population count per class, for δ-presence and
  exact k-map). Never
  "verified": true for a criterion that was not re-checked.

The run's own last check is this one, given the manifest about to be written.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import pyarrow as pa

from airflow_skald.core.data.location import DataLocation
from airflow_skald.core.encode.sensitive_domain import SensitiveStats
from airflow_skald.core.errors import DataError, VerificationError
from airflow_skald.core.privacy import PrivacyPolicy
from airflow_skald.core.release.check.archive import (
    check_within,
    overall_attributes,
    read_sensitive_counts,
)
from airflow_skald.core.release.check.class_figures import class_figures
from airflow_skald.core.release.check.release_reading import (
    KIND,
    check_manifest,
    column_names,
    count_parts,
    listed_parts,
    read_manifest,
)
from airflow_skald.core.release.check.standalone_policy import (
    at_top_node,
    described_attributes,
    described_models,
    judged_policy,
    policy_limit,
    release_sensitive,
    standalone_policy,
)
from airflow_skald.core.release.check.verify_figures import compare_with_manifest
from airflow_skald.core.release.count.classes import ReleaseClasses
from airflow_skald.core.release.write.commit import MANIFEST
from airflow_skald.core.transform import registry as transform_registry
from airflow_skald.core.transform.counted import (
    CountedRelease,
    JudgedRelease,
    KeptCounts,
    Recheck,
)

_REPORTED = (
    "n_records",
    "n_rows",
    "n_suppressed",
    "n_equivalence_classes",
    "min_class_size",
    "dm_star",
)


def verify_release(
    path: str,
    k: int | None = None,
    suppression_limit: Fraction | float | str | None = None,
    qids: list[str] | None = None,
    n_records: int | None = None,
    delimiter: str = ",",
    claimed_suppressed: int | None = None,
    classes: ReleaseClasses | None = None,
    policy: PrivacyPolicy | None = None,
    sensitive: Mapping[str, SensitiveStats] | None = None,
    at_top: bool | None = None,
    manifest: dict | None = None,
    table_columns: Sequence[str] | None = None,
) -> dict:
    """Check a release folder; raise VerificationError if it breaks its privacy policy.

    The policy is `policy` (the run's own check, with phase 1's `sensitive` statistics), else
    the manifest's, `k` / `suppression_limit` overriding it, its criteria re-checked from the
    release's own rows (see `standalone_policy`). A release whose every row is all-"*" reads
    both as the top node (one class) and as every record suppressed; `claimed_suppressed`
    (default: the manifest's) picks the reading. `classes`, if given, are the parts' classes
    already counted from the written files (`release_classes`, merged). `at_top`: the release
    is the top node's (default: the manifest says so). `manifest`: the manifest about to be
    written (the run's own check, before manifest.json exists), else the folder's.
    `table_columns`: the run's own check of a table the engine wrote (docs/design.md §2b):
    no part is staged, `classes` are the engine's GROUP BY of the table, these its columns.

    Every figure of the manifest the classes determine is compared (`verify_figures`), and no
    part may hold a direct identifier column. A criterion that cannot be re-checked makes the
    report's "verified" "partial", the criterion listed under "not_rechecked" with the reason.

    A damaged or incomplete release raises DataError (bad input: it cannot be read as its
    manifest describes it) or VerificationError (it reads, but disagrees with its manifest),
    both before any criterion is judged; see the module's docstring for which is which.
    """
    read = _read(
        path, manifest, delimiter, claimed_suppressed, qids, policy, classes, at_top, table_columns
    )
    if read.manifest is not None and n_records is None:
        _rows_as_manifest(path, read.manifest, read.classes.n_rows)  # a part emptied or cut short
    overall = read_sensitive_counts(path, read.manifest)  # drop mode: the input's distributions
    # the counts a release keeps per class (a research subset's population: docs/design.md §4e)
    kept = transform_registry.kept_counts(path, read.manifest)
    judged = _Standalone(policy, policy, sensitive, [], ())
    if policy is None:
        judged = _standalone(read, (k, suppression_limit), overall, kept)
    if n_records is None:
        manifest = read.manifest
        n_records = int(manifest["n_records"]) if manifest is not None else read.classes.n_rows
    figures = _figures(read, judged, kept, n_records)
    report = _report(figures, judged.policy, len(read.parts), judged.skipped)
    for recheck in judged.rechecks:  # the transformations' own (local recoding's steps)
        report.update(recheck.check(n_records))
    if read.manifest is not None:
        _as_manifested(report, read, figures, judged.policy, (k, suppression_limit), table_columns)
    return report


def _as_manifested(
    report: dict,
    read: _Read,
    figures: dict,
    policy: PrivacyPolicy,
    overrides: tuple[int | None, Fraction | float | str | None],
    table_columns: Sequence[str] | None,
) -> None:
    """The release against its manifest: its figures and models, no direct identifier, and
    each transformation's own part (the registry's `check_release`)."""
    _as_its_manifest(report, read.manifest, figures, policy, overrides)
    _no_direct_identifiers(read.manifest, read.location, read.parts, table_columns)
    transform_registry.check_release(read.manifest, read.location, read.parts)


@dataclass(frozen=True)
class _Read:
    """A release as read: its manifest, the parts it lists and where they are, the suppressed
    records it claims, its QIDs and the criteria's attributes, its classes, and whether it is
    the top node's."""

    path: str
    manifest: dict | None
    parts: list[str]
    location: DataLocation
    claimed_suppressed: int | None
    qids: list[str]
    attributes: tuple[str, ...]
    classes: ReleaseClasses
    at_top: bool


def _read(
    path: str,
    manifest: dict | None,
    delimiter: str,
    claimed_suppressed: int | None,
    qids: list[str] | None,
    policy: PrivacyPolicy | None,
    classes: ReleaseClasses | None,
    at_top: bool | None,
    table_columns: Sequence[str] | None = None,
) -> _Read:
    """The release's manifest (`manifest`: the one about to be written, checked; else the
    folder's) and the classes of the parts it lists (`classes`: already counted), its
    microaggregated columns checked."""
    if manifest is None:
        manifest = read_manifest(path)
    else:
        check_manifest(manifest, f"the {MANIFEST} of {path} about to be written")
    if table_columns is None:
        parts, fmt = listed_parts(path, manifest)
    else:  # a table the engine wrote: no part staged, its classes counted there
        parts, fmt = [], str((manifest or {}).get("output_format") or "parquet")
    if manifest is not None:
        delimiter = manifest.get("output_delimiter", delimiter)
        if claimed_suppressed is None:
            claimed_suppressed = manifest.get("n_suppressed")
    location = DataLocation(path, fmt, delimiter)
    qids = qids if qids is not None else _qids(path, manifest)
    attributes = policy.attributes if policy is not None else described_attributes(manifest)
    extra = transform_registry.counted_columns(manifest)  # counted beside the classes
    if classes is None:
        classes = count_parts(parts, location, qids, (*attributes, *extra))
    if at_top is None:
        at_top = at_top_node(manifest)
    # at the top node the all-"*" class is the released class (unless all is suppressed)
    top_released = bool(at_top) and claimed_suppressed != classes.n_rows
    start = len(qids) + len(attributes)
    transform_registry.check_classes(
        CountedRelease(manifest, classes, len(qids), start, top_released)
    )
    return _Read(
        path, manifest, parts, location, claimed_suppressed, qids, attributes, classes, at_top
    )


@dataclass(frozen=True)
class _Standalone:
    """The policy a release is judged by (`full`: before a locally recoded release's steps
    narrow it), the distributions it is judged with, the criteria not re-checked and the
    transformations' own re-checks (local recoding's recorded steps, docs/design.md §4f)."""

    policy: PrivacyPolicy | None
    full: PrivacyPolicy | None
    sensitive: Mapping[str, SensitiveStats] | None
    skipped: list[dict]
    rechecks: tuple[Recheck, ...]


def _standalone(
    read: _Read,
    settings: tuple[int | None, Fraction | float | str | None],
    overall: Mapping[str, SensitiveStats],
    kept: Sequence[KeptCounts],
) -> _Standalone:
    """`skald verify` without a run's policy: the manifest's (`settings`: k and the
    suppression limit given instead), judged with the release's own distributions (the
    input's for `overall` attributes)."""
    path, manifest, classes, n_qids = read.path, read.manifest, read.classes, len(read.qids)
    described = described_models(manifest)
    ordered = [  # read back as numbers: ordered distance over numbers (not text, ADR 0044)
        d["attribute"]
        for d in described
        if d.get("distance") == "ordered"
        and d.get("order", "numbers") == "numbers"
        and "order_sha256" not in d
    ]
    sensitive = release_sensitive(classes, n_qids, read.attributes, ordered)
    check_within(overall, sensitive, path)
    sensitive = {**sensitive, **{a: s for a, s in overall.items() if a in sensitive}}
    full, skipped = standalone_policy(
        path, manifest, *settings, sensitive, frozenset(overall), kept
    )
    policy, skipped = judged_policy(manifest, full, skipped)  # local recoding, per chunk
    overall_of = tuple(overall_attributes(full.models, "drop"))
    judged = JudgedRelease(path, manifest, classes, n_qids, sensitive, full, overall_of)
    return _Standalone(policy, full, sensitive, skipped, transform_registry.rechecks(judged))


def _figures(
    read: _Read, judged: _Standalone, counts: Sequence[KeptCounts], n_records: int
) -> dict:
    """`class_figures` of the release's classes under the policy it is judged by, with the
    counts the release keeps per class (a research subset's population counts: δ-presence and
    exact k-map judged with them)."""
    classes, n_qids = read.classes, len(read.qids)
    star, kept = classes.tables(n_qids, judged.policy.attributes, judged.sensitive or {})
    for kept_counts in counts:
        star, kept = kept_counts.on_tables(classes, n_qids, star, kept, read.path)
    return class_figures(
        star,
        kept,
        classes.n_rows,
        n_records,
        judged.policy,
        "",
        read.claimed_suppressed,
        bool(read.at_top),
    )


def _report(figures: dict, policy: PrivacyPolicy, n_parts: int, skipped: list[dict]) -> dict:
    report = {
        "verified": "partial" if skipped else True,
        "k": policy.min_class_size,
        **{key: figures[key] for key in _REPORTED},
        "privacy_models": figures["privacy_models"],
        "parts": n_parts,
    }
    if skipped:
        report["not_rechecked"] = skipped
    return report


def _as_its_manifest(
    report: dict,
    manifest: dict,
    figures: dict,
    policy: PrivacyPolicy,
    settings: tuple[int | None, Fraction | float | str | None],
) -> None:
    """Every figure of the manifest the classes determine, compared (`verify_figures`; those
    that depend on k and the limit only when `settings` did not override them)."""
    k, limit = settings
    as_manifest = (k is None or k == manifest.get("k")) and (
        limit is None or Fraction(str(limit)) == policy_limit(manifest)
    )
    again = compare_with_manifest(manifest, figures, policy, as_manifest)
    if again is not None:
        report["risk_analysis"] = again


def counted_columns(
    path: str, manifest: dict | None, qids: list[str] | None = None
) -> tuple[list[str], list[str]]:
    """The columns `skald verify` counts a release's classes over (as `_read` does without a
    run's policy): the QIDs (`qids`, else the manifest's node), then the criteria's
    attributes and the microaggregated columns out of the lattice."""
    qids = qids if qids is not None else _qids(path, manifest)
    return qids, [*described_attributes(manifest), *transform_registry.counted_columns(manifest)]


def _qids(path: str, manifest: dict | None) -> list[str]:
    if manifest is None:
        raise DataError(f"{path} has no {MANIFEST}: name the QID columns to verify")
    if "node" not in manifest:
        raise DataError(f"{MANIFEST} of {path} has no node: name the QID columns to verify")
    return list(manifest["node"])


def _rows_as_manifest(path: str, manifest: dict, n_rows: int) -> None:
    """The release holds as many rows as its manifest says: every record (suppressed ones
    masked), or as a transformation says (`released_rows`: every record but the suppressed
    ones when they were dropped; differential privacy's sampled records)."""
    expected, what = transform_registry.released_rows(manifest)
    if expected is not None and n_rows != expected:
        raise VerificationError(
            f"release {path} has {n_rows} rows but {MANIFEST} says {expected} ({what})"
        )


def _no_direct_identifiers(
    manifest: dict,
    location: DataLocation,
    parts: Sequence[str],
    table_columns: Sequence[str] | None = None,
) -> None:
    """No part holds a column the manifest says was removed (each part's own schema: a part
    may differ from the others), nor the table the engine wrote (`table_columns`)."""
    removed = set(manifest.get("direct_identifiers_removed", []))
    leaked = sorted(set(table_columns or ()) & removed)
    if leaked:
        what = manifest.get("output_table", {}).get("table", "the release table")
        raise VerificationError(f"direct identifier column '{leaked[0]}' is in table {what}")
    for part in parts:
        try:
            present = set(column_names(location, part))
        except (pa.ArrowException, OSError, ValueError):
            name = f"{posixpath.basename(part)} of {location.path}"
            raise DataError(f"{name} is not a readable {KIND[location.format]} file") from None
        leaked = present & removed
        if leaked:
            raise VerificationError(
                f"direct identifier column '{sorted(leaked)[0]}' is in "
                f"{posixpath.basename(part)} of {location.path}"
            )
