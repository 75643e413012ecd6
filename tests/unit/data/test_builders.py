"""Each hierarchy builder (SPEC §3a) against hierarchies worked out by hand from SPEC's
examples; date arithmetic at leap days, year ends, ISO weeks and time zones."""

from __future__ import annotations

import datetime as dt
from fractions import Fraction

import pyarrow as pa
import pytest

from airflow_skald.core.data.builders.dates import build_dates, level0_labels, parse_date_rule
from airflow_skald.core.data.builders.intervals import build_intervals, parse_interval_rule
from airflow_skald.core.data.builders.masked import (
    build_masked,
    code_text,
    code_width,
    padded,
    parse_masked_rule,
)
from airflow_skald.core.data.builders.ordered import build_ordered, parse_ordered_rule
from airflow_skald.core.errors import ConfigError, DataError


def rows(h) -> list[list[str]]:
    return h.table.tolist()


def labels(rule_levels, values, typ=None) -> list[str]:
    rule = parse_date_rule("d", {"levels": rule_levels})
    arr = pa.array(values, typ) if typ is not None else pa.array(values)
    return level0_labels("d", rule, arr, lambda i: f"entry {i}").labels.to_pylist()


def test_iso_weeks_across_year_ends():
    days = [dt.date(2020, 12, 31), dt.date(2021, 1, 3), dt.date(2021, 1, 4), dt.date(2019, 12, 30)]
    assert labels(["week"], days) == ["2020-W53", "2020-W53", "2021-W01", "2020-W01"]
    rule = parse_date_rule("d", {"levels": ["day", "week", "year", {"years": 5}]})
    h = build_dates("d", rule, ["2019-12-30", "2020-12-31", "2021-01-03", "2021-01-04"])
    assert rows(h) == [
        ["2019-12-30", "2020-W01", "2020", "*"],  # ISO year 2020: one band 2020-2024 for all
        ["2020-12-31", "2020-W53", "2020", "*"],
        ["2021-01-03", "2020-W53", "2020", "*"],
        ["2021-01-04", "2021-W01", "2021", "*"],
    ]


def test_default_levels_leap_day_and_year_end():
    rule = parse_date_rule("d", {})
    values = ["1999-12-31", "2000-02-29", "2004-02-29", "2020-03-14"]
    assert labels(["day"], [dt.date(2000, 2, 29), dt.date(1999, 12, 31)]) == [
        "2000-02-29",
        "1999-12-31",
    ]
    assert rows(build_dates("d", rule, values)) == [
        ["1999-12-31", "1999-12", "1999", "1995-1999", "1990-1999", "*"],
        ["2000-02-29", "2000-02", "2000", "2000-2004", "2000-2009", "*"],
        ["2004-02-29", "2004-02", "2004", "2000-2004", "2000-2009", "*"],
        ["2020-03-14", "2020-03", "2020", "2020-2024", "2020-2029", "*"],
    ]


def test_a_level_with_one_label_for_every_value_is_not_a_level():
    rule = parse_date_rule("d", {})
    h = build_dates("d", rule, ["2020-03-14", "2020-03-15"])  # one month: month and up go
    assert rows(h) == [["2020-03-14", "*"], ["2020-03-15", "*"]]


def test_labels_finer_than_a_day_and_quarters():
    t = [dt.datetime(2020, 3, 14, 23, 59, 59)]
    assert labels(["second"], t, pa.timestamp("s")) == ["2020-03-14T23:59:59"]
    assert labels(["minute"], t, pa.timestamp("s")) == ["2020-03-14T23:59"]
    assert labels(["hour"], t, pa.timestamp("s")) == ["2020-03-14T23"]
    assert labels(["quarter"], t, pa.timestamp("s")) == ["2020-Q1"]
    assert labels(["month"], t, pa.timestamp("s")) == ["2020-03"]
    assert labels([{"years": 5}], t, pa.timestamp("s")) == ["2020-2024"]
    rule = parse_date_rule("d", {"levels": ["hour", "day", "quarter", "year"]})
    h = build_dates("d", rule, ["2020-03-14T23", "2020-04-01T00", "2021-01-01T05"])
    assert rows(h) == [
        ["2020-03-14T23", "2020-03-14", "2020-Q1", "2020", "*"],
        ["2020-04-01T00", "2020-04-01", "2020-Q2", "2020", "*"],
        ["2021-01-01T05", "2021-01-01", "2021-Q1", "2021", "*"],
    ]


