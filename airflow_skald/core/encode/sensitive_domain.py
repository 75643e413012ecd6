"""Phase 1's statistics of a sensitive attribute that privacy criteria name (docs/design.md §4b): its
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
from airflow_skald.core.transform.research_subset.classes import in_subset_codes


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
        """The distinct values and counts of one chunk's column. `numbers`: the attribute is
        numerical (ordered t-closeness): text (a CSV column) is read as numbers. Rows are only
        counted (a dictionary's indices, else hashed once); empty text and number parsing are
        applied to the distinct values."""
        raw, counts = _distinct(column)
        values, numeric = as_values(name, raw, numbers)
        # distinct stored values may be one value (an empty text and a null, "1" and "01")
        distinct = pc.unique(values)
        group = pc.index_in(values, value_set=distinct).to_numpy(zero_copy_only=False)
        totals = np.zeros(len(distinct), dtype=np.int64)
        np.add.at(totals, group.astype(np.intp), counts)
        out = as_stored(distinct).to_pylist()
        return SensitiveStats(name, *sorted_values(out, totals.tolist()), numeric)

    def with_counts_of(self, of: SensitiveStats) -> SensitiveStats:
        """These values (a column's) with the counts of `of` (some of the same column's rows;
        a value none of them holds counts 0): a research subset's distribution over the
        population's values (docs/design.md §4e, ADR 0045)."""
        counted = dict(zip(of.values, of.counts, strict=True))
        counts = [int(counted.get(v, 0)) for v in self.values]
        return SensitiveStats(self.name, list(self.values), counts, self.numeric)

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
        """Each record's value code (int64); a value or null phase 1 did not see is an error.
        A dictionary-encoded column (Parquet text read with read_dictionary) is coded on its
        dictionary and gathered by its indices: no text is compared per row."""
        pieces = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
        parts = [self._chunk_codes(arr) for arr in pieces]
        codes = np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)
        if codes.size and codes.min() < 0:
            if (codes == _UNSEEN).any():
                raise DataError(
                    f"sensitive attribute '{self.name}' holds a value phase 1 did not see: "
                    "the input changed between passes"
                )
            raise DataError(
                f"sensitive attribute '{self.name}' holds a null phase 1 did not see: "
                "the input changed between passes"
            )
        return codes

    def _chunk_codes(self, arr: pa.Array) -> np.ndarray:
        """One array's codes; _UNSEEN / _NO_NULL where phase 1 saw no such value / no null."""
        typ = arr.type
        if pa.types.is_boolean(typ):  # phase 1 stored pyarrow's text of them ("true", "false")
            arr = pc.if_else(arr, pa.scalar("true"), pa.scalar("false"))
            typ = arr.type
        if not pa.types.is_dictionary(typ):
            if _is_numeric(typ) == self.numeric and (_is_numeric(typ) or _is_text(typ)):
                return self._plain_codes(arr)
            arr = pc.dictionary_encode(arr)  # text to parse as numbers, other types as text
        idx, nulls = _indices(arr)
        used = None
        if self.numeric and _is_text(arr.type.value_type):
            # numbers are parsed from the stored text of the rows' entries only, as phase 1 did
            rows = idx if nulls is None else idx[~nulls]
            used = np.bincount(rows, minlength=len(arr.dictionary))
        table = self._entry_codes(arr.dictionary, used)
        if not len(table):  # no entries: every row is a null
            table = np.array([self._null_code], dtype=np.int64)
        codes = np.take(table, idx)
        if nulls is not None:
            codes[nulls] = self._null_code
        return codes

    def _plain_codes(self, arr: pa.Array) -> np.ndarray:
        """Codes of numbers, or of text that stays text: one lookup per row of the stored
        values (an empty text is looked up as itself and coded as a null)."""
        known = [v for v in self.values if v is not None]
        codes = list(range(len(known)))
        if _is_text(arr.type):
            lookup = pa.array([*known, ""], type=arr.type)
            codes.append(self._null_code)
        else:
            lookup = self._number_lookup(arr.type, known)
            if lookup is None:
                arr, lookup = arr.cast(pa.float64()), pa.array(known, pa.float64())
        table = np.array([*codes, _UNSEEN], dtype=np.int64)  # last: not in the lookup
        index = pc.index_in(arr, value_set=lookup).fill_null(len(lookup))
        codes = np.take(table, index.to_numpy(zero_copy_only=False))
        if arr.null_count:
            codes[arr.is_null().to_numpy(zero_copy_only=False)] = self._null_code
        return codes

    @staticmethod
    def _number_lookup(typ: pa.DataType, known: list) -> pa.Array | None:
        """Phase 1's numbers as `typ` (None: they are not all of it, e.g. 1.5 for int64)."""
        try:
            return pa.array(known, type=typ)
        except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError, OverflowError):
            return None

    @property
    def _null_code(self) -> int:
        return len(self.values) - 1 if self.values and self.values[-1] is None else _NO_NULL

    def _entry_codes(self, entries: pa.Array, used: np.ndarray | None) -> np.ndarray:
        """The code of each dictionary entry (`used`: row counts; unused entries are nulls)."""
        if used is not None:
            entries = pc.if_else(pa.array(used > 0), entries, pa.scalar(None, entries.type))
        values, _ = as_values(self.name, entries, self.numeric)
        known = [v for v in self.values if v is not None]
        if self.numeric:
            lookup = self._number_lookup(values.type, known)
            if lookup is None:
                values, lookup = values.cast(pa.float64()), pa.array(known, pa.float64())
        else:
            values, lookup = values.cast(pa.string()), pa.array(known, type=pa.string())
        index = pc.index_in(values, value_set=lookup).fill_null(_UNSEEN)
        table = index.to_numpy(zero_copy_only=False).astype(np.int64)
        table[values.is_null().to_numpy(zero_copy_only=False)] = self._null_code
        return table

    def to_dict(self) -> dict:
        return {"values": self.values, "counts": self.counts, "numeric": self.numeric}

    @classmethod
    def from_dict(cls, name: str, d: dict) -> SensitiveStats:
        return cls(name, list(d["values"]), [int(c) for c in d["counts"]], bool(d["numeric"]))


