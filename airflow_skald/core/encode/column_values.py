"""A QID column as the arrays phases 1 and 2 work on.

One array (`single_array`), a dictionary of text (`dictionary_of`, `used_labels`), the
distinct entries and each row's index into them (`entries_of`), whole-number keys of integers,
dates and timestamps (`int_keys`); nulls and NaN refused with their count and first row
(`check_no_nulls`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_skald.core.data.io import ChunkRef
from airflow_skald.core.errors import DataError


def first_row(mask: pa.Array | np.ndarray) -> int:
    """Index of the first true entry of a boolean mask."""
    arr = (
        mask.to_numpy(zero_copy_only=False)
        if isinstance(mask, pa.Array | pa.ChunkedArray)
        else mask
    )
    return int(np.flatnonzero(arr)[0])


def dictionary_of(column: pa.ChunkedArray | pa.Array) -> pa.DictionaryArray:
    """A categorical column as a dictionary array of text (ARX hierarchies are text, e.g.
    Adult's ages), whatever type it was stored with."""
    arr = column
    if isinstance(arr, pa.ChunkedArray):
        if pa.types.is_dictionary(arr.type) and arr.num_chunks > 1:
            arr = arr.unify_dictionaries()
        arr = single_array(arr)
    if not pa.types.is_dictionary(arr.type):
        if not pa.types.is_string(arr.type):
            arr = arr.cast(pa.string())
        arr = pc.dictionary_encode(arr)
    if not pa.types.is_string(arr.type.value_type):
        arr = pa.DictionaryArray.from_arrays(arr.indices, arr.dictionary.cast(pa.string()))
    return arr


def used_labels(arr: pa.DictionaryArray) -> tuple[np.ndarray, np.ndarray]:
    """Row indices into the dictionary (nulls must be checked first) and the used entries."""
    idx = arr.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    used = np.bincount(idx, minlength=len(arr.dictionary)) > 0
    return idx, used


def single_array(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """The column as one array (no copy when it already is one chunk)."""
    if not isinstance(column, pa.ChunkedArray):
        return column
    return column.chunk(0) if column.num_chunks == 1 else column.combine_chunks()


def check_no_nulls(name: str, arr: pa.Array, chunk: ChunkRef) -> None:
    """Nulls (and NaN) in a QID cannot be generalised: a clear error with count and location."""
    floating = pa.types.is_floating(arr.type)
    if not floating and not arr.null_count:  # the validity bitmap's count: no pass over rows
        return
    bad = arr.is_null(nan_is_null=True) if floating else arr.is_null()
    n_bad = pc.sum(bad).as_py() or 0
    if n_bad:
        raise DataError(
            f"column '{name}' has {n_bad} null/NaN value(s) among {chunk.span()}, first at "
            f"{chunk.where(first_row(bad))}"
        )


def entries_of(
    column: pa.ChunkedArray | pa.Array, seconds: int = 1
) -> tuple[pa.Array, np.ndarray, bool]:
    """A column's distinct entries as stored (text, dates, numbers), each row's index into
    them, and whether timestamps were cut to whole `seconds` (`int_keys`): a dictionary
    column's own dictionary, a span of whole-number keys, else one hash pass."""
    chunked = isinstance(column, pa.ChunkedArray) and column.num_chunks > 1
    if chunked and pa.types.is_dictionary(column.type):
        column = column.unify_dictionaries()
    arr = single_array(column)
    if pa.types.is_dictionary(arr.type):
        return arr.dictionary, arr.indices.to_numpy(zero_copy_only=False), False
    keys = int_keys(arr, seconds, cut=True)
    cut = False
    if keys is not None:
        lo, hi = int(keys.keys.min()), int(keys.keys.max())
        if hi - lo < max(SPAN_ENTRIES, 2 * keys.keys.size):
            return keys.make(np.arange(lo, hi + 1, dtype=np.int64)), keys.keys - lo, keys.cut
        arr, cut = keys.make(keys.keys), keys.cut
    arr = pc.dictionary_encode(arr)
    return arr.dictionary, arr.indices.to_numpy(zero_copy_only=False), cut


SPAN_ENTRIES = 1 << 20  # a span of whole-number keys this wide (or twice the rows) is listed
_PER_SECOND = {"s": 1, "ms": 10**3, "us": 10**6, "ns": 10**9}
DAY_SECONDS = 86_400


@dataclass
class IntKeys:
    """A column as whole-number keys, and the way back to entries of its type."""

    keys: np.ndarray
    make: Callable[[np.ndarray], pa.Array]  # keys -> entries (the first instant of each key)
    cut: bool = False  # some timestamp had a part below the key's granularity


def int_keys(arr: pa.Array, seconds: int = 1, cut: bool = False) -> IntKeys | None:
    """Integers, Parquet dates (days) and timestamps (whole `seconds` since the epoch, in UTC;
    a day for `seconds` of a day or more) as integer keys: a span of keys can then be listed
    and looked up by subtraction, not hashed per row; with `cut`, whether a timestamp had a
    part below a key (phase 1 states it). None for other columns and empty ones."""
    typ = arr.type
    if not len(arr):
        return None
    if pa.types.is_integer(typ):
        return IntKeys(arr.to_numpy(zero_copy_only=False), lambda k: pa.array(k).cast(typ))
    if pa.types.is_date32(typ):
        days = arr.view(pa.int32()).to_numpy(zero_copy_only=False)
        return IntKeys(days, lambda k: pa.array(k.astype(np.int32), pa.int32()).view(typ))
    if pa.types.is_timestamp(typ):
        per = _PER_SECOND[typ.unit] * min(seconds, DAY_SECONDS)
        ints = arr.view(pa.int64()).to_numpy(zero_copy_only=False)
        if per == 1:
            return IntKeys(ints, lambda k: pa.array(k, pa.int64()).view(typ))
        make = lambda k: pa.array(k * per, pa.int64()).view(typ)  # noqa: E731
        if not cut:
            return IntKeys(np.floor_divide(ints, per), make)
        keys, rest = np.divmod(ints, per)
        return IntKeys(keys, make, bool(rest.any()))
    return None
