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
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.data.io import (
    GLOB_CHARS,
    ChunkRef,
    column_names,
    filesystem,
    list_chunks,
    map_ahead,
    read_chunk,
    schema_of,
)
from airflow_skald.core.data.location import DataLocation
from airflow_skald.core.encode.dimensions import TOP
from airflow_skald.core.encode.domain import (
    DICTIONARY,
    check_types,
    csv_types,
    dictionary_of,
    single_array,
)
from airflow_skald.core.encode.sensitive_domain import SensitiveStats
from airflow_skald.core.errors import DataError
from airflow_skald.core.privacy import ClassTable, PrivacyPolicy, max_suppressed
from airflow_skald.core.privacy.build import build_policy
from airflow_skald.core.privacy.distributions import ClassValues
from airflow_skald.core.release.commit import MANIFEST
from airflow_skald.core.release.verify import release_parts
from airflow_skald.core.text import decimal_text

log = logging.getLogger("airflow_skald")

_SAFE = 1 << 62  # a mixed-radix key below this cannot overflow int64


def audit(config: SkaldConfig) -> dict:
    """The audit report of `config.input` under the config's criteria (JSON-safe; see module)."""
    start = time.perf_counter()
    manifest = release_manifest(config.input.path)
    if manifest is not None:
        config = replace(config, input=release_location(config.input, manifest))
    chunks = list_chunks(config.input, config.chunk_rows)
    kind = "release" if manifest is not None else "dataset"
    log.info("audit: a %s of %d chunk(s) at its current QID values", kind, len(chunks))
    qids, attributes = config.qid_names, config.criteria_attributes
    _check_columns(config, chunks, [*qids, *attributes], release=manifest is not None)
    counted = count_tuples(config, chunks, release=manifest is not None)
    stats = counted.sensitive
    policy = build_policy(
        config, stats
    )  # l above a distinct count, a hierarchy missing a value: exit 2
    star, table = class_tables(counted, len(qids), attributes, stats)
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
        "seconds": round(time.perf_counter() - start, 3),
    }


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
    for model in policy.models:
        bad = ~model.keeps(table)
        kept &= ~bad
        figure = {key: _finite(v) for key, v in model.figure(table).items()}
        criteria.append(
            {
                **model.describe(),
                **figure,
                "classes_violating": int(bad.sum()),
                "records_in_violating_classes": int(sizes[bad].sum(dtype=np.int64)),
            }
        )
    to_suppress = n_star + int(sizes[~kept].sum(dtype=np.int64))
    allowed = max_suppressed(policy.suppression_limit, n_records)
    small = sizes < policy.min_class_size
    return {
        "n_records": n_records,
        "n_suppressed_already": n_star,
        "n_equivalence_classes": table.n_classes,
        "min_class_size": int(sizes.min()) if sizes.size else 0,
        "k": policy.k,
        "classes_below_k": int(small.sum()),
        "records_in_classes_below_k": int(sizes[small].sum(dtype=np.int64)),
        "privacy_models": criteria,
        "suppression": {
            "limit": decimal_text(Fraction(policy.suppression_limit)),
            "records_to_suppress": to_suppress,
            "max_suppressed": allowed,
            "fits": to_suppress <= allowed,
        },
        "holds_without_suppression": to_suppress == 0,
        "holds": (to_suppress == n_star if release else True) and to_suppress <= allowed,
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
    for file in dict.fromkeys(c.file for c in chunks):
        names = column_names(config.input, file)
        for name in needed:
            if name not in names:
                raise DataError(f"column '{name}' is missing from file {file}")
        if not release:
            check_types(config, file, schema_of(config.input, file))


# -- counting (QID tuple, sensitive values) tuples over chunks ---------------------------------


@dataclass
class Tuples:
    """Distinct tuples of some columns: per column its labels (Python values), per column each
    tuple's index into them, and each tuple's record count; with the criteria attributes'
    `SensitiveStats` over the same records. Tuples are in lexicographic order of their codes
    once grouped (`group_tuples`), so equal QID prefixes are adjacent."""

    labels: list[list]
    codes: np.ndarray  # (columns, tuples) int32 (int64 beyond 2^31 labels in a column)
    counts: np.ndarray  # int64
    sensitive: dict[str, SensitiveStats]


def count_tuples(config: SkaldConfig, chunks: Sequence[ChunkRef], release: bool) -> Tuples:
    """The distinct (QID tuple, sensitive values) tuples of all chunks and their counts."""
    from airflow_skald.core.run.pipeline import ChunkProgress

    qids, attributes = config.qid_names, config.criteria_attributes
    names = [*qids, *attributes]
    if release:  # generalised labels ("[20, 30)", "*"): text, as `skald verify` reads them
        types = {q: DICTIONARY for q in qids}
        text = set(qids)
    else:  # as the run reads them: numbers for numerical QIDs, text for categorical ones
        types = csv_types(config)
        text = {q.name for q in config.quasi_identifiers if q.type == "categorical"}
    tick = ChunkProgress("audit", len(chunks))

    def count(chunk: ChunkRef) -> tuple[Tuples, int]:
        table = read_chunk(config.input, chunk, names, types)
        labels, codes = [], []
        for name in names:
            local, index = _encode(table.column(name), name in text, name in attributes)
            labels.append(local)
            codes.append(index)
        ones = np.ones(table.num_rows, dtype=np.int64)
        codes, counts = group_tuples([(codes, ones)], [len(x) for x in labels])
        stats = {a: SensitiveStats.of_column(a, table.column(a)) for a in attributes}
        return Tuples(labels, codes, counts, stats), table.num_rows

    acc = _Accumulator(len(names))
    stats: dict[str, SensitiveStats] = {}
    for i, (_, (part, rows)) in enumerate(map_ahead(count, chunks)):
        acc.add(part)
        stats = (
            part.sensitive if not stats else {a: stats[a].merge(part.sensitive[a]) for a in stats}
        )
        tick(i + 1, rows)
    labels, codes, counts = acc.result()
    return Tuples(labels, codes, counts, stats)


def _encode(column: pa.ChunkedArray, text: bool, attribute: bool) -> tuple[list, np.ndarray]:
    """A column's distinct values (Python values; a null is one) and each row's index into them.
    Text QIDs as text (like the run); an attribute's values as `SensitiveStats` lists them.
    Entries of a stored dictionary that no row uses are dropped."""
    arr = single_array(column)
    if text:
        arr = dictionary_of(arr)
    else:
        if pa.types.is_dictionary(arr.type):
            arr = arr.cast(arr.type.value_type)
        if pa.types.is_floating(arr.type) and not attribute:  # NaN: a null, one value
            arr = pc.if_else(pc.is_nan(arr), pa.scalar(None, arr.type), arr)
        arr = pc.dictionary_encode(arr)
    dictionary = arr.dictionary
    indices = arr.indices
    if indices.null_count:
        dictionary = pa.concat_arrays([dictionary, pa.nulls(1, dictionary.type)])
        indices = indices.fill_null(len(dictionary) - 1)
    index = indices.to_numpy(zero_copy_only=False)
    used = np.bincount(index, minlength=len(dictionary)) > 0
    if not used.all():
        index = (np.cumsum(used) - 1)[index]
        dictionary = dictionary.filter(pa.array(used))
    labels = dictionary.to_pylist()
    if attribute:
        value_type = arr.type.value_type
        numeric = pa.types.is_integer(value_type) or pa.types.is_floating(value_type)
        if not (numeric or pa.types.is_decimal(value_type)):
            labels = [None if v is None else str(v) for v in labels]
    return labels, index


def group_tuples(
    parts: list[tuple[np.ndarray, np.ndarray]], radices: Sequence[int]
) -> tuple[np.ndarray, np.ndarray]:
    """Equal code tuples summed over `parts` (each: codes of shape (columns, rows), or a list
    of one array per column, and counts):
    the distinct tuples in lexicographic order and their counts. `parts` is emptied, so its
    arrays are freed as soon as they are no longer needed.

    The key is mixed-radix, the first column most significant. When the key with the count
    packed below it fits int64 (usual) one plain sort does it; else the key is arg-sorted, and
    a key that would overflow is replaced by its rank first (ranks < rows), so any number of
    columns and labels is grouped exactly."""
    radices = [max(int(r), 1) for r in radices]
    codes = np.concatenate([p[0] for p in parts], axis=1) if len(parts) > 1 else parts[0][0]
    counts = np.concatenate([p[1] for p in parts]) if len(parts) > 1 else parts[0][1]
    parts.clear()
    n = counts.size
    dtype = np.int32 if max(radices, default=1) < 1 << 31 else np.int64
    if n == 0:
        return np.zeros((len(radices), 0), dtype), counts
    key, radix, exact = np.zeros(n, dtype=np.int64), 1, True
    for j, r in enumerate(radices):
        if radix * r >= _SAFE:
            _, key = np.unique(key, return_inverse=True)
            key, radix, exact = key.astype(np.int64).reshape(-1), n, False
        key *= r
        key += codes[j]
        radix *= r
    width = int(counts.max()) + 1
    if exact and radix * width < _SAFE:  # pack the count below the key: np.sort, no argsort
        del codes
        key *= width
        key += counts
        key.sort()
        key, counts = np.divmod(key, width)
        out = None
    else:
        order = np.argsort(key, kind="stable")
        key, counts, out = key[order], counts[order], np.stack(codes)[:, order]
        del codes, order
    starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
    sums = np.add.reduceat(counts, starts)
    if out is not None:
        return out[:, starts].astype(dtype, copy=False), sums
    key = key[starts]
    out = np.empty((len(radices), starts.size), dtype=dtype)
    for j in range(len(radices) - 1, -1, -1):
        key, digit = np.divmod(key, radices[j])
        out[j] = digit
    return out, sums


class _Accumulator:
    """Partial tuple counts merged exactly: labels unified by value, equal tuples summed.

    Partials are merged like a binary counter (a partial is merged with the one before it once
    it is at least half its size), so each tuple is re-grouped O(log chunks) times, not once
    per chunk."""

    def __init__(self, n_columns: int):
        self.index: list[dict] = [{} for _ in range(n_columns)]
        self.stack: list[tuple[np.ndarray, np.ndarray]] = []
        self.n_columns = n_columns

    def add(self, part: Tuples) -> None:
        codes = part.codes  # local codes become global ones, in place
        for j, local in enumerate(part.labels):
            ix = self.index[j]
            lookup = np.asarray([ix.setdefault(v, len(ix)) for v in local], dtype=np.int64)
            if lookup.size and len(ix) >= 1 << 31:
                codes = codes.astype(np.int64)
            codes[j] = lookup[codes[j]] if lookup.size else codes[j]
        self.stack.append((codes, part.counts))
        while len(self.stack) >= 2 and self.stack[-2][1].size <= 2 * self.stack[-1][1].size:
            self.stack.append(self._merge([self.stack.pop(-2), self.stack.pop()]))

    def _merge(self, parts: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
        return group_tuples(parts, [len(ix) for ix in self.index])

    def result(self) -> tuple[list[list], np.ndarray, np.ndarray]:
        labels = [list(ix) for ix in self.index]
        if not self.stack:
            return labels, np.zeros((self.n_columns, 0), np.int64), np.zeros(0, np.int64)
        codes, counts = self._merge(self.stack)
        return labels, codes, counts


# -- the node's classes as the policy sees them ------------------------------------------------


def class_tables(
    tuples: Tuples, n_qids: int, attributes: Sequence[str], stats: dict[str, SensitiveStats]
) -> tuple[ClassTable, ClassTable]:
    """The all-"*" class (suppressed records) and the other classes (one per distinct QID
    tuple), with the attributes' distributions coded as `stats` codes them. The tuples are
    grouped (lexicographic order), so a class is a run of tuples with equal QID codes."""
    qcodes = tuples.codes[:n_qids]
    n = tuples.counts.size
    new = np.ones(n, dtype=bool)
    if n:
        new[1:] = (qcodes[:, 1:] != qcodes[:, :-1]).any(axis=0)
    star_rows = np.zeros(0, dtype=np.int64)  # the tuples whose every QID is "*": one class
    qlabels = tuples.labels[:n_qids]
    if n and all(TOP in x for x in qlabels):
        star = np.asarray([x.index(TOP) for x in qlabels], dtype=qcodes.dtype)
        star_rows = np.flatnonzero((qcodes == star[:, None]).all(axis=0))
    values = {}
    for j, a in enumerate(attributes):
        index = {v: i for i, v in enumerate(stats[a].values)}
        try:
            lookup = [index[v] for v in tuples.labels[n_qids + j]]
        except KeyError:  # NaN, or a type the stats list differently
            raise DataError(
                f"sensitive attribute '{a}' holds a value that cannot be audited"
            ) from None
        values[a] = np.asarray(lookup, dtype=np.int64)[tuples.codes[n_qids + j]]

    def table(rows: np.ndarray | slice) -> ClassTable:
        """The classes of the selected tuples (whole classes, in order), numbered from 0."""
        starts = new[rows]
        w = tuples.counts[rows]
        sizes = np.add.reduceat(w, np.flatnonzero(starts)) if w.size else w
        by_value = {}
        for a, v in values.items():  # (class, value) pairs summed, in order: ClassValues' rows
            c = np.cumsum(starts) - 1
            pairs, n_pairs = group_tuples([(np.stack([c, v[rows]]), w)], [sizes.size, stats[a].m])
            by_value[a] = ClassValues(sizes.size, pairs[0], pairs[1], n_pairs)
        return ClassTable(sizes.astype(np.int64), by_value)

    if not star_rows.size:  # a dataset: no copies of the tuples
        return table(slice(0, 0)), table(slice(None))
    others = np.ones(n, dtype=bool)
    others[star_rows] = False
    return table(star_rows), table(np.flatnonzero(others))
