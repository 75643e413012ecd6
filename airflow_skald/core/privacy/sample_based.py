"""What the sample-based models (average risk, sample uniqueness, population uniqueness) share
(docs/design.md §4c, ARX's ``SampleBasedCriterion`` / ``RiskBasedCriterion.enforce``): they judge the
distribution of the classes left by the class-based models and, if it does not hold, suppress
the shortest prefix of those classes, ordered by size ascending, then by the objective's loss of
each class where ARX orders by it (Loss: `ClassTable.class_order`, ADR 0041), then by first
input row, that makes it hold. Each model says only whether it holds after suppressing each of some prefixes
(`holds`, vectorised); the shortest is found here: all candidates at once for cheap models,
in growing batches for the estimators. ARX's binary search assumes the answer monotone in the
prefix, which population uniqueness is not; every candidate is tried in order instead.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from airflow_skald.core.errors import ConfigError
from airflow_skald.core.privacy.model import ClassTable, PrivacyModel, decimal_of
from airflow_skald.core.privacy.risk.analysis import PopulationModel
from airflow_skald.core.settings.table import BY_NAME

# estimators: candidates tried after the empty prefix, then twice as many, at most MAX_BATCH
# (a batch costs as many Newton steps as its slowest try, up to 2 x 1000: a larger one
# overshoots the answer by more candidates, a smaller one takes more steps)
FIRST_BATCH, GROWTH, MAX_BATCH = 64, 2, 256
SPREAD = 4  # `any_prefix`: candidates tried before all the others
REMEMBERED = 4  # estimators' answers kept (`shortest_prefix`)
_ANSWERS: dict = {}
_ANSWERS_LOCK = threading.Lock()
_EMPTY = np.zeros(1, dtype=np.int64)  # the empty prefix, as `holds` takes it
CUT = -2  # shortest_prefix: none up to the search's cut, though a longer prefix might hold
# (classes left by the class-based models, their sizes in suppression order) -> longest prefix
Within = Callable[[np.ndarray, np.ndarray], int]


class SampleBasedModel(PrivacyModel):
    """A model over the distribution of the classes left (no class-based part: `keeps` keeps
    every class). `holds(sizes, prefixes)`: for the class sizes ascending, whether the model
    holds on `sizes[p:]` for each p of `prefixes` (for the empty prefix alone, `sizes` in any
    order: it reads their multiset only); `cheap`: every candidate is evaluated at once."""

    sample_based = True
    cheap = True

    def keeps(self, table: ClassTable) -> np.ndarray:
        return np.ones(table.n_classes, dtype=bool)

    def holds(self, sizes: np.ndarray, prefixes: np.ndarray) -> np.ndarray:
        raise NotImplementedError

    def holds_on(self, sizes: np.ndarray) -> bool:
        """Whether it holds on these classes as they are."""
        ordered = np.sort(np.asarray(sizes, dtype=np.int64))
        return bool(self.holds(ordered, np.zeros(1, dtype=np.int64))[0])

    def violation(self, table: ClassTable, where: str) -> str | None:
        if self.holds_on(table.sizes):
            return None
        return f"{where} violates {self.label()}: {self.figure(table)}"


def suffix_counts(sizes: np.ndarray, prefixes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Classes and records of `sizes[p:]` for each p (sizes ascending)."""
    cum = np.r_[0, np.cumsum(sizes, dtype=np.int64)]
    return sizes.size - prefixes, cum[-1] - cum[prefixes]


def ratio_at_most(num: np.ndarray, den: np.ndarray, limit: Fraction) -> np.ndarray:
    """num / den <= limit, exactly (den 0: an empty table holds)."""
    limit = Fraction(limit)
    a = np.asarray(num, dtype=object) * limit.denominator
    b = np.asarray(den, dtype=object) * limit.numerator
    return np.asarray((a <= b) | (np.asarray(den) == 0), dtype=bool)


