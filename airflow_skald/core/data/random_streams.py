"""Random numbers for the synthetic datasets that do not depend on how the rows are chunked.

Random numbers come from independent streams keyed by ``(seed, block, column)`` where a block is
a fixed run of ``BLOCK_ROWS`` consecutive rows (``SeedSequence(seed, spawn_key=(block,
stream))``, i.e. the child ``[block][stream]`` of ``SeedSequence(seed).spawn``). Hence a row's
content depends only on the seed and its global row number: the same rows come out whatever
``chunk_rows`` is, a smaller dataset is a prefix of a larger one, and each chunk is generated
alone. `Sampler` draws from a discrete distribution by exact inverse CDF.
"""

from __future__ import annotations

import numpy as np

#: Rows per random-number block. Part of the data definition: changing it changes the data.
BLOCK_ROWS = 1 << 16


class Sampler:
    """Exact inverse-CDF sampling, ``searchsorted(cdf, u, "right")``, without a binary search.

    A guide table over ``cells`` (a power of 2) equal cells of [0, 1) gives each u the first
    candidate index; as a cell holds at most ``steps`` CDF points, that many branch-free
    corrections give the exact answer (u * cells and cell / cells are exact in binary floating
    point). With 2-d weights (segments, values) it holds one distribution per segment, with
    guide and CDF flattened, and each row inverts the CDF of its own segment.
    """

    def __init__(self, weights: np.ndarray, cells: int = 1 << 16) -> None:
        w = np.atleast_2d(np.asarray(weights, dtype=np.float64))  # every segment positive
        cdf = np.cumsum(w, axis=1)
        cdf /= cdf[:, -1:]
        cdf[:, -1] = 1.0
        n_seg, self.n_values = cdf.shape
        edges = np.arange(cells + 1, dtype=np.float64) / cells
        guide = np.stack([np.searchsorted(row, edges, side="right") for row in cdf])
        self.cells, self.steps = cells, int(np.max(np.diff(guide, axis=1)))
        local = np.minimum(guide[:, :-1], self.n_values - 1)
        self.guide = (local + self.n_values * np.arange(n_seg)[:, None]).ravel()
        self.cdf = cdf.ravel()

    def __call__(self, u: np.ndarray, segment: np.ndarray | None = None) -> np.ndarray:
        cell = (u * self.cells).astype(np.int64)
        idx = self.guide[cell if segment is None else segment * self.cells + cell]
        for _ in range(self.steps):
            idx += self.cdf[idx] <= u
        return idx if segment is None else idx - segment * self.n_values


class Streams:
    """Uniform [0, 1) draws for global rows [start, stop), keyed by (seed, block, stream).

    ``Generator.random`` fills sequentially, so a block's first j values never depend on how
    many are drawn: slicing a block is exact and rows are independent of the chunking.
    """

    def __init__(self, seed: int, start: int, stop: int) -> None:
        self.seed, self.start, self.stop = seed, start, stop

    def uniform(self, stream: int) -> np.ndarray:
        parts = []
        for block in range(self.start // BLOCK_ROWS, (self.stop - 1) // BLOCK_ROWS + 1):
            base = block * BLOCK_ROWS
            lo, hi = max(self.start, base) - base, min(self.stop, base + BLOCK_ROWS) - base
            seq = np.random.SeedSequence(self.seed, spawn_key=(block, stream))
            parts.append(np.random.Generator(np.random.PCG64(seq)).random(hi)[lo:])
        return parts[0] if len(parts) == 1 else np.concatenate(parts)

    def choice(self, stream: int, sampler: Sampler) -> np.ndarray:
        """Indices drawn by inverse CDF."""
        return sampler(self.uniform(stream))

    def integers(self, stream: int, low: int, high: int) -> np.ndarray:
        """Uniform integers in [low, high]."""
        return low + (self.uniform(stream) * (high - low + 1)).astype(np.int64)

    def force(self, values: np.ndarray, rows: np.ndarray, forced: np.ndarray) -> None:
        """Overwrite values at the given global rows where they fall inside this range."""
        inside = (rows >= self.start) & (rows < self.stop)
        values[rows[inside] - self.start] = forced[inside]
