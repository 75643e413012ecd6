"""Test oracle for airflow-skald: a slow, simple reference written from docs/design.md alone.

It is used only by the tests to check the product (``airflow_skald.core``); it shares
no code with it.  Everything is brute force in plain pandas on small data:
every node of the lattice is generalised from the raw records and grouped again.

QIDs are plain dicts:

    {"name": "age", "type": "numerical", "min_width": 1, "widths": None, "encode": False}
    {"name": "blood_group", "type": "categorical", "hierarchy": {"A+": ["A"], "A-": ["A"]}}

(``min_width`` defaults to 1, ``widths`` to None, ``encode`` to False.)

Privacy models beyond k (docs/design.md §4b) are config-style dicts passed as ``l_diversity`` /
``t_closeness`` (see `Criteria`); each class is judged by tests/oracle_criteria.py in exact
arithmetic, t-closeness against the attribute's distribution over all input records.

Arithmetic choices (docs/design.md §3 says "quantised to integer units of min_width"):
numbers are turned into exact decimals through their shortest repr (``repr(0.1) ==
"0.1"``) and ``(x - min) / min_width`` is computed in ``decimal.Decimal``; a quotient
within 1e-9 of an integer counts as that integer (so float noise such as
0.7/0.1 == 6.999... lands on unit 7), otherwise it is floored.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Mapping, Sequence
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import oracle_criteria as OC
import oracle_rules as OR
import pandas as pd

_TOLERANCE = Decimal("1e-9")


# --------------------------------------------------------------------------- numbers


def _dec(x) -> Decimal:
    """Exact decimal of a number as it is written (``0.1`` -> ``Decimal("0.1")``)."""
    if isinstance(x, float):  # also numpy.float64
        return Decimal(repr(float(x)))
    return Decimal(str(x))


def _units(x, origin, min_width) -> int:
    """Whole units of ``min_width`` from ``origin`` to ``x``: floor, tolerant of float noise."""
    q = (_dec(x) - _dec(origin)) / _dec(min_width)
    nearest = q.to_integral_value()
    if abs(q - nearest) <= _TOLERANCE:
        return int(nearest)
    return math.floor(q)


def max_suppressed(suppression_limit, n_records: int) -> int:
    """floor(suppression_limit * N), exactly (0.29 * 100 is 29 here, not 28)."""
    return math.floor(Fraction(str(suppression_limit)) * n_records)


def levels_for_numeric(
    min_value, max_value, min_width, widths=None, encoded_values=None
) -> list[int]:
    """Bin width in units of ``min_width`` for each level 0..top (docs/design.md §3).

    n_units = (max - min) / min_width + 1 (or the number of distinct values when
    ``encoded_values`` is given: binning then works on ranks 0..m-1).  Default widths
    1, 2, 4, ... while 2^j < n_units; explicit ``widths`` are converted to units and
    only those < n_units are kept.  The top (n_units, one bin) is appended.
    Level 0 is always 1 unit; if n_units == 1 there is only level 0.
    """
    if encoded_values is not None:
        n_units = len(set(encoded_values))
    else:
        n_units = _units(max_value, min_value, min_width) + 1
    assert n_units >= 1, f"empty domain: min={min_value} max={max_value}"
    if n_units == 1:
        return [1]
    if widths is None:
        out = []
        w = 1
        while w < n_units:
            out.append(w)
            w *= 2
    else:
        out = []
        for w in widths:
            u = _units(w, 0, min_width)
            assert _dec(w) == u * _dec(min_width), f"width {w} is not a multiple of {min_width}"
            out.append(u)
        assert out[0] == 1, f"explicit widths must start with min_width, got {widths}"
        assert all(b > a and b % a == 0 for a, b in itertools.pairwise(out)), widths
        out = [u for u in out if u < n_units]
    return out + [n_units]


# ----------------------------------------------------------------------- hierarchies


def hierarchy_chains(hierarchy: dict) -> dict[str, list[str]]:
    """value -> [level 0 = the value itself, level 1 label, ..., top] (docs/design.md §3): the last
    column given is the top when it holds one label for every value (`*` or a constant such
    as `[0,99]`), else "*" is appended."""
    chains = {
        str(v): [str(v)] + [str(label) for label in (up if isinstance(up, list) else [up])]
        for v, up in hierarchy.items()
    }
    lengths = {len(c) for c in chains.values()}
    assert len(lengths) == 1, f"hierarchy rows have different lengths: {sorted(lengths)}"
    if len({c[-1] for c in chains.values()}) > 1:
        chains = {v: [*c, "*"] for v, c in chains.items()}
    return chains


# ---------------------------------------------------------------- generalising a table


def _prepare(df: pd.DataFrame, qids: list[dict]) -> dict[str, dict]:
    """For each QID: the generalised code of every record at every level, and the
    number of bins per level as docs/design.md §4 phase 1 counts them."""
    out = {}
    for q in qids:
        name = q["name"]
        col = df[name]
        if col.isna().any():
            raise ValueError(f"{name}: {int(col.isna().sum())} null value(s)")
        if OR.is_rule(q):  # docs/design.md §3a: built from a rule over the data's values
            codes = OR.level_labels(col, q)
            n_bins = [c.nunique() for c in codes]
        elif q["type"] == "categorical":
            chains = hierarchy_chains(q["hierarchy"])
            values = col.map(str)
            missing = set(values) - chains.keys()
            if missing:
                raise ValueError(f"{name}: values missing from the hierarchy: {sorted(missing)}")
            n_levels = len(next(iter(chains.values())))
            codes = [values.map({v: c[lvl] for v, c in chains.items()}) for lvl in range(n_levels)]
            # categorical bins = distinct labels at that level among the OBSERVED values
            n_bins = [c.nunique() for c in codes]
        elif q["type"] == "numerical":
            min_width = q.get("min_width", 1)
            if q.get("encode", False):
                ranks = {v: i for i, v in enumerate(sorted(set(col)))}
                units = col.map(ranks)
                widths = levels_for_numeric(
                    None, None, min_width, q.get("widths"), encoded_values=col
                )
            else:
                lo, hi = col.min(), col.max()
                units = pd.Series([_units(x, lo, min_width) for x in col], index=col.index)
                widths = levels_for_numeric(lo, hi, min_width, q.get("widths"))
            n_units = widths[-1]
            codes = [units.astype("int64") // w for w in widths]
            n_bins = [math.ceil(n_units / w) for w in widths]
        else:
            raise ValueError(f"{name}: unknown QID type {q['type']!r}")
        out[name] = {"codes": codes, "n_bins": n_bins, "top": len(codes) - 1}
    return out


def _label_ids(prepared: dict, name: str, level: int) -> np.ndarray:
    """The labels of one QID at one level as integers (a null is one more label), cached."""
    cache = prepared[name].setdefault("ids", {})
    if level not in cache:
        cache[level] = pd.factorize(prepared[name]["codes"][level], use_na_sentinel=False)[0]
    return cache[level]


def _class_ids(prepared: dict, node: dict[str, int]) -> list[int]:
    """Each record's equivalence class (0, 1, ... in order of first appearance) at the node:
    records are in one class iff their labels are equal on every QID."""
    key = None
    for name, level in node.items():
        labels = _label_ids(prepared, name, level)
        key = labels if key is None else key * (int(labels.max(initial=0)) + 1) + labels
        key = np.unique(key, return_inverse=True)[1].reshape(-1)  # dense again: no overflow
    if key is None:
        return []
    _, first, inverse = np.unique(key, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse.reshape(-1)].tolist()


def _lattice(tops: dict[str, int], root: dict[str, int] | None):
    """Every node (as a dict) with root[q] <= level[q] <= top[q] for every QID."""
    root = root or {}
    ranges = [range(root.get(name, 0), top + 1) for name, top in tops.items()]
    for levels in itertools.product(*ranges):
        yield dict(zip(tops, levels, strict=True))


def precision(node: dict[str, int], tops: dict[str, int]) -> Fraction:
    """Sweeney precision 1 - mean_i(level_i / top_i); a QID with top 0 contributes 0."""
    parts = [Fraction(node[q], tops[q]) if tops[q] else Fraction(0) for q in node]
    return 1 - sum(parts, Fraction(0)) / len(parts)


def _priority_order(qids: list[dict], qid_priority) -> list[str]:
    """qid_priority first, then the unlisted QIDs in config order."""
    names = [q["name"] for q in qids]
    listed = list(qid_priority or [])
    unknown = set(listed) - set(names)
    assert not unknown, f"qid_priority names unknown QIDs: {sorted(unknown)}"
    return listed + [n for n in names if n not in listed]


# ------------------------------------------------------------- criteria beyond k (§4b)


def sensitive_value(v):
    """A sensitive value as the criteria see it: None for a null (one more value), numpy
    scalars as Python ones, an integral float as its int (pandas turns an int column with
    nulls into floats; 3.0 and 3 are the same value)."""
    if v is None or (not isinstance(v, str) and pd.isna(v)):
        return None
    if hasattr(v, "item"):
        v = v.item()
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v


def _label(v) -> str:
    """How a sensitive value is looked up in a t-closeness hierarchy (a null as NULL)."""
    return "NULL" if v is None else str(v)


def hierarchy_of(criterion: Mapping) -> dict:
    """A hierarchical t-closeness criterion's hierarchy as {value: [labels...]}, from its inline
    `hierarchy` or its ARX `hierarchy_file` (value;level1;...;*), read independently."""
    if "hierarchy" in criterion:
        return {str(v): labels for v, labels in criterion["hierarchy"].items()}
    rows = [r.split(";") for r in Path(criterion["hierarchy_file"]).read_text().splitlines() if r]
    return {r[0]: r[1:] for r in rows}


class Criteria:
    """The l-diversity and t-closeness criteria of a run (config-style dicts), with the input's
    distribution of each attribute they name (t-closeness compares with ALL N records).

    l_diversity: [{"attribute", "l", "variant": distinct|entropy|recursive, "c",
                   "estimator": shannon|grassberger (entropy)}]
    t_closeness: [{"attribute", "t", "distance": equal|ordered|hierarchical, "hierarchy" or
    "hierarchy_file", "order": numbers|text|[values] (ordered)}]
    """

    def __init__(
        self,
        l_diversity=(),
        t_closeness=(),
        inputs: Mapping[str, Sequence] | None = None,
        domain: Mapping[str, Sequence] | None = None,
    ):
        self.l_diversity = [dict(c) for c in l_diversity or ()]
        self.t_closeness = [dict(c) for c in t_closeness or ()]
        named = [c["attribute"] for c in (*self.l_diversity, *self.t_closeness)]
        self.attributes = list(dict.fromkeys(named))
        self.glob = {
            a: _class_distributions([0] * len(inputs[a]), 1, inputs[a])[0] for a in self.attributes
        }
        # a research subset (`inputs` its records): the population's values (`domain`) count 0
        # where no subset record holds them, and ordered distance walks them too (ADR 0045)
        self.every = domain is not None
        for a in self.attributes if domain is not None else ():
            for v in domain[a]:
                self.glob[a].setdefault(sensitive_value(v), 0)
        self.paths: list[dict | None] = []
        for c in self.t_closeness:
            if c.get("distance", "equal") != "hierarchical":
                self.paths.append(None)
                continue
            hier = hierarchy_of(c)
            missing = [v for v in self.glob[c["attribute"]] if _label(v) not in hier]
            if missing:
                raise ValueError(f"{c['attribute']}: hierarchy misses {missing[:3]}")
            chains = hierarchy_chains(hier)
            self.paths.append({v: chains[_label(v)][1:] for v in self.glob[c["attribute"]]})

    def __bool__(self) -> bool:
        return bool(self.attributes)

    @property
    def n_values(self) -> int:
        """sum_a m_a: distinct values (a null counted) of every attribute criteria name."""
        return sum(len(self.glob[a]) for a in self.attributes)

    def keeps(self, dists: Mapping[str, dict]) -> bool:
        """Does a class (its {value: count} per attribute) satisfy every criterion?"""
        for c in self.l_diversity:
            d, ell, variant = dists[c["attribute"]], int(c["l"]), c.get("variant", "distinct")
            if variant == "distinct" and not OC.distinct_ok(d, ell):
                return False
            grassberger = c.get("estimator") == "grassberger"
            if variant == "entropy" and grassberger and not OC.grassberger_ok(d, ell):
                return False
            if variant == "entropy" and not grassberger and not OC.entropy_ok(d, ell):
                return False
            if variant == "recursive" and not OC.recursive_ok(d, Fraction(str(c["c"])), ell):
                return False
        for c, paths in zip(self.t_closeness, self.paths, strict=True):
            if self.distance(c, paths, dists[c["attribute"]]) > Fraction(str(c["t"])):
                return False
        return True

    def distance(self, c: Mapping, paths, d: dict) -> Fraction:
        glob = self.glob[c["attribute"]]
        distance = c.get("distance", "equal")
        if distance == "equal":
            return OC.equal_distance(d, glob)
        if distance == "ordered" and c.get("order", "numbers") != "numbers":
            listed = None if c["order"] == "text" else c["order"]
            return OC.ordered_distance(d, glob, OC.text_order(glob, listed, self.every))
        if distance == "ordered":
            return OC.ordered_distance(d, glob, OC.numeric_order(glob, self.every))
        return OC.hierarchical_distance(d, glob, paths)

    def figures(self, kept: list[dict]) -> list:
        """The figure each criterion reaches over the kept classes (docs/design.md §4b), in config
        order, l-diversity first: smallest distinct count, smallest entropy l (a float),
        largest n_1 / (n_l + ... + n_m), largest distance (a Fraction); None if none kept."""
        out: list = []
        for c in self.l_diversity:
            ds = [k[c["attribute"]] for k in kept]
            variant = c.get("variant", "distinct")
            if not ds:
                out.append(None)
            elif variant == "distinct":
                out.append(min(OC.distinct_count(d) for d in ds))
            elif variant == "entropy" and c.get("estimator") == "grassberger":
                out.append(min(math.exp(OC.grassberger_h(d)) for d in ds))
            elif variant == "entropy":
                out.append(min(OC.entropy_l_figure(d) for d in ds))
            else:
                out.append(max(OC.recursive_ratio(d, int(c["l"])) for d in ds))
        for c, paths in zip(self.t_closeness, self.paths, strict=True):
            ds = [k[c["attribute"]] for k in kept]
            out.append(max((self.distance(c, paths, d) for d in ds), default=None))
        return out


class Coded:
    """A sensitive column's values as the criteria see them (`sensitive_value`), each record
    coded by its value's first appearance: computed once, counted per class at every node."""

    def __init__(self, values: Sequence):
        index: dict = {}
        seen = (index.setdefault(sensitive_value(v), len(index)) for v in values)
        self.codes = np.fromiter(seen, dtype=np.int64, count=len(values))
        self.values = list(index)


