"""The research subset inside the SQL engines (docs/design.md §4e and §2b, ADR 0068): what the
chunk path counts for δ-presence, exact k-map (ARX's `DPresence`, `KMap(k, subset)`) and the
criteria over a subset (ADR 0045), counted by the engine.

- A subset given by a dataset of keys (`research_subset: {path, key}`) becomes the derived
  flag column (`subset_keys.FLAG`) of a temporary view over the input: the worker reads the
  subset's distinct keys as the chunk path does (`data.io.subset_keys`) and sends them as a
  temporary table, LEFT JOINed; a record is flagged iff its key columns' text, joined as
  `subset_keys.joined` joins them, is among them (a null key matches none). Key columns of
  another type than integer or text are refused (their text could differ from pyarrow's).
- Phase 1: the criteria's attributes keep every population value, counted over the subset's
  records only (`encode.domain._subset_counted`): one GROUPING SETS scan of (value, flag).
- Phase 2: the flag's (class, value) table first (every record: the class table is the
  population's), the criteria's codes null outside the subset (`subset_codes`), so their
  tables count the subset's records (`transform.research_subset.classes.released_values`).
- Phase 3: the rows released are the subset's (a view filtering the input by the flag's
  values that mark it, or by the keys), without the flag column."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from airflow_skald.core.config.skald_config import SkaldConfig
from airflow_skald.core.data.subset_keys import _SEP, FLAG
from airflow_skald.core.encode.sensitive_domain import SensitiveStats
from airflow_skald.core.engine.sql import dialect as D
from airflow_skald.core.engine.sql.coding import Coding
from airflow_skald.core.engine.sql.domain import SqlInput, sensitive_stats
from airflow_skald.core.engine.sql.session import SqlSession
from airflow_skald.core.errors import DataError
from airflow_skald.core.transform.research_subset.classes import (
    in_subset_codes,
    judged_attributes,
)


def _key_text(source: SqlInput, key: tuple[str, ...], alias: str) -> exp.Expression:
    """The key columns' text joined by the unit separator (null if any is null)."""
    parts = []
    for name in key:
        if name not in source.schema.names:
            raise DataError(f"research_subset key column '{name}' is missing from the input")
        typ = source.type_of(name)
        if not (pa.types.is_integer(typ) or pa.types.is_string(typ)):
            raise DataError(
                f"research_subset key column '{name}' is {typ} in {source.where}: the engines "
                "compare integer or text keys (use execution: chunks)"
            )
        parts.append(exp.cast(D.column(name, alias), exp.DataType.build("TEXT")))
    text = parts[0]
    for part in parts[1:]:
        text = exp.DPipe(this=exp.DPipe(this=text, expression=D.text(_SEP)), expression=part)
    return text


def flagged(session: SqlSession, source: SqlInput, config: SkaldConfig) -> SqlInput:
    """`source` with the keyed subset's derived flag column (a temporary view: the input LEFT
    JOIN the subset's distinct keys, a join every engine plans, where an IN subquery in the
    select list is refused by Spark); `source` itself when the subset is a column of the
    input, or there is none."""
    from airflow_skald.core.data.io import subset_keys

    keyed = config.keyed_subset
    if keyed is None or FLAG in source.schema.names:
        return source
    keys = session.send("subset_keys", pa.table({"k": subset_keys(keyed)}))  # distinct keys
    on = exp.EQ(this=_key_text(source, keyed.key, "i"), expression=D.column("k", "sk"))
    flag = exp.Not(this=exp.Is(this=D.column("k", "sk"), expression=exp.Null()))
    every = exp.Column(this=exp.Star(), table=D.name("i"))
    select = exp.select(every, flag.as_(FLAG)).from_(exp.alias_(D.table(source.relation), "i"))
    select = select.join(exp.alias_(D.table(keys), "sk"), on=on, join_type="left")
    view = session.view(select, "flagged")
    schema = source.schema.append(pa.field(FLAG, pa.bool_()))
    return SqlInput(view, schema, source.where, dict(source.distinct))


