"""Independent re-check of a written release (`skald verify`, and the last step of every run).

It trusts nothing from the run but the QID column names and record count in the manifest:
it reads the parts back, counts equivalence classes of the released strings, and checks every
kept class has at least k records and the suppressed records stay within the limit.
Memory follows the number of distinct classes, not the number of rows.
"""

from __future__ import annotations

import json
import posixpath
from collections import Counter
from fractions import Fraction

import numpy as np

from airflow_skald.core.config import DataLocation
from airflow_skald.core.dimensions import TOP
from airflow_skald.core.encoding import dictionary_of
from airflow_skald.core.errors import DataError, VerificationError
from airflow_skald.core.histogram import Histogram, keys_of
from airflow_skald.core.io import filesystem, map_ahead, read_release_part
from airflow_skald.core.metrics import max_suppressed, sum_squares
from airflow_skald.core.release import MANIFEST


def release_parts(path: str) -> tuple[list[str], str]:
    """Part files of a release folder, sorted, and their format."""
    fs, root = filesystem(path)
    if not fs.isdir(root):
        raise DataError(f"release folder not found: {path}")
    names = sorted(fs.ls(root, detail=False))
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


def count_release_classes(
    parts: list[str], location: DataLocation, qids: list[str]
) -> tuple[Counter, int]:
    """Class sizes of the released QID tuples over all parts, and the number of rows.

    Each part's strings are dictionary-encoded, mapped to codes of global per-column
    dictionaries (a loop over distinct labels, not rows), and counted by mixed-radix key.
    """
    dictionaries: list[dict[str, int]] = [{} for _ in qids]
    acc_codes = np.zeros((0, len(qids)), dtype=np.int64)
    acc_counts = np.zeros(0, dtype=np.int64)
    n_rows = 0

    def classes_of(part: str) -> tuple[int, list[list], list[np.ndarray], np.ndarray]:
        """A part's rows, per QID its dictionary's labels, and its classes as per-QID indices
        into those labels with their sizes (counted in the reading thread)."""
        table = read_release_part(location, part, qids)
        labels, codes = [], []
        for name in qids if table.num_rows else []:
            enc = dictionary_of(table.column(name))
            local = enc.dictionary.to_pylist()
            if any(v is None for v in local) or enc.indices.null_count:
                raise VerificationError(f"release column '{name}' has empty values in {part}")
            labels.append(local)
            codes.append(enc.indices.to_numpy().astype(np.int64))
        if not table.num_rows:
            return 0, [], [], np.zeros(0, np.int64)
        local = Histogram.from_codes(codes, [max(len(x), 1) for x in labels])
        return table.num_rows, labels, local.decompose(), local.counts

    for _, (rows, labels, class_codes, sizes) in map_ahead(classes_of, parts):
        n_rows += rows
        if rows == 0:
            continue
        codes = []
        for j, (local, local_codes) in enumerate(zip(labels, class_codes, strict=True)):
            glob = np.asarray(
                [dictionaries[j].setdefault(v, len(dictionaries[j])) for v in local], np.int64
            )
            codes.append(glob[local_codes])
        radices = [max(len(d), 1) for d in dictionaries]
        keys = keys_of(codes, radices)
        order = np.argsort(keys, kind="stable")
        keys, sizes = keys[order], sizes[order]
        # a part written by another tool may list one label twice in a dictionary: its classes
        # then share a key here, and are summed
        starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
        hist = Histogram(tuple(radices), keys[starts], np.add.reduceat(sizes, starts))
        old = Histogram(tuple(radices), keys_of(list(acc_codes.T), radices), acc_counts)
        merged = Histogram.merge([old, hist]) if acc_counts.size else hist
        acc_codes = np.stack(merged.decompose(), axis=1)
        acc_counts = merged.counts
    labels = [np.asarray(list(d), dtype=object) for d in dictionaries]
    named = Counter()
    for row, n in zip(acc_codes.tolist(), acc_counts.tolist(), strict=True):
        named[tuple(labels[j][c] for j, c in enumerate(row))] = n
    return named, n_rows


def verify_release(
    path: str,
    k: int,
    suppression_limit: Fraction | float | str | None = None,
    qids: list[str] | None = None,
    n_records: int | None = None,
    delimiter: str = ",",
    claimed_suppressed: int | None = None,
) -> dict:
    """Check a release folder; raise VerificationError if it is not k-anonymous.

    A release whose every row is all-"*" reads both as the top node (one class) and as every
    record suppressed; `claimed_suppressed` (default: the manifest's) picks the reading.
    """
    manifest = read_manifest(path)
    parts, fmt = release_parts(path)
    if qids is None:
        if manifest is None:
            raise DataError(f"{path} has no {MANIFEST}: name the QID columns to verify")
        qids = list(manifest["node"])
    if suppression_limit is None:
        suppression_limit = manifest["suppression_limit"] if manifest else 0
    limit = Fraction(str(suppression_limit))
    if n_records is None and manifest is not None:
        n_records = int(manifest["n_records"])
    if manifest is not None:
        delimiter = manifest.get("output_delimiter", delimiter)
    try:
        classes, n_rows = count_release_classes(parts, DataLocation(path, fmt, delimiter), qids)
    except (KeyError, ValueError):  # pyarrow's errors for a column the release lacks
        names = read_release_part(DataLocation(path, fmt, delimiter), parts[0]).column_names
        missing = [q for q in qids if q not in names]
        if not missing:
            raise
        raise DataError(f"release {path} has no column '{missing[0]}'") from None
    n_records = n_rows if n_records is None else n_records
    if n_rows > n_records:
        raise VerificationError(f"release has {n_rows} rows but {n_records} records were expected")
    star = tuple(TOP for _ in qids)
    n_star = classes.pop(star, 0)
    dropped = n_records - n_rows
    if claimed_suppressed is None and manifest is not None:
        claimed_suppressed = manifest.get("n_suppressed")
    if n_star >= k and not classes and claimed_suppressed != n_star + dropped:
        kept = {star: n_star}  # everything generalised to the top: one class
        n_suppressed = dropped
    else:
        kept = dict(classes)
        n_suppressed = n_star + dropped
    small = {c: n for c, n in kept.items() if n < k}
    if small:
        raise VerificationError(
            f"release is not {k}-anonymous: {len(small)} class(es) smaller than k "
            f"(smallest has {min(small.values())} record(s))"
        )
    allowed = max_suppressed(limit, n_records)
    if n_suppressed > allowed:
        raise VerificationError(
            f"release suppresses {n_suppressed} records, more than the limit allows ({allowed})"
        )
    sizes = np.asarray(list(kept.values()), dtype=np.int64)
    report = {
        "verified": True,
        "k": k,
        "n_records": n_records,
        "n_rows": n_rows,
        "n_suppressed": n_suppressed,
        "n_equivalence_classes": int(sizes.size),
        "min_class_size": int(sizes.min()) if sizes.size else 0,
        "dm_star": sum_squares(sizes) + n_suppressed * n_suppressed,
        "parts": len(parts),
    }
    if manifest is not None:
        for key in ("n_suppressed", "n_equivalence_classes", "min_class_size", "dm_star"):
            if key in manifest and manifest[key] != report[key]:
                raise VerificationError(
                    f"manifest says {key}={manifest[key]} but the release has {report[key]}"
                )
        present = set(read_release_part(DataLocation(path, fmt, delimiter), parts[0]).column_names)
        leaked = present & set(manifest.get("direct_identifiers_removed", []))
        if leaked:
            raise VerificationError(
                f"direct identifier column '{sorted(leaked)[0]}' is in the release"
            )
    return report