def _class_distributions(class_ids: Sequence[int], n_classes: int, values) -> list:
    """{value: count} of each class (values: a sequence or its `Coded` form), the keys of a
    class in the order its records first show them."""
    coded = values if isinstance(values, Coded) else Coded(values)
    dists: list[dict] = [{} for _ in range(n_classes)]
    if not len(coded.codes):
        return dists
    width = len(coded.values)
    pairs = np.asarray(class_ids, dtype=np.int64) * width + coded.codes
    unique, first, counts = np.unique(pairs, return_index=True, return_counts=True)
    order = np.argsort(first, kind="stable")
    for pair, count in zip(unique[order].tolist(), counts[order].tolist(), strict=True):
        dists[pair // width][coded.values[pair % width]] = count
    return dists


def _judge(sizes: list[int], dists: dict[str, list], k: int, criteria: Criteria):
    """Kept class indices and suppressed records: a class is suppressed if smaller than k or
    violating any criterion (the criteria are only asked about classes of >= k records)."""
    kept = [
        i
        for i, size in enumerate(sizes)
        if size >= k and (not criteria or criteria.keeps({a: d[i] for a, d in dists.items()}))
    ]
    s = sum(sizes) - sum(sizes[i] for i in kept)
    return kept, s


# ------------------------------------------------------------------------ the search


def exhaustive_search(
    df, qids, k, suppression_limit, qid_priority, root=None, l_diversity=(), t_closeness=()
) -> dict:
    """Best node of the (sub-)lattice above ``root`` by brute force (docs/design.md §4 phase 2, §4b).

    A class is suppressed if it has fewer than k records or violates any l-diversity /
    t-closeness criterion (config-style dicts, see `Criteria`; t against the distribution over
    all N input records, a null one more value). A node passes iff s = suppressed records
    <= floor(limit * N). Best = minimal DM* = sum over kept classes |E|^2 + s^2, then higher
    precision, then levels compared lexicographically in qid_priority order (finer first).
    ``figures`` lists each criterion's figure over the kept classes (`Criteria.figures`).
    """
    (result,) = exhaustive_search_each(
        df, qids, [(k, suppression_limit)], qid_priority, root, l_diversity, t_closeness
    )
    return result


def exhaustive_search_each(
    df, qids, cases, qid_priority, root=None, l_diversity=(), t_closeness=()
) -> list[dict]:
    """`exhaustive_search` for each (k, suppression limit) of `cases`, in one walk of the
    lattice: each node's classes found once, and judged once per k (a node's classes and the
    criteria do not depend on the limit, only whether the node passes)."""
    prepared = _prepare(df, qids)
    criteria = Criteria(l_diversity, t_closeness, df)
    coded = {a: Coded(df[a].tolist()) for a in criteria.attributes}
    n = len(df)

    def judge_at(k: int):
        def judge(node: dict, ids: list[int]):
            sizes = np.bincount(ids).tolist() if ids else []
            dists = {
                a: _class_distributions(ids, len(sizes), coded[a]) for a in criteria.attributes
            }
            kept_ids, s = _judge(sizes, dists, k, criteria)
            kept = [sizes[i] for i in kept_ids]
            return (
                kept,
                s,
                lambda: {
                    "min_class_size": min(kept, default=0),
                    "dm_star_arx": sum(x * x for x in sizes),
                    "dm": sum(x * x for x in kept) + n * s,
                    "figures": criteria.figures(
                        [{a: d[i] for a, d in dists.items()} for i in kept_ids]
                    ),
                },
            )

        return judge

    judges = {k: judge_at(k) for k, _ in cases}
    alloweds = [(max_suppressed(limit, n), judges[k]) for k, limit in cases]
    results = []
    for (allowed, _), (result, evaluated, passing) in zip(
        alloweds, search_nodes_each(prepared, qids, qid_priority, root, alloweds), strict=True
    ):
        result.update({"evaluated": evaluated, "passing": passing, "max_suppressed": allowed})
        results.append(result)
    return results


def search_nodes(prepared: dict, qids, qid_priority, root, allowed: int, judge):
    """The exhaustive search's bookkeeping, whatever judges the classes: every node above
    `root`, its classes judged by `judge(node, class ids)` -> (kept class sizes, suppressed
    records, the best node's other figures when asked); a node passes iff suppressed <=
    `allowed`; best = minimal DM* = sum of kept sizes squared + s^2, then higher precision,
    then levels in qid_priority order (finer first). Returns (best or {"node": None},
    nodes evaluated, nodes passing)."""
    (found,) = search_nodes_each(prepared, qids, qid_priority, root, [(allowed, judge)])
    return found


def search_nodes_each(prepared: dict, qids, qid_priority, root, cases) -> list:
    """`search_nodes` for each (records allowed suppressed, judge) of `cases` in one walk of
    the lattice: each node's classes found once, each judge asked once per node."""
    tops = {name: p["top"] for name, p in prepared.items()}
    order = _priority_order(qids, qid_priority)
    best = [None] * len(cases)
    best_key = [None] * len(cases)
    evaluated, passing = 0, [0] * len(cases)
    for node in _lattice(tops, root):
        evaluated += 1
        ids = _class_ids(prepared, node)
        judged = {}
        for i, (allowed, judge) in enumerate(cases):
            if id(judge) not in judged:
                judged[id(judge)] = judge(node, ids)
            kept, s, figures = judged[id(judge)]
            if s > allowed:
                continue
            passing[i] += 1
            dm_star = sum(int(x) * int(x) for x in kept) + s * s
            prec = precision(node, tops)
            key = (dm_star, -prec, tuple(node[q] for q in order))
            if best_key[i] is None or key < best_key[i]:
                best_key[i] = key
                best[i] = {
                    "node": node,
                    "dm_star": dm_star,
                    "n_suppressed": s,
                    "n_classes": len(kept),
                    "precision": prec,
                    **figures(),
                }
    return [(b or {"node": None}, evaluated, p) for b, p in zip(best, passing, strict=True)]


def nonempty_bins(df, qids, node: dict[str, int], l_diversity=(), t_closeness=()) -> int:
    """A node's non-empty bins as docs/design.md §4a counts them: its classes, or with criteria
    (§4b) the non-empty (class, value) pairs summed over the attributes criteria name."""
    ids = _class_ids(_prepare(df, qids), node)
    criteria = Criteria(l_diversity, t_closeness, df)
    if not criteria:
        return len(set(ids))
    return sum(
        len(set(zip(ids, map(sensitive_value, df[a]), strict=True))) for a in criteria.attributes
    )


def ram_root(df, qids, histogram_bins, qid_priority, value_tables: int = 0) -> dict[str, int]:
    """RAM root (docs/design.md §4 phase 1, paper mode): among nodes of the full lattice with
    N_data = prod(bins per QID at its level) + 1 <= histogram_bins, the one with the
    best precision; ties by qid_priority (finer first). With criteria (§4b) a node's bins
    are prod(bins) * sum_a m_a + 1: ``value_tables`` = sum_a m_a (`Criteria.n_values`)."""
    prepared = _prepare(df, qids)
    tops = {name: p["top"] for name, p in prepared.items()}
    order = _priority_order(qids, qid_priority)
    best, best_key = None, None
    for node in _lattice(tops, None):
        n_data = math.prod(prepared[q]["n_bins"][level] for q, level in node.items())
        n_data = n_data * (value_tables or 1) + 1
        if n_data > histogram_bins:
            continue
        key = (-precision(node, tops), tuple(node[q] for q in order))
        if best_key is None or key < best_key:
            best, best_key = node, key
    if best is None:
        raise ValueError(f"no node fits in {histogram_bins} histogram bins")
    return best


# ------------------------------------------------------------------ checking releases


def check_release(
    release_df,
    qid_names,
    k,
    suppression_limit,
    n_records,
    l_diversity=(),
    t_closeness=(),
    sensitive_input: Mapping[str, Sequence] | None = None,
) -> dict:
    """Independent check of a written release (QID columns are strings): k-anonymity and
    every l-diversity / t-closeness criterion (config-style dicts, see `Criteria`).

    Suppressed = rows missing from the release (``drop``) plus rows whose QIDs are all
    "*" (``mask``).  If every QID value of the release is "*" the node may be the top
    one: the rows then count as one class if there are at least k of them and they satisfy
    the criteria, else as suppressed.  Every other class (identical QID tuple) must have >= k
    rows and satisfy every criterion, and the suppressed count must be <= floor(limit *
    n_records).  t-closeness compares with ``sensitive_input`` (the attribute's values over
    all input records; default: the release's own column, right when no row was dropped).
    Raises AssertionError.
    """
    qids = release_df[list(qid_names)]
    nulls = qids.isna().sum()
    assert not nulls.any(), f"null values in QID columns: {nulls[nulls > 0].to_dict()}"
    qids = qids.astype(str)
    n_rows = len(qids)
    assert n_rows <= n_records, f"release has {n_rows} rows but the input had {n_records}"
    inputs = release_df if sensitive_input is None else sensitive_input
    criteria = Criteria(l_diversity, t_closeness, inputs)
    ids = qids.groupby(list(qid_names), sort=False).ngroup().tolist() if n_rows else []
    n_classes = max(ids, default=-1) + 1
    sizes = [0] * n_classes
    for i in ids:
        sizes[i] += 1
    dists = {
        a: _class_distributions(ids, n_classes, release_df[a].tolist()) for a in criteria.attributes
    }
    all_star = (qids == "*").all(axis=1)
    first = dict(zip(reversed(ids), range(n_rows - 1, -1, -1), strict=True))  # class -> a row
    star = [i for i in range(n_classes) if all_star.iloc[first[i]]]  # at most one class
    # every QID value "*": the top node for every QID, one class, if it is kept; else masked
    top_node = n_classes == 1 and bool(star) and _judge(sizes, dists, k, criteria)[1] == 0
    masked = [] if top_node else star
    n_masked = sum(sizes[i] for i in masked)
    n_dropped = n_records - n_rows
    n_suppressed = n_masked + n_dropped
    released = [i for i in range(n_classes) if i not in masked]
    small = [sizes[i] for i in released if sizes[i] < k]
    assert not small, f"{len(small)} kept class(es) smaller than k={k}: sizes {sorted(small)[:10]}"
    for i in released:
        one = {a: d[i] for a, d in dists.items()}
        assert not criteria or criteria.keeps(one), f"a released class violates a criterion: {one}"
    allowed = max_suppressed(suppression_limit, n_records)
    assert n_suppressed <= allowed, (
        f"{n_suppressed} suppressed records ({n_masked} masked, {n_dropped} dropped) "
        f"exceed floor({suppression_limit} * {n_records}) = {allowed}"
    )
    kept_sizes = [sizes[i] for i in released]
    return {
        "n_records": n_records,
        "n_rows": n_rows,
        "n_suppressed": n_suppressed,
        "n_masked": n_masked,
        "n_dropped": n_dropped,
        "n_classes": len(kept_sizes),
        "min_class_size": min(kept_sizes, default=0),
        "dm_star": sum(x * x for x in kept_sizes) + n_suppressed**2,
        "figures": criteria.figures([{a: d[i] for a, d in dists.items()} for i in released]),
    }


_NUMBER = r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?"
_INTERVAL = re.compile(rf"^\[({_NUMBER})-({_NUMBER})([\])])$")


def contains(generalised: str, original, qid: dict | None = None) -> bool:
    """Does the released string cover the original value?

    "*" covers everything; "[a-b]" is inclusive, "[a-b)" half-open (negative bounds
    allowed: "[-5-3]" is -5..3); for a categorical QID the string must be the label
    of the original value at some level of its hierarchy (level 0 = the value).
    ``qid`` may be None for numerical QIDs.
    """
    if generalised == "*":
        return True
    if qid is None or qid["type"] == "numerical":
        m = _INTERVAL.match(generalised)
        if m is None:
            return False
        lo, hi, x = Decimal(m[1]), Decimal(m[2]), _dec(original)
        return lo <= x <= hi if m[3] == "]" else lo <= x < hi
    chain = hierarchy_chains(qid["hierarchy"]).get(str(original))
    return chain is not None and generalised in chain
