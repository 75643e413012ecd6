"""`skald audit`: does a dataset (or a release) as it already is satisfy the config's privacy
criteria at its CURRENT QID values (no generalisation)? Figures only, nothing written.

One pass over the chunks (`io.list_chunks` / `read_chunk`, `map_ahead`). Each chunk's QID
columns and the sensitive attributes that criteria name are dictionary-encoded and its distinct
(QID tuple, sensitive values) tuples counted; the partial counts are additive and merge exactly
(labels unified by value, equal tuples summed), so memory follows the distinct tuples, not the
rows. The merged counts become the same `ClassTable` the search judges, asked by the same
`PrivacyPolicy` the run builds (`config.policy` over `SensitiveStats` of every record).

A release is audited the same way: its QIDs are generalised text, and its all-"*" rows are the
suppressed records. QID values are read as the run reads them (numbers from a CSV dataset's
numerical QIDs), or as text for a release (a folder holding a manifest.json); a null QID value
is a value of its own. The report holds counts and figures only, never a QID or sensitive value.
"""

from __future__ import annotations

import json
import logging
import posixpath
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from fractions import Fraction

import numpy as np

from airflow_skald.core.config.policy import build_policy
from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.data.io import (
    GLOB_CHARS,
    ChunkRef,
    column_names,
    filesystem,
    first_chunks,
    list_chunks,
    schema_of,
)
from airflow_skald.core.data.location import DataLocation
from airflow_skald.core.encode.domain import (
    check_types,
)
from airflow_skald.core.errors import DataError
from airflow_skald.core.privacy import ClassTable, PrivacyPolicy, max_suppressed
from airflow_skald.core.privacy.sample_based import enforce
from airflow_skald.core.release.check.release_reading import release_parts
from airflow_skald.core.release.count.tuples import count_tuples
from airflow_skald.core.release.write.commit import MANIFEST
from airflow_skald.core.text import decimal_text
from airflow_skald.core.transform import registry

log = logging.getLogger("airflow_skald")

_SAFE = 1 << 62  # a mixed-radix key below this cannot overflow int64


def audit(config: SkaldConfig, staged: Sequence[ChunkRef] = ()) -> dict:
    """The audit report of `config.input` under the config's criteria (JSON-safe; see module).
    A database input is read once into a private temporary folder, deleted after (`staged`:
    its chunks, which name the table in messages, not the folder)."""
    if config.database is not None:
        return _audit_database(config)
    start = time.perf_counter()
    manifest = None if staged else release_manifest(config.input.path)
    if manifest is not None:
        config = replace(config, input=release_location(config.input, manifest))
    chunks = list(staged) or list_chunks(config.input, config.chunk_rows)
    kind = "release" if manifest is not None else "dataset"
    log.info("audit: a %s of %d chunk(s) at its current QID values", kind, len(chunks))
    config, not_checked = _audited_models(config, manifest)
    qids, attributes = config.qid_names, config.counted_attributes
    read = registry.audited_columns(config.transformations, attributes)
    _check_columns(config, chunks, [*qids, *read], release=manifest is not None)
    counted = count_tuples(config, chunks, manifest is not None, attributes)
    stats = counted.sensitive
    n_input = int(counted.counts.sum())
    if manifest and isinstance(manifest.get("n_records"), int):
        n_input = max(n_input, manifest["n_records"])
    # l above a distinct count, a hierarchy missing a value: exit 2
    policy = build_policy(config, stats, n_input)
    star, table = registry.audited_classes(policy, *counted.tables(len(qids), attributes))
    claimed = manifest.get("n_suppressed") if manifest else None
    if (
        star.n_records
        and not table.n_classes
        and not policy.check_release(star, "audit")
        and claimed != star.n_records
    ):
        star, table = ClassTable(np.zeros(0, np.int64)), star  # the top node: one class, kept
    n_rows = table.n_records + star.n_records
    dropped = max(int(manifest.get("n_records", n_rows)) - n_rows, 0) if manifest else 0
    return {
        "input": config.input.path,
        "release": manifest is not None,
        "chunks": len(chunks),
        "n_rows": n_rows,
        **judge(policy, table, star.n_records + dropped, release=manifest is not None),
        # docs/design.md §4c: the risk of the classes as they are (all-"*" records left out)
        "risk_analysis": config.risk.analyse(table.sizes, n_rows + dropped).to_dict(),
        **({"not_checked": not_checked} if not_checked else {}),
        "seconds": round(time.perf_counter() - start, 3),
    }


def _audit_database(config: SkaldConfig) -> dict:
    """A database input read once into a private temporary folder, audited there, the folder
    deleted after; the report names the table (or "query"), not the folder."""
    from airflow_skald.core.data.database.connection import resolve_uri
    from airflow_skald.core.data.database.extract import extract

    with tempfile.TemporaryDirectory(prefix="skald-audit-") as folder:
        uri = resolve_uri(config.database.connection)
        chunks = extract(config.database, uri, config.chunk_rows, folder)
        files = replace(config.input, path=folder)
        report = audit(replace(config, database=None, input=files), chunks)
    return {**report, "input": config.database.table or "query"}


