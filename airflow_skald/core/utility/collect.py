"""What phase 3 gathers for the utility analysis while it writes the release, chunk by chunk:
no pass of its own over the data.

Per chunk, from the input rows it has read and the part it has generalised: the sample's
candidates (`sample.Sample`, by row number), each QID's value counts in the input and in the
release, and the release's label-pair counts of the contingency pairs. Partials merge exactly
(the sample by its keys, counts by summing), so the figures are the same with any chunking,
any number of workers and in the mapped DAG.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from airflow_skald.core.data.io import ChunkRef
from airflow_skald.core.settings.utility import SEED, UtilitySettings
from airflow_skald.core.utility.sample import Sample, key_bound
from airflow_skald.core.utility.summary import Counts

#: the sample's column of a DP run: whether the release holds the record
RELEASED = "__released"
#: between the two labels of a contingency cell's key (never in a label the release holds)
PAIR_SEPARATOR = "\x1f"


def pair_name(a: str, b: str) -> str:
    return f"{a}{PAIR_SEPARATOR}{b}"


def file_offsets(chunks: Sequence[ChunkRef]) -> dict[str, int]:
    """Each input file's first row number over all files (the files in the chunks' order):
    a record's number is its file's offset plus its row in the file, whatever the chunking."""
    rows: dict[str, int] = {}
    for c in chunks:
        rows[c.file] = max(rows.get(c.file, 0), c.row_start + c.n_rows)
    offsets, total = {}, 0
    for name, n in rows.items():
        offsets[name] = total
        total += n
    return offsets


@dataclass
class UtilityPartial:
    """The utility analysis's share of some chunks."""

    sample: Sample
    before: dict[str, Counts] = field(default_factory=dict)
    after: dict[str, Counts] = field(default_factory=dict)
    pairs: dict[str, Counts] = field(default_factory=dict)
    cpu_s: float = 0.0  # CPU seconds the chunks' shares took (in the phase's threads)

    @staticmethod
    def merge(parts: Sequence[UtilityPartial]) -> UtilityPartial:
        first = parts[0]

        def merged(attr: str) -> dict[str, Counts]:
            names = list(getattr(first, attr))
            return {n: Counts.merge([getattr(p, attr)[n] for p in parts]) for n in names}

        return UtilityPartial(
            Sample.merge([p.sample for p in parts]),
            merged("before"),
            merged("after"),
            merged("pairs"),
            sum(p.cpu_s for p in parts),
        )

    def to_bytes(self) -> bytes:
        """Framed blobs: a JSON head of names and lengths, then the blobs."""
        blobs = [("sample", "", self.sample.to_bytes())]
        for attr in ("before", "after", "pairs"):
            blobs += [(attr, n, c.to_bytes()) for n, c in getattr(self, attr).items()]
        s = self.sample
        head = {
            "sample": [s.capacity, s.seed, str(s.bound)],
            "cpu_s": self.cpu_s,
            "blobs": [[attr, n, len(b)] for attr, n, b in blobs],
        }
        return json.dumps(head).encode() + b"\n" + b"".join(b for _, _, b in blobs)

    @classmethod
    def from_bytes(cls, data: bytes) -> UtilityPartial:
        line, _, body = data.partition(b"\n")
        head = json.loads(line)
        capacity, seed, bound = head["sample"]
        out = cls(Sample.empty(capacity, seed, int(bound)), cpu_s=head["cpu_s"])
        at = 0
        for attr, name, size in head["blobs"]:
            blob = body[at : at + size]
            at += size
            if attr == "sample":
                out.sample = Sample.from_bytes(blob, capacity, seed, int(bound))
            else:
                getattr(out, attr)[name] = Counts.from_bytes(blob)
        return out


def _pair_counts(part: pa.Table, a: str, b: str) -> Counts:
    """The release's records per (label of a, label of b), from the part's dictionaries."""
    left = part.column(a).combine_chunks()
    right = part.column(b).combine_chunks()
    if not pa.types.is_dictionary(left.type):
        left = left.dictionary_encode()
    if not pa.types.is_dictionary(right.type):
        right = right.dictionary_encode()
    nb = len(right.dictionary)
    codes = left.indices.to_numpy(zero_copy_only=False).astype(np.int64) * nb
    codes += right.indices.to_numpy(zero_copy_only=False)
    counts = np.bincount(codes, minlength=len(left.dictionary) * nb)
    used = np.flatnonzero(counts)
    la = left.dictionary.cast(pa.string()).to_pylist()
    lb = right.dictionary.cast(pa.string()).to_pylist()
    keys = [pair_name(la[i // nb], lb[i % nb]) for i in used.tolist()]
    return Counts._sorted(pa.array(keys, pa.string()), counts[used].astype(np.int64))


class Collector:
    """Builds one chunk's partial (thread-safe: it keeps no state of its own but settings)."""

    def __init__(
        self,
        settings: UtilitySettings,
        qids: list[str],
        offsets: Mapping[str, int],
        n_records: int,
    ) -> None:
        self.settings = settings
        self.qids = qids
        self.offsets = dict(offsets)
        self.columns = settings.columns(qids)
        self.bound = key_bound(settings.max_records, n_records)

    def empty(self) -> UtilityPartial:
        return UtilityPartial(Sample.empty(self.settings.max_records, SEED, self.bound))

    def chunk(
        self, chunk: ChunkRef, table: pa.Table, part: pa.Table, kept: np.ndarray | None = None
    ) -> UtilityPartial:
        """One chunk's share: `table` its input rows (released columns), `part` its release;
        `kept` (a DP run): the input rows the release holds, the others released as none (the
        sample records them as RELEASED false, as ARX suppresses the records SafePub leaves
        out)."""
        t0 = time.thread_time()
        out = self.empty()
        sampled = table.select(self.columns)
        if kept is not None:
            sampled = sampled.append_column(RELEASED, pa.array(kept, pa.bool_()))
        out.sample.offer(self.offsets[chunk.file] + chunk.row_start, sampled)
        out.before = {q: Counts.of(table.column(q)) for q in self.qids}
        out.after = {q: Counts.of(part.column(q)) for q in self.qids}
        out.pairs = {pair_name(a, b): _pair_counts(part, a, b) for a, b in self.settings.pairs}
        out.cpu_s = time.thread_time() - t0
        return out
