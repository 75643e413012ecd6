"""Tests of the test oracle itself, on tiny tables worked out by hand."""

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

try:
    from oracle import (
        check_release,
        contains,
        exhaustive_search,
        levels_for_numeric,
        max_suppressed,
        precision,
        ram_root,
    )
except ImportError:  # tests/ is a package
    from tests.oracle import (
        check_release,
        contains,
        exhaustive_search,
        levels_for_numeric,
        max_suppressed,
        precision,
        ram_root,
    )

BG = {
    "name": "bg",
    "type": "categorical",
    "hierarchy": {"A+": ["A"], "A-": ["A"], "B+": ["B"], "B-": ["B"]},
}  # levels: 0 value, 1 A/B, 2 "*"  (top 2)
AGE = {"name": "age", "type": "numerical", "min_width": 1}  # 20..23: 4 units, widths 1,2,4 (top 2)


def table(rows):
    return pd.DataFrame(rows, columns=["bg", "age"])


# 8 records, every node with classes >= 2 has DM* >= 4 * 2^2 = 16.
PAIRS = table(
    [("A+", 20), ("A+", 20), ("A-", 21), ("A-", 21),
     ("B+", 22), ("B-", 22), ("B+", 23), ("B-", 23)]
)  # fmt: skip


def test_levels_for_numeric():
    assert levels_for_numeric(19, 85, 1) == [1, 2, 4, 8, 16, 32, 64, 67]  # the paper's age
    assert levels_for_numeric(12.0, 36.0, 0.1, [0.1, 1, 2, 4, 8]) == [1, 10, 20, 40, 80, 241]
    assert levels_for_numeric(5, 5, 1) == [1]  # one unit: level 0 only
    assert levels_for_numeric(0, 3, 1) == [1, 2, 4]  # 2^2 == n_units: not repeated
    assert levels_for_numeric(0, 4, 1) == [1, 2, 4, 5]
    assert levels_for_numeric(-5, 3, 1) == [1, 2, 4, 8, 9]
    assert levels_for_numeric(0, 0.7, 0.1) == [1, 2, 4, 8]  # 0.7/0.1 == 6.999... in floats
    assert levels_for_numeric(0, 9, 1, [1, 5, 10, 20]) == [1, 5, 10]  # widths >= n_units dropped
    pins = [560032, 570025, 560040, 560040]  # 3 distinct values -> ranks 0..2
    assert levels_for_numeric(None, None, 1, encoded_values=pins) == [1, 2, 3]
    with pytest.raises(AssertionError):
        levels_for_numeric(0, 9, 1, [1, 3, 4])  # 4 is not a multiple of 3


def test_max_suppressed_is_exact():
    assert 0.29 * 100 < 29  # the float trap
    assert max_suppressed(0.29, 100) == 29
    assert max_suppressed(0.15, 9) == 1
    assert max_suppressed(0, 1000) == 0


def test_tie_on_dm_and_precision_broken_by_qid_priority():
    # k=2, no suppression.  (bg,age) node -> classes:
    #   (0,0): A+20 x2, A-21 x2, four singletons -> fails
    #   (1,0): A20 A21 B22 B23, each x2 -> DM* 16, precision 1 - (1/2+0)/2 = 3/4
    #   (0,1): A+[20-21] A-[20-21] B+[22-23] B-[22-23] x2 -> DM* 16, precision 3/4
    #   (2,0), (0,2): DM* 16 but precision 1/2;  (1,1): 2 classes x4 -> 32; ...
    # (1,0) vs (0,1) ties on DM* and precision: qid_priority decides.
    r = exhaustive_search(PAIRS, [BG, AGE], 2, 0, ["age", "bg"])
    assert r["node"] == {"bg": 1, "age": 0}
    assert (r["dm_star"], r["n_suppressed"], r["n_classes"], r["min_class_size"]) == (16, 0, 4, 2)
    assert (r["evaluated"], r["passing"]) == (9, 8)  # all but (0,0)
    assert exhaustive_search(PAIRS, [BG, AGE], 2, 0, ["bg", "age"])["node"] == {"bg": 0, "age": 1}
    # not listed: config order (bg first)
    assert exhaustive_search(PAIRS, [BG, AGE], 2, 0, [])["node"] == {"bg": 0, "age": 1}


