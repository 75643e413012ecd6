"""The dense class table `parts.release_classes` sums parts into while it stays small for the
tuples counted (`DenseClasses`): one int64 array over every tuple of the labels seen so far, a
gather per column and one scatter-add per part, never merged again."""

from __future__ import annotations

import math

import numpy as np

from airflow_skald.core.count.histogram import keys_of
from airflow_skald.core.release.count.classes import PartCodes, ReleaseClasses

# Cells of the dense class table `release_classes` sums parts into (int64: 32 MiB) however few
# tuples it holds; beyond that, up to this many cells per tuple counted.
DENSE_CLASS_CELLS = 1 << 22
DENSE_CELLS_PER_CLASS = 8


class DenseClasses:
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

    def key(self, part: PartCodes) -> None:
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
    def of(cls, classes: ReleaseClasses) -> DenseClasses | None:
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

    def add(self, part: PartCodes) -> bool:
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

    def _add(self, keys: np.ndarray | None, part: PartCodes) -> None:
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
