"""Reference hierarchies built from rules (docs/design.md §3a), written from docs/design.md alone for the tests.

Shares no code with the product: each record's labels are computed one by one with Python's
`datetime`, string slicing and `Fraction`s, then a built level holding one label for every
value of the data is dropped and `*` appended, as §3a says. QIDs are the config's dicts:

    {"name": "dob", "type": "date", "levels": ["day", "month", "year", {"years": 5}]}
    {"name": "zip", "type": "masked", "pad": "0", "align": "right", "steps": [1, 2], "from": "right"}
    {"name": "age", "type": "numerical", "min_width": 1, "bins": [0, 18, 65], "group": [2],
     "below": None, "above": "65+"}
    {"name": "edu", "type": "categorical", "order": ["a", "b", "c"], "group": [2], "labels": None}
"""

from __future__ import annotations

import datetime as dt
import math
from fractions import Fraction

import pandas as pd

ORDER = ["second", "minute", "hour", "day", "week", "month", "quarter", "year"]
DEFAULT_DATE_LEVELS = ["day", "month", "year", {"years": 5}, {"years": 10}]


def is_rule(q: dict) -> bool:
    return q["type"] in ("date", "masked") or "bins" in q or "order" in q


# ----------------------------------------------------------------------------- dates


def utc(value) -> dt.datetime:
    """A date, timestamp or ISO-8601 text as a naive datetime in UTC."""
    if isinstance(value, pd.Timestamp):
        value = value.to_pydatetime()
    if isinstance(value, str):
        text = value.strip()
        if text.endswith("Z"):
            text = text[:-1] + "+00:00"
        value = dt.datetime.fromisoformat(text)
    if isinstance(value, dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(dt.UTC).replace(tzinfo=None)
        return value
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day)
    raise TypeError(f"not a date: {value!r}")


