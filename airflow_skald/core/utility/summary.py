"""Per-column statistics from value counts, exact over chunks.

A column's counts (each distinct value and its records) merge exactly by summing, so the
figures derived from the merged counts (count, distinct, mode, min, max, mean, median,
standard deviation) are the whole table's, however it was cut into chunks: the values are
summed in sorted order, never in the order the chunks came. A column with more distinct values
than `DISTINCT_CAP` keeps no counts (`overflow`): its figures are left to the sample.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: distinct values a column's counts may hold (beyond: figures from the sample)
DISTINCT_CAP = 1 << 22
#: the label of a suppressed (or fully generalised) value in a release
TOP = "*"


@dataclass
class Counts:
    """Distinct values (sorted, no duplicates) and their record counts; `values` None with
    `overflow` True when the column had more than DISTINCT_CAP distinct values."""

    values: pa.Array | None
    counts: np.ndarray
    overflow: bool = False

    @classmethod
    def of(cls, column: pa.ChunkedArray | pa.Array) -> Counts:
        """The counts of one chunk's column (nulls are not values: not counted)."""
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
        if pa.types.is_dictionary(column.type):
            return cls._of_dictionary(column)
        if _small_integers(column.type) and not column.null_count and len(column):
            counted = cls._of_integers(column)
            if counted is not None:
                return counted
        vc = pc.value_counts(column.drop_null())
        return cls._sorted(vc.field("values"), vc.field("counts").to_numpy().astype(np.int64))

    @classmethod
    def _of_integers(cls, column: pa.Array) -> Counts | None:
        """Whole numbers within a range of at most four per record: one count table (in value
        order, as `_sorted` orders them), not a hash table; None beyond."""
        v = column.to_numpy()
        lo, hi = int(v.min()), int(v.max())
        if hi - lo > 4 * v.size:
            return None
        counts = np.bincount((v - lo).astype(np.intp, copy=False))
        used = np.flatnonzero(counts)
        if used.size > DISTINCT_CAP:
            return cls(None, np.zeros(0, dtype=np.int64), True)
        return cls(pa.array(used + lo, type=column.type), counts[used].astype(np.int64))

    @classmethod
    def _of_dictionary(cls, column: pa.DictionaryArray) -> Counts:
        n = len(column.dictionary)
        indices = column.indices.drop_null().to_numpy(zero_copy_only=False)
        counts = np.bincount(indices, minlength=n)
        used = np.flatnonzero(counts)
        return cls._sorted(column.dictionary.take(pa.array(used)), counts[used].astype(np.int64))

    @classmethod
    def _sorted(cls, values: pa.Array, counts: np.ndarray) -> Counts:
        if len(values) > DISTINCT_CAP:
            return cls(None, np.zeros(0, dtype=np.int64), True)
        order = pc.array_sort_indices(values).to_numpy()
        return cls(values.take(pa.array(order)), counts[order])

    @staticmethod
    def merge(parts: Sequence[Counts]) -> Counts:
        """The counts of all parts together (equal values summed)."""
        live = [p for p in parts if p.values is not None and len(p.values)]
        if any(p.overflow for p in parts):
            return Counts(None, np.zeros(0, dtype=np.int64), True)
        if not live:
            return parts[0] if parts else Counts(pa.array([], pa.string()), np.zeros(0, np.int64))
        if len(live) == 1:
            return live[0]
        kind = live[0].values.type
        table = pa.table(
            {
                "v": pa.concat_arrays([p.values.cast(kind) for p in live]),
                "c": pa.array(np.concatenate([p.counts for p in live])),
            }
        )
        summed = table.group_by("v").aggregate([("c", "sum")])
        return Counts._sorted(
            summed.column("v").combine_chunks(), summed.column("c_sum").to_numpy()
        )

    @property
    def total(self) -> int:
        return int(self.counts.sum())

    def to_bytes(self) -> bytes:
        if self.values is None:
            return b""
        table = pa.table({"v": self.values, "c": pa.array(self.counts, pa.int64())})
        sink = io.BytesIO()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        return sink.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> Counts:
        if not data:
            return cls(None, np.zeros(0, dtype=np.int64), True)
        table = pa.ipc.open_stream(io.BytesIO(data)).read_all()
        return cls(table.column("v").combine_chunks(), table.column("c").to_numpy())


def _small_integers(kind: pa.DataType) -> bool:
    """Integers whose offsets from the smallest fit int64 (not uint64)."""
    return pa.types.is_signed_integer(kind) or kind in (pa.uint8(), pa.uint16(), pa.uint32())


def is_number_type(kind: pa.DataType) -> bool:
    return pa.types.is_integer(kind) or pa.types.is_floating(kind) or pa.types.is_decimal(kind)


def _numbers(values: pa.Array) -> np.ndarray | None:
    """The values as float64 when they are numbers (or text that is all numbers), else None."""
    if is_number_type(values.type):
        return values.cast(pa.float64()).to_numpy(zero_copy_only=False)
    if pa.types.is_string(values.type) or pa.types.is_large_string(values.type):
        try:
            out = np.asarray(values.to_pylist(), dtype=np.float64)
        except (TypeError, ValueError):
            return None
        return out if out.size and np.isfinite(out).all() else None
    return None


def numeric_figures(numbers: np.ndarray, counts: np.ndarray) -> dict:
    """min, max, mean, median (the middle two averaged for an even count, as pandas) and the
    standard deviation (n - 1, as pandas and ARX's summary) of values with record counts."""
    order = np.argsort(numbers, kind="stable")
    x, w = numbers[order], counts[order].astype(np.float64)
    n = int(counts.sum())
    mean = float(np.dot(x, w) / n)
    var = float(np.dot((x - mean) ** 2, w) / (n - 1)) if n > 1 else 0.0
    cum = np.cumsum(counts[order])
    low = x[np.searchsorted(cum, (n - 1) // 2, side="right")]
    high = x[np.searchsorted(cum, n // 2, side="right")]
    return {
        "min": float(x[0]),
        "max": float(x[-1]),
        "mean": mean,
        "median": float((low + high) / 2),
        "std": var**0.5,
    }


def figures(c: Counts, name_values: bool) -> dict:
    """count, distinct, the mode's records (and the mode and numeric figures when
    `name_values`: a release's labels are public, an input's values are not)."""
    if c.values is None:
        return {"overflow": True}
    values, counts = c.values, c.counts
    out: dict = {"count": c.total, "distinct": len(values)}
    if not len(values):
        return out
    top = int(np.argmax(counts))  # ties: the smallest value (values are sorted)
    out["mode_records"] = int(counts[top])
    numbers = _numbers(values)
    if name_values:
        out["mode"] = values[top].as_py() if numbers is None else float(numbers[top])
        if numbers is not None:
            out.update(numeric_figures(numbers, counts))
    elif numbers is not None:  # aggregates over all records, no record's value
        spread = numeric_figures(numbers, counts)
        out.update(mean=spread["mean"], std=spread["std"])
    return out


def release_figures(c: Counts) -> dict:
    """A released column's figures: '*' (suppressed or generalised to the top) counted apart,
    the others as values (numbers when every released label is one)."""
    if c.values is None:
        return {"overflow": True}
    is_top = np.asarray(pc.equal(c.values.cast(pa.string()), TOP).to_numpy(zero_copy_only=False))
    kept = Counts(c.values.filter(pa.array(~is_top)), c.counts[~is_top])
    return {**figures(kept, name_values=True), "top_records": int(c.counts[is_top].sum())}