def test_tie_on_dm_broken_by_precision():
    # y has a deeper hierarchy (top 3) than x (top 2), same data shape as PAIRS. Its "*" is
    # written out: a constant last column ("ab") would itself be the top (docs/design.md §3).
    ab = ["ab", "*"]
    y = {
        "name": "y",
        "type": "categorical",
        "hierarchy": {"a1": ["a", *ab], "a2": ["a", *ab], "b1": ["b", *ab], "b2": ["b", *ab]},
    }
    x = {"name": "x", "type": "numerical", "min_width": 1}
    df = pd.DataFrame({"y": ["a1", "a1", "a2", "a2", "b1", "b2", "b1", "b2"],
                       "x": [0, 0, 1, 1, 2, 2, 3, 3]})  # fmt: skip
    # Passing nodes with DM* 16 (four pairs): (y,x) =
    #   (0,1) precision 1 - (0 + 1/2)/2 = 3/4     (priority [y, x] key (0,1))
    #   (1,0) precision 1 - (1/3 + 0)/2 = 5/6     (key (1,0))
    #   (0,2) 1/2, (2,0) 2/3, (3,0) 1/2
    # qid_priority [y, x] alone would pick (0,1); precision wins first.
    r = exhaustive_search(df, [y, x], 2, 0, ["y", "x"])
    assert r["node"] == {"y": 1, "x": 0}
    assert r["dm_star"] == 16
    assert r["precision"] == precision({"y": 1, "x": 0}, {"y": 3, "x": 2}) == pytest.approx(5 / 6)


# PAIRS-like with one outlier (B+, 20): N = 9
OUTLIER = table(
    [("A+", 20), ("A+", 20), ("A-", 21), ("A-", 21),
     ("B+", 22), ("B+", 22), ("B-", 23), ("B-", 23), ("B+", 20)]
)  # fmt: skip


def test_suppression():
    # limit 0.15 -> floor(1.35) = 1 record may be suppressed.
    #   (0,0): four pairs + singleton B+20 suppressed -> DM* 4*4 + 1^2 = 17, precision 1
    #   (1,0), (0,1): also 17 (the outlier stays alone) but precision 3/4
    #   no node reaches < 17: without suppression the best is 21 (see below)
    r = exhaustive_search(OUTLIER, [BG, AGE], 2, 0.15, [])
    assert r["node"] == {"bg": 0, "age": 0}
    assert (r["dm_star"], r["n_suppressed"], r["n_classes"], r["min_class_size"]) == (17, 1, 4, 2)
    assert r["dm_star_arx"] == 17 and r["dm"] == 16 + 9 * 1
    assert (r["evaluated"], r["passing"]) == (9, 9)
    # limit 0: (0,0) (1,0) (0,1) (1,1) keep a singleton and fail.
    #   (2,0): ages 20x3 21x2 22x2 23x2 -> 9+4+4+4 = 21, precision 1/2
    #   (0,2): A+x2 A-x2 B+x3 B-x2       -> 21, precision 1/2
    #   (1,2), (2,1): 16+25 = 41;  (2,2): 81
    r = exhaustive_search(OUTLIER, [BG, AGE], 2, 0, [])
    assert r["node"] == {"bg": 0, "age": 2}  # config order: bg finer first
    assert (r["dm_star"], r["n_suppressed"], r["passing"]) == (21, 0, 5)
    assert exhaustive_search(OUTLIER, [BG, AGE], 2, 0, ["age"])["node"] == {"bg": 2, "age": 0}


def test_nothing_passes():
    r = exhaustive_search(OUTLIER, [BG, AGE], 10, 0, [])  # even the top is one class of 9 < 10
    assert r["node"] is None and r["passing"] == 0 and r["evaluated"] == 9
    r = exhaustive_search(OUTLIER, [BG, AGE], 10, 1, [])  # ... unless all 9 may go
    assert r["node"] == {"bg": 0, "age": 0} and r["dm_star"] == 81 and r["n_classes"] == 0


def test_search_above_root():
    # root (1,0): bg in {1,2}, age in {0,1,2} -> 6 nodes, all pass with 1 suppression
    r = exhaustive_search(OUTLIER, [BG, AGE], 2, 0.15, [], root={"bg": 1, "age": 0})
    assert r["node"] == {"bg": 1, "age": 0}
    assert (r["dm_star"], r["evaluated"], r["passing"]) == (17, 6, 6)


def test_encoded_and_decimal_qids():
    pin = {"name": "pin", "type": "numerical", "min_width": 1, "encode": True}
    bmi = {"name": "bmi", "type": "numerical", "min_width": 0.1, "widths": [0.1, 1]}
    # pin ranks: 560032->0 560040->1 570025->2 (3 units, widths 1,2,3)
    # bmi 12.0..12.9: 10 units, widths 1, 10 (top: 10 units not < 10, so levels are [1, 10])
    df = pd.DataFrame({"pin": [560032, 560032, 560040, 560040, 570025, 570025],
                       "bmi": [12.0, 12.0, 12.3, 12.3, 12.9, 12.9]})  # fmt: skip
    r = exhaustive_search(df, [pin, bmi], 2, 0, [])
    assert r["node"] == {"pin": 0, "bmi": 0} and r["dm_star"] == 12
    r = exhaustive_search(df, [pin, bmi], 3, 0, [])
    # k=3, no suppression: every node below the top keeps a class of 2
    # ((pin 1, bmi 1): ranks {0,1} x4 and {2} x2), so only the top (2,1) passes: 6^2 = 36
    assert r["node"] == {"pin": 2, "bmi": 1} and r["dm_star"] == 36


