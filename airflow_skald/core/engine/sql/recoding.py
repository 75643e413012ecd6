"""Local recoding's release inside the engine (docs/design.md §4f and §2b, ADR 0063): each
row written at the node of the step that released it, as the chunk path's
`transform.local_recoding.steps.released_codes` places it.

The steps themselves need nothing more from the engine: a step's records are the root bins
the previous node suppressed, so the worker searches each step over a part of the root
histogram that already crossed (`search.recoded`), as the chunk path does. What crosses back
to the engine are the steps, as temporary tables:

- per node (the global node first, then each step's) the keys of the classes it left
  suppressed, joined to every row on the row's class key at that node (LEFT JOIN);
- per QID one label table over the joint code space of the levels the nodes use
  (`joint_offsets`: level L's code c is ``offset[L] + c``; the last offset is a masked
  row's code, labelled "*").

A row is released by the first node whose suppressed keys do not hold its class there: a
CASE over the nodes in order gives each QID's joint code (a step at the top node, or no
node at all: the masked code), joined to the QID's label table. Under
``suppressed_records: drop`` the masked rows are filtered out instead.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from sqlglot import exp

from airflow_skald.core.encode.dimensions import TOP
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.engine.sql.coding import Coding, present_codes
from airflow_skald.core.engine.sql.domain import SqlInput
from airflow_skald.core.engine.sql.session import SqlSession
from airflow_skald.core.generalise.part import bin_labels
from airflow_skald.core.search.decision import Decision
from airflow_skald.core.transform.local_recoding.steps import joint_offsets


@dataclass(frozen=True)
class RecodedRelease:
    """The step tables sent to the engine: per node (the global one, then each step's) its
    levels, the table of the class keys it left suppressed (None: it released every row that
    reached it) and whether it is the top node (its rows are written all-"*"); per QID the
    label table over the joint code space of its levels."""

    nodes: tuple[tuple[int, ...], ...]
    suppressed: tuple[str | None, ...]
    at_top: tuple[bool, ...]
    labels: tuple[str, ...]

    def join(self, select: exp.Select, coding: Coding, plan: Plan, drop: bool) -> exp.Select:
        """`select` with each node's suppressed keys LEFT JOINed on the row's class key there
        (`drop`: the rows no node releases, or released at the top node, left out)."""
        for j, (node, table) in enumerate(zip(self.nodes, self.suppressed, strict=True)):
            if table is None:
                break
            on = exp.EQ(this=coding.key(plan, node), expression=D.column("k", _alias(j)))
            select = select.join(exp.alias_(D.table(table), _alias(j)), on=on, join_type="left")
        if drop:
            select = select.where(self._released())
        return select

    def label(
        self, select: exp.Select, coding: Coding, plan: Plan, index: int
    ) -> tuple[exp.Select, exp.Expression]:
        """`select` joined to QID `index`'s label table on the row's joint code, and the
        label it gives the row (after `join`)."""
        offsets = joint_offsets(plan.dims[index])
        qid = coding.qids[index]
        masked = D.number(int(offsets[-1]))
        ifs, default = [], masked
        for j, (node, table) in enumerate(zip(self.nodes, self.suppressed, strict=True)):
            level = int(node[index])
            code = masked
            if not self.at_top[j]:
                code = D.paren(exp.Add(this=qid.at(level), expression=D.number(offsets[level])))
            if table is None:  # every row that reaches this node is released here
                default = code
                break
            ifs.append(exp.If(this=_released_at(j), true=code))
        joint = exp.Case(ifs=ifs, default=default)
        alias = f"j{index}"
        on = exp.EQ(this=joint, expression=D.column("c", alias))
        table = exp.alias_(D.table(self.labels[index]), alias)
        return select.join(table, on=on, join_type="inner"), D.column("label", alias)

    def _released(self) -> exp.Expression:
        """Whether a row is released at a node other than the top (not masked)."""
        ifs, default = [], exp.false()
        for j, table in enumerate(self.suppressed):
            outcome = exp.false() if self.at_top[j] else exp.true()
            if table is None:
                default = outcome
                break
            ifs.append(exp.If(this=_released_at(j), true=outcome))
        return exp.Case(ifs=ifs, default=default)


def _alias(j: int) -> str:
    return f"sup{j}"


def _released_at(j: int) -> exp.Expression:
    """No suppressed class of node `j` holds the row (its LEFT JOIN found nothing)."""
    return exp.Is(this=D.column("k", _alias(j)), expression=exp.Null())


def send_recoded(
    session: SqlSession, source: SqlInput, plan: Plan, decision: Decision, coding: Coding
) -> RecodedRelease:
    """The step tables of `decision`'s local recoding sent to the engine."""
    nodes = [tuple(decision.node)] + [tuple(s.node) for s in decision.steps]
    keys = [decision.suppressed_keys] + [s.suppressed_keys for s in decision.steps]
    at_top = [nodes[0] == tuple(plan.tops)] + [bool(s.at_top) for s in decision.steps]
    suppressed = [
        session.send("step", pa.table({"k": np.asarray(k, dtype=np.int64)})) if k.size else None
        for k in keys
    ]
    labels = []
    for i, dim in enumerate(plan.dims):
        offsets = joint_offsets(dim)
        levels = sorted({int(n[i]) for n, top in zip(nodes, at_top, strict=True) if not top})
        codes, texts = [np.asarray([offsets[-1]], dtype=np.int64)], [TOP]
        for level in levels:
            present = present_codes(session, source, coding, i, level)
            codes.append(present + offsets[level])
            texts.extend(bin_labels(dim, level, present))
        table = pa.table({"c": np.concatenate(codes), "label": pa.array(texts, pa.string())})
        labels.append(session.send("joint_labels", table))
    return RecodedRelease(tuple(nodes), tuple(suppressed), tuple(at_top), tuple(labels))
