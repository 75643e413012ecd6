"""Independent re-check of a written release (`skald verify`, and the last step of every run).

It trusts nothing from the run but the QID column names and record count in the manifest:
it reads the parts back, counts equivalence classes of the released strings, and checks every
kept class has at least k records and the suppressed records stay within the limit.
Memory follows the number of distinct classes, not the number of rows.
"""

from __future__ import annotations

import io
import json
import math
import posixpath
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from airflow_skald.core.config import DataLocation
from airflow_skald.core.dimensions import TOP
from airflow_skald.core.encoding import dictionary_of
from airflow_skald.core.errors import DataError, VerificationError
from airflow_skald.core.histogram import Histogram, group_counts, keys_of
from airflow_skald.core.io import _full, filesystem, map_ahead, read_release_part
from airflow_skald.core.privacy import ClassTable, Judgement, PrivacyPolicy, max_suppressed
from airflow_skald.core.quality import DM, DMStar, Scored
from airflow_skald.core.release import MANIFEST


def release_parts(path: str) -> tuple[list[str], str]:
    """Part files of a release folder, sorted, and their format."""
    fs, root = filesystem(path)
    if not fs.isdir(root):
        raise DataError(f"release folder not found: {path}")
    names = sorted(_full(fs, n) for n in fs.ls(root, detail=False))  # URLs on object stores
    for fmt in ("parquet", "csv"):
        parts = [p for p in names if posixpath.basename(p).startswith("part-") and p.endswith(fmt)]
        if parts:
            return parts, fmt
    raise DataError(f"no release parts (part-*.parquet|csv) in {path}")


def read_manifest(path: str) -> dict | None:
    fs, root = filesystem(path)
    target = posixpath.join(root, MANIFEST)
    if not fs.exists(target):
        return None
    with fs.open(target, "rb") as fh:
        return json.loads(fh.read())


_NONE = np.zeros(0, dtype=np.int64)


@dataclass
class ReleaseClasses:
    """The equivalence classes of released QID tuples: per QID its distinct labels, each class's
    index into them and its size, and the rows read. Held as arrays: memory follows the number
    of classes at a few bytes each, not Python tuples."""

    labels: list[list[str]]
    codes: np.ndarray  # (classes, QIDs) int64
    sizes: np.ndarray  # int64
    n_rows: int

    @classmethod
    def empty(cls, n_qids: int, n_rows: int = 0) -> ReleaseClasses:
        return cls([[] for _ in range(n_qids)], np.zeros((0, n_qids), np.int64), _NONE, n_rows)

    def star_mask(self) -> np.ndarray:
        """The class whose every QID is "*" (masked records, or the whole top node)."""
        mask = np.ones(self.sizes.size, dtype=bool)
        for j, labels in enumerate(self.labels):
            if TOP not in labels:
                return np.zeros(self.sizes.size, dtype=bool)
            mask &= self.codes[:, j] == labels.index(TOP)
        return mask

    def named(self) -> Counter:
        """Class sizes by released tuple (for small releases, e.g. one chunk's)."""
        labels = [np.asarray(x, dtype=object) for x in self.labels]
        return Counter(
            {
                tuple(labels[j][c] for j, c in enumerate(row)): n
                for row, n in zip(self.codes.tolist(), self.sizes.tolist(), strict=True)
            }
        )

    def to_bytes(self) -> bytes:
        """An artifact of a mapped task (generalised labels and counts only: release content)."""
        buf = io.BytesIO()
        np.savez(
            buf,
            labels=np.frombuffer(json.dumps(self.labels).encode(), dtype=np.uint8),
            codes=self.codes,
            sizes=self.sizes,
            n_rows=np.asarray(self.n_rows, dtype=np.int64),
        )
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> ReleaseClasses:
        z = np.load(io.BytesIO(data))
        labels = json.loads(z["labels"].tobytes().decode())
        return cls(labels, z["codes"], z["sizes"], int(z["n_rows"]))

    @staticmethod
    def merge(parts: Sequence[ReleaseClasses]) -> ReleaseClasses:
        """The classes of several parts together: labels unified, equal tuples summed."""
        n_qids = len(parts[0].labels)
        index: list[dict[str, int]] = [{} for _ in range(n_qids)]
        codes, sizes = [], []
        for part in parts:
            if not part.sizes.size:
                continue
            glob = [
                np.asarray(
                    [index[j].setdefault(v, len(index[j])) for v in part.labels[j]], np.int64
                )
                for j in range(n_qids)
            ]
            codes.append(np.stack([glob[j][part.codes[:, j]] for j in range(n_qids)], axis=1))
            sizes.append(part.sizes)
        n_rows = sum(p.n_rows for p in parts)
        if not sizes:
            return ReleaseClasses.empty(n_qids, n_rows)
        radices = [max(len(x), 1) for x in index]
        keys = keys_of(list(np.concatenate(codes).T), radices)
        # equal tuples (from different parts, or a label listed twice by another tool) are summed
        weights = np.concatenate(sizes).astype(np.float64)  # exact: counts < 2^53
        merged = Histogram(tuple(radices), *group_counts(keys, weights, math.prod(radices)))
        return ReleaseClasses(
            [list(x) for x in index], np.stack(merged.decompose(), axis=1), merged.counts, n_rows
        )