def date_label(level, t: dt.datetime, iso_years: bool) -> str:
    """docs/design.md §3a's label of `t` at one level (years are ISO years above a week level)."""
    iso_year, iso_week, _ = t.isocalendar()
    year = iso_year if iso_years else t.year
    if isinstance(level, dict):
        n = level["years"]
        first = (year // n) * n
        return f"{first:04d}-{first + n - 1:04d}"
    if level == "year":
        return f"{year:04d}"
    if level == "quarter":
        return f"{t.year:04d}-Q{(t.month + 2) // 3}"
    if level == "month":
        return f"{t.year:04d}-{t.month:02d}"
    if level == "week":
        return f"{iso_year:04d}-W{iso_week:02d}"
    text = t.strftime("%Y-%m-%dT%H:%M:%S")  # years >= 1000 in the tests
    return {"day": text[:10], "hour": text[:13], "minute": text[:16], "second": text[:19]}[level]


def date_chain(value, levels) -> list[str]:
    t = utc(value)
    out, iso = [], False
    for level in levels:
        out.append(date_label(level, t, iso))
        iso = iso or level == "week"
    return out


# ----------------------------------------------------------------------------- masks


def code_of(value) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def masked_chains(values: list, q: dict) -> dict[str, list[str]]:
    codes = {code_of(v) for v in values}
    width = max(len(c) for c in codes)
    pad = q.get("pad")
    if pad is None:
        assert len({len(c) for c in codes}) == 1, "mixed lengths without pad"
    out = {}
    for c in codes:
        p = c
        if pad is not None:
            fill = pad * (width - len(c))
            p = fill + c if q.get("align", "right") == "right" else c + fill
        chain = [p]
        for n in q.get("steps") or range(1, width + 1):
            if n >= width:
                break
            chain.append(p[:-n] + "*" * n if q.get("from", "right") == "right" else "*" * n + p[n:])
        out[c] = chain
    return out


# ------------------------------------------------------------------------- intervals


def _frac(x) -> Fraction:
    return Fraction(repr(float(x))) if isinstance(x, float) else Fraction(str(x))


def _decimals(x: Fraction) -> int:
    d = 0
    while (x * 10**d).denominator != 1:
        d += 1
    return d


def _text(x: Fraction, d: int) -> str:
    return str(x.numerator) if d == 0 else f"{float(x):.{d}f}"


def interval_chains(values: list, q: dict) -> dict:
    """value -> [level-0 label (docs/design.md §3 numeric bin), level 1 (cuts), groups...]."""
    mw = _frac(q["min_width"])
    xs = [_frac(v) for v in values]
    lo = min(xs)
    cuts = [_frac(c) for c in q["bins"]]
    integral = all(x.denominator == 1 for x in xs) and mw.denominator == 1 and lo.denominator == 1
    d0 = max(_decimals(lo), _decimals(mw))
    dc = 0 if all(c.denominator == 1 for c in cuts) else max(_decimals(mw), *map(_decimals, cuts))
    out = {}
    for v, x in zip(values, xs, strict=True):
        u = math.floor((x - lo) / mw)
        a = lo + u * mw
        level0 = f"[{a}-{a + mw - 1}]" if integral else f"[{_text(a, d0)}-{_text(a + mw, d0)})"
        chain = [level0]
        n_up = 1 + len(q.get("group") or [])
        if x < cuts[0]:
            assert q.get("below"), "value below the cuts"
            chain += [q["below"]] * n_up
        elif x >= cuts[-1]:
            assert q.get("above"), "value above the cuts"
            chain += [q["above"]] * n_up
        else:
            i = max(j for j in range(len(cuts) - 1) if cuts[j] <= x)
            size = 1
            for g in [1, *(q.get("group") or [])]:
                size *= g
                first = i // size * size
                last = min(first + size, len(cuts) - 1)
                chain.append(f"[{_text(cuts[first], dc)}-{_text(cuts[last], dc)})")
        out[v] = chain
    return out


# --------------------------------------------------------------------------- ordered


def ordered_chain(value: str, q: dict) -> list[str]:
    order = [str(v) for v in q["order"]]
    p = order.index(str(value))
    chain, size = [str(value)], 1
    for j, g in enumerate(q["group"]):
        size *= g
        run = p // size
        if q.get("labels"):
            chain.append(str(q["labels"][j][run]))
        else:
            a, b = run * size, min((run + 1) * size, len(order)) - 1
            chain.append(order[a] if a == b else f"{order[a]}-{order[b]}")
    return chain


# ------------------------------------------------------------------------ the levels


def level_labels(col: pd.Series, q: dict) -> list[pd.Series]:
    """Each record's label at every level 0..top of a rule QID (docs/design.md §3a), `*` on top."""
    values = col.tolist()
    if q["type"] == "date":
        levels = q.get("levels") or DEFAULT_DATE_LEVELS
        chains = [date_chain(v, levels) for v in values]
    elif q["type"] == "masked":
        table = masked_chains(values, q)
        chains = [table[code_of(v)] for v in values]
    elif "bins" in q:
        table = interval_chains(values, q)
        chains = [table[v] for v in values]
    else:
        chains = [ordered_chain(v, q) for v in values]
    n = len(chains[0])
    columns = [[c[j] for c in chains] for j in range(n)]
    kept = [columns[0]]
    for column in columns[1:]:
        if len(set(column)) == 1:
            break
        kept.append(column)
    kept.append(["*"] * len(values))
    return [pd.Series(c, index=col.index) for c in kept]


def expected_release(df: pd.DataFrame, qids: list[dict], node: dict[str, int], k: int):
    """The QID columns docs/design.md §4 phase 3 writes at `node` (k only, suppressed rows masked):
    each record's label at its QID's level, records of classes smaller than k all `*`."""
    labels = {}
    for q in qids:
        if is_rule(q):
            labels[q["name"]] = level_labels(df[q["name"]], q)[node[q["name"]]]
        else:  # a listed hierarchy: value -> [level 1, ...], top as docs/design.md §3 says
            from oracle import hierarchy_chains  # oracle imports this module

            chains = hierarchy_chains(q["hierarchy"])
            level = node[q["name"]]
            labels[q["name"]] = df[q["name"]].map({v: c[level] for v, c in chains.items()})
    out = pd.DataFrame(labels)
    sizes = out.groupby(list(out.columns), sort=False)[out.columns[0]].transform("size")
    out[sizes < k] = "*"
    return out
