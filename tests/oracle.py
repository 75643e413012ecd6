"""Test oracle for airflow-skald: a slow, simple reference written from SPEC.md alone.

It is used only by the tests to check the product (``airflow_skald.core``); it shares
no code with it.  Everything is brute force in plain pandas on small data:
every node of the lattice is generalised from the raw records and grouped again.

QIDs are plain dicts:

    {"name": "age", "type": "numerical", "min_width": 1, "widths": None, "encode": False}
    {"name": "blood_group", "type": "categorical", "hierarchy": {"A+": ["A"], "A-": ["A"]}}

(``min_width`` defaults to 1, ``widths`` to None, ``encode`` to False.)

Arithmetic choices (SPEC section 3 says "quantised to integer units of min_width"):
numbers are turned into exact decimals through their shortest repr (``repr(0.1) ==
"0.1"``) and ``(x - min) / min_width`` is computed in ``decimal.Decimal``; a quotient
within 1e-9 of an integer counts as that integer (so float noise such as
0.7/0.1 == 6.999... lands on unit 7), otherwise it is floored.
"""

from __future__ import annotations

import itertools
import math
import re
from decimal import Decimal
from fractions import Fraction

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
    """Bin width in units of ``min_width`` for each level 0..top (SPEC section 3).

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


def hierarchy_chain(value, labels) -> list[str]:
    """[level 0 = the value itself, level 1 label, ..., "*"]; "*" appended if missing."""
    chain = [str(value)] + [str(label) for label in labels]
    if len(chain) == 1 or chain[-1] != "*":
        chain.append("*")
    return chain


def _chains(hierarchy: dict) -> dict[str, list[str]]:
    chains = {str(v): hierarchy_chain(v, labels) for v, labels in hierarchy.items()}
    lengths = {len(c) for c in chains.values()}
    assert len(lengths) == 1, f"hierarchy rows have different lengths: {sorted(lengths)}"
    return chains


# ---------------------------------------------------------------- generalising a table


def _prepare(df: pd.DataFrame, qids: list[dict]) -> dict[str, dict]:
    """For each QID: the generalised code of every record at every level, and the
    number of bins per level as SPEC section 4 phase 1 counts them."""
    out = {}
    for q in qids:
        name = q["name"]
        col = df[name]
        if col.isna().any():
            raise ValueError(f"{name}: {int(col.isna().sum())} null value(s)")
        if q["type"] == "categorical":
            chains = _chains(q["hierarchy"])
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


def _class_sizes(prepared: dict, node: dict[str, int]) -> pd.Series:
    """Size of every equivalence class when each QID is generalised to its node level."""
    table = pd.DataFrame({name: prepared[name]["codes"][level] for name, level in node.items()})
    return table.groupby(list(node), sort=False, dropna=False).size()


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


# ------------------------------------------------------------------------ the search


def exhaustive_search(df, qids, k, suppression_limit, qid_priority, root=None) -> dict:
    """Best node of the (sub-)lattice above ``root`` by brute force (SPEC section 4 phase 2).

    A node passes iff s = records in classes smaller than k <= floor(limit * N).
    Best = minimal DM* = sum over kept classes |E|^2 + s^2, then higher precision,
    then levels compared lexicographically in qid_priority order (finer first).
    """
    prepared = _prepare(df, qids)
    tops = {name: p["top"] for name, p in prepared.items()}
    order = _priority_order(qids, qid_priority)
    n = len(df)
    allowed = max_suppressed(suppression_limit, n)
    best, best_key = None, None
    evaluated = passing = 0
    for node in _lattice(tops, root):
        evaluated += 1
        sizes = [int(x) for x in _class_sizes(prepared, node)]
        kept = [x for x in sizes if x >= k]
        s = sum(x for x in sizes if x < k)
        if s > allowed:
            continue
        passing += 1
        dm_star = sum(x * x for x in kept) + s * s
        prec = precision(node, tops)
        key = (dm_star, -prec, tuple(node[q] for q in order))
        if best_key is None or key < best_key:
            best_key = key
            best = {
                "node": node,
                "dm_star": dm_star,
                "n_suppressed": s,
                "n_classes": len(kept),
                "min_class_size": min(kept, default=0),
                "precision": prec,
                "dm_star_arx": sum(x * x for x in sizes),
                "dm": sum(x * x for x in kept) + n * s,
            }
    result = best or {"node": None}
    result.update({"evaluated": evaluated, "passing": passing, "max_suppressed": allowed})
    return result


def ram_root(df, qids, histogram_bins, qid_priority) -> dict[str, int]:
    """RAM root (SPEC section 4 phase 1): among nodes of the full lattice with
    N_data = prod(bins per QID at its level) + 1 <= histogram_bins, the one with the
    best precision; ties by qid_priority (finer first)."""
    prepared = _prepare(df, qids)
    tops = {name: p["top"] for name, p in prepared.items()}
    order = _priority_order(qids, qid_priority)
    best, best_key = None, None
    for node in _lattice(tops, None):
        n_data = math.prod(prepared[q]["n_bins"][level] for q, level in node.items()) + 1
        if n_data > histogram_bins:
            continue
        key = (-precision(node, tops), tuple(node[q] for q in order))
        if best_key is None or key < best_key:
            best, best_key = node, key
    if best is None:
        raise ValueError(f"no node fits in {histogram_bins} histogram bins")
    return best


# ------------------------------------------------------------------ checking releases


def check_release(release_df, qid_names, k, suppression_limit, n_records) -> dict:
    """Independent k-anonymity check of a written release (QID columns are strings).

    Suppressed = rows missing from the release (``drop``) plus rows whose QIDs are all
    "*" (``mask``).  If every QID value of the release is "*" the node may be the top
    one: the rows then count as one class if there are at least k of them, else as
    suppressed.  Every other class (identical QID tuple) must have >= k rows and the
    suppressed count must be <= floor(limit * n_records).  Raises AssertionError.
    """
    qids = release_df[list(qid_names)]
    nulls = qids.isna().sum()
    assert not nulls.any(), f"null values in QID columns: {nulls[nulls > 0].to_dict()}"
    qids = qids.astype(str)
    n_rows = len(qids)
    assert n_rows <= n_records, f"release has {n_rows} rows but the input had {n_records}"
    all_star = (qids == "*").all(axis=1)
    # every QID value "*" and at least k rows: the top node for every QID, one kept class
    top_node = bool(n_rows) and bool(all_star.all()) and n_rows >= k
    masked = all_star & (not top_node)
    n_masked = int(masked.sum())
    n_dropped = n_records - n_rows
    n_suppressed = n_masked + n_dropped
    sizes = [int(x) for x in qids[~masked].groupby(list(qid_names), sort=False).size()]
    small = [x for x in sizes if x < k]
    assert not small, f"{len(small)} kept class(es) smaller than k={k}: sizes {sorted(small)[:10]}"
    allowed = max_suppressed(suppression_limit, n_records)
    assert n_suppressed <= allowed, (
        f"{n_suppressed} suppressed records ({n_masked} masked, {n_dropped} dropped) "
        f"exceed floor({suppression_limit} * {n_records}) = {allowed}"
    )
    return {
        "n_records": n_records,
        "n_rows": n_rows,
        "n_suppressed": n_suppressed,
        "n_masked": n_masked,
        "n_dropped": n_dropped,
        "n_classes": len(sizes),
        "min_class_size": min(sizes, default=0),
        "dm_star": sum(x * x for x in sizes) + n_suppressed**2,
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
    chain = _chains(qid["hierarchy"]).get(str(original))
    return chain is not None and generalised in chain