def test_time_zones_are_normalised_to_utc_and_values_cut():
    rule = parse_date_rule("d", {"levels": ["day"]})
    text = pa.array(["2020-12-31T23:30:00-02:00", "2021-01-01T00:30:00+02:00", "2020-06-01"])
    cut = level0_labels("d", rule, text, str)
    assert cut.labels.to_pylist() == ["2021-01-01", "2020-12-31", "2020-06-01"]
    assert cut.zoned and cut.finer
    paris = pa.array([dt.datetime(2021, 1, 1, 0, 30)], pa.timestamp("s", "Europe/Paris"))
    # stored as UTC 2021-01-01 00:30 (pyarrow keeps instants in UTC)
    cut = level0_labels("d", parse_date_rule("d", {"levels": ["hour"]}), paris, str)
    assert cut.labels.to_pylist() == ["2021-01-01T00"] and cut.zoned and cut.finer
    plain = level0_labels("d", rule, pa.array([dt.date(2020, 1, 1)]), str)
    assert not plain.zoned and not plain.finer


def test_a_date_that_does_not_parse_is_named():
    rule = parse_date_rule("d", {})
    with pytest.raises(DataError, match="'d' rule date: a value does not parse.*entry 1"):
        level0_labels("d", rule, pa.array(["2020-01-01", "2021-02-29"]), lambda i: f"entry {i}")


@pytest.mark.parametrize(
    ("levels", "what"),
    [
        (["week", "month"], "month after week"),
        (["week", "quarter"], "quarter after week"),
        (["month", "day"], "day after month"),
        (["year", {"years": 5}, {"years": 12}], "{years: 12} after {years: 5}"),
        (["day", {"years": 10}, "year"], "year after {years: 10}"),
        (["fortnight"], "'fortnight' is not one of"),
        (["day", "day"], "day after day"),
    ],
)
def test_bad_date_levels(levels, what):
    with pytest.raises(ConfigError, match=r"quasi-identifier 'd' rule levels: .*") as err:
        parse_date_rule("d", {"levels": levels})
    assert what in str(err.value) and "\n" not in str(err.value)


def test_masked_zip_padded_from_numbers():
    rule = parse_masked_rule("zip", {"pad": "0", "align": "right"})
    text, numeric = code_text("zip", pa.array([2139, 10001, 94110]))
    assert numeric and text.to_pylist() == ["2139", "10001", "94110"]
    width = code_width("zip", rule, text.to_pylist(), numeric)
    codes = padded(text, rule, width).to_pylist()
    assert codes == ["02139", "10001", "94110"]
    h = build_masked("zip", rule, codes, width)
    assert rows(h) == [
        ["02139", "0213*", "021**", "02***", "0****", "*"],
        ["10001", "1000*", "100**", "10***", "1****", "*"],
        ["94110", "9411*", "941**", "94***", "9****", "*"],
    ]


def test_masked_icd10_steps_and_from_left():
    rule = parse_masked_rule("icd10", {"steps": [1, 3, 4]})
    h = build_masked("icd10", rule, ["E11.9", "I10.0"], 5)
    assert rows(h) == [
        ["E11.9", "E11.*", "E1***", "E****", "*"],
        ["I10.0", "I10.*", "I1***", "I****", "*"],
    ]
    left = parse_masked_rule("icd10", {"steps": [1, 2], "from": "left"})
    assert rows(build_masked("icd10", left, ["E11.9", "I10.0"], 5)) == [
        ["E11.9", "*11.9", "**1.9", "*"],
        ["I10.0", "*10.0", "**0.0", "*"],
    ]


def test_masked_bad_rules():
    rule = parse_masked_rule("icd10", {"steps": [1, 6]})
    with pytest.raises(ConfigError, match="'icd10' rule steps: step 6 is beyond the code length 5"):
        build_masked("icd10", rule, ["E11.9"], 5)
    plain = parse_masked_rule("zip", {})
    with pytest.raises(ConfigError, match="'zip' rule pad: codes have lengths 4 to 5"):
        code_width("zip", plain, ["2139", "10001"], False)
    with pytest.raises(ConfigError, match="'zip' rule masked: the column holds numbers"):
        code_width("zip", plain, ["12139", "10001"], True)
    with pytest.raises(ConfigError, match="'zip' rule pad: must be one character"):
        parse_masked_rule("zip", {"pad": "00"})


