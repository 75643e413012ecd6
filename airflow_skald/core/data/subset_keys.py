"""A research subset given as a dataset of keys (docs/design.md §4e `research_subset: {path, key}`): a
record of the population table belongs to the subset iff its key (one or more columns) is
among the subset dataset's keys. The flag is a derived column, `FLAG`, that `read_chunk` adds
to a chunk when asked for it, computed from the chunk's key columns (read for it, then left
out unless asked for): every pass sees the same flags, whatever the chunking.

The subset's keys are read once per process (its key columns only) and held as one Arrow
array of distinct keys: memory follows the subset's size, not the population's."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from airflow_skald.core.data.location import DataLocation
from airflow_skald.core.errors import DataError

FLAG = "__research_subset__"  # the derived column's name (never a column of the input)
_SEP = "\x1f"  # joins the text of several key columns (the unit separator)


@dataclass(frozen=True)
class KeyedSubset:
    """The subset's dataset and the key columns both tables share."""

    location: DataLocation
    key: tuple[str, ...]


def joined(table: pa.Table, key: Sequence[str], where: str) -> pa.Array:
    """One text key per record (several columns joined; a null key matches no subset key)."""
    for name in key:
        if name not in table.column_names:
            raise DataError(f"research_subset key column '{name}' is missing from {where}")
    parts = [pc.cast(table.column(name), pa.string()) for name in key]
    if len(parts) == 1:
        return parts[0].combine_chunks()
    return pc.binary_join_element_wise(*parts, _SEP).combine_chunks()


def with_flag(
    table_of: Callable[[list[str]], pa.Table],
    columns: Sequence[str],
    subset: KeyedSubset | None,
    keys_of: Callable[[KeyedSubset], pa.Array],
) -> pa.Table:
    """`table_of(columns)` with the derived FLAG column when `columns` ask for it: the key
    columns are read in its place and left out again unless asked for; a record is flagged
    iff its key is among `keys_of(subset)` (the subset's distinct keys)."""
    if subset is None or FLAG not in columns:
        return table_of(list(columns))
    wanted = [c for c in columns if c != FLAG]
    table = table_of(list(dict.fromkeys([*wanted, *subset.key])))
    keys = joined(table, subset.key, "the input")
    flag = pc.fill_null(pc.is_in(keys, value_set=keys_of(subset)), False)
    return table.select(wanted).append_column(FLAG, flag)