def release_classes(parts: list[str], location: DataLocation, qids: list[str]) -> ReleaseClasses:
    """The classes of the released QID tuples over all parts.

    Each part is read dictionary-encoded and its classes counted over the dictionaries' indices
    in the reading threads; parts' class tables are merged one at a time (a loop over distinct
    labels and classes, never over rows)."""

    def classes_of(part: str) -> ReleaseClasses:
        table = read_release_part(location, part, qids)
        if not table.num_rows:
            return ReleaseClasses.empty(len(qids))
        labels, codes = [], []
        for name in qids:
            enc = dictionary_of(table.column(name))
            local = enc.dictionary.to_pylist()
            if any(v is None for v in local) or enc.indices.null_count:
                raise VerificationError(f"release column '{name}' has empty values in {part}")
            labels.append(local)
            codes.append(enc.indices.to_numpy().astype(np.int64))
        local = Histogram.from_codes(codes, [max(len(x), 1) for x in labels])
        return ReleaseClasses(
            labels, np.stack(local.decompose(), axis=1), local.counts, table.num_rows
        )

    acc = ReleaseClasses.empty(len(qids))
    for _, part in map_ahead(classes_of, parts):  # parts read two at a time
        acc = ReleaseClasses.merge([acc, part])
    return acc


def count_release_classes(
    parts: list[str], location: DataLocation, qids: list[str]
) -> tuple[Counter, int]:
    """Class sizes by released tuple over all parts, and the number of rows."""
    classes = release_classes(parts, location, qids)
    return classes.named(), classes.n_rows


def class_figures(
    n_star: int,
    kept: np.ndarray,
    n_rows: int,
    n_records: int,
    policy: PrivacyPolicy,
    where: str = "",
    claimed_suppressed: int | None = None,
) -> dict:
    """The privacy check and metrics of a release from its all-"*" count and other classes.

    Rows missing from the release were dropped, hence suppressed. The all-"*" records are
    suppressed too, unless they are the only class, satisfy the policy, and the run did not
    claim them suppressed: then the release is the top node (one class). Every other class is
    released, so every model must keep it.
    """
    where = where or "release"
    if n_rows > n_records:
        raise VerificationError(f"{where} has {n_rows} rows but {n_records} records were expected")
    dropped = n_records - n_rows
    sizes = np.asarray(kept, dtype=np.int64)
    star = ClassTable(np.asarray([n_star], dtype=np.int64))
    if (
        n_star
        and not sizes.size
        and not policy.check_release(star, where)
        and claimed_suppressed != n_star + dropped
    ):
        sizes, n_suppressed = star.sizes, dropped
    else:
        n_suppressed = n_star + dropped
    table = ClassTable(sizes)
    broken = policy.check_release(table, where)
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
) -> dict:
    """Check a release folder; raise VerificationError if it breaks its privacy policy.

    The policy is `policy`, else the manifest's with `k` / `suppression_limit` overriding it.
    A release whose every row is all-"*" reads both as the top node (one class) and as every
    record suppressed; `claimed_suppressed` (default: the manifest's) picks the reading.
    `classes`, if given, are the parts' classes already counted from the written files (by the
    mapped tasks that wrote them, `release_classes` over their own parts), merged.
    """
    manifest = read_manifest(path)
    parts, fmt = release_parts(path)
    if manifest is not None:
        delimiter = manifest.get("output_delimiter", delimiter)
        if claimed_suppressed is None:
            claimed_suppressed = manifest.get("n_suppressed")
    location = DataLocation(path, fmt, delimiter)
    policy = policy or _policy(path, manifest, k, suppression_limit)
    qids = qids if qids is not None else _qids(path, manifest)
    if classes is None:
        classes = _count(parts, location, qids)
    if n_records is None:
        n_records = int(manifest["n_records"]) if manifest is not None else classes.n_rows
    star = classes.star_mask()
    figures = class_figures(
        int(classes.sizes[star].sum()),
        classes.sizes[~star],
        classes.n_rows,
        n_records,
        policy,
        claimed_suppressed=claimed_suppressed,
    )
    report = {
        "verified": True,
        "k": policy.k,
        **{key: figures[key] for key in _REPORTED},
        "privacy_models": figures["privacy_models"],
        "parts": len(parts),
    }
    if manifest is not None:
        _agrees_with_manifest(manifest, report)
        _no_direct_identifiers(manifest, location, parts[0])
    return report


def _policy(path: str, manifest: dict | None, k: int | None, limit) -> PrivacyPolicy:
    """The manifest's policy, `k` and `limit` (CLI flags) overriding it."""
    if k is None:
        if manifest is None or "k" not in manifest:
            raise DataError(f"{path} has no {MANIFEST}: give k to verify (--k)")
        k = int(manifest["k"])
    if limit is None:
        limit = manifest["suppression_limit"] if manifest else 0
    return PrivacyPolicy.k_anonymity(k, Fraction(str(limit)))


def _qids(path: str, manifest: dict | None) -> list[str]:
    if manifest is None:
        raise DataError(f"{path} has no {MANIFEST}: name the QID columns to verify")
    return list(manifest["node"])


def _count(parts: list[str], location: DataLocation, qids: list[str]) -> ReleaseClasses:
    """The classes of the written parts, or a one-line error naming a missing QID column."""
    try:
        return release_classes(parts, location, qids)
    except (KeyError, ValueError):  # pyarrow's errors for a column the release lacks
        names = read_release_part(location, parts[0]).column_names
        missing = [q for q in qids if q not in names]
        if not missing:
            raise
        raise DataError(f"release {location.path} has no column '{missing[0]}'") from None


def _agrees_with_manifest(manifest: dict, report: dict) -> None:
    for key in ("n_suppressed", "n_equivalence_classes", "min_class_size", "dm_star"):
        if key in manifest and manifest[key] != report[key]:
            raise VerificationError(
                f"manifest says {key}={manifest[key]} but the release has {report[key]}"
            )


def _no_direct_identifiers(manifest: dict, location: DataLocation, part: str) -> None:
    present = set(read_release_part(location, part).column_names)
    leaked = present & set(manifest.get("direct_identifiers_removed", []))
    if leaked:
        raise VerificationError(f"direct identifier column '{sorted(leaked)[0]}' is in the release")
