"""Counting equivalence classes: the one place where records become classes for everything
that judges classes as they are written or as they stand (the release check at the end of
every run, `skald verify`, `skald audit` and the per-chunk baseline).

Two readers feed one step:
- `parts.release_classes`: a release's parts, their generalised labels read
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

from airflow_skald.core.count.histogram import grouped, keys_of
from airflow_skald.core.encode.dimensions import TOP
from airflow_skald.core.encode.sensitive_domain import SensitiveStats
from airflow_skald.core.errors import VerificationError
from airflow_skald.core.privacy import ClassTable
from airflow_skald.core.release.count.class_tables import NONE as _NONE
from airflow_skald.core.release.count.class_tables import class_tables


def _not_in_input(attribute: str) -> Exception:
    return VerificationError(f"release column '{attribute}' holds a value the input did not have")


@dataclass
class ReleaseClasses:
    """The equivalence classes of released QID tuples: per QID its distinct labels, each class's
    index into them and its size, and the rows read. Held as arrays: memory follows the number
    of classes at a few bytes each, not Python tuples."""

    labels: list[list[str]]
    codes: np.ndarray  # (classes, QIDs) int64 (int32: an engine's class table, issue 43)
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

    def in_label_order(self) -> ReleaseClasses:
        """The same classes with each column's labels sorted (a null last) and the classes in
        the order of their label tuples, so what reads them in order (the at-risk classes
        among equal figures) does not depend on how the parts, or an engine's GROUP BY,
        listed them."""
        labels, codes = [], []
        for j, column in enumerate(self.labels):
            order = sorted(range(len(column)), key=lambda i: (column[i] is None, str(column[i])))
            rank = np.empty(len(column), dtype=np.int64)
            rank[order] = np.arange(len(column), dtype=np.int64)
            labels.append([column[i] for i in order])
            codes.append(rank[self.codes[:, j]])
        if not codes:
            return self
        perm = np.lexsort(codes[::-1])
        stacked = np.stack(codes, axis=1)[perm]
        return ReleaseClasses(labels, stacked, self.sizes[perm], self.n_rows)

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
        codes, counts = distinct_classes([np.concatenate(c) for c in columns], radices, weights)
        return ReleaseClasses([list(x) for x in index], codes, counts, n_rows)


def distinct_classes(
    codes: Sequence[np.ndarray],
    radices: Sequence[int],
    weights: np.ndarray | None = None,
    *,
    dtype: type = np.int64,
    owned: bool = False,
) -> tuple[np.ndarray, np.ndarray]:
    """The distinct tuples of per-column `codes` in mixed-radix key order, as a (classes,
    columns) array of `dtype` (int64; int32 where every radix fits) with each column contiguous
    (a merge reads them column by column), and their summed `weights` (1 per row when None). A
    column with one label (radix 1) is all zeros: it takes no part in the key (the order is the
    same). `owned`: `codes` is a list this may empty once the keys are made (freed early)."""
    live = [j for j, r in enumerate(radices) if r > 1]
    if live:
        keys = keys_of([codes[j] for j in live], [radices[j] for j in live])
    else:
        keys = np.zeros(len(codes[0]), dtype=np.int64)
    if owned:
        codes.clear()  # type: ignore[attr-defined]
    keys, counts = grouped(keys, weights, math.prod(radices[j] for j in live), owned=True)
    out = np.zeros((len(radices), keys.size), dtype=dtype)
    for j in reversed(live):  # in place: one scratch array of the classes
        out[j] = keys % radices[j]
        keys //= radices[j]
    return out.T, counts


@dataclass
class PartCodes:
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
            classes, counts = distinct_classes(self.codes, radices)
            return ReleaseClasses(self.labels, classes, counts, self.n_rows)
        codes = np.stack(self.codes).astype(np.int64, copy=False).T  # columns contiguous
        return ReleaseClasses(self.labels, codes, self.sizes, self.n_rows)
