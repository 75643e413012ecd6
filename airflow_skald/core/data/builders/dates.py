"""Date hierarchies (docs/design.md §3a `type: date`, ARX's date builder).

A rule lists granularities finest first: second, minute, hour, day, week (ISO 8601), month,
quarter, year, then year bands `{years: N}` aligned to multiples of N from year 0, each a
whole multiple of the previous. Level 0 is the first granularity: phase 1 cuts every value to
it (`level0_labels`, vectorised with pyarrow over a chunk's distinct entries; zoned timestamps
normalised to UTC first) and collects the distinct labels; `build` turns them into the levels
above (Python per distinct label, never per row).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from airflow_skald.core.data.builders.levels import hierarchy_from_levels, rule_error
from airflow_skald.core.data.hierarchies import Hierarchy
from airflow_skald.core.errors import ConfigError, DataError

GRANULARITIES = ("second", "minute", "hour", "day", "week", "month", "quarter", "year")
DEFAULT_LEVELS: tuple[str | int, ...] = ("day", "month", "year", 5, 10)
_ZONED = r"[T ]\d{2}.*(Z|[+-]\d{2}(:?\d{2})?)$"
_FORMAT = {
    "second": "%Y-%m-%dT%H:%M:%S",
    "minute": "%Y-%m-%dT%H:%M",
    "hour": "%Y-%m-%dT%H",
    "day": "%Y-%m-%d",
    "week": "%G-W%V",
    "month": "%Y-%m",
    "year": "%Y",
}

Level = str | int  # a granularity's name, or N for the year band {years: N}


@dataclass(frozen=True)
class DateRule:
    """Validated levels of a date QID, finest first."""

    levels: tuple[Level, ...] = DEFAULT_LEVELS
    kind: str = "date"

    def describe(self) -> dict[str, Any]:
        return {
            "type": "date",
            "levels": [lv if isinstance(lv, str) else {"years": lv} for lv in self.levels],
        }

    @property
    def first(self) -> Level:
        return self.levels[0]


def key_seconds(rule: DateRule) -> int:
    """Seconds of the rule's first level up to a day: values within one such span of seconds
    share their level-0 label (week and coarser levels hold whole days)."""
    return {"second": 1, "minute": 60, "hour": 3600}.get(rule.first, 86_400)


def _level_text(level: Level) -> str:
    return level if isinstance(level, str) else f"{{years: {level}}}"


def parse_date_rule(name: str, item: dict) -> DateRule:
    """The `levels` of a date QID, checked: known granularities in strictly coarser order,
    only year and year bands after week, each band a larger whole multiple of the previous."""
    raw = item.get("levels")
    if raw is None:
        return DateRule()
    if not isinstance(raw, list) or not raw:
        raise ConfigError(rule_error(name, "levels", "must be a non-empty list"))
    levels: list[Level] = []
    for entry in raw:
        if isinstance(entry, str) and entry in GRANULARITIES:
            levels.append(entry)
        elif (
            isinstance(entry, dict)
            and list(entry) == ["years"]
            and isinstance(entry["years"], int)
            and not isinstance(entry["years"], bool)
            and entry["years"] >= 1
        ):
            levels.append(entry["years"])
        else:
            raise ConfigError(
                rule_error(
                    name,
                    "levels",
                    f"{entry!r} is not one of {', '.join(GRANULARITIES)} or {{years: N}}",
                )
            )
    for a, b in zip(levels, levels[1:], strict=False):
        what = f"{_level_text(b)} after {_level_text(a)}"
        if isinstance(b, str):
            if isinstance(a, int) or GRANULARITIES.index(b) <= GRANULARITIES.index(a):
                raise ConfigError(rule_error(name, "levels", f"{what}: levels go finest first"))
            if a == "week" and b != "year":
                raise ConfigError(
                    rule_error(name, "levels", f"{what}: only ISO years and year bands follow week")
                )
        elif isinstance(a, int) and (b <= a or b % a):
            raise ConfigError(
                rule_error(name, "levels", f"{what}: a band must be a larger whole multiple")
            )
    if "week" in levels and any(lv in ("month", "quarter") for lv in levels):
        raise ConfigError(rule_error(name, "levels", "month or quarter with week"))
    return DateRule(tuple(levels))


# ------------------------------------------------------------------ level 0, vectorised


@dataclass
class Level0:
    """A chunk's distinct entries as level-0 labels, and what cutting them did."""

    labels: pa.Array  # string, one per entry (null where the entry is null)
    finer: bool  # some value was finer than the first level and was cut
    zoned: bool  # some value carried a time zone and was normalised to UTC


def _parse_text(name: str, arr: pa.Array, where) -> tuple[pa.Array, bool]:
    """ISO-8601 text as naive UTC timestamps (µs); text with a zone is converted to UTC."""
    zoned = pc.fill_null(pc.match_substring_regex(arr, _ZONED), False)
    n_zoned = pc.sum(zoned).as_py() or 0
    out = pa.nulls(len(arr), pa.timestamp("us"))
    try:
        plain = pc.cast(pc.if_else(zoned, None, arr), pa.timestamp("us"))
        if n_zoned:
            utc = pc.cast(pc.if_else(zoned, arr, None), pa.timestamp("us", "UTC"))
            out = pc.if_else(zoned, utc.cast(pa.timestamp("us")), plain)
        else:
            out = plain
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        bad = _first_unparsed(arr)
        raise DataError(
            rule_error(name, "date", f"a value does not parse as an ISO-8601 date ({where(bad)})")
        ) from None
    return out, n_zoned > 0


