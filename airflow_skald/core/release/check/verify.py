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
from fractions import Fraction

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from airflow_skald.core.data.io import local_path
from airflow_skald.core.data.location import DataLocation
from airflow_skald.core.encode.sensitive_domain import SensitiveStats
from airflow_skald.core.encode.sensitive_domain import sorted_values as _sorted_values
from airflow_skald.core.errors import DataError, VerificationError
from airflow_skald.core.privacy import (
    ClassTable,
    Judgement,
    PrivacyPolicy,
    max_suppressed,
)
from airflow_skald.core.privacy.model import RebuildContext
from airflow_skald.core.privacy.registry import rebuild, with_threshold
from airflow_skald.core.quality.dm import DM
from airflow_skald.core.quality.dm_star import DMStar
from airflow_skald.core.quality.metric import Scored
from airflow_skald.core.release.check.archive import (
    archived_hierarchies,
    check_within,
    read_sensitive_counts,
)
from airflow_skald.core.release.check.population_counts import (
    PopulationCounts,
    read_population_counts,
    with_population,
)
from airflow_skald.core.release.check.recoding_steps import read_recoding_steps
from airflow_skald.core.release.check.release_reading import (
    check_manifest,
    listed_parts,
    read_manifest,
)
from airflow_skald.core.release.check.verify_figures import compare_with_manifest
from airflow_skald.core.release.check.verify_pseudonyms import pseudonyms_well_formed
from airflow_skald.core.release.check.verify_steps import standalone as recoded_standalone
from airflow_skald.core.release.check.verify_steps import verify_recorded
from airflow_skald.core.release.count.classes import ReleaseClasses, release_classes
from airflow_skald.core.release.write.commit import MANIFEST
from airflow_skald.core.release.write.microaggregated import check_microaggregated, out_of_lattice


