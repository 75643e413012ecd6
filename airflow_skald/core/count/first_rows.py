"""Each class's first input row, a mergeable minimum (SPEC §4c): the order among classes of
one size in which the sample-based models suppress them (ARX's representant).

A row is coded `chunk_id << 32 | row in chunk`, so codes compare as the rows' global input order
however the input is cut. Held as sorted keys at a node with the smallest code of each;
partials merge by minimum and roll up a chain of nodes as the class counts do (keys rewritten
QID by QID, the minimum taken over merged bins). Counted only when a sample-based model is
configured; it holds one entry per class of the counted node.
"""

from __future__ import annotations

import io
import json
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

ROW_BITS = 32
MAGIC = b"SKALDFR1"
MIN_FLUSH = 1 << 22  # pending bins merged in once they are this many (or as many as held)


def chunk_codes(chunk_id: int, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """One chunk's distinct keys and the code of the first row holding each."""
    keys = np.asarray(keys, dtype=np.int64)
    row_bits = max(int(keys.size - 1).bit_length(), 1)
    top = int(keys.max(initial=0))
    if keys.size and int(keys.min()) >= 0 and top < 1 << (62 - row_bits):
        # key and row packed in one int64: one plain sort (no stable argsort) gives both
        packed = np.sort((keys << row_bits) | np.arange(keys.size, dtype=np.int64))
        key = packed >> row_bits
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])
        distinct, first = key[starts], packed[starts] & ((1 << row_bits) - 1)
    else:
        distinct, first = np.unique(keys, return_index=True)
    return distinct.astype(np.int64), (np.int64(chunk_id) << ROW_BITS) + first.astype(np.int64)


def _min_grouped(keys: np.ndarray, codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Distinct keys (sorted) with the smallest code of each."""
    keys, codes = np.asarray(keys, dtype=np.int64), np.asarray(codes, dtype=np.int64)
    if keys.size == 0 or bool(np.all(keys[1:] > keys[:-1])):  # distinct and sorted already
        return keys, codes
    order = np.argsort(keys, kind="stable")
    keys, codes = keys[order], codes[order]
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    return keys[starts], np.minimum.reduceat(codes, starts)


def _radices(dims: Sequence, node: Sequence[int]) -> list[int]:
    return [d.cards[level] for d, level in zip(dims, node, strict=True)]


def rolled_keys(dims: Sequence, keys: np.ndarray, src: Sequence[int], dst: Sequence[int]):
    """Keys of bins at node `src` as keys at `dst` (every QID at the same or a higher level)."""
    out = np.zeros(keys.size, dtype=np.int64)
    rest = np.asarray(keys, dtype=np.int64).copy()
    digits = []
    for radix in reversed(_radices(dims, src)):
        digits.append(rest % radix)
        rest //= radix
    digits.reverse()
    for d, a, b, code, radix in zip(dims, src, dst, digits, _radices(dims, dst), strict=True):
        out *= radix
        out += d.level_map(a, b)[code] if a != b else code
    return out


@dataclass
class FirstRows:
    """The first row (code) of each non-empty bin of `node`. Bins added wait in `pending` until
    they are as many as those held (at least MIN_FLUSH), then go in with one sort: merging
    costs O(bins log bins) over all chunks, not O(chunks x bins)."""

    node: tuple[int, ...]
    keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    codes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    pending: list = field(default_factory=list, repr=False, compare=False)

    def add(self, dims: Sequence, node: Sequence[int], keys, codes) -> None:
        """Bins counted at `node`: at or below this node (rolled up to it), or above it (this
        rolls up to theirs first)."""
        node = tuple(node)
        if node != self.node and all(a <= b for a, b in zip(self.node, node, strict=True)):
            self.rise(dims, node)
        keys, codes = np.asarray(keys, np.int64), np.asarray(codes, np.int64)
        if node != self.node:
            keys = rolled_keys(dims, keys, node, self.node)
        self.pending.append((keys, codes))
        waiting = sum(k.size for k, _ in self.pending)
        if waiting >= max(self.keys.size, MIN_FLUSH):
            self.flush()

    def flush(self) -> None:
        """The pending bins merged in (the smallest code per bin)."""
        if not self.pending:
            return
        keys, codes = _min_grouped(
            np.concatenate([k for k, _ in self.pending]),
            np.concatenate([c for _, c in self.pending]),
        )
        self.pending = []
        if not self.keys.size:
            self.keys, self.codes = keys, codes
            return
        # bins held already: the smaller code (one gather); new bins inserted in key order
        at = np.searchsorted(self.keys, keys)
        held = self.keys[np.minimum(at, self.keys.size - 1)] == keys
        where = at[held]
        self.codes[where] = np.minimum(self.codes[where], codes[held])
        new = ~held
        if new.any():
            self.keys = np.insert(self.keys, at[new], keys[new])
            self.codes = np.insert(self.codes, at[new], codes[new])

    def rise(self, dims: Sequence, node: Sequence[int]) -> None:
        node = tuple(node)
        if node != self.node:
            self.flush()
            self.keys, self.codes = _min_grouped(
                rolled_keys(dims, self.keys, self.node, node), self.codes
            )
            self.node = node

    def at(self, dims: Sequence, node: Sequence[int], keys: np.ndarray) -> np.ndarray:
        """The first-row codes of the classes `keys` (sorted) of `node`."""
        self.flush()
        rolled, codes = _min_grouped(rolled_keys(dims, self.keys, self.node, node), self.codes)
        index = np.minimum(np.searchsorted(rolled, keys), max(rolled.size - 1, 0))
        if keys.size and (rolled.size == 0 or np.any(rolled[index] != keys)):
            raise ValueError("classes without a first row: the counts and the rows disagree")
        return codes[index]

    @staticmethod
    def merge(dims: Sequence, parts: Sequence[FirstRows]) -> FirstRows:
        """Partials at nodes of one chain, at the highest of them (minimum per bin)."""
        top = max(parts, key=lambda p: sum(p.node))
        out = FirstRows(top.node)
        for p in parts:
            p.flush()
            out.add(dims, p.node, p.keys, p.codes)
        out.flush()
        return out

    def to_bytes(self) -> bytes:
        self.flush()
        buf = io.BytesIO()
        np.savez(buf, keys=self.keys, codes=self.codes)
        body = buf.getvalue()
        head = json.dumps({"node": list(self.node), "size": len(body)}).encode()
        return MAGIC + head + b"\n" + body

    @classmethod
    def split(cls, data: bytes) -> tuple[FirstRows | None, bytes]:
        """(the first rows, the rest) of bytes that may start with them."""
        if not data.startswith(MAGIC):
            return None, data
        head, _, body = data[len(MAGIC) :].partition(b"\n")
        meta = json.loads(head)
        z = np.load(io.BytesIO(body[: meta["size"]]))
        first = cls(tuple(int(x) for x in meta["node"]), z["keys"], z["codes"])
        return first, body[meta["size"] :]
