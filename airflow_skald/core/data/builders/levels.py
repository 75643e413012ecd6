"""The one finishing step every hierarchy builder shares (docs/design.md §3a).

A builder computes, for each level-0 label of the data's domain, its label at each built
level; this turns those columns into an ordinary `Hierarchy`: a built level holding one label
for every value is not a level of its own (the top stands for it, and so does every level above
it), and the top `*` ends every row.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from airflow_skald.core.data.hierarchies import TOP_LABEL, Hierarchy


def hierarchy_from_levels(
    name: str, values: Sequence[str], levels: Sequence[Sequence[str]]
) -> Hierarchy:
    """`values` the distinct level-0 labels, `levels[j][i]` value i's label at level j+1.

    Functional by construction of every builder (each level a function of the one below);
    levels stop at the first that holds one label for every value.
    """
    kept: list[Sequence[str]] = []
    for labels in levels:
        if len(set(labels)) <= 1:
            break
        kept.append(labels)
    table = np.empty((len(values), len(kept) + 2), dtype=object)
    table[:, 0] = list(values)
    for j, labels in enumerate(kept):
        table[:, j + 1] = list(labels)
    table[:, -1] = TOP_LABEL
    return Hierarchy(name=name, table=table, dropped=len(levels) - len(kept), built=True)


def rule_error(qid: str, rule: str, what: str) -> str:
    """The one-line message of a bad rule: the QID, the rule, what is wrong."""
    return f"quasi-identifier '{qid}' rule {rule}: {what}"
