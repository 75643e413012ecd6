"""Phase 3 inside the engine (docs/design.md §2b): the release as a mapping plus a filter,
written by the engine, and its class table from the engine's own GROUP BY of what it wrote.

Each QID becomes its bin's label at the chosen node: a label table (code -> label, made by
the worker with `Dimension.labels` for the codes present) joined on the QID's code; the
records of suppressed classes (their keys sent as a temporary table) get "*" in every QID,
or are left out (`suppressed_records: drop`); direct identifiers are not selected; every
other column is passed through as the engine read it. What the worker receives back is the
release's class table (labels and counts), which the shared release check judges."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa
from sqlglot import exp

from airflow_skald.core.config.run_config import SkaldConfig
from airflow_skald.core.count.histogram import strides_of
from airflow_skald.core.encode.dimensions import TOP
from airflow_skald.core.encode.plan import Plan
from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.engine.sql.coding import INPUT, Coding, present_codes
from airflow_skald.core.engine.sql.domain import SqlInput
from airflow_skald.core.engine.sql.session import SqlSession
from airflow_skald.core.generalise.part import bin_labels, released_columns
from airflow_skald.core.search.decision import Decision
from airflow_skald.core.transform.pseudonyms import Pseudonyms

if TYPE_CHECKING:
    from airflow_skald.core.engine.sql.recoding import RecodedRelease

SUPPRESSED = "sup"


# a QID computed by arithmetic gets labels for every bin of its level up to this many; past
# it, for the bins the engine finds records in (one more scan)


def _coded_rows(
    source: SqlInput, config: SkaldConfig, plan: Plan, node: tuple[int, ...], coding: Coding
) -> tuple[exp.Expression, dict[int, exp.Expression]]:
    """The input's rows with each QID's code at `node` computed once (a subquery aliased as
    the input: its other released columns under their names), and those codes as columns of
    it, by QID index (QIDs of one bin at the node have none)."""
    qids = {d.name for d in plan.dims}
    taken = set(plan.stats.columns)
    out = [D.column(n, INPUT).as_(n) for n in output_columns(config, plan) if n not in qids]
    codes, names = {}, {}
    for i, (q, level) in enumerate(zip(coding.qids, node, strict=True)):
        if plan.dims[i].cards[level] > 1:
            names[i] = _fresh(f"skald_code_{i}", taken)
            codes[i] = q.at(int(level))
    inner = coding.relation(source, *codes.values())
    inner = inner.select(*out, *[c.as_(names[i]) for i, c in codes.items()])
    return inner.subquery(INPUT), {i: D.column(n, INPUT) for i, n in names.items()}


def _rows(
    source: SqlInput,
    config: SkaldConfig,
    plan: Plan,
    node: tuple[int, ...],
    coding: Coding,
    coded: bool,
) -> tuple[exp.Select, exp.Expression, dict[int, exp.Expression]]:
    """The rows to release from (`coded`: the coded rows, `_coded_rows`; else the input with
    every join, as local recoding's step tables read codes at several nodes), the class key
    at `node` over them, and the codes by QID index (`coded` only)."""
    if not coded:
        return coding.relation(source), coding.key(plan, node), {}
    rows, codes = _coded_rows(source, config, plan, node, coding)
    strides = strides_of(plan.radices(node))
    class_key = D.total([D.times(D.paren(c), strides[i]) for i, c in codes.items()])
    return exp.select().from_(rows), class_key, codes


def output_columns(config: SkaldConfig, plan: Plan) -> list[str]:
    """The input's columns the release holds (`generalise.part.released_columns`), without
    a research subset's column (`research_subset.subset_rows` leaves it out)."""
    columns = released_columns(config, plan.stats.columns)
    subset = config.research_subset
    return [c for c in columns if subset is None or c != subset.column]


def _fresh(name: str, taken: set[str]) -> str:
    while name in taken:
        name = "_" + name
    return name


def released_select(
    session: SqlSession,
    source: SqlInput,
    config: SkaldConfig,
    plan: Plan,
    decision: Decision,
    coding: Coding,
    labels: list[str | None],
    suppressed: str | None,
    key: str | None = None,
    aggregated: dict[str, str] | None = None,
    recoded: RecodedRelease | None = None,
    marks: str | None = None,
) -> exp.Select:
    """The released rows of `source`: `labels[i]` is QID i's label table (None: one bin),
    `suppressed` the table of suppressed class keys (None: none suppressed), `key` the
    pseudonym key's table (`pseudonyms.send_key`; None: no pseudonyms), `aggregated` the
    microaggregated QIDs' tables of class labels (`microaggregation.send_aggregates`),
    `recoded` local recoding's step tables (`recoding.send_recoded`; then `labels` and
    `suppressed` are not read), `marks` the research subset's (`subset.subset_table`: only
    its records are released)."""
    from airflow_skald.core.engine.sql.microaggregation import aggregate_label
    from airflow_skald.core.engine.sql.pseudonyms import KEY, pseudonym
    from airflow_skald.core.engine.sql.subset import released_rows

    source = released_rows(session, source, config, marks)

    node = tuple(int(x) for x in decision.node)
    select, class_key, codes = _rows(source, config, plan, node, coding, recoded is None)
    if key is not None:
        select = select.join(exp.alias_(D.table(key), KEY), join_type="cross")
    masked: exp.Expression | None = None
    if recoded is not None:  # each row at its step's node, "*" from the step tables
        select = recoded.join(select, coding, plan, config.suppression.drop)
    elif suppressed is not None:
        select, masked = _suppress(select, class_key, suppressed, config.suppression.drop)
    index = {d.name: i for i, d in enumerate(plan.dims)}
    pseudonyms = config.transformation(Pseudonyms)
    pseudonymised = pseudonyms.names if pseudonyms else ()
    out = []
    for name in output_columns(config, plan):
        if name in pseudonymised and key is not None:
            out.append(pseudonym(name, source.type_of(name), session.dialect).as_(name))
            continue
        if name in (aggregated or {}):  # its class's aggregate (docs/design.md §4f)
            select, label = aggregate_label(select, class_key, aggregated[name], f"g{len(out)}")
        elif name not in index:
            out.append(D.column(name, INPUT).as_(name))
            continue
        elif recoded is not None:  # local recoding (docs/design.md §4f)
            select, label = recoded.label(select, coding, plan, index[name])
        else:
            select, label = _label(select, plan, node, codes, labels, index[name])
        if masked is not None:
            label = exp.Case(ifs=[exp.If(this=masked, true=D.text(TOP))], default=label)
        out.append(label.as_(name))
    return select.select(*out)


def _suppress(
    select: exp.Select, class_key: exp.Expression, suppressed: str, drop: bool
) -> tuple[exp.Select, exp.Expression | None]:
    """`select` joined to the table of suppressed class keys, and the condition of a
    suppressed record ("*" in every QID); with `drop` its records are left out instead (no
    condition)."""
    on = exp.EQ(this=class_key, expression=D.column("k", SUPPRESSED))
    select = select.join(exp.alias_(D.table(suppressed), SUPPRESSED), on=on, join_type="left")
    if drop:
        return select.where(exp.Is(this=D.column("k", SUPPRESSED), expression=exp.Null())), None
    return select, exp.Not(this=exp.Is(this=D.column("k", SUPPRESSED), expression=exp.Null()))


def _label(
    select: exp.Select,
    plan: Plan,
    node: tuple[int, ...],
    codes: dict[int, exp.Expression],
    labels: list[str | None],
    i: int,
) -> tuple[exp.Select, exp.Expression]:
    """QID i's label at the chosen node `node` (its label table joined to `select` on its
    code, a column of the coded rows: `codes`)."""
    dim, level = plan.dims[i], node[i]
    if labels[i] is None:
        label: exp.Expression = D.text(bin_labels(dim, level, np.zeros(1, np.int64))[0])
    else:
        alias = f"l{i}"
        on = exp.EQ(this=codes[i], expression=D.column("c", alias))
        select = select.join(exp.alias_(D.table(labels[i]), alias), on=on, join_type="inner")
        label = D.column("label", alias)
    return select, label


def send_tables(
    session: SqlSession, source: SqlInput, plan: Plan, decision: Decision, coding: Coding
) -> tuple[list[str | None], str | None]:
    """The label tables of the QIDs at the chosen node and the suppressed keys' table."""
    labels: list[str | None] = []
    for i, (dim, level) in enumerate(zip(plan.dims, decision.node, strict=True)):
        if dim.cards[level] == 1:
            labels.append(None)
            continue
        codes = present_codes(session, source, coding, i, int(level))
        texts = bin_labels(dim, int(level), codes)
        labels.append(session.send("labels", pa.table({"c": codes, "label": texts})))
    suppressed = None
    if decision.suppressed_keys.size:
        keys = np.asarray(decision.suppressed_keys, dtype=np.int64)
        suppressed = session.send("suppressed", pa.table({"k": keys}))
    return labels, suppressed


def copy_to_parquet(select: exp.Select, path: str) -> exp.Expression:
    """COPY (select) TO path (FORMAT PARQUET): DuckDB writes the part itself."""
    params = [exp.CopyParameter(this=exp.Var(this="FORMAT"), expression=exp.Var(this="PARQUET"))]
    return exp.Copy(this=exp.Subquery(this=select), kind=False, files=[D.text(path)], params=params)


def class_columns(config: SkaldConfig) -> tuple[list[str], list[str]]:
    """The columns the release's classes are counted over, as `run.pipeline.count_written`
    counts them: the QIDs, then the criteria's attributes and the microaggregated QIDs out of
    the lattice (checked to hold one value per class)."""
    extra = [q.name for q in config.microaggregated]
    return config.qid_names, [*config.criteria_attributes, *extra]


def grouped_release(relation: exp.Expression, names: list[str]) -> exp.Select:
    """SELECT the tuple columns, COUNT(*) AS n FROM the written release GROUP BY them."""
    columns = [D.column(n) for n in names]
    return exp.select(*columns, D.count_star().as_("n")).from_(relation).group_by(*columns)
