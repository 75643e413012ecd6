"""Test oracle for the quality models (docs/design.md §4d), written from docs/design.md and ARX 3.9's definitions
alone; it shares no code with the product. Brute force over every node (tests/oracle.py's
lattice and generalisation), every model scored per record in plain Python:

- dm_star: kept |E|^2 + s^2; dm_star_arx: all |E|^2; dm: kept |E|^2 + N s;
- aecs: N / (kept classes * sF + gF if s > 0)  (ARX swaps the factors);
- loss: per QID, sum over records of gF*share (kept) or share + sF*(1 - share) (suppressed),
  then (x - gF N/U) / (N - gF N/U) clamped at 0, U the domain size (hierarchy rows; units of a
  numerical domain), share = rows (units) under the record's label / U;
- precision: per QID ((N - s) * gF * level/top + s * sF) / N;
- height: per QID the level;
- nu_entropy: per QID gF * sum over records log2(|label| / |value|) (no suppression);
- publisher_payout: ARX's payout forgone with its default cost/benefit (`_payout`);
- nu_entropy_nm: nu_entropy plus sF * sum over suppressed records log2(S / |suppressed records
  with the record's label at the node|), S the suppressed records (ARX's MetricMDNUNMEntropy);
  multi-dimensional values weighted (weights / the largest) and aggregated: geometric mean
  prod((v + 1) w)^(1/n) - 1, arithmetic mean sum(v w)/n, sum, maximum of v w, rank: the v w
  sorted largest first, compared element by element (ARX's ILMultiDimensionalRank; its figure
  the first element).
Entropies are summed in 80-digit Decimal and compared with a 1e-40 tolerance (a tie within
it counts as a tie); everything else in Fractions. Ties: dm_star as docs/design.md §4 (higher precision,
then qid_priority), every other objective smaller sum of levels first.
"""

from __future__ import annotations

import math
from collections import Counter
from decimal import Decimal, localcontext
from fractions import Fraction

import oracle as O
import pandas as pd

DEFAULT_AGGREGATE = {
    "loss": "geometric_mean",
    "precision": "arithmetic_mean",
    "nu_entropy": "sum",
    "nu_entropy_nm": "sum",
    "height": "sum",
}


def factors(gs: Fraction) -> tuple[Fraction, Fraction]:
    half = Fraction(1, 2)
    s = 2 * gs if gs < half else Fraction(1)
    g = Fraction(1) if gs <= half else 1 - 2 * (gs - half)
    return g, s