def _flag_mask(config: SkaldConfig, stats: dict[str, SensitiveStats], raw: pa.Array) -> np.ndarray:
    """Per raw value of the flag column (as the engine returned it): does it mark the subset."""
    column = config.research_subset.column
    flags = stats[column]
    return in_subset_codes(column, flags.values)[flags.codes(raw)]


def subset_counted(
    session: SqlSession,
    source: SqlInput,
    config: SkaldConfig,
    stats: dict[str, SensitiveStats],
    numbers: set[str],
) -> dict[str, SensitiveStats]:
    """The criteria's attributes over the population's values (`stats`) with the subset's
    record counts (ADR 0045), from one scan grouped by (value, flag) per attribute."""
    column = config.research_subset.column
    names = list(judged_attributes(config))
    if not names:
        return {}
    flag, xs = D.column(column), [D.column(a) for a in names]
    values = [x.as_(f"v{i}") for i, x in enumerate(xs)]
    grouped = [exp.Grouping(expressions=[x]).as_(f"g{i}") for i, x in enumerate(xs)]
    sets = exp.GroupingSets(expressions=[exp.Tuple(expressions=[x, flag]) for x in xs])
    select = exp.select(*values, flag.as_("f"), *grouped, D.count_star().as_("n"))
    result = session.query(select.from_(D.table(source.relation)).group_by(sets))
    out = {}
    for i, a in enumerate(names):
        mine = result.filter(pc.equal(result.column(f"g{i}"), 0))
        mine = mine.filter(pa.array(_flag_mask(config, stats, mine.column("f"))))
        table = pa.table({"v": mine.column(f"v{i}"), "n": mine.column("n")})
        every = source.distinct.get(a)
        of_subset = sensitive_stats(source, a, a in numbers, table)
        if every is not None:  # the population's values stay what the mapping tables read
            source.distinct[a] = every
        out[a] = stats[a].with_counts_of(of_subset)
    return out


def subset_codes(config: SkaldConfig, coding: Coding, stats: dict[str, SensitiveStats]) -> Coding:
    """`coding` whose criteria's value codes are null outside the subset (the flag's code
    not one marking it): their (class, value) tables count the subset's records only."""
    if config.research_subset is None:
        return coding
    column = config.research_subset.column
    code, _ = coding.values[column]
    flags = stats[column]
    marks = np.flatnonzero(in_subset_codes(column, flags.values))
    inside = exp.In(this=code, expressions=[D.number(int(c)) for c in marks])
    values = dict(coding.values)
    for a in judged_attributes(config):
        if a in values:
            value, m = values[a]
            values[a] = (exp.Case(ifs=[exp.If(this=inside, true=value)]), m)
    return Coding(coding.qids, values, coding.joins)


def subset_table(
    session: SqlSession, whole: SqlInput, config: SkaldConfig, stats: dict[str, SensitiveStats]
) -> str | None:
    """The flag column's values that mark the subset (as the engine stores them), sent once
    for phase 3's filter (`released_rows`); None: no subset. `whole.distinct` holds the
    column's distinct values (loaded with the coding)."""
    if config.research_subset is None:
        return None
    raw = whole.distinct[config.research_subset.column]
    raw = raw.filter(raw.is_valid())
    marks = raw.filter(pa.array(_flag_mask(config, stats, raw)))
    return session.send("subset_flags", pa.table({"v": marks}))


def released_rows(
    session: SqlSession, source: SqlInput, config: SkaldConfig, marks: str | None
) -> SqlInput:
    """`source`'s records of the subset (a temporary view; `marks`: `subset_table`'s table),
    or `source` without a subset. The flag column stays in the view; the release leaves it
    out (`release.output_columns`)."""
    if marks is None:
        return source
    source = flagged(session, source, config)
    column = config.research_subset.column
    inside = exp.In(
        this=D.column(column), query=exp.select(D.column("v")).from_(D.table(marks)).subquery()
    )
    select = exp.select(exp.Star()).from_(D.table(source.relation)).where(inside)
    return SqlInput(session.view(select, "subset"), source.schema, source.where)
