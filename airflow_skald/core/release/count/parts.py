"""A release's parts counted into its classes (`release_classes`): each part read
dictionary-encoded in the reading threads and summed into a dense table (`dense`), or its class
table merged in batches when the labels outgrow one. See `classes` for what the result is."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from airflow_skald.core.data.io import map_ahead, read_release_part
from airflow_skald.core.data.location import DataLocation
from airflow_skald.core.encode.domain import dictionary_of, single_array
from airflow_skald.core.errors import VerificationError
from airflow_skald.core.release.count.class_tables import NONE as _NONE
from airflow_skald.core.release.count.classes import PartCodes, ReleaseClasses, distinct_classes
from airflow_skald.core.release.count.dense import DenseClasses

# Parts' class tables wait until they hold this many classes (or as many as the merged table)
# before they are merged into it (when the classes are too sparse for a dense table).
MERGE_BATCH_CLASSES = 1 << 20


def release_classes(
    parts: list[str], location: DataLocation, qids: list[str], sensitive: Sequence[str] = ()
) -> ReleaseClasses:
    """The classes of the released QID tuples over all parts (with `sensitive`: of the
    (QID tuple, sensitive values) tuples, a null being a value of its own).

    Each part is read dictionary-encoded (only these columns, natively from a local path) in
    the reading threads, strings never materialised, and summed into one dense table over the
    tuples of the labels seen so far (`DenseClasses`): a part whose dictionaries span no more
    tuples than it has rows is first counted in its reading thread; a part whose dictionaries
    span more (e.g. with a sensitive column) goes in row by row, with no per-part table and no
    merge. A part whose dictionaries begin the labels seen so far (skald writes the labels a
    part uses, sorted: parts holding the same labels have the same dictionaries) is keyed in
    its reading thread, a multiply-add per column; else through a lookup per column. Either
    way one scatter-add. The dense table holds at most
    max(DENSE_CLASS_CELLS, DENSE_CELLS_PER_CLASS x (tuples counted + the part's rows)) cells;
    when the labels would outgrow that, parts' class tables are merged in batches instead: the
    merged table is merged again only once the waiting parts hold as many classes as it does
    (at least MERGE_BATCH_CLASSES), so merging costs O(classes over all parts), not
    O(parts x classes); it goes back into a dense table once the classes are many enough.
    Memory follows the number of distinct tuples (and one part's rows), never all the rows.
    The result is ReleaseClasses.merge of the parts' classes whatever the path: labels in
    first-seen order (a part's dictionary order), classes in key order."""
    names = [*qids, *sensitive]
    counter = _ClassCounter(len(names))

    def read(part: str) -> PartCodes:
        dense = counter.dense
        try:
            codes = _read_codes(location, part, names, qids, group=dense is None)
        except Exception as exc:
            exc.skald_part = (
                part  # which part failed, for a message naming it (`release_reading.count_parts`)
            )
            raise
        if dense is not None:
            dense.key(codes)
        return codes

    for _, codes in map_ahead(read, parts):  # parts read two at a time
        counter.add(codes)
    return counter.result()


def _read_codes(
    location: DataLocation, part: str, names: list[str], qids: list[str], group: bool
) -> PartCodes:
    """A part's columns as codes into its dictionaries; its classes counted (entries per class)
    if `group`, or if its dictionaries span no more tuples than it has rows (then counting is
    cheap and shrinks what the merge reads), else one entry per row."""
    table = read_release_part(location, part, names)
    if not table.num_rows:
        return PartCodes([[] for _ in names], [_NONE for _ in names], _NONE, 0)
    labels, codes = [], []
    for name in names:
        enc = dictionary_of(table.column(name)) if name in qids else value_dictionary(table, name)
        local = enc.dictionary.to_pylist()
        index = enc.indices
        if any(v is None for v in local) or index.null_count:
            if name in qids:
                raise VerificationError(f"release column '{name}' has empty values in {part}")
            local, index = [*local, None], index.fill_null(len(local))
        labels.append(local)
        codes.append(index.to_numpy(zero_copy_only=False))  # int32: keys_of widens
    radices = [max(len(x), 1) for x in labels]
    if group or math.prod(radices) <= table.num_rows:
        classes, counts = distinct_classes(codes, radices)
        return PartCodes(labels, list(classes.T), counts, table.num_rows)
    return PartCodes(labels, codes, None, table.num_rows)


class _ClassCounter:
    """Parts summed into a dense table while it stays small for the tuples counted, else their
    class tables merged in batches (see `release_classes`)."""

    def __init__(self, n_columns: int):
        self.dense: DenseClasses | None = DenseClasses(n_columns)
        self.acc = ReleaseClasses.empty(n_columns)
        self.waiting: list[ReleaseClasses] = []
        self.n_waiting = 0

    def add(self, part: PartCodes) -> None:
        if self.dense is not None:
            if self.dense.add(part):
                return
            self.acc, self.dense = self.dense.result(), None  # the labels outgrew it
        classes = part.classes()
        self.waiting.append(classes)
        self.n_waiting += classes.sizes.size
        if self.n_waiting >= max(self.acc.sizes.size, MERGE_BATCH_CLASSES):
            self.acc = ReleaseClasses.merge([self.acc, *self.waiting])
            self.waiting, self.n_waiting = [], 0
            self.dense = DenseClasses.of(self.acc)  # None while the classes are too sparse

    def result(self) -> ReleaseClasses:
        if self.dense is not None:
            return self.dense.result()
        return ReleaseClasses.merge([self.acc, *self.waiting]) if self.waiting else self.acc


def value_dictionary(table: pa.Table, name: str) -> pa.DictionaryArray:
    """A sensitive column dictionary-encoded with its own values: numbers stay numbers (the
    run's value codes are keyed by them); a CSV release's columns are text."""
    return column_dictionary(table.column(name))


def column_dictionary(column: pa.ChunkedArray | pa.Array) -> pa.DictionaryArray:
    """`value_dictionary` of one column."""
    if pa.types.is_dictionary(column.type):
        return dictionary_of(column)
    return pc.dictionary_encode(single_array(column))