def class_figures(
    n_star: int | ClassTable,
    kept: np.ndarray | ClassTable,
    n_rows: int,
    n_records: int,
    policy: PrivacyPolicy,
    where: str = "",
    claimed_suppressed: int | None = None,
    at_top: bool = False,
) -> dict:
    """The privacy check and metrics of a release from its all-"*" count and other classes.

    Rows missing from the release were dropped, hence suppressed. The all-"*" records are
    suppressed too, unless they are the only class, satisfy the policy, and the run did not
    claim them suppressed: then the release is the top node (one class). Every other class is
    released, so every model must keep it. `at_top`: the release is the top node's, whose one
    class the sample-based models do not see (docs/design.md §4c), whatever its labels.
    """
    where = where or "release"
    if n_rows > n_records:
        raise VerificationError(f"{where} has {n_rows} rows but {n_records} records were expected")
    dropped = n_records - n_rows
    star = n_star if isinstance(n_star, ClassTable) else ClassTable(np.asarray([n_star], np.int64))
    table = kept if isinstance(kept, ClassTable) else ClassTable(np.asarray(kept, np.int64))
    n_star = star.n_records
    if (
        n_star
        and not table.n_classes
        and not policy.check_release(star, where, top=True)
        and claimed_suppressed != n_star + dropped
    ):
        table, n_suppressed = star, dropped
    else:
        n_suppressed = n_star + dropped
    sizes = table.sizes
    top = table is star or (at_top and table.n_classes <= 1)
    broken = policy.check_release(table, where, top=top)
    if broken:
        raise VerificationError(broken[0])
    allowed = max_suppressed(policy.suppression_limit, n_records)
    if n_suppressed > allowed:
        raise VerificationError(
            f"{where} suppresses {n_suppressed} records, more than the limit allows ({allowed})"
        )
    judged = Judgement(np.ones(sizes.size, bool), n_records, n_suppressed, allowed, True, True)
    scored = Scored(table, judged, (), ())
    return {
        "n_records": n_records,
        "n_rows": n_rows,
        "n_suppressed": n_suppressed,
        "n_equivalence_classes": int(sizes.size),
        "min_class_size": int(sizes.min()) if sizes.size else 0,
        "dm_star": DMStar().value(scored),
        "dm": DM().value(scored),
        "privacy_models": policy.figures(table),
        "sizes": sizes,
        "top": top,  # the release is the top node: its one class is left out of the risk
        "table": table,  # the released classes (with their distributions)
    }


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

    Every figure of the manifest the classes determine is compared (`verify_figures`), and no
    part may hold a direct identifier column. A criterion that cannot be re-checked makes the
    report's "verified" "partial", the criterion listed under "not_rechecked" with the reason.

    A damaged or incomplete release raises DataError (bad input: it cannot be read as its
    manifest describes it) or VerificationError (it reads, but disagrees with its manifest),
    both before any criterion is judged; see the module's docstring for which is which.
    """
    if manifest is None:
        manifest = read_manifest(path)
    else:
        check_manifest(manifest, f"the {MANIFEST} of {path} about to be written")
    parts, fmt = listed_parts(path, manifest)
    if manifest is not None:
        delimiter = manifest.get("output_delimiter", delimiter)
        if claimed_suppressed is None:
            claimed_suppressed = manifest.get("n_suppressed")
    location = DataLocation(path, fmt, delimiter)
    qids = qids if qids is not None else _qids(path, manifest)
    attributes = policy.attributes if policy is not None else _attributes(manifest)
    extra = out_of_lattice(manifest)  # microaggregated columns counted beside the classes
    if classes is None:
        classes = _count(parts, location, qids, (*attributes, *extra))
    if at_top is None:
        at_top = at_top_node(manifest)
    # at the top node the all-"*" class is the released class (unless all is suppressed)
    top_released = bool(at_top) and claimed_suppressed != classes.n_rows
    check_microaggregated(classes, len(qids), len(qids) + len(attributes), extra, top_released)
    if manifest is not None and n_records is None:
        _rows_as_manifest(path, manifest, classes.n_rows)  # a part emptied or cut short
    overall = read_sensitive_counts(path, manifest)  # drop mode: the input's distributions
    population = read_population_counts(path, manifest)  # a research subset's (docs/design.md §4e)
    skipped: list[dict] = []
    recorded = None  # a locally recoded release's steps, judged one by one (docs/design.md §4f)
    if policy is None:
        ordered = [d["attribute"] for d in _described(manifest) if d.get("distance") == "ordered"]
        sensitive = release_sensitive(classes, len(qids), attributes, ordered)
        check_within(overall, sensitive, path)
        sensitive = {**sensitive, **{a: s for a, s in overall.items() if a in sensitive}}
        policy, skipped = standalone_policy(
            path, manifest, k, suppression_limit, sensitive, frozenset(overall), population
        )
        full = policy
        policy, skipped = recoded_standalone(manifest, policy, skipped)  # docs/design.md §4f
        recorded = read_recoding_steps(path, manifest, classes, len(qids), sensitive, full.models)
    if n_records is None:
        n_records = int(manifest["n_records"]) if manifest is not None else classes.n_rows
    star, kept = classes.tables(len(qids), policy.attributes, sensitive or {})
    if population is not None:  # δ-presence and exact k-map judged with them
        star, kept = with_population(classes, len(qids), star, kept, population, path)
    figures = class_figures(
        star,
        kept,
        classes.n_rows,
        n_records,
        policy,
        claimed_suppressed=claimed_suppressed,
        at_top=bool(at_top),
    )
    report = {
        "verified": "partial" if skipped else True,
        "k": policy.k,
        **{key: figures[key] for key in _REPORTED},
        "privacy_models": figures["privacy_models"],
        "parts": len(parts),
    }
    if skipped:
        report["not_rechecked"] = skipped
    if recorded is not None:
        report["steps_checked"] = verify_recorded(
            classes, len(qids), full, sensitive, recorded, n_records
        )
    if manifest is not None:
        as_manifest = (k is None or k == manifest.get("k")) and (
            suppression_limit is None or Fraction(str(suppression_limit)) == policy_limit(manifest)
        )
        again = compare_with_manifest(manifest, figures, policy, as_manifest)
        if again is not None:
            report["risk_analysis"] = again
        _no_direct_identifiers(manifest, location, parts)
        pseudonyms_well_formed(manifest, location, parts)
    return report


def policy_limit(manifest: dict) -> Fraction | None:
    """The manifest's suppression limit (its exact text when it has one)."""
    exact = (manifest.get("privacy") or {}).get("suppression_limit")
    value = exact if exact is not None else manifest.get("suppression_limit")
    return None if value is None else Fraction(str(value))


