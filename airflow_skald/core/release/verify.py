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
  broken; figures other than the manifest's; a direct identifier column.
"""

from __future__ import annotations

import io
import json
import math
import posixpath
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction

import fsspec
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from airflow_skald.core.count.histogram import grouped, keys_of
from airflow_skald.core.data.io import _full, filesystem, local_path, map_ahead, read_release_part
from airflow_skald.core.data.location import FORMATS, DataLocation
from airflow_skald.core.encode.dimensions import TOP
from airflow_skald.core.encode.domain import dictionary_of, single_array
from airflow_skald.core.encode.sensitive_domain import SensitiveStats
from airflow_skald.core.encode.sensitive_domain import sorted_values as _sorted_values
from airflow_skald.core.errors import DataError, VerificationError
from airflow_skald.core.privacy import (
    ClassTable,
    Judgement,
    PrivacyPolicy,
    max_suppressed,
)
from airflow_skald.core.privacy.distributions import ClassValues
from airflow_skald.core.privacy.model import RebuildContext
from airflow_skald.core.privacy.registry import check_entry, rebuild, with_threshold
from airflow_skald.core.quality import DM, DMStar, Scored
from airflow_skald.core.release.commit import MANIFEST
from airflow_skald.core.release.manifest_schema import Manifest


def release_parts(path: str) -> tuple[list[str], str]:
    """Part files of a release folder, sorted, and their format."""
    names = _listing(path)
    for fmt in ("parquet", "csv"):
        parts = [p for p in names if posixpath.basename(p).startswith("part-") and p.endswith(fmt)]
        if parts:
            return parts, fmt
    raise DataError(f"no release parts (part-*.parquet|csv) in {path}")


def _listing(path: str) -> list[str]:
    """Every entry of a release folder, sorted (URLs on object stores)."""
    fs, root = filesystem(path)
    if not fs.isdir(root):
        raise DataError(f"release folder not found: {path}")
    return sorted(_full(fs, n) for n in fs.ls(root, detail=False))


def listed_parts(path: str, manifest: dict | None) -> tuple[list[str], str]:
    """The parts to verify and their format: with a manifest that lists its parts, exactly
    those, in its order (DataError naming the first one missing; VerificationError naming a
    part-* file of the folder it does not list, which a reader of the folder would take for
    part of the release); without, every part-* file of the folder (`release_parts`)."""
    listed = (manifest or {}).get("parts")
    if listed is None:
        return release_parts(path)
    fmt = manifest.get("output_format") or listed[0].rsplit(".", 1)[-1]
    found = {posixpath.basename(p): p for p in _listing(path)}
    missing = [n for n in listed if n not in found]
    if missing:
        raise DataError(
            f"{missing[0]} of {path} is missing ({MANIFEST} lists {len(listed)} part(s), "
            f"{len(missing)} missing)"
        )
    known = set(listed)
    extra = [
        n
        for n in found
        if n.startswith("part-") and n.endswith(tuple(f".{f}" for f in FORMATS)) and n not in known
    ]
    if extra:
        raise VerificationError(f"{extra[0]} of {path} is not one of the parts {MANIFEST} lists")
    return [found[n] for n in listed], fmt


def read_manifest(path: str) -> dict | None:
    """The release's manifest.json, None if it has none; DataError naming it if it cannot be
    read, is not a JSON object, or a field verify reads has the wrong type (`check_manifest`)."""
    fs, root = filesystem(path)
    target = posixpath.join(root, MANIFEST)
    where = f"{MANIFEST} of {path}"
    try:
        if not fs.exists(target):
            return None
        with fs.open(target, "rb") as fh:
            raw = fh.read()
    except OSError:
        raise DataError(f"{where} cannot be read") from None
    try:
        manifest = json.loads(raw)
    except (ValueError, RecursionError):  # not JSON, not UTF-8, or nested beyond parsing
        raise DataError(f"{where} is not valid JSON") from None
    if not isinstance(manifest, dict):
        raise DataError(f"{where} is not a JSON object")
    check_manifest(manifest, where)
    return manifest


def check_manifest(manifest: dict, where: str) -> None:
    """DataError ("manifest.json of X: k must be an integer >= 2") for the first field that is
    not what the manifest schema (`Manifest`) says, then for a privacy model entry this
    version cannot re-check. Values are never quoted."""
    Manifest.parse(manifest, where)
    models = (manifest.get("privacy") or {}).get("models", [])

    def bad(what: str) -> DataError:
        return DataError(f"{where}: {what}")

    for i, d in enumerate(models):
        problem = check_entry(d)
        if problem is not None:
            raise bad(f"privacy.models[{i}]{problem}")


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
        columns: list[list[np.ndarray]] = [[] for _ in range(n_qids)]
        sizes = []
        for part in parts:
            if not part.sizes.size:
                continue
            for j in range(n_qids):  # each part's labels onto the merged ones, column by column
                glob = np.asarray(
                    [index[j].setdefault(v, len(index[j])) for v in part.labels[j]], np.int64
                )
                columns[j].append(glob[part.codes[:, j]])
            sizes.append(part.sizes)
        n_rows = sum(p.n_rows for p in parts)
        if not sizes:
            return ReleaseClasses.empty(n_qids, n_rows)
        radices = [max(len(x), 1) for x in index]
        # equal tuples (from different parts, or a label listed twice by another tool) are summed
        weights = np.concatenate(sizes).astype(np.int64)
        codes, counts = _classes([np.concatenate(c) for c in columns], radices, weights)
        return ReleaseClasses([list(x) for x in index], codes, counts, n_rows)


def _classes(
    codes: Sequence[np.ndarray], radices: Sequence[int], weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """The distinct tuples of per-column `codes` in mixed-radix key order, as a (classes,
    columns) int64 array with each column contiguous (a merge reads them column by column),
    and their summed `weights` (1 per row when None). A column with one label (radix 1) is all
    zeros: it takes no part in the key (the order is the same)."""
    live = [j for j, r in enumerate(radices) if r > 1]
    if live:
        keys = keys_of([codes[j] for j in live], [radices[j] for j in live])
    else:
        keys = np.zeros(len(codes[0]), dtype=np.int64)
    keys, counts = grouped(keys, weights, math.prod(radices[j] for j in live), owned=True)
    out = np.zeros((len(radices), keys.size), dtype=np.int64)
    for j in reversed(live):
        keys, out[j] = np.divmod(keys, radices[j])
    return out.T, counts


# Parts' class tables wait until they hold this many classes (or as many as the merged table)
# before they are merged into it (when the classes are too sparse for a dense table).
MERGE_BATCH_CLASSES = 1 << 20


def release_classes(
    parts: list[str], location: DataLocation, qids: list[str], sensitive: Sequence[str] = ()
) -> ReleaseClasses:
    """The classes of the released QID tuples over all parts (with `sensitive`: of the
    (QID tuple, sensitive values) tuples, a null being a value of its own).

    Each part is read dictionary-encoded (only these columns, natively from a local path) in
    the reading threads, strings never materialised, and summed into one dense table over the
    tuples of the labels seen so far (`_DenseClasses`): a part whose dictionaries span no more
    tuples than it has rows is first counted in its reading thread; a part whose dictionaries
    span more (e.g. with a sensitive column) goes in row by row, with no per-part table and no
    merge. A part whose dictionaries begin the labels seen so far (skald writes the labels a
    part uses, sorted: parts holding the same labels have the same dictionaries) is keyed in
    its reading thread, a multiply-add per column; else through a lookup per column. Either
    way one scatter-add. The dense table holds at most
    max(DENSE_CLASS_CELLS, DENSE_CELLS_PER_CLASS x (tuples counted + the part's rows)) cells;
    when the labels would outgrow that, parts' class tables are merged in batches instead: the
    merged table is merged again only once the waiting parts hold as many classes as it does
    (at least MERGE_BATCH_CLASSES), so merging costs O(classes over all parts), not
    O(parts x classes); it goes back into a dense table once the classes are many enough.
    Memory follows the number of distinct tuples (and one part's rows), never all the rows.
    The result is ReleaseClasses.merge of the parts' classes whatever the path: labels in
    first-seen order (a part's dictionary order), classes in key order."""
    names = [*qids, *sensitive]
    counter = _ClassCounter(len(names))

    def read(part: str) -> _PartCodes:
        dense = counter.dense
        try:
            codes = _read_codes(location, part, names, qids, group=dense is None)
        except Exception as exc:
            exc.skald_part = part  # which part failed, for a message naming it (`_count`)
            raise
        if dense is not None:
            dense.key(codes)
        return codes

    for _, codes in map_ahead(read, parts):  # parts read two at a time
        counter.add(codes)
    return counter.result()


@dataclass
class _PartCodes:
    """One part's columns as local labels (its dictionaries) and codes into them: one entry per
    row (`sizes` None), or per class of the part with its size."""

    labels: list[list]
    codes: list[np.ndarray]
    sizes: np.ndarray | None
    n_rows: int
    keys: np.ndarray | None = None  # the entries' keys in a dense table's `layout`, if known
    layout: tuple | None = None

    def classes(self) -> ReleaseClasses:
        if not self.n_rows:
            return ReleaseClasses.empty(len(self.labels))
        if self.sizes is None:
            radices = [max(len(x), 1) for x in self.labels]
            classes, counts = _classes(self.codes, radices)
            return ReleaseClasses(self.labels, classes, counts, self.n_rows)
        codes = np.stack(self.codes).astype(np.int64, copy=False).T  # columns contiguous
        return ReleaseClasses(self.labels, codes, self.sizes, self.n_rows)


def _read_codes(
    location: DataLocation, part: str, names: list[str], qids: list[str], group: bool
) -> _PartCodes:
    """A part's columns as codes into its dictionaries; its classes counted (entries per class)
    if `group`, or if its dictionaries span no more tuples than it has rows (then counting is
    cheap and shrinks what the merge reads), else one entry per row."""
    table = read_release_part(location, part, names)
    if not table.num_rows:
        return _PartCodes([[] for _ in names], [_NONE for _ in names], _NONE, 0)
    labels, codes = [], []
    for name in names:
        enc = dictionary_of(table.column(name)) if name in qids else _values(table, name)
        local = enc.dictionary.to_pylist()
        index = enc.indices
        if any(v is None for v in local) or index.null_count:
            if name in qids:
                raise VerificationError(f"release column '{name}' has empty values in {part}")
            local, index = [*local, None], index.fill_null(len(local))
        labels.append(local)
        codes.append(index.to_numpy(zero_copy_only=False))  # int32: keys_of widens
    radices = [max(len(x), 1) for x in labels]
    if group or math.prod(radices) <= table.num_rows:
        classes, counts = _classes(codes, radices)
        return _PartCodes(labels, list(classes.T), counts, table.num_rows)
    return _PartCodes(labels, codes, None, table.num_rows)


class _ClassCounter:
    """Parts summed into a dense table while it stays small for the tuples counted, else their
    class tables merged in batches (see `release_classes`)."""

    def __init__(self, n_columns: int):
        self.dense: _DenseClasses | None = _DenseClasses(n_columns)
        self.acc = ReleaseClasses.empty(n_columns)
        self.waiting: list[ReleaseClasses] = []
        self.n_waiting = 0

    def add(self, part: _PartCodes) -> None:
        if self.dense is not None:
            if self.dense.add(part):
                return
            self.acc, self.dense = self.dense.result(), None  # the labels outgrew it
        classes = part.classes()
        self.waiting.append(classes)
        self.n_waiting += classes.sizes.size
        if self.n_waiting >= max(self.acc.sizes.size, MERGE_BATCH_CLASSES):
            self.acc = ReleaseClasses.merge([self.acc, *self.waiting])
            self.waiting, self.n_waiting = [], 0
            self.dense = _DenseClasses.of(self.acc)  # None while the classes are too sparse

    def result(self) -> ReleaseClasses:
        if self.dense is not None:
            return self.dense.result()
        return ReleaseClasses.merge([self.acc, *self.waiting]) if self.waiting else self.acc


# Cells of the dense class table `release_classes` sums parts into (int64: 32 MiB) however few
# tuples it holds; beyond that, up to this many cells per tuple counted.
DENSE_CLASS_CELLS = 1 << 22
DENSE_CELLS_PER_CLASS = 8


class _DenseClasses:
    """Parts summed into one dense int64 array over every tuple of the labels seen so far, the
    last column innermost (each column's room is its number of labels when first laid out, and
    grows by half when outgrown, the table re-laid out then). A part costs a gather per column
    over its entries and one scatter-add; the whole table is never merged again. Mixed-radix
    keys order tuples the same whatever the rooms, so the result equals ReleaseClasses.merge of
    the same parts (labels first-seen, classes in key order)."""

    def __init__(self, n_columns: int):
        self.index: list[dict] = [{} for _ in range(n_columns)]
        self.room = [1] * n_columns
        self.counts = np.zeros(1, dtype=np.int64)
        self.n_rows = 0
        self.layout: tuple = ()  # (labels in order, rooms), replaced whenever they change
        self._laid_out()

    def _laid_out(self) -> None:
        self.layout = (tuple(tuple(ix) for ix in self.index), tuple(self.room))

    def key(self, part: _PartCodes) -> None:
        """In a reading thread: `part`'s keys, if each of its dictionaries is a prefix of the
        labels seen (as when parts are written with the same dictionaries): then its codes are
        the table's codes, and the keys cost a multiply-add per column, no lookup."""
        labels, room = layout = self.layout
        if not part.n_rows or not all(
            len(x) <= len(seen) and list(seen[: len(x)]) == x
            for x, seen in zip(part.labels, labels, strict=True)
        ):
            return
        keys = np.zeros(len(part.codes[0]), dtype=np.int64)
        for codes, r in zip(part.codes, room, strict=True):
            if r > 1:
                keys *= r
                keys += codes
        part.keys, part.layout = keys, layout

    @classmethod
    def of(cls, classes: ReleaseClasses) -> _DenseClasses | None:
        """`classes` (labels unique) as a dense table, or None if it would be too sparse."""
        room = [max(len(x), 1) for x in classes.labels]
        if math.prod(room) > max(DENSE_CLASS_CELLS, DENSE_CELLS_PER_CLASS * classes.sizes.size):
            return None
        dense = cls(len(room))
        dense.index = [{v: i for i, v in enumerate(x)} for x in classes.labels]
        dense.room = room
        dense.counts = np.zeros(math.prod(room), dtype=np.int64)
        if classes.sizes.size:
            dense.counts[keys_of(list(classes.codes.T), room)] = classes.sizes
        dense.n_rows = classes.n_rows
        dense._laid_out()
        return dense

    def add(self, part: _PartCodes) -> bool:
        """Sum `part` in; False (nothing changed) if its labels would outgrow the table."""
        if not part.n_rows:
            return True
        if part.layout is self.layout:  # keyed in its reading thread, the layout unchanged
            self._add(part.keys, part)
            return True
        fresh: list[dict] = []
        glob = []
        for index, labels in zip(self.index, part.labels, strict=True):
            new: dict = {}
            glob.append(
                np.asarray(
                    [
                        index[v] if v in index else new.setdefault(v, len(index) + len(new))
                        for v in labels
                    ],
                    dtype=np.int64,
                )
            )
            fresh.append(new)
        need = [len(ix) + len(f) for ix, f in zip(self.index, fresh, strict=True)]
        if any(n > r for n, r in zip(need, self.room, strict=True)):
            grown = [
                r if n <= r else max(n, r + r // 2) if r > 1 else n
                for n, r in zip(need, self.room, strict=True)
            ]
            cap = max(
                DENSE_CLASS_CELLS,
                DENSE_CELLS_PER_CLASS * (int(np.count_nonzero(self.counts)) + len(part.codes[0])),
            )
            if math.prod(grown) > cap:
                grown = [max(n, r) for n, r in zip(need, self.room, strict=True)]
                if math.prod(grown) > cap:
                    return False
            self._relayout(grown)
        for index, new in zip(self.index, fresh, strict=True):
            index.update(new)
        if any(fresh) or self.layout[1] != tuple(self.room):
            self._laid_out()
        keys = None
        stride = 1
        for j in reversed(range(len(self.room))):  # the key: sum of each column's code x stride
            if self.room[j] > 1:
                digit = (glob[j] * stride)[part.codes[j]]
                keys = digit if keys is None else keys.__iadd__(digit)
            stride *= self.room[j]
        self._add(keys, part)
        return True

    def _add(self, keys: np.ndarray | None, part: _PartCodes) -> None:
        if keys is None:  # every column has one label
            self.counts[0] += part.n_rows
        elif part.sizes is None:
            np.add.at(self.counts, keys, 1)
        else:
            np.add.at(self.counts, keys, part.sizes)
        self.n_rows += part.n_rows

    def _codes(self) -> tuple[np.ndarray, np.ndarray]:
        keys = np.flatnonzero(self.counts)
        out = np.zeros((len(self.room), keys.size), dtype=np.int64)
        rest = keys
        for j in reversed(range(len(self.room))):
            rest, out[j] = np.divmod(rest, self.room[j])
        return out, keys

    def _relayout(self, room: list[int]) -> None:
        codes, keys = self._codes()
        counts = np.zeros(math.prod(room), dtype=np.int64)
        counts[keys_of(list(codes), room)] = self.counts[keys]
        self.room, self.counts = room, counts

    def result(self) -> ReleaseClasses:
        codes, keys = self._codes()
        if not keys.size:
            return ReleaseClasses.empty(len(self.room), self.n_rows)
        return ReleaseClasses(
            [list(x) for x in self.index], codes.T, self.counts[keys], self.n_rows
        )


def _values(table: pa.Table, name: str) -> pa.DictionaryArray:
    """A sensitive column dictionary-encoded with its own values: numbers stay numbers (the
    run's value codes are keyed by them); a CSV release's columns are text."""
    column = table.column(name)
    if pa.types.is_dictionary(column.type):
        return dictionary_of(column)
    return pc.dictionary_encode(single_array(column))


def class_figures(
    n_star: int | ClassTable,
    kept: np.ndarray | ClassTable,
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
    star = n_star if isinstance(n_star, ClassTable) else ClassTable(np.asarray([n_star], np.int64))
    table = kept if isinstance(kept, ClassTable) else ClassTable(np.asarray(kept, np.int64))
    n_star = star.n_records
    if (
        n_star
        and not table.n_classes
        and not policy.check_release(star, where)
        and claimed_suppressed != n_star + dropped
    ):
        table, n_suppressed = star, dropped
    else:
        n_suppressed = n_star + dropped
    sizes = table.sizes
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
    sensitive: Mapping[str, SensitiveStats] | None = None,
) -> dict:
    """Check a release folder; raise VerificationError if it breaks its privacy policy.

    The policy is `policy` (the run's own check, with phase 1's `sensitive` statistics), else
    the manifest's, `k` / `suppression_limit` overriding it, its criteria re-checked from the
    release's own rows (see `standalone_policy`). A release whose every row is all-"*" reads
    both as the top node (one class) and as every record suppressed; `claimed_suppressed`
    (default: the manifest's) picks the reading. `classes`, if given, are the parts' classes
    already counted from the written files (`release_classes`, merged).

    A damaged or incomplete release raises DataError (bad input: it cannot be read as its
    manifest describes it) or VerificationError (it reads, but disagrees with its manifest),
    both before any criterion is judged; see the module's docstring for which is which.
    """
    manifest = read_manifest(path)
    parts, fmt = listed_parts(path, manifest)
    if manifest is not None:
        delimiter = manifest.get("output_delimiter", delimiter)
        if claimed_suppressed is None:
            claimed_suppressed = manifest.get("n_suppressed")
    location = DataLocation(path, fmt, delimiter)
    qids = qids if qids is not None else _qids(path, manifest)
    attributes = policy.attributes if policy is not None else _attributes(manifest)
    if classes is None:
        classes = _count(parts, location, qids, attributes)
    if manifest is not None and n_records is None:
        _rows_as_manifest(path, manifest, classes.n_rows)  # a part emptied or cut short
    skipped: list[dict] = []
    if policy is None:
        ordered = [d["attribute"] for d in _described(manifest) if d.get("distance") == "ordered"]
        sensitive = release_sensitive(classes, len(qids), attributes, ordered)
        policy, skipped = standalone_policy(path, manifest, k, suppression_limit, sensitive)
    if n_records is None:
        n_records = int(manifest["n_records"]) if manifest is not None else classes.n_rows
    star, kept = class_tables(classes, len(qids), policy.attributes, sensitive or {})
    figures = class_figures(
        star, kept, classes.n_rows, n_records, policy, claimed_suppressed=claimed_suppressed
    )
    report = {
        "verified": True,
        "k": policy.k,
        **{key: figures[key] for key in _REPORTED},
        "privacy_models": figures["privacy_models"],
        "parts": len(parts),
    }
    if skipped:
        report["not_rechecked"] = skipped
    if manifest is not None:
        _agrees_with_manifest(manifest, report)
        _no_direct_identifiers(manifest, location, parts[0])
    return report


def class_tables(
    classes: ReleaseClasses,
    n_qids: int,
    attributes: Sequence[str],
    sensitive: Mapping[str, SensitiveStats],
) -> tuple[ClassTable, ClassTable]:
    """The all-"*" class and the other (released) classes, with the distributions of the
    `attributes` (columns after the QIDs in `classes`) coded as `sensitive` codes them."""
    qlabels = classes.labels[:n_qids]
    radices = [max(len(x), 1) for x in qlabels]
    keys = keys_of(list(classes.codes[:, :n_qids].T), radices) if classes.sizes.size else _NONE
    star_key = -1
    if all(TOP in x for x in qlabels):
        star_key = int(keys_of([np.asarray([x.index(TOP)]) for x in qlabels], radices)[0])
    uniq, cls = np.unique(keys, return_inverse=True)
    codes = {}
    for j, a in enumerate(attributes):
        index = {v: i for i, v in enumerate(sensitive[a].values)}
        # a CSV release holds the values as text: numbers as written, a null as an empty cell
        text = {_as_text(v): i for i, v in enumerate(sensitive[a].values)}
        try:
            lookup = np.asarray(
                [index[v] if v in index else text[v] for v in classes.labels[n_qids + j]],
                dtype=np.int64,
            )
        except KeyError:
            raise VerificationError(
                f"release column '{a}' holds a value the input did not have"
            ) from None
        codes[a] = lookup[classes.codes[:, n_qids + j]] if lookup.size else _NONE

    def table(select: np.ndarray) -> ClassTable:
        renumber = np.full(uniq.size, -1, dtype=np.int64)
        renumber[select] = np.arange(int(select.sum()))
        c = renumber[cls.reshape(-1)]
        rows = c >= 0
        n = int(select.sum())
        w = classes.sizes[rows]
        sizes = np.bincount(c[rows], weights=w, minlength=n).astype(np.int64)
        values = {a: ClassValues.from_pairs(n, c[rows], codes[a][rows], w) for a in attributes}
        return ClassTable(sizes, values)

    star = uniq == star_key
    return table(star), table(~star)


def _as_text(value: object) -> str:
    """A sensitive value as a CSV release writes it (pyarrow's text of a number)."""
    return "" if value is None else pa.scalar(value).cast(pa.string()).as_py()


def release_sensitive(
    classes: ReleaseClasses, n_qids: int, attributes: Sequence[str], ordered: Sequence[str] = ()
) -> dict[str, SensitiveStats]:
    """The attributes' distributions over every row of a release (suppressed rows included:
    in mask mode, exactly the input's). `ordered` attributes are numerical: a CSV release holds
    them as text, read back as numbers (an empty cell a null) so that they sort as numbers."""
    out = {}
    for j, a in enumerate(attributes):
        labels = classes.labels[n_qids + j]
        if a in ordered and any(isinstance(v, str) for v in labels):
            labels = [_number(a, v) for v in labels]
        counts = np.bincount(
            classes.codes[:, n_qids + j], weights=classes.sizes, minlength=len(labels)
        ).astype(np.int64)
        numeric = all(isinstance(v, int | float) for v in labels if v is not None)
        out[a] = SensitiveStats(a, *_sorted_values(labels, counts.tolist()), numeric)
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
    path: str, manifest: dict | None, k: int | None, limit, sensitive: Mapping[str, SensitiveStats]
) -> tuple[PrivacyPolicy, list[dict]]:
    """The manifest's policy for `skald verify` (k and the limit overridable by flags), its
    criteria rebuilt with the release's own distributions; criteria that cannot be re-checked
    from the release alone are listed, with the reason, instead of being skipped silently."""
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
    ctx = RebuildContext(sensitive, (manifest or {}).get("suppressed_records") == "drop")
    entries = _described(manifest)
    if not any(d.get("model") == "k-anonymity" for d in entries):  # a manifest of k alone
        entries = [{"model": "k-anonymity", "k": k}, *entries]
    models, skipped = [], []
    for d in entries:
        model = rebuild(d, ctx)
        if isinstance(model, str):
            skipped.append({**d, "reason": model})
        else:
            models.append(model)
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
    if manifest.get("suppressed_records", "mask") == "drop":
        if "n_suppressed" not in manifest:
            return  # the rows dropped are counted as suppressed (class_figures)
        expected, what = n_records - manifest["n_suppressed"], "n_records - n_suppressed"
    else:
        expected, what = n_records, "n_records"
    if n_rows != expected:
        raise VerificationError(
            f"release {path} has {n_rows} rows but {MANIFEST} says {expected} ({what})"
        )


def _agrees_with_manifest(manifest: dict, report: dict) -> None:
    for key in ("n_suppressed", "n_equivalence_classes", "min_class_size", "dm_star"):
        if key in manifest and manifest[key] != report[key]:
            raise VerificationError(
                f"manifest says {key}={manifest[key]} but the release has {report[key]}"
            )


def _no_direct_identifiers(manifest: dict, location: DataLocation, part: str) -> None:
    present = set(_column_names(location, part))
    leaked = present & set(manifest.get("direct_identifiers_removed", []))
    if leaked:
        raise VerificationError(f"direct identifier column '{sorted(leaked)[0]}' is in the release")