def _shares(q: dict, prepared: dict, df: pd.DataFrame) -> tuple[int, list[dict]]:
    """U and, per level, label -> rows (units) under it."""
    name = q["name"]
    codes = prepared[name]["codes"]
    if q["type"] == "categorical":
        chains = O.hierarchy_chains(q["hierarchy"])
        u = len(chains)
        return u, [Counter(c[lvl] for c in chains.values()) for lvl in range(len(codes))]
    # numerical: bins of `width` units, the last clipped to the domain
    col = df[name]
    if q.get("encode"):
        ws = O.levels_for_numeric(None, None, 1, q.get("widths"), encoded_values=col)
    else:
        ws = O.levels_for_numeric(col.min(), col.max(), q.get("min_width", 1), q.get("widths"))
    n_units = ws[-1]
    out = []
    for w in ws:
        per = {}
        for c in range(-(-n_units // w)):
            per[c] = min((c + 1) * w, n_units) - c * w
        out.append(per)
    return n_units, out


def _aggregate(values: list, weights: list[Fraction], how: str):
    if how == "geometric_mean":
        out = Fraction(1)
        for v, w in zip(values, weights, strict=True):
            out *= (v + 1) * w
        return out
    weighted = [v * w for v, w in zip(values, weights, strict=True)]
    if how == "arithmetic_mean":
        return sum(weighted) / len(weighted)
    if how == "sum":
        return sum(weighted)
    if how == "rank":
        return tuple(sorted(weighted, reverse=True))
    return max(weighted)


def exhaustive_quality(
    df,
    qids,
    k,
    suppression_limit,
    qid_priority,
    objective,
    gs_factor=Fraction(1, 2),
    weights=None,
    aggregate=None,
    root=None,
    l_diversity=(),
    t_closeness=(),
    sample_based=None,
) -> dict:
    """The best node for `objective` and every model's score there (exact; entropies Decimal).
    With criteria (config-style dicts, tests/oracle.py's `Criteria`), a class is suppressed
    if it has fewer than k records or violates one. `sample_based(sizes) -> bool` (docs/design.md §4c: a
    sample-based model, e.g. sample uniqueness) then suppresses the shortest prefix of the
    classes left that makes it hold, ordered by size, then (Loss) by each class's own loss as
    ARX's MetricMDNMLoss.getInformationLossInternal(node, entry) gives it, then by first
    record; no prefix within the limit: the node fails. The top node's class is not seen."""
    prepared = O._prepare(df, qids)
    criteria = O.Criteria(l_diversity, t_closeness, df)
    names = [q["name"] for q in qids]
    tops = {n: prepared[n]["top"] for n in names}
    order = O._priority_order(qids, qid_priority)
    n = len(df)
    allowed = O.max_suppressed(suppression_limit, n)
    g, s_f = factors(Fraction(gs_factor))
    raw_w = [Fraction(str((weights or {}).get(nm, 1))) for nm in names]
    top_w = max(raw_w)
    ws = [w / top_w for w in raw_w] if top_w else [Fraction(1)] * len(raw_w)
    shares = {q["name"]: _shares(q, prepared, df) for q in qids}
    best = None
    how = aggregate or DEFAULT_AGGREGATE.get(objective)
    for node in O._lattice(tops, root):
        ids = O._class_ids(prepared, node)
        sizes = Counter(ids)
        by_id = [sizes[i] for i in range(max(ids) + 1)]
        dists = {
            a: O._class_distributions(ids, len(by_id), df[a].tolist()) for a in criteria.attributes
        }
        kept_list, s = O._judge(by_id, dists, k, criteria)
        if sample_based is not None and node != tops:
            per = _class_losses(node, prepared, ids, by_id, shares, ws, how, objective)
            ranked = sorted(kept_list, key=lambda c: (by_id[c], per[c], c))  # c: first record
            shortest = next(
                (p for p in range(len(ranked) + 1) if sample_based([by_id[c] for c in ranked[p:]])),
                None,
            )
            if shortest is None:
                continue
            s += sum(by_id[c] for c in ranked[:shortest])  # beyond the limit: the node fails
            kept_list = ranked[shortest:]
        kept_ids = set(kept_list)
        if s > allowed:
            continue
        scores = _scores(node, prepared, ids, sizes, kept_ids, s, n, g, s_f, ws, shares, tops)
        value = _objective(objective, scores, ws, how)
        prec = O.precision(node, tops)
        levels = tuple(node[q] for q in order)
        if objective == "dm_star":
            key = (value, -prec, levels)
        else:
            key = (value, sum(node.values()), -prec, levels)
        if best is None or _less(key, best[0]):
            gone = [r for r, c in enumerate(ids) if c not in kept_ids]
            best = (key, node, scores, s, gone)
    if best is None:
        return {"node": None}
    value = best[0][0]
    if how == "geometric_mean":
        value = float(value) ** (1 / len(names)) - 1 if value > 0 else -1.0
    if how == "rank":
        value = value[0]
    return {
        "node": best[1],
        "scores": best[2],
        "n_suppressed": best[3],
        "value": float(value),
        "suppressed_rows": best[4],
    }


def _class_losses(node, prepared, ids, by_id, shares, ws, how, objective) -> list:
    """Per class, ARX's loss of the class alone (Loss only; else 0 for all): per QID its
    records times its label's domain share, weighted, aggregated as ARX's ILMultiDimensional
    does (geometric mean: prod(v w + 1); arithmetic mean and sum: sum(v w); maximum)."""
    if objective != "loss":
        return [0] * len(by_id)
    first = {}
    for r, c in enumerate(ids):
        first.setdefault(c, r)
    out = []
    for c, size in enumerate(by_id):
        vs = []
        for (name, level), w in zip(node.items(), ws, strict=True):
            u, per_level = shares[name]
            label = prepared[name]["codes"][level][first[c]]
            vs.append(size * Fraction(per_level[level][label], u) * w)
        if how == "geometric_mean":
            key = Fraction(1)
            for v in vs:
                key *= v + 1
        elif how == "rank":
            key = tuple(sorted(vs, reverse=True))
        else:
            key = max(vs) if how == "maximum" else sum(vs)
        out.append(key)
    return out


def _less(a: tuple, b: tuple) -> bool:
    va, vb = a[0], b[0]
    if isinstance(va, Decimal) and abs(va - vb) <= Decimal("1e-40"):
        return a[1:] < b[1:]
    if va != vb:
        return va < vb
    return a[1:] < b[1:]


def _objective(objective: str, scores: dict, ws: list[Fraction], how: str | None):
    if objective.startswith("nu_entropy"):
        with localcontext() as ctx:  # sums and means of 80-digit values, at 80 digits
            ctx.prec = 80
            dec = [Decimal(w.numerator) / Decimal(w.denominator) for w in ws]
            return _aggregate(scores["per_qid"][objective], dec, how)
    if objective in DEFAULT_AGGREGATE:
        return _aggregate(scores["per_qid"][objective], ws, how)
    return scores[objective]


def _scores(node, prepared, ids, sizes, kept_ids, s, n, g, s_f, ws, shares, tops) -> dict:
    kept_sizes = [sizes[c] for c in kept_ids]
    dm_kept = sum(x * x for x in kept_sizes)
    den = len(kept_ids) * s_f + (g if s else 0)
    out = {
        "dm_star": dm_kept + s * s,
        "dm_star_arx": sum(x * x for x in sizes.values()),
        "dm": dm_kept + n * s,
        "aecs": Fraction(n) / den if den else float("inf"),
    }
    per = {"loss": [], "precision": [], "height": [], "nu_entropy": [], "nu_entropy_nm": []}
    for name, level in node.items():
        labels = prepared[name]["codes"][level].tolist()
        values = prepared[name]["codes"][0].tolist()
        u, per_level = shares[name]
        raw = Fraction(0)  # summed over (label, kept) groups of records: the same sum
        for (label, kept), count in Counter(
            (lab, ids[i] in kept_ids) for i, lab in enumerate(labels)
        ).items():
            share = Fraction(per_level[level][label], u)
            raw += count * (g * share if kept else share + s_f * (1 - share))
        lo = g * n / u
        v = (raw - lo) / (n - lo) if n != lo else Fraction(0)
        per["loss"].append(max(Fraction(0), v))
        frac = Fraction(level, tops[name]) if tops[name] else Fraction(0)
        per["precision"].append(((n - s) * frac * g + s * s_f) / n)
        per["height"].append(Fraction(level))
        per["nu_entropy"].append(_entropy(values, labels, g))
        gone = [lab for i, lab in enumerate(labels) if ids[i] not in kept_ids]
        per["nu_entropy_nm"].append(per["nu_entropy"][-1] + _suppressed_entropy(gone, s_f))
    out["per_qid"] = per
    out["publisher_payout"] = _payout(node, prepared, ids, kept_ids, shares, g, s_f)
    return out


def _payout(node, prepared, ids, kept_ids, shares, g, s_f) -> float:
    """ARX's MetricSDNMPublisherPayout with ARX's default cost/benefit (benefit 1200, loss
    300, gain 300, cost 4), prosecutor: per class of c records g c (1200 - payout), or s c 1200
    suppressed; payout = 1200 (1 - IL) - (300 / c if 300 / c - 4 > 0), IL = log10(product of
    the labels' domain shares) / log10(product of the domain sizes) + 1 (doubles, as ARX); the
    terms summed exactly, rounded once (math.fsum: ARX's one-by-one sum in its classes' order can
    break a tie of two nodes with the same terms by a last bit)."""
    max_il = math.log10(math.prod(float(shares[name][0]) for name in node))
    first: dict[int, int] = {}
    for r, c in enumerate(ids):
        first.setdefault(c, r)
    counts = Counter(ids)
    # by position (a chunk's slice keeps its frame's index), as the per-QID figures read them
    labels = {name: prepared[name]["codes"][level].tolist() for name, level in node.items()}
    terms = []
    for c, r in first.items():
        size = counts[c]
        if c not in kept_ids:
            terms.append(float(s_f) * size * 1200.0)
            continue
        product = 1.0
        for name, level in node.items():
            u, per_level = shares[name]
            product *= per_level[level][labels[name][r]] / u
        il = min(1.0, max(0.0, math.log10(product) / max_il + 1.0)) if max_il else 0.0
        p = 1.0 / size
        payout = 1200.0 * (1.0 - il) - (300.0 * p if 300.0 * p - 4.0 > 0 else 0.0)
        terms.append(float(g) * size * (1200.0 - payout))
    return math.fsum(terms)


def _entropy(values: list, labels: list, g: Fraction) -> Decimal:
    """g * sum over records log2(|records with the label| / |records with the value|)."""
    a, b = Counter(values), Counter(labels)
    pairs = Counter(zip(values, labels, strict=True))
    with localcontext() as ctx:
        ctx.prec = 80
        two = Decimal(2).ln()
        total = sum(
            count * (Decimal(b[lab]) / Decimal(a[val])).ln() / two
            for (val, lab), count in sorted(
                pairs.items(), key=lambda x: (str(x[0][0]), str(x[0][1]))
            )
        )
        return total * Decimal(g.numerator) / Decimal(g.denominator)


def _suppressed_entropy(labels: list, s_f: Fraction) -> Decimal:
    """sF * sum over the suppressed records log2(S / |suppressed records with the label|)."""
    per = Counter(labels)
    with localcontext() as ctx:
        ctx.prec = 80
        two = Decimal(2).ln()
        total = sum(
            (Decimal(len(labels)) / Decimal(per[lab])).ln() / two for lab in sorted(labels, key=str)
        )
        return Decimal(total) * Decimal(s_f.numerator) / Decimal(s_f.denominator)
