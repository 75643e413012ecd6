"""A reproducible sample of at most `capacity` records, drawn over chunks.

Each record's key is a seeded 64-bit hash (splitmix64) of its row number in the input (rows
counted over the input's files in order), and the sample is the `capacity` records of smallest
key: the same records however the input is cut into chunks, chunk groups or workers, since a
part's sample merges with another's by keeping the smallest keys of both (bottom-k sampling, a
reservoir whose order is fixed by the keys, not by arrival). Ordered by key, the sample is a
uniform random permutation of its records, so its folds need no second shuffle.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

_ROW = "__row"


def _mix(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, element-wise on uint64 (wrapping arithmetic)."""
    with np.errstate(over="ignore"):
        x = x + np.uint64(0x9E3779B97F4A7C15)
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def row_keys(rows: np.ndarray, seed: int) -> np.ndarray:
    """Each row number's sampling key under `seed`."""
    salt = _mix(np.asarray([seed], dtype=np.uint64))[0]
    return _mix(np.asarray(rows, dtype=np.uint64) ^ salt)


def key_bound(capacity: int, n_records: int) -> int:
    """A key below which, with overwhelming probability, at least `capacity` of `n_records`
    keys fall (10 standard deviations above the expected count): a chunk offers only its
    records under it, so it hands over ~capacity/N of its rows, not `capacity` of them. The
    bound is per record, so the sample stays the same however the input is cut."""
    if n_records <= capacity:
        return 1 << 64
    wanted = capacity + 10 * capacity**0.5 + 100
    return int(min(1.0, wanted / n_records) * float(1 << 64))


def _plain(table: pa.Table) -> pa.Table:
    """Dictionary columns decoded: chunks' dictionaries differ, their values do not."""
    for i, f in enumerate(table.schema):
        if pa.types.is_dictionary(f.type):
            column = table.column(i).cast(f.type.value_type)
            table = table.set_column(i, pa.field(f.name, f.type.value_type), column)
    return table


@dataclass
class Sample:
    """Up to `capacity` records (their row numbers and sampled columns) of smallest key."""

    capacity: int
    seed: int
    bound: int  # only keys below it are offered (`key_bound`)
    rows: np.ndarray  # int64 row numbers
    table: pa.Table | None  # the sampled columns, one row per entry of `rows`

    @classmethod
    def empty(cls, capacity: int, seed: int, bound: int = 1 << 64) -> Sample:
        return cls(capacity, seed, bound, np.zeros(0, dtype=np.int64), None)

    @property
    def keys(self) -> np.ndarray:
        return row_keys(self.rows, self.seed)

    def offer(self, first_row: int, table: pa.Table) -> None:
        """Consider the records of `table`, numbered from `first_row` on."""
        n = table.num_rows
        if not n or not self.capacity:
            return
        rows = np.arange(first_row, first_row + n, dtype=np.int64)
        keys = row_keys(rows, self.seed)
        bound = self.keys.max() if self.rows.size >= self.capacity else None  # full
        if self.bound < 1 << 64:
            candidates = np.flatnonzero(keys < np.uint64(self.bound))
            if bound is not None:
                candidates = candidates[keys[candidates] <= bound]
        elif bound is not None:  # only keys below the largest kept can enter
            candidates = np.flatnonzero(keys <= bound)
        elif n > self.capacity:  # a chunk larger than the sample: its best `capacity` only
            candidates = np.argpartition(keys, self.capacity - 1)[: self.capacity]
        else:
            candidates = np.arange(n)
        if candidates.size:
            picked = _plain(table.take(pa.array(candidates)))
            self._absorb(rows[candidates], picked)

    def _absorb(self, rows: np.ndarray, table: pa.Table) -> None:
        if self.table is None:
            all_rows, all_table = rows, table
        else:
            all_rows = np.concatenate([self.rows, rows])
            all_table = pa.concat_tables([self.table, table])
        if all_rows.size > self.capacity:
            order = np.lexsort((all_rows, row_keys(all_rows, self.seed)))[: self.capacity]
            order.sort()  # keep the arrival order of the survivors: cheap takes
            all_rows, all_table = all_rows[order], all_table.take(pa.array(order))
        self.rows, self.table = all_rows, all_table

    @staticmethod
    def merge(parts: Sequence[Sample]) -> Sample:
        """The sample of all parts' records together (the smallest keys of all)."""
        out = Sample.empty(parts[0].capacity, parts[0].seed, parts[0].bound)
        for p in parts:
            if p.table is not None:
                out._absorb(p.rows, p.table)
        return out

    def ordered(self) -> tuple[np.ndarray, pa.Table | None]:
        """(row numbers, columns) in key order: a uniform random order of the records."""
        if self.table is None:
            return self.rows, None
        order = np.lexsort((self.rows, self.keys))
        return self.rows[order], self.table.take(pa.array(order)).combine_chunks()

    def to_bytes(self) -> bytes:
        """Arrow IPC of the columns with the row numbers (a mapped task's artifact: staged
        beside the run's other partials, never in XCom)."""
        if self.table is None:
            return b""
        table = self.table.append_column(_ROW, pa.array(self.rows, pa.int64()))
        sink = io.BytesIO()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        return sink.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes, capacity: int, seed: int, bound: int) -> Sample:
        if not data:
            return cls.empty(capacity, seed, bound)
        table = pa.ipc.open_stream(io.BytesIO(data)).read_all()
        rows = table.column(_ROW).to_numpy()
        return cls(capacity, seed, bound, rows, table.drop_columns([_ROW]))
