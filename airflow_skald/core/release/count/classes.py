"""Counting equivalence classes: the one place where records become classes for everything
that judges classes as they are written or as they stand (the release check at the end of
every run, `skald verify`, `skald audit` and the per-chunk baseline).

Two readers feed one step:
- `release_classes` (here): a release's parts, their generalised labels read
  dictionary-encoded and counted per distinct (QID tuple, sensitive values) tuple
  (`ReleaseClasses`);
- `tuples.count_tuples`: a dataset's (or a release's) chunks as `skald audit` reads them, the
  QIDs at their current values (`Tuples`);
and `class_tables.class_tables` turns either into the `ClassTable`s the privacy models judge.
Memory follows the number of distinct tuples, never the rows.
"""

from __future__ import annotations

import io
import json
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_skald.core.count.histogram import grouped, keys_of
from airflow_skald.core.data.io import map_ahead, read_release_part
from airflow_skald.core.data.location import DataLocation
from airflow_skald.core.encode.dimensions import TOP
from airflow_skald.core.encode.domain import dictionary_of, single_array
from airflow_skald.core.encode.sensitive_domain import SensitiveStats
from airflow_skald.core.errors import VerificationError
from airflow_skald.core.privacy import ClassTable
from airflow_skald.core.release.count.class_tables import NONE as _NONE
from airflow_skald.core.release.count.class_tables import class_tables

_SAFE = 1 << 62  # a mixed-radix key below this cannot overflow int64


def _not_in_input(attribute: str) -> Exception:
    return VerificationError(f"release column '{attribute}' holds a value the input did not have")


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
            exc.skald_part = part  # which part failed, for a message naming it (`release_reading.count_parts`)
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
