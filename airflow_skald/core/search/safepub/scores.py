"""ARX's score functions of SafePub's search (``Metric.getScore``, divided by their
sensitivity, higher is better), from a node's classes over the sampled records.

In ARX a class counts its sampled records (``count``) and all its records (``pcount``); a class
kept by the privacy models releases its sampled records, everything else (suppressed sampled
records, and every record the sample left out) counts as suppressed. Only the number of
records left out enters a score, never which class they were in: N − n (N input records, n
sampled). With K the kept records, d the QIDs and k the DP model's k:

- dm (``MetricSDNMDiscernability``): −(N (N − K) + Σ kept |E|²) / (N (k²/(k−1) + 1));
- precision (``MetricMDNMPrecision``): −Σ_i (K level_i/height_i + N − K) / d / (k − 1);
- aecs (``MetricSDAECS``): kept classes, + 1 if any record is suppressed or left out;
- loss (``MetricMDNMLoss``): −Σ_i (Σ_kept |E| share_i(E) + N − K) / d / (k − 1), share the
  domain share of the class's label of QID i;
- nu_entropy (``MetricMDNUEntropyPrecomputed``): −Σ_i (Σ_v c_v² + N (N − Σ_v c_v)) /
  (N d) / (k²/(k−1) + 1), c_v the kept records whose label of QID i is v, a label other than
  the QID's top one (ARX's root value).

The denominators with k − 1 are left out at k = 1 (ARX: ``if (k > 1)``; DM's factor is then 5).
Sums are exact (fractions); ARX's doubles can differ in the last bits, which the mechanism's
probabilities do not notice.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from airflow_skald.core.privacy.differential_privacy import OBJECTIVES  # noqa: F401 (re-exported)
from airflow_skald.core.quality.context import QualityContext
from airflow_skald.core.quality.metric import sum_squares
from airflow_skald.core.quality.multidim import exact_int_dot


@dataclass(frozen=True)
class NodeClasses:
    """What a score reads of one node: the classes (sampled records), which are kept, their
    keys at the node, and the record counts."""

    node: tuple[int, ...]
    sizes: np.ndarray
    kept: np.ndarray
    keys: np.ndarray
    n_input: int  # N: every input record
    n_sampled: int  # n

    @property
    def kept_records(self) -> int:
        return int(self.sizes[self.kept].sum(dtype=np.int64))


def _dm_factor(k: int) -> Fraction:
    return Fraction(5) if k == 1 else Fraction(k * k, k - 1) + 1


def _per_k(k: int) -> int:
    return k - 1 if k > 1 else 1


Score = Callable[[NodeClasses], Fraction]


def scorer(objective: str, ctx: QualityContext, k: int) -> Score:
    """The score function of `objective` (one of OBJECTIVES) for a run's DP k."""
    tops = [d.top for d in ctx.dims]
    d = len(ctx.dims)

    def dm(c: NodeClasses) -> Fraction:
        n = c.n_input
        kept = c.sizes[c.kept]
        penalty = n * (n - c.kept_records) + sum_squares(kept)
        return -Fraction(penalty) / (n * _dm_factor(k))

    def precision(c: NodeClasses) -> Fraction:
        big_k, n = c.kept_records, c.n_input
        total = sum(
            (Fraction(big_k * level, top) if top else Fraction(0)) + (n - big_k)
            for level, top in zip(c.node, tops, strict=True)
        )
        return -total / d / _per_k(k)

    def aecs(c: NodeClasses) -> Fraction:
        kept = int(c.kept.sum())
        suppressed = bool((~c.kept & (c.sizes > 0)).any()) or c.n_input > c.n_sampled
        return Fraction(kept + int(suppressed))

    def codes(c: NodeClasses) -> list[np.ndarray]:
        return ctx.codes(c.keys[c.kept], c.node)

    def loss(c: NodeClasses) -> Fraction:
        kept_sizes = c.sizes[c.kept].astype(np.int64)
        total = Fraction(d * (c.n_input - c.kept_records))
        for i, code in enumerate(codes(c)):
            u, nums = ctx.shares(i)
            total += Fraction(exact_int_dot(kept_sizes, nums[c.node[i]][code]), u)
        return -total / d / _per_k(k)

    def nu_entropy(c: NodeClasses) -> Fraction:
        n = c.n_input
        kept_sizes = c.sizes[c.kept].astype(np.int64)
        total = 0
        for i, code in enumerate(codes(c)):
            if c.node[i] == tops[i]:  # the root value: suppressed by generalisation
                per_value = np.zeros(0, dtype=np.int64)
            else:
                per_value = np.bincount(code, weights=kept_sizes).astype(np.int64)
            counted = int(per_value.sum())
            total += sum_squares(per_value) + n * (n - counted)
        return -Fraction(total) / (n * d) / _dm_factor(k)

    return {"dm": dm, "precision": precision, "aecs": aecs, "loss": loss, "nu_entropy": nu_entropy}[
        objective
    ]


def predecessors(node: Sequence[int], floor: Sequence[int]) -> list[tuple[int, ...]]:
    """The nodes one level finer in one QID (not below `floor`, the root the counts are at)."""
    out = []
    for i, (level, lo) in enumerate(zip(node, floor, strict=True)):
        if level > lo:
            out.append((*node[:i], level - 1, *node[i + 1 :]))
    return out