def at_top_node(manifest: dict | None) -> bool:
    """The manifest's node is its top node: both given, level for level (a manifest without
    them is not taken for the top: its one class is judged by every model)."""
    if manifest is None:
        return False
    node, top = manifest.get("node"), manifest.get("top_node")
    return isinstance(node, dict) and isinstance(top, dict) and bool(top) and node == top


def release_sensitive(
    classes: ReleaseClasses, n_qids: int, attributes: Sequence[str], ordered: Sequence[str] = ()
) -> dict[str, SensitiveStats]:
    """The attributes' distributions over every row of a release (suppressed rows included:
    in mask mode, exactly the input's). `ordered` attributes are numerical: a CSV release holds
    them as text, read back as numbers (an empty cell a null) so that they sort as numbers.
    An empty text is a null, as phase 1 reads it (a CSV release writes a null so)."""
    out = {}
    for j, a in enumerate(attributes):
        labels = classes.labels[n_qids + j]
        if a in ordered and any(isinstance(v, str) for v in labels):
            labels = [_number(a, v) for v in labels]
        labels = [None if v == "" else v for v in labels]
        counts = np.bincount(
            classes.codes[:, n_qids + j], weights=classes.sizes, minlength=len(labels)
        ).astype(np.int64)
        total: dict = {}
        for v, c in zip(labels, counts.tolist(), strict=True):
            total[v] = total.get(v, 0) + c
        numeric = all(isinstance(v, int | float) for v in total if v is not None)
        out[a] = SensitiveStats(a, *_sorted_values(list(total), list(total.values())), numeric)
    return out


def _number(attribute: str, label: str | None) -> int | float | None:
    if label is None or label == "":
        return None
    try:
        return int(label)
    except ValueError:
        pass
    try:
        return float(label)
    except ValueError:
        raise VerificationError(
            f"release column '{attribute}' holds text, but its t-closeness is ordered by number"
        ) from None


def standalone_policy(
    path: str,
    manifest: dict | None,
    k: int | None,
    limit,
    sensitive: Mapping[str, SensitiveStats],
    overall: frozenset[str] = frozenset(),
    population: PopulationCounts | None = None,
) -> tuple[PrivacyPolicy, list[dict]]:
    """The manifest's policy for `skald verify` (k and the limit overridable by flags), its
    criteria rebuilt with the release's own distributions (those of `overall` attributes: the
    input's, kept with a release that drops suppressed records), the hierarchies it keeps and
    its classes' population counts (`population`, a research subset's: δ-presence, k-map);
    criteria that cannot be re-checked from the release alone are listed, with the reason,
    instead of being skipped silently."""
    if k is None:
        if manifest is None:
            raise DataError(f"{path} has no {MANIFEST}: give k to verify (--k)")
        if "k" not in manifest:
            raise DataError(f"{MANIFEST} of {path} has no k: give k to verify (--k)")
        k = int(manifest["k"])
    if limit is None:
        if manifest and "suppression_limit" not in manifest:
            raise DataError(
                f"{MANIFEST} of {path} has no suppression_limit: give it to verify "
                "(--suppression-limit)"
            )
        limit = manifest["suppression_limit"] if manifest else 0
    n_records = (manifest or {}).get("n_records")
    entries = _described(manifest)
    hierarchical = any(d.get("distance") == "hierarchical" for d in entries)
    ctx = RebuildContext(
        sensitive,
        (manifest or {}).get("suppressed_records") == "drop",
        n_records if isinstance(n_records, int) else None,
        overall,
        archived_hierarchies(path) if hierarchical else {},
        population is not None,
    )
    has_k = any(d.get("model") == "k-anonymity" for d in entries)
    if not has_k and (k >= 2 or not entries):  # a manifest of k alone, or --k given
        entries = [{"model": "k-anonymity", "k": k}, *entries]
        has_k = True
    models, skipped = [], []
    for d in entries:
        model = rebuild(d, ctx)
        if isinstance(model, str):
            skipped.append({**d, "reason": model})
            continue
        models.append(model)
        if model.unverifiable:  # judged, and what no count can show named (DP's draws)
            skipped.append({**d, "reason": model.unverifiable})
    if has_k:
        models = list(with_threshold(tuple(models), "k", k))
    return PrivacyPolicy(tuple(models), Fraction(str(limit))), skipped