_UNSEEN = -2  # a code for a value phase 1 did not see
_NO_NULL = -1  # a code for a null when phase 1 saw none


def _is_text(typ: pa.DataType) -> bool:
    return pa.types.is_string(typ) or pa.types.is_large_string(typ)


def _is_numeric(typ: pa.DataType) -> bool:
    return pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_decimal(typ)


def _indices(arr: pa.DictionaryArray) -> tuple[np.ndarray, np.ndarray | None]:
    """Each row's dictionary index (0 in a null row) and the null rows (None: none)."""
    indices = arr.indices
    nulls = None
    if indices.null_count:
        nulls = indices.is_null().to_numpy(zero_copy_only=False)
        indices = indices.fill_null(0)
    return indices.to_numpy(zero_copy_only=False), nulls


def _distinct(column: pa.ChunkedArray | pa.Array) -> tuple[pa.Array, np.ndarray]:
    """The distinct stored values of a column (a null among them) and their record counts; a
    dictionary-encoded array's rows are counted by index, so its text is never hashed."""
    pieces = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    typ = column.type.value_type if pa.types.is_dictionary(column.type) else column.type
    values, counts, null_rows = [], [], 0
    for arr in pieces:
        if pa.types.is_dictionary(arr.type):
            idx, nulls = _indices(arr)
            if nulls is not None:
                null_rows += int(nulls.sum())
                idx = idx[~nulls]
            n = np.bincount(idx, minlength=len(arr.dictionary))
            used = np.flatnonzero(n)
            values.append(arr.dictionary.take(pa.array(used)))
            counts.append(n[used])
        else:
            counted = pc.value_counts(arr)
            values.append(counted.field("values"))
            counts.append(counted.field("counts").to_numpy(zero_copy_only=False))
    if null_rows:
        values.append(pa.nulls(1, typ))
        counts.append(np.array([null_rows]))
    if not values:
        return pa.array([], typ), np.zeros(0, dtype=np.int64)
    return pa.concat_arrays(values), np.concatenate(counts).astype(np.int64)


def as_values(
    name: str, column: pa.ChunkedArray | pa.Array, numbers: bool = False
) -> tuple[pa.ChunkedArray | pa.Array, bool]:
    """A sensitive column's values and whether they are numbers. Text (how CSV columns are
    read) has its empty cells as nulls (docs/design.md §4b); with `numbers` it is read as numbers."""
    typ = column.type
    if pa.types.is_dictionary(typ):
        column, typ = column.cast(typ.value_type), typ.value_type
    numeric = pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_decimal(typ)
    if pa.types.is_decimal(typ):  # as the float the distributions compare (JSON-safe)
        column, typ = pc.cast(column, pa.float64()), pa.float64()
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


def as_stored(values: pa.Array) -> pa.Array:
    """Sensitive values as phase 1 keeps them: numbers as numbers (a decimal as its float),
    any other type as pyarrow's text of it (a date, time or boolean: its CSV text)."""
    typ = values.type
    if pa.types.is_decimal(typ):
        return values.cast(pa.float64())
    if pa.types.is_integer(typ) or pa.types.is_floating(typ):
        return values
    return values.cast(pa.string())


def sorted_values(values: Sequence, counts: Sequence[int]) -> tuple[list, list[int]]:
    """Values in order (numbers numerically, text as text), a null last. A null counted 0
    stays, as any value counted 0 does (a research subset's counts over the population's
    values, `SensitiveStats.with_counts_of`: a null only records out of the subset hold)."""
    pairs = [(v, int(c)) for v, c in zip(values, counts, strict=True) if v is not None]
    pairs.sort(key=lambda p: p[0])
    nulls = sum(int(c) for v, c in zip(values, counts, strict=True) if v is None)
    has_null = any(v is None for v in values)
    out_v = [v for v, _ in pairs] + ([None] if has_null else [])
    out_c = [c for _, c in pairs] + ([nulls] if has_null else [])
    return out_v, out_c


def released_rows(column: str, values: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Which rows of one chunk's research subset column mark a released record (a bool per
    row)."""
    stats = SensitiveStats.of_column(column, values)
    return in_subset_codes(column, stats.values)[stats.codes(values)]
