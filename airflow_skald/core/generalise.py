"""Phase 3: turn one input chunk into one release part at the chosen node.

QIDs become their bin's output string (a dictionary of the few distinct bins, then cast to
text), records of suppressed classes are masked ("*" in every QID) or dropped, direct
identifiers are removed, and every other column is kept unchanged, rows in input order.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from airflow_skald.core.config import SkaldConfig
from airflow_skald.core.dimensions import TOP
from airflow_skald.core.histogram import keys_of
from airflow_skald.core.io import ChunkRef
from airflow_skald.core.plan import Plan
from airflow_skald.core.search import Decision


def released_columns(config: SkaldConfig, columns: list[str]) -> list[str]:
    """Input columns minus direct identifiers, in input order."""
    return [c for c in columns if c not in config.direct_identifiers]


def _dense_inverse(codes: np.ndarray, card: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct codes (sorted) and each row's index into them, in O(rows + card)."""
    if card <= 4 * max(codes.size, 1) + 1024:
        present = np.flatnonzero(np.bincount(codes, minlength=card))
        remap = np.zeros(card, dtype=np.int32)
        remap[present] = np.arange(present.size, dtype=np.int32)
        return present, remap[codes]
    uniq, inv = np.unique(codes, return_inverse=True)
    return uniq, inv.astype(np.int32)


def suppressed_mask(
    keys: np.ndarray, suppressed_keys: np.ndarray, n_possible: int | None = None
) -> np.ndarray:
    """Rows whose class key is among the (sorted) suppressed keys."""
    if suppressed_keys.size == 0:
        return np.zeros(keys.size, dtype=bool)
    if n_possible is not None and n_possible <= 1 << 24:  # a bitmap lookup beats a search
        table = np.zeros(n_possible, dtype=bool)
        table[suppressed_keys] = True
        return table[keys]
    pos = np.minimum(np.searchsorted(suppressed_keys, keys), suppressed_keys.size - 1)
    return suppressed_keys[pos] == keys


def generalise_table(
    config: SkaldConfig, plan: Plan, decision: Decision, table: pa.Table, chunk: ChunkRef
) -> pa.Table:
    """The release part of one chunk (`table` holds the released columns)."""
    node_codes = []
    for dim, level in zip(plan.dims, decision.node, strict=True):
        node_codes.append(dim.codes_at(table.column(dim.name), chunk, level))
    n_possible = int(np.prod(np.asarray(decision.radices, dtype=object)))
    mask = suppressed_mask(
        keys_of(node_codes, decision.radices), decision.suppressed_keys, n_possible
    )
    any_masked = config.suppressed_records == "mask" and bool(mask.any())
    for dim, level, codes in zip(plan.dims, decision.node, node_codes, strict=True):
        uniq, inv = _dense_inverse(codes, dim.cards[level])
        labels = dim.labels(level, uniq)
        if any_masked:
            labels.append(TOP)
            inv[mask] = len(labels) - 1
        arr = pa.DictionaryArray.from_arrays(
            pa.array(inv, pa.int32()), pa.array(labels, pa.string())
        )
        table = table.set_column(
            table.schema.get_field_index(dim.name), dim.name, arr.cast(pa.string())
        )
    if config.suppressed_records == "drop" and mask.any():
        table = table.filter(pa.array(~mask))
    return table
