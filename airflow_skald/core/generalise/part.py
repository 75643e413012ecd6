"""Phase 3: turn one input chunk into one release part at the chosen node.

QIDs become their bin's output string, kept dictionary-encoded (the few distinct bins and one
index per row; `io.write_part` stores them so readers see text), records of suppressed classes are masked ("*" in every QID) or dropped, direct
identifiers are removed (or transformed: `core.transform`, e.g. pseudonyms), and every other column is kept unchanged, rows in input order.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.count.histogram import keys_of
from airflow_skald.core.data.io import ChunkRef
from airflow_skald.core.encode.dimensions import TOP, Dimension
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.search.decision import Decision
from airflow_skald.core.transform import registry as transform_registry
from airflow_skald.core.transform.local_recoding.steps import joint_offsets, released_codes
from airflow_skald.core.transform.microaggregation.aggregates import Aggregates, release_column
from airflow_skald.core.transform.research_subset.classes import SubsetFlags, subset_rows


def released_columns(config: SkaldConfig, columns: list[str]) -> list[str]:
    """Input columns minus direct identifiers, in input order."""
    return [c for c in columns if c not in config.direct_identifiers]


def _dense_inverse(codes: np.ndarray, card: int) -> tuple[np.ndarray, np.ndarray]:
    """Distinct codes (sorted) and each row's index into them, in O(rows + card)."""
    if card <= 4 * max(codes.size, 1) + 1024:
        present = np.flatnonzero(np.bincount(codes, minlength=card))
        if present.size == card:  # every code is used: the codes are the indices
            return present, codes.astype(np.int32)
        remap = np.zeros(card, dtype=np.int32)
        remap[present] = np.arange(present.size, dtype=np.int32)
        return present, remap[codes]
    uniq, inv = np.unique(codes, return_inverse=True)
    return uniq, inv.astype(np.int32)


# The last suppressed-key bitmap built: (suppressed keys, n_possible, bitmap). Every chunk of a
# pass uses the same decision, so the bitmap (up to 16 MiB) is built once per pass, not per chunk.
_BITMAP: tuple[np.ndarray, int, np.ndarray] | None = None


def _suppressed_bitmap(suppressed_keys: np.ndarray, n_possible: int) -> np.ndarray:
    global _BITMAP
    cached = _BITMAP
    if cached is not None and cached[0] is suppressed_keys and cached[1] == n_possible:
        return cached[2]
    table = np.zeros(n_possible, dtype=bool)
    table[suppressed_keys] = True
    table.flags.writeable = False
    _BITMAP = (suppressed_keys, n_possible, table)
    return table


def suppressed_mask(
    keys: np.ndarray, suppressed_keys: np.ndarray, n_possible: int | None = None
) -> np.ndarray:
    """Rows whose class key is among the (sorted) suppressed keys."""
    if suppressed_keys.size == 0:
        return np.zeros(keys.size, dtype=bool)
    if n_possible is not None and n_possible <= 1 << 24:  # a bitmap lookup beats a search
        return _suppressed_bitmap(suppressed_keys, n_possible)[keys]
    pos = np.minimum(np.searchsorted(suppressed_keys, keys), suppressed_keys.size - 1)
    return suppressed_keys[pos] == keys