def test_ram_root():
    # bins per level: bg 4, 2, 1 (observed values; AB+ is in the hierarchy but not the data)
    #                 age n_units 4 -> 4, 2, 1
    # N_data = bg*age + 1: (0,0) 17, (0,1) 9, (1,0) 9, (0,2) (1,1) (2,0) 5, (1,2) (2,1) 3, (2,2) 2
    bg = dict(BG, hierarchy=dict(BG["hierarchy"], **{"AB+": ["AB"]}))
    assert ram_root(PAIRS, [bg, AGE], 17, []) == {"bg": 0, "age": 0}
    assert ram_root(PAIRS, [bg, AGE], 16, []) == {"bg": 0, "age": 1}  # 3/4 tie, bg finer
    assert ram_root(PAIRS, [bg, AGE], 9, ["age"]) == {"bg": 1, "age": 0}
    assert ram_root(PAIRS, [bg, AGE], 8, []) == {"bg": 0, "age": 2}  # 1/2 three-way tie
    assert ram_root(PAIRS, [bg, AGE], 8, ["age"]) == {"bg": 2, "age": 0}
    assert ram_root(PAIRS, [bg, AGE], 2, []) == {"bg": 2, "age": 2}
    with pytest.raises(ValueError):
        ram_root(PAIRS, [bg, AGE], 1, [])
    # numerical bins are ceil(n_units / w) even for unobserved units: ages 20 and 23 only
    # still give 4 bins at level 0, so with 3 bins age must go to level 1 (2 bins + 1).
    df = table([("A+", 20), ("A+", 23)])
    assert ram_root(df, [BG, AGE], 3, []) == {"bg": 0, "age": 1}


def test_check_release():
    rel = pd.DataFrame({"bg": ["A", "A", "B", "B", "*"], "age": ["[20-21]"] * 2 + ["[22-23]"] * 2 + ["*"],
                        "cond": list("xyzwv")})  # fmt: skip
    r = check_release(rel, ["bg", "age"], 2, 0.2, 5)
    assert (r["n_suppressed"], r["n_classes"], r["min_class_size"], r["dm_star"]) == (1, 2, 2, 9)
    with pytest.raises(AssertionError, match="exceed"):
        check_release(rel, ["bg", "age"], 2, 0.1, 5)
    with pytest.raises(AssertionError, match="smaller than k"):
        check_release(rel, ["bg", "age"], 3, 0.2, 5)
    # drop mode: the suppressed row is absent
    r = check_release(rel.iloc[:4], ["bg", "age"], 2, 0.2, 5)
    assert (r["n_suppressed"], r["n_dropped"], r["n_masked"]) == (1, 1, 0)
    # top node for every QID: all "*" is one class
    top = pd.DataFrame({"bg": ["*"] * 3, "age": ["*"] * 3})
    assert check_release(top, ["bg", "age"], 3, 0, 3)["n_classes"] == 1
    with pytest.raises(AssertionError):
        check_release(top, ["bg", "age"], 4, 0, 3)  # 3 < k: all suppressed, limit 0
    assert check_release(top, ["bg", "age"], 4, 1, 3)["n_suppressed"] == 3


def test_contains():
    assert contains("*", 33) and contains("*", "A+", BG)
    assert contains("[33-33]", 33) and not contains("[33-33]", 34)
    assert contains("[-5-3]", -5) and contains("[-5-3]", 3) and not contains("[-5-3]", -6)
    assert contains("[-10--5]", -7) and not contains("[-10--5]", -4)
    assert contains("[23.0-24.0)", 23.8) and not contains("[23.0-24.0)", 24.0)
    assert contains("[12.0-36.1)", 36.0)
    assert contains("[560032-560063]", 560040)
    assert not contains("33", 33)  # not an interval
    assert contains("A", "A+", BG) and contains("A+", "A+", BG) and not contains("B", "A+", BG)
    assert not contains("A", "X", BG)


@settings(max_examples=30, deadline=None)
@given(
    rows=st.lists(
        st.tuples(st.sampled_from(["A+", "A-", "B+", "B-"]), st.integers(0, 6)),
        min_size=1,
        max_size=14,
    ),
    k=st.integers(1, 4),
    limit=st.sampled_from([0, 0.1, 0.25, 0.5]),
    bins=st.integers(2, 40),
)
def test_search_above_ram_root_matches_full_search_when_optimum_is_above(rows, k, limit, bins):
    df = table(rows)
    qids = [BG, AGE]
    root = ram_root(df, qids, bins, ["age"])
    full = exhaustive_search(df, qids, k, limit, ["age"])
    sub = exhaustive_search(df, qids, k, limit, ["age"], root=root)
    assert sub["passing"] <= full["passing"] and sub["evaluated"] <= full["evaluated"]
    if full["node"] is not None and all(full["node"][q] >= root[q] for q in root):
        assert sub["node"] == full["node"] and sub["dm_star"] == full["dm_star"]
    if sub["node"] is not None:  # the chosen node, re-checked independently
        assert sub["n_suppressed"] <= max_suppressed(limit, len(df))
        assert all(sub["node"][q] >= root[q] for q in root)
