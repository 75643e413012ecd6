"""Generated datasets and configs shared by the oracle tests (hypothesis strategies and the
files they are written to)."""

from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import strategies as st
from oracle import Criteria, sensitive_value
from skald_testdata import write_chunks, write_config


@st.composite
def datasets(draw):
    """A random table with 2-4 QIDs of every kind, a config for it, and oracle QIDs."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(8, 120))
    cols: dict[str, object] = {"pid": [f"p{i}" for i in range(n)], "sens": rng.integers(0, 3, n)}
    qids, oracle = [], []
    kinds = draw(st.lists(st.sampled_from(["cat", "int", "dec", "enc"]), min_size=2, max_size=4))
    for j, kind in enumerate(kinds):
        name = f"q{j}_{kind}"
        if kind == "cat":
            n_values = draw(st.integers(2, 6))
            values = [f"v{i}" for i in range(n_values)]
            groups = draw(st.integers(1, n_values))
            top = draw(st.sampled_from([[], ["[0,99]"]]))  # ARX's recoded data: a constant top
            hier = {v: [f"g{i % groups}", *top] for i, v in enumerate(values)}
            weights = rng.dirichlet(np.ones(n_values))
            cols[name] = rng.choice(values, n, p=weights)
            qids.append({"name": name, "type": "categorical", "hierarchy": hier})
            oracle.append({"name": name, "type": "categorical", "hierarchy": hier})
        elif kind == "int":
            lo = int(draw(st.integers(-20, 50)))
            span = draw(st.integers(0, 40))
            mw = draw(st.sampled_from([1, 2, 3]))
            cols[name] = rng.integers(lo, lo + span + 1, n)
            qids.append({"name": name, "type": "numerical", "min_width": mw})
            oracle.append({"name": name, "type": "numerical", "min_width": mw})
        elif kind == "dec":
            cols[name] = np.round(rng.uniform(10.0, 14.0, n), 1)
            widths = draw(st.sampled_from([None, [0.1, 0.5, 1, 2]]))
            spec = {"name": name, "type": "numerical", "min_width": 0.1}
            if widths:
                spec["widths"] = widths
            qids.append(spec)
            oracle.append({**spec, "widths": widths})
        else:
            pool = np.sort(rng.choice(np.arange(100000, 999999), size=12, replace=False))
            cols[name] = rng.choice(pool, n)
            qids.append({"name": name, "type": "numerical", "min_width": 1, "encode": True})
            oracle.append({"name": name, "type": "numerical", "min_width": 1, "encode": True})
    df = pd.DataFrame(cols)
    k = draw(st.integers(2, max(2, min(8, n))))
    limit = draw(st.sampled_from([0, 0.05, 0.1, 0.25]))
    bins = draw(st.sampled_from([None, 5, 12, 40, 300]))
    priority = draw(st.permutations([q["name"] for q in qids]))
    priority = priority[: draw(st.integers(0, len(priority)))]
    return df, qids, oracle, k, limit, bins, list(priority)


VARIANTS = [
    "distinct",
    "entropy",
    "entropy-grassberger",
    "recursive",
    "t-equal",
    "t-ordered",
    "t-ordered-text",  # ARX's STRING order or an ordered string (ADR 0044)
    "t-hierarchical",
    "mixed",
]


T_VALUES = ["0.05", "0.1", "0.15", "0.2", "0.3", "0.5"]


C_VALUES = ["0.75", "1", "1.5", "2", "3", "4.25"]


def skewed_column(draw, rng, n: int, numeric: bool) -> list:
    """m values with Zipf-like weights (one common, a rare tail), sometimes with nulls; the
    first two records differ so that the column has at least two values."""
    m = draw(st.integers(2, 7))
    if numeric:
        pool = np.sort(rng.choice(np.arange(-30, 200), size=m, replace=False))
        scale = draw(st.sampled_from([1, 1, 0.5]))
        values = [int(v) if scale == 1 else float(v) * scale for v in pool]
    else:
        values = [f"s{i}" for i in range(m)]
    weights = 1.0 / np.arange(1, m + 1) ** draw(st.sampled_from([0.3, 1.0, 2.0]))
    picks = rng.choice(m, n, p=weights / weights.sum())
    picks[0], picks[1] = 0, 1
    column: list = [values[i] for i in picks]
    if draw(st.booleans()):
        share = draw(st.sampled_from([0.05, 0.2]))
        for i in np.flatnonzero(rng.random(n) < share):
            column[i] = None
    return column


def sensitive_hierarchy(draw, column: list) -> dict:
    """An inline hierarchy over the column's values (and NULL): one or two grouping levels,
    sometimes with the top "*" written out."""
    values = sorted({sensitive_value(v) for v in column}, key=lambda v: (v is None, str(v)))
    g1 = draw(st.integers(1, max(1, len(values) - 1)))
    g2 = draw(st.integers(0, g1))  # 0: one grouping level
    star = draw(st.booleans())
    out = {}
    for i, v in enumerate(values):
        labels = [f"g{i % g1}"] + ([f"h{(i % g1) % g2}"] if g2 else []) + (["*"] if star else [])
        out["NULL" if v is None else str(v)] = labels
    return out


def one_criterion(draw, variant: str, df: pd.DataFrame) -> tuple[str, dict]:
    """('l_diversity' | 't_closeness', criterion) of the variant, on an attribute it fits."""
    attribute = {"t-ordered": "num", "t-ordered-text": "sens"}.get(variant) or draw(
        st.sampled_from(["sens", "num"])
    )
    m = len({sensitive_value(v) for v in df[attribute]})
    if variant == "distinct":
        return "l_diversity", {"attribute": attribute, "l": draw(st.integers(2, min(m, 4)))}
    if variant == "entropy":
        ell = draw(st.integers(2, min(m, 3)))
        return "l_diversity", {"attribute": attribute, "l": ell, "variant": "entropy"}
    if variant == "entropy-grassberger":  # ARX's EntropyEstimator.GRASSBERGER (ADR 0043)
        ell = draw(st.integers(2, min(m, 3)))
        entropy = {"variant": "entropy", "estimator": "grassberger"}
        return "l_diversity", {"attribute": attribute, "l": ell, **entropy}
    if variant == "recursive":
        ell = draw(st.integers(2, min(m, 3)))
        c = draw(st.sampled_from(C_VALUES))
        return "l_diversity", {"attribute": attribute, "l": ell, "variant": "recursive", "c": c}
    t = {"attribute": attribute, "t": draw(st.sampled_from(T_VALUES))}
    t["distance"] = variant.removeprefix("t-")
    if variant == "t-ordered-text":  # on `sens` as text (criteria_datasets)
        t["distance"], values = "ordered", sorted({str(v) for v in df["sens"] if v is not None})
        t["order"] = draw(st.sampled_from(["text", "listed"]))
        if t["order"] == "listed":  # a shuffled list, sometimes placing the null ("")
            extra = [""] if draw(st.booleans()) else []
            t["order"] = draw(st.permutations(values + extra))
    if variant == "t-hierarchical":
        t["hierarchy"] = sensitive_hierarchy(draw, df[attribute].tolist())
    return "t_closeness", t


@st.composite
def criteria_datasets(draw, variant: str):
    """test_search_oracle's datasets with two skewed sensitive attributes (text or numeric
    `sens`, numeric `num`) and criteria of the variant ("mixed": 2-3 criteria of any kind,
    over both attributes)."""
    df, qids, oracle_qids, k, limit, bins, priority = draw(datasets())
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = len(df)
    text = variant == "t-ordered-text"
    df["sens"] = skewed_column(draw, rng, n, numeric=not text and draw(st.booleans()))
    df["num"] = pd.array(skewed_column(draw, rng, n, numeric=True))
    kinds = [variant]
    if variant == "mixed":
        pool = [v for v in VARIANTS[:-1] if v != "t-ordered-text"]  # text order: `sens` text
        kinds = draw(st.lists(st.sampled_from(pool), min_size=2, max_size=3))
    criteria: dict[str, list] = {"l_diversity": [], "t_closeness": []}
    for kind in kinds:
        where, criterion = one_criterion(draw, kind, df)
        key = ("variant", "distance")[where == "t_closeness"]
        this = (criterion["attribute"], criterion.get(key))
        if all((c["attribute"], c.get(key)) != this for c in criteria[where]):
            criteria[where].append(criterion)  # one per (attribute, variant / distance)
    drop = draw(st.sampled_from(["mask", "mask", "drop"]))
    limit = draw(st.sampled_from([0, 0.1, 0.25, 0.5]))  # classes violating criteria fit often
    if bins is not None:  # the same room per (class, value) pair as test_search_oracle per class
        bins = bins * Criteria(**criteria, inputs=df).n_values + 1
    return df, qids, oracle_qids, k, limit, bins, priority, criteria, drop


def criteria_config(tmp, qids, k, limit, bins, priority, criteria, drop="mask", root="paper"):
    return write_config(
        tmp / "c.yaml",
        {
            "input": {"path": str(tmp / "in")},
            "output": {"path": str(tmp / "out-c")},
            "chunk_rows": 1000,
            "direct_identifiers": ["pid"],
            "sensitive_attributes": ["sens", "num"],
            "quasi_identifiers": qids,
            "privacy": {"k": k, "suppression_limit": limit, **criteria},
            "memory": {"histogram_bins": bins or 10**9, "root": root},
            "qid_priority": priority,
            "suppressed_records": drop,
        },
    )


def write_input(tmp, df: pd.DataFrame, cut: int) -> None:
    write_chunks(df, tmp / "in", [cut] * (len(df) // cut))


QIDS = [
    {
        "name": "blood",
        "type": "categorical",
        "hierarchy": {"A+": ["A"], "A-": ["A"], "B+": ["B"], "B-": ["B"], "O+": ["O"], "O-": ["O"]},
    },
    {"name": "age", "type": "numerical", "min_width": 1},
    {"name": "bmi", "type": "numerical", "min_width": 0.1, "widths": [0.1, 1, 2, 4, 8]},
    {"name": "pin", "type": "numerical", "min_width": 1, "encode": True},
]


def paper_like_table() -> pd.DataFrame:
    """3,000 rows shaped like the paper's data (the chunking and adaptive-root tests)."""
    rng = np.random.default_rng(7)
    n = 3000
    pins = rng.choice(np.arange(560001, 560400), size=60, replace=False)
    return pd.DataFrame(
        {
            "pid": [f"P{i:06d}" for i in range(n)],
            "blood": rng.choice(
                ["A+", "A-", "B+", "B-", "O+", "O-"], n, p=[0.3, 0.05, 0.3, 0.05, 0.25, 0.05]
            ),
            "age": rng.integers(19, 86, n),
            "bmi": np.round(rng.normal(24, 3, n).clip(12, 36), 1),
            "pin": rng.choice(pins, n, p=rng.dirichlet(np.ones(60) * 0.5)),
            "cond": rng.choice(["flu", "gout", "asthma"], n),
        }
    )
