"""The date builder (docs/design.md §3a, core/data/builders/dates.py) against hierarchies worked out by
hand: leap days, year ends, ISO weeks, time zones, bad rules."""

from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from airflow_skald.core.data.builders.dates import build_dates, level0_labels, parse_date_rule
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