def shortest_prefix(
    model: SampleBasedModel,
    sizes: np.ndarray,
    start: int,
    budget: int,
    most: int | None = None,
    any_prefix: bool = False,
) -> int:
    """The shortest prefix p >= start of `sizes` (ascending) whose suppression makes `model`
    hold, among those whose records fit `budget` (records of sizes[start:p]) and, if given,
    p <= `most`; -1 if none (CUT if none up to `most` but a longer prefix fits the budget).
    `any_prefix`: some such prefix, not necessarily the shortest (the same -1 / CUT): an
    estimator tries SPREAD candidates spread evenly up to the longest first (where it holds, it
    mostly holds on a long run of prefixes), then every other at once (a node that fails has
    every candidate tried either way; a batch costs as many steps as its slowest try, and one
    try in a few hundred runs ARX's 1000 iterations: few batches, the first one small).
    An estimator's answers are remembered for the last few questions (the chosen node is
    judged twice when its first rows are asked for: the same sizes, the same prefix)."""
    if model.cheap:
        return _shortest_prefix(model, sizes, start, budget, most, any_prefix)
    key = (model, sizes.tobytes(), start, budget, most, any_prefix)
    with _ANSWERS_LOCK:
        known = _ANSWERS.get(key)
    if known is not None:
        return known
    answer = _shortest_prefix(model, sizes, start, budget, most, any_prefix)
    with _ANSWERS_LOCK:  # (runs in threads of one process share it)
        while len(_ANSWERS) >= REMEMBERED:
            del _ANSWERS[next(iter(_ANSWERS))]
        _ANSWERS[key] = answer
    return answer