def _audited_models(config: SkaldConfig, manifest: dict | None) -> tuple[SkaldConfig, list[dict]]:
    """The config with only the criteria a table as it is can be audited for, and the others
    listed with the reason: first the transformations' (a research subset's release, say),
    then the models' own (DP's draws, label loss at a node), then those a release's classes
    together cannot judge (a locally recoded release's per-step models, say)."""
    config, not_checked = registry.audited_config(config, release=manifest is not None)
    # a randomised mechanism's draws (DP's sample and node) are no property of the records
    not_checked += [
        {**m.describe(), "reason": m.unverifiable} for m in config.privacy if m.unverifiable
    ]
    # a class's information loss is its labels' at a node of the hierarchies: the search judges
    # these models, a table as it is cannot be (ADR 0046)
    not_checked += [
        {**m.describe(), "reason": NOT_AT_A_NODE} for m in config.privacy if m.reads_label_loss
    ]
    models = tuple(m for m in config.privacy if not m.reads_label_loss)
    models, listed = registry.audited_models(manifest, models)
    return replace(config, privacy=models), not_checked + listed


NOT_AT_A_NODE = (
    "not checked: profitability weighs each class by its labels' domain shares at a node of the "
    "hierarchies, which the table as it is does not have (the run's search judged it)"
)


def judge(policy: PrivacyPolicy, table: ClassTable, n_star: int, release: bool = False) -> dict:
    """Figures of the classes as they are, and whether the policy holds: the records in classes
    any criterion refuses, plus the `n_star` already suppressed, fit the suppression limit. A
    release is published as it is, so none of its classes may be refused (its suppressed
    records are the `n_star` only).

    The decision is `PrivacyPolicy.judge`'s (a class any model refuses is suppressed), taken
    here from each model's own verdict so that every verdict is computed once for the decision
    and the per-criterion counts (an entropy verdict over millions of classes is not free)."""
    n_records = table.n_records + n_star
    sizes = table.sizes
    kept = np.ones(table.n_classes, dtype=bool)
    criteria = []
    floor = 0.0  # records the models say must go at least (inf: a class none can suppress)
    for model in policy.models:
        keeps, least = model.judged(table)
        bad = ~keeps
        kept &= keeps
        floor = max(floor, least)
        figure = {key: _finite(v) for key, v in model.figure(table).items()}
        criteria.append(
            {
                **model.describe(),
                **figure,
                "classes_violating": int(bad.sum()),
                "records_in_violating_classes": int(sizes[bad].sum(dtype=np.int64)),
                **({"unsuppressible": model.violation(table, "audit")} if least == np.inf else {}),
            }
        )
    allowed = max_suppressed(policy.suppression_limit, n_records)
    sampled = [m for m in policy.models if m.sample_based]
    if sampled:  # docs/design.md §4c: then each suppresses the shortest prefix that makes it hold
        for entry, model in zip(criteria, policy.models, strict=True):
            if model.sample_based:
                entry["holds_as_is"] = model.holds_on(sizes[kept])
        kept = enforce(sampled, table, kept, allowed - n_star)
    to_suppress = n_star + int(sizes[~kept].sum(dtype=np.int64))
    small = sizes < policy.min_class_size
    return {
        "n_records": n_records,
        "n_suppressed_already": n_star,
        "n_equivalence_classes": table.n_classes,
        "min_class_size": int(sizes.min()) if sizes.size else 0,
        "k": policy.min_class_size,
        "classes_below_k": int(small.sum()),
        "records_in_classes_below_k": int(sizes[small].sum(dtype=np.int64)),
        "privacy_models": criteria,
        "suppression": {
            "limit": decimal_text(Fraction(policy.suppression_limit)),
            "records_to_suppress": to_suppress,
            "max_suppressed": allowed,
            "fits": to_suppress <= allowed and floor <= allowed,
        },
        "holds_without_suppression": to_suppress == 0 and floor == 0,
        "holds": (to_suppress == n_star if release else True)
        and to_suppress <= allowed
        and floor <= allowed,
    }


def _finite(value):
    """JSON has no infinity: an unbounded figure (a recursive ratio with an empty tail) is null."""
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def release_manifest(path: str) -> dict | None:
    """The manifest beside the input when it is a release (folder or one of its part files)."""
    fs, root = filesystem(path)
    if any(ch in root for ch in GLOB_CHARS) or not fs.isdir(root):
        root = posixpath.dirname(root)
    target = posixpath.join(root, MANIFEST)
    if not fs.exists(target):
        return None
    with fs.open(target, "rb") as fh:
        try:
            manifest = json.loads(fh.read())
        except ValueError:
            raise DataError(f"{MANIFEST} beside the input is not valid JSON") from None
    return manifest if isinstance(manifest, dict) else None


def release_location(given: DataLocation, manifest: dict) -> DataLocation:
    """A release folder is read in the format its parts were written in, whatever the
    config's input format (`--input` pointing at the release of a CSV dataset, say)."""
    fs, root = filesystem(given.path)
    if not fs.isdir(root):
        return given
    _, fmt = release_parts(given.path)
    return replace(given, format=fmt, delimiter=manifest.get("output_delimiter", given.delimiter))


def _check_columns(
    config: SkaldConfig, chunks: Sequence[ChunkRef], needed: list[str], release: bool
) -> None:
    """Every needed column in every file; a dataset's numerical QIDs numeric in every file,
    as the run requires (a text column in one file would split its classes)."""
    for chunk in first_chunks(chunks):
        names = column_names(config.input, chunk.file)
        for name in needed:
            if name not in names:
                raise DataError(f"column '{name}' is missing from {chunk.where()}")
        if not release:
            check_types(config, chunk.where(), schema_of(config.input, chunk.file))
