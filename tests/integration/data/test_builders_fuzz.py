"""Random rules over random data (docs/design.md §3a): the product's node, DM* and released rows equal
the exhaustive reference's (tests/oracle.py + tests/oracle_rules.py), chunked at random."""

from __future__ import annotations

import datetime as dt

import numpy as np
import pandas as pd
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from oracle import exhaustive_search
from oracle_rules import expected_release
from skald_testdata import read_release, write_chunks, write_config

from airflow_skald.core.config.run_config import load_config
from airflow_skald.core.run.runner import run

DATE_LEVELS = [
    None,  # the default: day, month, year, 5 and 10 years
    ["day", "week", "year"],
    ["hour", "day", "quarter"],
    ["month", "year", {"years": 2}, {"years": 10}],
    ["week", {"years": 2}],
    ["minute", "hour", "month"],
]


@st.composite
def cases(draw):
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    n = draw(st.integers(10, 90))
    cols: dict[str, object] = {"pid": [f"p{i}" for i in range(n)], "sens": rng.integers(0, 3, n)}
    qids = []
    kinds = draw(st.lists(st.sampled_from(["date", "masked", "bins", "order"]), min_size=2,
                          max_size=3))  # fmt: skip
    for j, kind in enumerate(kinds):
        name = f"q{j}_{kind}"
        if kind == "date":
            levels = draw(st.sampled_from(DATE_LEVELS))
            start = dt.datetime(2018, 12, 20, tzinfo=dt.UTC)
            span = draw(st.sampled_from([3, 40, 800]))  # days
            offsets = rng.integers(0, span * 24 * 60, n)
            stamps = [start + dt.timedelta(minutes=int(m)) for m in offsets]
            form = draw(st.sampled_from(["date", "utc", "text"]))
            if form == "date":
                cols[name] = [t.date() for t in stamps]
            elif form == "utc":
                cols[name] = pd.to_datetime(stamps, utc=True)
            else:  # ISO text with a zone offset
                zone = dt.timezone(dt.timedelta(hours=int(rng.integers(-9, 10))))
                cols[name] = [t.astimezone(zone).isoformat() for t in stamps]
            qid = {"name": name, "type": "date"}
            if levels is not None:
                qid["levels"] = levels
        elif kind == "masked":
            width = draw(st.integers(2, 4))
            pool = [str(x) for x in rng.integers(0, 10**width, 8)]
            qid = {"name": name, "type": "masked", "pad": "0"}
            steps = sorted(set(draw(st.lists(st.integers(1, width), min_size=1, max_size=3))))
            if draw(st.booleans()):
                qid["steps"] = steps
            qid["from"] = draw(st.sampled_from(["right", "left"]))
            cols[name] = (
                [f"c{c}" for c in rng.choice(pool, n)] if width == 2 else list(rng.choice(pool, n))
            )
            if width == 2:  # letters too: text codes of mixed length
                qid["align"] = draw(st.sampled_from(["right", "left"]))
        elif kind == "bins":
            mw = draw(st.sampled_from([1, 2]))
            cuts = sorted(set(int(x) * mw for x in rng.integers(0, 15, 4)))
            if len(cuts) < 2:
                cuts = [0, 10 * mw]
            cols[name] = (rng.integers(-3, 18, n) * mw).tolist()
            qid = {"name": name, "type": "numerical", "min_width": mw, "bins": cuts}
            qid["below"], qid["above"] = "low", "high"
            if draw(st.booleans()):
                qid["group"] = [2]
        else:
            order = [f"o{i}" for i in range(draw(st.integers(3, 8)))]
            qid = {"name": name, "type": "categorical", "order": order}
            qid["group"] = draw(st.sampled_from([[2], [2, 2], [3], [2, 3]]))
            cols[name] = list(rng.choice(order, n))
        qids.append(qid)
    df = pd.DataFrame(cols)
    k = draw(st.integers(2, 5))
    limit = draw(st.sampled_from([0, 0.05, 0.2]))
    sizes = draw(st.lists(st.integers(1, n), max_size=4))
    return df, qids, k, limit, sizes


@settings(max_examples=25, deadline=None, suppress_health_check=list(HealthCheck))
@given(case=cases())
def test_random_rules_match_the_reference(tmp_path_factory, case):
    df, qids, k, limit, sizes = case
    tmp = tmp_path_factory.mktemp("rules")
    write_chunks(df, tmp / "in", sizes)
    cfg = write_config(
        tmp / "c.yaml",
        {
            "input": {"path": str(tmp / "in")},
            "output": {"path": str(tmp / "out")},
            "direct_identifiers": ["pid"],
            "sensitive_attributes": ["sens"],
            "quasi_identifiers": qids,
            "privacy": {"k": k, "suppression_limit": limit},
        },
    )
    expected = exhaustive_search(df, qids, k, limit, [])
    manifest = run(load_config(cfg))
    assert manifest["node"] == expected["node"]
    assert manifest["dm_star"] == expected["dm_star"]
    assert manifest["n_suppressed"] == expected["n_suppressed"]
    names = [q["name"] for q in qids]
    got = read_release(tmp / "out")[names].astype(str).reset_index(drop=True)
    want = expected_release(df, qids, expected["node"], k).reset_index(drop=True)
    pd.testing.assert_frame_equal(got, want, check_dtype=False)
