"""Counting equivalence classes: the one place where records become classes for everything
that judges classes as they are written or as they stand (the release check at the end of
every run, `skald verify`, `skald audit` and the per-chunk baseline).

Two readers feed one step:
- `release_classes`: a release's parts, their generalised labels read dictionary-encoded and
  counted per distinct (QID tuple, sensitive values) tuple (`ReleaseClasses`);
- `count_tuples`: a dataset's (or a release's) chunks as `skald audit` reads them, the QIDs at
  their current values (`Tuples`);
and `class_tables` turns either into the `ClassTable`s the privacy models judge: the all-"*"
class (suppressed records) and the other classes with their (class, value) counts.
Memory follows the number of distinct tuples, never the rows.
"""

from __future__ import annotations

import io
import json
import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.count.histogram import grouped, keys_of
from airflow_skald.core.data.io import ChunkRef, map_ahead, read_chunk, read_release_part
from airflow_skald.core.data.location import DataLocation
from airflow_skald.core.encode.dimensions import TOP
from airflow_skald.core.encode.domain import DICTIONARY, csv_types, dictionary_of, single_array
from airflow_skald.core.encode.sensitive_domain import SensitiveStats
from airflow_skald.core.errors import DataError, VerificationError
from airflow_skald.core.privacy import ClassTable
from airflow_skald.core.privacy.distributions import ClassValues

_SAFE = 1 << 62  # a mixed-radix key below this cannot overflow int64


def _not_in_input(attribute: str) -> Exception:
    return VerificationError(f"release column '{attribute}' holds a value the input did not have")


def _not_auditable(attribute: str) -> Exception:
    return DataError(f"sensitive attribute '{attribute}' holds a value that cannot be audited")


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

    def tables(
        self, n_qids: int, attributes: Sequence[str], sensitive: Mapping[str, SensitiveStats]
    ) -> tuple[ClassTable, ClassTable]:
        """The all-"*" class and the released classes (`class_tables`)."""
        return class_tables(
            self.labels, self.codes, self.sizes, n_qids, attributes, sensitive, _not_in_input
        )

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

    def tables(self, n_qids: int, attributes: Sequence[str]) -> tuple[ClassTable, ClassTable]:
        """The all-"*" class (suppressed records) and the other classes (`class_tables`)."""
        return class_tables(
            self.labels,
            self.codes.T,
            self.counts,
            n_qids,
            attributes,
            self.sensitive,
            _not_auditable,
        )


def count_tuples(
    config: SkaldConfig,
    chunks: Sequence[ChunkRef],
    release: bool,
    attributes: Sequence[str] | None = None,
) -> Tuples:
    """The distinct (QID tuple, sensitive values) tuples of all chunks and their counts
    (`attributes`: the columns counted with the QIDs; default: the criteria's)."""
    from airflow_skald.core.progress import ChunkProgress

    qids = config.qid_names
    attributes = config.criteria_attributes if attributes is None else tuple(attributes)
    names = [*qids, *attributes]
    if release:  # generalised labels ("[20, 30)", "*"): text, as `skald verify` reads them
        types = {q: DICTIONARY for q in qids}
        text = set(qids)
    else:  # as the run reads them: numbers for numerical QIDs, text for categorical ones
        types = csv_types(config)
        text = {q.name for q in config.quasi_identifiers if q.type != "numerical"}
    tick = ChunkProgress("audit", len(chunks))

    def count(chunk: ChunkRef) -> tuple[Tuples, int]:
        table = read_chunk(config.input, chunk, names, types, subset=config.keyed_subset)
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


def class_tables(
    labels: Sequence[Sequence],
    codes: np.ndarray,
    sizes: np.ndarray,
    n_qids: int,
    attributes: Sequence[str],
    sensitive: Mapping[str, SensitiveStats],
    unknown: Callable[[str], Exception],
) -> tuple[ClassTable, ClassTable]:
    """The all-"*" class and the other classes of counted tuples, as the privacy models see
    them: the tuples' first `n_qids` columns make a class, the next ones are the `attributes`,
    coded as `sensitive` codes them (a CSV release holds them as text). `codes` is (tuples,
    columns) into per-column `labels`; `sizes` the tuples' records. A value `sensitive` does
    not know raises `unknown(attribute)`. The one class-counting step of the release check,
    `skald verify`, `skald audit` and the per-chunk baseline."""
    qlabels = labels[:n_qids]
    radices = [max(len(x), 1) for x in qlabels]
    keys = keys_of(list(codes[:, :n_qids].T), radices) if sizes.size else _NONE
    star_key = -1
    if all(TOP in x for x in qlabels):
        star_key = int(keys_of([np.asarray([x.index(TOP)]) for x in qlabels], radices)[0])
    uniq, cls = np.unique(keys, return_inverse=True)
    values = {}
    for j, a in enumerate(attributes):
        index = {v: i for i, v in enumerate(sensitive[a].values)}
        # a CSV release holds the values as text: numbers as written, a null as an empty cell
        text = {_as_text(v): i for i, v in enumerate(sensitive[a].values)}
        try:
            lookup = np.asarray(
                [index[v] if v in index else text[v] for v in labels[n_qids + j]],
                dtype=np.int64,
            )
        except (KeyError, TypeError):  # TypeError: an unhashable value
            raise unknown(a) from None
        values[a] = lookup[codes[:, n_qids + j]] if lookup.size else _NONE

    def table(select: np.ndarray) -> ClassTable:
        renumber = np.full(uniq.size, -1, dtype=np.int64)
        renumber[select] = np.arange(int(select.sum()))
        c = renumber[cls.reshape(-1)]
        rows = c >= 0
        n = int(select.sum())
        w = sizes[rows]
        size = np.bincount(c[rows], weights=w, minlength=n).astype(np.int64)
        pairs = {a: ClassValues.from_pairs(n, c[rows], values[a][rows], w) for a in attributes}
        return ClassTable(size, pairs)

    star = uniq == star_key
    return table(star), table(~star)


def _as_text(value: object) -> str:
    """A sensitive value as a CSV release writes it (pyarrow's text of a number)."""
    return "" if value is None else pa.scalar(value).cast(pa.string()).as_py()
