"""Phase 1's statistics of a sensitive attribute that privacy criteria name (SPEC §4b): its
distinct values over ALL input records and how many records hold each (t-closeness compares
every class with this distribution), and the value codes phases 2 and 3 count with.

Values are sorted (numbers numerically, text as text), a null last as one more value; the
code of a value is its index. Counts are additive, so chunks merge exactly. These statistics
hold personal data (the attribute's values): artifact storage only, never XCom or manifests.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_skald.core.errors import DataError


@dataclass
class SensitiveStats:
    """One sensitive attribute's distinct values (sorted, null last) and their record counts."""

    name: str
    values: list
    counts: list[int]
    numeric: bool

    @property
    def m(self) -> int:
        """Distinct values, a null counted."""
        return len(self.values)

    @property
    def global_counts(self) -> np.ndarray:
        return np.asarray(self.counts, dtype=np.int64)

    @staticmethod
    def of_column(
        name: str, column: pa.ChunkedArray | pa.Array, numbers: bool = False
    ) -> SensitiveStats:
        """The distinct values and counts of one chunk's column (vectorised). `numbers`: the
        attribute is numerical (ordered t-closeness): text (a CSV column) is read as numbers."""
        column, numeric = as_values(name, column, numbers)
        counted = pc.value_counts(column)
        values = counted.field("values").to_pylist()
        counts = counted.field("counts").to_pylist()
        if not numeric:
            values = [None if v is None else str(v) for v in values]
        return SensitiveStats(name, *sorted_values(values, counts), numeric)

    def merge(self, other: SensitiveStats) -> SensitiveStats:
        if other.numeric != self.numeric:
            raise DataError(
                f"sensitive attribute '{self.name}' is numeric in some chunks and text in others"
            )
        total = dict(zip(self.values, self.counts, strict=True))
        for v, c in zip(other.values, other.counts, strict=True):
            total[v] = total.get(v, 0) + c
        return SensitiveStats(
            self.name, *sorted_values(list(total), list(total.values())), self.numeric
        )

    def codes(self, column: pa.ChunkedArray | pa.Array) -> np.ndarray:
        """Each record's value code (int64); a value phase 1 did not see is an error."""
        column, _ = as_values(self.name, column, self.numeric)
        if isinstance(column, pa.ChunkedArray):
            column = column.combine_chunks() if column.num_chunks != 1 else column.chunk(0)
        has_null = self.values and self.values[-1] is None
        known = [v for v in self.values if v is not None]
        if self.numeric:
            lookup = pa.array(known, type=column.type) if known else pa.array([], column.type)
        else:
            column = column.cast(pa.string())
            lookup = pa.array(known, type=pa.string())
        index = pc.index_in(column, value_set=lookup)
        missing = pc.and_(pc.is_null(index), pc.is_valid(column))
        if pc.any(missing).as_py():
            raise DataError(
                f"sensitive attribute '{self.name}' holds a value phase 1 did not see: "
                "the input changed between passes"
            )
        codes = index.fill_null(len(known) if has_null else -1).to_numpy(zero_copy_only=False)
        if (codes < 0).any():
            raise DataError(
                f"sensitive attribute '{self.name}' holds a null phase 1 did not see: "
                "the input changed between passes"
            )
        return codes.astype(np.int64, copy=False)

    def to_dict(self) -> dict:
        return {"values": self.values, "counts": self.counts, "numeric": self.numeric}

    @classmethod
    def from_dict(cls, name: str, d: dict) -> SensitiveStats:
        return cls(name, list(d["values"]), [int(c) for c in d["counts"]], bool(d["numeric"]))


def as_values(
    name: str, column: pa.ChunkedArray | pa.Array, numbers: bool = False
) -> tuple[pa.ChunkedArray | pa.Array, bool]:
    """A sensitive column's values and whether they are numbers. Text (how CSV columns are
    read) has its empty cells as nulls (SPEC §4b); with `numbers` it is read as numbers."""
    typ = column.type
    if pa.types.is_dictionary(typ):
        column, typ = column.cast(typ.value_type), typ.value_type
    numeric = pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_decimal(typ)
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        column = pc.if_else(pc.equal(column, ""), pa.scalar(None, typ), column)
        if numbers:
            try:
                column = pc.cast(column, pa.int64())
            except pa.ArrowInvalid:
                try:
                    column = pc.cast(column, pa.float64())
                except pa.ArrowInvalid:
                    raise DataError(
                        f"sensitive attribute '{name}' holds text, but its t-closeness "
                        "distance is ordered (numbers only)"
                    ) from None
            numeric = True
    return column, numeric


def sorted_values(values: Sequence, counts: Sequence[int]) -> tuple[list, list[int]]:
    """Values in order (numbers numerically, text as text), a null last."""
    pairs = [(v, int(c)) for v, c in zip(values, counts, strict=True) if v is not None]
    pairs.sort(key=lambda p: p[0])
    nulls = sum(int(c) for v, c in zip(values, counts, strict=True) if v is None)
    out_v = [v for v, _ in pairs] + ([None] if nulls else [])
    out_c = [c for _, c in pairs] + ([nulls] if nulls else [])
    return out_v, out_c
