"""One node judged and scored for the lattice search (`lattice.search.Evaluate`).

Each evaluated node's classes come from rolling the global root histogram up (no data is
re-read); the privacy policy says which classes a node keeps and whether it passes, the
objective metric scores it and bounds the nodes above it. A node near a large sparse root,
whose roll-up is slow, is first checked against the most classes a passing node can have
(`most_classes`): a cheap lower bound of its class count (`ClassSource.fewest_classes`) above
that fails it without a roll-up (and without a loss bound, so the order of later evaluations,
never the answer, can differ).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

import numpy as np

from airflow_skald.core.lattice import Lattice
from airflow_skald.core.privacy import ClassTable, PrivacyPolicy, max_suppressed
from airflow_skald.core.quality.metric import Metric, Scored
from airflow_skald.core.search.class_source import ClassSource

#: each class's entropy-based loss, from the classes' keys at a node (`entropy_loss.class_loss`)
LabelLoss = Callable[[np.ndarray, tuple[int, ...]], np.ndarray]
#: what `NodeEvaluator` returns: (monotone part passes, all pass, loss, bound above)
Evaluation = tuple[bool, bool, Any, int | float | None]


@dataclass(frozen=True)
class NodeEvaluator:
    """`evaluator(i, best_loss)`: node i of `lattice` judged by `policy`, scored by `objective`.

    `most`: the most classes a passing node can have (`most_classes`); `keyed`: the suppressed
    classes' labels are needed (Loss, whenever a node may suppress). Under sample-based models
    a prefix of suppressed classes whose loss could not beat `best_loss` is not tried."""

    lattice: Lattice
    tops: tuple[int, ...]
    source: ClassSource
    policy: PrivacyPolicy
    objective: Metric
    most: int | None
    keyed: bool
    # each class's entropy-based loss from its keys at a node, where a model or the objective
    # reads it (`ClassTable.label_loss`, ADR 0046; None: nothing does)
    losses: LabelLoss | None = None

    @classmethod
    def of(
        cls,
        lattice: Lattice,
        source: ClassSource,
        policy: PrivacyPolicy,
        objective: Metric,
        n_records: int,
        losses: LabelLoss | None = None,
    ) -> NodeEvaluator:
        keyed = (objective.needs_keys and policy.suppression_limit > 0) or losses is not None
        most = most_classes(policy, n_records)
        return cls(lattice, lattice.upper, source, policy, objective, most, keyed, losses)

    def __call__(self, i: int, best_loss: object = None) -> Evaluation:
        node, most, objective = self.lattice.node(i), self.most, self.objective
        if most is not None:
            fewest = self.source.fewest_classes(node, most)
            if fewest is not None and fewest > most:
                return False, False, None, None  # too many classes to pass: no roll-up
        keys, table = self.source.keyed(node) if self.keyed else (None, self.source.table(node))
        table = class_order(table, keys, node, objective, self.policy)
        table = with_label_loss(table, keys, node, self.losses)
        if most is not None and table.n_classes > most:  # too many classes to pass, here and
            return False, False, None, objective.lower_bound(table)  # at every node below
        within = None
        if best_loss is not None and self.policy.sample_based:  # prefixes that cannot win
            within = partial(_longest_prefix, objective, table, best_loss)
        j = self.policy.judge(
            table,
            top=node == self.tops,
            within=within,
            verdict_only=True,
            any_prefix=objective.suppression_blind,
        )
        loss = objective.value(Scored(table, j, node, self.tops, keys)) if j.passes else None
        return j.monotone_passes, j.passes, loss, objective.lower_bound(table)


def _longest_prefix(
    objective: Metric, table: ClassTable, best: object, kept: np.ndarray, ordered: np.ndarray
) -> int:
    """The most classes of `ordered` the sample-based models may try suppressing."""
    longest = objective.longest_prefix(table, kept, ordered, best)
    return ordered.size if longest is None else longest


def most_classes(policy: PrivacyPolicy, n: int) -> int | None:
    """The most classes a passing node can have: its kept classes have at least s records each
    (s: the largest `smallest_kept` of the class-based models: k, or the fewest records that
    can be t-close; at most n // s of them) and every other class suppresses at least one
    record, so a node of more than n // s + floor(limit * n) classes fails, and so does every
    node below it (more classes still) (None: s < 2)."""
    smallest = max((m.smallest_kept for m in policy.models if not m.sample_based), default=1)
    if smallest < 2:
        return None
    return n // smallest + max_suppressed(policy.suppression_limit, n)


def class_order(
    table: ClassTable,
    keys: np.ndarray | None,
    node: tuple[int, ...],
    objective: Metric,
    policy: PrivacyPolicy,
) -> ClassTable:
    """The table with the objective's order of classes of one size, where the sample-based
    models suppress by it (docs/design.md §4c: Loss) and the classes' keys are known."""
    if keys is None or not objective.orders_classes or not policy.sample_based:
        return table
    return replace(table, class_order=partial(_class_ranks, objective, keys, table.sizes, node))


def _class_ranks(
    objective: Metric,
    keys: np.ndarray,
    sizes: np.ndarray,
    node: tuple[int, ...],
    index: np.ndarray,
) -> np.ndarray:
    """The objective's ranks of the classes `index` (all of one size) of `node`."""
    return objective.class_order(keys[index], int(sizes[index[0]]), node)


def with_label_loss(
    table: ClassTable, keys: np.ndarray | None, node: tuple[int, ...], losses: LabelLoss | None
) -> ClassTable:
    """The table with each class's entropy-based loss, where something reads it."""
    if losses is None or keys is None:
        return table
    return replace(table, label_loss=losses(keys, node))