def _described(manifest: dict | None) -> list[dict]:
    """The privacy models the manifest lists, as configured."""
    return ((manifest or {}).get("privacy") or {}).get("models", [])


def _attributes(manifest: dict | None) -> tuple[str, ...]:
    described = _described(manifest)
    return tuple(dict.fromkeys(d["attribute"] for d in described if "attribute" in d))


def _qids(path: str, manifest: dict | None) -> list[str]:
    if manifest is None:
        raise DataError(f"{path} has no {MANIFEST}: name the QID columns to verify")
    if "node" not in manifest:
        raise DataError(f"{MANIFEST} of {path} has no node: name the QID columns to verify")
    return list(manifest["node"])


def _count(
    parts: list[str], location: DataLocation, qids: list[str], sensitive: Sequence[str] = ()
) -> ReleaseClasses:
    """The classes of the written parts, or DataError naming the part at fault: missing, not
    a readable Parquet/CSV file, or without a column (pyarrow's own messages may quote rows)."""
    try:
        return release_classes(parts, location, qids, sensitive)
    except (pa.ArrowException, OSError, KeyError, ValueError) as exc:
        part = getattr(exc, "skald_part", parts[0])
        name = f"{posixpath.basename(part)} of {location.path}"
        if isinstance(exc, FileNotFoundError):  # gone since the folder was listed
            raise DataError(f"{name} is missing") from None
        unreadable = DataError(f"{name} is not a readable {_KIND[location.format]} file")
        try:
            columns = _column_names(location, part)
        except (pa.ArrowException, OSError, ValueError):
            raise unreadable from None
        missing = [q for q in (*qids, *sensitive) if q not in columns]
        if missing:
            raise DataError(f"{name} has no column '{missing[0]}'") from None
        if isinstance(exc, pa.ArrowException | OSError):  # its footer reads, its data not
            raise unreadable from None
        raise


_KIND = {"parquet": "Parquet", "csv": "CSV"}


def _column_names(location: DataLocation, part: str) -> list[str]:
    """A part's column names from its schema alone (a Parquet footer, a CSV header)."""
    local = local_path(part)
    if location.format == "parquet" and local is not None:
        return pq.read_schema(local).names
    with fsspec.open(part, "rb") as fh:
        if location.format == "parquet":
            return pq.read_schema(fh).names
        options = pacsv.ParseOptions(delimiter=location.delimiter)
        return pacsv.open_csv(fh, parse_options=options).schema.names


def _rows_as_manifest(path: str, manifest: dict, n_rows: int) -> None:
    """The release holds as many rows as its manifest says: every record (suppressed ones
    masked), or every record but the suppressed ones when they were dropped."""
    n_records = manifest["n_records"]
    dp = manifest.get("differential_privacy")
    if manifest.get("suppressed_records", "mask") == "drop":
        if "n_suppressed" not in manifest:
            return  # the rows dropped are counted as suppressed (class_figures)
        expected, what = n_records - manifest["n_suppressed"], "n_records - n_suppressed"
    elif isinstance(dp, dict) and isinstance(dp.get("records_sampled"), int):
        # DP: records the sample left out are never released; the masked rows are sampled ones
        expected, what = dp["records_sampled"], "differential_privacy.records_sampled"
    else:
        expected, what = n_records, "n_records"
    if n_rows != expected:
        raise VerificationError(
            f"release {path} has {n_rows} rows but {MANIFEST} says {expected} ({what})"
        )


def _no_direct_identifiers(manifest: dict, location: DataLocation, parts: Sequence[str]) -> None:
    """No part holds a column the manifest says was removed (each part's own schema: a part
    may differ from the others)."""
    removed = set(manifest.get("direct_identifiers_removed", []))
    for part in parts:
        try:
            present = set(_column_names(location, part))
        except (pa.ArrowException, OSError, ValueError):
            name = f"{posixpath.basename(part)} of {location.path}"
            raise DataError(f"{name} is not a readable {_KIND[location.format]} file") from None
        leaked = present & removed
        if leaked:
            raise VerificationError(
                f"direct identifier column '{sorted(leaked)[0]}' is in "
                f"{posixpath.basename(part)} of {location.path}"
            )