def _first_unparsed(arr: pa.Array) -> int:
    """Index of the first entry Arrow cannot parse (the error path only)."""
    for i, value in enumerate(arr.to_pylist()):
        if value is None:
            continue
        try:
            pc.cast(pa.array([value]), pa.timestamp("us"))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            try:
                pc.cast(pa.array([value]), pa.timestamp("us", "UTC"))
            except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
                return i
    return 0


def as_utc_timestamps(name: str, arr: pa.Array, where) -> tuple[pa.Array, bool]:
    """Dates, timestamps or ISO text as naive UTC timestamps (µs), and whether any had a zone.
    `where(i)` names entry i in a message."""
    typ = arr.type
    if pa.types.is_string(typ) or pa.types.is_large_string(typ):
        return _parse_text(name, arr, where)
    if pa.types.is_date(typ):
        return pc.cast(arr, pa.timestamp("us")), False
    if pa.types.is_timestamp(typ):
        zoned = typ.tz is not None
        return arr.cast(pa.timestamp("us", typ.tz)).cast(pa.timestamp("us")), zoned
    raise DataError(rule_error(name, "date", f"the column has type {typ}, not dates or text"))


def level0_labels(name: str, rule: DateRule, arr: pa.Array, where) -> Level0:
    """Each entry of `arr` (a chunk's distinct entries) cut to the rule's first level and
    labelled as docs/design.md §3a writes it (ISO-8601; `2020-W11`, `2020-Q1`, `2020-2024`)."""
    ts, zoned = as_utc_timestamps(name, arr, where)
    first = rule.first
    unit = "year" if isinstance(first, int) else first
    options = {"week_starts_monday": True} if unit == "week" else {}
    cut = pc.floor_temporal(ts, unit=unit, **options)
    finer = bool(pc.any(pc.not_equal(cut, ts)).as_py() or False)
    secs = cut.cast(pa.timestamp("s"))
    if isinstance(first, int) or first == "quarter":
        mask = np.asarray(secs.is_null())
        years = np.where(mask, 0, pc.year(secs).to_numpy(zero_copy_only=False)).astype(np.int64)
        if first == "quarter":
            q = np.where(mask, 1, pc.quarter(secs).to_numpy(zero_copy_only=False))
            text = [f"{y:04d}-Q{int(n)}" for y, n in zip(years, q, strict=True)]
        else:
            finer = finer or bool((years[~mask] % first).any())
            text = [_band(int(y), first) for y in years]
        labels = pa.array(text, pa.string(), mask=mask)
    else:
        labels = pc.strftime(secs, format=_FORMAT[first])
    return Level0(labels, finer, zoned)


def _band(year: int, n: int) -> str:
    start = year - year % n
    return f"{start:04d}-{start + n - 1:04d}"


# ----------------------------------------------------------------- the levels above


def _start(first: Level, label: str) -> tuple[dt.datetime, int]:
    """A level-0 label's first instant, and its ISO year when the first level is week."""
    if first == "week":
        year, week = label.split("-W")
        return dt.datetime.combine(
            dt.date.fromisocalendar(int(year), int(week), 1), dt.time()
        ), int(year)
    if first == "quarter":
        year, q = label.split("-Q")
        return dt.datetime(int(year), 3 * int(q) - 2, 1), int(year)
    if first == "month":
        year, month = label.split("-")
        return dt.datetime(int(year), int(month), 1), int(year)
    if first == "year":
        return dt.datetime(int(label), 1, 1), int(label)
    if isinstance(first, int):
        year = int(label.split("-")[0])
        return dt.datetime(max(year, 1), 1, 1), year
    t = dt.datetime.fromisoformat(label)
    return t, t.isocalendar()[0]


def label_at(level: Level, t: dt.datetime, iso_year: int, after_week: bool) -> str:
    """`t`'s label at `level` (years after week are ISO years)."""
    if isinstance(level, int):
        return _band(iso_year if after_week else t.year, level)
    if level == "year":
        return f"{iso_year if after_week else t.year:04d}"
    if level == "quarter":
        return f"{t.year:04d}-Q{(t.month - 1) // 3 + 1}"
    if level == "month":
        return f"{t.year:04d}-{t.month:02d}"
    if level == "week":
        iso = t.isocalendar()
        return f"{iso[0]:04d}-W{iso[1]:02d}"
    day = f"{t.year:04d}-{t.month:02d}-{t.day:02d}"
    if level == "day":
        return day
    if level == "hour":
        return f"{day}T{t.hour:02d}"
    if level == "minute":
        return f"{day}T{t.hour:02d}:{t.minute:02d}"
    return f"{day}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}"


def build_dates(name: str, rule: DateRule, values: Sequence[str]) -> Hierarchy:
    """The hierarchy over the distinct level-0 labels `values` (sorted: ISO text sorts in time)."""
    first = rule.first
    starts = [_start(first, v) for v in values]
    levels = []
    after_week = first == "week"
    for level in rule.levels[1:]:
        levels.append([label_at(level, t, iso, after_week) for t, iso in starts])
        after_week = after_week or level == "week"
    return hierarchy_from_levels(name, list(values), levels)