def test_intervals_age_example():
    rule = parse_interval_rule(
        "age",
        {"min_width": 1, "bins": [0, 18, 30, 45, 65, 90], "group": [2], "above": "90+"},
        Fraction(1),
    )
    lows = [Fraction(x) for x in (17, 18, 44, 45, 64, 65, 89, 90, 97)]
    values = [f"[{x}-{x}]" for x in lows]
    h = build_intervals("age", rule, Fraction(1), values, lows)
    assert rows(h) == [
        ["[17-17]", "[0-18)", "[0-30)", "*"],
        ["[18-18]", "[18-30)", "[0-30)", "*"],
        ["[44-44]", "[30-45)", "[30-65)", "*"],
        ["[45-45]", "[45-65)", "[30-65)", "*"],
        ["[64-64]", "[45-65)", "[30-65)", "*"],
        ["[65-65]", "[65-90)", "[65-90)", "*"],
        ["[89-89]", "[65-90)", "[65-90)", "*"],
        ["[90-90]", "90+", "90+", "*"],
        ["[97-97]", "90+", "90+", "*"],
    ]


def test_intervals_decimals_below_and_bad_rules():
    rule = parse_interval_rule(
        "bmi", {"min_width": 0.1, "bins": [18.5, 25, 30], "below": "<18.5"}, Fraction("0.1")
    )
    lows = [Fraction("17.0"), Fraction("18.5"), Fraction("29.9")]
    h = build_intervals("bmi", rule, Fraction("0.1"), ["a", "b", "c"], lows)
    assert rows(h) == [["a", "<18.5", "*"], ["b", "[18.5-25.0)", "*"], ["c", "[25.0-30.0)", "*"]]
    with pytest.raises(DataError, match="'bmi' rule bins: values lie at or above the last cut"):
        build_intervals("bmi", rule, Fraction("0.1"), ["x"], [Fraction(30)])
    bad = [
        ({"min_width": 1, "bins": [0, 30, 18]}, "cuts must strictly increase"),
        ({"min_width": 5, "bins": [0, 18]}, "cut 18 is not a whole number of min_width 5"),
        ({"bins": [0, 18]}, "needs min_width"),
        ({"min_width": 1, "bins": [0, 18], "group": [1]}, "whole numbers >= 2"),
    ]
    for item, what in bad:
        with pytest.raises(ConfigError, match=f"quasi-identifier 'x' rule .*{what}"):
            parse_interval_rule("x", item, Fraction(item.get("min_width", 1)))


def test_ordered_education():
    order = ["Preschool", "1st-4th", "5th-6th", "HS-grad", "Bachelors", "Masters", "Doctorate"]
    rule = parse_ordered_rule("edu", {"order": order, "group": [2, 2]})
    h = build_ordered("edu", rule, ["Masters", "Preschool", "Bachelors", "Doctorate", "HS-grad"])
    assert rows(h) == [
        ["Preschool", "Preschool-1st-4th", "Preschool-HS-grad", "*"],
        ["HS-grad", "5th-6th-HS-grad", "Preschool-HS-grad", "*"],
        ["Bachelors", "Bachelors-Masters", "Bachelors-Doctorate", "*"],
        ["Masters", "Bachelors-Masters", "Bachelors-Doctorate", "*"],
        ["Doctorate", "Doctorate", "Bachelors-Doctorate", "*"],
    ]
    named = parse_ordered_rule(
        "edu", {"order": order, "group": [4], "labels": [["school", "higher"]]}
    )
    assert rows(build_ordered("edu", named, ["Masters", "HS-grad"])) == [
        ["HS-grad", "school", "*"],
        ["Masters", "higher", "*"],
    ]
    with pytest.raises(ConfigError, match="'edu' rule labels: level 1 needs 2 labels"):
        parse_ordered_rule("edu", {"order": order, "group": [4], "labels": [["one"]]})
    with pytest.raises(ConfigError, match="'edu' rule order: lists a category twice"):
        parse_ordered_rule("edu", {"order": ["a", "a"], "group": [2]})