def _used_entries_only(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """A dictionary column whose stored dictionary lists only values its rows use, in sorted
    order: a dropped row's value, or a value of rows outside this chunk (a chunk sliced from a
    larger row group), must not survive in the part's dictionary page, nor the order in which
    other rows first used them. The column keeps its dictionary type (index width, ordered)."""
    chunks = []
    kind = column.type
    for arr in column.chunks:
        n = len(arr.dictionary)
        nulls = arr.null_count
        # nulls: a code past the end; indices stay in their own (narrow) integer type
        idx = (arr.indices.fill_null(n) if nulls else arr.indices).to_numpy()
        used = np.flatnonzero(np.bincount(idx, minlength=n + 1)[:n])
        order = pc.array_sort_indices(arr.dictionary.take(pa.array(used))).to_numpy()
        entries = used[order]  # used entries, by value
        if entries.size == n and np.array_equal(entries, np.arange(n)):
            chunks.append(arr)  # already exactly the used values, sorted
            continue
        remap = np.zeros(n + 1, dtype=kind.index_type.to_pandas_dtype())
        remap[entries] = np.arange(entries.size)
        mask = arr.is_null().to_numpy(zero_copy_only=False) if nulls else None
        indices = pa.array(remap[idx], type=kind.index_type, mask=mask)
        dictionary = arr.dictionary.take(pa.array(entries))
        chunks.append(pa.DictionaryArray.from_arrays(indices, dictionary, ordered=kind.ordered))
    return pa.chunked_array(chunks, kind)


# Bins of a level whose output strings are remembered once computed (per dimension and level):
# numerical labels are exact decimal arithmetic per bin, too slow to redo for every chunk.
_LABEL_CACHE_BINS = 1 << 20


def bin_labels(dim: Dimension, level: int, codes: np.ndarray) -> list[str]:
    """`dim.labels(level, codes)`, each bin's string computed once per pass over the chunks
    (levels of at most _LABEL_CACHE_BINS bins; threads may fill the same entries, equally)."""
    card = dim.cards[level]
    if card > _LABEL_CACHE_BINS or not codes.size:
        return dim.labels(level, codes)
    cache = dim.__dict__.setdefault("_bin_labels", {})
    if level not in cache:
        cache[level] = (np.empty(card, dtype=object), np.zeros(card, dtype=bool))
    strings, known = cache[level]
    missing = codes[~known[codes]]
    if missing.size:
        strings[missing] = dim.labels(level, missing)
        known[missing] = True
    return strings[codes].tolist()


def generalise_table(
    config: SkaldConfig,
    plan: Plan,
    decision: Decision,
    table: pa.Table,
    chunk: ChunkRef,
    aggregates: Sequence[Aggregates] = (),
    subset: SubsetFlags | None = None,
) -> pa.Table:
    """The release part of one chunk (`table` holds the released columns; text columns may be
    dictionary-encoded). Every dictionary of the result lists only values its rows hold.
    With a research subset only its records are released, without its column (docs/design.md §4e).
    A microaggregated QID (`aggregates`, docs/design.md §4f) gets its class's aggregate instead.
    `subset`: the research subset's flags (`research_subset.flags_of`, built once a pass)."""
    if config.research_subset is not None:
        if subset is None:
            raise ValueError("phase 3 of a research subset needs its flags (flags_of)")
        codes = plan.stats.sensitive[subset.column].codes(table.column(subset.column))
        table = subset_rows(table, subset.column, codes, subset.mask)
    node_codes = [
        dim.codes_at(table.column(dim.name), chunk, level)
        for dim, level in zip(plan.dims, decision.node, strict=True)
    ]
    keys, mask = _class_keys_and_mask(decision, node_codes, table.num_rows, bool(aggregates))
    joint = bool(decision.steps) and bool(mask.any())
    if joint:  # local recoding: rows at the node of their step, codes over every level
        mask, node_codes = recoded_rows(plan, decision, table, chunk, node_codes, mask)
    if config.suppression.drop and mask.any():
        keep = ~mask
        table = table.filter(pa.array(keep))
        node_codes = [codes[keep] for codes in node_codes]
        keys = keys[keep]
        mask = np.zeros(table.num_rows, dtype=bool)
    table = transform_registry.release_part(config.transformations, table)
    for i, f in enumerate(table.schema):  # a chunk's slice or a dropped row: unused entries
        if pa.types.is_dictionary(f.type) and f.name not in plan.stats.qids:
            table = table.set_column(i, f.name, _used_entries_only(table.column(i)))
    masked = np.flatnonzero(mask)  # few rows: a scatter per QID, not a pass
    aggregated = {a.name for a in aggregates}  # written below: no labels to make
    for dim, level, codes in zip(plan.dims, decision.node, node_codes, strict=True):
        if dim.name not in aggregated:
            arr = _qid_column(dim, level, codes, masked, joint)
            table = table.set_column(table.schema.get_field_index(dim.name), dim.name, arr)
    for agg in aggregates:
        arr = release_column(agg, keys, masked)
        table = table.set_column(table.schema.get_field_index(agg.name), agg.name, arr)
    return table


def _class_keys_and_mask(
    decision: Decision, node_codes: list[np.ndarray], n_rows: int, aggregated: bool
) -> tuple[np.ndarray | None, np.ndarray]:
    """Each row's class key at the node (None when neither suppression nor an aggregate needs
    it) and the rows of suppressed classes."""
    keys = None
    if decision.suppressed_keys.size or aggregated:  # a QID of one bin adds 0 to every key
        wide = [i for i, r in enumerate(decision.radices) if r > 1]
        keys = keys_of([node_codes[i] for i in wide], [decision.radices[i] for i in wide])
        if not wide:  # every QID at one bin: one class
            keys = np.zeros(n_rows, dtype=np.int64)
    if decision.suppressed_keys.size:
        n_possible = int(np.prod(np.asarray(decision.radices, dtype=object)))
        mask = suppressed_mask(keys, decision.suppressed_keys, n_possible)
    else:  # nothing suppressed: no class keys to compute
        mask = np.zeros(n_rows, dtype=bool)
    return keys, mask


def _qid_column(
    dim: Dimension, level: int, codes: np.ndarray, masked: np.ndarray, joint: bool
) -> pa.Array:
    """A QID's released column: each row's label at `level` (`joint`: at its own level, local
    recoding), TOP in the `masked` rows."""
    card = dim.cards[level]
    if joint:  # codes in the joint space of every level (local recoding)
        offsets = joint_offsets(dim)
        card = int(offsets[-1])
    elif card == 1:  # one bin (the top): its label and '*' for masked rows, no inverse
        return _one_bin_column(bin_labels(dim, level, np.zeros(1, np.int64))[0], masked, codes.size)
    if masked.size:  # masked rows get code `card` (TOP): their own bins are not listed
        # (codes_at returns a fresh array: writing into it is safe)
        codes[masked] = card
    uniq, inv = _dense_inverse(codes, card + 1)
    if joint:
        labels = joint_labels(dim, offsets, uniq[uniq < card])
    else:
        labels = bin_labels(dim, level, uniq[uniq < card])
    if uniq.size and uniq[-1] == card:
        labels.append(TOP)
    if len(set(labels)) < len(labels):  # "*" twice: a top-level bin and masked rows
        distinct, remap = np.unique(np.asarray(labels, dtype=object), return_inverse=True)
        labels, inv = distinct.tolist(), remap.astype(np.int32)[inv]
    return pa.DictionaryArray.from_arrays(pa.array(inv, pa.int32()), pa.array(labels, pa.string()))


def _one_bin_column(label: str, masked: np.ndarray, n: int) -> pa.DictionaryArray:
    """A QID of one bin at the node: `label` in every row, TOP in the `masked` rows (sorted
    row numbers) of `n`, as the general case writes it (`_dense_inverse` of codes 0 and 1)."""
    labels = [label] if masked.size < n else []
    if masked.size and label != TOP:
        labels.append(TOP)
    indices = np.zeros(n, dtype=np.int32)
    if masked.size < n and masked.size and label != TOP:
        indices[masked] = 1
    elif not labels and masked.size:  # every row masked
        labels = [TOP]
    return pa.DictionaryArray.from_arrays(
        pa.array(indices, pa.int32()), pa.array(labels, pa.string())
    )


def joint_labels(dim: Dimension, offsets: np.ndarray, codes: np.ndarray) -> list[str]:
    """The labels of codes in the joint space of every level (`joint_offsets`), in order."""
    level_of = np.searchsorted(offsets, codes, side="right") - 1
    out = np.empty(codes.size, dtype=object)
    for level in np.unique(level_of).tolist():
        at = level_of == level
        out[at] = bin_labels(dim, level, codes[at] - offsets[level])
    return out.tolist()


def recoded_rows(
    plan: Plan,
    decision: Decision,
    table: pa.Table,
    chunk: ChunkRef,
    node_codes: list[np.ndarray],
    mask: np.ndarray,
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Local recoding (docs/design.md §4f): the rows the global node suppresses, each at the node of
    the step that released it (codes in the joint space of every level); the rows still
    suppressed, or released at the top node, masked."""

    def codes_of(dim: Dimension, level: int, rows: np.ndarray) -> np.ndarray:
        return dim.codes_at(table.column(dim.name).take(pa.array(rows)), chunk, level)

    chain = [(s.node, s.radices, s.suppressed_keys, s.at_top) for s in decision.steps]
    return released_codes(plan.dims, chain, codes_of, decision.node, node_codes, mask)
