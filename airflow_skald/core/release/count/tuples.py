"""Distinct tuples of a dataset's (or a release's) chunks as `skald audit` reads them: the QIDs
at their current values with the criteria's attributes, counted exactly over chunks (partial
counts merged like a binary counter). Memory follows the number of distinct tuples."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.data.io import ChunkRef, map_ahead, read_chunk
from airflow_skald.core.encode.domain import DICTIONARY, csv_types, dictionary_of, single_array
from airflow_skald.core.encode.sensitive_domain import SensitiveStats, as_stored
from airflow_skald.core.errors import DataError
from airflow_skald.core.privacy import ClassTable
from airflow_skald.core.release.count.class_tables import class_tables

_SAFE = 1 << 62  # a mixed-radix key below this cannot overflow int64


def _not_auditable(attribute: str) -> Exception:
    return DataError(f"sensitive attribute '{attribute}' holds a value that cannot be audited")


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
    if attribute:  # as phase 1 keeps them
        dictionary = as_stored(dictionary)
    return dictionary.to_pylist(), index


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
