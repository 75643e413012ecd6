"""Local recoding (docs/design.md §4f, ARX's ``ARXResult.optimizeIterativeFast``): the records the
global optimum suppresses are anonymised again, on their own, at a node of their own, step by
step.

A step's records are the root bins whose class at the previous node was suppressed, so every
step is the phase-2 search run again over a subset of the root histogram (no pass over the
data): its privacy models are bound to the step's records (ARX's
``getInstanceForLocalRecoding`` clones them onto the subset: t-closeness, b-likeness and
d-disclosure compare with the step's own distribution; estimated k-map keeps the run's k'),
its suppression limit is ``1 - records * N / R`` clamped to [0, 1] (R: the step's records,
N: all input records), so it releases at least ``records * N`` of them, and ``gs_factor``,
when set, replaces the objective's. Steps repeat until a step releases nothing, nothing is
suppressed, fewer than k records remain, or ``max_steps`` searches were made. Records a step
releases at the top node are all-``*`` rows: counted as suppressed, and nothing is left.

The adaptive mode (ARX's ``optimizeIterative``, docs/adr/0048) searches each step under the
run's suppression limit with a gs factor of its own: after a search that released nothing
(all its records suppressed) the gs factor is raised by the adaption factor and the same
records are searched again, while it stays <= 1.

Phase 3 maps each record to the step that released it (`StepChain`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

import numpy as np

from airflow_skald.core.count.histogram import Histogram, keys_of, strides_of
from airflow_skald.core.count.root_counts import RootCounts
from airflow_skald.core.errors import DataError
from airflow_skald.core.privacy import PrivacyPolicy
from airflow_skald.core.text import decimal_text
from airflow_skald.core.transform.encoded import EncodedDimension, EncodedPlan
from airflow_skald.core.transform.local_recoding import LocalRecoding
from airflow_skald.core.transform.local_recoding.keys import (
    KeysAt,
    in_sorted,
    kept_classes,
    still_suppressed,
)

__all__ = ["Step", "recode"]


@dataclass
class Step:
    """One step: its node, the records it searched and released, its score, and the keys (at
    its node) of the classes it left suppressed (the next step's records)."""

    node: tuple[int, ...]
    levels: dict[str, int]
    radices: tuple[int, ...]
    n_records: int  # R: the records still suppressed when the step began
    released: int  # records of the classes it kept (at the top node: all-'*' rows)
    max_suppressed: int
    score: int | float | None
    objective: str
    at_top: bool
    suppressed_keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    kept_keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    kept_sizes: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    # per criteria attribute, the step's records per value code (its models' distribution)
    distributions: dict[str, list[int]] = field(default_factory=dict)
    gs_factor: Fraction | None = None  # adaptive: the gs factor the step was searched with

    def to_dict(self) -> dict:
        """The step as the manifest lists it (no data values)."""
        return {
            "node": self.levels,
            "node_levels": list(self.node),
            "records": self.n_records,
            "released": self.released,
            "max_suppressed": self.max_suppressed,
            "objective": self.objective,
            "score": self.score,
            "at_top": self.at_top,
            "n_equivalence_classes": int(self.kept_sizes.size),
            **({"gs_factor": decimal_text(self.gs_factor)} if self.gs_factor is not None else {}),
        }

    def to_state(self) -> dict:
        """The step with its keys, for phase 3 (persisted with the decision)."""
        return {
            **self.to_dict(),
            "radices": list(self.radices),
            "suppressed_keys": self.suppressed_keys.tolist(),
            "kept_keys": self.kept_keys.tolist(),
            "kept_sizes": self.kept_sizes.tolist(),
            "distributions": self.distributions,
        }

    @classmethod
    def from_state(cls, d: dict) -> Step:
        return cls(
            node=tuple(d["node_levels"]),
            levels=d["node"],
            radices=tuple(d["radices"]),
            n_records=d["records"],
            released=d["released"],
            max_suppressed=d["max_suppressed"],
            score=d["score"],
            objective=d["objective"],
            at_top=d["at_top"],
            suppressed_keys=np.asarray(d["suppressed_keys"], dtype=np.int64),
            kept_keys=np.asarray(d["kept_keys"], dtype=np.int64),
            kept_sizes=np.asarray(d["kept_sizes"], dtype=np.int64),
            distributions=d.get("distributions", {}),
            gs_factor=Fraction(d["gs_factor"]) if d.get("gs_factor") is not None else None,
        )


def subset_counts(counts: RootCounts, bins: np.ndarray) -> RootCounts:
    """The root counts of the root bins where `bins` holds (a bool per class bin), with
    their (class, value) tables."""
    classes = counts.classes
    keys = classes.keys[bins]
    sub = Histogram(classes.radices, keys, classes.counts[bins])
    values = {}
    for a, hist in counts.values.items():
        m = int(hist.radices[-1])
        keep = in_sorted(hist.keys // m, keys)
        values[a] = Histogram(hist.radices, hist.keys[keep], hist.counts[keep])
    return RootCounts(sub, values, counts.node)


def value_counts(hist: Histogram) -> np.ndarray:
    """A (class, value) table's records per value code."""
    m = int(hist.radices[-1])
    return np.bincount(hist.keys % m, weights=hist.counts, minlength=m).astype(np.int64)


def step_sensitive(sensitive: dict, distributions: dict) -> dict:
    """Phase 1's statistics of each criteria attribute with a step's records' distribution
    (`distributions`: counts per value code; ARX clones the models onto the step's records)."""
    out = dict(sensitive)
    for a, counts in distributions.items():
        out[a] = replace(sensitive[a], counts=[int(c) for c in counts])
    return out


# (plan, the step's counts, its policy, its gs factor or None) -> the step's `Decision`
# (DataError: no node passes)
SearchStep = Callable[[EncodedPlan, RootCounts, PrivacyPolicy, Fraction | None], Any]
# (the step's counts, its suppression limit) -> the models bound to the step's records
PolicyOf = Callable[[RootCounts, Fraction], PrivacyPolicy]


def recode(
    settings: LocalRecoding,
    plan: EncodedPlan,
    counts: RootCounts,
    decision: Any,
    policy: PrivacyPolicy,
    policy_of: PolicyOf,
    search: SearchStep,
    gs_factor: Fraction,
    at: KeysAt | None = None,
) -> list[Step]:
    """The steps after the global `decision` (a `Decision` made under `policy`): each one
    phase 2's search over the root bins the previous node suppressed. Stops when a search
    releases nothing (adaptive: unless the gs factor can still be raised), nothing is left
    suppressed, fewer than k records are left, at the top node, or after `max_steps`
    searches. `gs_factor`: the objective's (the steps' unless the settings give one); `at`:
    the root bins' keys at a node (shared with the release's figures)."""
    n = counts.n_records
    root_keys, sizes = counts.classes.keys, counts.classes.counts
    tops = tuple(plan.tops)
    steps: list[Step] = []
    node, suppressed = tuple(decision.node), decision.suppressed_keys
    if not suppressed.size or node == tops:
        return steps
    at = KeysAt(plan, root_keys) if at is None else at
    left = at.kept(counts, node, suppressed)[0]
    gs = GsSchedule(settings, gs_factor)
    searches, sub = 0, None
    while settings.max_steps is None or searches < settings.max_steps:
        remaining = int(sizes[left].sum(dtype=np.int64))
        if remaining == 0 or remaining < policy.min_class_size:
            break
        # the same records again (gs raised): their counts and node table kept (ADR 0066)
        sub = subset_counts(counts, left) if sub is None else sub
        limit = settings.step_limit(n, remaining, policy.suppression_limit)
        searches += 1
        try:
            d = search(plan, sub, policy_of(sub, limit), gs.value)
        except DataError:  # no node passes over these records (whatever the gs factor)
            break
        released = remaining - d.figures.n_suppressed
        if released <= 0:
            if gs.raise_():  # adaptive: the same records again, generalisation cheaper
                continue
            break
        steps.append(step_of(plan, sub, d, remaining, released, gs.shown))
        if not d.suppressed_keys.size or tuple(d.node) == tops:
            break
        left, sub = still_suppressed(plan, root_keys, left, d.node, d.suppressed_keys), None
    return steps


class GsSchedule:
    """The steps' gs factor. Fast: the settings' (None: the objective's), fixed. Adaptive (ARX's
    ``optimizeIterative``): starts at the settings' (else the objective's) and is raised by the
    adaption factor after a search that released nothing, while it stays <= 1; that test is
    made in doubles, as ARX adds them (``gsFactor += adaptionFactor``), the objective gets the
    exact decimal sum."""

    def __init__(self, settings: LocalRecoding, objective_gs: Fraction) -> None:
        self.adaptive = settings.adaptive
        start = objective_gs if settings.gs_factor is None else settings.gs_factor
        self.value: Fraction | None = start if self.adaptive else settings.gs_factor
        self.adaption = settings.adaption if self.adaptive else Fraction(0)
        self._double = float(start)

    @property
    def shown(self) -> Fraction | None:
        """The gs factor a step lists (adaptive only: it changes from step to step)."""
        return self.value if self.adaptive else None

    def raise_(self) -> bool:
        """Raise the gs factor after a search that released nothing; False: stop there."""
        if not self.adaptive or self.adaption == 0:
            return False
        self._double += float(self.adaption)
        assert self.value is not None
        self.value += self.adaption
        return self._double <= 1.0


def step_of(
    plan: EncodedPlan, sub: RootCounts, d: Any, remaining: int, released: int, gs: Fraction | None
) -> Step:
    """The step a search made over `remaining` records (`d`: its `Decision`)."""
    node = tuple(d.node)
    keys, kept = kept_classes(plan, sub, node, d.suppressed_keys)
    return Step(
        node=node,
        levels=d.levels,
        radices=tuple(d.radices),
        n_records=remaining,
        released=released,
        max_suppressed=d.figures.max_suppressed,
        score=d.quality.scores.get(d.quality.objective),
        objective=d.quality.objective,
        at_top=node == tuple(plan.tops),
        suppressed_keys=d.suppressed_keys,
        kept_keys=keys,
        kept_sizes=kept,
        distributions={a: value_counts(h).tolist() for a, h in sub.values.items()},
        gs_factor=gs,
    )


# ---------------------------------------------------------------------- the release's classes
def release_sizes(dims: Sequence[EncodedDimension], parts: Sequence[tuple]) -> np.ndarray:
    """The sizes of the released classes as the written release groups them (by their QIDs'
    output strings): `parts` are (node, radices, kept keys, kept sizes) per step. Classes of
    different steps whose strings coincide are one class; within one node keys are distinct."""
    parts = [p for p in parts if p[2].size]
    if len(parts) == 1:
        return parts[0][3]
    if not parts:
        return np.zeros(0, dtype=np.int64)
    ids: list[list[np.ndarray]] = [[] for _ in parts]
    widths = []
    for i, d in enumerate(dims):
        names: dict[str, int] = {}
        for p, (node, radices, keys, _) in enumerate(parts):
            codes = (keys // strides_of(radices)[i]) % radices[i]
            uniq, inv = np.unique(codes, return_inverse=True)
            labels = d.labels(int(node[i]), uniq)
            lut = np.asarray([names.setdefault(s, len(names)) for s in labels], dtype=np.int64)
            ids[p].append(lut[inv.reshape(-1)])
        widths.append(len(names))
    rows = np.concatenate([np.stack(per, axis=1) for per in ids])
    sizes = np.concatenate([p[3] for p in parts])
    if sum(int(w).bit_length() for w in widths) <= 62:
        flat = keys_of(list(rows.T), widths)
        _, inv = np.unique(flat, return_inverse=True)
    else:
        _, inv = np.unique(rows, axis=0, return_inverse=True)
    return np.bincount(inv.reshape(-1), weights=sizes).astype(np.int64)


# ---------------------------------------------------------------------- phase 3
def released_codes(
    dims: Sequence[EncodedDimension],
    chain: Sequence[tuple],
    codes_of: Callable[[EncodedDimension, int, np.ndarray], np.ndarray],
    first_node: Sequence[int],
    first_codes: list[np.ndarray],
    first_mask: np.ndarray,
) -> tuple[np.ndarray, list[np.ndarray]]:
    """Each row at the node of the step that released it. `chain`: (node, radices, suppressed
    keys, at top) per step after the global node; `codes_of(dim, level, rows)`: the rows'
    codes at a level; `first_codes`/`first_mask`: the global node's codes and suppressed rows.

    Returns the rows left suppressed (or released at the top node: all '*') and, per QID,
    each row's code in the joint code space of every level (`joint_offsets`)."""
    out = [
        c.astype(np.int64) + joint_offsets(d)[int(level)]
        for d, level, c in zip(dims, first_node, first_codes, strict=True)
    ]
    rows = np.flatnonzero(first_mask)
    masked = first_mask.copy()
    for node, radices, suppressed, at_top in chain:
        if not rows.size:
            break
        codes = [codes_of(d, int(level), rows) for d, level in zip(dims, node, strict=True)]
        keys = keys_of(codes, radices)
        still = in_sorted(keys, suppressed)
        done = rows[~still]
        if not at_top:
            masked[done] = False
            for i, (d, level) in enumerate(zip(dims, node, strict=True)):
                out[i][done] = codes[i][~still] + joint_offsets(d)[int(level)]
        rows = rows[still]
    return masked, out


def joint_offsets(dim: EncodedDimension) -> np.ndarray:
    """Where each level's codes start in one code space over every level of `dim`; the last
    entry (every level's codes counted) is the code of a masked row."""
    return np.r_[0, np.cumsum(dim.cards)].astype(np.int64)