def _shortest_prefix(
    model: SampleBasedModel,
    sizes: np.ndarray,
    start: int,
    budget: int,
    most: int | None,
    any_prefix: bool,
) -> int:
    cum = np.r_[0, np.cumsum(sizes, dtype=np.int64)]
    last = int(np.searchsorted(cum, cum[start] + budget, side="right")) - 1  # cum[last] fits
    cut = most is not None and most < last
    if cut:
        last = most
    if last < start:
        return CUT if cut else -1
    if model.cheap:
        candidates = np.arange(start, last + 1)
        ok = np.flatnonzero(model.holds(sizes, candidates))
        return int(candidates[ok[0]]) if ok.size else (CUT if cut else -1)
    if any_prefix:
        every = np.arange(start, last + 1)
        spread = np.zeros(every.size, dtype=bool)  # SPREAD evenly spaced, the last among them
        spread[::-1][:: -(-every.size // SPREAD)] = True
        for candidates in (every[spread], every[~spread]):
            if not candidates.size:
                continue
            ok = np.flatnonzero(model.holds(sizes, candidates))
            if ok.size:
                return int(candidates[ok[0]])
        return CUT if cut else -1
    lo, batch = start, 1
    while lo <= last:
        candidates = np.arange(lo, min(last, lo + batch - 1) + 1)
        ok = np.flatnonzero(model.holds(sizes, candidates))
        if ok.size:
            return int(candidates[ok[0]])
        lo = int(candidates[-1]) + 1
        batch = FIRST_BATCH if batch == 1 else min(GROWTH * batch, MAX_BATCH)
    return CUT if cut else -1


def enforce(
    models: Sequence[SampleBasedModel],
    table: ClassTable,
    kept: np.ndarray,
    allowed: int,
    top: bool = False,
) -> np.ndarray:
    """The classes kept once each sample-based model, in order, has suppressed the shortest
    prefix (size ascending, then loss where the table has an order, then first input row) of
    the classes left that makes it hold; a
    later model never restores what an earlier one suppressed. Where no prefix within the
    suppression limit `allowed` makes a model hold, every class it sees is suppressed (the
    node fails). `top`: the node is the top node, whose class is left out of what they see."""
    return enforce_within(models, table, kept, allowed, top)[0]


def enforce_within(
    models: Sequence[SampleBasedModel],
    table: ClassTable,
    kept: np.ndarray,
    allowed: int,
    top: bool = False,
    within: Within | None = None,
    any_prefix: bool = False,
) -> tuple[np.ndarray, bool, int]:
    """`enforce`, with prefixes no longer than `within(kept, sizes)` (the classes left by the
    class-based models and the sizes they are suppressed in order: the search's longest prefix
    whose loss could still win, the loss never falling as the prefix grows). Also returns
    whether that cut decided a failure (a longer prefix might hold within `allowed`, but the
    node could not win with it), and the size of the classes whose run the prefix ends inside
    (0: none; else the first input rows decide which of them are suppressed; the prefix's
    length never depends on them). `any_prefix`: the last model may take any prefix that makes
    it hold (`shortest_prefix`), the verdict being the same."""
    if not models:
        return kept, False, 0
    kept = kept.copy()
    visible = np.flatnonzero(kept) if not top else np.zeros(0, dtype=np.int64)
    unordered = table.sizes[visible]
    budget = allowed - (table.n_records - int(table.sizes[kept].sum(dtype=np.int64)))
    if budget >= 0 and all(m.cheap and m.holds(unordered, _EMPTY)[0] for m in models):
        return kept, False, 0  # each holds as the classes are (no sort needed to see it)
    sizes = np.sort(unordered).astype(np.int64, copy=False)  # the models read sizes only
    most = within(kept, sizes) if within is not None and sizes.size else None
    cum = np.r_[0, np.cumsum(sizes, dtype=np.int64)]
    p, cut = 0, False
    for i, m in enumerate(models):
        some = any_prefix and not m.cheap and i == len(models) - 1
        q = (
            shortest_prefix(m, sizes, p, budget - int(cum[p]), most, some)
            if budget >= cum[p]
            else -1
        )
        if q < 0:
            p, cut = sizes.size, q == CUT
            break
        p = q
    tie = 0 < p < sizes.size and sizes[p - 1] == sizes[p]
    if tie and table.class_order is not None:  # the run the prefix ends in, by loss
        return kept, cut, _suppress_by_loss(table, kept, visible, unordered, p, int(sizes[p]))
    if p:  # which classes: size ascending, then first input row (else the classes' order)
        first = table.first_rows[visible] if table.first_rows is not None else visible
        kept[visible[np.lexsort((first, unordered))[:p]]] = False
    return kept, cut, int(sizes[p - 1]) if tie else 0


def _suppress_by_loss(
    table: ClassTable,
    kept: np.ndarray,
    visible: np.ndarray,
    sizes: np.ndarray,
    p: int,
    size: int,
) -> int:
    """Suppresses (in `kept`) the first `p` of the `visible` classes (their `sizes`) when the
    p-th ends inside the run of classes of `size`: every smaller class, then those of `size`
    by the objective's loss (`ClassTable.class_order`), then first input row (else the
    classes' order). Returns `size` where first rows decide (equal loss across the cut), else
    0."""
    smaller = sizes < size
    kept[visible[smaller]] = False
    run = np.flatnonzero(sizes == size)
    q = p - int(np.count_nonzero(smaller))  # of the run: at least 1, fewer than all
    rank = np.asarray(table.class_order(visible[run]), dtype=np.int64)
    first = table.first_rows[visible[run]] if table.first_rows is not None else run
    order = np.lexsort((first, rank))
    kept[visible[run[order[:q]]]] = False
    return size if rank[order[q - 1]] == rank[order[q]] else 0


def fraction_setting(raw: Any, key: str, setting: str, where: str) -> Fraction:
    """A threshold read through its settings-table row (the same check as its CLI flag)."""
    if key not in raw:
        raise ConfigError(f"{where} needs '{key}'")
    return BY_NAME[setting].parse(raw[key], f"{where}.{key}")


def fraction_of(entry: dict, key: str, low: Fraction = Fraction(0), high=Fraction(1)) -> bool:
    x = decimal_of(entry.get(key))
    return x is not None and low < x <= high


def population_of(raw: dict, where: str) -> PopulationModel:
    """`sampling_fraction: f` or `population: N` of a model's entry (one of them)."""
    if ("sampling_fraction" in raw) == ("population" in raw):
        raise ConfigError(f"{where} needs one of 'sampling_fraction' or 'population'")
    if "population" in raw:
        return PopulationModel(population=BY_NAME["risk_population"].parse(
            raw["population"], f"{where}.population"))  # fmt: skip
    fraction = BY_NAME["risk_sampling_fraction"].parse(
        raw["sampling_fraction"], f"{where}.sampling_fraction"
    )
    return PopulationModel(sampling_fraction=fraction)


def population_entry(entry: dict) -> str | None:
    """What is wrong with the population of a manifest entry (None: fine)."""
    if "population" in entry:
        p = entry["population"]
        ok = isinstance(p, int) and not isinstance(p, bool) and p >= 1
        return None if ok else ".population must be an integer >= 1"
    return (
        None if fraction_of(entry, "sampling_fraction") else ".sampling_fraction must be in (0, 1]"
    )


def population_rebuilt(entry: dict) -> PopulationModel:
    if "population" in entry:
        return PopulationModel(population=int(entry["population"]))
    return PopulationModel(sampling_fraction=Fraction(str(entry["sampling_fraction"])))
